/* device_env_on_cpu.cpp: rollout.cu's device-env kernels (a MuJoCo task on MuJoCo Warp: the actions handed to the
 * env, its step outputs turned into host_record_kernel's inputs) built for the CPU with the trainer module's env
 * (ENV: the host stub a MuJoCo task's module compiles around), for tests/emulation/test_device_env_kernels.py on
 * cuda_on_cpu.h's threads, with device_envs.py's grids. */
#include "cuda_on_cpu.h"

#include <vector_types.h> /* uint4, as the trainer's cuda_bf16.h brings it */
#define __constant__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __ldcg(p) (*(p))
static double atomicAdd(double* p, double v) {
    std::lock_guard<std::mutex> lock(atomic_mutex);
    double old = *p;
    *p += v;
    return old;
}
#define __CUDACC__ 1 /* the GPU branches of the env and batch files, as the trainer's module compiles them */
#include ENV
#include "batch.h"
#undef __CUDACC__ /* the trainer's files take cuda_bf16.h's host build, as heads_on_cpu.cpp's do */
#include "common.cu"
#include "policy.cu"
#include "ppo.cu"
#include "heads.cu"
#include "teams.cu"
#include "rollout.cu"

extern "C" {
void emu_device_env_actions(long long n, int dims, const float* actions, const float* low, const float* high,
                            float* out) {
    launch(n * dims, 256, [=] { device_env_actions_kernel(n, dims, actions, low, high, out); });
}

void emu_device_env_outputs(const double* obs, const double* rewards, const unsigned char* terminated,
                            const unsigned char* truncated, double* run_return, int* run_length, float* obs_out,
                            float* rewards_out, float* ep_return_out, int* ep_length_out,
                            unsigned char* terminated_out, unsigned char* truncated_out, int n, int obs_size) {
    long long threads = std::max((long long)n * obs_size, (long long)n);
    launch(threads, 256, [=] {
        device_env_outputs_kernel(obs, rewards, terminated, truncated, run_return, run_length, obs_out, rewards_out,
                                  ep_return_out, ep_length_out, terminated_out, truncated_out, n, obs_size);
    });
}
}
