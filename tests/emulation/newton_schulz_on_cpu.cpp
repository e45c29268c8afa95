/* newton_schulz_on_cpu.cpp: fastvec/trainer/cuda/newton_schulz.cu (muon_small_kernel's Newton-Schulz) built for
 * the CPU, for tests/emulation/test_newton_schulz.py. One block of MUON_SMALL_THREADS std::threads with a
 * std::barrier for __syncthreads(); the block's shared memory is filled as muon_small_kernel fills it. */
#include <math.h>
#include <barrier>
#include <thread>
#include <vector>

struct fv_dim3 { unsigned x, y, z; };
thread_local fv_dim3 threadIdx, blockDim;
struct alignas(16) float4 { float x, y, z, w; };
static std::barrier<>* block_barrier;
#define __device__
#define __forceinline__ inline
#define __syncthreads() block_barrier->arrive_and_wait()
#include "newton_schulz.cu"

static const int kThreads = 512; /* optimizers.cu's MUON_SMALL_THREADS */

/* out (rows, cols) = newton_schulz(u) with muon_small_kernel's layout, normalisation and coefficients. */
extern "C" void emu_newton_schulz(const float* u, int rows, int cols, int steps, float ns_a, float ns_b, float ns_c,
                                  float* out) {
    bool tall = rows > cols;
    int r = tall ? cols : rows, c = tall ? rows : cols, count = rows * cols;
    int r4 = (r + 3) / 4 * 4, ldx = muon_stride(c), ldg = muon_stride(r);
    std::vector<float4> smem4((2 * r4 * (ldx + ldg)) / 4 + 1, float4{0, 0, 0, 0});
    float* x = (float*)smem4.data();
    float *xn = x + r4 * ldx, *gram = xn + r4 * ldx, *poly = gram + r4 * ldg;
    float squares = 0.0f;
    for (int e = 0; e < count; e++) squares += u[e] * u[e];
    float denom = sqrtf(squares) + 1e-7f;
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        x[tall ? col * ldx + row : row * ldx + col] = u[e] / denom;
    }
    std::barrier<> barrier(kThreads);
    block_barrier = &barrier;
    std::vector<std::thread> team;
    float* result = nullptr;
    for (int t = 0; t < kThreads; t++)
        team.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0};
            blockDim = {(unsigned)kThreads, 1, 1};
            float* done = muon_newton_schulz(x, xn, gram, poly, r, c, steps, ns_a, ns_b, ns_c);
            if (t == 0) result = done;
        });
    for (auto& thread : team) thread.join();
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        out[e] = result[tall ? col * ldx + row : row * ldx + col];
    }
}

/* newton_schulz.cu's row stride, for comparing with the one optimizers.py sizes the launch's shared memory by. */
extern "C" int emu_muon_stride(int n) { return muon_stride(n); }
