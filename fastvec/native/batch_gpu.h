/* batch_gpu.h: the GPU-only kernels that fastvec/native/cuda.py launches, compiled after an env
 * file and batch.h (the step kernels staged_wide, wide and wide_occ; cuda.step_kernel_name picks
 * one). They reuse fv_reset_slot / fv_step_one unchanged, so the GPU follows exactly the CPU's
 * semantics; what they add is what only a device needs:
 *   - the slots kept in GPU memory split by how often they are touched (below), so that a step
 *     moves fewer bytes; each kernel assembles env i's fv_slot privately (registers or shared
 *     memory) and hands fv_step_one base pointers already offset to env i (index 0),
 *   - actions read in place from any integer device array (any width, any strides), validated on
 *     the device (the first bad one is recorded for the host; the env steps with action 0),
 *   - a `done` flag per env (terminated | truncated) for masks without a host round trip,
 *   - a random-action kernel and a fused multi-step random rollout that keeps each env's slot in
 *     registers for all steps (one launch, no per-step global traffic for the state).
 */
#ifndef FASTVEC_BATCH_GPU_H
#define FASTVEC_BATCH_GPU_H

#define FV_NO_ERROR 0xFFFFFFFFFFFFFFFFULL

/* An env declares `#define STEP_USES_RNG 0` when its env_step never draws random numbers (only
 * env_reset does; CartPole): the GPU step then reads an env's RNG only when it may reset. */
#ifndef STEP_USES_RNG
#define STEP_USES_RNG 1
#endif

/* ---------------------------------------------------------------- the slots in GPU memory
 * The CPU keeps one fv_slot per env (batch.h). The GPU keeps the same contents in three arrays,
 * so that a step touches only what it needs:
 *   states: State per env, read and written every step,
 *   books:  fv_book per env (episode return, length and flags), read and written every step,
 *   rngs:   fv_rng per env, read only where an env may reset (or env_step draws), written only
 *           where it drew.
 * And a step stores terminated / truncated / done / episode outputs only where they change: they
 * are all 0 on a step that does not end an episode, so an env whose last stored outputs were those
 * zeros (its book's OUTPUTS_SET bit clear) skips them until an episode ends.
 *
 * So a CartPole step with int64 actions that neither ends nor resets an episode moves the action
 * (8 bytes), its state twice (32 + 32), its book twice (8 + 8), obs (16) and reward (4): 108 bytes
 * (76 with float32=1), where one whole fv_slot read and written with every flag and episode output
 * would be 167. An episode end adds the flags and episode outputs (11 bytes) on that step and their
 * zeros on the next, and the reset reads and writes the RNG (32 bytes). */
typedef struct {
    float ep_return[NUM_AGENTS]; /* fv_slot's */
    unsigned int ep_flags;       /* fv_slot's ep_length (bits 0-29) | needs_reset << 30 | OUTPUTS_SET << 31 */
} fv_book;

/* An episode longer than 2^30 - 1 steps (possible only without a time limit) wraps its length at
 * 2^30 here rather than at 2^31 as an int on the CPU. */
#define FV_LENGTH_MASK 0x3FFFFFFFu
#define FV_NEEDS_RESET_BIT 0x40000000u
#define FV_OUTPUTS_SET_BIT 0x80000000u /* the env's last stored step outputs were not all zero */

/* The three arrays of n envs in one allocation, each starting on a 256-byte boundary;
 * cuda.py's CudaBatch sizes the allocation the same way (fv_state_size, fv_book_size). */
#define FV_ALIGN256(b) (((b) + 255) / 256 * 256)
typedef struct {
    State* states;
    fv_book* books;
    fv_rng* rngs;
} fv_split;

static __device__ __forceinline__ fv_split fv_split_of(char* base, int n) {
    fv_split p;
    p.states = (State*)base;
    p.books = (fv_book*)(base + FV_ALIGN256((long long)n * (long long)sizeof(State)));
    p.rngs = (fv_rng*)((char*)p.books + FV_ALIGN256((long long)n * (long long)sizeof(fv_book)));
    return p;
}

