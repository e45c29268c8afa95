/* cuda_on_cpu.h: the CUDA execution model on the CPU, shared by the emulation harnesses (gpu_on_cpu.cpp,
 * heads_on_cpu.cpp, ...): a block's CUDA threads are fibers of one OS thread, each run until it waits at a barrier
 * (__syncthreads(), __syncwarp(), a warp shuffle's exchange), in index order; __shared__ a static (blocks run one
 * after another).
 * Under AddressSanitizer, which follows the stacks of OS threads but not of fibers, each CUDA thread is a
 * std::thread and the barriers are std::barriers. Include it before the CUDA sources. */
#ifndef FASTVEC_CUDA_ON_CPU_H
#define FASTVEC_CUDA_ON_CPU_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fv_dim3 { unsigned x, y, z; };

#if defined(__SANITIZE_ADDRESS__)
#include <barrier>
#include <mutex>
#include <thread>
#include <vector>
thread_local fv_dim3 threadIdx, blockIdx, blockDim, gridDim;
typedef std::barrier<> fv_barrier;
static std::mutex fv_atomic_mutex;
#define FV_ATOMIC std::lock_guard<std::mutex> fv_atomic_lock(fv_atomic_mutex)

/* Run one block: a std::thread per CUDA thread. */
template <typename Kernel> static void fv_run_block(long long b, long long blocks, int block, const Kernel& kernel) {
    std::vector<std::thread> team;
    for (int t = 0; t < block; t++)
        team.emplace_back([&, t] {
            threadIdx = {(unsigned)t, 0, 0};
            blockIdx = {(unsigned)b, 0, 0};
            blockDim = {(unsigned)block, 1, 1};
            gridDim = {(unsigned)blocks, 1, 1};
            kernel();
        });
    for (auto& thread : team) thread.join();
}
#else
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
/* The running CUDA thread's indices, set by the scheduler each time it resumes one. */
static fv_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define FV_ATOMIC /* fibers switch only at barriers: an atomic is a plain read-modify-write */

/* A barrier of `expected` CUDA threads: the last to arrive goes on, the others wait for its generation to pass. */
struct fv_barrier {
    int expected, arrived;
    unsigned long long generation;
    explicit fv_barrier(int n) : expected(n), arrived(0), generation(0) {}
    void arrive_and_wait();
};

/* A CUDA thread: its context, its stack (reserved once, reused by every block) and what it waits for. */
struct fv_fiber {
    ucontext_t context;
    char* stack;
    const fv_barrier* waits_on; /* NULL: runnable */
    unsigned long long waits_for;
    bool done;
};
static const size_t FV_FIBER_STACK = 8u << 20; /* a std::thread's default; pages are committed as they are touched */
static fv_fiber fv_fibers[1024]; /* CUDA's most threads a block */
static int fv_fiber_stacks;      /* how many of them have their stack */
static ucontext_t fv_scheduler;
static int fv_running;
static void (*fv_entry)(const void*);
static const void* fv_entry_kernel;

static void fv_fiber_main() {
    fv_entry(fv_entry_kernel);
    fv_fibers[fv_running].done = true; /* uc_link resumes the scheduler */
}

void fv_barrier::arrive_and_wait() {
    if (++arrived == expected) {
        arrived = 0;
        generation++;
        return;
    }
    fv_fiber& self = fv_fibers[fv_running];
    self.waits_on = this;
    self.waits_for = generation;
    swapcontext(&self.context, &fv_scheduler);
}

