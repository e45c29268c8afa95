/* batch.h: the batch layer both backends compile after an env file: per-env slots (state, RNG,
 * episode bookkeeping), truncation, the three Gymnasium autoreset modes, and the exported entry
 * points (pool.h's threads claiming chunks of envs on the CPU, one thread per environment on the GPU).
 * The env's spaces and the action check are spaces.h's.
 */
#ifndef FASTVEC_BATCH_H
#define FASTVEC_BATCH_H

#include "fastvec.h"
#include "spaces.h"
#ifndef __CUDACC__
#include "pool.h"
#endif

#ifndef NUM_STATS
#define NUM_STATS 0
#endif
#ifndef STAT_NAMES
#define STAT_NAMES ""
#endif
#ifndef SIMD_STEP
#define SIMD_STEP 0
#endif

/* The optional hooks of fastvec.h: available-action masks and the world state. */
#ifdef ACTION_MASK
#define FV_HAS_ACTION_MASK 1
#if ACTION_SPACE != FV_DISCRETE
#error "ACTION_MASK is for Discrete action spaces (NUM_ACTIONS per agent)"
#endif
#else
#define FV_HAS_ACTION_MASK 0
#endif
#ifdef WORLD_STATE_SIZE
#define FV_HAS_WORLD_STATE 1
#else
#define FV_HAS_WORLD_STATE 0
#define WORLD_STATE_SIZE 0
#endif
#define FV_HAS_EXTRAS (FV_HAS_ACTION_MASK || FV_HAS_WORLD_STATE)
#define FV_MASK_LEN (FV_HAS_ACTION_MASK ? NUM_AGENTS * NUM_ACTIONS : 0) /* mask bytes per env */

/* Autoreset modes, numbered as fastvec/native/__init__.py's AUTORESET_CODES. */
#define FV_NEXT_STEP 0
#define FV_SAME_STEP 1
#define FV_DISABLED 2

/* One environment of the batch; an array of these is the whole simulator state. */
typedef struct {
    State env;
    fv_rng rng;
    float ep_return[NUM_AGENTS]; /* running return of the current episode, per agent */
    int ep_length;               /* steps in the current episode */
    int needs_reset;             /* episode ended; NEXT_STEP resets on the next step */
} fv_slot;

FV_FN void fv_reset_slot(fv_slot* s, OBS_T* obs) {
    for (int a = 0; a < NUM_AGENTS; a++) s->ep_return[a] = 0.0f;
    s->ep_length = 0;
    s->needs_reset = 0;
    env_reset(&s->env, &s->rng, obs);
}

/* Reset env i if mask is NULL or mask[i]; reseed it first if seeds is not NULL. */
FV_FN void fv_reset_one(int i, fv_slot* slots, const fv_u64* seeds, const unsigned char* mask,
                        OBS_T* obs) {
    if (mask && !mask[i]) return;
    if (seeds) fv_rng_seed(&slots[i].rng, seeds[i]);
    fv_reset_slot(&slots[i], obs + (long long)i * NUM_AGENTS * OBS_SIZE);
}

/* Step env i. Buffers are batch-major: obs/final_obs (N, NUM_AGENTS, OBS_SIZE), actions (N,
 * NUM_AGENTS, ACTION_DIMS), rewards and ep_return (N, NUM_AGENTS), terminated/truncated/ep_length
 * (N), stats (N, NUM_STATS).
 * ep_return, ep_length and stats hold the finished episode's values where the env is done, else 0. */
