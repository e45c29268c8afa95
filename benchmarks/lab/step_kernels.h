/* step_kernels.h: step kernels kept for measurement, not used by fastvec: the baseline the product's
 * kernels (fastvec/native/batch_gpu.h) are compared against. Compiled after batch_gpu.h, whose
 * helpers they use; benchmarks/lab/step_kernels.py validates and times them (README.md).
 *   plain1: one env per thread, each member loaded in its own type's words;
 *   plain:  FV_PLAIN_ENVS envs per thread (4 where state and obs fit in 64 bytes), every env's loads
 *           in flight before any is stepped, a thread's j-th envs consecutive across its warp.
 */
#ifndef FASTVEC_LAB_STEP_KERNELS_H
#define FASTVEC_LAB_STEP_KERNELS_H

enum { FV_PLAIN_ENVS = sizeof(State) + FV_OBS_BYTES <= 64 ? 4 : 1 };

/* One step of every env (actions as batch_gpu.h's step kernels take them), each thread with
 * E envs' slots in registers: envs blockIdx.x * blockDim.x * E + j * blockDim.x + threadIdx.x
 * for j < E. fv_step_any_kernel takes E = FV_PLAIN_ENVS, fv_step_any1_kernel E = 1. They load each
 * member of the State, book and RNG in words of its own type (compare batch_gpu.h's wide kernels). */
template <int E>
static __device__ __forceinline__ void fv_step_envs(
    FV_STEP_KERNEL_ARGS) {
    int first = blockIdx.x * blockDim.x * E + threadIdx.x;
    fv_split p = fv_split_of(slots, n);
    ACT_T act[E][FV_ACT_LEN];
    fv_slot s[E];
    fv_book book[E];
    unsigned int outputs_set[E];
    int may_draw[E];
    fv_u64 counter[E];
#pragma unroll
    for (int j = 0; j < E; j++) { /* every load that does not depend on another */
        int i = first + j * blockDim.x;
        if (i < n) {
            fv_load_actions(act[j], actions, env_stride, agent_stride, dim_stride, action_bytes, action_signed, i);
            book[j] = p.books[i];
            s[j].env = p.states[i];
            if (fv_steps_draw(autoreset_mode)) s[j].rng = p.rngs[i];
        }
    }
#pragma unroll
    for (int j = 0; j < E; j++) { /* the RNGs of envs that reset (the book says which) */
        int i = first + j * blockDim.x;
        if (i < n) {
            outputs_set[j] = fv_unpack_book(book[j], &s[j]);
            may_draw[j] = fv_step_may_draw(&s[j], autoreset_mode);
            if (may_draw[j] && !fv_steps_draw(autoreset_mode)) s[j].rng = p.rngs[i];
        }
    }
#pragma unroll
    for (int j = 0; j < E; j++) {
        int i = first + j * blockDim.x;
        if (i < n) {
            counter[j] = may_draw[j] ? s[j].rng.counter : 0;
            fv_check_actions(act[j], i, error);
            fv_step_loaded(i, p, &s[j], outputs_set[j], may_draw[j], counter[j], act[j],
                           obs + (long long)i * NUM_AGENTS * OBS_SIZE, rewards, terminated, truncated, done, final_obs,
                           ep_return, ep_length, stats, autoreset_mode, max_episode_steps);
            p.states[i] = s[j].env;
        }
    }
}

extern "C" __global__ void fv_step_any_kernel(FV_STEP_KERNEL_ARGS) { fv_step_envs<FV_PLAIN_ENVS>(FV_STEP_KERNEL_CALL); }
extern "C" __global__ void fv_step_any1_kernel(FV_STEP_KERNEL_ARGS) { fv_step_envs<1>(FV_STEP_KERNEL_CALL); }

extern "C" __device__ const int fv_plain_envs = FV_PLAIN_ENVS;

#endif /* FASTVEC_LAB_STEP_KERNELS_H */
