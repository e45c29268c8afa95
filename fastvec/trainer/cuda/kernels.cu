/* kernels.cu: the fused CUDA trainer's math, one kernel per function of fastvec/trainer/reference.py
 * and named after it (mingru_forward -> mingru_forward_kernel, ...), so the two files read side by
 * side; tests/test_trainer_cuda.py checks every kernel against its reference on random inputs.
 * Env-independent: rollout.cu adds the kernel that samples actions and steps an env.
 * GEMMs (encoder, layers, decoder, their gradients, Newton-Schulz) are cuBLAS calls (cublas.py);
 * the kernels here are the element-wise and per-row work between them, fused where they meet.
 *
 * Legend: K = time steps of a sequence, B = sequences, n = K * B rows (row = t * B + b),
 * H = hidden, W = layer width (2H or 3H for MinGRU, H for an MLP), A = actions, Y = A + 1
 * (decoder outputs: A logits, then the value), P = parameters. Row-major float32 throughout, except
 * that with train.precision = "bf16" a MinGRU update keeps its layers' GEMM operands and results in
 * bfloat16 (the _bf16 kernels): the update moves those activations at every step, fp32 elsewhere.
 * Every kernel is deterministic (fixed reduction orders), so fp32 training is bitwise repeatable;
 * the one exception, episode bookkeeping in rollout.cu, feeds logs only.
 */
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

#define REDUCE_THREADS 1024
#define MAX_ACTIONS 64
#define GATHER_THREADS 256  /* gather_minibatch_kernel's block size: device.THREADS */
#define GATHER_UNROLL 8     /* obs elements each of its threads loads before storing them */

/* ------------------------------------------------------------------------------------------------
 * Activations, as in reference.py (the tanh form of the sigmoid, like the reference). */

__device__ __forceinline__ float sigmoidf_ref(float x) { return 0.5f * (1.0f + tanhf(0.5f * x)); }

/* MinGRU's candidate g(x) = x + 0.5 for x >= 0, sigmoid(x) below, and its derivative. */
__device__ __forceinline__ float mingru_g(float x) { return x >= 0.0f ? x + 0.5f : sigmoidf_ref(x); }
__device__ __forceinline__ float mingru_g_grad(float x) {
    if (x >= 0.0f) return 1.0f;
    float s = sigmoidf_ref(x);
    return s * (1.0f - s);
}

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

#include "newton_schulz.cu"

extern "C" {

/* ------------------------------------------------------------------------------------------------
 * Small utilities */

/* x[i] = value for i < n. */
__global__ void fill_kernel(float* x, long long n, float value) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}

/* y (rows, cols) += bias (cols): the bias of a linear layer whose GEMM wrote y; with y_bf16 given, also
 * the result's bfloat16 copy (the next bf16 GEMM's operand). */
__global__ void add_bias_kernel(float* y, const float* bias, long long rows, int cols, bf16* y_bf16) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float v = y[i] + bias[i % cols];
    y[i] = v;
    if (y_bf16) y_bf16[i] = __float2bfloat16(v);
}

/* dst (n,) = bfloat16(src): the weights' bf16 copy for the bf16 GEMMs. */
__global__ void to_bf16_kernel(long long n, const float* src, bf16* dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = __float2bfloat16(src[i]);
}

/* ------------------------------------------------------------------------------------------------
 * LAYERS */

