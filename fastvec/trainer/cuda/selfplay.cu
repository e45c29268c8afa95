/* selfplay.cu: self-play with the games and the frozen opponents on the GPU, compiled into rollout.cu with the
 * fused policy's sizes (every snapshot in the pool has the learner's architecture). Game g's learner plays
 * seat (g + seat_offset) % NUM_AGENTS; its other seats are "opponent rows" g * (NUM_AGENTS - 1) + k, played by
 * the pool snapshot game_weights[g] names, which changes only on the step the game ends (SAME_STEP autoreset).
 * pool_forward_kernel acts for the opponents, selfplay_step_kernel steps the games after the learner's GEMM
 * forward; the evaluation matches (cuda/matches.py) use match_reset_kernel, match_forward_kernel and
 * match_step_kernel. selfplay.py's draw_opponents and SelfPlayBatch are the host twins of this file. */

/* pool_table (int32): [members, latest_prob (float bits), the members' pool slots, oldest first]. */
#define POOL_HEADER 2
#define POOL_SECOND_STREAM 0x706F6F6C2D75ULL  /* selfplay.py's POOL_SECOND_STREAM */

/* The next opponent of game `game` at rollout step `step`: the newest member with probability latest_prob,
 * else a member drawn uniformly (two counter-based uniforms: selfplay.draw_opponents). */
__device__ __forceinline__ int draw_opponent(const int* pool_table, unsigned long long pool_key, long long game,
                                             long long step) {
    int count = pool_table[0];
    float latest_prob = __int_as_float(pool_table[1]);
    if (policy_uniform(pool_key, game, step) < latest_prob) return pool_table[POOL_HEADER + count - 1];
    int index = (int)(policy_uniform(pool_key ^ POOL_SECOND_STREAM, game, step) * (float)count);
    return pool_table[POOL_HEADER + min(index, count - 1)];
}

/* The seat of game row k: with per_game = NUM_AGENTS - 1 (opponent rows) the seats other than the learner's. */
__device__ __forceinline__ int row_seat(int k, int per_game, int learner_seat) {
    return per_game == NUM_AGENTS ? k : (k < learner_seat ? k : k + 1);
}

/* A thread per row j = g * per_game + k (seat row_seat(k)) of `rows`: the policy step of the snapshot in pool
 * slot game_weights[g] (or player_slot for the learner's seat when per_game == NUM_AGENTS and player_slot >= 0)
 * on the seat's obs in game_obs (N, NUM_AGENTS, O); state (Ls, rows, H) and starts (rows,) are the rows' own.
 * The action is sampled with policy_uniform(key, j, step) (or the argmax with deterministic), step =
 * scalars->rollout_steps + t (t alone without scalars). Dynamic shared memory: (H, blockDim) floats. */
__global__ void pool_forward_kernel(int rows, int per_game, int seat_offset, int player_slot, const float* pool,
                                    long long pool_stride, const int* game_weights, const OBS_T* game_obs,
                                    const float* starts, float* state, int* actions, unsigned long long key,
                                    const TrainScalars* scalars, long long t, int deterministic) {
    extern __shared__ float4 shared4[];
    float* scratch = reinterpret_cast<float*>(shared4);
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= rows) return;
    int g = j / per_game, learner = (g + seat_offset) % NUM_AGENTS;
    int seat = row_seat(j % per_game, per_game, learner);
    int slot = (per_game == NUM_AGENTS && player_slot >= 0 && seat == learner) ? player_slot : game_weights[g];
    float y[NUM_ACTIONS + 1];
    thread_policy_forward(pool + (long long)slot * pool_stride,
                          game_obs + ((long long)g * NUM_AGENTS + seat) * OBS_SIZE, 1.0f - starts[j], state, state, j,
                          rows, scratch + threadIdx.x, blockDim.x, y);
    int action = 0;
    if (deterministic) {
        for (int a = 1; a < NUM_ACTIONS; a++) action = y[a] > y[action] ? a : action;
    } else {
        float lp;
        action = sample_row(y, NUM_ACTIONS, policy_uniform(key, j, (scalars ? scalars->rollout_steps : 0) + t), &lp);
    }
    actions[j] = action;
}

