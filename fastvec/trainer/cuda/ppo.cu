/* ppo.cu: the PPO update around the policy: GAE (with optional V-trace), the epoch's shuffle, the
 * minibatch and recurrent-state gathers, the sums and moments of many rows, the PPO loss with its
 * gradient, explained variance, and the bookkeeping kernels that advance the device scalars between
 * graph replays. Legend as kernels.cu's. */
#include "common.cu"
#include "categorical.cu"
#include "update_args.cu" /* GaeArgs, GatherArgs, LossArgs */

#define GATHER_UNROLL 8  /* obs elements each of its threads loads before storing them: plan.GATHER_UNROLL */

extern "C" {

/* ------------------------------------------------------------------------------------------------
 * GAE */

/* gae (with optional V-trace), one thread per row, backward over T (GaeArgs in update_args.cu). The rollout's
 * bootstrap values are read in place (the decoder output's value column: a stride). With vtrace, ratios =
 * exp(new_logp - old_logp). Writes advantages and returns = advantages + values. */
__global__ void gae_kernel(const GaeArgs g) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= g.R) return;
    float next_value = g.last_value[(long long)r * g.last_value_stride], next_adv = 0.0f;
    for (int t = g.T - 1; t >= 0; t--) {
        long long k = (long long)t * g.R + r;
        float nonterminal = 1.0f - g.dones[k];
        float delta = g.rewards[k] + g.gamma * nonterminal * next_value - g.values[k];
        if (g.vtrace) {
            float ratio = expf(g.new_logp[k] - g.old_logp[k]);
            float rho = fminf(ratio, g.rho_clip);
            float c = g.lam * fminf(ratio, g.c_clip);
            next_adv = rho * delta + g.gamma * c * nonterminal * next_adv;
        } else {
            next_adv = delta + g.gamma_lambda * nonterminal * next_adv;
        }
        g.adv[k] = next_adv;
        g.returns[k] = next_adv + g.values[k];
        next_value = g.values[k];
    }
}

/* ------------------------------------------------------------------------------------------------
 * UPDATE: minibatch assembly */

/* A random bijection of [0, count): a 4-round Feistel network on the next even power of two,
 * cycle-walked back into range. perm[i] for every i < count, keyed by (key, update, epoch). */
__device__ unsigned int feistel(unsigned int x, int half_bits, unsigned long long key) {
    unsigned int mask = (1u << half_bits) - 1u;
    unsigned int left = x >> half_bits, right = x & mask;
    for (int round = 0; round < 4; round++) {
        unsigned int f = (unsigned int)mix64(key + (unsigned long long)round * 0xD1B54A32D192ED03ULL + right) & mask;
        unsigned int next = left ^ f;
        left = right;
        right = next;
    }
    return (left << half_bits) | right;
}

__global__ void shuffle_kernel(int count, int half_bits, unsigned long long seed_key, int epoch,
                               const TrainScalars* scalars, int* perm) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    unsigned long long key = mix64(seed_key ^ ((unsigned long long)scalars->update * 0x9E3779B97F4A7C15ULL +
                                               (unsigned long long)epoch * 0xBF58476D1CE4E5B9ULL));
    unsigned int x = (unsigned int)i;
    do { x = feistel(x, half_bits, key); } while (x >= (unsigned int)count);
    perm[i] = (int)x;
}

/* Copy minibatch `first / Bm` (sequences perm[first .. first + Bm)) out of the rollout buffers (GatherArgs in
 * update_args.cu). Sequence q is (segment s, row r) = (q / R, q % R): rollout steps s*K .. s*K + K - 1 of row r.
 * Rollout buffers are (T, R, ...); minibatch buffers (K, Bm, ...); mb_src (K, Bm) keeps each row's
 * rollout index for scattering results back. Launched with at least K * Bm threads (plan.gather_threads: more
 * where the observations are wide, so a small minibatch's copy is spread over the whole GPU, not over its few
 * rows' blocks): thread i < K * Bm copies row i's scalars, and every thread copies observation elements,
 * grid-stride, each finding its row's source from perm. A row's action is action_words
 * 32-bit words (1: a Discrete int32; D: a Box head's float32 values; 2D: a MultiDiscrete head's int64s),
 * copied as they are: actions (T, R, words) -> mb_actions (K, Bm, words). obs_bytes: the rollout's observations
 * are bytes (an env's OBS_T unsigned char, each step's R * O of them at float offset t * R * O: rollout.cu's
 * step_obs), gathered as floats of their values.
 * With adv_moments given, also the minibatch advantages' mean and population standard deviation
 * (moments_finish_kernel's), in the same launch: per-block (sum, sum of squares) in partial (blocks, 2),
 * finished by the last block (last_block). */
