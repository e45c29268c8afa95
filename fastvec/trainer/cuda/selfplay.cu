/* selfplay.cu: self-play with the games and the frozen opponents on the GPU, compiled into rollout.cu with the
 * fused policy's sizes (every snapshot in the pool has the learner's architecture). Game g's learner plays
 * seat (g + seat_offset) % NUM_AGENTS; its other seats are "opponent rows" g * (NUM_AGENTS - 1) + k, played by
 * the pool snapshot game_weights[g] names, which changes only on the step the game ends (SAME_STEP autoreset).
 * pool_forward_kernel acts for the opponents, selfplay_step_kernel steps the games after the learner's GEMM
 * forward; the evaluation matches (cuda/matches.py) use match_reset_kernel, match_stage_kernel and
 * match_play_kernel. selfplay.py's draw_opponents and SelfPlayBatch are the host twins of this file. */

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

/* The weights as match_play_kernel reads them ("staged", MATCH_STAGED floats a policy): each layer's gate
 * matrices (z, c, then the highway's s; the one matrix of an MLP layer), then the decoder's NUM_ACTIONS logit
 * rows (the value row does not act). An (R, PH) matrix is kept in blocks of 32 rows, and within a block the
 * float4 of columns 4k..4k+3 of its rows lie side by side: the lanes of a warp, a row each, read consecutive
 * float4s (no shared-memory bank conflict) where the flat layout's rows lie PH floats apart. */
#define MATCH_GATES (PW / PH)
#define MATCH_MATRIX (PH * PH)
#define MATCH_DECODER (POLICY_LAYERS * MATCH_GATES * MATCH_MATRIX)
#define MATCH_STAGED (MATCH_DECODER + NUM_ACTIONS * PH)
#define MATCH_UNITS ((PH + 31) / 32) /* hidden units a lane computes */
#define MATCH_ROWS 2 /* rows (one policy's, in games side by side) a warp computes together: a weight read serves each */
__device__ const int match_staged_floats = MATCH_STAGED;
__device__ const int match_rows_per_warp = MATCH_ROWS;

/* The float4 index, in its staged (R, PH) matrix, of row r's columns 4 * k4 .. 4 * k4 + 3. */
__device__ __forceinline__ int match_row4(int R, int r, int k4) {
    int b = r >> 5;
    return 8 * b * PH + k4 * min(32, R - 32 * b) + (r & 31);
}

/* A thread per staged float of `rows` weight rows (stride floats apart, the flat layout): staged (rows, MATCH_STAGED). */
__global__ void match_stage_kernel(int rows, const float* weights, long long stride, float* staged) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)rows * MATCH_STAGED) return;
    int p = (int)(i / MATCH_STAGED), d = (int)(i % MATCH_STAGED);
    int decoder = d >= MATCH_DECODER;
    int matrix = decoder ? POLICY_LAYERS * MATCH_GATES : d / MATCH_MATRIX, R = decoder ? NUM_ACTIONS : PH;
    int e = d - matrix * MATCH_MATRIX, b = e / (32 * PH), rem = e % (32 * PH), nb = min(32, R - 32 * b);
    int q = rem >> 2, r = 32 * b + q % nb, c = 4 * (q / nb) + (rem & 3);
    int source = decoder ? P_DEC_W + r * PH + c
                         : P_LAYER(matrix / MATCH_GATES) + ((matrix % MATCH_GATES) * PH + r) * PH + c;
    staged[i] = weights[(long long)p * stride + source];
}

/* Steps first_step .. first_step + steps - 1 of the unscored games, a launch (cuda/matches.py relaunches until
 * every game has a score). A block plays games_per_block games of one match (ceil(games_per_match /
 * games_per_block) blocks a match, in match order), with the policies it needs (the player's, the opponent's)
 * copied from staged (rows, MATCH_STAGED) into its shared memory when shared_policies > 0, else read from
 * staged. Warp w computes seat role w % NUM_AGENTS (0: the player's seat, k: the opponent's k-th seat) of
 * the block's games (w / NUM_AGENTS) * MATCH_ROWS + r, r < MATCH_ROWS; then a thread per game steps it
 * (SAME_STEP), sets its seats' starts, and scores its first end into scores (N,), its step count into
 * game_steps (N,), counting it off remaining[0]. A block leaves once its games all have scores.
 * A row's policy step: lane u computes units u, u + 32, ... of each layer with dot_row's sums in dot_row's order
 * (and the encoder's, the gates' and the mixes' expressions as thread_policy_forward's), so actions and states
 * are those of a thread per row (pool_forward_kernel). The draw at step t is policy_uniform(key, r, t) with r
 * the row's index within its match as a batch of its own (local for a bot match, local * NUM_AGENTS + seat
 * otherwise); deterministic: the argmax. Each step's actions go to actions (N * NUM_AGENTS,); the rows' MinGRU
 * states (Ls, N * NUM_AGENTS, H) and start flags (N * NUM_AGENTS,) are read at the start and written back.
 * Dynamic shared memory (floats): shared_policies * MATCH_STAGED, then per warp MATCH_ROWS * (2 * PH +
 * NUM_ACTIONS), then games_per_block * (NUM_AGENTS + 1) + 1 ints. */