/* mingru_forward: one MinGRU layer over K steps for B sequences, one thread per (b, j), walking
 * time in order (the reference scans in parallel; the recurrence is the same).
 * x (K, B, H) layer input; pre (K, B, W) = x @ w.T (without the bias, which this adds; the backward
 * adds it again rather than this kernel storing it back: a third of the traffic less);
 * starts (K, B): 1 where step t begins an episode (incoming state zeroed);
 * h0 (B, H) state before step 0; h (K, B, H) states (kept for the backward; NULL in the rollout); out (K, B, H);
 * h_last (B, H) the state after step K-1 (may be h0: each thread reads before it writes).
 * (Issuing several steps' loads together measured no faster on an H200 at either of Breakout's shapes.) */
} /* extern "C": the template has C++ linkage */
template <typename PreT>
__device__ __forceinline__ void mingru_forward(int K, int B, int H, int highway, const PreT* __restrict__ x,
                                               const PreT* __restrict__ pre, const float* __restrict__ bias,
                                               const float* __restrict__ starts, const float* h0,
                                               PreT* __restrict__ h, float* __restrict__ out, float* h_last,
                                               bf16* __restrict__ out_bf16) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * H) return;
    int b = i / H, j = i % H, W = (highway ? 3 : 2) * H;
    float bz = bias[j], bc = bias[H + j], bs = highway ? bias[2 * H + j] : 0.0f;
    float state = h0[i];
    for (int t = 0; t < K; t++) {
        long long row = (long long)t * B + b;
        const PreT* p = pre + row * W + j;
        float zp = load_as_float(p), cp = load_as_float(p + H);  /* the step's loads first, as in the backward */
        float sp = highway ? load_as_float(p + 2 * H) : 0.0f;
        float xv = highway ? load_as_float(x + row * H + j) : 0.0f, keep = 1.0f - starts[row];
        zp += bz;
        cp += bc;
        float z = sigmoidf_ref(zp), c = mingru_g(cp);
        float decay = (1.0f - z) * keep;
        state = decay * state + z * c;
        if (h) store_float(h + row * H + j, state);
        float o = state;
        if (highway) {
            float s = sigmoidf_ref(sp + bs);
            o = s * state + (1.0f - s) * xv;
        }
        out[row * H + j] = o;
        if (out_bf16) out_bf16[row * H + j] = __float2bfloat16(o);
    }
    h_last[i] = state;
}

extern "C" {
#define MINGRU_FORWARD_PARAMS(PreT)                                                                             \
    int K, int B, int H, int highway, const PreT *x, const PreT *pre, const float *bias, const float *starts,    \
        const float *h0, PreT *h, float *out, float *h_last, bf16 *out_bf16
#define MINGRU_FORWARD_ARGS K, B, H, highway, x, pre, bias, starts, h0, h, out, h_last, out_bf16
/* out_bf16 (K, B, H) or NULL: a bfloat16 copy of out, the next layer's bf16 GEMM operand. */
__global__ void mingru_forward_kernel(MINGRU_FORWARD_PARAMS(float)) { mingru_forward(MINGRU_FORWARD_ARGS); }
/* The same with x, pre and h in bfloat16 (train.precision = "bf16": the layer input's bf16 copy, the layer
 * GEMM's bf16 result, the states kept for the backward). */
__global__ void mingru_forward_bf16_kernel(MINGRU_FORWARD_PARAMS(bf16)) { mingru_forward(MINGRU_FORWARD_ARGS); }

/* mingru_backward: dout (K, B, H) -> dpre (K, B, W) and the element-wise part of dx (K, B, H)
 * (the highway's (1 - s) * dout; the caller adds dpre @ w with a GEMM). pre and bias as the forward's.
 * Reverse time per (b, j): the total gradient into h_t is dh_t + decay_{t+1} * (that of h_{t+1}).
 * No gradient into h0. dbias_seq (B, W): each sequence's sum of dpre over its K steps, so that the
 * bias gradient is a sum over B rows rather than K * B (a GEMM reading dpre again took 36 us of every
 * layer's backward at Breakout's 65,536 x 384 on the H200). */
} /* extern "C": the template has C++ linkage */
template <typename PreT>
__device__ __forceinline__ void mingru_backward(int K, int B, int H, int highway, const float* __restrict__ dout,
                                                const PreT* __restrict__ x, const PreT* __restrict__ pre,
                                                const float* __restrict__ bias, const float* __restrict__ starts,
                                                const float* __restrict__ h0, const PreT* __restrict__ h,
                                                PreT* __restrict__ dpre, float* __restrict__ dx,
                                                float* __restrict__ dbias_seq) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * H) return;
    int b = i / H, j = i % H, W = (highway ? 3 : 2) * H;
    float bz = bias[j], bc = bias[H + j], bs = highway ? bias[2 * H + j] : 0.0f;
    float dh_total = 0.0f, next_decay = 0.0f, sum_z = 0.0f, sum_c = 0.0f, sum_s = 0.0f;
    for (int t = K - 1; t >= 0; t--) {
        long long row = (long long)t * B + b;
        const PreT* p = pre + row * W + j;
        PreT* dp = dpre + row * W + j;
        /* Every load of the step before any math: with the loads after the sigmoids this kernel took 66 us
         * at Breakout's minibatch on the H200, against 30 us for a kernel loading first (bench of 18a79e6). */
        float zp = load_as_float(p), cp = load_as_float(p + H), sp = highway ? load_as_float(p + 2 * H) : 0.0f;
        float xv = highway ? load_as_float(x + row * H + j) : 0.0f;
        float keep = 1.0f - starts[row];
        float hv = load_as_float(h + row * H + j);
        float h_prev = t > 0 ? load_as_float(h + (row - B) * H + j) : h0[i];
        float d = dout[row * H + j], dh;
        zp += bz;
        cp += bc;
        float z = sigmoidf_ref(zp), c = mingru_g(cp);
        if (highway) {
            float s = sigmoidf_ref(sp + bs);
            dh = d * s;
            float ds = d * (hv - xv) * s * (1.0f - s);
            store_float(dp + 2 * H, ds);
            sum_s += ds;
            dx[row * H + j] = d * (1.0f - s);
        } else {
            dh = d;
            dx[row * H + j] = 0.0f;
        }
        dh_total = dh + next_decay * dh_total;
        float ddecay = dh_total * h_prev;
        float dz = dh_total * c - ddecay * keep;
        float dzp = dz * z * (1.0f - z), dcp = dh_total * z * mingru_g_grad(cp);
        store_float(dp, dzp);
        store_float(dp + H, dcp);
        sum_z += dzp;
        sum_c += dcp;
        next_decay = (1.0f - z) * keep;
    }
    float* db = dbias_seq + (long long)b * W + j;
    db[0] = sum_z;
    db[H] = sum_c;
    if (highway) db[2 * H] = sum_s;
}