__global__ void gather_minibatch_kernel(const GatherArgs g) {
    __shared__ double scratch_d[32];
    const int K = g.K, Bm = g.Bm, R = g.R, O = g.O, first = g.first;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, rows = (long long)K * Bm;
    double a = 0.0;
    if (i < rows) {
        int k = (int)(i / Bm), c = (int)(i % Bm);
        int q = g.perm[first + c];
        int s = q / R, r = q % R;
        long long src = (long long)(s * K + k) * R + r;
        g.mb_starts[i] = g.starts[src];
        for (int w = 0; w < g.action_words; w++)
            g.mb_actions[i * g.action_words + w] = g.actions[src * g.action_words + w];
        g.mb_logp[i] = g.logp[src];
        g.mb_values[i] = g.values[src];
        float v = g.adv[src];
        g.mb_adv[i] = v;
        g.mb_returns[i] = g.returns[src];
        g.mb_src[i] = (int)src;
        a = v;
    }
    /* Observations element by element over the whole grid, so that a warp's accesses are consecutive (a
     * thread walking its own row would touch 32 rows' cache lines per access), with GATHER_UNROLL loads in
     * flight before their stores, so the copy is not a memory round trip per element. */
    long long elements = rows * O, stride = (long long)gridDim.x * blockDim.x;
    for (long long e0 = i; e0 < elements; e0 += GATHER_UNROLL * stride) {
        float v[GATHER_UNROLL];
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; u++) {
            long long e = e0 + u * stride;
            if (e < elements) { /* 32-bit index math (elements < 2^32, plan.gather_threads): 64-bit division
                                  * is a long software routine on the GPU */
                unsigned row = (unsigned)e / (unsigned)O, j = (unsigned)e - row * (unsigned)O;
                unsigned k = row / (unsigned)Bm, q = (unsigned)g.perm[first + (int)(row - k * (unsigned)Bm)];
                unsigned s = q / (unsigned)R, t = s * (unsigned)K + k, r = q - s * (unsigned)R;
                v[u] = g.obs_bytes ? obs_byte_at(g.obs, t, r, R, O, (int)j) : g.obs[((long long)t * R + r) * O + j];
            }
        }
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; u++) {
            long long e = e0 + u * stride;
            if (e < elements) g.mb_obs[e] = v[u];
        }
    }
    if (!g.adv_moments) return;
    double sum = block_sum_d(a, scratch_d), squares = block_sum_d(a * a, scratch_d);
    if (threadIdx.x == 0) {
        g.partial[2 * blockIdx.x] = sum;
        g.partial[2 * blockIdx.x + 1] = squares;
    }
    if (!last_block(g.counter)) return;
    double s = 0.0, q = 0.0;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x) {
        s += ((volatile double*)g.partial)[2 * b];
        q += ((volatile double*)g.partial)[2 * b + 1];
    }
    s = block_sum_d(s, scratch_d);
    q = block_sum_d(q, scratch_d);
    if (threadIdx.x != 0) return;
    long long n = (long long)K * Bm;
    double mean = s / n, var = q / n - mean * mean;
    g.adv_moments[0] = (float)mean;
    g.adv_moments[1] = (float)sqrt(var > 0.0 ? var : 0.0);
}

/* The recurrent state entering each minibatch sequence: segment_state (S, Ls, R, H) ->
 * mb_state (Ls, Bm, H). One thread per element. */
__global__ void gather_state_kernel(int Ls, int Bm, int R, int H, int first, const int* perm,
                                    const float* segment_state, float* mb_state) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= Ls * Bm * H) return;
    int j = i % H, c = (i / H) % Bm, l = i / (H * Bm);
    int q = perm[first + c];
    int s = q / R, r = q % R;
    mb_state[i] = segment_state[(((long long)s * Ls + l) * R + r) * H + j];
}

/* Reductions over many rows: a fixed grid of blocks writes per-block partial sums (in double) and a
 * one-block finishing kernel adds them in a fixed order, so results are deterministic. (The minibatch's
 * own reductions finish in the same launch, last_block; these two launches serve where a collective
 * sums the partials across GPUs in between, and the once-per-update explained variance.)
 * sums_partial: for each of k arrays of n (x is (k, n)), partial[block][a] = (sum x, sum x^2). */
