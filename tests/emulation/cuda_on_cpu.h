/* cuda_on_cpu.h: the CUDA execution model on the CPU, shared by the emulation harnesses (gpu_on_cpu.cpp,
 * heads_on_cpu.cpp): each CUDA thread of a block is a std::thread, __syncthreads() a std::barrier over the block,
 * a warp shuffle barriers of its warp around an exchange array, __shared__ a static (blocks run one after
 * another), atomics under one mutex. Include it before the CUDA sources. */
#ifndef FASTVEC_CUDA_ON_CPU_H
#define FASTVEC_CUDA_ON_CPU_H
#include <math.h>
#include <string.h>
#include <algorithm>
#include <barrier>
#include <mutex>
#include <thread>
#include <vector>

struct fv_dim3 { unsigned x, y, z; };
thread_local fv_dim3 threadIdx, blockIdx, blockDim, gridDim;
static std::barrier<>* block_barrier;
static std::vector<std::barrier<>*> warp_barriers; /* one per warp of the running block */
static std::mutex atomic_mutex;
static double shuffle_slots[1024];
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() block_barrier->arrive_and_wait()
#define __threadfence()
using std::min;

/* __shfl_down_sync by every thread of a warp: v of lane + off (its own past the warp's end). */
static double __shfl_down_sync(unsigned, double v, int off) {
    std::barrier<>* warp = warp_barriers[threadIdx.x >> 5];
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
    std::lock_guard<std::mutex> lock(atomic_mutex);
    unsigned old = *p;
    *p += v;
    return old;
}
static unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    std::lock_guard<std::mutex> lock(atomic_mutex);
    unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}

/* Run `kernel` on `blocks` blocks of `block` threads, one block after another. */
template <typename Kernel> static void launch_grid(long long blocks, int block, Kernel kernel) {
    for (long long b = 0; b < blocks; b++) {
        std::barrier<> barrier(block);
        block_barrier = &barrier;
        std::vector<std::barrier<>*> warps;
        for (int w = 0; w < (block + 31) / 32; w++) warps.push_back(new std::barrier<>(std::min(32, block - 32 * w)));
        warp_barriers = warps;
        std::vector<std::thread> team;
        for (int t = 0; t < block; t++)
            team.emplace_back([=] {
                threadIdx = {(unsigned)t, 0, 0};
                blockIdx = {(unsigned)b, 0, 0};
                blockDim = {(unsigned)block, 1, 1};
                gridDim = {(unsigned)blocks, 1, 1};
                kernel();
            });
        for (auto& thread : team) thread.join();
        for (auto* w : warps) delete w;
    }
}

/* Run `kernel` on enough blocks of `block` threads for `threads` threads. */
template <typename Kernel> static void launch(long long threads, int block, Kernel kernel) {
    launch_grid((threads + block - 1) / block, block, kernel);
}
#endif /* FASTVEC_CUDA_ON_CPU_H */
