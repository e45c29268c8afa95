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
static __device__ __forceinline__ long long fv_random_action_of(fv_u64 env_key, long long t, int a) {
    fv_rng r;
    r.key = env_key; /* fv_mix64(key + i), computed once per env by the fused rollout */
    r.counter = (fv_u64)t * NUM_AGENTS + (fv_u64)a;
    return fv_rand_int(&r, NUM_ACTIONS);
}

static __device__ __forceinline__ long long fv_random_action(fv_u64 key, int i, long long t, int a) {
    return fv_random_action_of(fv_mix64(key + (fv_u64)i), t, a);
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

/* The per-step outputs of one env during a fused rollout, held in registers: only the last step's
 * values reach global memory (one store each at the end instead of one per step). */
typedef struct {
    float rewards[NUM_AGENTS];
    float ep_return[NUM_AGENTS];
    float stats[NUM_STATS > 0 ? NUM_STATS : 1];
    int ep_length;
    unsigned char terminated, truncated;
} fv_step_outputs;

static __device__ __forceinline__ void fv_store_outputs(int i, const fv_step_outputs* out, float* rewards,
                                                        unsigned char* terminated, unsigned char* truncated,
                                                        unsigned char* done, float* ep_return, int* ep_length,
                                                        float* stats) {
    for (int a = 0; a < NUM_AGENTS; a++) {
        rewards[i * NUM_AGENTS + a] = out->rewards[a];
        ep_return[i * NUM_AGENTS + a] = out->ep_return[a];
    }
    for (int k = 0; k < NUM_STATS; k++) stats[i * NUM_STATS + k] = out->stats[k];
    ep_length[i] = out->ep_length;
    terminated[i] = out->terminated;
    truncated[i] = out->truncated;
    done[i] = out->terminated | out->truncated;
}

/* One step of env i (private slot s, observation o) under the random policy at policy step t, with
 * the step outputs in registers; final_obs (written only where an episode ends) goes straight out. */
static __device__ __forceinline__ void fv_rollout_step(int i, fv_u64 env_key, long long t, fv_slot* s, OBS_T* o,
                                                       fv_step_outputs* out, OBS_T* final_obs,
                                                       int autoreset_mode, int max_episode_steps) {
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) act[a] = fv_random_action_of(env_key, t, a);
    fv_step_one(0, s, act, o, out->rewards, &out->terminated, &out->truncated,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, out->ep_return, &out->ep_length, out->stats,
                autoreset_mode, max_episode_steps);
}

/* `steps` steps of every env under the random policy (policy steps t0 .. t0 + steps - 1), in one
 * launch. Equal to alternating fv_random_actions_kernel and fv_step_any_kernel; the outputs hold
 * the last step's values (final_obs that of the last episode end, as after those steps). The slot,
 * the obs and the step outputs live in registers for the whole launch. */
extern "C" __global__ void fv_rollout_random_kernel(
    int n, int steps, fv_u64 key, long long t0, fv_slot* slots, OBS_T* obs, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fv_slot s = slots[i];
    OBS_T o[NUM_AGENTS * OBS_SIZE];
    fv_step_outputs out;
    fv_u64 env_key = fv_mix64(key + (fv_u64)i);
    for (int t = 0; t < steps; t++)
        fv_rollout_step(i, env_key, t0 + t, &s, o, &out, final_obs, autoreset_mode, max_episode_steps);
    slots[i] = s;
    for (int k = 0; k < NUM_AGENTS * OBS_SIZE; k++) obs[(long long)i * NUM_AGENTS * OBS_SIZE + k] = o[k];
    fv_store_outputs(i, &out, rewards, terminated, truncated, done, ep_return, ep_length, stats);
}

/* ---------------------------------------------------------------- staged variants
 * The same steps, with each block's slots and observations passing through shared memory, so
 * that global memory is read and written in contiguous runs (a thread's own slot and obs are
 * strided by their size across a warp, which costs many more memory transactions). A block
 * stages FV_STAGE_THREADS envs; 0 means one env's slot and obs do not fit in FV_STAGE_BYTES and
 * the host uses the plain kernels above. */
#ifndef FV_STAGE_BYTES
#define FV_STAGE_BYTES 40960
#endif
#define FV_SLOT_WORDS ((int)(sizeof(fv_slot) / 8)) /* fv_slot holds a u64, so its size is a multiple of 8 */
#define FV_OBS_BYTES ((int)(NUM_AGENTS * OBS_SIZE * sizeof(OBS_T)))
#define FV_OBS_WORDS ((FV_OBS_BYTES + 7) / 8)
#define FV_ENV_STAGE_BYTES (8 * (FV_SLOT_WORDS + FV_OBS_WORDS))
#define FV_STAGE_FITS(t) ((t) * FV_ENV_STAGE_BYTES <= FV_STAGE_BYTES)
#define FV_STAGE_THREADS (FV_STAGE_FITS(256) ? 256 : FV_STAGE_FITS(128) ? 128 : FV_STAGE_FITS(64) ? 64 : \
                          FV_STAGE_FITS(32) ? 32 : 0)
#define FV_STAGE_ALLOC (FV_STAGE_THREADS > 0 ? FV_STAGE_THREADS : 1)

/* Copy `bytes` bytes between global and shared memory with the whole block, in 8-, 4- or 1-byte
 * words (whichever divides the size), consecutive threads on consecutive words. */
