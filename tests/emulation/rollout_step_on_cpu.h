/* rollout_step_on_cpu.h: the entry points a harness of rollout.cu's rollout_step_kernel shares (after
 * rollout_on_cpu.h, inside its extern "C"): the slot size, a reset of n games, and one policy step at step t. */

int emu_slot_size(void) { return (int)sizeof(fv_slot); }

void emu_reset(int n, fv_slot* slots, const fv_u64* seeds, OBS_T* env_obs) {
    launch(n, 256, [=] { fv_reset_kernel(n, slots, seeds, nullptr, env_obs); });
}

/* rollout_step_kernel at step t for n envs: y (R, HEAD_Y) the decoder output without dec_bias (HEAD_Y, then a Box
 * head's log-stds); actions (R, ACTION_DIMS) of the env's action type; masks (R, A) step t's available actions, or
 * NULL for an unmasked head; the env's observations go to env_obs. */
void emu_rollout_step(int n, int t, const float* y, const float* dec_bias, fv_slot* slots, float* final_obs,
                      unsigned char* terminated, unsigned char* truncated, float* ep_return, int* ep_length,
                      float* ep_stats, double* episode_acc, const TrainScalars* scalars, unsigned long long seed_key,
                      int max_episode_steps, OBS_T* env_obs, void* actions, float* logp, float* values,
                      float* rewards, float* dones, float* starts_next, const unsigned char* masks) {
    RolloutArgs a = {};
    a.y = y, a.dec_bias = dec_bias, a.slots = slots, a.final_obs = final_obs, a.terminated = terminated;
    a.truncated = truncated, a.ep_return = ep_return, a.ep_length = ep_length, a.ep_stats = ep_stats;
    a.episode_acc = episode_acc, a.scalars = scalars, a.seed_key = seed_key, a.num_envs = n;
    a.R = n * NUM_AGENTS, a.max_episode_steps = max_episode_steps;
    StepSlices s = {};
    s.obs_next = env_obs, s.actions = (int*)actions, s.logp = logp, s.values = values, s.rewards = rewards;
    s.dones = dones, s.starts_next = starts_next, s.masks = masks;
    launch(n, 256, [=] { rollout_step_kernel(a, s, t); });
}