extern "C" {
#define MINGRU_BACKWARD_PARAMS(PreT)                                                                            \
    int K, int B, int H, int highway, const float *dout, const PreT *x, const PreT *pre, const float *bias,      \
        const float *starts, const float *h0, const PreT *h, PreT *dpre, float *dx, float *dbias_seq
#define MINGRU_BACKWARD_ARGS K, B, H, highway, dout, x, pre, bias, starts, h0, h, dpre, dx, dbias_seq
__global__ void mingru_backward_kernel(MINGRU_BACKWARD_PARAMS(float)) { mingru_backward(MINGRU_BACKWARD_ARGS); }
/* The same with x, pre, h and dpre in bfloat16 (the forward's; dbias_seq sums dpre's unrounded values). */
__global__ void mingru_backward_bf16_kernel(MINGRU_BACKWARD_PARAMS(bf16)) { mingru_backward(MINGRU_BACKWARD_ARGS); }

/* mlp_forward: out = relu(pre + bias); pre and out (rows, H). */
__global__ void mlp_forward_kernel(long long rows, int H, const float* pre, const float* bias, float* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * H) out[i] = fmaxf(pre[i] + bias[i % H], 0.0f);
}

/* mlp_backward: dpre = dout * (out > 0); the caller does dx = dpre @ w and the weight GEMMs. */
__global__ void mlp_backward_kernel(long long count, const float* dout, const float* out, float* dpre) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) dpre[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

/* bias_grad_kernel's sum over its row lanes: every thread passes its lane's sum `acc` for column c0 of the
 * pass; the adder (lane 0) gets the lanes' total in lane order (the others 0). Called by every thread. */
__device__ __forceinline__ double bias_grad_lanes_sum(double acc, double* lanes, bool adder, int row_lanes, int c_pass,
                                                      int c0) {
    __syncthreads();
    lanes[threadIdx.x] = acc;
    __syncthreads();
    double sum = 0.0;
    if (adder)
        for (int l = 0; l < row_lanes; l++) sum += lanes[l * c_pass + c0];
    return sum;
}

/* A linear layer's bias gradient db (cols,) = the column sums of dpre (rows, cols); with `out` given
 * (an MLP layer), first mlp_backward: dpre = dout * (out > 0), written to dpre. One launch (last_block):
 * block b sums rows [b * rows / G, (b + 1) * rows / G) into partial (G, cols) in double, the finishing
 * block adds the G partials of each column in a fixed order. 256 threads as (256 / c) row lanes x c columns,
 * c = min(cols, 256), so a warp reads consecutive addresses. */
__global__ void bias_grad_kernel(long long rows, int cols, const float* dout, const float* out, float* dpre,
                                 double* partial, unsigned int* counter, float* db) {
    __shared__ double lanes[256];
    int c_pass = cols < (int)blockDim.x ? cols : (int)blockDim.x;
    int row_lanes = blockDim.x / c_pass;
    int c0 = threadIdx.x % c_pass, lane = threadIdx.x / c_pass;
    long long r0 = rows * blockIdx.x / gridDim.x, r1 = rows * (blockIdx.x + 1) / gridDim.x;
    for (int tile = 0; tile < cols; tile += c_pass) {
        int c = tile + c0;
        double acc = 0.0;
        if (lane < row_lanes && c < cols) {
            for (long long r = r0 + lane; r < r1; r += row_lanes) {
                long long i = r * cols + c;
                float v = dout[i];
                if (out) {
                    v = out[i] > 0.0f ? v : 0.0f;
                    dpre[i] = v;
                }
                acc += v;
            }
        }
        bool adder = lane == 0 && c < cols;
        double sum = bias_grad_lanes_sum(acc, lanes, adder, row_lanes, c_pass, c0);
        if (adder) partial[(long long)blockIdx.x * cols + c] = sum;
    }
    if (!last_block(counter)) return;
    /* The finish in the same lanes x columns layout: lane l adds partials l, l + lanes, ... (L2 loads, many
     * in flight), then lane 0 adds the lanes in order; a fixed order, so still deterministic. One thread
     * per column adding all G partials with volatile loads took ~13 us. */
    for (int tile = 0; tile < cols; tile += c_pass) {
        int c = tile + c0;
        double acc = 0.0;
        if (lane < row_lanes && c < cols)
            for (int b = lane; b < (int)gridDim.x; b += row_lanes) acc += __ldcg(partial + (long long)b * cols + c);
        bool adder = lane == 0 && c < cols;
        double sum = bias_grad_lanes_sum(acc, lanes, adder, row_lanes, c_pass, c0);
        if (adder) db[c] = (float)sum;
    }
}

/* ------------------------------------------------------------------------------------------------
 * SAMPLING */

/* The policy's uniform for row r at policy step `step`: counter-based (splitmix64 as fastvec.h),
 * keyed by the run's seed, so it needs no state and any step can be recomputed on the host. */
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
__device__ __forceinline__ float policy_uniform(unsigned long long key, long long row, long long step) {
    unsigned long long r = mix64(mix64(key + (unsigned long long)row) + (unsigned long long)(step + 1) * 0x9E3779B97F4A7C15ULL);
    return (float)(r >> 40) * (1.0f / 16777216.0f);
}

/* sample_actions for one row: inverse-CDF on softmax(logits[0..A)) with uniform u; returns the
 * action and writes its log-probability. */
__device__ int sample_row(const float* logits, int A, float u, float* logp_out) {
    float m = logits[0];
    for (int a = 1; a < A; a++) m = fmaxf(m, logits[a]);
    float sum = 0.0f;
    for (int a = 0; a < A; a++) sum += expf(logits[a] - m);
    float lse = logf(sum);
    float cdf[MAX_ACTIONS];
    float acc = 0.0f;
    for (int a = 0; a < A; a++) {
        acc += expf((logits[a] - m) - lse);
        cdf[a] = acc;
    }
    float threshold = u * cdf[A - 1];
    int action = 0;
    for (int a = 0; a < A; a++) action += cdf[a] < threshold;
    if (action > A - 1) action = A - 1;
    *logp_out = (logits[action] - m) - lse;
    return action;
}

/* sample_actions: logits rows of stride ld (the decoder output (B, A + 1) has ld = A + 1),
 * uniforms (B,) -> actions (B,) int32, logp (B,). */
__global__ void sample_actions_kernel(int B, int A, int ld, const float* logits, const float* uniforms,
                                      int* actions, float* logp) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) actions[b] = sample_row(logits + (long long)b * ld, A, uniforms[b], logp + b);
}

