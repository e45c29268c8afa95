/* batch_gpu.h: the GPU env module that fastvec/native/cuda.py builds and launches, compiled after an
 * env file: the step kernels staged_wide, wide and wide_occ (cuda.step_kernel_name picks one), the
 * resets, the spaces and state access for the host, and random_gpu.h's random policy. The kernels reuse
 * fv_reset_slot / fv_step_one unchanged, so the GPU follows exactly the CPU's semantics; what they add
 * is what only a device needs:
 *   - the slots kept in GPU memory split by how often they are touched (slots_gpu.h), so that a step
 *     moves fewer bytes; each kernel assembles env i's fv_slot privately (registers or shared
 *     memory) and hands fv_step_one base pointers already offset to env i (index 0),
 *   - actions read in place from any device array of the action space's kind (integers of any width,
 *     or float32/float64 for Box; any strides), validated on the device (the first bad one is
 *     recorded for the host; the env steps with action 0),
 *   - a `done` flag per env (terminated | truncated) for masks without a host round trip,
 *   - state access (get/set of chosen envs' states) and the spaces for the host.
 */
#ifndef FASTVEC_BATCH_GPU_H
#define FASTVEC_BATCH_GPU_H

#include "batch.h"
#include "slots_gpu.h"
#include "random_gpu.h" /* its kernels are part of the module */

#define FV_NO_ERROR 0xFFFFFFFFFFFFFFFFULL

/* An env declares `#define STEP_USES_RNG 0` when its env_step never draws random numbers (only
 * env_reset does; CartPole): the GPU step then reads an env's RNG only when it may reset. */
#ifndef STEP_USES_RNG
#define STEP_USES_RNG 1
#endif

/* Whether every step may draw random numbers (env_step draws, or SAME_STEP resets in the step):
 * then the RNG is loaded with the rest, not after the book says that the env resets. */
static __device__ __forceinline__ int fv_steps_draw(int autoreset_mode) {
    return STEP_USES_RNG || autoreset_mode == FV_SAME_STEP;
}

/* Whether this step of slot s (book unpacked) may draw: fv_steps_draw, or a NEXT_STEP reset. */
static __device__ __forceinline__ int fv_step_may_draw(const fv_slot* s, int autoreset_mode) {
    return fv_steps_draw(autoreset_mode) || (autoreset_mode == FV_NEXT_STEP && s->needs_reset);
}

/* Value d of agent a of env i from an array with byte strides: integers of `bytes` bytes (signed or
 * not) for the discrete kinds, where unsigned 64-bit values above 2^63 read as negative, so they fail
 * the range check like any other bad value; float32 (bytes 4) or float64 (8) for Box. */
static __device__ __forceinline__ ACT_T fv_load_action(const char* base, long long env_stride, long long agent_stride,
                                                       long long dim_stride, int bytes, int is_signed, int i, int a,
                                                       int d) {
    const char* p = base + (long long)i * env_stride + (long long)a * agent_stride + (long long)d * dim_stride;
#if ACTION_SPACE == FV_BOX
    (void)is_signed;
    return bytes == 8 ? (float)*(const double*)p : *(const float*)p;
#else
    switch (bytes) {
    case 1: return is_signed ? (long long)*(const signed char*)p : (long long)*(const unsigned char*)p;
    case 2: return is_signed ? (long long)*(const short*)p : (long long)*(const unsigned short*)p;
    case 4: return is_signed ? (long long)*(const int*)p : (long long)*(const unsigned int*)p;
    default: return *(const long long*)p;
    }
#endif
}

/* Every action value of env i into act (NUM_AGENTS, ACTION_DIMS). */
static __device__ __forceinline__ void fv_load_actions(ACT_T* act, const char* base, long long env_stride,
                                                       long long agent_stride, long long dim_stride, int bytes,
                                                       int is_signed, int i) {
    for (int a = 0; a < NUM_AGENTS; a++)
        for (int d = 0; d < ACTION_DIMS; d++)
            act[a * ACTION_DIMS + d] =
                fv_load_action(base, env_stride, agent_stride, dim_stride, bytes, is_signed, i, a, d);
}

/* ---------------------------------------------------------------- reset and step */
/* Reset env i if mask is NULL or mask[i]; reseed it first if seeds is not NULL (fv_reset_one's
 * semantics on the split slots). Its OUTPUTS_SET bit stays: the outputs buffers keep their values. */
