/* prio.cu: prioritised choice of training sequences (train.prio_alpha > 0), reference.prioritized_draws as one
 * block: each sequence's priority from the advantages, their running sums, the epoch's Q draws into perm and the
 * draws' importance weights. The powers are priority.py's portable_log and portable_exp (IEEE operations in its
 * order; the build's --fmad=false keeps them unfused) and the running sums add in priority_sums' chunk order, so the
 * draws are the reference's bit for bit. Legend as kernels.cu's; Q = S * R sequences, sequence q = (segment q / R,
 * row q % R). */
#pragma once
#include "common.cu"

#define PRIO_THREADS 1024 /* priority.PRIO_CHUNKS: a thread sums one chunk of the priorities; 32 groups of 32 */
#define PRIO_LN2 0.6931471805599453
#define PRIO_SQRT_HALF 0.7071067811865476
#define PRIO_LOG_TERMS 10
#define PRIO_EXP_TERMS 14
#define PRIO_SALT 0x5052494F52495459ULL

/* priority.portable_log: log(x) of x > 0 by 2 atanh(s) on the mantissa in [sqrt(1/2), sqrt(2)). */
__device__ double prio_log(double x) {
    int e;
    double m = frexp(x, &e);
    if (m < PRIO_SQRT_HALF) {
        m = m * 2.0;
        e -= 1;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double series = 1.0 / (2 * PRIO_LOG_TERMS + 1);
    for (int k = PRIO_LOG_TERMS - 1; k >= 0; k--) series = series * s2 + 1.0 / (2 * k + 1);
    return (double)e * PRIO_LN2 + 2.0 * s * series;
}

/* priority.portable_exp: 2^n times exp(g)'s Taylor series, z = n ln2 + g, z clamped to [-745, 710]. */
__device__ double prio_exp(double z) {
    z = z < -745.0 ? -745.0 : (z > 710.0 ? 710.0 : z);
    double n = floor(z / PRIO_LN2 + 0.5);
    double g = z - n * PRIO_LN2;
    double r = 1.0;
    for (int k = PRIO_EXP_TERMS; k > 0; k--) r = 1.0 + g * r / k;
    return ldexp(r, (int)n);
}

/* priority.sequence_priorities for sequence q: (sum_t |A|)^alpha, the sum in float32 in time order; 0 unless
 * the sum is > 0. adv (T, R). */
__device__ double prio_priority(const float* adv, int q, int K, int R, double alpha) {
    int s = q / R, r = q % R;
    float total = 0.0f;
    for (int t = 0; t < K; t++) total += fabsf(adv[((long long)s * K + t) * R + r]);
    return total > 0.0f ? prio_exp(alpha * prio_log((double)total)) : 0.0;
}

/* The largest v over the block (max is exact in any order); every thread gets it. scratch: 32 doubles. */
__device__ double prio_block_max(double v, double* scratch) {
    for (int off = 16; off > 0; off >>= 1) {
        double o = __shfl_down_sync(0xffffffffu, v, off);
        v = o > v ? o : v;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* scratch may still be read */
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double m = scratch[0];
        for (int w = 1; w < (int)(blockDim.x >> 5); w++) m = scratch[w] > m ? scratch[w] : m;
        scratch[0] = m;
    }
    __syncthreads();
    return scratch[0];
}

extern "C" {

/* The epoch's prioritised draws: perm (Q,) the sequences drawn (with replacement, the draws in minibatch order)
 * and weights (Q,) their importance weights (Q p)^-beta over the largest of the epoch's, from adv (T, R) (the
 * update's advantages, K steps a sequence); beta = beta0 + (1 - beta0) * min(update / num_updates, 1) with the
 * update from scalars. scratch (3, Q) float64: the priorities, their running sums, then each draw's unnormalised
 * weight (computed once, normalised after the block's maximum). One block of PRIO_THREADS:
 * thread b sums chunk b of ceil(Q / PRIO_THREADS) priorities; the chunks' offsets are the sums of the chunks before
 * them within their group of 32 (a thread of warp 0 a group) plus the groups' before (thread 0), so no thread adds
 * more than 32 in a row (priority.priority_sums' order); then every thread draws j = b, b + PRIO_THREADS, ...:
 * u_j * total's place in the sums by bisection, total the last sum. */
__global__ void __launch_bounds__(PRIO_THREADS) prio_kernel(const float* adv, int K, int R, int Q, double alpha,
                                                            double beta0, int num_updates,
                                                            unsigned long long shuffle_key, int epoch,
                                                            const TrainScalars* scalars, double* scratch, int* perm,
                                                            float* weights) {
    __shared__ double chunk[PRIO_THREADS]; /* each chunk's total, then its offset within its group */
    __shared__ double group[32];           /* each group's total, then its offset; then prio_block_max's */
    const int b = threadIdx.x, width = (Q + PRIO_THREADS - 1) / PRIO_THREADS;
    const int lo = b * width, hi = min(lo + width, Q);
    double* priority = scratch;
    double* sums = scratch + Q;
    double* drawn_weight = scratch + 2 * (long long)Q;
    double run = 0.0;
    for (int i = lo; i < hi; i++) {
        double q = prio_priority(adv, i, K, R, alpha);
        priority[i] = q;
        run += q;
        sums[i] = run;
    }
    chunk[b] = run;
    __syncthreads();
    if (b < 32) {
        double g = 0.0;
        for (int c = 32 * b; c < 32 * b + 32; c++) {
            double t = chunk[c];
            chunk[c] = g;
            g += t;
        }
        group[b] = g;
    }
    __syncthreads();
    if (b == 0) {
        double o = 0.0;
        for (int l = 0; l < 32; l++) {
            double t = group[l];
            group[l] = o;
            o += t;
        }
    }
    __syncthreads();
    const double offset = group[b >> 5] + chunk[b];
    for (int i = lo; i < hi; i++) sums[i] = offset + sums[i];
    __syncthreads();

    const double total = sums[Q - 1];
    const int update = scalars->update;
    const unsigned long long key = mix64(shuffle_key ^ PRIO_SALT ^ ((unsigned long long)update * 0x9E3779B97F4A7C15ULL +
                                                                    (unsigned long long)epoch * 0xBF58476D1CE4E5B9ULL));
    double frac = (double)update / (double)(num_updates > 1 ? num_updates : 1);
    const double beta = beta0 + (1.0 - beta0) * (frac < 1.0 ? frac : 1.0);
    double largest = 0.0;
    for (int j = b; j < Q; j += PRIO_THREADS) {
        double u = (double)(mix64(key + (unsigned long long)j * 0x9E3779B97F4A7C15ULL) >> 11) * 0x1p-53;
        int pick;
        if (!(total > 0.0)) { /* every priority 0: uniform draws, weights 1 */
            pick = min((int)floor(u * Q), Q - 1);
        } else {
            double target = u * total;
            int l = 0, h = Q - 1; /* the first sum > target (the last sequence if none is) */
            while (l < h) {
                int mid = (l + h) >> 1;
                if (sums[mid] > target) h = mid;
                else l = mid + 1;
            }
            pick = l;
            double w = prio_exp(-beta * prio_log((double)Q * (priority[pick] / total)));
            largest = w > largest ? w : largest;
            drawn_weight[j] = w;
        }
        perm[j] = pick;
    }
    const double top = prio_block_max(largest, group);
    for (int j = b; j < Q; j += PRIO_THREADS) {
        if (!(total > 0.0)) {
            weights[j] = 1.0f;
            continue;
        }
        weights[j] = (float)(drawn_weight[j] / top);
    }
}

} /* extern "C" */