/* The uniforms the rollout draws at policy step `step` for rows 0..B-1 (for tests and replays). */
__global__ void policy_uniforms_kernel(int B, unsigned long long key, long long step, float* out) {
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < B) out[b] = policy_uniform(key, b, step);
}

/* ------------------------------------------------------------------------------------------------
 * GAE */

/* gae (with optional V-trace), one thread per row, backward over T. values, rewards, dones,
 * adv, returns: (T, R); last_value (R,) with a stride (the rollout reads the value column of the
 * decoder output in place); gamma_lambda = gamma * lam rounded once, as the reference's Python
 * floats are. With vtrace, ratios = exp(new_logp - old_logp).
 * Writes advantages and returns = advantages + values. */
__global__ void gae_kernel(int T, int R, const float* values, const float* last_value, int last_value_stride,
                           const float* rewards, const float* dones, float gamma, float lam, float gamma_lambda,
                           int vtrace, const float* new_logp, const float* old_logp, float rho_clip,
                           float c_clip, float* adv, float* returns) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    float next_value = last_value[(long long)r * last_value_stride], next_adv = 0.0f;
    for (int t = T - 1; t >= 0; t--) {
        long long k = (long long)t * R + r;
        float nonterminal = 1.0f - dones[k];
        float delta = rewards[k] + gamma * nonterminal * next_value - values[k];
        if (vtrace) {
            float ratio = expf(new_logp[k] - old_logp[k]);
            float rho = fminf(ratio, rho_clip);
            float c = lam * fminf(ratio, c_clip);
            next_adv = rho * delta + gamma * c * nonterminal * next_adv;
        } else {
            next_adv = delta + gamma_lambda * nonterminal * next_adv;
        }
        adv[k] = next_adv;
        returns[k] = next_adv + values[k];
        next_value = values[k];
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

/* Copy minibatch `first / Bm` (sequences perm[first .. first + Bm)) out of the rollout buffers.
 * Sequence q is (segment s, row r) = (q / R, q % R): rollout steps s*K .. s*K + K - 1 of row r.
 * Rollout buffers are (T, R, ...); minibatch buffers (K, Bm, ...); src (K, Bm) keeps each row's
 * rollout index for scattering results back. One thread per minibatch row.
 * With adv_moments given, also the minibatch advantages' mean and population standard deviation
 * (moments_finish_kernel's), in the same launch: per-block (sum, sum of squares) in partial (blocks, 2),
 * finished by the last block (last_block). */
__global__ void gather_minibatch_kernel(int K, int Bm, int R, int O, int first, const int* perm,
                                        const float* obs, const float* starts, const int* actions,
                                        const float* logp, const float* values, const float* adv,
                                        const float* returns, float* mb_obs, float* mb_starts,
                                        int* mb_actions, float* mb_logp, float* mb_values, float* mb_adv,
                                        float* mb_returns, int* mb_src, double* partial, unsigned int* counter,
                                        float* adv_moments) {
    __shared__ double scratch_d[32];
    __shared__ long long block_src[GATHER_THREADS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double a = 0.0;
    long long src = 0;
    if (i < K * Bm) {
        int k = i / Bm, c = i % Bm;
        int q = perm[first + c];
        int s = q / R, r = q % R;
        src = (long long)(s * K + k) * R + r;
        mb_starts[i] = starts[src];
        mb_actions[i] = actions[src];
        mb_logp[i] = logp[src];
        mb_values[i] = values[src];
        float v = adv[src];
        mb_adv[i] = v;
        mb_returns[i] = returns[src];
        mb_src[i] = (int)src;
        a = v;
    }
    /* The block's obs rows, copied by the whole block element by element (a thread per row walking its
     * row made each warp access touch 32 rows' cache lines, ~10x slower at Breakout's O = 118), with
     * GATHER_UNROLL loads in flight before their stores: one at a time, a Breakout minibatch (65,536 x
     * 118) took 157 us on the H200, a memory round trip per element. */
    block_src[threadIdx.x] = src;
    __syncthreads();
    long long row0 = (long long)blockIdx.x * blockDim.x;
    int elements = (int)min((long long)blockDim.x, (long long)K * Bm - row0) * O;
    float* mb_obs_block = mb_obs + row0 * O;
    for (int e0 = threadIdx.x; e0 < elements; e0 += GATHER_UNROLL * blockDim.x) {
        float v[GATHER_UNROLL];
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; u++) {
            int e = e0 + u * blockDim.x, row = e / O;
            if (e < elements) v[u] = obs[block_src[row] * O + (e - row * O)];
        }
#pragma unroll
        for (int u = 0; u < GATHER_UNROLL; u++) {
            int e = e0 + u * blockDim.x;
            if (e < elements) mb_obs_block[e] = v[u];
        }
    }
    if (!adv_moments) return;
    double sum = block_sum_d(a, scratch_d), squares = block_sum_d(a * a, scratch_d);
    if (threadIdx.x == 0) {
        partial[2 * blockIdx.x] = sum;
        partial[2 * blockIdx.x + 1] = squares;
    }
    if (!last_block(counter)) return;
    double s = 0.0, q = 0.0;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x) {
        s += ((volatile double*)partial)[2 * b];
        q += ((volatile double*)partial)[2 * b + 1];
    }
    s = block_sum_d(s, scratch_d);
    q = block_sum_d(q, scratch_d);
    if (threadIdx.x != 0) return;
    long long n = (long long)K * Bm;
    double mean = s / n, var = q / n - mean * mean;
    adv_moments[0] = (float)mean;
    adv_moments[1] = (float)sqrt(var > 0.0 ? var : 0.0);
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
 * own reductions finish in the same launch instead, last_block; these two-launch ones remain where a
 * collective sums the partials across GPUs in between, and for the once-per-update explained variance.)
 * sums_partial: for each of k arrays of n (x is (k, n)), partial[block][a] = (sum x, sum x^2). */
