/* newton_schulz_on_cpu.cpp: fastvec/trainer/cuda/newton_schulz.cu (muon_small_kernel's Newton-Schulz) built for
 * the CPU, for tests/emulation/test_newton_schulz.py. One block of MUON_SMALL_THREADS threads, each a ucontext
 * fiber on one OS thread, run round-robin: __syncthreads() parks a fiber until every fiber has reached it, and
 * a shuffle takes two rounds (all lanes post, then all read), so a split-K tile's lanes exchange as on the GPU.
 * A shuffle whose partner is not at the same shuffle with the same mask (a divergent or mis-masked shuffle,
 * undefined on the GPU) is counted in emu_shuffle_faults (per emu_newton_schulz call). The block's shared memory
 * is filled as muon_small_kernel fills it. */
#include <math.h>
#include <ucontext.h>
#include <vector>

struct fv_dim3 { unsigned x, y, z; };
static fv_dim3 threadIdx, blockDim; /* threadIdx: the running fiber's, set by run_block */
struct alignas(16) float4 { float x, y, z, w; };

enum LaneState { RUNNING, AT_BARRIER, DONE };
struct Lane {
    ucontext_t context;
    std::vector<char> stack;
    LaneState state;
    unsigned shuffles, mask; /* shuffles posted so far, and the last one's mask */
    float posted;
};
static std::vector<Lane> lanes;
static ucontext_t scheduler;
static int current;
static void (*lane_body)();
extern "C" int emu_shuffle_faults;
int emu_shuffle_faults = 0;

static void pause_lane() { swapcontext(&lanes[current].context, &scheduler); }
static void syncthreads() {
    lanes[current].state = AT_BARRIER;
    pause_lane();
}
static float __shfl_xor_sync(unsigned mask, float v, int offset) {
    int me = current, partner = me ^ offset;
    lanes[me].posted = v;
    lanes[me].mask = mask;
    lanes[me].shuffles++;
    pause_lane(); /* every lane posts before any reads */
    const Lane& other = lanes[partner];
    bool ok = partner >> 5 == me >> 5 && (mask >> (me & 31) & 1) && (mask >> (partner & 31) & 1) &&
              other.shuffles == lanes[me].shuffles && other.mask == mask;
    if (!ok) emu_shuffle_faults++;
    float out = other.posted;
    pause_lane(); /* every lane reads before any posts again */
    return out;
}
#define __device__
#define __forceinline__ inline
#define __syncthreads() syncthreads()
#include "newton_schulz.cu"

static const int kThreads = 512; /* optimizers.cu's MUON_SMALL_THREADS */

static void lane_entry() {
    lane_body();
    lanes[current].state = DONE;
}

/* body() on one block of `threads` fibers: each round resumes every running fiber once; when none is running
 * and some wait at __syncthreads(), all of them go on. */
static void run_block(int threads, void (*body)()) {
    lanes.assign(threads, Lane{});
    lane_body = body;
    blockDim = {(unsigned)threads, 1, 1};
    for (Lane& lane : lanes) {
        lane.stack.resize(64 * 1024);
        getcontext(&lane.context);
        lane.context.uc_stack.ss_sp = lane.stack.data();
        lane.context.uc_stack.ss_size = lane.stack.size();
        lane.context.uc_link = &scheduler;
        makecontext(&lane.context, lane_entry, 0);
    }
    for (;;) {
        int running = 0, waiting = 0;
        for (const Lane& lane : lanes) {
            running += lane.state == RUNNING;
            waiting += lane.state == AT_BARRIER;
        }
        if (running == 0 && waiting == 0) break;
        if (running == 0)
            for (Lane& lane : lanes) lane.state = lane.state == AT_BARRIER ? RUNNING : lane.state;
        for (current = 0; current < threads; current++)
            if (lanes[current].state == RUNNING) {
                threadIdx = {(unsigned)current, 0, 0};
                swapcontext(&scheduler, &lanes[current].context);
            }
    }
}

/* muon_newton_schulz's arguments and result, for run_block's body. */
static struct {
    float *x, *xn, *gram, *poly, *result;
    int r, c, steps;
    float a, b, c_coeff;
} job;

/* out (rows, cols) = newton_schulz(u) with muon_small_kernel's layout, normalisation and coefficients. */
extern "C" void emu_newton_schulz(const float* u, int rows, int cols, int steps, float ns_a, float ns_b, float ns_c,
                                  float* out) {
    bool tall = rows > cols;
    int r = tall ? cols : rows, c = tall ? rows : cols, count = rows * cols;
    int r4 = (r + 3) / 4 * 4, ldx = muon_stride(c), ldg = muon_stride(r);
    std::vector<float4> smem4((2 * r4 * (ldx + ldg)) / 4 + 1, float4{0, 0, 0, 0});
    float* x = (float*)smem4.data();
    float *xn = x + r4 * ldx, *gram = xn + r4 * ldx, *poly = gram + r4 * ldg;
    job = {x, xn, gram, poly, nullptr, r, c, steps, ns_a, ns_b, ns_c};
    emu_shuffle_faults = 0;
    float squares = 0.0f;
    for (int e = 0; e < count; e++) squares += u[e] * u[e];
    float denom = sqrtf(squares) + 1e-7f;
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        x[tall ? col * ldx + row : row * ldx + col] = u[e] / denom;
    }
    run_block(kThreads, [] {
        float* done = muon_newton_schulz(job.x, job.xn, job.gram, job.poly, job.r, job.c, job.steps, job.a, job.b,
                                         job.c_coeff);
        if (threadIdx.x == 0) job.result = done;
    });
    for (int e = 0; e < count; e++) {
        int row = e / cols, col = e - row * cols;
        out[e] = job.result[tall ? col * ldx + row : row * ldx + col];
    }
}
