/* gpu_on_cpu.cpp: batch_gpu.h's kernels built for the CPU, for tests/emulation/test_env_step_kernels.py,
 * on cuda_on_cpu.h's threads; ENV names the env file. The launchers below use the grids that
 * fastvec/native/cuda.py uses. */
#include "cuda_on_cpu.h"

struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
#define __constant__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
/* CUDA's bit-cast intrinsics, which the GPU branches of env files use. */
static long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, 8); return u; }
static double __longlong_as_double(long long u) { double x; memcpy(&x, &u, 8); return x; }
static unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
#define __CUDACC__ 1 /* the GPU branches of the env and batch files */
#include ENV
#include "batch.h"
#include "batch_gpu.h"

extern "C" {
int emu_state_size(void) { return (int)sizeof(State); }
int emu_book_size(void) { return (int)sizeof(fv_book); }

void emu_get_state(int n, char* slots, int count, const long long* indices, double* out) {
    launch(count, 256, [=] { fv_get_state_kernel(n, slots, count, indices, out); });
}

void emu_set_state(int n, char* slots, int count, const long long* indices, const double* in, OBS_T* obs) {
    launch(count, 256, [=] { fv_set_state_kernel(n, slots, count, indices, in, obs); });
}

void emu_spaces(int* obs_shape, float* obs_low, float* obs_high, long long* nvec, float* action_low,
                float* action_high, int* ndim) {
    launch(1, 1, [=] { fv_spaces_kernel(obs_shape, obs_low, obs_high, nvec, action_low, action_high, ndim); });
}

void emu_reset(int n, char* slots, const fv_u64* seeds, const unsigned char* mask, OBS_T* obs) {
    launch(n, 256, [=] { fv_reset_split_kernel(n, slots, seeds, mask, obs); });
}

/* kernel: 0 staged_wide, 1 wide, 2 wide_occ (cuda.STEP_KERNEL_NAMES); actions (N, NUM_AGENTS, ACTION_DIMS)
 * with the given byte strides, `bytes` bytes each (integers, signed or not, or Box's float32/float64). */
void emu_step(int kernel, int n, char* slots, const char* a, long long es, long long as, long long ds, int bytes,
              int is_signed, OBS_T* obs, float* rewards, unsigned char* terminated, unsigned char* truncated,
              unsigned char* done, OBS_T* final_obs, float* ep_return, int* ep_length, float* stats, int mode,
              int max_steps, fv_u64* error) {
#define EMU_STEP(fn) [=] { fn(n, slots, a, es, as, ds, bytes, is_signed, obs, rewards, terminated, truncated, done, \
                              final_obs, ep_return, ep_length, stats, mode, max_steps, error); }
    switch (kernel) {
    case 0: launch(n, FV_STAGE_THREADS, EMU_STEP(fv_step_staged_wide_kernel)); break;
    case 1: launch(n, 256, EMU_STEP(fv_step_wide_kernel)); break;
    default: launch(n, 256, EMU_STEP(fv_step_wide_occ_kernel)); break;
    }
#undef EMU_STEP
}

void emu_rollout(int staged, int n, int steps, fv_u64 key, long long t0, char* slots, OBS_T* obs, float* rewards,
                 unsigned char* terminated, unsigned char* truncated, unsigned char* done, OBS_T* final_obs,
                 float* ep_return, int* ep_length, float* stats, int mode, int max_steps) {
    if (staged)
        launch(n, FV_STAGE_THREADS, [=] { fv_rollout_random_staged_kernel(n, steps, key, t0, slots, obs, rewards, terminated,
                                                                          truncated, done, final_obs, ep_return, ep_length,
                                                                          stats, mode, max_steps); });
    else
        launch(n, 256, [=] { fv_rollout_random_kernel(n, steps, key, t0, slots, obs, rewards, terminated, truncated, done,
                                                      final_obs, ep_return, ep_length, stats, mode, max_steps); });
}

void emu_observe(int n, char* slots, const unsigned char* which, unsigned char* masks, float* world) {
    launch(n, 256, [=] { fv_observe_kernel(n, slots, which, masks, world); });
}

void emu_random_actions(int n, fv_u64 key, long long t, ACT_T* actions) {
    launch(n, 256, [=] { fv_random_actions_kernel(n, key, t, actions); });
}
}