extern "C" __global__ void fv_reset_split_kernel(int n, char* slots, const fv_u64* seeds, const unsigned char* mask,
                                                 OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || (mask && !mask[i])) return;
    fv_split p = fv_split_of(slots, n);
    fv_slot s;
    s.env = p.states[i];
    unsigned int outputs_set = fv_unpack_book(p.books[i], &s);
    s.rng = p.rngs[i];
    if (seeds) fv_rng_seed(&s.rng, seeds[i]);
    fv_reset_slot(&s, obs + (long long)i * NUM_AGENTS * OBS_SIZE);
    p.states[i] = s.env;
    fv_store_book(&p.books[i], &s, outputs_set);
    p.rngs[i] = s.rng;
}

/* Env i's flags and episode outputs, stored only where they change: where this step ended an episode, and
 * where the previous one did (outputs_set), whose outputs this step's zeros replace. */
static __device__ __forceinline__ void fv_store_outputs(
    int i, int ended, unsigned int outputs_set, unsigned char term, unsigned char trunc, const float* ret, int length,
    const float* st, unsigned char* terminated, unsigned char* truncated, unsigned char* done, float* ep_return,
    int* ep_length, float* stats) {
    if (!(ended || outputs_set)) return;
    terminated[i] = term;
    truncated[i] = trunc;
    done[i] = (unsigned char)ended;
    for (int a = 0; a < NUM_AGENTS; a++) ep_return[i * NUM_AGENTS + a] = ret[a];
    ep_length[i] = length;
    for (int k = 0; k < NUM_STATS; k++) stats[i * NUM_STATS + k] = st[k];
}

/* Step env i, whose private slot s holds its state, its book (outputs_set from it) and, where
 * may_draw, its RNG (with counter `counter` as loaded): stores the RNG only if it drew, the flags
 * and episode outputs only where they change, and the book. The state and obs are the caller's
 * to store. Callers load everything a step needs before stepping, so that the loads overlap. */
static __device__ __forceinline__ void fv_step_loaded(
    int i, fv_split p, fv_slot* s, unsigned int outputs_set, int may_draw, fv_u64 counter, const ACT_T* act,
    OBS_T* obs_i, float* rewards, unsigned char* terminated, unsigned char* truncated, unsigned char* done,
    OBS_T* final_obs, float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    float ret[NUM_AGENTS], st[NUM_STATS > 0 ? NUM_STATS : 1];
    int length;
    unsigned char term, trunc;
    fv_step_one(0, s, act, obs_i, rewards + i * NUM_AGENTS, &term, &trunc,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, ret, &length, st, autoreset_mode, max_episode_steps);
    int ended = term | trunc;
    fv_store_outputs(i, ended, outputs_set, term, trunc, ret, length, st, terminated, truncated, done, ep_return, ep_length,
                     stats);
    if (may_draw && s->rng.counter != counter) p.rngs[i] = s->rng;
    fv_store_book(&p.books[i], s, ended);
}

/* Env i's actions (NUM_AGENTS, ACTION_DIMS), checked (spaces.h's fv_action_bad): *error keeps the
 * smallest (flat index into (N, NUM_AGENTS, ACTION_DIMS) << 32 | low 32 bits of the value, a Box
 * action's float bits) of the bad values, and a bad one steps as 0. */
static __device__ __forceinline__ void fv_check_actions(ACT_T* act, int i, fv_u64* error) {
    for (int k = 0; k < FV_ACT_LEN; k++) {
        if (fv_action_bad(act[k], k % ACTION_DIMS)) {
            atomicMin(error, (((fv_u64)i * FV_ACT_LEN + (fv_u64)k) << 32) | (fv_u64)fv_action_bits(act[k]));
            act[k] = 0;
        }
    }
}

/* The arguments of every step kernel: n envs, their slots, actions (byte strides per env, agent and
 * dimension; fv_load_action's types), the nine output buffers, the autoreset mode, the time limit
 * and the error word. */
#define FV_STEP_KERNEL_ARGS                                                                                   \
    int n, char *slots, const char *actions, long long env_stride, long long agent_stride, long long dim_stride, \
        int action_bytes, int action_signed, OBS_T *obs, float *rewards, unsigned char *terminated,             \
        unsigned char *truncated, unsigned char *done, OBS_T *final_obs, float *ep_return, int *ep_length,       \
        float *stats, int autoreset_mode, int max_episode_steps, fv_u64 *error