/* Book b (a copy in registers) into slot s; returns whether the env's last stored outputs were nonzero. */
static __device__ __forceinline__ unsigned int fv_unpack_book(fv_book b, fv_slot* s) {
    for (int a = 0; a < NUM_AGENTS; a++) s->ep_return[a] = b.ep_return[a];
    s->ep_length = (int)(b.ep_flags & FV_LENGTH_MASK);
    s->needs_reset = (b.ep_flags & FV_NEEDS_RESET_BIT) != 0;
    return b.ep_flags & FV_OUTPUTS_SET_BIT;
}

static __device__ __forceinline__ void fv_store_book(fv_book* b, const fv_slot* s, int outputs_set) {
    for (int a = 0; a < NUM_AGENTS; a++) b->ep_return[a] = s->ep_return[a];
    b->ep_flags = ((unsigned int)s->ep_length & FV_LENGTH_MASK) | (s->needs_reset ? FV_NEEDS_RESET_BIT : 0u) |
                  (outputs_set ? FV_OUTPUTS_SET_BIT : 0u);
}

/* Whether every step may draw random numbers (env_step draws, or SAME_STEP resets in the step):
 * then the RNG is loaded with the rest, not after the book says that the env resets. */
static __device__ __forceinline__ int fv_steps_draw(int autoreset_mode) {
    return STEP_USES_RNG || autoreset_mode == FV_SAME_STEP;
}

/* Whether this step of slot s (book unpacked) may draw: fv_steps_draw, or a NEXT_STEP reset. */
static __device__ __forceinline__ int fv_step_may_draw(const fv_slot* s, int autoreset_mode) {
    return fv_steps_draw(autoreset_mode) || (autoreset_mode == FV_NEXT_STEP && s->needs_reset);
}

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

/* ---------------------------------------------------------------- the random policy
 * Action of agent a at policy step t of env i: flat index k = t * NUM_AGENTS + a in the
 * counter-based stream keyed by fv_mix64(key + i); one 64-bit draw holds FV_ACTIONS_PER_DRAW
 * actions of FV_ACTION_BITS bits each (k's draw is k / FV_ACTIONS_PER_DRAW), so the fused rollout
 * hashes once per 64 CartPole steps rather than every step, and the eager kernel draws the same
 * actions. Power-of-two action counts take exactly log2(n) bits (unbiased); others take 32 bits
 * and (bits * n) >> 32 (bias below n / 2^32). */
#define FV_IS_POW2(n) (((n) & ((n) - 1)) == 0)
#define FV_LOG2(n) ((n) >= 32768 ? 15 : (n) >= 16384 ? 14 : (n) >= 8192 ? 13 : (n) >= 4096 ? 12 : (n) >= 2048 ? 11 : \
                    (n) >= 1024 ? 10 : (n) >= 512 ? 9 : (n) >= 256 ? 8 : (n) >= 128 ? 7 : (n) >= 64 ? 6 : \
                    (n) >= 32 ? 5 : (n) >= 16 ? 4 : (n) >= 8 ? 3 : (n) >= 4 ? 2 : 1)
#define FV_ACTION_BITS (NUM_ACTIONS <= 2 ? 1 : FV_IS_POW2(NUM_ACTIONS) && NUM_ACTIONS <= 32768 ? FV_LOG2(NUM_ACTIONS) : 32)
#define FV_ACTIONS_PER_DRAW (64 / FV_ACTION_BITS)

static __device__ __forceinline__ fv_u64 fv_random_draw(fv_u64 env_key, fv_u64 draw) {
    fv_rng r;
    r.key = env_key; /* fv_mix64(key + i), computed once per env by the fused rollout */
    r.counter = draw;
    return fv_rand_u64(&r);
}

static __device__ __forceinline__ long long fv_action_of_draw(fv_u64 bits, int j) {
    fv_u64 chunk = (bits >> (j * FV_ACTION_BITS)) & ((1ULL << FV_ACTION_BITS) - 1);
    return (long long)((chunk * (fv_u64)NUM_ACTIONS) >> FV_ACTION_BITS);
}

