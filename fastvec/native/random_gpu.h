/* random_gpu.h: the GPU's random policy, part of the GPU env module (batch_gpu.h): a kernel that writes
 * the random actions of one policy step, and fused rollouts that take many steps under that policy in
 * one launch, each env's slot kept in registers (or, staged, in shared memory) for all of them. */
#ifndef FASTVEC_RANDOM_GPU_H
#define FASTVEC_RANDOM_GPU_H

#include "batch.h"
#include "slots_gpu.h"

/* ---------------------------------------------------------------- the random policy
 * Action value d of agent a at policy step t of env i: flat index k = (t * NUM_AGENTS + a) *
 * ACTION_DIMS + d in the counter-based stream keyed by fv_mix64(key + i); one 64-bit draw holds
 * FV_ACTIONS_PER_DRAW values of FV_ACTION_BITS bits each (k's draw is k / FV_ACTIONS_PER_DRAW), so the
 * fused rollout hashes once per 64 CartPole steps rather than every step, and the eager kernel draws
 * the same actions. Discrete: power-of-two action counts take exactly log2(n) bits (unbiased); others
 * take 32 bits and (bits * n) >> 32 (bias below n / 2^32); MultiDiscrete: that per dimension, with
 * 32 bits. Box: 32 bits, of which 24 make a uniform float in [low, high) (a dimension with an
 * infinite bound draws from an interval of width 2 at its finite bound, or [-1, 1)). */
#define FV_IS_POW2(n) (((n) & ((n) - 1)) == 0)
#define FV_LOG2(n) ((n) >= 32768 ? 15 : (n) >= 16384 ? 14 : (n) >= 8192 ? 13 : (n) >= 4096 ? 12 : (n) >= 2048 ? 11 : \
                    (n) >= 1024 ? 10 : (n) >= 512 ? 9 : (n) >= 256 ? 8 : (n) >= 128 ? 7 : (n) >= 64 ? 6 : \
                    (n) >= 32 ? 5 : (n) >= 16 ? 4 : (n) >= 8 ? 3 : (n) >= 4 ? 2 : 1)
#if ACTION_SPACE == FV_DISCRETE
#define FV_ACTION_BITS (NUM_ACTIONS <= 2 ? 1 : FV_IS_POW2(NUM_ACTIONS) && NUM_ACTIONS <= 32768 ? FV_LOG2(NUM_ACTIONS) : 32)
#else
#define FV_ACTION_BITS 32
#endif
#define FV_ACTIONS_PER_DRAW (64 / FV_ACTION_BITS)

static __device__ __forceinline__ fv_u64 fv_random_draw(fv_u64 env_key, fv_u64 draw) {
    fv_rng r;
    r.key = env_key; /* fv_mix64(key + i), computed once per env by the fused rollout */
    r.counter = draw;
    return fv_rand_u64(&r);
}

/* Value j of a draw's bits as an action value of dimension d. */
static __device__ __forceinline__ ACT_T fv_action_of_draw(fv_u64 bits, int j, int d) {
    fv_u64 chunk = (bits >> (j * FV_ACTION_BITS)) & ((1ULL << FV_ACTION_BITS) - 1);
#if ACTION_SPACE == FV_BOX
    float lo = fv_action_low[d], hi = fv_action_high[d];
    if (!(lo > -FV_INF)) lo = (hi < FV_INF ? hi : 1.0f) - 2.0f;
    if (!(hi < FV_INF)) hi = lo + 2.0f;
    return lo + (hi - lo) * ((float)(chunk >> 8) * (1.0f / 16777216.0f));
#elif ACTION_SPACE == FV_MULTI_DISCRETE
    return (long long)((chunk * (fv_u64)fv_action_nvec[d]) >> FV_ACTION_BITS);
#else
    (void)d;
    return (long long)((chunk * (fv_u64)NUM_ACTIONS) >> FV_ACTION_BITS);
#endif
}

static __device__ __forceinline__ fv_u64 fv_random_index(long long t, int a, int d) {
    return ((fv_u64)t * NUM_AGENTS + (fv_u64)a) * ACTION_DIMS + (fv_u64)d;
}

static __device__ __forceinline__ ACT_T fv_random_action(fv_u64 key, int i, long long t, int a, int d) {
    fv_u64 k = fv_random_index(t, a, d);
    return fv_action_of_draw(fv_random_draw(fv_mix64(key + (fv_u64)i), k / FV_ACTIONS_PER_DRAW),
                             (int)(k % FV_ACTIONS_PER_DRAW), d);
}

/* The fused rollout's last draw per env, so that consecutive steps share it. */
typedef struct {
    fv_u64 draw, bits;
} fv_action_cache;

static __device__ __forceinline__ ACT_T fv_cached_random_action(fv_action_cache* c, fv_u64 env_key, long long t,
                                                                int a, int d) {
    fv_u64 k = fv_random_index(t, a, d), draw = k / FV_ACTIONS_PER_DRAW;
    if (draw != c->draw) { /* the same for every env of a warp: no divergence */
        c->bits = fv_random_draw(env_key, draw);
        c->draw = draw;
    }
    return fv_action_of_draw(c->bits, (int)(k % FV_ACTIONS_PER_DRAW), d);
}

/* actions (N, NUM_AGENTS, ACTION_DIMS) of ACT_T of the random policy at step t. */
extern "C" __global__ void fv_random_actions_kernel(int n, fv_u64 key, long long t, ACT_T* actions) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int a = 0; a < NUM_AGENTS; a++)
        for (int d = 0; d < ACTION_DIMS; d++)
            actions[((long long)i * NUM_AGENTS + a) * ACTION_DIMS + d] = fv_random_action(key, i, t, a, d);
}