#define FV_STEP_KERNEL_CALL                                                                                     \
    n, slots, actions, env_stride, agent_stride, dim_stride, action_bytes, action_signed, obs, rewards, terminated, \
        truncated, done, final_obs, ep_return, ep_length, stats, autoreset_mode, max_episode_steps, error

/* ---------------------------------------------------------------- staged kernels
 * The same steps, with each block's slots and observations in shared memory (batch.h's staging:
 * FV_STAGE_THREADS envs a block, 0 where they do not fit and the host uses the wide kernels below):
 * a large obs then leaves in contiguous runs rather than strided per thread, and envs that index
 * their state dynamically (Breakout's bricks) work on shared rather than local memory. */

/* The staged step: one env per thread, the block's obs leaving shared memory in 16-byte words
 * where they can (fv_block_copy_wide). */
static __device__ __forceinline__ void fv_step_staged(
    FV_STEP_KERNEL_ARGS) {
    __shared__ unsigned long long sh_slots[FV_STAGE_SLOT_WORDS];
    __shared__ __align__(16) unsigned long long sh_obs[FV_STAGE_OBS_WORDS];
    fv_slot* sh = (fv_slot*)sh_slots;
    int base = blockIdx.x * blockDim.x, tid = threadIdx.x;
    int count = min((int)blockDim.x, n - base);
    int i = base + tid;
    fv_split p = fv_split_of(slots, n);
    ACT_T act[FV_ACT_LEN];
    fv_book book;
    fv_rng rng;
    fv_state_regs r;
    unsigned int outputs_set = 0;
    int may_draw = 0;
    if (tid < count) { /* every load that does not depend on another, issued together */
        fv_load_actions(act, actions, env_stride, agent_stride, dim_stride, action_bytes, action_signed, i);
        book = p.books[i];
        if (fv_steps_draw(autoreset_mode)) rng = p.rngs[i];
    }
    fv_issue_state_loads(&r, p.states + base, count);
    if (tid < count) { /* the RNG of an env that resets (the book says which) */
        outputs_set = fv_unpack_book(book, &sh[tid]);
        may_draw = fv_step_may_draw(&sh[tid], autoreset_mode);
        if (may_draw && !fv_steps_draw(autoreset_mode)) rng = p.rngs[i];
        if (may_draw) sh[tid].rng = rng;
    }
    fv_finish_state_loads(sh, &r, p.states + base, count);
    __syncthreads();
    if (tid < count) {
        fv_check_actions(act, i, error);
        fv_step_loaded(i, p, &sh[tid], outputs_set, may_draw, may_draw ? rng.counter : 0, act,
                       (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE, rewards, terminated, truncated, done, final_obs,
                       ep_return, ep_length, stats, autoreset_mode, max_episode_steps);
    }
    __syncthreads();
    fv_store_states(p.states + base, sh, count);
    fv_block_copy_wide(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
}

extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_step_staged_wide_kernel(FV_STEP_KERNEL_ARGS) {
    if constexpr (FV_STAGE_THREADS > 0) fv_step_staged(FV_STEP_KERNEL_CALL);
}

/* ---------------------------------------------------------------- wide kernels
 * One env per thread, for envs whose slot and obs are small or do not fit the staging. A warp's envs
 * lie sizeof(State) apart, so moving a thread's State, book, RNG and obs in words of their members'
 * types (4 or 8 bytes) makes each load and store touch many sectors for a few bytes of each: the
 * float64 CartPole's 32-byte State takes 4 loads and 4 stores of 32 sectors each. These kernels move
 * each in the widest words its size and alignment allow (16 bytes for CartPole's State and obs, 8
 * for its book), assembled in registers, with the obs and rewards written once at the end: about a
 * third of the sector requests per warp. Every array starts on a 256-byte boundary and its elements
 * are sizeof(T) apart, a multiple of the word, so each word is aligned.
 *
 * Everything a step reads that depends on nothing else is loaded at once, before the RNG, whose load
 * waits for the book only where the env may draw (so a step that neither resets nor draws skips it).
 * wide_occ bounds the registers so that more blocks, so more loads, are in flight per SM. */
#define FV_WORD_BYTES(b) ((b) % 16 == 0 ? 16 : (b) % 8 == 0 ? 8 : (b) % 4 == 0 ? 4 : 1)

template <typename T> static __device__ __forceinline__ T fv_load_wide(const T* p) {
    typedef typename fv_word_of<FV_WORD_BYTES(sizeof(T))>::type W;
    W w[sizeof(T) / sizeof(W)];
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / sizeof(W)); k++) w[k] = ((const W*)p)[k];
    T v;
    memcpy(&v, w, sizeof(T));
    return v;
}