static __device__ __forceinline__ long long fv_random_action(fv_u64 key, int i, long long t, int a) {
    fv_u64 k = (fv_u64)t * NUM_AGENTS + (fv_u64)a;
    return fv_action_of_draw(fv_random_draw(fv_mix64(key + (fv_u64)i), k / FV_ACTIONS_PER_DRAW),
                             (int)(k % FV_ACTIONS_PER_DRAW));
}

/* The fused rollout's last draw per env, so that consecutive steps share it. */
typedef struct {
    fv_u64 draw, bits;
} fv_action_cache;

static __device__ __forceinline__ long long fv_cached_random_action(fv_action_cache* c, fv_u64 env_key, long long t,
                                                                    int a) {
    fv_u64 k = (fv_u64)t * NUM_AGENTS + (fv_u64)a, draw = k / FV_ACTIONS_PER_DRAW;
    if (draw != c->draw) { /* the same for every env of a warp: no divergence */
        c->bits = fv_random_draw(env_key, draw);
        c->draw = draw;
    }
    return fv_action_of_draw(c->bits, (int)(k % FV_ACTIONS_PER_DRAW));
}

/* actions (N, NUM_AGENTS) int64 of the random policy at step t. */
extern "C" __global__ void fv_random_actions_kernel(int n, fv_u64 key, long long t, long long* actions) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int a = 0; a < NUM_AGENTS; a++) actions[i * NUM_AGENTS + a] = fv_random_action(key, i, t, a);
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
    int i, fv_split p, fv_slot* s, unsigned int outputs_set, int may_draw, fv_u64 counter, const long long* act,
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

/* Action of agent a of env i, range-checked: *error keeps the smallest (flat index << 32 | low 32
 * bits of the value) of the bad actions, and a bad one steps as action 0. */
static __device__ __forceinline__ long long fv_checked_action(long long v, int i, int a, fv_u64* error) {
    if (v < 0 || v >= NUM_ACTIONS) {
        atomicMin(error, ((fv_u64)(i * NUM_AGENTS + a) << 32) | (fv_u64)(unsigned int)v);
        return 0;
    }
    return v;
}

/* The arguments of every step kernel: n envs, their slots, actions (any integer type and byte
 * strides), the nine output buffers, the autoreset mode, the time limit and the error word. */
#define FV_STEP_KERNEL_ARGS                                                                                   \
    int n, char *slots, const char *actions, long long env_stride, long long agent_stride, int action_bytes,      \
        int action_signed, OBS_T *obs, float *rewards, unsigned char *terminated, unsigned char *truncated,       \
        unsigned char *done, OBS_T *final_obs, float *ep_return, int *ep_length, float *stats, int autoreset_mode, \
        int max_episode_steps, fv_u64 *error
#define FV_STEP_KERNEL_CALL                                                                                     \
    n, slots, actions, env_stride, agent_stride, action_bytes, action_signed, obs, rewards, terminated, truncated, \
        done, final_obs, ep_return, ep_length, stats, autoreset_mode, max_episode_steps, error

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
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) act[a] = fv_cached_random_action(cache, env_key, t, a);
    fv_step_one(0, s, act, o, out->rewards, &out->terminated, &out->truncated,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, out->ep_return, &out->ep_length, out->stats,
                autoreset_mode, max_episode_steps);
}

/* `steps` steps of every env under the random policy (policy steps t0 .. t0 + steps - 1), in one
 * launch. Equal to alternating fv_random_actions_kernel and a step kernel; the outputs hold
 * the last step's values (final_obs that of the last episode end, as after those steps). The slot,
 * the obs and the step outputs live in registers for the whole launch. */