static __device__ __forceinline__ void fv_block_copy(void* dst, const void* src, int bytes) {
    if (bytes % 8 == 0) {
        for (int k = threadIdx.x; k < bytes / 8; k += blockDim.x)
            ((unsigned long long*)dst)[k] = ((const unsigned long long*)src)[k];
    } else if (bytes % 4 == 0) {
        for (int k = threadIdx.x; k < bytes / 4; k += blockDim.x) ((unsigned int*)dst)[k] = ((const unsigned int*)src)[k];
    } else {
        for (int k = threadIdx.x; k < bytes; k += blockDim.x) ((unsigned char*)dst)[k] = ((const unsigned char*)src)[k];
    }
}

/* Load the block's `count` slots into shared memory. Each thread issues all of its loads before
 * storing any (a compile-time trip count, unrolled), so they are in flight together: a loop that
 * waits for each load in turn was latency-bound (CartPole 1M envs: 12 G steps/s). */
static __device__ __forceinline__ void fv_load_slots(unsigned long long* sh, const fv_slot* slots, int count) {
    const unsigned long long* g = (const unsigned long long*)slots;
    int total = count * FV_SLOT_WORDS;
    unsigned long long r[FV_SLOT_WORDS];
#pragma unroll
    for (int j = 0; j < FV_SLOT_WORDS; j++) {
        int k = threadIdx.x + j * blockDim.x;
        if (k < total) r[j] = g[k];
    }
#pragma unroll
    for (int j = 0; j < FV_SLOT_WORDS; j++) {
        int k = threadIdx.x + j * blockDim.x;
        if (k < total) sh[k] = r[j];
    }
}

/* fv_step_one for env i = base + tid with slot and obs in shared memory. */
static __device__ __forceinline__ void fv_step_staged(
    int i, fv_slot* sh_slot, OBS_T* sh_obs, const long long* act, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    /* Works on the slot in shared memory: envs that index their state dynamically (Breakout's
     * bricks) would otherwise copy it to local memory, which is global memory again. */
    fv_step_one(0, sh_slot, act, sh_obs, rewards + i * NUM_AGENTS, terminated + i, truncated + i,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, ep_return + i * NUM_AGENTS, ep_length + i,
                NUM_STATS > 0 ? stats + i * NUM_STATS : stats, autoreset_mode, max_episode_steps);
    done[i] = terminated[i] | truncated[i];
}

extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_step_staged_kernel(
    int n, fv_slot* slots, const char* actions, long long env_stride, long long agent_stride,
    int action_bytes, int action_signed, OBS_T* obs, float* rewards, unsigned char* terminated,
    unsigned char* truncated, unsigned char* done, OBS_T* final_obs, float* ep_return,
    int* ep_length, float* stats, int autoreset_mode, int max_episode_steps, fv_u64* error) {
    __shared__ unsigned long long sh_slots[FV_STAGE_ALLOC * FV_SLOT_WORDS];
    __shared__ unsigned long long sh_obs[FV_STAGE_ALLOC * FV_OBS_WORDS];
    int base = blockIdx.x * blockDim.x, tid = threadIdx.x;
    int count = min((int)blockDim.x, n - base);
    int i = base + tid;
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++)  /* issued before the slot loads, to overlap with them */
        act[a] = tid < count ? fv_load_action(actions, env_stride, agent_stride, action_bytes, action_signed, i, a) : 0;
    fv_load_slots(sh_slots, slots + base, count);
    __syncthreads();
    if (tid < count) {
        for (int a = 0; a < NUM_AGENTS; a++) {
            if (act[a] < 0 || act[a] >= NUM_ACTIONS) {
                atomicMin(error, ((fv_u64)(i * NUM_AGENTS + a) << 32) | (fv_u64)(unsigned int)act[a]);
                act[a] = 0;
            }
        }
        fv_step_staged(i, (fv_slot*)sh_slots + tid, (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE, act, rewards,
                       terminated, truncated, done, final_obs, ep_return, ep_length, stats, autoreset_mode,
                       max_episode_steps);
    }
    __syncthreads();
    fv_block_copy(slots + base, sh_slots, count * (int)sizeof(fv_slot));
    fv_block_copy(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
}

extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_rollout_random_staged_kernel(
    int n, int steps, fv_u64 key, long long t0, fv_slot* slots, OBS_T* obs, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    __shared__ unsigned long long sh_slots[FV_STAGE_ALLOC * FV_SLOT_WORDS];
    __shared__ unsigned long long sh_obs[FV_STAGE_ALLOC * FV_OBS_WORDS];
    int base = blockIdx.x * blockDim.x, tid = threadIdx.x;
    int count = min((int)blockDim.x, n - base);
    fv_load_slots(sh_slots, slots + base, count);
    __syncthreads();
    if (tid < count) {
        int i = base + tid;
        fv_step_outputs out;
        fv_u64 env_key = fv_mix64(key + (fv_u64)i);
        for (int t = 0; t < steps; t++)
            fv_rollout_step(i, env_key, t0 + t, (fv_slot*)sh_slots + tid, (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE,
                            &out, final_obs, autoreset_mode, max_episode_steps);
        fv_store_outputs(i, &out, rewards, terminated, truncated, done, ep_return, ep_length, stats);
    }
    __syncthreads();
    fv_block_copy(slots + base, sh_slots, count * (int)sizeof(fv_slot));
    fv_block_copy(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
}

extern "C" __device__ const int fv_stage_threads = FV_STAGE_THREADS;

/* The env's statistic names, for the host (module.get_global). */
extern "C" __device__ const char fv_stat_names[] = STAT_NAMES;

#endif /* FASTVEC_BATCH_GPU_H */