FV_FN void fv_step_one(int i, fv_slot* slots, const ACT_T* actions, OBS_T* obs,
                       float* rewards, unsigned char* terminated, unsigned char* truncated,
                       OBS_T* final_obs, float* ep_return, int* ep_length, float* stats,
                       int autoreset_mode, int max_episode_steps) {
    fv_slot* s = &slots[i];
    OBS_T* o = obs + (long long)i * NUM_AGENTS * OBS_SIZE;
    float* r = rewards + i * NUM_AGENTS;
    if (autoreset_mode == FV_NEXT_STEP && s->needs_reset) {
        fv_reset_slot(s, o);
        for (int a = 0; a < NUM_AGENTS; a++) r[a] = ep_return[i * NUM_AGENTS + a] = 0.0f;
        for (int k = 0; k < NUM_STATS; k++) stats[i * NUM_STATS + k] = 0.0f;
        ep_length[i] = 0;
        terminated[i] = 0;
        truncated[i] = 0;
        return;
    }
    float st[NUM_STATS > 0 ? NUM_STATS : 1];
    int term = env_step(&s->env, &s->rng, actions + (long long)i * FV_ACT_LEN, o, r, st);
    s->ep_length += 1;
    for (int a = 0; a < NUM_AGENTS; a++) s->ep_return[a] += r[a];
    /* As Gymnasium's TimeLimit: truncated at the limit even if the same step also terminated. */
    int trunc = max_episode_steps > 0 && s->ep_length >= max_episode_steps;
    terminated[i] = (unsigned char)term;
    truncated[i] = (unsigned char)trunc;
    /* Episode outputs are the finished episode's values where done and 0 elsewhere, so the
     * host can hand them out as Gymnasium info arrays without a masking pass. */
    int done = term || trunc;
    for (int a = 0; a < NUM_AGENTS; a++) ep_return[i * NUM_AGENTS + a] = done ? s->ep_return[a] : 0.0f;
    ep_length[i] = done ? s->ep_length : 0;
    for (int k = 0; k < NUM_STATS; k++) stats[i * NUM_STATS + k] = done ? st[k] : 0.0f;
    if (done) {
        if (autoreset_mode == FV_SAME_STEP) {
            OBS_T* f = final_obs + (long long)i * NUM_AGENTS * OBS_SIZE;
            for (int k = 0; k < NUM_AGENTS * OBS_SIZE; k++) f[k] = o[k];
            fv_reset_slot(s, o);
        } else {
            s->needs_reset = 1;
        }
    }
}

/* Env i's action masks into masks (N, NUM_AGENTS, NUM_ACTIONS) and its world state into world (N,
 * WORLD_STATE_SIZE), each where its pointer is not NULL and the env defines the hook: the outputs that go with
 * the observation of the env's state as it is. */
FV_FN void fv_observe_one(int i, const State* s, unsigned char* masks, float* world) {
#if FV_HAS_ACTION_MASK
    if (masks) env_action_mask(s, masks + (long long)i * FV_MASK_LEN);
#endif
#if FV_HAS_WORLD_STATE
    if (world) env_world_state(s, world + (long long)i * WORLD_STATE_SIZE);
#endif
    (void)i, (void)s, (void)masks, (void)world;
}

#ifdef __CUDACC__
/* ---------------------------------------------------------------- staging in shared memory
 * A thread's own slot and obs are strided by their size across a warp, so a kernel that steps envs
 * in place costs many more memory transactions than one that moves each block's slots and obs
 * between global and shared memory in contiguous runs and steps them there (batch_gpu.h's staged
 * step kernels, the trainer's rollout step). A block stages FV_STAGE_THREADS envs; 0 means one
 * env's slot and obs do not fit in FV_STAGE_BYTES and the unstaged kernels are used. Blocks of fewer than
 * 32 envs (half-empty warps) still beat the unstaged step for a large state (Seaquest's ~1.6 KB): in place,
 * every access to the state is a strided global one, and a small batch fills only a few SMs. */
#ifndef FV_STAGE_BYTES
#define FV_STAGE_BYTES 40960
#endif
#define FV_OBS_BYTES ((int)(NUM_AGENTS * OBS_SIZE * sizeof(OBS_T)))
#define FV_SLOT_WORDS ((int)(sizeof(fv_slot) / 8)) /* fv_slot holds a u64, so its size is a multiple of 8 */
#define FV_OBS_WORDS ((FV_OBS_BYTES + 7) / 8)
#define FV_ENV_STAGE_BYTES (8 * (FV_SLOT_WORDS + FV_OBS_WORDS))
#define FV_STAGE_FITS(t) ((t) * FV_ENV_STAGE_BYTES <= FV_STAGE_BYTES)
#define FV_STAGE_THREADS (FV_STAGE_FITS(256) ? 256 : FV_STAGE_FITS(128) ? 128 : FV_STAGE_FITS(64) ? 64 : \
                          FV_STAGE_FITS(32) ? 32 : FV_STAGE_FITS(16) ? 16 : FV_STAGE_FITS(8) ? 8 : 0)
#define FV_STAGE_ALLOC (FV_STAGE_THREADS > 0 ? FV_STAGE_THREADS : 1)
/* The staged kernels' shared buffers. Where no env fits (FV_STAGE_THREADS 0) the kernels, never launched, compile
 * empty (`if constexpr`), and one env's slot and obs could exceed a block's static 48 KB: a word or two. */
