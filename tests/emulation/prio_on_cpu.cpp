/* prio_on_cpu.cpp: the CUDA trainer's prioritised draws (fastvec/trainer/cuda/prio.cu's prio_kernel, one block of
 * PRIO_THREADS) and ppo.cu's Discrete loss with importance weights, built for the CPU for
 * tests/emulation/test_prio_kernel.py on cuda_on_cpu.h's threads. */
#include "cuda_on_cpu.h"
#define __ldcg(p) (*(p))
#define __launch_bounds__(...)

#include "common.cu"
#include "ppo.cu"
#include "prio.cu"

extern "C" {

/* prio_kernel as update.GpuUpdate.epoch_order launches it; update is the scalars' update counter. */
void emu_prio(const float* adv, int K, int R, int Q, double alpha, double beta0, int num_updates, int update,
              unsigned long long shuffle_key, int epoch, double* scratch, int* perm, float* weights) {
    TrainScalars scalars = {};
    scalars.update = update;
    const TrainScalars* s = &scalars;
    launch_grid(1, PRIO_THREADS, [=] {
        prio_kernel(adv, K, R, Q, alpha, beta0, num_updates, shuffle_key, epoch, s, scratch, perm, weights);
    });
}

/* ppo_loss_kernel over n = K * Bm rows with the minibatch's sequences' weights (Bm,) and normalised advantages. */
void emu_weighted_loss(int n, int A, int Bm, const float* y, const int* actions, const float* old_logp,
                       const float* old_values, const float* adv, const float* returns, const float* adv_moments,
                       const float* weights, TrainScalars* scalars, float* dy, double* partial,
                       unsigned int* counter) {
    LossArgs l = {.y = y, .actions = actions, .old_logp = old_logp, .old_values = old_values, .adv = adv,
                  .returns = returns, .adv_moments = adv_moments, .scalars = scalars, .dy = dy, .partial = partial,
                  .counter = counter, .weights = weights, .clip_coef = 0.2f, .vf_clip_coef = 0.2f, .vf_coef = 0.5f,
                  .n = n, .Y = A + 1, .Bm = Bm};
    launch(n, 256, [=] { ppo_loss_kernel(l); });
}

/* prio.cu's log and exp, element by element: out_log[i] = prio_log(x[i]), out_exp[i] = prio_exp(z[i]). */
void emu_prio_log_exp(long long n, const double* x, const double* z, double* out_log, double* out_exp) {
    for (long long i = 0; i < n; i++) {
        out_log[i] = prio_log(x[i]);
        out_exp[i] = prio_exp(z[i]);
    }
}

} /* extern "C" */