/* Run one block: each fiber runs until it waits at a barrier or returns, in turns, until all have returned. */
template <typename Kernel> static void fv_run_block(long long b, long long blocks, int block, const Kernel& kernel) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (; fv_fiber_stacks < block; fv_fiber_stacks++) { /* each stack above a page that faults on an overflow */
        void* mem = mmap(NULL, FV_FIBER_STACK + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED || mprotect(mem, page, PROT_NONE)) {
            perror("cuda_on_cpu.h: a fiber's stack");
            abort();
        }
        fv_fibers[fv_fiber_stacks].stack = (char*)mem + page;
    }
    fv_entry = [](const void* k) { (*(const Kernel*)k)(); };
    fv_entry_kernel = &kernel;
    blockIdx = {(unsigned)b, 0, 0};
    blockDim = {(unsigned)block, 1, 1};
    gridDim = {(unsigned)blocks, 1, 1};
    for (int t = 0; t < block; t++) {
        fv_fiber& f = fv_fibers[t];
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack;
        f.context.uc_stack.ss_size = FV_FIBER_STACK;
        f.context.uc_link = &fv_scheduler;
        makecontext(&f.context, fv_fiber_main, 0);
        f.waits_on = NULL;
        f.done = false;
    }
    for (int live = block; live > 0;) {
        int resumed = 0;
        for (int t = 0; t < block; t++) {
            fv_fiber& f = fv_fibers[t];
            if (f.done || (f.waits_on && f.waits_on->generation == f.waits_for)) continue;
            f.waits_on = NULL;
            threadIdx = {(unsigned)t, 0, 0};
            fv_running = t;
            swapcontext(&fv_scheduler, &f.context);
            resumed++;
            live -= f.done;
        }
        if (!resumed) { /* on a GPU: a hang or undefined behaviour */
            fprintf(stderr, "cuda_on_cpu.h: block %lld: %d threads wait at a barrier the others never reach\n", b,
                    live);
            abort();
        }
    }
}
#endif

static fv_barrier* block_barrier;
static fv_barrier* warp_barriers[32]; /* one per warp of the running block */
static double shuffle_slots[1024];
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() block_barrier->arrive_and_wait()
#define __threadfence()
/* CUDA's min and max (the harnesses' and kernels' arguments are of one type). */
template <typename T> static inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T max(T a, T b) { return a < b ? b : a; }

static void __syncwarp(unsigned = 0xffffffffu) { warp_barriers[threadIdx.x >> 5]->arrive_and_wait(); }

/* __shfl_down_sync by every thread of a warp: v of lane + off (its own past the warp's end). */
static double __shfl_down_sync(unsigned, double v, int off) {
    fv_barrier* warp = warp_barriers[threadIdx.x >> 5];
    warp->arrive_and_wait();
    shuffle_slots[threadIdx.x] = v;
    warp->arrive_and_wait();
    unsigned lane = threadIdx.x & 31;
    double out = lane + off < 32 && threadIdx.x + off < blockDim.x ? shuffle_slots[threadIdx.x + off] : v;
    warp->arrive_and_wait();
    return out;
}
static float __shfl_down_sync(unsigned mask, float v, int off) { return (float)__shfl_down_sync(mask, (double)v, off); }

static unsigned atomicAdd(unsigned* p, unsigned v) {
    FV_ATOMIC;
    unsigned old = *p;
    *p += v;
    return old;
}
static double atomicAdd(double* p, double v) {
    FV_ATOMIC;
    double old = *p;
    *p += v;
    return old;
}
static int atomicSub(int* p, int v) {
    FV_ATOMIC;
    int old = *p;
    *p -= v;
    return old;
}
static unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    FV_ATOMIC;
    unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}

/* Run `kernel` on `blocks` blocks of `block` threads, one block after another. */
template <typename Kernel> static void launch_grid(long long blocks, int block, Kernel kernel) {
    if (block < 1 || block > 1024) { /* cudaErrorInvalidConfiguration on a GPU */
        fprintf(stderr, "cuda_on_cpu.h: a block of %d threads (CUDA takes 1 to 1024)\n", block);
        abort();
    }
    for (long long b = 0; b < blocks; b++) {
        fv_barrier barrier(block);
        block_barrier = &barrier;
        int warps = (block + 31) / 32;
        for (int w = 0; w < warps; w++) warp_barriers[w] = new fv_barrier(min(32, block - 32 * w));
        fv_run_block(b, blocks, block, kernel);
        for (int w = 0; w < warps; w++) delete warp_barriers[w];
    }
}

/* Run `kernel` on enough blocks of `block` threads for `threads` threads. */
template <typename Kernel> static void launch(long long threads, int block, Kernel kernel) {
    launch_grid((threads + block - 1) / block, block, kernel);
}
#endif /* FASTVEC_CUDA_ON_CPU_H */