template <typename T> static __device__ __forceinline__ void fv_store_wide(T* p, const T& v) {
    typedef typename fv_word_of<FV_WORD_BYTES(sizeof(T))>::type W;
    W w[sizeof(T) / sizeof(W)];
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < (int)(sizeof(T) / sizeof(W)); k++) ((W*)p)[k] = w[k];
}

/* One env's observation as a value, so that a small one is built in registers and stored wide. */
typedef struct {
    OBS_T v[NUM_AGENTS * OBS_SIZE];
} fv_obs_value;
#define FV_OBS_IN_REGISTERS (FV_OBS_BYTES <= 64) /* larger ones are written in place */

/* What env i's step reads that depends on nothing else (its RNG where every step may draw). */
typedef struct {
    ACT_T act[FV_ACT_LEN];
    fv_book book;
    State env;
    fv_rng rng;
} fv_env_loads;

/* Whether the RNG is loaded with the rest (every step may draw), not after the book. The same as
 * fv_steps_draw, kept apart on purpose: nvcc emits other code for the wide kernels when they call
 * fv_steps_draw directly, and this form is the one that the tests and benchmarks cover. */
static __device__ __forceinline__ int fv_rng_with_rest(int autoreset_mode) {
    return fv_steps_draw(autoreset_mode);
}

static __device__ __forceinline__ void fv_issue_loads(fv_env_loads* l, fv_split p, int i, const char* actions,
                                                      long long env_stride, long long agent_stride,
                                                      long long dim_stride, int action_bytes, int action_signed,
                                                      int autoreset_mode) {
    fv_load_actions(l->act, actions, env_stride, agent_stride, dim_stride, action_bytes, action_signed, i);
    l->book = fv_load_wide(&p.books[i]);
    l->env = fv_load_wide(&p.states[i]);
    if (fv_rng_with_rest(autoreset_mode)) l->rng = fv_load_wide(&p.rngs[i]);
}

/* fv_step_loaded's step of env i from its loads, with every store wide: the RNG only if it drew,
 * the flags and episode outputs only where they change, then book, state, rewards and obs. */
static __device__ __forceinline__ void fv_step_wide_loaded(
    const fv_env_loads* l, int i, fv_split p, OBS_T* obs, float* rewards, unsigned char* terminated,
    unsigned char* truncated, unsigned char* done, OBS_T* final_obs, float* ep_return, int* ep_length, float* stats,
    int autoreset_mode, int max_episode_steps, fv_u64* error) {
    fv_slot s;
    s.env = l->env;
    unsigned int outputs_set = fv_unpack_book(l->book, &s);
    int may_draw = fv_step_may_draw(&s, autoreset_mode);
    if (fv_rng_with_rest(autoreset_mode))
        s.rng = l->rng;
    else if (may_draw)
        s.rng = fv_load_wide(&p.rngs[i]);
    fv_u64 counter = may_draw ? s.rng.counter : 0;
    ACT_T act[FV_ACT_LEN];
    for (int k = 0; k < FV_ACT_LEN; k++) act[k] = l->act[k];
    fv_check_actions(act, i, error);
    fv_obs_value o;
    OBS_T* obs_i = FV_OBS_IN_REGISTERS ? o.v : obs + (long long)i * NUM_AGENTS * OBS_SIZE;
    float reward[NUM_AGENTS], ret[NUM_AGENTS], st[NUM_STATS > 0 ? NUM_STATS : 1];
    int length;
    unsigned char term, trunc;
    fv_step_one(0, &s, act, obs_i, reward, &term, &trunc, final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, ret,
                &length, st, autoreset_mode, max_episode_steps);
    int ended = term | trunc;
    fv_store_outputs(i, ended, outputs_set, term, trunc, ret, length, st, terminated, truncated, done, ep_return, ep_length,
                     stats);
    if (may_draw && s.rng.counter != counter) fv_store_wide(&p.rngs[i], s.rng);
    fv_book b;
    for (int a = 0; a < NUM_AGENTS; a++) b.ep_return[a] = s.ep_return[a];
    b.ep_flags = ((unsigned int)s.ep_length & FV_LENGTH_MASK) | (s.needs_reset ? FV_NEEDS_RESET_BIT : 0u) |
                 (ended ? FV_OUTPUTS_SET_BIT : 0u);
    fv_store_wide(&p.books[i], b);
    fv_store_wide(&p.states[i], s.env);
    for (int a = 0; a < NUM_AGENTS; a++) rewards[i * NUM_AGENTS + a] = reward[a];
    if (FV_OBS_IN_REGISTERS) fv_store_wide((fv_obs_value*)(obs + (long long)i * NUM_AGENTS * OBS_SIZE), o);
}