/* ---------------------------------------------------------------- fused random rollouts */
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
static __device__ __forceinline__ void fv_rollout_step(int i, fv_u64 env_key, fv_action_cache* cache, long long t,
                                                       fv_slot* s, OBS_T* o, fv_step_outputs* out, OBS_T* final_obs,
                                                       int autoreset_mode, int max_episode_steps) {
    ACT_T act[FV_ACT_LEN];
    for (int a = 0; a < NUM_AGENTS; a++)
        for (int d = 0; d < ACTION_DIMS; d++) act[a * ACTION_DIMS + d] = fv_cached_random_action(cache, env_key, t, a, d);
    fv_step_one(0, s, act, o, out->rewards, &out->terminated, &out->truncated,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, out->ep_return, &out->ep_length, out->stats,
                autoreset_mode, max_episode_steps);
}

/* The fused random rollouts' arguments (cuda_build.py prepares them as "iiQqP" + 9 "P" + "ii"). */
#define FV_ROLLOUT_RANDOM_ARGS                                                                               \
    int n, int steps, fv_u64 key, long long t0, char* slots, OBS_T* obs, float* rewards,                    \
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,              \
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps

/* `steps` steps of every env under the random policy (policy steps t0 .. t0 + steps - 1), in one
 * launch. Equal to alternating fv_random_actions_kernel and a step kernel; the outputs hold
 * the last step's values (final_obs that of the last episode end, as after those steps). The slot,
 * the obs and the step outputs live in registers for the whole launch. */
static __device__ __forceinline__ void fv_rollout_random(FV_ROLLOUT_RANDOM_ARGS) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fv_split p = fv_split_of(slots, n);
    fv_slot s;
    s.env = p.states[i];
    fv_unpack_book(p.books[i], &s);
    s.rng = p.rngs[i];
    OBS_T o[NUM_AGENTS * OBS_SIZE];
    fv_step_outputs out;
    fv_u64 env_key = fv_mix64(key + (fv_u64)i);
    fv_action_cache cache = {~0ULL, 0};
    for (int t = 0; t < steps; t++)
        fv_rollout_step(i, env_key, &cache, t0 + t, &s, o, &out, final_obs, autoreset_mode, max_episode_steps);
    p.states[i] = s.env;
    fv_store_book(&p.books[i], &s, out.terminated | out.truncated);
    p.rngs[i] = s.rng;
    for (int k = 0; k < NUM_AGENTS * OBS_SIZE; k++) obs[(long long)i * NUM_AGENTS * OBS_SIZE + k] = o[k];
    fv_store_outputs(i, &out, rewards, terminated, truncated, done, ep_return, ep_length, stats);
}

extern "C" __global__ void fv_rollout_random_kernel(FV_ROLLOUT_RANDOM_ARGS) {
    fv_rollout_random(n, steps, key, t0, slots, obs, rewards, terminated, truncated, done, final_obs, ep_return,
                      ep_length, stats, autoreset_mode, max_episode_steps);
}

/* The same, its registers capped so that two blocks of 256 threads share an SM (128 each): for an env whose step
 * needs more, twice the envs in flight to hide latency are worth the few values that go to local memory. */
extern "C" __global__ void __launch_bounds__(256, 2) fv_rollout_random_occ_kernel(FV_ROLLOUT_RANDOM_ARGS) {
    fv_rollout_random(n, steps, key, t0, slots, obs, rewards, terminated, truncated, done, final_obs, ep_return,
                      ep_length, stats, autoreset_mode, max_episode_steps);
}

/* The fused rollout with the block's slots and obs in shared memory (as batch_gpu.h's staged kernels); empty where
 * no env fits (never launched then). */
extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_rollout_random_staged_kernel(FV_ROLLOUT_RANDOM_ARGS) {
    if constexpr (FV_STAGE_THREADS > 0) {
        __shared__ unsigned long long sh_slots[FV_STAGE_SLOT_WORDS];
        __shared__ unsigned long long sh_obs[FV_STAGE_OBS_WORDS];
        fv_slot* sh = (fv_slot*)sh_slots;
        int base = blockIdx.x * blockDim.x, tid = threadIdx.x;
        int count = min((int)blockDim.x, n - base);
        int i = base + tid;
        fv_split p = fv_split_of(slots, n);
        fv_book book;
        fv_rng rng;
        fv_state_regs r;
        if (tid < count) {
            book = p.books[i];
            rng = p.rngs[i];
        }
        fv_issue_state_loads(&r, p.states + base, count);
        if (tid < count) {
            fv_unpack_book(book, &sh[tid]);
            sh[tid].rng = rng;
        }
        fv_finish_state_loads(sh, &r, p.states + base, count);
        __syncthreads();
        if (tid < count) {
            fv_step_outputs out;
            fv_u64 env_key = fv_mix64(key + (fv_u64)i);
            fv_action_cache cache = {~0ULL, 0};
            for (int t = 0; t < steps; t++)
                fv_rollout_step(i, env_key, &cache, t0 + t, &sh[tid], (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE,
                                &out, final_obs, autoreset_mode, max_episode_steps);
            fv_store_book(&p.books[i], &sh[tid], out.terminated | out.truncated);
            p.rngs[i] = sh[tid].rng;
            fv_store_outputs(i, &out, rewards, terminated, truncated, done, ep_return, ep_length, stats);
        }
        __syncthreads();
        fv_store_states(p.states + base, sh, count);
        fv_block_copy(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
    }
}

#endif /* FASTVEC_RANDOM_GPU_H */
