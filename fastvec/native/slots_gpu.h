/* slots_gpu.h: an env batch's slots as the GPU keeps them, split into states, books and RNGs (the
 * layout cuda.py allocates), and a block's states moved between that layout and the block's fv_slots in
 * shared memory. The step kernels (batch_gpu.h) and the random policy's rollouts (random_gpu.h) build
 * on it; compiled after an env file, in CUDA only. */
#ifndef FASTVEC_SLOTS_GPU_H
#define FASTVEC_SLOTS_GPU_H

#include "batch.h"

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

/* ---------------------------------------------------------------- states through shared memory
 * Kernels that stage a block's slots in shared memory (batch.h's staging) move the block's states as
 * one contiguous run of words, each landing in (or coming from) its env's fv_slot there. fv_word_of<B>:
 * the B-byte word (batch_gpu.h's wide kernels move values in words up to 16 bytes). */
template <int B> struct fv_word_of;
template <> struct fv_word_of<8> { typedef unsigned long long type; };
template <> struct fv_word_of<4> { typedef unsigned int type; };
template <> struct fv_word_of<1> { typedef unsigned char type; };
template <> struct fv_word_of<16> { typedef uint4 type; };
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

#endif /* FASTVEC_SLOTS_GPU_H */