/* 1 when `seat`'s return beats every other seat's, 0.5 when it ties the best, 0 otherwise (game_scores). */
__device__ __forceinline__ double seat_score(const float* returns, int seat) {
    float best = -INFINITY;
    for (int a = 0; a < NUM_AGENTS; a++)
        if (a != seat) best = fmaxf(best, returns[a]);
    return returns[seat] > best ? 1.0 : (returns[seat] == best ? 0.5 : 0.0);
}

/* A thread per game, after the learner's forward (y (N, A + 1) without the decoder bias dec_bias) and the
 * opponents' (opp_actions (N, NUM_AGENTS - 1)): sample the learner's action into the rollout buffers (as
 * sample_and_step_env), step the game (its obs into game_obs, SAME_STEP autoreset), record the learner seat's
 * obs, reward, done and start flags; at the game's end the learner's episode goes to episode_acc, its score
 * to selfplay_acc (games, sum of scores), and the game draws its next opponent. final_obs (N * NUM_AGENTS, O),
 * ep_return (N * NUM_AGENTS,), ep_length (N,) and ep_stats (N, S) are the batch layer's scratch. */
__global__ void selfplay_step_kernel(int N, int seat_offset, fv_slot* slots, const float* y, const float* dec_bias,
                                     OBS_T* game_obs, const int* opp_actions, OBS_T* obs_next, OBS_T* final_obs,
                                     int* actions, float* logp, float* values, float* rewards, float* dones,
                                     float* starts_next, float* opp_starts, unsigned char* terminated,
                                     unsigned char* truncated, float* ep_return, int* ep_length, float* ep_stats,
                                     double* episode_acc, int* game_weights, const int* pool_table,
                                     double* selfplay_acc, const TrainScalars* scalars, int t,
                                     unsigned long long seed_key, unsigned long long pool_key, int reward_clamp,
                                     int max_episode_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    long long step = scalars->rollout_steps + t;
    int learner = (i + seat_offset) % NUM_AGENTS;
    float yr[NUM_ACTIONS + 1];
    for (int m = 0; m <= NUM_ACTIONS; m++)
        yr[m] = y[(long long)i * (NUM_ACTIONS + 1) + m] + (dec_bias ? dec_bias[m] : 0.0f);
    float lp;
    int action = sample_row(yr, NUM_ACTIONS, policy_uniform(seed_key, i, step), &lp);
    actions[i] = action;
    logp[i] = lp;
    values[i] = yr[NUM_ACTIONS];
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++)
        act[a] = a == learner ? action : opp_actions[(long long)i * (NUM_AGENTS - 1) + (a < learner ? a : a - 1)];
    float reward[NUM_AGENTS];
    OBS_T* obs_i = game_obs + (long long)i * NUM_AGENTS * OBS_SIZE;
    float* returns = ep_return + (long long)i * NUM_AGENTS;
    fv_step_one(0, &slots[i], act, obs_i, reward, terminated + i, truncated + i,
                final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, returns, ep_length + i, ep_stats + i * NUM_STATS,
                FV_SAME_STEP, max_episode_steps);
    for (int k = 0; k < OBS_SIZE; k++) obs_next[(long long)i * OBS_SIZE + k] = obs_i[learner * OBS_SIZE + k];
    float done = (float)(terminated[i] | truncated[i]);
    rewards[i] = reward_clamp ? fminf(fmaxf(reward[learner], -1.0f), 1.0f) : reward[learner];
    dones[i] = done;
    starts_next[i] = done;
    for (int k = 0; k < NUM_AGENTS - 1; k++) opp_starts[(long long)i * (NUM_AGENTS - 1) + k] = done;
    if (done != 0.0f) {
        atomicAdd(&episode_acc[0], 1.0);
        atomicAdd(&episode_acc[1], (double)returns[learner]);
        atomicAdd(&episode_acc[2], (double)ep_length[i]);
        for (int k = 0; k < NUM_STATS; k++) atomicAdd(&episode_acc[3 + k], (double)ep_stats[i * NUM_STATS + k]);
        atomicAdd(&selfplay_acc[0], 1.0);
        atomicAdd(&selfplay_acc[1], seat_score(returns, learner));
        game_weights[i] = draw_opponent(pool_table, pool_key, i, step);
    }
}

