/* selfplay_on_cpu.cpp: selfplay.cu's evaluation kernels (match_reset, match_stage, match_play), the thread
 * forward they must equal (pool_forward_kernel) and rollout_common.cu's step_slices built for the CPU, for
 * tests/emulation/test_selfplay_kernels.py, on cuda_on_cpu.h's threads. ENV names the env file; MATCH_PARTS the test's copy of selfplay.cu (which includes
 * rollout_common.cu's thread forward) with its dynamic shared memory declared as statics. */
#include "cuda_on_cpu.h"

#include <vector>
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __ldcg(p) (*(p))
static float __int_as_float(int u) { float x; memcpy(&x, &u, 4); return x; }
#include ENV
#include "batch.h"
#include "common.cu"
#include "policy.cu"
#include MATCH_PARTS

extern "C" {
int emu_slot_size(void) { return (int)sizeof(fv_slot); }
int emu_staged_floats(void) { return MATCH_STAGED; }
int emu_rows_per_warp(void) { return MATCH_ROWS; }
int emu_slices(void) { return MATCH_SLICES; }

void emu_match_reset(int n, fv_slot* slots, const fv_u64* seeds, const int* levels, OBS_T* obs) {
    launch(n, 256, [=] { match_reset_kernel(n, slots, seeds, levels, obs); });
}

void emu_match_stage(int rows, const float* weights, long long stride, float* staged) {
    launch((long long)rows * MATCH_STAGED, 256, [=] { match_stage_kernel(rows, weights, stride, staged); });
}

void emu_match_play(int blocks, int threads, int n, int games_per_match, int games_per_block, int shared_policies,
                    fv_slot* slots, const float* weights, long long stride, const float* staged,
                    const int* game_weights, const int* levels, OBS_T* game_obs, float* starts, float* state,
                    int* actions, float* scores, int* game_steps, int* remaining, unsigned long long key,
                    long long first_step, int steps, int deterministic, int max_steps) {
    MatchPlayArgs a = {slots, weights, staged, game_weights, levels, game_obs, starts, state, actions, scores,
                       game_steps, remaining, stride, key, first_step, n, games_per_match, games_per_block,
                       shared_policies, steps, deterministic, max_steps};
    launch_grid(blocks, threads, [=] { match_play_kernel(a); });
}

/* draw_opponent for games 0..n-1 at rollout step `step` (-1: a reset), as selfplay_step_kernel and the reset draw. */
void emu_draw_opponents(int n, const int* pool_table, unsigned long long pool_key, long long step, int* out) {
    for (int g = 0; g < n; g++) out[g] = draw_opponent(pool_table, pool_key, g, step);
}

/* selfplay_step_kernel at rollout step 0 of a one-step rollout (obs, starts (2, N, O) and (2, N); actions, logp,
 * values, rewards, dones (N,)) for n games, the step counter in scalars' rollout_steps. */
void emu_selfplay_step(int n, const float* y, const float* dec_bias, fv_slot* slots, OBS_T* final_obs,
                       unsigned char* terminated, unsigned char* truncated, float* ep_return, int* ep_length,
                       float* ep_stats, double* episode_acc, const TrainScalars* scalars, unsigned long long seed_key,
                       int reward_clamp, OBS_T* obs, float* starts, int* actions, float* logp, float* values,
                       float* rewards, float* dones, OBS_T* game_obs, const int* opp_actions, float* opp_starts,
                       int* game_weights, const int* pool_table, double* selfplay_acc, unsigned long long pool_key,
                       int seat_offset) {
    RolloutArgs a = {};
    a.obs = obs, a.starts = starts, a.actions = actions, a.logp = logp, a.values = values, a.rewards = rewards;
    a.dones = dones, a.y = y, a.dec_bias = dec_bias, a.slots = slots, a.final_obs = final_obs;
    a.terminated = terminated, a.truncated = truncated, a.ep_return = ep_return, a.ep_length = ep_length;
    a.ep_stats = ep_stats, a.episode_acc = episode_acc, a.scalars = scalars, a.seed_key = seed_key;
    a.num_envs = n, a.R = n, a.T = 1, a.K = 1, a.reward_clamp = reward_clamp;
    SelfPlayArgs sp = {game_obs, opp_actions, opp_starts, game_weights, pool_table, selfplay_acc, pool_key,
                       seat_offset};
    launch(n, 256, [=] { selfplay_step_kernel(a, sp, 0); });
}

void emu_pool_forward_mode(int rows, int per_game, const float* weights, long long stride, const int* game_weights,
                           const OBS_T* game_obs, const float* starts, float* state, int* actions,
                           unsigned long long key, long long t, int deterministic) {
    PoolForwardArgs a = {weights, game_weights, game_obs, starts, state, actions, nullptr, key, stride, t, rows,
                         per_game, 0, 0, deterministic};
    launch(rows, 128, [=] { pool_forward_kernel(a); });
}

void emu_pool_forward(int rows, int per_game, const float* weights, long long stride, const int* game_weights,
                      const OBS_T* game_obs, const float* starts, float* state, int* actions, unsigned long long key,
                      long long t) {
    emu_pool_forward_mode(rows, per_game, weights, stride, game_weights, game_obs, starts, state, actions, key, t, 0);
}

/* rollout_common.cu's step_slices of step t for a rollout slot of R rows and horizon T (buffers of their documented
 * sizes): out[] = each slice's offset in elements from its buffer's start, in StepSlices' order (obs and obs_next
 * in floats, as step_obs counts; state_out: 0 for a.state, 1 for a.last_state), masks last (-1: NULL). */
void emu_step_slices(int R, int T, int t, long long* out) {
    std::vector<float> obs((size_t)(T + 1) * R * OBS_SIZE), starts((size_t)(T + 1) * R), per_step((size_t)T * R * 5);
    std::vector<int> actions((size_t)T * R);
    float state[1], last_state[1];
    RolloutArgs a = {};
    a.obs = reinterpret_cast<OBS_T*>(obs.data()), a.starts = starts.data(), a.actions = actions.data();
    a.logp = per_step.data(), a.values = a.logp + T * R, a.rewards = a.values + T * R, a.dones = a.rewards + T * R;
    a.state = state, a.last_state = last_state, a.R = R, a.T = T;
    StepSlices s = step_slices(a, t);
    const float* obs0 = obs.data();
    out[0] = reinterpret_cast<const float*>(s.obs) - obs0;
    out[1] = s.starts - a.starts;
    out[2] = s.state_out == a.last_state ? 1 : s.state_out == a.state ? 0 : -1;
    out[3] = reinterpret_cast<const float*>(s.obs_next) - obs0;
    out[4] = s.actions - a.actions;
    out[5] = s.logp - a.logp, out[6] = s.values - a.values, out[7] = s.rewards - a.rewards;
    out[8] = s.dones - a.dones, out[9] = s.starts_next - a.starts;
    out[10] = s.masks ? 0 : -1;
}
}