__global__ void sums_partial_kernel(long long n, int k, const float* x, double* partial) {
    __shared__ double scratch_d[32];
    for (int a = 0; a < k; a++) {
        double s = 0.0, q = 0.0;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
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

/* ------------------------------------------------------------------------------------------------
 * PPO LOSS: forward and backward in one pass, one thread per row.
 * y (n, A + 1) decoder output (logits, value); actions, old_logp, old_values, adv, returns (n,);
 * adv_moments (mean, std) or NULL (no normalisation). Writes dy (n, A + 1) = d loss / d y.
 * With partial given, also adds the minibatch means of the five per-row loss terms (clipped policy
 * loss, 0.5 * max value loss, entropy, approx kl, clipped flag) to scalars->stat[0..5), in the same
 * launch: per-block sums in double in partial (blocks, 5), finished by the last block (last_block).
 * With new_logp and src given, scatters each row's new log-probability to new_logp[src[i]]. */
__device__ void ppo_loss_row(int i, int n, int A, const float* y, const int* actions, const float* old_logp,
                             const float* old_values, const float* adv_in, const float* returns,
                             const float* adv_moments, float ent_coef, float clip_coef, float vf_clip_coef,
                             float vf_coef, float* dy, float* stats, float* new_logp, const int* src) {
    const float* logits = y + (long long)i * (A + 1);
    float* dl = dy + (long long)i * (A + 1);
    float inv_n = 1.0f / (float)n;
    float adv = adv_in[i];
    if (adv_moments) adv = (adv - adv_moments[0]) / (adv_moments[1] + 1e-8f);

    float m = logits[0];
    for (int a = 1; a < A; a++) m = fmaxf(m, logits[a]);
    float sum = 0.0f;
    for (int a = 0; a < A; a++) sum += expf(logits[a] - m);
    float lse = logf(sum);
    float entropy = 0.0f;
    for (int a = 0; a < A; a++) {
        float lp = (logits[a] - m) - lse;
        entropy -= expf(lp) * lp;
    }
    int action = actions[i];
    float logp = (logits[action] - m) - lse;
    float log_ratio = logp - old_logp[i];
    float ratio = expf(log_ratio);
    float lo = 1.0f - clip_coef, hi = 1.0f + clip_coef;
    float pg_unclipped = -adv * ratio;
    float pg_clipped = -adv * fminf(fmaxf(ratio, lo), hi);
    int inside = ratio > lo && ratio < hi;
    float dratio = (pg_unclipped >= pg_clipped || inside) ? -adv * inv_n : 0.0f;
    float dlogp = dratio * ratio;
    float ent_scale = ent_coef * inv_n;
    for (int a = 0; a < A; a++) {
        float lp = (logits[a] - m) - lse;
        float p = expf(lp);
        dl[a] = dlogp * ((a == action ? 1.0f : 0.0f) - p) + ent_scale * p * (lp + entropy);
    }

    float v = logits[A], old_v = old_values[i], ret = returns[i];
    float v_clipped = old_v + fminf(fmaxf(v - old_v, -vf_clip_coef), vf_clip_coef);
    float us = (v - ret) * (v - ret), cs = (v_clipped - ret) * (v_clipped - ret);
    float dv = us >= cs ? v - ret : (fabsf(v - old_v) < vf_clip_coef ? v_clipped - ret : 0.0f);
    dl[A] = dv * (vf_coef * inv_n);

    stats[0] = fmaxf(pg_unclipped, pg_clipped);
    stats[1] = 0.5f * fmaxf(us, cs);
    stats[2] = entropy;
    stats[3] = (ratio - 1.0f) - log_ratio;
    stats[4] = inside ? 0.0f : 1.0f;
    if (new_logp) new_logp[src[i]] = logp;
}

__global__ void ppo_loss_kernel(int n, int A, const float* y, const int* actions, const float* old_logp,
                                const float* old_values, const float* adv_in, const float* returns,
                                const float* adv_moments, TrainScalars* scalars, float clip_coef,
                                float vf_clip_coef, float vf_coef, float* dy, double* partial,
                                unsigned int* counter, float* new_logp, const int* src) {
    __shared__ double scratch_d[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float stats[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (i < n)
        ppo_loss_row(i, n, A, y, actions, old_logp, old_values, adv_in, returns, adv_moments, scalars->ent_coef,
                     clip_coef, vf_clip_coef, vf_coef, dy, stats, new_logp, src);
    if (!partial) return;
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
 * OPTIMIZER */

/* clip_grad_norm in one launch, and the start of an optimizer step: per-block sums of squares of x (n,)
 * in partial (blocks,); the last block to finish (last_block) adds them in block order and sets the
 * norm, the clip scale the optimizer kernels apply to the gradient, opt_step += 1 and Adam's bias
 * corrections. */
__global__ void grad_norm_kernel(long long n, const float* x, float* partial, unsigned int* counter, float max_norm,
                                 double beta1, double beta2, TrainScalars* scalars) {
    __shared__ float scratch[32];
    float s = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        s += x[i] * x[i];
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
    if (!last_block(counter)) return;
    s = 0.0f;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x) s += ((volatile float*)partial)[b];
    s = block_sum(s, scratch);
    if (threadIdx.x != 0) return;
    float norm = sqrtf(s);
    scalars->grad_norm = norm;
    scalars->clip_scale = norm > max_norm ? (float)((double)max_norm / ((double)norm + 1e-6)) : 1.0f;
    scalars->stat[STAT_GRAD_NORM] += norm;
    scalars->stat[STAT_COUNT] += 1.0;
    int step = scalars->opt_step + 1;
    scalars->opt_step = step;
    scalars->bias_correction1 = (float)(1.0 - pow(beta1, (double)step));
    scalars->bias_correction2 = (float)(1.0 - pow(beta2, (double)step));
}

/* adam_step over n elements of a flat buffer (the gradient scaled by the clip scale first), in the
 * reference's float32 operation order. one_minus_beta1/2 are (1 - beta) rounded to float32. */
__device__ __forceinline__ void adam_element(long long i, float* params, const float* grads, float* m, float* v,
                                             const TrainScalars* scalars, float beta1, float beta2,
                                             float one_minus_beta1, float one_minus_beta2, float eps) {
    float g = grads[i] * scalars->clip_scale;
    float mi = m[i] * beta1 + one_minus_beta1 * g;
    float vi = v[i] * beta2 + one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    float m_hat = mi / scalars->bias_correction1, v_hat = vi / scalars->bias_correction2;
    float lr = (float)scalars->lr;
    params[i] -= lr * m_hat / (sqrtf(v_hat) + eps);
}

__global__ void adam_kernel(long long n, float* params, const float* grads, float* m, float* v,
                            const TrainScalars* scalars, float beta1, float beta2, float one_minus_beta1,
                            float one_minus_beta2, float eps) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) adam_element(i, params, grads, m, v, scalars, beta1, beta2, one_minus_beta1, one_minus_beta2, eps);
}

/* muon_step, part 1 for one matrix: Nesterov momentum m = mu m + g; returns u = g + mu m. */
__device__ __forceinline__ float muon_momentum_element(long long i, const float* grads, float* m,
                                                       const TrainScalars* scalars, float momentum) {
    float g = grads[i] * scalars->clip_scale;
    float mi = m[i] * momentum + g;
    m[i] = mi;
    return g + momentum * mi;
}

__global__ void muon_momentum_kernel(long long n, const float* grads, float* m, float* u,
                                     const TrainScalars* scalars, float momentum) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] = muon_momentum_element(i, grads, m, scalars, momentum);
}