__global__ void sums_partial_kernel(long long n, int k, const float* x, double* partial) {
    __shared__ double scratch_d[32];
    for (int a = 0; a < k; a++) {
        double s = 0.0, q = 0.0;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
             i += (long long)gridDim.x * blockDim.x) {
            double v = x[(long long)a * n + i];
            s += v;
            q += v * v;
        }
        for (int pass = 0; pass < 2; pass++) {
            double v = pass == 0 ? s : q;
            for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
            __syncthreads();
            if ((threadIdx.x & 31) == 0) scratch_d[threadIdx.x >> 5] = v;
            __syncthreads();
            if (threadIdx.x == 0) {
                double total = 0.0;
                for (int w = 0; w < (int)(blockDim.x >> 5); w++) total += scratch_d[w];
                partial[((long long)blockIdx.x * k + a) * 2 + pass] = total;
            }
        }
    }
}

/* Sum over the G blocks of partial (G, k, 2), in order: out (k, 2). */
__device__ void finish_sums(int blocks, int k, const double* partial, double* out) {
    for (int a = 0; a < k; a++) {
        double s = 0.0, q = 0.0;
        for (int b = 0; b < blocks; b++) {
            s += partial[((long long)b * k + a) * 2];
            q += partial[((long long)b * k + a) * 2 + 1];
        }
        out[2 * a] = s;
        out[2 * a + 1] = q;
    }
}

/* Mean and population standard deviation of the minibatch advantages: out = (mean, std). */
__global__ void moments_finish_kernel(int blocks, const double* partial, long long n, float* out) {
    double m[2];
    finish_sums(blocks, 1, partial, m);
    double mean = m[0] / n, var = m[1] / n - mean * mean;
    out[0] = (float)mean;
    out[1] = (float)sqrt(var > 0.0 ? var : 0.0);
}

/* One row's clipped policy-gradient terms, every head's: returns d loss / d logp; writes stats[0] (the clipped
 * policy loss), stats[3] (approx kl) and stats[4] (clipped or not). inv_n: 1 / the minibatch's rows. */
__device__ float ppo_policy_row(float logp, float old_logp, float adv, float clip_coef, float inv_n, float* stats) {
    float log_ratio = logp - old_logp;
    float ratio = expf(log_ratio);
    float lo = 1.0f - clip_coef, hi = 1.0f + clip_coef;
    float pg_unclipped = -adv * ratio;
    float pg_clipped = -adv * fminf(fmaxf(ratio, lo), hi);
    int inside = ratio > lo && ratio < hi;
    float dratio = (pg_unclipped >= pg_clipped || inside) ? -adv * inv_n : 0.0f;
    stats[0] = fmaxf(pg_unclipped, pg_clipped);
    stats[3] = (ratio - 1.0f) - log_ratio;
    stats[4] = inside ? 0.0f : 1.0f;
    return dratio * ratio;
}

/* One row's clipped value loss: returns d loss / d v; writes stats[1] (0.5 * the larger squared error). */
__device__ float ppo_value_row(float v, float old_v, float ret, float vf_clip_coef, float vf_coef, float inv_n,
                               float* stats) {
    float v_clipped = old_v + fminf(fmaxf(v - old_v, -vf_clip_coef), vf_clip_coef);
    float us = (v - ret) * (v - ret), cs = (v_clipped - ret) * (v_clipped - ret);
    float dv = us >= cs ? v - ret : (fabsf(v - old_v) < vf_clip_coef ? v_clipped - ret : 0.0f);
    stats[1] = 0.5f * fmaxf(us, cs);
    return dv * (vf_coef * inv_n);
}

/* Every thread of the block: adds the minibatch means of the rows' five loss terms to scalars->stat (per-block
 * sums in double in partial (blocks, 5), finished by the last block). */
__device__ void ppo_add_stats(const float* stats, int n, double* partial, unsigned int* counter,
                              TrainScalars* scalars, double* scratch_d) {
    for (int k = 0; k < 5; k++) {
        double total = block_sum_d((double)stats[k], scratch_d);
        if (threadIdx.x == 0) partial[5LL * blockIdx.x + k] = total;
    }
    if (!last_block(counter)) return;
    for (int k = 0; k < 5; k++) {
        double total = 0.0;
        for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x)
            total += ((volatile double*)partial)[5LL * b + k];
        total = block_sum_d(total, scratch_d);
        if (threadIdx.x == 0) scalars->stat[k] += total / n;
    }
}