/* ------------------------------------------------------------------------------------------------
 * Evaluation matches (cuda/matches.py): every match of one evaluation in one batch of N games, games_per_match
 * games a match. Game g is game `local` = g % games_per_match of its match, reset with seed (seed << 32) + local.
 * bot_levels[g] >= 0: the env's bot plays the seats other than the player's seat 0 (an env compiled with its
 * bot level at -1 defines FV_BOT_LEVELS and takes the level per game through env_set_bot_level; otherwise the
 * module is a bot build of one level, one agent); -1: a match against the policy in weights row
 * game_weights[g], the player on seat local % NUM_AGENTS. The player's weights are row 0. A game's score is
 * the player's at its first end (selfplay.play_bot / play_match, the CPU versions): NaN until then, and a
 * scored game is stepped no more. */
#ifndef FV_BOT_LEVELS
#define FV_BOT_LEVELS 0
#endif
__device__ const int match_bot_levels = FV_BOT_LEVELS;
#define MATCH_WARPS 4 /* match_forward_kernel's rows per block */

__global__ void match_reset_kernel(int N, fv_slot* slots, const fv_u64* seeds, const int* bot_levels, OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
#if FV_BOT_LEVELS
    env_set_bot_level(&slots[i].env, bot_levels[i]);
#else
    (void)bot_levels;
#endif
    fv_reset_one(i, slots, seeds, nullptr, obs);
}

/* The policy step of row j = g * NUM_AGENTS + seat, a warp per row: lane u computes units u, u + 32, ... of
 * each layer exactly as thread_policy_forward computes them (the same dot_row sums, in the same order), so the
 * actions are those of a thread per row (pool_forward_kernel). The draw is policy_uniform(key, r, step0[0] + k)
 * with r the row's index within its match as a batch of its own (local for a bot match, local * NUM_AGENTS +
 * seat otherwise). state (Ls, rows, H), starts (rows,). Rows of scored games and the bot's seats do nothing. */
__global__ void __launch_bounds__(32 * MATCH_WARPS)
match_forward_kernel(int rows, int games_per_match, const float* weights, long long stride, const int* game_weights,
                     const int* bot_levels, const float* scores, const OBS_T* game_obs, const float* starts,
                     float* state, int* actions, unsigned long long key, const long long* step0, int k,
                     int deterministic) {
    __shared__ __align__(16) float buffers[MATCH_WARPS][2][PH];
    __shared__ float ys[MATCH_WARPS][NUM_ACTIONS + 1];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long j = (long long)blockIdx.x * MATCH_WARPS + warp;
    if (j >= rows) return; /* whole warps leave: no block-wide barrier follows */
    int g = (int)(j / NUM_AGENTS), seat = (int)(j % NUM_AGENTS), local = g % games_per_match;
    int vs_bot = bot_levels[g] >= 0;
    if (!isnan(scores[g]) || (vs_bot && seat != 0)) return;
    int player = vs_bot ? 0 : local % NUM_AGENTS;
    const float* w = weights + (long long)(seat == player ? 0 : game_weights[g]) * stride;
    const OBS_T* o = game_obs + j * OBS_SIZE;
#if POLICY_MINGRU
    float keep = 1.0f - starts[j];
#else
    (void)starts;
    (void)state;
#endif
    float* x = buffers[warp][0];
    float* out = buffers[warp][1];
    for (int u = lane; u < PH; u += 32) {
        float acc = 0.0f;
        for (int q = 0; q < OBS_SIZE; q++) acc = fmaf(w[P_ENC_W + u * OBS_SIZE + q], (float)o[q], acc);
        x[u] = acc + w[P_ENC_B + u];
    }
    __syncwarp();
    for (int l = 0; l < POLICY_LAYERS; l++) {
        const float* lw = w + P_LAYER(l);
        const float* lb = lw + PW * PH;
        for (int u = lane; u < PH; u += 32) {
            float zp = dot_row(lw + u * PH, x) + lb[u];
            float value;
#if POLICY_MINGRU
            float cp = dot_row(lw + (PH + u) * PH, x) + lb[PH + u];
            float z = sigmoidf_ref(zp), c = mingru_g(cp);
            long long si = ((long long)l * rows + j) * PH + u;
            float h = fmaf(z, c, (1.0f - z) * keep * state[si]);
            state[si] = h;
            value = h;
#if POLICY_HIGHWAY
            float s = sigmoidf_ref(dot_row(lw + (2 * PH + u) * PH, x) + lb[2 * PH + u]);
            value = fmaf(s, h, (1.0f - s) * x[u]);
#endif
#else
            value = fmaxf(zp, 0.0f);
#endif
            out[u] = value;
        }
        __syncwarp();
        float* next = out;
        out = x;
        x = next;
    }
    float* y = ys[warp];
    for (int m = lane; m < NUM_ACTIONS + 1; m += 32) y[m] = dot_row(w + P_DEC_W + m * PH, x) + w[P_DEC_B + m];
    __syncwarp();
    if (lane != 0) return;
    int action = 0;
    if (deterministic) {
        for (int a = 1; a < NUM_ACTIONS; a++) action = y[a] > y[action] ? a : action;
    } else {
        long long r = vs_bot ? local : (long long)local * NUM_AGENTS + seat;
        float lp;
        action = sample_row(y, NUM_ACTIONS, policy_uniform(key, r, step0[0] + k), &lp);
    }
    actions[j] = action;
}

