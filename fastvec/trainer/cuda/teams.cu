/* teams.cu: what a team of agents adds to the policy's math (reference.py's TEAMS section): the masked categorical
 * (mask_logits, mask_logits_grad, masked_uniforms) and the minibatch gather of the per-row inputs only teams have
 * (each row's action mask and a world-state critic's input), by the rollout index gather_minibatch_kernel found. */
#pragma once

#define MASKED_LOGIT (-1e10f)                           /* reference.MASKED_LOGIT */
#define MASKED_UNIFORM_MIN 2.98023223876953125e-08f     /* reference.masked_uniforms' 2^-25 */

/* reference.policy_act with a mask for one row: sample_row on the logits with every unavailable action's (mask 0)
 * set to MASKED_LOGIT and the uniform raised to 2^-25, so that inverse-CDF sampling passes over leading unavailable
 * actions (their cdf is exactly 0) and never picks one. logits and mask: A entries. */
__device__ int sample_masked_row(const float* logits, const unsigned char* mask, int A, float u, float* logp_out) {
    float masked[MAX_ACTIONS];
    for (int a = 0; a < A; a++) masked[a] = mask[a] ? logits[a] : MASKED_LOGIT;
    return sample_row(masked, A, fmaxf(u, MASKED_UNIFORM_MIN), logp_out);
}

extern "C" {

/* reference.mask_logits in place over the first A columns of y (n rows of Y: the logits, then the value):
 * mask (n, A) uint8, 1 = available. The loss kernels then compute the masked categorical's log-softmax, entropy
 * and gradient exactly as the reference does on its masked logits. */
__global__ void mask_logits_kernel(long long n, int A, int Y, const unsigned char* mask, float* y) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * A) return;
    if (!mask[i]) y[(i / A) * Y + i % A] = MASKED_LOGIT;
}

/* reference.mask_logits_grad in place over dy's first A columns (n rows of Y): 0 on unavailable actions. */
__global__ void mask_logits_grad_kernel(long long n, int A, int Y, const unsigned char* mask, float* dy) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * A) return;
    if (!mask[i]) dy[(i / A) * Y + i % A] = 0.0f;
}

/* dst (n, width) bytes = rows src_index[i] of src (rollout rows, width bytes each): the minibatch's action masks
 * (width A) and world states (width 4C, their float bits), by gather_minibatch_kernel's mb_src. */
__global__ void gather_rows_kernel(long long n, int width, const int* src_index, const unsigned char* src,
                                   unsigned char* dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * width) return;
    long long row = i / width;
    dst[i] = src[(long long)src_index[row] * width + i % width];
}

} /* extern "C" */
