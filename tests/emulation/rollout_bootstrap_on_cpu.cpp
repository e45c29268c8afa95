/* rollout_bootstrap_on_cpu.cpp: rollout.cu's fused policy steps at the bootstrap step T (policy_rollout_warp_kernel,
 * a warp per env, and policy_step_kernel, a thread per env: V(obs[T]) of every agent into last_value, the state
 * after it into last_state; no env step) built for the CPU with a two-agent env (ENV and its defines, the policy's
 * plan.policy_defines on the command line), for tests/emulation/test_rollout_bootstrap_kernels.py on
 * cuda_on_cpu.h's threads. The test puts its copy of rollout.cu, with the dynamic shared memory declared as statics,
 * first on the quoted include path (-iquote), so that rollout_on_cpu.h's #include "rollout.cu" takes it. */
#include "cuda_on_cpu.h"
#include "rollout_on_cpu.h"

extern "C" {
int emu_num_agents(void) { return NUM_AGENTS; }

static RolloutArgs bootstrap_args(int num_envs, int T, int K, const float* params, float* obs, float* starts,
                                  float* state, float* last_state, float* last_value, const TrainScalars* scalars) {
    RolloutArgs a = {};
    a.obs = (OBS_T*)obs, a.starts = starts, a.params = params, a.state = state, a.last_state = last_state;
    a.last_value = last_value, a.scalars = scalars, a.num_envs = num_envs, a.R = num_envs * NUM_AGENTS, a.T = T;
    a.K = K;
    return a;
}

/* policy_rollout_warp_kernel over steps T..T (the bootstrap alone), a warp per env in blocks of `block` threads. */
void emu_warp_bootstrap(int num_envs, int block, int T, int K, const float* params, float* obs, float* starts,
                        float* state, float* last_state, float* last_value, const TrainScalars* scalars) {
    RolloutArgs a = bootstrap_args(num_envs, T, K, params, obs, starts, state, last_state, last_value, scalars);
    launch((long long)num_envs * 32, block, [=] { policy_rollout_warp_kernel(a, T, 1); });
}

/* policy_step_kernel at step T with bootstrap = 1, a thread per env in blocks of `block` threads. */
void emu_thread_bootstrap(int num_envs, int block, int T, int K, const float* params, float* obs, float* starts,
                          float* state, float* last_state, float* last_value, const TrainScalars* scalars) {
    RolloutArgs a = bootstrap_args(num_envs, T, K, params, obs, starts, state, last_state, last_value, scalars);
    StepSlices s = {};
    s.obs = step_obs(a.obs, T, a.R), s.starts = a.starts + (long long)T * a.R, s.state_out = a.last_state;
    launch(num_envs, block, [=] { policy_step_kernel(a, s, T, 1); });
}
}