/* newton_schulz, first line: x = u / (||u||_F + 1e-7). One block. */
__global__ void frobenius_normalize_kernel(long long n, const float* u, float* x) {
    __shared__ float scratch[32];
    float s = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += u[i] * u[i];
    float denom = sqrtf(block_sum(s, scratch)) + 1e-7f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) x[i] = u[i] / denom;
}

/* A Newton-Schulz step's polynomial, first part: poly (r, r) = b * gram + a * I; a GEMM then adds
 * c * gram @ gram, and X <- poly @ X is the reference's a X + (b G + c G G) X in three GEMMs and no copies. */
__global__ void ns_poly_init_kernel(int r, const float* gram, float* poly, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < r * r) poly[i] = b * gram[i] + (i / r == i % r ? a : 0.0f);
}

/* muon_step, last part: params -= (lr * scale) * update, lr * scale rounded to float32 as in the
 * reference (a Python float times a float32 array). */
__global__ void muon_apply_kernel(long long n, float* params, const float* update, const TrainScalars* scalars,
                                  double scale) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) params[i] -= (float)(scalars->lr * scale) * update[i];
}

/* One weight matrix for muon_small_kernel (trainer.py's MUON_SMALL_DTYPE, field for field). */
struct MuonMatrix {
    long long offset;       /* of the (rows, cols) matrix in the flat parameters */
    long long bias_offset;  /* of its bias (Adam), or -1 */
    int rows, cols, bias_count, pad;
    double scale;           /* muon_update_scale(shape) */
};

