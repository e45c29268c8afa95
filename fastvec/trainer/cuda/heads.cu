/* heads.cu: the MultiDiscrete and Box action heads (fastvec/trainer/heads.py) on the GPU: the samplers
 * rollout.cu calls (from policy.cu's counter-based uniforms) and the PPO loss with its gradient for these
 * heads (ppo_loss_head_kernel; ppo.cu's ppo_loss_kernel keeps the Discrete head). Legend as kernels.cu's,
 * with D = action dimensions, Y = the decoder's width: the head's columns (sum(nvec) logits, or D means),
 * then the value. A Box head's log-stds are parameters (dec.logstd), not decoder outputs. */
#include "common.cu"
#include "categorical.cu"
#include "update_args.cu" /* LossArgs */

#define HEAD_MULTI_DISCRETE 1
#define HEAD_BOX 2
#define HALF_LOG_2PI 0.91893853320467274178 /* heads.HALF_LOG_2PI = log(2 pi) / 2 */

/* heads.gaussian_from_uniforms: sqrt(-2 log1p(-u0)) cos(2 pi u1) in double, rounded to float. */
__device__ __forceinline__ float gaussian_from_uniforms(float u0, float u1) {
    double u = (double)u0, v = (double)u1;
    return (float)(sqrt(-2.0 * log1p(-u)) * cos(2.0 * 3.141592653589793 * v));
}

/* Row `row`'s Box action at policy step `step` (heads.sample_head): per dimension d, mean m + exp(s) z with
 * z from the uniforms of index (row * D + d) * 2 + k (reference.head_uniforms), unclipped; means (D,) and
 * logstd (D,); writes actions (D,) and returns their log-probability (heads.head_log_prob, which recomputes z
 * from the rounded action: sum_d of -z^2 / 2 - s - log(2 pi) / 2, in float). */
__device__ float sample_box_row(const float* means, const float* logstd, int D, unsigned long long key, long long row,
                                long long step, float* actions) {
    float logp = 0.0f;
    for (int d = 0; d < D; d++) {
        long long u = (row * D + d) * 2;
        float z = gaussian_from_uniforms(policy_uniform(key, u, step), policy_uniform(key, u + 1, step));
        float m = means[d], s = logstd[d], std = expf(s);
        float a = m + std * z;
        actions[d] = a;
        float zz = (a - m) / std;
        logp += -0.5f * zz * zz - s - (float)HALF_LOG_2PI;
    }
    return logp;
}

/* Row `row`'s MultiDiscrete action (heads.sample_head): dimension d is sample_row on its nvec[d] logits with
 * the uniform of index row * D + d; writes actions (D,) and returns the summed log-probability. */
__device__ float sample_multi_discrete_row(const float* logits, const long long* nvec, int D, unsigned long long key,
                                           long long row, long long step, long long* actions) {
    float logp = 0.0f;
    int offset = 0;
    for (int d = 0; d < D; d++) {
        float lp;
        int n = (int)nvec[d];
        actions[d] = sample_row(logits + offset, n, policy_uniform(key, row * D + d, step), &lp);
        logp += lp;
        offset += n;
    }
    return logp;
}

extern "C" {

/* ppo_loss_kernel for a MultiDiscrete (kind 1) or Box (kind 2) head (LossArgs in update_args.cu):
 * reference.ppo_loss(spec=...), one thread per row. y (n, Y) decoder rows (head columns, then the value); actions
 * (n, D): int64 (MultiDiscrete) or float32 (Box), as their bits in the minibatch's int32 words; nvec (D,) int64
 * (MultiDiscrete); logstd (D,) (Box). Log-probabilities and entropies are summed over the dimensions in order.
 * Writes dy (n, Y) = d loss / d y and, for a Box head, dlogstd (n, D): each row's d loss / d log-std, which the
 * caller sums over the rows (a fixed-order reduction). Statistics, new_logp and src as ppo_loss_kernel's. */
__global__ void ppo_loss_head_kernel(const LossArgs l) {
    __shared__ double scratch_d[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float stats[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    const int D = l.D, Y = l.Y;
    if (i < l.n) {
        const float* yr = l.y + (long long)i * Y;
        float* dl = l.dy + (long long)i * Y;
        float inv_n = 1.0f / (float)l.n;
        float adv = loss_advantage(l, i);
        float went = (float)((double)l.scalars->ent_coef / (double)l.n);
        /* log-probability and entropy (the gradient needs dlogp, which needs the log-probability first) */
        float logp = 0.0f, entropy = 0.0f;
        if (l.kind == HEAD_BOX) {
            const float* a = reinterpret_cast<const float*>(l.actions) + (long long)i * D;
            for (int d = 0; d < D; d++) {
                float s = l.logstd[d];
                float z = (a[d] - yr[d]) / expf(s);
                logp += -0.5f * z * z - s - (float)HALF_LOG_2PI;
                entropy += (float)(0.5 + HALF_LOG_2PI) + s;
            }
        } else {
            const long long* a = reinterpret_cast<const long long*>(l.actions) + (long long)i * D;
            int offset = 0;
            for (int d = 0; d < D; d++) {
                LogSoftmax s = log_softmax(yr + offset, (int)l.nvec[d]);
                logp += log_prob(s, yr + offset, (int)a[d]);
                entropy += categorical_entropy(s, yr + offset, (int)l.nvec[d]);
                offset += (int)l.nvec[d];
            }
        }
        float dlogp = ppo_policy_row(logp, l.old_logp[i], adv, l.clip_coef, inv_n, stats);
        /* the head's gradient (heads.head_grad) */
        if (l.kind == HEAD_BOX) {
            const float* a = reinterpret_cast<const float*>(l.actions) + (long long)i * D;
            for (int d = 0; d < D; d++) {
                float s = l.logstd[d], std = expf(s);
                float z = (a[d] - yr[d]) / std;
                dl[d] = dlogp * z / std;
                l.dlogstd[(long long)i * D + d] = dlogp * (z * z - 1.0f) - went;
            }
        } else {
            const long long* a = reinterpret_cast<const long long*>(l.actions) + (long long)i * D;
            int offset = 0;
            for (int d = 0; d < D; d++) { /* heads._categorical_grad, dimension by dimension */
                int count = (int)l.nvec[d];
                LogSoftmax s = log_softmax(yr + offset, count);
                categorical_grad(s, categorical_entropy(s, yr + offset, count), yr + offset, count, (int)a[d], dlogp,
                                 went, dl + offset);
                offset += count;
            }
        }
        dl[Y - 1] = ppo_value_row(yr[Y - 1], l.old_values[i], l.returns[i], l.vf_clip_coef, l.vf_coef, inv_n, stats);
        stats[2] = entropy;
        if (l.new_logp) l.new_logp[l.src[i]] = logp;
    }
    if (l.partial) ppo_add_stats(stats, l.n, l.partial, l.counter, l.scalars, scratch_d);
}

} /* extern "C" */