#define FV_STAGE_SLOT_WORDS (FV_STAGE_THREADS > 0 ? FV_STAGE_THREADS * FV_SLOT_WORDS : 1)
#define FV_STAGE_OBS_WORDS (FV_STAGE_THREADS > 0 ? FV_STAGE_THREADS * FV_OBS_WORDS : 2)

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

/* Copy `bytes` bytes (the block's observations) from shared to global memory in 16-byte words
 * where the size and both addresses allow (else fv_block_copy): half the store instructions of
 * 8-byte words for a large obs (Breakout's 472 bytes per env). */
static __device__ __forceinline__ void fv_block_copy_wide(void* dst, const void* src, int bytes) {
    if (bytes % 16 == 0 && ((unsigned long long)dst | (unsigned long long)src) % 16 == 0) {
        for (int k = threadIdx.x; k < bytes / 16; k += blockDim.x) ((uint4*)dst)[k] = ((const uint4*)src)[k];
    } else {
        fv_block_copy(dst, src, bytes);
    }
}

/* ---------------------------------------------------------------- GPU entry points */
/* Reset over whole fv_slots (the trainer's layout; the env backend splits them: batch_gpu.h). */
extern "C" __global__ void fv_reset_kernel(int n, fv_slot* slots, const fv_u64* seeds,
                                           const unsigned char* mask, OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) fv_reset_one(i, slots, seeds, mask, obs);
}

/* Sizes the host reads back with module.get_global. */
extern "C" __device__ const int fv_obs_size = OBS_SIZE;
extern "C" __device__ const int fv_num_actions = NUM_ACTIONS;
extern "C" __device__ const int fv_action_kind = ACTION_SPACE;
extern "C" __device__ const int fv_action_dims = ACTION_DIMS;
extern "C" __device__ const int fv_state_values = FV_HAS_STATE ? STATE_SIZE : -1;
extern "C" __device__ const int fv_num_agents = NUM_AGENTS;
extern "C" __device__ const int fv_num_stats = NUM_STATS;
extern "C" __device__ const int fv_slot_size = (int)sizeof(fv_slot);
extern "C" __device__ const int fv_obs_bytes = (int)sizeof(OBS_T);
extern "C" __device__ const int fv_action_mask = FV_HAS_ACTION_MASK;
extern "C" __device__ const int fv_world_state_size = FV_HAS_WORLD_STATE ? WORLD_STATE_SIZE : -1;

#else
/* ---------------------------------------------------------------- CPU entry points */
#define FV_EXPORT __attribute__((visibility("default")))

typedef struct { fv_slot* slots; const fv_u64* seeds; const unsigned char* mask; OBS_T* obs; } fv_reset_job;

static int fv_reset_chunk(const void* p, int lo, int hi) {
    const fv_reset_job* j = (const fv_reset_job*)p;
    for (int i = lo; i < hi; i++) fv_reset_one(i, j->slots, j->seeds, j->mask, j->obs);
    return 0;
}

FV_EXPORT void fv_reset(int n, fv_slot* slots, const fv_u64* seeds, const unsigned char* mask,
                        OBS_T* obs) {
    fv_reset_job job = {slots, seeds, mask, obs};
    fv_pool_run(fv_reset_chunk, &job, n);
}

/* The action masks and world states (fv_observe_one) of the n envs, or of those in which where not NULL:
 * after a reset or a set state (a step writes its own). */
FV_EXPORT void fv_observe(int n, const fv_slot* slots, const unsigned char* which, unsigned char* masks,
                          float* world) {
    for (int i = 0; i < n; i++)
        if (!which || which[i]) fv_observe_one(i, &slots[i].env, masks, world);
}