/* Muon's whole step for small matrices, one block (MUON_SMALL_THREADS) per matrix of `table`: momentum,
 * Frobenius normalisation, `steps` Newton-Schulz iterations X <- (a I + b G + c G G) X with G = X X^T on
 * the wide orientation (r = min(rows, cols) rows of c = max(rows, cols)), the scaled update, and the matrix's
 * bias's Adam step. The GEMM form (record_newton_schulz) is a chain of ~25 dependent launches of tiny GEMMs
 * (~9 us each on an H200); this is one launch. Shared memory, zero-padded to whole float4s: the iterate and
 * the next, (r4, muon_stride(c)) each, and gram and poly, (r4, muon_stride(r)) each, r4 = r rounded up to 4.
 * m, v: the optimizer state (Muon momentum at a matrix's offset, Adam's m and v at a bias's). */
#define MUON_SMALL_THREADS 512
__global__ void __launch_bounds__(MUON_SMALL_THREADS, 1)
muon_small_kernel(const MuonMatrix* table, float* params, const float* grads, float* m, float* v,
                  const TrainScalars* scalars, float momentum, float ns_a, float ns_b, float ns_c, int steps,
                  float beta1, float beta2, float one_minus_beta1, float one_minus_beta2, float eps) {
    extern __shared__ float4 smem4[];
    __shared__ float scratch[32];
    float* smem = (float*)smem4;
    MuonMatrix mat = table[blockIdx.x];
    int rows = mat.rows, cols = mat.cols, count = rows * cols;
    bool tall = rows > cols;
    int r = tall ? cols : rows, c = tall ? rows : cols;
    int r4 = (r + 3) / 4 * 4, ldx = muon_stride(c), ldg = muon_stride(r);
    float* x = smem;              /* (r4, ldx) the iterate, wide orientation */
    float* xn = x + r4 * ldx;     /* (r4, ldx) the next iterate */
    float* gram = xn + r4 * ldx;  /* (r4, ldg) */
    float* poly = gram + r4 * ldg;
    for (int e = threadIdx.x; e < 2 * r4 * (ldx + ldg); e += blockDim.x) smem[e] = 0.0f;  /* the padding */
    __syncthreads();
    float squares = 0.0f;
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
        float u = muon_momentum_element(mat.offset + e, grads, m, scalars, momentum);
        int row = e / cols, col = e - row * cols;
        x[tall ? col * ldx + row : row * ldx + col] = u;
        squares += u * u;
    }
    float denom = sqrtf(block_sum(squares, scratch)) + 1e-7f;
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
        int row = e / cols, col = e - row * cols;
        int at = tall ? col * ldx + row : row * ldx + col;
        x[at] = x[at] / denom;
    }
    __syncthreads();
    x = muon_newton_schulz(x, xn, gram, poly, r, c, steps, ns_a, ns_b, ns_c);
    float lr_scale = (float)(scalars->lr * mat.scale);
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
        int row = e / cols, col = e - row * cols;
        params[mat.offset + e] -= lr_scale * x[tall ? col * ldx + row : row * ldx + col];
    }
    for (int e = threadIdx.x; e < mat.bias_count; e += blockDim.x)
        adam_element(mat.bias_offset + e, params, grads, m, v, scalars, beta1, beta2, one_minus_beta1,
                     one_minus_beta2, eps);
}

/* ------------------------------------------------------------------------------------------------
 * Bookkeeping between graph replays */

/* Zero the per-update statistics (at the start of every captured update). */
__global__ void begin_update_kernel(TrainScalars* scalars) {
    for (int k = 0; k < 8; k++) scalars->stat[k] = 0.0;
}

/* learning_rate_at for the next update, after this one: update += 1 and the annealed rate. */
__global__ void schedule_kernel(TrainScalars* scalars, double base_lr, int num_updates, int anneal) {
    int update = scalars->update + 1;
    scalars->update = update;
    double frac = 1.0 - (double)update / (double)(num_updates > 1 ? num_updates : 1);
    scalars->lr = anneal ? base_lr * (frac > 0.0 ? frac : 0.0) : base_lr;
}

/* The policy-step counter the sampling RNG reads, advanced once per rollout. */
__global__ void advance_rollout_kernel(TrainScalars* scalars, int steps) { scalars->rollout_steps += steps; }

} /* extern "C" */