/* A thread per unscored game: step it with seat_actions (N, NUM_AGENTS) (SAME_STEP), set its seats' starts
 * where it ended, and score the player's first end into scores (N,), counting it off remaining[0]. The thread
 * of game 0 adds `advance` to step0[0] (the steps of one graph replay, on its last step). */
__global__ void match_step_kernel(int N, int games_per_match, fv_slot* slots, const int* bot_levels,
                                  const int* seat_actions, OBS_T* game_obs, OBS_T* final_obs, float* starts,
                                  unsigned char* terminated, unsigned char* truncated, float* ep_return,
                                  int* ep_length, float* ep_stats, float* scores, int* remaining, long long* step0,
                                  int advance, int max_episode_steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) step0[0] += advance;
    if (i >= N || !isnan(scores[i])) return;
    long long act[NUM_AGENTS];
    for (int a = 0; a < NUM_AGENTS; a++) act[a] = seat_actions[(long long)i * NUM_AGENTS + a];
    float reward[NUM_AGENTS];
    float* returns = ep_return + (long long)i * NUM_AGENTS;
    fv_step_one(0, &slots[i], act, game_obs + (long long)i * NUM_AGENTS * OBS_SIZE, reward, terminated + i,
                truncated + i, final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, returns, ep_length + i,
                ep_stats + i * NUM_STATS, FV_SAME_STEP, max_episode_steps);
    float done = (float)(terminated[i] | truncated[i]);
    for (int a = 0; a < NUM_AGENTS; a++) starts[(long long)i * NUM_AGENTS + a] = done;
    if (done != 0.0f) {
        if (bot_levels[i] >= 0) {
            scores[i] = returns[0] > 0.0f ? 1.0f : (returns[0] == 0.0f ? 0.5f : 0.0f);
        } else {
            scores[i] = (float)seat_score(returns, (i % games_per_match) % NUM_AGENTS);
        }
        atomicSub(remaining, 1);
    }
}

/* After a reset: every game's learner seat's obs from game_obs (N, NUM_AGENTS, O) into obs (N, O). */
__global__ void selfplay_gather_kernel(int N, int seat_offset, const OBS_T* game_obs, OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    int learner = (i + seat_offset) % NUM_AGENTS;
    for (int k = 0; k < OBS_SIZE; k++)
        obs[(long long)i * OBS_SIZE + k] = game_obs[((long long)i * NUM_AGENTS + learner) * OBS_SIZE + k];
}
