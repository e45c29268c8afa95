/* team_rollout.cu: a team game's policy inputs in the rollout graph (the GPU twin of agent_inputs.AgentInputs),
 * written after every env step or reset from the env's observations and its state: each row's observation with its
 * agent's one-hot id appended, its available actions, and a world-state critic's input. Compiled after an env file
 * and batch.h (fv_slot, fv_observe_one). */
#pragma once

/* team_inputs_kernel's arguments (kernel_args.py mirrors them). Rows are env-major, row = env * NUM_AGENTS + agent;
 * I = OBS_SIZE (+ NUM_AGENTS with agent_ids), C = world_size (+ NUM_AGENTS with agent_ids). */
typedef struct {
    const fv_slot* slots;           /* (N,) the games, as the step (or reset) left them */
    const OBS_T* env_obs;           /* (N * NUM_AGENTS, OBS_SIZE) the step's (or reset's) observations */
    float* obs;                     /* (N * NUM_AGENTS, I) the rollout slot's step: obs, then the one-hot id */
    unsigned char* masks;           /* (N * NUM_AGENTS, NUM_ACTIONS) or NULL: 1 = available */
    const unsigned char* own_masks; /* (NUM_AGENTS, NUM_ACTIONS) or NULL: each agent's own actions, the mask of an env
                                     * without ACTION_MASK whose agents have action spaces of their own */
    float* world;                   /* (N * NUM_AGENTS, C) or NULL: the world state, then the one-hot id */
    float* world_state;             /* (N, world_size) scratch: the env's WORLD_STATE_SIZE values (fv_observe_one) */
    const int* world_columns;       /* (world_size,) or NULL: the world state as these entries of the env's
                                     * (NUM_AGENTS * OBS_SIZE) observations (every agent's own, mpe2's state()) */
    int num_envs;
    int agent_ids;                  /* 1: append the one-hot id (policy.agent_id) */
    int world_size;
} TeamInputsArgs;

/* AgentInputs.obs(), mask() and world() of env i's rows. */
__device__ void team_inputs_one(int i, const TeamInputsArgs& a) {
    const int agents = NUM_AGENTS, ids = a.agent_ids ? NUM_AGENTS : 0;
    const long long in = OBS_SIZE + ids, c = a.world_size + ids;
    const OBS_T* env_obs = a.env_obs + (long long)i * agents * OBS_SIZE;
    for (int k = 0; k < agents; k++) {
        float* row = a.obs + ((long long)i * agents + k) * in;
        for (int j = 0; j < OBS_SIZE; j++) row[j] = (float)env_obs[k * OBS_SIZE + j];
        for (int j = 0; j < ids; j++) row[OBS_SIZE + j] = j == k ? 1.0f : 0.0f;
    }
    if (a.masks && a.own_masks) {
        for (int k = 0; k < agents * NUM_ACTIONS; k++)
            a.masks[(long long)i * agents * NUM_ACTIONS + k] = a.own_masks[k];
    } else if (a.masks) {
        fv_observe_one(i, &a.slots[i].env, a.masks, nullptr);
    }
    if (!a.world) return;
    const float* state = nullptr;
    if (!a.world_columns) {
        fv_observe_one(i, &a.slots[i].env, nullptr, a.world_state);
        state = a.world_state + (long long)i * a.world_size;
    }
    for (int k = 0; k < agents; k++) {
        float* row = a.world + ((long long)i * agents + k) * c;
        for (int j = 0; j < a.world_size; j++)
            row[j] = a.world_columns ? (float)env_obs[a.world_columns[j]] : state[j];
        for (int j = 0; j < ids; j++) row[a.world_size + j] = j == k ? 1.0f : 0.0f;
    }
}

extern "C" {

/* A thread per env: its rows' policy inputs after a step or reset (team_inputs_one). */
__global__ void team_inputs_kernel(const TeamInputsArgs a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < a.num_envs) team_inputs_one(i, a);
}

} /* extern "C" */
