/* common.cu: what every part of the trainer module shares: the bf16 storage type and its float
 * loads and stores, TrainScalars (the device scalars a captured graph reads), the counter-based hash,
 * and the block reductions with their one-launch finish (last_block). Device code only, no kernels. */
#pragma once
#include <cuda_bf16.h>
typedef __nv_bfloat16 bf16;

/* Storage-type-generic loads and stores (the math is always float). */
__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ float load_as_float(const bf16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_float(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_float(bf16* p, float v) { *p = __float2bfloat16(v); }

/* ------------------------------------------------------------------------------------------------
 * Device scalars: everything that changes between graph replays lives here, in device memory, so
 * a captured graph reads the current value (learning rate, step counters, clip scale).
 * Order and types mirror SCALARS_DTYPE in trainer.py. */
typedef struct {
    double lr;                /* learning rate of the current update (annealed by schedule_kernel) */
    double stat[8];           /* sums over minibatches: policy_loss, value_loss, entropy, approx_kl,
                                 clipfrac, grad_norm, minibatch count, explained_variance (set) */
    long long rollout_steps;  /* policy steps taken so far: the sampling RNG's counter */
    float ent_coef;           /* entropy bonus coefficient */
    float grad_norm;          /* global gradient norm of the last minibatch, before clipping */
    float clip_scale;         /* 1, or max_norm / (norm + 1e-6) when the norm exceeds max_norm */
    float bias_correction1;   /* 1 - beta1^step as float32 (Adam) */
    float bias_correction2;   /* 1 - beta2^step */
    int opt_step;             /* optimizer steps taken (Adam's step counts from 1) */
    int update;               /* updates finished */
    int pad;
} TrainScalars;

#define STAT_POLICY 0
#define STAT_VALUE 1
#define STAT_ENTROPY 2
#define STAT_KL 3
#define STAT_CLIPFRAC 4
#define STAT_GRAD_NORM 5
#define STAT_COUNT 6
#define STAT_EXPLAINED_VAR 7

/* splitmix64's finaliser (as fastvec.h): the counter-based randomness of the sampler and the shuffle. */
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Element j of step t, row r of byte observations (an env's OBS_T unsigned char) in a (T + 1, R, O) float
 * rollout buffer: step t's R * O bytes start at its float offset t * R * O (rollout.cu's step_obs). */
__device__ __forceinline__ float obs_byte_at(const float* obs, long long t, long long r, int R, int O, int j) {
    return (float)reinterpret_cast<const unsigned char*>(obs + t * R * O)[r * O + j];
}

/* The same for rollout row src = t * R + r. */
__device__ __forceinline__ float obs_byte(const float* obs, long long src, int R, int O, int j) {
    return obs_byte_at(obs, src / R, src % R, R, O, j);
}

/* ------------------------------------------------------------------------------------------------
 * Reductions. The single-block ones (frobenius_normalize_kernel) run REDUCE_THREADS threads
 * (device.REDUCE_THREADS). */
#define REDUCE_THREADS 1024

/* Sum of v over the block (blockDim.x a multiple of 32, <= 1024), in a fixed order; every thread
 * gets the result. `scratch` holds 32 floats of shared memory. */
__device__ float block_sum(float v, float* scratch) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* scratch may still be read by a previous call */
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    int warps = blockDim.x >> 5;
    v = lane < warps ? scratch[lane] : 0.0f;
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    return scratch[0];
}

/* block_sum in double; only thread 0's return value is the sum. `scratch` holds 32 doubles. */
__device__ double block_sum_d(double v, double* scratch) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.0;
    if (warp == 0)
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* One-launch reductions over a grid: every block writes its partial sums, then the last block to arrive
 * (counted on `counter`, which it sets back to 0 for the next launch) finishes them, reading the partials
 * in block order, so the result does not depend on which block that is. Call with every thread of the
 * block, after thread 0 wrote the block's partials; true in the finishing block. */
__device__ bool last_block(unsigned int* counter) {
    __shared__ bool is_last;
    __threadfence(); /* this block's partials are visible to the block that finishes */
    __syncthreads();
    if (threadIdx.x == 0) {
        is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
        if (is_last) *counter = 0u; /* every block has counted: safe to reset */
    }
    __syncthreads();
    if (is_last) __threadfence();
    return is_last;
}