/* The CPU step hands out contiguous chunks of envs (the pool above). An env that declares SIMD_STEP
 * (straight-line env_step: CartPole) has each chunk run in passes, so that its env_step runs 4-8
 * envs per vector instruction (`omp simd`, -fopenmp-simd, over the inlined env_step, then over the bookkeeping,
 * fv_finish_live); other envs (branchy, like Breakout) step one at a time with fv_step_one,
 * which is faster for them than the passes. An env whose vector step is right only for part of its
 * states declares SIMD_STEP_VALID(state) and env_step_simd (cartpole.h). The passes, FV_STAGE_TILE envs
 * at a time (fv_step_live):
 *   1. their slots are copied out of the batch (the States side by side, the book an array per field), and
 *      the envs that the vector pass cannot step (NEXT_STEP envs with a reset pending, and states outside
 *      SIMD_STEP_VALID) are set aside;
 *   2. every copy is stepped, no branch per env (an env set aside too, from a state that may give
 *      meaningless but harmless results), and the copies of the envs not set aside go back to their slots;
 *      an env that declares SIMD_STEP_REDO may ask for a step to be redone (env_step_simd's result has
 *      FV_SIMD_REDO set: its straight-line step does not cover where the state went), and that env is set
 *      aside now, its copy discarded;
 * then, over the tile:
 *   3. SAME_STEP: the envs that ended keep their final obs and are reset (not those set aside);
 *   4. the envs set aside, their slots untouched, take fv_step_one, which writes all their outputs.
 * Outputs and slots are exactly fv_step_one's (which the GPU runs); tests/native/test_cpu_speed_paths.py
 * checks this against a build with -DFV_CPU_SCALAR_STEP=1, the plain fv_step_one loop. */
#ifndef SIMD_STEP_VALID
#define SIMD_STEP_VALID(s) 1
#ifndef SIMD_STEP_REDO
#define env_step_simd env_step
#endif
#endif
#ifndef SIMD_STEP_REDO
#define SIMD_STEP_REDO 0
#endif

/* Env i's bookkeeping after its env_step (term: its return value, nonzero when terminated), on its
 * slot's book (length, episode return per agent, needs_reset) wherever the caller keeps it:
 * fv_step_one's second half without the SAME_STEP reset (the caller's), with selects rather than
 * branches so that a loop over envs vectorises. The flags are ints: byte stores in the loop would
 * make the compiler take 64 envs per vector iteration, and leave up to 63 to a scalar epilogue. */
FV_FN void fv_finish_live(int i, int* book_length, float* book_return, int* book_needs_reset,
                          const float* rewards, int term, int* trunc_flag, float* ep_return, int* ep_length,
                          float* stats, int autoreset_mode, int max_episode_steps) {
    int length = *book_length + 1;
    *book_length = length;
    int trunc = (max_episode_steps > 0) & (length >= max_episode_steps);
    int done = (term != 0) | trunc;
    *trunc_flag = trunc;
    for (int a = 0; a < NUM_AGENTS; a++) {
        float episode_return = book_return[a] + rewards[i * NUM_AGENTS + a];
        book_return[a] = episode_return;
        ep_return[i * NUM_AGENTS + a] = done ? episode_return : 0.0f;
    }
    ep_length[i] = done ? length : 0;
    for (int k = 0; k < NUM_STATS; k++) stats[i * NUM_STATS + k] = done ? stats[i * NUM_STATS + k] : 0.0f;
    *book_needs_reset |= done & (autoreset_mode != FV_SAME_STEP);
}

/* Envs per pass: the flags live on the stack, and a tile's slots stay in L2 between passes. */
#define FV_TILE 2048
#ifndef STEP_USES_RNG /* fastvec.h: 0 where env_step never draws (the passes then leave the RNGs in the slots) */
#define STEP_USES_RNG 1
#endif
/* Envs per copy of their slots (fv_step_live): the copy stays in L1 between its passes. */
#define FV_STAGE_TILE 256

/* Passes 1 and 2 of envs [lo, hi), at most FV_STAGE_TILE of them: term and trunc (of env lo + j at j) for the
 * envs not set aside, whose indices go to aside[*num_aside ...]. Stepping copies rather than the slots in
 * place: the vector loops would read and write each field across 64-byte slots with shuffles, or not
 * vectorise at all where a slot's size is not a power of two (float32 CartPole's 48 bytes); the copies
 * cost a few scalar moves per env, and they leave the slots of the envs set aside as they were. */