extern "C" __global__ void fv_rollout_random_kernel(
    int n, int steps, fv_u64 key, long long t0, char* slots, OBS_T* obs, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
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

/* ---------------------------------------------------------------- staged kernels
 * The same steps, with each block's slots and observations in shared memory (batch.h's staging:
 * FV_STAGE_THREADS envs a block, 0 where they do not fit and the host uses the wide kernels below):
 * a large obs then leaves in contiguous runs rather than strided per thread, and envs that index
 * their state dynamically (Breakout's bricks) work on shared rather than local memory. */
/* The block's states move as one contiguous run of words, each landing in (or coming from) its
 * env's fv_slot in shared memory. */
template <int B> struct fv_word_of;
template <> struct fv_word_of<8> { typedef unsigned long long type; };
template <> struct fv_word_of<4> { typedef unsigned int type; };
template <> struct fv_word_of<1> { typedef unsigned char type; };
typedef fv_word_of<sizeof(State) % 8 == 0 ? 8 : sizeof(State) % 4 == 0 ? 4 : 1>::type fv_state_word;
#define FV_STATE_WORDS ((int)(sizeof(State) / sizeof(fv_state_word)))
#define FV_STATE_UNROLL (FV_STATE_WORDS <= 32 ? FV_STATE_WORDS : 0) /* larger states: a plain loop */

/* Loading the block's `count` states into sh[0 .. count - 1].env, in two halves: each thread
 * first issues all of its loads into registers r (unrolled), then, once the caller has issued
 * its other loads, stores them, so that all are in flight together (a loop that waits for each
 * load in turn is latency-bound). Larger states: one loop. */
typedef struct {
    fv_state_word w[FV_STATE_UNROLL > 0 ? FV_STATE_UNROLL : 1];
} fv_state_regs;

static __device__ __forceinline__ void fv_issue_state_loads(fv_state_regs* r, const State* states, int count) {
    const fv_state_word* g = (const fv_state_word*)states;
#pragma unroll
    for (int j = 0; j < FV_STATE_UNROLL; j++) {
        int k = threadIdx.x + j * blockDim.x;
        if (k < count * FV_STATE_WORDS) r->w[j] = g[k];
    }
}

static __device__ __forceinline__ void fv_finish_state_loads(fv_slot* sh, const fv_state_regs* r, const State* states,
                                                             int count) {
    int total = count * FV_STATE_WORDS;
    if (FV_STATE_UNROLL > 0) {
#pragma unroll
        for (int j = 0; j < FV_STATE_UNROLL; j++) {
            int k = threadIdx.x + j * blockDim.x;
            if (k < total) ((fv_state_word*)&sh[k / FV_STATE_WORDS].env)[k % FV_STATE_WORDS] = r->w[j];
        }
    } else {
        const fv_state_word* g = (const fv_state_word*)states;
        for (int k = threadIdx.x; k < total; k += blockDim.x)
            ((fv_state_word*)&sh[k / FV_STATE_WORDS].env)[k % FV_STATE_WORDS] = g[k];
    }
}

static __device__ __forceinline__ void fv_store_states(State* states, const fv_slot* sh, int count) {
    fv_state_word* g = (fv_state_word*)states;
    for (int k = threadIdx.x; k < count * FV_STATE_WORDS; k += blockDim.x)
        g[k] = ((const fv_state_word*)&sh[k / FV_STATE_WORDS].env)[k % FV_STATE_WORDS];
}

/* The staged step: one env per thread, the block's obs leaving shared memory in 16-byte words
 * where they can (fv_block_copy_wide). */
static __device__ __forceinline__ void fv_step_staged(
    int n, char* slots, const char* actions, long long env_stride, long long agent_stride,
    int action_bytes, int action_signed, OBS_T* obs, float* rewards, unsigned char* terminated,
    unsigned char* truncated, unsigned char* done, OBS_T* final_obs, float* ep_return,
    int* ep_length, float* stats, int autoreset_mode, int max_episode_steps, fv_u64* error) {
    __shared__ unsigned long long sh_slots[FV_STAGE_ALLOC * FV_SLOT_WORDS];
    __shared__ __align__(16) unsigned long long sh_obs[FV_STAGE_ALLOC * FV_OBS_WORDS];
    fv_slot* sh = (fv_slot*)sh_slots;
    int base = blockIdx.x * blockDim.x, tid = threadIdx.x;
    int count = min((int)blockDim.x, n - base);
    int i = base + tid;
    fv_split p = fv_split_of(slots, n);
    long long act[NUM_AGENTS];
    fv_book book;
    fv_rng rng;
    fv_state_regs r;
    unsigned int outputs_set = 0;
    int may_draw = 0;
    if (tid < count) { /* every load that does not depend on another, issued together */
        for (int a = 0; a < NUM_AGENTS; a++)
            act[a] = fv_load_action(actions, env_stride, agent_stride, action_bytes, action_signed, i, a);
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
        for (int a = 0; a < NUM_AGENTS; a++) act[a] = fv_checked_action(act[a], i, a, error);
        fv_step_loaded(i, p, &sh[tid], outputs_set, may_draw, may_draw ? rng.counter : 0, act,
                       (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE, rewards, terminated, truncated, done, final_obs,
                       ep_return, ep_length, stats, autoreset_mode, max_episode_steps);
    }
    __syncthreads();
    fv_store_states(p.states + base, sh, count);
    fv_block_copy_wide(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
}

extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_step_staged_wide_kernel(FV_STEP_KERNEL_ARGS) {
    fv_step_staged(FV_STEP_KERNEL_CALL);
}

extern "C" __global__ void __launch_bounds__(FV_STAGE_ALLOC) fv_rollout_random_staged_kernel(
    int n, int steps, fv_u64 key, long long t0, char* slots, OBS_T* obs, float* rewards,
    unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
    float* ep_return, int* ep_length, float* stats, int autoreset_mode, int max_episode_steps) {
    __shared__ unsigned long long sh_slots[FV_STAGE_ALLOC * FV_SLOT_WORDS];
    __shared__ unsigned long long sh_obs[FV_STAGE_ALLOC * FV_OBS_WORDS];
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
            fv_rollout_step(i, env_key, &cache, t0 + t, &sh[tid], (OBS_T*)sh_obs + tid * NUM_AGENTS * OBS_SIZE, &out,
                            final_obs, autoreset_mode, max_episode_steps);
        fv_store_book(&p.books[i], &sh[tid], out.terminated | out.truncated);
        p.rngs[i] = sh[tid].rng;
        fv_store_outputs(i, &out, rewards, terminated, truncated, done, ep_return, ep_length, stats);
    }
    __syncthreads();
    fv_store_states(p.states + base, sh, count);
    fv_block_copy(obs + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
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
template <> struct fv_word_of<16> { typedef uint4 type; };
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
    long long act[NUM_AGENTS];
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
                                                      long long env_stride, long long agent_stride, int action_bytes,
                                                      int action_signed, int autoreset_mode) {
    for (int a = 0; a < NUM_AGENTS; a++)
        l->act[a] = fv_load_action(actions, env_stride, agent_stride, action_bytes, action_signed, i, a);
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
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) act[a] = fv_checked_action(l->act[a], i, a, error);
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
    fv_issue_loads(&l, p, i, actions, env_stride, agent_stride, action_bytes, action_signed, autoreset_mode);
    fv_step_wide_loaded(&l, i, p, obs, rewards, terminated, truncated, done, final_obs, ep_return, ep_length, stats,
                        autoreset_mode, max_episode_steps, error);
}

extern "C" __global__ void fv_step_wide_kernel(FV_STEP_KERNEL_ARGS) { fv_step_wide(FV_STEP_KERNEL_CALL); }
/* The same with at least 5 blocks of 256 threads per SM (at most 48 registers a thread): more
 * threads, so more loads, in flight; cuda.py takes it only where that costs no spills. */
extern "C" __global__ void __launch_bounds__(256, 5) fv_step_wide_occ_kernel(FV_STEP_KERNEL_ARGS) {
    fv_step_wide(FV_STEP_KERNEL_CALL);
}

extern "C" __device__ const int fv_stage_threads = FV_STAGE_THREADS;
extern "C" __device__ const int fv_state_size = (int)sizeof(State);
extern "C" __device__ const int fv_book_size = (int)sizeof(fv_book);

/* The env's statistic names, for the host (module.get_global). */
extern "C" __device__ const char fv_stat_names[] = STAT_NAMES;

#endif /* FASTVEC_BATCH_GPU_H */