/* One env per thread, wide: everything that depends on nothing else loaded at once, then the RNG
 * where the book says that the env may draw. */
static __device__ __forceinline__ void fv_step_wide(FV_STEP_KERNEL_ARGS) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fv_split p = fv_split_of(slots, n);
    fv_env_loads l;
    fv_issue_loads(&l, p, i, actions, env_stride, agent_stride, dim_stride, action_bytes, action_signed,
                   autoreset_mode);
    fv_step_wide_loaded(&l, i, p, obs, rewards, terminated, truncated, done, final_obs, ep_return, ep_length, stats,
                        autoreset_mode, max_episode_steps, error);
}

extern "C" __global__ void fv_step_wide_kernel(FV_STEP_KERNEL_ARGS) { fv_step_wide(FV_STEP_KERNEL_CALL); }
/* The same with at least 5 blocks of 256 threads per SM (at most 48 registers a thread): more
 * threads, so more loads, in flight; cuda.py takes it only where that costs no spills. */
extern "C" __global__ void __launch_bounds__(256, 5) fv_step_wide_occ_kernel(FV_STEP_KERNEL_ARGS) {
    fv_step_wide(FV_STEP_KERNEL_CALL);
}

/* The action masks and world states (batch.h's fv_observe_one) of the n envs, or of those in `which` where it is
 * not NULL: launched after every reset, step, rollout and set state, for envs that define either hook (cuda.py). */
extern "C" __global__ void fv_observe_kernel(int n, char* slots, const unsigned char* which, unsigned char* masks,
                                             float* world) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || (which && !which[i])) return;
#if FV_HAS_EXTRAS
    fv_observe_one(i, &fv_split_of(slots, n).states[i], masks, world); /* read in place: a large State stays put */
#else
    (void)slots, (void)masks, (void)world;
#endif
}

extern "C" __device__ const int fv_stage_threads = FV_STAGE_THREADS;
extern "C" __device__ const int fv_state_size = (int)sizeof(State);
extern "C" __device__ const int fv_book_size = (int)sizeof(fv_book);

/* The env's statistic names, for the host (module.get_global). */
extern "C" __device__ const char fv_stat_names[] = STAT_NAMES;

/* ---------------------------------------------------------------- spaces and state access */
/* The spaces (spaces.h) into device buffers, by one thread: obs_shape (FV_MAX_OBS_DIMS), obs bounds
 * (OBS_SIZE each), nvec and action bounds (ACTION_DIMS each), and ndim (the obs's number of axes). */
extern "C" __global__ void fv_spaces_kernel(int* obs_shape, float* obs_low, float* obs_high, long long* nvec,
                                            float* action_low, float* action_high, int* ndim) {
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    fv_fill_action_space(nvec, action_low, action_high);
    *ndim = fv_fill_obs_space(obs_shape, obs_low, obs_high);
}

/* State access (fastvec.h's optional env_get_state / env_set_state) of the envs at indices[0 .. count)
 * of the n envs' split slots; set writes their observations into obs and leaves their books. */
extern "C" __global__ void fv_get_state_kernel(int n, char* slots, int count, const long long* indices, double* out) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
#if FV_HAS_STATE
    State s = fv_split_of(slots, n).states[indices[j]];
    env_get_state(&s, out + (long long)j * STATE_SIZE);
#endif
}

extern "C" __global__ void fv_set_state_kernel(int n, char* slots, int count, const long long* indices,
                                               const double* in, OBS_T* obs) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= count) return;
#if FV_HAS_STATE
    State* s = &fv_split_of(slots, n).states[indices[j]];
    env_set_state(s, in + (long long)j * STATE_SIZE, obs + indices[j] * NUM_AGENTS * OBS_SIZE);
#endif
}

#endif /* FASTVEC_BATCH_GPU_H */
