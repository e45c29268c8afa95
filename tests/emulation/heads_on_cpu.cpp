/* heads_on_cpu.cpp: the CUDA trainer's action-head and normalisation kernels (fastvec/trainer/cuda/heads.cu,
 * normalize.cu, and ppo.cu's minibatch gather and loss, with the policy.cu and common.cu they call) built for the
 * CPU, for tests/emulation/test_heads_kernels.py, on cuda_on_cpu.h's threads. The launchers below use the
 * trainer's grids (device.THREADS a block). */
#include "cuda_on_cpu.h"
#define __ldcg(p) (*(p))

#include "common.cu"
#include "policy.cu"
#include "ppo.cu"
#include "heads.cu"
#include "normalize.cu"

static const int kThreads = 256; /* device.THREADS */

extern "C" {

/* heads.cu's samplers for rows 0..B-1 (tests/trainer/test_kernels.cu's entry points, one row a call). */
void emu_sample_box(int B, int D, int ld, const float* means, const float* logstd, unsigned long long key,
                    long long step, float* actions, float* logp) {
    for (int b = 0; b < B; b++)
        logp[b] = sample_box_row(means + (long long)b * ld, logstd, D, key, b, step, actions + (long long)b * D);
}

void emu_sample_multi_discrete(int B, int D, int ld, const float* logits, const long long* nvec,
                               unsigned long long key, long long step, long long* actions, float* logp) {
    for (int b = 0; b < B; b++)
        logp[b] = sample_multi_discrete_row(logits + (long long)b * ld, nvec, D, key, b, step,
                                            actions + (long long)b * D);
}

void emu_ppo_loss_head(int n, int kind, int D, int Y, const float* y, const int* actions, const long long* nvec,
                       const float* logstd, const float* old_logp, const float* old_values, const float* adv,
                       const float* returns, const float* adv_moments, TrainScalars* scalars, float clip_coef,
                       float vf_clip_coef, float vf_coef, float* dy, float* dlogstd, double* partial,
                       unsigned int* counter, float* new_logp, const int* src) {
    LossArgs l = {.y = y, .actions = actions, .nvec = nvec, .logstd = logstd, .old_logp = old_logp,
                  .old_values = old_values, .adv = adv, .returns = returns, .adv_moments = adv_moments,
                  .scalars = scalars, .dy = dy, .dlogstd = dlogstd, .partial = partial, .counter = counter,
                  .new_logp = new_logp, .src = src, .clip_coef = clip_coef, .vf_clip_coef = vf_clip_coef,
                  .vf_coef = vf_coef, .n = n, .kind = kind, .D = D, .Y = Y};
    launch(n, kThreads, [=] { ppo_loss_head_kernel(l); });
}

/* ppo.cu's Discrete-head loss kernel, which shares its per-row terms and statistics with the kernel above. */
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

/* ppo.cu's gather on `threads` threads (the trainer launches plan.gather_threads: at least one a row). */
void emu_gather(long long threads, int K, int Bm, int R, int O, int first, int action_words, int obs_bytes,
                const int* perm, const float* obs, const float* starts, const int* actions, const float* logp,
                const float* values, const float* adv, const float* returns, float* mb_obs, float* mb_starts,
                int* mb_actions, float* mb_logp, float* mb_values, float* mb_adv, float* mb_returns, int* mb_src) {
    GatherArgs g = {.perm = perm, .obs = obs, .starts = starts, .actions = actions, .logp = logp, .values = values,
                    .adv = adv, .returns = returns, .mb_obs = mb_obs, .mb_starts = mb_starts,
                    .mb_actions = mb_actions, .mb_logp = mb_logp, .mb_values = mb_values, .mb_adv = mb_adv,
                    .mb_returns = mb_returns, .mb_src = mb_src, .K = K, .Bm = Bm, .R = R, .O = O, .first = first,
                    .action_words = action_words, .obs_bytes = obs_bytes};
    launch(threads, kThreads, [=] { gather_minibatch_kernel(g); });
}

/* The same gather with the minibatch's advantage moments (train.norm_adv on one GPU): adv_moments = (mean, std) of
 * mb_adv, summed per block into partial and finished by the last block (counter starts at 0). */
void emu_gather_moments(long long threads, int K, int Bm, int R, int O, int first, const int* perm, const float* obs,
                        const float* starts, const int* actions, const float* logp, const float* values,
                        const float* adv, const float* returns, float* mb_obs, float* mb_starts, int* mb_actions,
                        float* mb_logp, float* mb_values, float* mb_adv, float* mb_returns, int* mb_src,
                        double* partial, unsigned int* counter, float* adv_moments) {
    GatherArgs g = {.perm = perm, .obs = obs, .starts = starts, .actions = actions, .logp = logp, .values = values,
                    .adv = adv, .returns = returns, .mb_obs = mb_obs, .mb_starts = mb_starts,
                    .mb_actions = mb_actions, .mb_logp = mb_logp, .mb_values = mb_values, .mb_adv = mb_adv,
                    .mb_returns = mb_returns, .mb_src = mb_src, .partial = partial, .counter = counter,
                    .adv_moments = adv_moments, .K = K, .Bm = Bm, .R = R, .O = O, .first = first, .action_words = 1,
                    .obs_bytes = 0};
    launch(threads, kThreads, [=] { gather_minibatch_kernel(g); });
}

/* policy.cu's bias gradient on `blocks` blocks of 256 threads; with out and dpre, of the activation's gradient of
 * dout (act: MLP_RELU or MLP_TANH). */
void emu_bias_grad(long long rows, int cols, int blocks, const float* dout, const float* out, float* dpre,
                   double* partial, unsigned int* counter, float* db, int act) {
    launch_grid(blocks, 256, [=] { bias_grad_kernel(rows, cols, dout, out, dpre, partial, counter, db, act); });
}

/* policy.cu's MLP layer: out = activate(pre + bias), then dpre = activation_grad(dout, out). */
void emu_mlp(long long rows, int H, const float* pre, const float* bias, float* out, const float* dout, float* dpre,
             int act) {
    launch(rows * H, kThreads, [=] { mlp_forward_kernel(rows, H, pre, bias, out, act); });
    launch(rows * H, kThreads, [=] { mlp_backward_kernel(rows * H, dout, out, dpre, act); });
}

void emu_encode_obs(long long rows, int O, int obs_bytes, const float* obs, float scale, const float* norm, float* x) {
    launch(rows * O, kThreads, [=] { encode_obs_kernel(rows, O, obs_bytes, obs, scale, norm, x); });
}

void emu_obs_norm(long long count, int O, int R, int obs_bytes, const float* obs, double scale, float* norm) {
    launch_grid(O, MOMENT_THREADS, [=] { obs_norm_update_kernel(count, O, R, obs_bytes, obs, scale, norm); });
    launch_grid(1, 1, [=] { obs_norm_count_kernel(count, O, norm); });
}

void emu_scale_rewards(int T, int R, float* rewards, const float* dones, double gamma, double* returns, double* seen,
                       double* moments) {
    launch(R, kThreads, [=] { reward_returns_kernel(T, R, rewards, dones, gamma, returns, seen); });
    launch_grid(1, MOMENT_THREADS, [=] { reward_moments_kernel((long long)T * R, seen, moments); });
    launch((long long)T * R, kThreads, [=] { reward_scale_kernel((long long)T * R, rewards, moments); });
}

/* ppo.cu's explained variance after an update: sums_partial_kernel over [adv; returns] (2, count) on `blocks` blocks,
 * then explained_variance_finish_kernel into scalars' statistics (the trainer's two launches). */
void emu_explained_variance(long long count, int blocks, const float* adv_returns, double* partial, TrainScalars* scalars) {
    launch_grid(blocks, 256, [=] { sums_partial_kernel(count, 2, adv_returns, partial); });
    launch_grid(1, 1, [=] { explained_variance_finish_kernel(blocks, partial, count, scalars); });
}

/* ppo.cu's gae_kernel over a (T, R) rollout, one thread a row (the trainer's grid); last_value read with a stride. */
void emu_gae(int T, int R, const float* values, const float* last_value, int last_value_stride, const float* rewards,
             const float* dones, const float* new_logp, const float* old_logp, float* adv, float* returns, float gamma,
             float lam, float gamma_lambda, float rho_clip, float c_clip, int vtrace) {
    GaeArgs g = {values, last_value, rewards, dones, new_logp, old_logp, adv, returns, gamma, lam, gamma_lambda,
                 rho_clip, c_clip, T, R, last_value_stride, vtrace};
    launch(R, kThreads, [=] { gae_kernel(g); });
}

/* ppo.cu's recurrent states of a minibatch: gather_state_kernel, a thread an element of mb_state (Ls, Bm, H). */
void emu_gather_state(int Ls, int Bm, int R, int H, int first, const int* perm, const float* segment_state,
                      float* mb_state) {
    launch((long long)Ls * Bm * H, kThreads, [=] { gather_state_kernel(Ls, Bm, R, H, first, perm, segment_state,
                                                                         mb_state); });
}

/* ppo.cu's advantage moments as data_parallel.py records them on one rank: sums_partial_kernel over n values on
 * `blocks` blocks of 256, then moments_finish_kernel into out (mean, std). */
void emu_adv_moments(long long n, int blocks, const float* adv, double* partial, float* out) {
    launch_grid(blocks, 256, [=] { sums_partial_kernel(n, 1, adv, partial); });
    launch_grid(1, 1, [=] { moments_finish_kernel(blocks, partial, n, out); });
}

/* ppo.cu's bookkeeping between graph replays, one thread each as the trainer launches them: begin_update_kernel
 * (the update's statistics zeroed), schedule_kernel (the next update's learning rate and entropy bonus) and
 * advance_rollout_kernel (the sampling counter). */
void emu_begin_update(TrainScalars* scalars) {
    launch_grid(1, 1, [=] { begin_update_kernel(scalars); });
}

void emu_schedule(TrainScalars* scalars, double base_lr, int num_updates, int anneal_lr, double base_ent,
                  int anneal_ent) {
    launch_grid(1, 1, [=] { schedule_kernel(scalars, base_lr, num_updates, anneal_lr, base_ent, anneal_ent); });
}

void emu_advance_rollout(TrainScalars* scalars, int steps) {
    launch_grid(1, 1, [=] { advance_rollout_kernel(scalars, steps); });
}

} /* extern "C" */
