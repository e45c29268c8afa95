/* batch_gpu.h: the GPU-only kernels that fastvec/native/cuda.py launches, compiled after an env
 * file and batch.h. They reuse fv_step_one / fv_reset_one unchanged, so the GPU follows exactly
 * the CPU's semantics; what they add is what only a device needs:
 *   - actions read in place from any integer device array (any width, any strides), validated on
 *     the device (the first bad one is recorded for the host; the env steps with action 0),
 *   - a `done` flag per env (terminated | truncated) for masks without a host round trip,
 *   - a random-action kernel and a fused multi-step random rollout that keeps each env's slot in
 *     registers for all steps (one launch, no per-step global traffic for the state).
 * Each kernel works on a private copy of env i's slot and hands fv_step_one base pointers already
 * offset to env i (index 0), which is how the slot stays in registers.
 */
#ifndef FASTVEC_BATCH_GPU_H
#define FASTVEC_BATCH_GPU_H

#define FV_NO_ERROR 0xFFFFFFFFFFFFFFFFULL

/* Action of agent a of env i from an integer array with byte strides; unsigned 64-bit values
 * above 2^63 read as negative, so they fail the range check like any other bad value. */
static __device__ __forceinline__ long long fv_load_action(const char* base, long long env_stride,
                                                           long long agent_stride, int bytes,
                                                           int is_signed, int i, int a) {
    const char* p = base + (long long)i * env_stride + (long long)a * agent_stride;
    switch (bytes) {
    case 1: return is_signed ? (long long)*(const signed char*)p : (long long)*(const unsigned char*)p;
    case 2: return is_signed ? (long long)*(const short*)p : (long long)*(const unsigned short*)p;
    case 4: return is_signed ? (long long)*(const int*)p : (long long)*(const unsigned int*)p;
    default: return *(const long long*)p;
    }
}

/* The random policy: action of agent a of env i at policy step t, from a counter-based stream
 * keyed by (key + i), so the fused rollout and the eager kernel draw the same actions. */
static __device__ __forceinline__ long long fv_random_action(fv_u64 key, int i, long long t, int a) {
    fv_rng r;
    r.key = fv_mix64(key + (fv_u64)i);
    r.counter = (fv_u64)t * NUM_AGENTS + (fv_u64)a;
    return fv_rand_int(&r, NUM_ACTIONS);
}

/* Step env i, whose slot is the private copy s, with actions act[NUM_AGENTS]. */
static __device__ __forceinline__ void fv_step_private(
    int i, fv_slot* s, const long long* act, OBS_T* obs, float* rewards, unsigned char* terminated,
    unsigned char* truncated, unsigned char* done, OBS_T* final_obs, float* ep_return,
    int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    long long o = (long long)i * NUM_AGENTS * OBS_SIZE;
    fv_step_one(0, s, act, obs + o, rewards + i * NUM_AGENTS, terminated + i, truncated + i,
                final_obs + o, ep_return + i * NUM_AGENTS, ep_length + i,
                NUM_STATS > 0 ? stats + i * NUM_STATS : stats, autoreset_mode, max_episode_steps);
    done[i] = terminated[i] | truncated[i];
}

/* One step of every env; actions of any integer type and strides (bytes), checked on the device:
 * *error keeps the smallest (flat index << 32 | low 32 bits of the value) of the bad actions. */
extern "C" __global__ void fv_step_any_kernel(
    int n, fv_slot* slots, const char* actions, long long env_stride, long long agent_stride,
    int action_bytes, int action_signed, OBS_T* obs, float* rewards, unsigned char* terminated,
    unsigned char* truncated, unsigned char* done, OBS_T* final_obs, float* ep_return,
    int* ep_length, float* stats, int autoreset_mode, int max_episode_steps, fv_u64* error) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) {
        long long v = fv_load_action(actions, env_stride, agent_stride, action_bytes, action_signed, i, a);
        if (v < 0 || v >= NUM_ACTIONS) {
            atomicMin(error, ((fv_u64)(i * NUM_AGENTS + a) << 32) | (fv_u64)(unsigned int)v);
            v = 0;
        }
        act[a] = v;
    }
    fv_slot s = slots[i];
    fv_step_private(i, &s, act, obs, rewards, terminated, truncated, done, final_obs, ep_return,
                    ep_length, stats, autoreset_mode, max_episode_steps);
    slots[i] = s;
}

/* actions (N, NUM_AGENTS) int64 of the random policy at step t. */
extern "C" __global__ void fv_random_actions_kernel(int n, fv_u64 key, long long t, long long* actions) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int a = 0; a < NUM_AGENTS; a++) actions[i * NUM_AGENTS + a] = fv_random_action(key, i, t, a);
}

/* `steps` steps of every env under the random policy (policy steps t0 .. t0 + steps - 1), in one
 * launch. Equal to alternating fv_random_actions_kernel and fv_step_any_kernel; the outputs hold
 * the last step's values (episode bookkeeping as usual: ep_return etc. of the last episode end). */
extern "C" __global__ void fv_rollout_random_kernel(
    int n, int steps, fv_u64 key, long long t0, fv_slot* slots, OBS_T* obs, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fv_slot s = slots[i];
    for (int t = 0; t < steps; t++) {
        long long act[NUM_AGENTS];
        for (int a = 0; a < NUM_AGENTS; a++) act[a] = fv_random_action(key, i, t0 + t, a);
        fv_step_private(i, &s, act, obs, rewards, terminated, truncated, done, final_obs, ep_return,
                        ep_length, stats, autoreset_mode, max_episode_steps);
    }
    slots[i] = s;
}

/* The env's statistic names, for the host (module.get_global). */
extern "C" __device__ const char fv_stat_names[] = STAT_NAMES;

#endif /* FASTVEC_BATCH_GPU_H */