FV_FN void fv_step_live(int lo, int hi, fv_slot* slots, const ACT_T* actions, OBS_T* obs, float* rewards,
                        float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps,
                        int* term, int* trunc, int* aside, int* num_aside) {
    const long long obs_len = NUM_AGENTS * OBS_SIZE;
    State env[FV_STAGE_TILE];
    fv_rng rng[STEP_USES_RNG ? FV_STAGE_TILE : 1]; /* an env set aside must keep its draws for fv_step_one */
    int length[FV_STAGE_TILE], needs_reset[FV_STAGE_TILE], set_aside[FV_STAGE_TILE];
    float episode_return[FV_STAGE_TILE * NUM_AGENTS];
    int pending_resets = autoreset_mode == FV_NEXT_STEP, count = *num_aside, any_aside = 0;
    for (int i = lo; i < hi; i++) {
        env[i - lo] = slots[i].env;
        if (STEP_USES_RNG) rng[i - lo] = slots[i].rng;
        length[i - lo] = slots[i].ep_length;
        needs_reset[i - lo] = slots[i].needs_reset;
        for (int a = 0; a < NUM_AGENTS; a++) episode_return[(i - lo) * NUM_AGENTS + a] = slots[i].ep_return[a];
        int away = (pending_resets & (needs_reset[i - lo] != 0)) | !SIMD_STEP_VALID(&env[i - lo]);
        set_aside[i - lo] = away;
        any_aside |= away;
    }
    /* the list of envs set aside apart, and only where there are any: most tiles have none */
    if (any_aside)
        for (int i = lo; i < hi; i++) {
            aside[count] = i;
            count += set_aside[i - lo];
        }
    /* Two loops rather than one: with AVX2 (no scatter) the compiler vectorises each, not both in one. */
#if SIMD_STEP_REDO
    int redo[FV_STAGE_TILE];
#endif
    #pragma omp simd
    for (int i = lo; i < hi; i++) { /* the env writes its statistics in place, zeroed below unless done */
        int result = env_step_simd(&env[i - lo], STEP_USES_RNG ? &rng[i - lo] : &slots[i].rng,
                                   actions + (long long)i * FV_ACT_LEN, obs + i * obs_len, rewards + i * NUM_AGENTS,
                                   stats + i * NUM_STATS);
        term[i - lo] = (SIMD_STEP_REDO ? result & ~FV_SIMD_REDO : result) != 0; /* any other env: nonzero ends it */
#if SIMD_STEP_REDO
        redo[i - lo] = (result & FV_SIMD_REDO) != 0;
#endif
    }
    #pragma omp simd
    for (int i = lo; i < hi; i++)
        fv_finish_live(i, &length[i - lo], &episode_return[(i - lo) * NUM_AGENTS], &needs_reset[i - lo], rewards,
                       term[i - lo], &trunc[i - lo], ep_return, ep_length, stats, autoreset_mode, max_episode_steps);
#if SIMD_STEP_REDO
    for (int i = lo; i < hi; i++) {
        if (redo[i - lo] & !set_aside[i - lo]) {
            set_aside[i - lo] = 1;
            aside[count++] = i;
            any_aside = 1;
        }
    }
#endif
    for (int i = lo; i < hi; i++) {
        if (any_aside && set_aside[i - lo]) {
            term[i - lo] = trunc[i - lo] = 0; /* pass 4 writes its outputs */
            continue;
        }
        slots[i].env = env[i - lo];
        if (STEP_USES_RNG) slots[i].rng = rng[i - lo];
        slots[i].ep_length = length[i - lo];
        slots[i].needs_reset = needs_reset[i - lo];
        for (int a = 0; a < NUM_AGENTS; a++) slots[i].ep_return[a] = episode_return[(i - lo) * NUM_AGENTS + a];
    }
    *num_aside = count;
}

/* Steps envs [lo, hi), at most FV_TILE of them, in the passes above; returns how many ended. */
FV_FN int fv_step_tile(int lo, int hi, fv_slot* slots, const ACT_T* actions, OBS_T* obs,
                        float* rewards, unsigned char* terminated, unsigned char* truncated,
                        OBS_T* final_obs, float* ep_return, int* ep_length, float* stats,
                        int autoreset_mode, int max_episode_steps) {
    const long long obs_len = NUM_AGENTS * OBS_SIZE;
    int count = hi - lo, num_aside = 0;
    int flags[3 * FV_TILE]; /* term, trunc, envs set aside */
    int* term = flags; /* of env lo + j at j */
    int* trunc = flags + count;
    int* aside = flags + 2 * count;
    for (int part = lo; part < hi; part += FV_STAGE_TILE)
        fv_step_live(part, hi - part < FV_STAGE_TILE ? hi : part + FV_STAGE_TILE, slots, actions, obs, rewards,
                     ep_return, ep_length, stats, autoreset_mode, max_episode_steps, term + (part - lo),
                     trunc + (part - lo), aside, &num_aside);
    #pragma omp simd
    for (int i = lo; i < hi; i++) {
        terminated[i] = (unsigned char)term[i - lo];
        truncated[i] = (unsigned char)trunc[i - lo];
    }
    if (autoreset_mode == FV_SAME_STEP) {
        for (int i = lo; i < hi; i++) {
            if (terminated[i] | truncated[i]) {
                memcpy(final_obs + i * obs_len, obs + i * obs_len, sizeof(OBS_T) * obs_len);
                fv_reset_slot(&slots[i], obs + i * obs_len);
            }
        }
    }
    for (int j = 0; j < num_aside; j++)
        fv_step_one(aside[j], slots, actions, obs, rewards, terminated, truncated, final_obs, ep_return,
                    ep_length, stats, autoreset_mode, max_episode_steps);
    int ended = 0;
    #pragma omp simd reduction(+ : ended)
    for (int i = lo; i < hi; i++) ended += terminated[i] | truncated[i];
    return ended;
}

