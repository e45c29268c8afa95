/* teams_on_cpu.cpp: the CUDA trainer's team kernels (fastvec/trainer/cuda/teams.cu: the masked categorical's
 * sampler, logits and gradient masks, the minibatch's row gather) with ppo.cu's Discrete loss between them, built
 * for the CPU for tests/emulation/test_teams_kernels.py on cuda_on_cpu.h's threads (device.THREADS a block). */
#include "cuda_on_cpu.h"
#define __ldcg(p) (*(p))

#include "common.cu"
#include "policy.cu"
#include "ppo.cu"
#include "teams.cu"

static const int kThreads = 256; /* device.THREADS */

extern "C" {

/* host_sample_kernel's Discrete draw for rows 0..B-1: sample_masked_row with row b's uniform u[b], or (mask NULL)
 * sample_row, as the kernel picks. */
void emu_sample_masked(int B, int A, const float* logits, const unsigned char* mask, const float* u, int* actions,
                       float* logp) {
    for (int b = 0; b < B; b++)
        actions[b] = mask ? sample_masked_row(logits + (long long)b * A, mask + (long long)b * A, A, u[b], &logp[b])
                          : sample_row(logits + (long long)b * A, A, u[b], &logp[b]);
}

void emu_mask_logits(long long n, int A, int Y, const unsigned char* mask, float* y) {
    launch(n * A, kThreads, [=] { mask_logits_kernel(n, A, Y, mask, y); });
}

void emu_mask_logits_grad(long long n, int A, int Y, const unsigned char* mask, float* dy) {
    launch(n * A, kThreads, [=] { mask_logits_grad_kernel(n, A, Y, mask, dy); });
}

void emu_gather_rows(long long n, int width, const int* src_index, const unsigned char* src, unsigned char* dst) {
    launch(n * width, kThreads, [=] { gather_rows_kernel(n, width, src_index, src, dst); });
}

/* ppo.cu's Discrete-head loss (the update's launch between the two masks). */
void emu_ppo_loss(int n, int A, const float* y, const int* actions, const float* old_logp, const float* old_values,
                  const float* adv, const float* returns, const float* adv_moments, TrainScalars* scalars,
                  float clip_coef, float vf_clip_coef, float vf_coef, float* dy, double* partial, unsigned int* counter,
                  float* new_logp, const int* src) {
    LossArgs l = {.y = y, .actions = actions, .old_logp = old_logp, .old_values = old_values, .adv = adv,
                  .returns = returns, .adv_moments = adv_moments, .scalars = scalars, .dy = dy, .partial = partial,
                  .counter = counter, .new_logp = new_logp, .src = src, .clip_coef = clip_coef,
                  .vf_clip_coef = vf_clip_coef, .vf_coef = vf_coef, .n = n, .Y = A + 1};
    launch(n, kThreads, [=] { ppo_loss_kernel(l); });
}

} /* extern "C" */
