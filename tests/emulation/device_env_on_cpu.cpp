/* device_env_on_cpu.cpp: rollout.cu's device-env kernels (a MuJoCo task on MuJoCo Warp: the actions handed to the
 * env, its step outputs turned into host_record_kernel's inputs) built for the CPU with the trainer module's env
 * (ENV: the host stub a MuJoCo task's module compiles around), for tests/emulation/test_device_env_kernels.py on
 * cuda_on_cpu.h's threads, with device_envs.py's grids. */
#include "rollout_on_cpu.h"

extern "C" {
void emu_device_env_actions(long long n, int dims, const float* actions, const float* low, const float* high,
                            float* out) {
    launch(n * dims, 256, [=] { device_env_actions_kernel(n, dims, actions, low, high, out); });
}

void emu_device_env_outputs(const double* obs, const double* rewards, const unsigned char* terminated,
                            const unsigned char* truncated, double* run_return, int* run_length, float* obs_out,
                            float* rewards_out, float* ep_return_out, int* ep_length_out,
                            unsigned char* terminated_out, unsigned char* truncated_out, int n, int obs_size) {
    long long threads = max((long long)n * obs_size, (long long)n);
    launch(threads, 256, [=] {
        device_env_outputs_kernel(obs, rewards, terminated, truncated, run_return, run_length, obs_out, rewards_out,
                                  ep_return_out, ep_length_out, terminated_out, truncated_out, n, obs_size);
    });
}
}