/* Steps envs [lo, hi) in the passes above, FV_TILE envs at a time; returns how many ended. */
FV_FN int fv_step_range(int lo, int hi, fv_slot* slots, const ACT_T* actions, OBS_T* obs,
                         float* rewards, unsigned char* terminated, unsigned char* truncated,
                         OBS_T* final_obs, float* ep_return, int* ep_length, float* stats,
                         int autoreset_mode, int max_episode_steps) {
    int ended = 0;
    for (int tile = lo; tile < hi; tile += FV_TILE)
        ended += fv_step_tile(tile, hi - tile < FV_TILE ? hi : tile + FV_TILE, slots, actions, obs,
                              rewards, terminated, truncated, final_obs, ep_return, ep_length,
                              stats, autoreset_mode, max_episode_steps);
    return ended;
}

/* The arrays that the Gymnasium face returns from step() (agent 0's), for envs [lo, hi), written by
 * the thread that stepped them into one fresh block per step, so the host hands them out as they
 * are instead of copying and casting them one by one. Layout of `out` for n envs, S = NUM_STATS
 * (cpu.gym_out_layout reads the same): rewards float64 (n) | episode_return float32 (n) |
 * episode_length int32 (n) | stats float32 (S, n) | terminated, truncated, done, done (n bytes
 * each; done twice for two distinct info masks). out_obs (or NULL): a copy of obs. */
FV_FN void fv_copy_out(int lo, int hi, int n, const OBS_T* obs, const float* rewards,
                       const unsigned char* terminated, const unsigned char* truncated,
                       const float* ep_return, const int* ep_length, const float* stats,
                       unsigned char* out, OBS_T* out_obs) {
    double* out_rewards = (double*)out;
    float* out_return = (float*)(out + 8LL * n);
    int* out_length = (int*)(out + 12LL * n);
    float* out_stats = (float*)(out + 16LL * n);
    unsigned char* out_flags = out + (16LL + 4LL * NUM_STATS) * n;
    #pragma omp simd
    for (int i = lo; i < hi; i++) {
        out_rewards[i] = (double)rewards[i * NUM_AGENTS];
        out_return[i] = ep_return[i * NUM_AGENTS];
        out_length[i] = ep_length[i];
        out_flags[i] = terminated[i];
        out_flags[n + i] = truncated[i];
        out_flags[2LL * n + i] = out_flags[3LL * n + i] = terminated[i] | truncated[i];
    }
    for (int k = 0; k < NUM_STATS; k++)
        for (int i = lo; i < hi; i++) out_stats[(long long)k * n + i] = stats[i * NUM_STATS + k];
    if (out_obs)
        memcpy(out_obs + (long long)lo * NUM_AGENTS * OBS_SIZE, obs + (long long)lo * NUM_AGENTS * OBS_SIZE,
               sizeof(OBS_T) * (size_t)(hi - lo) * NUM_AGENTS * OBS_SIZE);
}

/* Whether an action value of envs [lo, hi) may not reach env_step (fv_action_bad): one branch-free
 * pass (it vectorises). */
FV_FN int fv_any_bad_action(int lo, int hi, const ACT_T* actions) {
    int bad = 0;
    for (long long k = (long long)lo * FV_ACT_LEN; k < (long long)hi * FV_ACT_LEN; k++)
        bad |= fv_action_bad(actions[k], (int)(k % ACTION_DIMS));
    return bad;
}

typedef struct { /* fv_step's arguments */
    fv_slot* slots; const ACT_T* actions; OBS_T* obs; float* rewards; unsigned char *terminated, *truncated;
    OBS_T* final_obs; float* ep_return; int* ep_length; float* stats; int autoreset_mode, max_episode_steps, n;
    unsigned char* out; OBS_T* out_obs;
    unsigned char* masks; float* world; /* fv_observe_one's outputs (fv_bind_observe), NULL where not kept */
} fv_step_job;

