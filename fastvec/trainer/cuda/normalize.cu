/* normalize.cu: the running normalisation of fastvec/trainer/normalize.py on the GPU: observations
 * (train.norm_obs: the encoder's input, and the statistics' update once per rollout) and reward scaling
 * (train.norm_reward: per-row discounted returns, their running moments, the scaled rewards). Statistics
 * are merged in double as normalize.merge_moments; every sum runs in a fixed order (deterministic).
 * Legend as kernels.cu's, with O = observation size, T = horizon, R = rows. */
#include "common.cu"

#define OBS_NORM_EPS 1e-8f  /* reference.OBS_NORM_EPS */
#define OBS_NORM_CLIP 10.0f /* reference.OBS_NORM_CLIP */
#define REWARD_EPS 1e-8     /* normalize.REWARD_EPS */
#define REWARD_CLIP 10.0    /* normalize.REWARD_CLIP */
#define MOMENT_THREADS 256  /* the moments kernels' block size */

/* normalize.merge_moments for one variable: (mean, var, count) merged with a batch of n values whose mean
 * and population variance are batch_mean, batch_var; all double, the reference's operation order. */
__device__ __forceinline__ void merge_moments(double* mean, double* var, double* count, double n, double batch_mean,
                                              double batch_var) {
    double delta = batch_mean - *mean, total = *count + n;
    double new_mean = *mean + delta * n / total;
    double new_var = (*var * *count + batch_var * n + delta * delta * *count * n / total) / total;
    *mean = new_mean;
    *var = new_var;
    *count = total;
}

/* Element k of block_moments' x: x[k * stride + column] of a float (kind 0) or double (kind 1) array; kind 2:
 * byte observations, element `column` of rollout row k = t * R + r (rollout.cu's step_obs layout, O = stride). */
__device__ __forceinline__ double moments_element(const void* x, int kind, long long k, long long stride, int column,
                                                  int R) {
    if (kind == 1) return ((const double*)x)[k * stride + column];
    if (kind == 0) return (double)((const float*)x)[k * stride + column];
    return (double)obs_byte((const float*)x, k, R, (int)stride, column);
}

/* Mean and population variance (two passes, numpy's var) of the count elements of x (moments_element), times
 * scale, by one block in a fixed order; every thread gets them. */
__device__ void block_moments(const void* x, int kind, long long count, long long stride, int column, int R,
                              double scale, double* mean_out, double* var_out) {
    __shared__ double scratch_d[32];
    __shared__ double shared_mean;
    double s = 0.0;
    for (long long k = threadIdx.x; k < count; k += blockDim.x)
        s += moments_element(x, kind, k, stride, column, R) * scale;
    s = block_sum_d(s, scratch_d);
    if (threadIdx.x == 0) shared_mean = s / (double)count;
    __syncthreads();
    double mean = shared_mean, q = 0.0;
    for (long long k = threadIdx.x; k < count; k += blockDim.x) {
        double v = moments_element(x, kind, k, stride, column, R) * scale;
        q += (v - mean) * (v - mean);
    }
    q = block_sum_d(q, scratch_d);
    __syncthreads();
    if (threadIdx.x == 0) shared_mean = q / (double)count;
    __syncthreads();
    *mean_out = mean;
    *var_out = shared_mean;
}

extern "C" {

/* reference.encoder_input, in place or into x: x (rows, O) = obs * scale, then with norm given (the layout's
 * obs_norm.mean (O), obs_norm.var (O)) clip((x - mean) / sqrt(var + 1e-8), -10, 10), in float as the reference.
 * obs (rows, O): floats, or with obs_bytes one step's bytes (OBS_T unsigned char) at its float address. */
__global__ void encode_obs_kernel(long long rows, int O, int obs_bytes, const float* obs, float scale,
                                  const float* norm, float* x) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * O) return;
    float v = obs_bytes ? (float)reinterpret_cast<const unsigned char*>(obs)[i] : obs[i];
    if (scale != 1.0f) v = v * scale;
    if (norm) {
        int j = (int)(i % O);
        v = fminf(fmaxf((v - norm[j]) / sqrtf(norm[O + j] + OBS_NORM_EPS), -OBS_NORM_CLIP), OBS_NORM_CLIP);
    }
    x[i] = v;
}

/* normalize.update_obs_norm: merge the rollout's observations obs (count, O) (times scale) into the layout's
 * statistics norm = [mean (O) | var (O) | count (1)], float32, one block per observation element j. The count
 * is read here and advanced by obs_norm_count_kernel after (every block merges with the same old count).
 * obs_bytes: the rollout's byte observations (rollout.cu's step_obs layout, R rows a step). */
__global__ void obs_norm_update_kernel(long long count, int O, int R, int obs_bytes, const float* obs, double scale,
                                       float* norm) {
    int j = blockIdx.x;
    double batch_mean, batch_var;
    block_moments(obs, obs_bytes ? 2 : 0, count, O, j, R, scale, &batch_mean, &batch_var);
    if (threadIdx.x != 0) return;
    double mean = (double)norm[j], var = (double)norm[O + j], n = (double)norm[2 * O];
    merge_moments(&mean, &var, &n, (double)count, batch_mean, batch_var);
    norm[j] = (float)mean;
    norm[O + j] = (float)var;
}

/* The statistics' count after obs_norm_update_kernel: count + rows, in double, stored as float32. */
__global__ void obs_norm_count_kernel(long long count, int O, float* norm) {
    norm[2 * O] = (float)((double)norm[2 * O] + (double)count);
}

/* normalize.scale_rewards' returns: per row r, G = gamma G + rewards[t, r] over t, seen[t, r] = G, G reset to 0
 * after a step that ends an episode; returns (R,) carried across rollouts. rewards, dones (T, R) float32;
 * returns (R,) and seen (T, R) double. */
__global__ void reward_returns_kernel(int T, int R, const float* rewards, const float* dones, double gamma,
                                      double* returns, double* seen) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    double g = returns[r];
    for (int t = 0; t < T; t++) {
        long long k = (long long)t * R + r;
        g = g * gamma + (double)rewards[k];
        seen[k] = g;
        g = g * (double)(1.0f - dones[k]);
    }
    returns[r] = g;
}

/* The running moments (mean, var, count) of the returns merged with the rollout's seen (count,), and
 * moments[3] = 1 / sqrt(var + 1e-8), the rewards' scale. One block of MOMENT_THREADS. */
__global__ void reward_moments_kernel(long long count, const double* seen, double* moments) {
    double batch_mean, batch_var;
    block_moments(seen, 1, count, 1, 0, 1, 1.0, &batch_mean, &batch_var);
    if (threadIdx.x != 0) return;
    merge_moments(&moments[0], &moments[1], &moments[2], (double)count, batch_mean, batch_var);
    moments[3] = 1.0 / sqrt(moments[1] + REWARD_EPS);
}

/* rewards (count,) = clip(rewards * scale, -10, 10), computed in double (the reference's float64 scale). */
__global__ void reward_scale_kernel(long long count, float* rewards, const double* moments) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    double v = (double)rewards[i] * moments[3];
    rewards[i] = (float)fmin(fmax(v, -REWARD_CLIP), REWARD_CLIP);
}

} /* extern "C" */