__global__ void match_play_kernel(int N, int games_per_match, int games_per_block, int shared_policies,
                                  fv_slot* slots, const float* weights, long long stride, const float* staged,
                                  const int* game_weights, const int* bot_levels, OBS_T* game_obs, OBS_T* final_obs,
                                  float* starts, float* state, int* actions, unsigned char* terminated,
                                  unsigned char* truncated, float* ep_return, int* ep_length, float* ep_stats,
                                  float* scores, int* game_steps, int* remaining, unsigned long long key,
                                  long long first_step, int steps, int deterministic, int max_episode_steps) {
    extern __shared__ float4 match_shared4[];
    const int G = MATCH_ROWS;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    int blocks_per_match = (games_per_match + games_per_block - 1) / games_per_block;
    int first_local = (blockIdx.x % blocks_per_match) * games_per_block;
    int count = min(games_per_block, games_per_match - first_local);
    long long g0 = (long long)(blockIdx.x / blocks_per_match) * games_per_match + first_local;
    if (g0 >= N) return; /* the whole block */
    int vs_bot = bot_levels[g0] >= 0, opponent = vs_bot ? 0 : game_weights[g0];
    float* shared_weights = reinterpret_cast<float*>(match_shared4);
    float* buffers = shared_weights + shared_policies * MATCH_STAGED;
    float* ys = buffers + warps * G * 2 * PH;
    int* seat_actions = reinterpret_cast<int*>(ys + warps * G * NUM_ACTIONS);
    int* open_flags = seat_actions + games_per_block * NUM_AGENTS;
    int* open_count = open_flags + games_per_block;
    const float* staged_player = staged;
    const float* staged_opponent = staged + (long long)opponent * MATCH_STAGED;
    if (shared_policies > 0) {
        const int n4 = MATCH_STAGED / 4;
        const float4* player4 = reinterpret_cast<const float4*>(staged_player);
        const float4* opponent4 = reinterpret_cast<const float4*>(staged_opponent);
        for (int i = threadIdx.x; i < n4 * (vs_bot ? 1 : 2); i += blockDim.x)
            match_shared4[i] = i < n4 ? player4[i] : opponent4[i - n4];
        staged_player = shared_weights;
        staged_opponent = shared_weights + MATCH_STAGED;
    }
    if (threadIdx.x == 0) {
        int open = 0;
        for (int c = 0; c < count; c++) {
            open_flags[c] = isnan(scores[g0 + c]) ? 1 : 0;
            open += open_flags[c];
        }
        *open_count = open;
    }

    /* This warp's rows: role 0 the player's seat, role k >= 1 the opponent's k-th seat (none against the bot). */
    int role = warp % NUM_AGENTS, group = warp / NUM_AGENTS;
    int plays = (role == 0 || !vs_bot) && group * G < count;
    const float* w = weights + (long long)(role == 0 ? 0 : opponent) * stride;
    const float* sw = role == 0 ? staged_player : staged_opponent;
    long long rows = (long long)N * NUM_AGENTS;
    int game_of[G], seat_of[G], valid[G];
    long long row_of[G], draw_of[G];
#pragma unroll
    for (int r = 0; r < G; r++) {
        int c = group * G + r;
        valid[r] = plays && c < count;
        c = min(c, count - 1); /* a row past the block's games mirrors its last game and writes nothing */
        int local = first_local + c, player = vs_bot ? 0 : local % NUM_AGENTS;
        int seat = role == 0 ? player : (role - 1 < player ? role - 1 : role);
        game_of[r] = c;
        seat_of[r] = seat;
        row_of[r] = (g0 + c) * NUM_AGENTS + seat;
        draw_of[r] = vs_bot ? (long long)local : (long long)local * NUM_AGENTS + seat;
    }
#if POLICY_MINGRU
    float h[G][POLICY_LAYERS][MATCH_UNITS], keep[G];
#pragma unroll
    for (int r = 0; r < G; r++) {
        keep[r] = plays ? 1.0f - starts[row_of[r]] : 0.0f;
#pragma unroll
        for (int l = 0; l < POLICY_LAYERS; l++)
#pragma unroll
            for (int t = 0; t < MATCH_UNITS; t++) {
                int u = lane + 32 * t;
                h[r][l][t] = plays && u < PH ? state[((long long)l * rows + row_of[r]) * PH + u] : 0.0f;
            }
    }
#endif
    __syncthreads();

    for (int step = 0; step < steps; step++) {
        long long t_step = first_step + step;
        int open = 0;
#pragma unroll
        for (int r = 0; r < G; r++) open |= valid[r] && open_flags[game_of[r]];
        if (open) {
            float* x[G];
            float* out[G];
#pragma unroll
            for (int r = 0; r < G; r++) {
                x[r] = buffers + (warp * G + r) * 2 * PH;
                out[r] = x[r] + PH;
                const OBS_T* o = game_obs + row_of[r] * OBS_SIZE;
#pragma unroll
                for (int t = 0; t < MATCH_UNITS; t++) {
                    int u = lane + 32 * t;
                    if (u < PH) {
                        float acc = 0.0f;
                        for (int q = 0; q < OBS_SIZE; q++) acc = fmaf(w[P_ENC_W + u * OBS_SIZE + q], (float)o[q], acc);
                        x[r][u] = acc + w[P_ENC_B + u];
                    }
                }
            }
            __syncwarp();
#pragma unroll
            for (int l = 0; l < POLICY_LAYERS; l++) {
                const float4* m4 = reinterpret_cast<const float4*>(sw + l * MATCH_GATES * MATCH_MATRIX);
                const float* lb = w + P_LAYER(l) + PW * PH;
                int first4[MATCH_UNITS], step4[MATCH_UNITS];
#pragma unroll
                for (int t = 0; t < MATCH_UNITS; t++) {
                    int u = min(lane + 32 * t, PH - 1);
                    first4[t] = match_row4(PH, u, 0);
                    step4[t] = match_row4(PH, u, 1) - first4[t];
                }
                float acc[MATCH_UNITS][MATCH_GATES][G];
#pragma unroll
                for (int t = 0; t < MATCH_UNITS; t++)
#pragma unroll
                    for (int gate = 0; gate < MATCH_GATES; gate++)
#pragma unroll
                        for (int r = 0; r < G; r++) acc[t][gate][r] = 0.0f;
#pragma unroll
                for (int k4 = 0; k4 < PH / 4; k4++) {
                    float4 xv[G];
#pragma unroll
                    for (int r = 0; r < G; r++) xv[r] = reinterpret_cast<const float4*>(x[r])[k4];
#pragma unroll
                    for (int t = 0; t < MATCH_UNITS; t++)
#pragma unroll
                        for (int gate = 0; gate < MATCH_GATES; gate++) {
                            float4 wv = m4[gate * (MATCH_MATRIX / 4) + first4[t] + k4 * step4[t]];
#pragma unroll
                            for (int r = 0; r < G; r++) { /* dot_row's group of four, then its running sum */
                                float part = fmaf(wv.x, xv[r].x, wv.y * xv[r].y);
                                part = fmaf(wv.z, xv[r].z, part);
                                acc[t][gate][r] += fmaf(wv.w, xv[r].w, part);
                            }
                        }
                }
#pragma unroll
                for (int t = 0; t < MATCH_UNITS; t++) {
                    int u = lane + 32 * t;
                    if (u >= PH) continue;
#pragma unroll
                    for (int r = 0; r < G; r++) {
                        float zp = acc[t][0][r] + lb[u];
                        float value;
#if POLICY_MINGRU
                        float cp = acc[t][1][r] + lb[PH + u];
                        float z = sigmoidf_ref(zp), c = mingru_g(cp);
                        float hn = fmaf(z, c, (1.0f - z) * keep[r] * h[r][l][t]);
                        h[r][l][t] = hn;
                        value = hn;
#if POLICY_HIGHWAY
                        float s = sigmoidf_ref(acc[t][2][r] + lb[2 * PH + u]);
                        value = fmaf(s, hn, (1.0f - s) * x[r][u]);
#endif
#else
                        value = fmaxf(zp, 0.0f);
#endif
                        out[r][u] = value;
                    }
                }
                __syncwarp();
#pragma unroll
                for (int r = 0; r < G; r++) {
                    float* next = out[r];
                    out[r] = x[r];
                    x[r] = next;
                }
            }
            const float4* d4 = reinterpret_cast<const float4*>(sw + MATCH_DECODER);
            for (int m = lane; m < NUM_ACTIONS; m += 32) {
                int first = match_row4(NUM_ACTIONS, m, 0), stride4 = match_row4(NUM_ACTIONS, m, 1) - first;
                float acc[G];
#pragma unroll
                for (int r = 0; r < G; r++) acc[r] = 0.0f;
#pragma unroll
                for (int k4 = 0; k4 < PH / 4; k4++) {
                    float4 wv = d4[first + k4 * stride4];
#pragma unroll
                    for (int r = 0; r < G; r++) {
                        float4 xv = reinterpret_cast<const float4*>(x[r])[k4];
                        float part = fmaf(wv.x, xv.x, wv.y * xv.y);
                        part = fmaf(wv.z, xv.z, part);
                        acc[r] += fmaf(wv.w, xv.w, part);
                    }
                }
#pragma unroll
                for (int r = 0; r < G; r++) ys[(warp * G + r) * NUM_ACTIONS + m] = acc[r] + w[P_DEC_B + m];
            }
            __syncwarp();
#pragma unroll
            for (int r = 0; r < G; r++) {
                if (lane != r || !valid[r]) continue;
                const float* y = ys + (warp * G + r) * NUM_ACTIONS;
                int action = 0;
                if (deterministic) {
                    for (int a = 1; a < NUM_ACTIONS; a++) action = y[a] > y[action] ? a : action;
                } else {
                    float lp;
                    action = sample_row(y, NUM_ACTIONS, policy_uniform(key, draw_of[r], t_step), &lp);
                }
                seat_actions[game_of[r] * NUM_AGENTS + seat_of[r]] = action;
                actions[row_of[r]] = action;
            }
        }
        __syncthreads();
        for (int c = threadIdx.x; c < count; c += blockDim.x) {
            if (!open_flags[c]) continue;
            long long g = g0 + c;
            long long act[NUM_AGENTS];
            for (int a = 0; a < NUM_AGENTS; a++) act[a] = vs_bot && a != 0 ? 0 : seat_actions[c * NUM_AGENTS + a];
            float reward[NUM_AGENTS];
            float* returns = ep_return + g * NUM_AGENTS;
            fv_step_one(0, &slots[g], act, game_obs + g * NUM_AGENTS * OBS_SIZE, reward, terminated + g,
                        truncated + g, final_obs + g * NUM_AGENTS * OBS_SIZE, returns, ep_length + g,
                        ep_stats + g * NUM_STATS, FV_SAME_STEP, max_episode_steps);
            float done = (float)(terminated[g] | truncated[g]);
            for (int a = 0; a < NUM_AGENTS; a++) starts[g * NUM_AGENTS + a] = done;
            if (done != 0.0f) {
                if (vs_bot) {
                    scores[g] = returns[0] > 0.0f ? 1.0f : (returns[0] == 0.0f ? 0.5f : 0.0f);
                } else {
                    scores[g] = (float)seat_score(returns, (first_local + c) % NUM_AGENTS);
                }
                game_steps[g] = (int)(t_step + 1);
                atomicSub(remaining, 1);
                open_flags[c] = 0;
                atomicSub(open_count, 1);
            }
        }
        __syncthreads();
        if (*open_count == 0) break;
#if POLICY_MINGRU
#pragma unroll
        for (int r = 0; r < G; r++) keep[r] = 1.0f; /* a game still played did not end: no row starts */
#endif
    }
#if POLICY_MINGRU
#pragma unroll
    for (int r = 0; r < G; r++) {
        if (!valid[r] || !open_flags[game_of[r]]) continue;
#pragma unroll
        for (int l = 0; l < POLICY_LAYERS; l++)
#pragma unroll
            for (int t = 0; t < MATCH_UNITS; t++) {
                int u = lane + 32 * t;
                if (u < PH) state[((long long)l * rows + row_of[r]) * PH + u] = h[r][l][t];
            }
    }
#else
    (void)starts;
    (void)state;
#endif
}

/* After a reset: every game's learner seat's obs from game_obs (N, NUM_AGENTS, O) into obs (N, O). */
__global__ void selfplay_gather_kernel(int N, int seat_offset, const OBS_T* game_obs, OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    int learner = (i + seat_offset) % NUM_AGENTS;
    for (int k = 0; k < OBS_SIZE; k++)
        obs[(long long)i * OBS_SIZE + k] = game_obs[((long long)i * NUM_AGENTS + learner) * OBS_SIZE + k];
}