/* Steps envs [lo, hi) (and fills their part of out / out_obs); returns how many ended. */
static int fv_step_chunk(const void* p, int lo, int hi) {
    const fv_step_job* j = (const fv_step_job*)p;
    int ended = 0;
#if SIMD_STEP && !defined(FV_CPU_SCALAR_STEP)
    ended = fv_step_range(lo, hi, j->slots, j->actions, j->obs, j->rewards, j->terminated, j->truncated,
                          j->final_obs, j->ep_return, j->ep_length, j->stats, j->autoreset_mode,
                          j->max_episode_steps);
#else /* one env at a time (FV_CPU_SCALAR_STEP: the reference that the passes are tested against) */
    for (int i = lo; i < hi; i++) {
        fv_step_one(i, j->slots, j->actions, j->obs, j->rewards, j->terminated, j->truncated, j->final_obs,
                    j->ep_return, j->ep_length, j->stats, j->autoreset_mode, j->max_episode_steps);
        ended += j->terminated[i] | j->truncated[i];
    }
#endif
#if FV_HAS_EXTRAS /* the masks and world state of the state each env is left in, while it is in cache */
    for (int i = lo; i < hi; i++) fv_observe_one(i, &j->slots[i].env, j->masks, j->world);
#endif
    if (j->out)
        fv_copy_out(lo, hi, j->n, j->obs, j->rewards, j->terminated, j->truncated, j->ep_return,
                    j->ep_length, j->stats, j->out, j->out_obs);
    return ended;
}

/* fv_step's work for its job: the action check, then the pool. */
static int fv_run_step(const fv_step_job* job) {
    int n = job->n;
    if (fv_any_bad_action(0, n, job->actions)) /* the first bad action, for the error message */
        for (int k = 0; k < n * FV_ACT_LEN; k++)
            if (fv_action_bad(job->actions[k], k % ACTION_DIMS)) return -1 - k;
    return fv_pool_run(fv_step_chunk, job, n);
}

/* Returns the number of envs that ended this step, or -1 - k when actions[k] (flat index into (N,
 * NUM_AGENTS, ACTION_DIMS)) may not reach env_step (fv_action_bad), in which case nothing was
 * stepped: the caller checks every action first (one vectorised pass, about 1% of a CartPole step),
 * then the pool steps the chunks.
 * out, out_obs: NULL, or fv_copy_out's block and obs copy to fill. */
FV_EXPORT int fv_step(int n, fv_slot* slots, const ACT_T* actions, OBS_T* obs,
                      float* rewards, unsigned char* terminated, unsigned char* truncated,
                      OBS_T* final_obs, float* ep_return, int* ep_length, float* stats,
                      int autoreset_mode, int max_episode_steps, unsigned char* out, OBS_T* out_obs) {
    fv_step_job job = {slots, actions, obs, rewards, terminated, truncated, final_obs, ep_return, ep_length,
                       stats, autoreset_mode, max_episode_steps, n, out, out_obs, NULL, NULL};
    return fv_run_step(&job);
}

/* fv_step with all but the actions and the out blocks bound once (fv_bind_step, into a buffer of
 * fv_step_job_size() bytes): the host's foreign-function call converts four arguments each step rather
 * than fifteen, which at 4,096 CartPoles is a few percent of the step. */
FV_EXPORT int fv_step_job_size(void) { return (int)sizeof(fv_step_job); }

FV_EXPORT void fv_bind_step(fv_step_job* job, int n, fv_slot* slots, OBS_T* obs, float* rewards,
                            unsigned char* terminated, unsigned char* truncated, OBS_T* final_obs,
                            float* ep_return, int* ep_length, float* stats, int autoreset_mode,
                            int max_episode_steps) {
    fv_step_job bound = {slots, NULL, obs, rewards, terminated, truncated, final_obs, ep_return, ep_length,
                         stats, autoreset_mode, max_episode_steps, n, NULL, NULL, NULL, NULL};
    *job = bound;
}

/* Binds where the bound step writes its action masks and world states (NULL: not written). */
FV_EXPORT void fv_bind_observe(fv_step_job* job, unsigned char* masks, float* world) {
    job->masks = masks, job->world = world;
}

