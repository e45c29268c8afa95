/* newton_schulz_on_cpu.cpp: fastvec/trainer/cuda/newton_schulz.cu (muon_small_kernel's Newton-Schulz) built for
 * the CPU, for tests/emulation/test_newton_schulz.py. One block of MUON_SMALL_THREADS CUDA threads on
 * cuda_on_cpu.h's model; the block's shared memory is filled as muon_small_kernel fills it. */
#include "cuda_on_cpu.h"

#include <sys/mman.h>
#include <unistd.h>
#include <vector>
struct alignas(16) float4 { float x, y, z, w; };
#include "newton_schulz.cu"

static const int kThreads = 512; /* optimizers.cu's MUON_SMALL_THREADS */

/* out (rows, cols) = newton_schulz(u) with muon_small_kernel's layout, normalisation and coefficients, the block's
 * shared memory at smem (zeros, 2 r4 (ldx + ldg) floats, 16-byte aligned). */
static void newton_schulz_in(float* smem, const float* u, int rows, int cols, int steps, float ns_a, float ns_b,
                             float ns_c, float* out) {
    bool tall = rows > cols;
    int r = tall ? cols : rows, c = tall ? rows : cols, count = rows * cols;
    int r4 = (r + 3) / 4 * 4, ldx = muon_stride(c), ldg = muon_stride(r);
    float* x = smem;
    float *xn = x + r4 * ldx, *gram = xn + r4 * ldx, *poly = gram + r4 * ldg;
    float squares = 0.0f;
    for (int e = 0; e < count; e++) squares += u[e] * u[e];
    float denom = sqrtf(squares) + 1e-7f;
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        x[tall ? col * ldx + row : row * ldx + col] = u[e] / denom;
    }
    float* result = nullptr;
    launch_grid(1, kThreads, [&] {
        float* done = muon_newton_schulz(x, xn, gram, poly, r, c, steps, ns_a, ns_b, ns_c);
        if (threadIdx.x == 0) result = done;
    });
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        out[e] = result[tall ? col * ldx + row : row * ldx + col];
    }
}

static long long shared_floats(int rows, int cols) {
    int r = rows < cols ? rows : cols, c = rows < cols ? cols : rows, r4 = (r + 3) / 4 * 4;
    return 2LL * r4 * (muon_stride(c) + muon_stride(r));
}

extern "C" void emu_newton_schulz(const float* u, int rows, int cols, int steps, float ns_a, float ns_b, float ns_c,
                                  float* out) {
    std::vector<float4> smem4(shared_floats(rows, cols) / 4 + 1, float4{0, 0, 0, 0});
    newton_schulz_in((float*)smem4.data(), u, rows, cols, steps, ns_a, ns_b, ns_c, out);
}

/* The same with the shared memory exactly `bytes` long (the launch's, optimizers.muon_small_shared_bytes) and
 * ending against a page that cannot be read or written: an access past the block's shared memory faults, as
 * on the GPU, instead of reading whatever follows. Returns -1 if the layout needs more than `bytes`. */
extern "C" int emu_newton_schulz_guarded(const float* u, int rows, int cols, int steps, float ns_a, float ns_b,
                                         float ns_c, long long bytes, float* out) {
    if (shared_floats(rows, cols) * 4 > bytes) return -1;
    long long page = sysconf(_SC_PAGESIZE), span = (bytes + page - 1) / page * page;
    char* base = (char*)mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == (char*)MAP_FAILED) return -2;
    mprotect(base + span, page, PROT_NONE);
    newton_schulz_in((float*)(base + span - bytes), u, rows, cols, steps, ns_a, ns_b, ns_c, out);
    munmap(base, span + page);
    return 0;
}

/* newton_schulz.cu's row stride, for comparing with the one optimizers.py sizes the launch's shared memory by. */
extern "C" int emu_muon_stride(int n) { return muon_stride(n); }
