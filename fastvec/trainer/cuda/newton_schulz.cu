/* newton_schulz.cu: Muon's Newton-Schulz iteration on one block's shared memory, for muon_small_kernel
 * (optimizers.cu includes this file) and for its CPU emulation test (tests/emulation/newton_schulz_on_cpu.cpp).
 * The layout: the iterate and the next, (r4, muon_stride(c)) each, and gram and poly, (r4, muon_stride(r))
 * each, r = min(rows, cols) rows of c = max(rows, cols) (the wide orientation), r4 = r rounded up to 4,
 * everything past the true sizes zero. */

/* Row stride (floats) of muon_small_kernel's shared buffers for rows of n floats: a multiple of 4 (rows
 * start 16-byte aligned, for float4 loads) that is 4 more than a multiple of 32, so that 8 lanes reading 16
 * bytes each from 8 consecutive rows cover the 32 banks once (optimizers.py's muon_stride). */
__device__ __forceinline__ int muon_stride(int n) {
    int s = (n + 3) / 4 * 4;
    while (s % 32 != 4) s += 4;
    return s;
}

/* gram (r, r) = X X^T over K4 columns (a multiple of 4; X's columns past its true width are zeros), in 4x4
 * tiles: rows 4q..4q+3 and columns g, g + Gn, g + 2Gn, g + 3Gn (Gn = ceil(r / 4)), so a warp's lanes read
 * consecutive rows of X for the right operand (distinct banks) and share the left operand's rows. */
__device__ void muon_gram(int r, int K4, const float* x, int ldx, float* gram, int ldg) {
    int Gn = (r + 3) / 4;
    for (int t = threadIdx.x; t < Gn * Gn; t += blockDim.x) {
        int q = t / Gn, g = t - q * Gn;
        float acc[4][4] = {};
        for (int k = 0; k < K4; k += 4) {
            float4 a[4], b[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                a[u] = *(const float4*)(x + (4 * q + u) * ldx + k);
                b[u] = *(const float4*)(x + (g + u * Gn) * ldx + k);
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
#pragma unroll
                for (int v = 0; v < 4; v++) {
                    float sum = acc[u][v];
                    sum = fmaf(a[u].x, b[v].x, sum);
                    sum = fmaf(a[u].y, b[v].y, sum);
                    sum = fmaf(a[u].z, b[v].z, sum);
                    acc[u][v] = fmaf(a[u].w, b[v].w, sum);
                }
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int v = 0; v < 4; v++) {
                int i = 4 * q + u, j = g + v * Gn;
                if (i < r && j < r) gram[i * ldg + j] = acc[u][v];
            }
    }
}

/* out (M, cols) = alpha * A (M, K) B (K, cols) + beta * C + diag * I, row-major in shared memory (A: lda, B: ldb,
 * C and out: ldo), K4 a multiple of 4 (A's columns and B's rows past the true K are zeros). 4x4 tiles of
 * rows 4q.. and 4 consecutive columns 4g.. (one float4 of each of B's rows). */
__device__ void muon_matmul(int M, int cols, int K4, const float* A, int lda, const float* B, int ldb, float* out,
                            int ldo, float alpha, const float* C, float beta, float diag) {
    int Gn = (cols + 3) / 4, Qm = (M + 3) / 4;
    for (int t = threadIdx.x; t < Qm * Gn; t += blockDim.x) {
        int q = t / Gn, g = t - q * Gn;
        float acc[4][4] = {};
        for (int l = 0; l < K4; l += 4) {
            float4 a[4], b[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                a[u] = *(const float4*)(A + (4 * q + u) * lda + l);
                b[u] = *(const float4*)(B + (l + u) * ldb + 4 * g);
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                float a_l[4] = {a[u].x, a[u].y, a[u].z, a[u].w};
#pragma unroll
                for (int w = 0; w < 4; w++) {
                    acc[u][0] = fmaf(a_l[w], b[w].x, acc[u][0]);
                    acc[u][1] = fmaf(a_l[w], b[w].y, acc[u][1]);
                    acc[u][2] = fmaf(a_l[w], b[w].z, acc[u][2]);
                    acc[u][3] = fmaf(a_l[w], b[w].w, acc[u][3]);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int v = 0; v < 4; v++) {
                int i = 4 * q + u, j = 4 * g + v;
                if (i >= M || j >= cols) continue;
                float value = alpha * acc[u][v];
                if (C) value += beta * C[i * ldo + j];
                if (i == j) value += diag;
                out[i * ldo + j] = value;
            }
    }
}

/* `steps` iterations X <- (a I + b G + c G G) X with G = X X^T (reference.newton_schulz's X <- a X + (b G + c G G) X)
 * on the layout above, X in x; every thread of the block calls it. Returns the buffer holding the result. */
__device__ float* muon_newton_schulz(float* x, float* xn, float* gram, float* poly, int r, int c, int steps,
                                     float ns_a, float ns_b, float ns_c) {
    int r4 = (r + 3) / 4 * 4, c4 = (c + 3) / 4 * 4, ldx = muon_stride(c), ldg = muon_stride(r);
    for (int step = 0; step < steps; step++) {
        muon_gram(r, c4, x, ldx, gram, ldg);  /* G = X X^T */
        __syncthreads();
        muon_matmul(r, r, r4, gram, ldg, gram, ldg, poly, ldg, ns_c, gram, ns_b, ns_a);  /* a I + b G + c G G */
        __syncthreads();
        muon_matmul(r, c, r4, poly, ldg, x, ldx, xn, ldx, 1.0f, nullptr, 0.0f, 0.0f);  /* X <- P X */
        __syncthreads();
        float* t = x;
        x = xn;
        xn = t;
    }
    return x;
}