FV_EXPORT int fv_step_bound(const fv_step_job* bound, const ACT_T* actions, unsigned char* out, OBS_T* out_obs) {
    fv_step_job job = *bound;
    job.actions = actions, job.out = out, job.out_obs = out_obs;
    return fv_run_step(&job);
}

FV_EXPORT void fv_render(const fv_slot* slots, int i, unsigned char* rgb) {
    env_render(&slots[i].env, rgb);
}

/* Threads that step a batch, the caller included (the process's pool; cpu.py sets it at load:
 * FASTVEC_NUM_THREADS, else the CPUs this process may run on); returns the previous count. */
FV_EXPORT int fv_set_num_threads(int n) {
    int previous = __atomic_load_n(&fv_pool.threads, __ATOMIC_RELAXED);
    if (n > 0) __atomic_store_n(&fv_pool.threads, n < FV_MAX_THREADS ? n : FV_MAX_THREADS, __ATOMIC_RELAXED);
    return previous;
}

/* State access (fastvec.h's optional env_get_state / env_set_state): the envs at indices[0 .. count). */
FV_EXPORT void fv_get_state(const fv_slot* slots, int count, const long long* indices, double* out) {
#if FV_HAS_STATE
    for (int j = 0; j < count; j++) env_get_state(&slots[indices[j]].env, out + (long long)j * STATE_SIZE);
#else
    (void)slots, (void)count, (void)indices, (void)out;
#endif
}

/* Sets those envs' states and writes their observations into obs (N, NUM_AGENTS, OBS_SIZE); their
 * episode bookkeeping (return, length) stays, as Gymnasium's TimeLimit keeps counting. */
FV_EXPORT void fv_set_state(fv_slot* slots, int count, const long long* indices, const double* in, OBS_T* obs) {
#if FV_HAS_STATE
    for (int j = 0; j < count; j++)
        env_set_state(&slots[indices[j]].env, in + (long long)j * STATE_SIZE,
                      obs + indices[j] * NUM_AGENTS * OBS_SIZE);
#else
    (void)slots, (void)count, (void)indices, (void)in, (void)obs;
#endif
}

/* The spaces (spaces.h): returns the observation's number of axes. */
FV_EXPORT int fv_spaces(int* obs_shape, float* obs_low, float* obs_high, long long* nvec, float* action_low,
                        float* action_high) {
    fv_fill_action_space(nvec, action_low, action_high);
    return fv_fill_obs_space(obs_shape, obs_low, obs_high);
}

FV_EXPORT int fv_obs_size(void) { return OBS_SIZE; }
/* Agent a's own observation and action sizes (fastvec.h's AGENT_SPACES); without it every agent's are the batch's. */
FV_EXPORT int fv_agent_obs_size(int a) {
#ifdef AGENT_SPACES
    return env_agent_obs_size(a);
#else
    return (void)a, OBS_SIZE;
#endif
}
FV_EXPORT int fv_agent_action_size(int a) {
#ifdef AGENT_SPACES
    return env_agent_action_size(a);
#else
    return (void)a, ACTION_SPACE == FV_DISCRETE ? NUM_ACTIONS : ACTION_DIMS;
#endif
}
FV_EXPORT int fv_num_actions(void) { return NUM_ACTIONS; }
FV_EXPORT int fv_action_kind(void) { return ACTION_SPACE; }
FV_EXPORT int fv_action_dims(void) { return ACTION_DIMS; }
FV_EXPORT int fv_state_values(void) { return FV_HAS_STATE ? STATE_SIZE : -1; }
FV_EXPORT int fv_action_mask(void) { return FV_HAS_ACTION_MASK; }
FV_EXPORT int fv_world_state_size(void) { return FV_HAS_WORLD_STATE ? WORLD_STATE_SIZE : -1; }
FV_EXPORT int fv_num_agents(void) { return NUM_AGENTS; }
FV_EXPORT int fv_num_stats(void) { return NUM_STATS; }
FV_EXPORT const char* fv_stat_names(void) { return STAT_NAMES; }
FV_EXPORT int fv_slot_size(void) { return (int)sizeof(fv_slot); }
FV_EXPORT int fv_state_size(void) { return (int)sizeof(State); } /* the State alone, as batch_gpu.h's */
FV_EXPORT int fv_obs_bytes(void) { return (int)sizeof(OBS_T); }
FV_EXPORT int fv_render_width(void) { return RENDER_W; }
FV_EXPORT int fv_render_height(void) { return RENDER_H; }
#endif

#endif /* FASTVEC_BATCH_H */