/* ------------------------------------------------------------------------------------------------
 * PPO LOSS: forward and backward in one pass, one thread per row (LossArgs in update_args.cu).
 * y (n, A + 1) decoder output (logits, value); actions, old_logp, old_values, adv, returns (n,);
 * adv_moments (mean, std) or NULL (no normalisation). Writes dy (n, A + 1) = d loss / d y.
 * With partial given, also adds the minibatch means of the five per-row loss terms (clipped policy
 * loss, 0.5 * max value loss, entropy, approx kl, clipped flag) to scalars->stat[0..5), in the same
 * launch: per-block sums in double in partial (blocks, 5), finished by the last block (last_block).
 * With new_logp given, scatters each row's new log-probability to new_logp[src[i]]. */

/* A row's advantage, normalised with the minibatch's moments where they are given, then times its sequence's
 * importance weight where weights are given (a positive weight on the policy-loss term, reference.ppo_loss's
 * pg_weights). */
__device__ __forceinline__ float loss_advantage(const LossArgs& l, int i) {
    float adv = l.adv[i];
    if (l.adv_moments) adv = (adv - l.adv_moments[0]) / (l.adv_moments[1] + 1e-8f);
    if (l.weights) adv = adv * l.weights[i % l.Bm];
    return adv;
}

__device__ __forceinline__ void ppo_loss_row(const LossArgs& l, int i, float ent_coef, float* stats) {
    int A = l.Y - 1;
    const float* logits = l.y + (long long)i * (A + 1);
    float* dl = l.dy + (long long)i * (A + 1);
    float inv_n = 1.0f / (float)l.n;
    float adv = loss_advantage(l, i);

    LogSoftmax s = log_softmax(logits, A);
    float entropy = categorical_entropy(s, logits, A);
    int action = l.actions[i];
    float logp = log_prob(s, logits, action);
    float dlogp = ppo_policy_row(logp, l.old_logp[i], adv, l.clip_coef, inv_n, stats);
    categorical_grad(s, entropy, logits, A, action, dlogp, ent_coef * inv_n, dl);

    dl[A] = ppo_value_row(logits[A], l.old_values[i], l.returns[i], l.vf_clip_coef, l.vf_coef, inv_n, stats);
    stats[2] = entropy;
    if (l.new_logp) l.new_logp[l.src[i]] = logp;
}

__global__ void ppo_loss_kernel(const LossArgs l) {
    __shared__ double scratch_d[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float stats[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (i < l.n) ppo_loss_row(l, i, l.scalars->ent_coef, stats);
    if (l.partial) ppo_add_stats(stats, l.n, l.partial, l.counter, l.scalars, scratch_d);
}

/* explained_variance of values against returns, from the sums of [adv; returns] (2, count) (reduced by
 * sums_partial_kernel): 1 - var(returns - values) / var(returns), NaN when var(returns) is 0. */
__global__ void explained_variance_finish_kernel(int blocks, const double* partial, long long count,
                                                 TrainScalars* scalars) {
    double m[4];
    finish_sums(blocks, 2, partial, m);
    double mean_a = m[0] / count, var_a = m[1] / count - mean_a * mean_a;
    double mean_r = m[2] / count, var_r = m[3] / count - mean_r * mean_r;
    scalars->stat[STAT_EXPLAINED_VAR] = var_r <= 0.0 ? nan("") : 1.0 - var_a / var_r;
}

/* ------------------------------------------------------------------------------------------------
 * Bookkeeping between graph replays */

/* Zero the per-update statistics (at the start of every captured update). */
__global__ void begin_update_kernel(TrainScalars* scalars) {
    for (int k = 0; k < 8; k++) scalars->stat[k] = 0.0;
}

/* The reference's annealed and ent_coef_at for the next update, after this one: update += 1, the learning
 * rate and the entropy bonus (rounded to float32 as the reference rounds it). */
__global__ void schedule_kernel(TrainScalars* scalars, double base_lr, int num_updates, int anneal_lr,
                                double base_ent, int anneal_ent) {
    int update = scalars->update + 1;
    scalars->update = update;
    double frac = 1.0 - (double)update / (double)(num_updates > 1 ? num_updates : 1);
    if (frac < 0.0) frac = 0.0;
    scalars->lr = anneal_lr ? base_lr * frac : base_lr;
    scalars->ent_coef = (float)(anneal_ent ? base_ent * frac : base_ent);
}

/* The policy-step counter the sampling RNG reads, advanced once per rollout. */
__global__ void advance_rollout_kernel(TrainScalars* scalars, int steps) { scalars->rollout_steps += steps; }

} /* extern "C" */
