/* team_rollout_on_cpu.cpp: a team game's rollout step in the rollout graph built for the CPU: rollout.cu's
 * rollout_step_kernel (the masked draw of every agent's action, the env step, the outcome and its accumulators) and
 * team_rollout.cu's team_inputs_kernel after it, with a team env (ENV, its defines on the command line) and
 * batch.h, for tests/emulation/test_teams_kernels.py on cuda_on_cpu.h's threads. The games' slots share a CPU
 * batch's layout (emu_slot_size). */
#include "rollout_on_cpu.h"
#include "team_rollout.cu"

extern "C" {
int emu_slot_size(void) { return (int)sizeof(fv_slot); }

void emu_reset(int n, fv_slot* slots, const fv_u64* seeds, OBS_T* env_obs) {
    launch(n, 256, [=] { fv_reset_kernel(n, slots, seeds, nullptr, env_obs); });
}

void emu_team_inputs(int n, const fv_slot* slots, const OBS_T* env_obs, float* obs, unsigned char* masks,
                     const unsigned char* own_masks, float* world, float* world_state, const int* world_columns,
                     int agent_ids, int world_size) {
    TeamInputsArgs a = {slots, env_obs, obs, masks, own_masks, world, world_state, world_columns, n, agent_ids,
                        world_size};
    launch(n, 256, [=] { team_inputs_kernel(a); });
}

/* rollout_step_kernel at step t for n envs: y (R, HEAD_Y) the decoder output without dec_bias; masks (R, A) step t's
 * (or NULL); the env's observations go to env_obs (TeamRollout's obs_next). */
void emu_rollout_step(int n, int t, const float* y, const float* dec_bias, fv_slot* slots, float* final_obs,
                      unsigned char* terminated, unsigned char* truncated, float* ep_return, int* ep_length,
                      float* ep_stats, double* episode_acc, const TrainScalars* scalars, unsigned long long seed_key,
                      int max_episode_steps, OBS_T* env_obs, int* actions, float* logp, float* values,
                      float* rewards, float* dones, float* starts_next, const unsigned char* masks) {
    RolloutArgs a = {};
    a.y = y, a.dec_bias = dec_bias, a.slots = slots, a.final_obs = final_obs, a.terminated = terminated;
    a.truncated = truncated, a.ep_return = ep_return, a.ep_length = ep_length, a.ep_stats = ep_stats;
    a.episode_acc = episode_acc, a.scalars = scalars, a.seed_key = seed_key, a.num_envs = n;
    a.R = n * NUM_AGENTS, a.max_episode_steps = max_episode_steps;
    StepSlices s = {};
    s.obs_next = env_obs, s.actions = actions, s.logp = logp, s.values = values, s.rewards = rewards;
    s.dones = dones, s.starts_next = starts_next, s.masks = masks;
    launch(n, 256, [=] { rollout_step_kernel(a, s, t); });
}
}
