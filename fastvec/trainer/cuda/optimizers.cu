/* optimizers.cu: the optimizer step: the global gradient norm and clip scale, Adam, and Muon (Nesterov
 * momentum, the GEMM form's element-wise pieces, and muon_small_kernel, the whole step of the small
 * matrices in one launch on newton_schulz.cu's shared-memory iteration). */
#include "common.cu"
#include "newton_schulz.cu"

extern "C" {

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

/* muon_small_kernel's arguments (kernel_args.py mirrors them): the table, the parameters, their gradients and the
 * optimizer state, the momentum, the Newton-Schulz coefficients and the biases' Adam constants. */
typedef struct {
    const MuonMatrix* table;     /* (matrices,) a block each */
    float* params;               /* the flat parameters */
    const float* grads;          /* the flat gradients */
    float* m;                    /* Muon's momentum at a matrix's offset, Adam's first moment at a bias's */
    float* v;                    /* Adam's second moment at a bias's offset */
    const TrainScalars* scalars; /* lr (and Adam's bias corrections) */
    float momentum;
    float ns_a;                  /* Newton-Schulz: X <- (ns_a I + ns_b G + ns_c G G) X */
    float ns_b;
    float ns_c;
    float beta1;
    float beta2;
    float one_minus_beta1;
    float one_minus_beta2;
    float eps;
    int steps;                   /* Newton-Schulz iterations */
} MuonSmallArgs;

/* Muon's whole step for small matrices, one block (MUON_SMALL_THREADS) per matrix of `table`: momentum,
 * Frobenius normalisation, `steps` Newton-Schulz iterations X <- (a I + b G + c G G) X with G = X X^T on
 * the wide orientation (r = min(rows, cols) rows of c = max(rows, cols)), the scaled update, and the matrix's
 * bias's Adam step. The GEMM form (record_newton_schulz) is a chain of some 25 dependent launches of tiny
 * GEMMs, each bound by its launch latency; this is one launch. Shared memory, zero-padded to whole float4s:
 * the iterate and the next, (r4, muon_stride(c)) each, and gram and poly, (r4, muon_stride(r)) each, r4 = r
 * rounded up to 4. m, v: the optimizer state (Muon momentum at a matrix's offset, Adam's m and v at a bias's). */
#define MUON_SMALL_THREADS 512
__global__ void __launch_bounds__(MUON_SMALL_THREADS, 1) muon_small_kernel(const MuonSmallArgs a) {
    extern __shared__ float4 smem4[];
    __shared__ float scratch[32];
    float* smem = (float*)smem4;
    MuonMatrix mat = a.table[blockIdx.x];
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
        float u = muon_momentum_element(mat.offset + e, a.grads, a.m, a.scalars, a.momentum);
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
    x = muon_newton_schulz(x, xn, gram, poly, r, c, a.steps, a.ns_a, a.ns_b, a.ns_c);
    float lr_scale = (float)(a.scalars->lr * mat.scale);
    for (int e = threadIdx.x; e < count; e += blockDim.x) {
        int row = e / cols, col = e - row * cols;
        a.params[mat.offset + e] -= lr_scale * x[tall ? col * ldx + row : row * ldx + col];
    }
    for (int e = threadIdx.x; e < mat.bias_count; e += blockDim.x)
        adam_element(mat.bias_offset + e, a.params, a.grads, a.m, a.v, a.scalars, a.beta1, a.beta2,
                     a.one_minus_beta1, a.one_minus_beta2, a.eps);
}

} /* extern "C" */
