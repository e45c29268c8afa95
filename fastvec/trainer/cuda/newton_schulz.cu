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

/* Split-K: threads per 4x4 output tile, so that phases with few tiles (r = 32: 64 gram tiles) still keep the
 * block's threads busy and cut each thread's serial chain of FMAs over K. A power of two up to 16 with
 * tiles * split <= blockDim.x, and at least 4 float4 chunks of K per thread, so that combining the split's
 * partial sums (at most 15 shuffles, muon_split_sum) stays well under the FMAs (64 per chunk). */
__device__ __forceinline__ int muon_split(int tiles, int chunks) {
    int split = 1;
    while (split < 16 && 2 * split * tiles <= (int)blockDim.x && chunks >= 8 * split) split *= 2;
    return split;
}

/* Combines a tile's 16 partial sums over the `split` consecutive lanes that share the tile (lane `part` of
 * them summed every split-th float4 chunk of K): a reduce-scatter by shuffles, halving the values each lane
 * holds at each level, so that lane `part` ends with the tile's sums of elements first .. first + 16 / split - 1
 * (returned first) in acc[0 ..]. The tree is fixed, so the sums are the same every run. */
__device__ __forceinline__ int muon_split_sum(float acc[16], int split, int part) {
    unsigned lane = threadIdx.x & 31;
    unsigned group = ((1u << split) - 1) << (lane & ~(split - 1));  /* the tile's lanes, the shuffles' mask */
    int first = 0;
#pragma unroll
    for (int half = 8; half >= 1; half /= 2) {
        int offset = split * half / 16;  /* split / 2 lanes apart first, then split / 4, ... */
        if (offset == 0) break;
        bool upper = part & offset;  /* keeps the upper half of its values, sends the lower */
#pragma unroll
        for (int i = 0; i < half; i++) {
            float send = upper ? acc[i] : acc[i + half], keep = upper ? acc[i + half] : acc[i];
            acc[i] = keep + __shfl_xor_sync(group, send, offset);
        }
        if (upper) first += half;
    }
    return first;
}

/* gram (r, r) = X X^T over K4 columns (a multiple of 4; X's columns past its true width are zeros), in 4x4
 * tiles: rows 4q..4q+3 and columns g, g + Gn, g + 2Gn, g + 3Gn (Gn = ceil(r / 4)), so a warp's lanes read
 * consecutive rows of X for the right operand (distinct banks) and share the left operand's rows. A tile's
 * `split` lanes take every split-th float4 of K from part on: consecutive float4s of a row, distinct banks. */
__device__ void muon_gram(int r, int K4, const float* x, int ldx, float* gram, int ldg) {
    int Gn = (r + 3) / 4, split = muon_split(Gn * Gn, K4 / 4);
    for (int t = threadIdx.x; t < Gn * Gn * split; t += blockDim.x) {
        int tile = t / split, part = t - tile * split, q = tile / Gn, g = tile - q * Gn;
        float acc[16] = {};  /* element 4u + v: row 4q + u, column g + v Gn */
        for (int k = 4 * part; k < K4; k += 4 * split) {
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
                    float sum = acc[4 * u + v];
                    sum = fmaf(a[u].x, b[v].x, sum);
                    sum = fmaf(a[u].y, b[v].y, sum);
                    sum = fmaf(a[u].z, b[v].z, sum);
                    acc[4 * u + v] = fmaf(a[u].w, b[v].w, sum);
                }
        }
        int first = muon_split_sum(acc, split, part);
#pragma unroll
        for (int e = 0; e < 16; e++) {
            int i = 4 * q + (first + e) / 4, j = g + (first + e) % 4 * Gn;
            if (e < 16 / split && i < r && j < r) gram[i * ldg + j] = acc[e];
        }
    }
}

/* out (M, N) = alpha * A (M, K) B (K, N) + beta * C + diag * I, row-major in shared memory (A: lda, B: ldb,
 * C and out: ldo), K4 a multiple of 4 (A's columns and B's rows past the true K are zeros). 4x4 tiles of
 * rows 4q.. and 4 consecutive columns 4g.. (one float4 of each of B's rows); a tile's `split` lanes take
 * every split-th group of 4 of K from part on, as in muon_gram. */
__device__ void muon_matmul(int M, int N, int K4, const float* A, int lda, const float* B, int ldb, float* out,
                            int ldo, float alpha, const float* C, float beta, float diag) {
    int Gn = (N + 3) / 4, Qm = (M + 3) / 4, split = muon_split(Qm * Gn, K4 / 4);
    for (int t = threadIdx.x; t < Qm * Gn * split; t += blockDim.x) {
        int tile = t / split, part = t - tile * split, q = tile / Gn, g = tile - q * Gn;
        float acc[16] = {};  /* element 4u + v: row 4q + u, column 4g + v */
        for (int l = 4 * part; l < K4; l += 4 * split) {
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
                    acc[4 * u + 0] = fmaf(a_l[w], b[w].x, acc[4 * u + 0]);
                    acc[4 * u + 1] = fmaf(a_l[w], b[w].y, acc[4 * u + 1]);
                    acc[4 * u + 2] = fmaf(a_l[w], b[w].z, acc[4 * u + 2]);
                    acc[4 * u + 3] = fmaf(a_l[w], b[w].w, acc[4 * u + 3]);
                }
            }
        }
        int first = muon_split_sum(acc, split, part);
#pragma unroll
        for (int e = 0; e < 16; e++) {
            int i = 4 * q + (first + e) / 4, j = 4 * g + (first + e) % 4;
            if (e >= 16 / split || i >= M || j >= N) continue;
            float value = alpha * acc[e];
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
