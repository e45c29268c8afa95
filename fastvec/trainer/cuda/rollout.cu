/* rollout.cu: the env-dependent half of the fused CUDA trainer, compiled after an env file, batch.h
 * and kernels.cu. One kernel per policy step does, for each env: sample every agent's action from
 * the decoder output (counter-based RNG), write action, log-probability and value into the rollout
 * buffers, step the env (batch.h's fv_step_one, SAME_STEP autoreset), write reward (optionally
 * clamped), done flag and next observation, and add finished episodes to the log accumulators.
 * This is NumpyTrainer.rollout's loop body (numpy_trainer.py) for one t, in one launch.
 */

extern "C" {

/* Rows are env-major (row = env * NUM_AGENTS + agent), as the NumPy trainer's reshape(rows, -1).
 * y (R, A + 1) decoder output for obs[t]; obs_next (R, O): where the env writes obs[t + 1];
 * actions/logp/values/rewards/dones (R,): step t's slices of the (T, R) buffers; starts_next (R,):
 * starts[t + 1]; final_obs (R, O), terminated/truncated/ep_length (N,), ep_return (R,) and
 * ep_stats (N, S) are the batch layer's scratch; episode_acc (3 + S) doubles: episodes, sum of
 * returns (mean over agents), sum of lengths, sums of the env's stats. */
__global__ void rollout_step_kernel(int N, fv_slot* slots, const float* y, OBS_T* obs_next, OBS_T* final_obs,
                                    int* actions, float* logp, float* values, float* rewards, float* dones,
                                    float* starts_next, unsigned char* terminated, unsigned char* truncated,
                                    float* ep_return, int* ep_length, float* ep_stats, double* episode_acc,
                                    const TrainScalars* scalars, int t, unsigned long long seed_key,
                                    int reward_clamp, int max_episode_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    long long step = scalars->rollout_steps + t;
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) {
        int row = i * NUM_AGENTS + a;
        const float* yr = y + (long long)row * (NUM_ACTIONS + 1);
        float lp;
        int action = sample_row(yr, NUM_ACTIONS, policy_uniform(seed_key, row, step), &lp);
        actions[row] = action;
        logp[row] = lp;
        values[row] = yr[NUM_ACTIONS];
        act[a] = action;
    }
    fv_step_one(i, slots, act, obs_next, rewards, terminated, truncated, final_obs, ep_return, ep_length,
                ep_stats, FV_SAME_STEP, max_episode_steps);
    float done = (float)(terminated[i] | truncated[i]);
    float ret = 0.0f;
    for (int a = 0; a < NUM_AGENTS; a++) {
        int row = i * NUM_AGENTS + a;
        float r = rewards[row];
        if (reward_clamp) rewards[row] = fminf(fmaxf(r, -1.0f), 1.0f);
        dones[row] = done;
        starts_next[row] = done;
        ret += ep_return[row];
    }
    if (done != 0.0f) { /* logs only: float atomics make these sums order-dependent, nothing else */
        atomicAdd(&episode_acc[0], 1.0);
        atomicAdd(&episode_acc[1], (double)(ret / NUM_AGENTS));
        atomicAdd(&episode_acc[2], (double)ep_length[i]);
        for (int k = 0; k < NUM_STATS; k++) atomicAdd(&episode_acc[3 + k], (double)ep_stats[i * NUM_STATS + k]);
    }
}

} /* extern "C" */
