/* test_kernels.cu: test-only entry points into the trainer module's device functions, compiled after
 * fastvec/trainer/cuda/kernels.cu (a translation unit of `#include "kernels.cu"` then this file) by
 * tests/trainer/test_cuda.py. The product's kernels call the same functions inside the rollout. */

extern "C" {

/* reference.sample_actions through policy.cu's sample_row: logits rows of stride ld (the decoder
 * output (B, A + 1) has ld = A + 1), uniforms (B,) -> actions (B,) int32, logp (B,). */
__global__ void sample_actions_kernel(int B, int A, int ld, const float* logits, const float* uniforms,
                                      int* actions, float* logp) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) actions[b] = sample_row(logits + (long long)b * ld, A, uniforms[b], logp + b);
}

/* policy.cu's policy_uniform: the uniforms the rollout draws at policy step `step` for rows 0..B-1. */
__global__ void policy_uniforms_kernel(int B, unsigned long long key, long long step, float* out) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) out[b] = policy_uniform(key, b, step);
}

/* heads.cu's samplers, as the rollout calls them, for rows 0..B-1 at policy step `step`: dist rows of stride ld
 * (a Box head's D means; a MultiDiscrete head's sum(nvec) logits), logstd (D,) or nvec (D,) int64 ->
 * actions (B, D) (float32 or int64) and their log-probabilities (B,). */
__global__ void sample_box_kernel(int B, int D, int ld, const float* means, const float* logstd,
                                  unsigned long long key, long long step, float* actions, float* logp) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) logp[b] = sample_box_row(means + (long long)b * ld, logstd, D, key, b, step, actions + (long long)b * D);
}

__global__ void sample_multi_discrete_kernel(int B, int D, int ld, const float* logits, const long long* nvec,
                                             unsigned long long key, long long step, long long* actions, float* logp) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B)
        logp[b] = sample_multi_discrete_row(logits + (long long)b * ld, nvec, D, key, b, step, actions + (long long)b * D);
}

} /* extern "C" */
