/* head_rollout_on_cpu.cpp: rollout.cu's rollout_step_kernel (the GEMM path's policy step: the decoder bias added to
 * each row, a MultiDiscrete or Box head's draw, the env step) built for the CPU with a MultiDiscrete or Box env (ENV,
 * its defines and POLICY_HEAD_SIZE on the command line), for tests/emulation/test_head_rollout_step.py on
 * cuda_on_cpu.h's threads. */
#include "rollout_on_cpu.h"

extern "C" {
#include "rollout_step_on_cpu.h"

int emu_head_y(void) { return HEAD_Y; }

/* rollout_common.cu's step_slices of step t for a slot of R rows and horizon T: the byte offset of step t's action
 * slice from the (T, R, ACTION_DIMS) actions buffer's start (a Box or MultiDiscrete env's values, not int32). */
long long emu_action_slice_bytes(int R, int T, int t) {
    RolloutArgs a = {};
    static char actions[1 << 16];
    a.actions = reinterpret_cast<int*>(actions), a.R = R, a.T = T;
    StepSlices s = step_slices(a, t);
    return reinterpret_cast<const char*>(s.actions) - actions;
}

/* host_sample_kernel over a group's rows [row0, row0 + rows) in blocks of `block` threads: y (rows, HEAD_Y) with the
 * decoder's bias, logstd (ACTION_DIMS,) a Box head's. */
void emu_host_sample(int block, int rows, int row0, const float* y, const float* logstd, void* actions, float* logp,
                     float* values, const TrainScalars* scalars, int t, unsigned long long seed_key) {
    launch(rows, block, [=] {
        host_sample_kernel(rows, row0, y, logstd, nullptr, (int*)actions, logp, values, scalars, t, seed_key);
    });
}

/* host_record_kernel for n envs, a thread per obs element (as the host launches it). */
void emu_host_record(int n, const float* obs_in, const float* rewards_in, const float* ep_return_in,
                     const float* ep_stats_in, const int* ep_length_in, const unsigned char* terminated_in,
                     const unsigned char* truncated_in, float* obs_next, float* rewards, float* dones,
                     float* starts_next, double* episode_acc, int num_stats, int reward_clamp) {
    HostRecordArgs a = {obs_in, rewards_in, ep_return_in, ep_stats_in, ep_length_in, terminated_in, truncated_in,
                        obs_next, rewards, dones, starts_next, episode_acc, n, NUM_AGENTS, OBS_SIZE, num_stats,
                        reward_clamp};
    launch(max((long long)n * NUM_AGENTS * OBS_SIZE, (long long)n), 256, [=] { host_record_kernel(a); });
}
}
