/* policy.cu: the policy's kernels: the element-wise work around the cuBLAS GEMMs of a forward and a
 * backward (bias, bf16 copies, the MinGRU and MLP layers, the bias gradient) and the action sampler
 * (counter-based uniforms, inverse-CDF on the softmax) that rollout.cu's kernels call.
 * Legend as kernels.cu's. */
#include "common.cu"
#include "categorical.cu"

#define MAX_ACTIONS 64 /* the sampler keeps a row's CDF in registers */

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

extern "C" {

/* ------------------------------------------------------------------------------------------------
 * Small utilities */

/* x[i] = value for i < n (the bias GEMMs' ones row, start flags). */
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
 * h_last (B, H) the state after step K-1 (may be h0: each thread reads before it writes). */
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
 * bias gradient is a sum over B rows rather than K * B, and dpre is not read a second time for it. */
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
        /* Every load of the step before any math, so that they are in flight together instead of each
         * waiting for the sigmoids before it: the kernel is bound by memory latency. */
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

/* An MLP layer's nonlinearity (reference.activate), act: MLP_RELU or MLP_TANH, and d loss / d pre from its output
 * (reference.activation_grad). */
#define MLP_RELU 0
#define MLP_TANH 1
__device__ __forceinline__ float mlp_activate(float pre, int act) {
    return act == MLP_TANH ? tanhf(pre) : fmaxf(pre, 0.0f);
}
__device__ __forceinline__ float mlp_activation_grad(float dout, float out, int act) {
    return act == MLP_TANH ? dout * (1.0f - out * out) : (out > 0.0f ? dout : 0.0f);
}

/* mlp_forward: out = activate(pre + bias); pre and out (rows, H). */
__global__ void mlp_forward_kernel(long long rows, int H, const float* pre, const float* bias, float* out, int act) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * H) out[i] = mlp_activate(pre[i] + bias[i % H], act);
}

/* mlp_backward: dpre = activation_grad(dout, out); the caller does dx = dpre @ w and the weight GEMMs. */
__global__ void mlp_backward_kernel(long long count, const float* dout, const float* out, float* dpre, int act) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) dpre[i] = mlp_activation_grad(dout[i], out[i], act);
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

#define BIAS_GRAD_UNROLL 8 /* rows whose loads bias_grad_kernel's threads issue before using them */

/* A linear layer's bias gradient db (cols,) = the column sums of dpre (rows, cols); with `out` given
 * (an MLP layer), first mlp_backward: dpre = activation_grad(dout, out) (act), written to dpre. One launch (last_block):
 * block b sums rows [b * rows / G, (b + 1) * rows / G) into partial (G, cols) in double, the finishing
 * block adds the G partials of each column in a fixed order. 256 threads as (256 / c) row lanes x c columns,
 * c = min(cols, 256), so a warp reads consecutive addresses. */
__global__ void bias_grad_kernel(long long rows, int cols, const float* dout, const float* out, float* dpre,
                                 double* partial, unsigned int* counter, float* db, int act) {
    __shared__ double lanes[256];
    int c_pass = cols < (int)blockDim.x ? cols : (int)blockDim.x;
    int row_lanes = blockDim.x / c_pass;
    int c0 = threadIdx.x % c_pass, lane = threadIdx.x / c_pass;
    long long r0 = rows * blockIdx.x / gridDim.x, r1 = rows * (blockIdx.x + 1) / gridDim.x;
    for (int tile = 0; tile < cols; tile += c_pass) {
        int c = tile + c0;
        double acc = 0.0;
        if (lane < row_lanes && c < cols) {
            /* BIAS_GRAD_UNROLL rows' loads in flight before their stores and sums: a row at a time, each load
             * waited for the store before it (dpre may alias dout or out as far as the compiler knows), so a
             * thread's rows took a memory round trip each. The sum's order is the row order, as before. */
            for (long long r = r0 + lane; r < r1; r += (long long)BIAS_GRAD_UNROLL * row_lanes) {
                float v[BIAS_GRAD_UNROLL], m[BIAS_GRAD_UNROLL];
#pragma unroll
                for (int u = 0; u < BIAS_GRAD_UNROLL; u++) {
                    long long i = (r + (long long)u * row_lanes) * cols + c;
                    bool live = r + (long long)u * row_lanes < r1;
                    v[u] = live ? dout[i] : 0.0f;
                    m[u] = live && out ? out[i] : 0.0f;
                }
#pragma unroll
                for (int u = 0; u < BIAS_GRAD_UNROLL; u++) {
                    if (r + (long long)u * row_lanes >= r1) break;
                    if (out) {
                        v[u] = mlp_activation_grad(v[u], m[u], act);
                        dpre[(r + (long long)u * row_lanes) * cols + c] = v[u];
                    }
                    acc += v[u];
                }
            }
        }
        bool adder = lane == 0 && c < cols;
        double sum = bias_grad_lanes_sum(acc, lanes, adder, row_lanes, c_pass, c0);
        if (adder) partial[(long long)blockIdx.x * cols + c] = sum;
    }
    if (!last_block(counter)) return;
    /* The finish in the same lanes x columns layout: lane l adds partials l, l + lanes, ... (L2 loads, many
     * in flight, where a thread per column adding all G partials would wait for each in turn), then lane 0
     * adds the lanes in order; a fixed order, so still deterministic. */
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

} /* extern "C" */

/* ------------------------------------------------------------------------------------------------
 * SAMPLING (rollout.cu's kernels; trainer.py's policy_uniforms recomputes the uniforms on the host) */

/* The policy's uniform for row r at policy step `step`: counter-based (mix64), keyed by the run's seed,
 * so it needs no state and any step can be recomputed on the host. */
__device__ __forceinline__ float policy_uniform(unsigned long long key, long long row, long long step) {
    unsigned long long r =
        mix64(mix64(key + (unsigned long long)row) + (unsigned long long)(step + 1) * 0x9E3779B97F4A7C15ULL);
    return (float)(r >> 40) * (1.0f / 16777216.0f);
}

/* reference.sample_actions for one row: inverse-CDF on softmax(logits[0..A)) with uniform u; returns
 * the action and writes its log-probability. */
__device__ int sample_row(const float* logits, int A, float u, float* logp_out) {
    LogSoftmax s = log_softmax(logits, A);
    float cdf[MAX_ACTIONS];
    float acc = 0.0f;
    for (int a = 0; a < A; a++) {
        acc += expf(log_prob(s, logits, a));
        cdf[a] = acc;
    }
    float threshold = u * cdf[A - 1];
    int action = 0;
    for (int a = 0; a < A; a++) action += cdf[a] < threshold;
    if (action > A - 1) action = A - 1;
    *logp_out = log_prob(s, logits, action);
    return action;
}
