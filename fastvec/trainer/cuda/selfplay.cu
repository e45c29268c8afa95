/* selfplay.cu: self-play with the games and the frozen opponents on the GPU, compiled after rollout.cu with the
 * fused policy's sizes (every snapshot in the pool has the learner's architecture; without them the file is
 * empty). Game g's learner plays
 * seat (g + seat_offset) % NUM_AGENTS; its other seats are "opponent rows" g * (NUM_AGENTS - 1) + k, played by
 * the pool snapshot game_weights[g] names, which changes only on the step the game ends (SAME_STEP autoreset).
 * pool_forward_kernel acts for the opponents, selfplay_step_kernel steps the games after the learner's GEMM
 * forward; the evaluation matches (cuda/matches.py) use match_reset_kernel, match_stage_kernel and
 * match_play_kernel. selfplay.py's draw_opponents and SelfPlayBatch are the host twins of this file. */
#include "rollout_common.cu" /* RolloutArgs, step_slices, thread_policy_forward (and its P_* layout) */
#ifdef POLICY_HIDDEN
extern "C" {

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

/* pool_forward_kernel's arguments (kernel_args.py mirrors them). */
typedef struct {
    const float* pool;           /* (slots, pool_stride) the snapshots' flat weights */
    const int* game_weights;     /* (N,) the pool slot each game's opponents play */
    const OBS_T* game_obs;       /* (N, NUM_AGENTS, O) every seat's obs */
    const float* starts;         /* (rows,) 1: the row begins a game */
    float* state;                /* (Ls, rows, H) the rows' MinGRU states */
    int* actions;                /* (rows,) out */
    const TrainScalars* scalars; /* rollout_steps, or 0: the step is t alone */
    unsigned long long key;      /* the rows' draws */
    long long pool_stride;
    long long t;
    int rows;
    int per_game;                /* rows a game: NUM_AGENTS - 1 (opponent rows) or NUM_AGENTS (every seat) */
    int seat_offset;             /* game g's learner plays seat (g + seat_offset) % NUM_AGENTS */
    int player_slot;             /* with per_game == NUM_AGENTS: the learner seat's pool slot, or -1 */
    int deterministic;           /* 1: the argmax, not a draw */
} PoolForwardArgs;

/* A thread per row j = g * per_game + k (seat row_seat(k)) of a.rows: the policy step of the snapshot in pool
 * slot game_weights[g] (or player_slot for the learner's seat when per_game == NUM_AGENTS and player_slot >= 0)
 * on the seat's obs. The action is sampled with policy_uniform(key, j, step) (or the argmax with deterministic),
 * step = scalars->rollout_steps + t (t alone without scalars). Dynamic shared memory: (H, blockDim) floats. */
__global__ void pool_forward_kernel(const PoolForwardArgs a) {
    extern __shared__ float4 shared4[];
    float* scratch = reinterpret_cast<float*>(shared4);
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= a.rows) return;
    int g = j / a.per_game, learner = (g + a.seat_offset) % NUM_AGENTS;
    int seat = row_seat(j % a.per_game, a.per_game, learner);
    int slot = (a.per_game == NUM_AGENTS && a.player_slot >= 0 && seat == learner) ? a.player_slot : a.game_weights[g];
    float y[NUM_ACTIONS + 1];
    thread_policy_forward(a.pool + (long long)slot * a.pool_stride,
                          a.game_obs + ((long long)g * NUM_AGENTS + seat) * OBS_SIZE, 1.0f - a.starts[j], a.state,
                          a.state, j, a.rows, scratch + threadIdx.x, blockDim.x, y);
    int action = 0;
    if (a.deterministic) {
        for (int m = 1; m < NUM_ACTIONS; m++) action = y[m] > y[action] ? m : action;
    } else {
        float lp;
        action = sample_row(y, NUM_ACTIONS, policy_uniform(a.key, j, (a.scalars ? a.scalars->rollout_steps : 0) + a.t),
                            &lp);
    }
    a.actions[j] = action;
}

/* 1 when `seat`'s return beats every other seat's, 0.5 when it ties the best, 0 otherwise (game_scores). */
__device__ __forceinline__ double seat_score(const float* returns, int seat) {
    float best = -INFINITY;
    for (int a = 0; a < NUM_AGENTS; a++)
        if (a != seat) best = fmaxf(best, returns[a]);
    return returns[seat] > best ? 1.0 : (returns[seat] == best ? 0.5 : 0.0);
}

/* What self-play's step adds to a rollout's RolloutArgs (kernel_args.py mirrors it): the games (every seat's obs),
 * the opponents' actions and start flags, the pool, and the learner's scores. */
typedef struct {
    OBS_T* game_obs;             /* (N, NUM_AGENTS, O) every seat's obs */
    const int* opp_actions;      /* (N * (NUM_AGENTS - 1),) the opponents' actions this step */
    float* opp_starts;           /* (N * (NUM_AGENTS - 1),) 1: an opponent row begins a game */
    int* game_weights;           /* (N,) the pool slot each game's opponents play */
    const int* pool_table;       /* POOL_HEADER + the members' pool slots */
    double* selfplay_acc;        /* games finished, sum of the learner's scores */
    unsigned long long pool_key; /* the opponents' draws (draw_opponent) */
    int seat_offset;             /* game g's learner plays seat (g + seat_offset) % NUM_AGENTS */
} SelfPlayArgs;

/* A thread per game, at rollout step t after the learner's forward (a.y (N, A + 1) without the decoder bias
 * a.dec_bias) and the opponents' (sp.opp_actions): sample the learner's action into the rollout buffers (as
 * sample_and_step_env), step the game (its obs into sp.game_obs, SAME_STEP autoreset), record the learner seat's
 * obs, reward, done and start flags; at the game's end the learner's episode goes to episode_acc, its score
 * to selfplay_acc (games, sum of scores), and the game draws its next opponent. a's final_obs
 * (N * NUM_AGENTS, O), ep_return (N * NUM_AGENTS,), ep_length (N,) and ep_stats (N, S) are the batch layer's
 * scratch; its rows are the learner's seats (R = N). */
__global__ void selfplay_step_kernel(const RolloutArgs a, const SelfPlayArgs sp, int t) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.num_envs) return;
    long long step = a.scalars->rollout_steps + t;
    int learner = (i + sp.seat_offset) % NUM_AGENTS;
    StepSlices s = step_slices(a, t);
    float yr[NUM_ACTIONS + 1];
    for (int m = 0; m <= NUM_ACTIONS; m++)
        yr[m] = a.y[(long long)i * (NUM_ACTIONS + 1) + m] + (a.dec_bias ? a.dec_bias[m] : 0.0f);
    float lp;
    int action = sample_row(yr, NUM_ACTIONS, policy_uniform(a.seed_key, i, step), &lp);
    s.actions[i] = action;
    s.logp[i] = lp;
    s.values[i] = yr[NUM_ACTIONS];
    long long act[NUM_AGENTS];
    for (int k = 0; k < NUM_AGENTS; k++)
        act[k] = k == learner ? action
                              : sp.opp_actions[(long long)i * (NUM_AGENTS - 1) + (k < learner ? k : k - 1)];
    float reward[NUM_AGENTS];
    OBS_T* obs_i = sp.game_obs + (long long)i * NUM_AGENTS * OBS_SIZE;
    float* returns = a.ep_return + (long long)i * NUM_AGENTS;
    fv_step_one(0, &a.slots[i], act, obs_i, reward, a.terminated + i, a.truncated + i,
                a.final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, returns, a.ep_length + i,
                a.ep_stats + i * NUM_STATS, FV_SAME_STEP, a.max_episode_steps);
    for (int k = 0; k < OBS_SIZE; k++) s.obs_next[(long long)i * OBS_SIZE + k] = obs_i[learner * OBS_SIZE + k];
    float done = (float)(a.terminated[i] | a.truncated[i]);
    s.rewards[i] = a.reward_clamp ? fminf(fmaxf(reward[learner], -1.0f), 1.0f) : reward[learner];
    s.dones[i] = done;
    s.starts_next[i] = done;
    for (int k = 0; k < NUM_AGENTS - 1; k++) sp.opp_starts[(long long)i * (NUM_AGENTS - 1) + k] = done;
    if (done != 0.0f) {
        atomicAdd(&a.episode_acc[0], 1.0);
        atomicAdd(&a.episode_acc[1], (double)returns[learner]);
        atomicAdd(&a.episode_acc[2], (double)a.ep_length[i]);
        for (int k = 0; k < NUM_STATS; k++)
            atomicAdd(&a.episode_acc[3 + k], (double)a.ep_stats[i * NUM_STATS + k]);
        atomicAdd(&sp.selfplay_acc[0], 1.0);
        atomicAdd(&sp.selfplay_acc[1], seat_score(returns, learner));
        sp.game_weights[i] = draw_opponent(sp.pool_table, sp.pool_key, i, step);
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

__global__ void match_reset_kernel(int num_games, fv_slot* slots, const fv_u64* seeds, const int* bot_levels,
                                   OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_games) return;
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
/* Rows (one policy's, in games side by side) a group computes together: every weight read from shared memory
 * serves each of them, and more rows a group leave fewer warps to hide each one's latency. 2 is the fastest
 * (5.2 us a game step on an H100, against 6.4 with 4 and 6.8 with 1: benchmarks/lab/match_rows.py, which builds
 * the others with -DMATCH_ROWS=N). */
#ifndef MATCH_ROWS
#define MATCH_ROWS 2
#endif
#define MATCH_SLICES ((PH + 31) / 32) /* warps a group is spread over: lane u of slice s computes unit 32 * s + u */
/* The layers' k4 loops are unrolled whole where every lane's row stride in the staged matrices is the same
 * constant (PH a multiple of 32); a partial last 32-row block makes it a variable, and the whole unroll spills. */
constexpr int match_unroll = PH % 32 == 0 ? PH / 4 : 4;
/* A group's layer input and output, then its logits, rounded up to whole float4s: the layers read a group's input
 * as float4s, so every group's area must start on one. */
#define MATCH_GROUP_FLOATS ((MATCH_ROWS * (2 * PH + NUM_ACTIONS) + 3) / 4 * 4)
#define MATCH_OBS_FLOATS ((NUM_AGENTS * OBS_SIZE * (int)sizeof(OBS_T) + 3) / 4)
#define MATCH_GAME_FLOATS (MATCH_OBS_FLOATS + NUM_AGENTS + 1) /* a game's obs, its seats' actions, its open flag */
__device__ const int match_staged_floats = MATCH_STAGED;
__device__ const int match_rows_per_warp = MATCH_ROWS;
__device__ const int match_slices = MATCH_SLICES;
__device__ const int match_group_floats = MATCH_GROUP_FLOATS;
__device__ const int match_game_floats = MATCH_GAME_FLOATS;

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

/* Row r of a group of seat role `role` (0: the player's seat, k: the opponent's k-th seat): its game c within
 * the block (a row past the block's games mirrors its last game and writes nothing) and that game's seat. */
__device__ __forceinline__ void match_row(int role, int group, int r, int count, int first_local, int vs_bot,
                                          int* c, int* seat) {
    *c = min(group * MATCH_ROWS + r, count - 1);
    int local = first_local + *c, player = vs_bot ? 0 : local % NUM_AGENTS;
    *seat = role == 0 ? player : (role - 1 < player ? role - 1 : role);
}

/* match_play_kernel's arguments (kernel_args.py mirrors them; the kernel's comment below says how they are used). */
typedef struct {
    fv_slot* slots;          /* (N,) the games */
    const float* weights;    /* (policies, stride) the flat weights */
    const float* staged;     /* (policies, MATCH_STAGED) the same, staged (match_stage_kernel) */
    const int* game_weights; /* (N,) each game's opponent policy */
    const int* bot_levels;   /* (N,) the scripted bot's level, or -1: a policy opponent */
    OBS_T* game_obs;         /* (N, NUM_AGENTS, O) */
    float* starts;           /* (N * NUM_AGENTS,) */
    float* state;            /* (Ls, N * NUM_AGENTS, H) */
    int* actions;            /* (N * NUM_AGENTS,) */
    float* scores;           /* (N,) NaN until a game's first end */
    int* game_steps;         /* (N,) */
    int* remaining;          /* (1,) games without a score */
    long long stride;
    unsigned long long key;
    long long first_step;
    int num_games;
    int games_per_match;
    int games_per_block;
    int shared_policies;     /* policies a block keeps in shared memory (0: read from staged) */
    int steps;
    int deterministic;
    int max_episode_steps;
} MatchPlayArgs;

/* Steps first_step .. first_step + steps - 1 of the unscored games, a launch (cuda/matches.py relaunches until
 * every game has a score). A block plays games_per_block games of one match (ceil(games_per_match /
 * games_per_block) blocks a match, in match order), with the policies it needs (the player's, the opponent's)
 * copied from staged (rows, MATCH_STAGED) into its shared memory when shared_policies > 0, else read from
 * staged. Group k (warps k * MATCH_SLICES ..) computes seat role k % NUM_AGENTS (0: the player's seat, j: the
 * opponent's j-th seat) of the block's games (k / NUM_AGENTS) * MATCH_ROWS + r, r < MATCH_ROWS, a unit of
 * each row a lane; then thread c steps game c (SAME_STEP), sets its seats' starts, and scores its first end
 * into scores (N,), its step count into game_steps (N,), counting it off remaining[0]. A block leaves once its
 * games all have scores. The games' slots (N,) and obs (N, NUM_AGENTS, O) in game_obs are read at the start
 * and written back: in between, a slot is its stepping thread's and the obs are in shared memory, out of the
 * global-memory round trips that a game step's chain of dependent reads and writes would otherwise wait on.
 * A row's policy step: each unit's sums are dot_row's, in dot_row's order (and the encoder's, the gates' and
 * the mixes' expressions as thread_policy_forward's), so actions and states are those of a thread per row
 * (pool_forward_kernel). The draw at step t is policy_uniform(key, r, t) with r the row's index within its
 * match as a batch of its own (local for a bot match, local * NUM_AGENTS + seat otherwise); deterministic: the
 * argmax. Each step's actions go to actions (N * NUM_AGENTS,); the rows' MinGRU states (Ls, N * NUM_AGENTS, H)
 * and start flags (N * NUM_AGENTS,) are read at the start and written back. Dynamic shared memory (floats):
 * shared_policies * MATCH_STAGED, then per group MATCH_GROUP_FLOATS, then games_per_block * MATCH_GAME_FLOATS
 * (the obs, then the ints: seat actions, open flags) and one int. */
__global__ void match_play_kernel(const MatchPlayArgs args) {
    const int num_games = args.num_games, games_per_match = args.games_per_match;
    const int games_per_block = args.games_per_block;
    const int shared_policies = args.shared_policies, steps = args.steps, deterministic = args.deterministic;
    const long long stride = args.stride, first_step = args.first_step;
    const unsigned long long key = args.key;
    const int max_episode_steps = args.max_episode_steps;
    fv_slot* slots = args.slots;
    const float *weights = args.weights, *staged = args.staged;
    const int *game_weights = args.game_weights, *bot_levels = args.bot_levels;
    OBS_T* game_obs = args.game_obs;
    float *starts = args.starts, *state = args.state, *scores = args.scores;
    int *actions = args.actions, *game_steps = args.game_steps, *remaining = args.remaining;
    extern __shared__ float4 match_shared4[];
    const int G = MATCH_ROWS, OBS = NUM_AGENTS * OBS_SIZE;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, groups = (blockDim.x >> 5) / MATCH_SLICES;
    int slice = warp % MATCH_SLICES, group_warp = warp / MATCH_SLICES;
    int u = 32 * slice + lane, has_unit = u < PH, uc = min(u, PH - 1);
    int blocks_per_match = (games_per_match + games_per_block - 1) / games_per_block;
    int first_local = (blockIdx.x % blocks_per_match) * games_per_block;
    int count = min(games_per_block, games_per_match - first_local);
    long long g0 = (long long)(blockIdx.x / blocks_per_match) * games_per_match + first_local;
    if (g0 >= num_games) return; /* the whole block */
    int vs_bot = bot_levels[g0] >= 0, opponent = vs_bot ? 0 : game_weights[g0];
    float* shared_weights = reinterpret_cast<float*>(match_shared4);
    float* xb = shared_weights + shared_policies * MATCH_STAGED + group_warp * MATCH_GROUP_FLOATS;
    float* ys = xb + 2 * G * PH;
    float* game_area = shared_weights + shared_policies * MATCH_STAGED + groups * MATCH_GROUP_FLOATS;
    OBS_T* block_obs = reinterpret_cast<OBS_T*>(game_area);
    int* seat_actions = reinterpret_cast<int*>(game_area + games_per_block * MATCH_OBS_FLOATS);
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
    for (int i = threadIdx.x; i < count * OBS; i += blockDim.x) block_obs[i] = game_obs[g0 * OBS + i];
    if (threadIdx.x == 0) {
        int open = 0;
        for (int c = 0; c < count; c++) {
            open_flags[c] = isnan(scores[g0 + c]) ? 1 : 0;
            open += open_flags[c];
        }
        *open_count = open;
    }
    int stepper = threadIdx.x < count; /* thread c steps game c */
    fv_slot slot;
    if (stepper) slot = slots[g0 + threadIdx.x];

    int role = group_warp % NUM_AGENTS, group = group_warp / NUM_AGENTS;
    int plays = (role == 0 || !vs_bot) && group * G < count;
    const float* w = weights + (long long)(role == 0 ? 0 : opponent) * stride;
    const float* sw = role == 0 ? staged_player : staged_opponent;
    int game_of[G], seat_of[G], valid[G];
#pragma unroll
    for (int r = 0; r < G; r++) {
        valid[r] = plays && group * G + r < count;
        match_row(role, group, r, count, first_local, vs_bot, &game_of[r], &seat_of[r]);
    }
#if POLICY_MINGRU
    long long rows = (long long)num_games * NUM_AGENTS, row_of[G];
    float h[G][POLICY_LAYERS], keep[G];
#pragma unroll
    for (int r = 0; r < G; r++) {
        row_of[r] = (g0 + game_of[r]) * NUM_AGENTS + seat_of[r];
        keep[r] = plays ? 1.0f - starts[row_of[r]] : 0.0f;
#pragma unroll
        for (int l = 0; l < POLICY_LAYERS; l++)
            h[r][l] = plays && has_unit ? state[((long long)l * rows + row_of[r]) * PH + u] : 0.0f;
    }
#endif
    __syncthreads();

    for (int step = 0; step < steps; step++) {
        long long t_step = first_step + step;
        int open = 0; /* the same for the group's warps: they all skip or all compute */
#pragma unroll
        for (int r = 0; r < G; r++) open |= valid[r] && open_flags[game_of[r]];
        if (open && has_unit) {
#pragma unroll
            for (int r = 0; r < G; r++) {
                const OBS_T* o = block_obs + (game_of[r] * NUM_AGENTS + seat_of[r]) * OBS_SIZE;
                float acc = 0.0f;
                for (int q = 0; q < OBS_SIZE; q++) acc = fmaf(w[P_ENC_W + u * OBS_SIZE + q], (float)o[q], acc);
                xb[r * PH + u] = acc + w[P_ENC_B + u];
            }
        }
        __syncthreads(); /* a layer reads every unit of its input: the group's other warps' too */
#pragma unroll
        for (int l = 0; l < POLICY_LAYERS; l++) {
            const float4* x4 = reinterpret_cast<const float4*>(xb + (l & 1) * G * PH);
            float* out = xb + ((l + 1) & 1) * G * PH;
            if (open) {
                const float4* m4 = reinterpret_cast<const float4*>(sw + l * MATCH_GATES * MATCH_MATRIX);
                const float* lb = w + P_LAYER(l) + PW * PH;
                int first4 = match_row4(PH, uc, 0), step4 = match_row4(PH, uc, 1) - first4;
                float acc[MATCH_GATES][G];
#pragma unroll
                for (int gate = 0; gate < MATCH_GATES; gate++)
#pragma unroll
                    for (int r = 0; r < G; r++) acc[gate][r] = 0.0f;
#pragma unroll match_unroll
                for (int k4 = 0; k4 < PH / 4; k4++) {
                    float4 xv[G];
#pragma unroll
                    for (int r = 0; r < G; r++) xv[r] = x4[r * (PH / 4) + k4];
#pragma unroll
                    for (int gate = 0; gate < MATCH_GATES; gate++) {
                        float4 wv = m4[gate * (MATCH_MATRIX / 4) + first4 + k4 * step4];
#pragma unroll
                        for (int r = 0; r < G; r++) { /* dot_row's group of four, then its running sum */
                            float part = fmaf(wv.x, xv[r].x, wv.y * xv[r].y);
                            part = fmaf(wv.z, xv[r].z, part);
                            acc[gate][r] += fmaf(wv.w, xv[r].w, part);
                        }
                    }
                }
                if (has_unit) {
#pragma unroll
                    for (int r = 0; r < G; r++) {
                        float zp = acc[0][r] + lb[u];
                        float value;
#if POLICY_MINGRU
                        float cp = acc[1][r] + lb[PH + u];
                        float z = sigmoidf_ref(zp), c = mingru_g(cp);
                        float hn = fmaf(z, c, (1.0f - z) * keep[r] * h[r][l]);
                        h[r][l] = hn;
                        value = hn;
#if POLICY_HIGHWAY
                        float s = sigmoidf_ref(acc[2][r] + lb[2 * PH + u]);
                        value = fmaf(s, hn, (1.0f - s) * xb[(l & 1) * G * PH + r * PH + u]);
#endif
#else
                        value = fmaxf(zp, 0.0f);
#endif
                        out[r * PH + u] = value;
                    }
                }
            }
            __syncthreads();
        }
        if (open && slice == 0) {
            const float4* x4 = reinterpret_cast<const float4*>(xb + (POLICY_LAYERS & 1) * G * PH);
            const float4* d4 = reinterpret_cast<const float4*>(sw + MATCH_DECODER);
            for (int q = lane; q < G * NUM_ACTIONS; q += 32) { /* a lane per logit: the dot products side by side */
                int r = q / NUM_ACTIONS, m = q % NUM_ACTIONS;
                int first = match_row4(NUM_ACTIONS, m, 0), stride4 = match_row4(NUM_ACTIONS, m, 1) - first;
                float acc = 0.0f;
#pragma unroll 4
                for (int k4 = 0; k4 < PH / 4; k4++) {
                    float4 wv = d4[first + k4 * stride4], xv = x4[r * (PH / 4) + k4];
                    float part = fmaf(wv.x, xv.x, wv.y * xv.y);
                    part = fmaf(wv.z, xv.z, part);
                    acc += fmaf(wv.w, xv.w, part);
                }
                ys[q] = acc + w[P_DEC_B + m];
            }
            __syncwarp();
            if (lane < G && plays && group * G + lane < count) { /* lane r samples row r: the rows side by side */
                int c, seat;
                match_row(role, group, lane, count, first_local, vs_bot, &c, &seat);
                int local = first_local + c;
                const float* y = ys + lane * NUM_ACTIONS;
                int action = 0;
                if (deterministic) {
                    for (int a = 1; a < NUM_ACTIONS; a++) action = y[a] > y[action] ? a : action;
                } else {
                    float lp;
                    long long draw = vs_bot ? (long long)local : (long long)local * NUM_AGENTS + seat;
                    action = sample_row(y, NUM_ACTIONS, policy_uniform(key, draw, t_step), &lp);
                }
                seat_actions[c * NUM_AGENTS + seat] = action;
                actions[(g0 + c) * NUM_AGENTS + seat] = action;
            }
        }
        __syncthreads();
        if (stepper && open_flags[threadIdx.x]) {
            int c = threadIdx.x;
            long long g = g0 + c;
            long long act[NUM_AGENTS];
            for (int a = 0; a < NUM_AGENTS; a++) act[a] = vs_bot && a != 0 ? 0 : seat_actions[c * NUM_AGENTS + a];
            float reward[NUM_AGENTS], returns[NUM_AGENTS], stats[NUM_STATS > 0 ? NUM_STATS : 1];
            OBS_T final_obs[OBS]; /* fv_step_one's outputs that no one reads here */
            unsigned char terminated, truncated;
            int length;
            fv_step_one(0, &slot, act, block_obs + c * OBS, reward, &terminated, &truncated, final_obs, returns,
                        &length, stats, FV_SAME_STEP, max_episode_steps);
            float done = (float)(terminated | truncated);
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
        if (!valid[r] || !open_flags[game_of[r]] || !has_unit) continue;
#pragma unroll
        for (int l = 0; l < POLICY_LAYERS; l++) state[((long long)l * rows + row_of[r]) * PH + u] = h[r][l];
    }
#else
    (void)state;
#endif
    if (stepper) slots[g0 + threadIdx.x] = slot;
    for (int i = threadIdx.x; i < count * OBS; i += blockDim.x) game_obs[g0 * OBS + i] = block_obs[i];
}

/* After a reset: every game's learner seat's obs from game_obs (N, NUM_AGENTS, O) into obs (N, O). */
__global__ void selfplay_gather_kernel(int num_games, int seat_offset, const OBS_T* game_obs, OBS_T* obs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_games) return;
    int learner = (i + seat_offset) % NUM_AGENTS;
    for (int k = 0; k < OBS_SIZE; k++)
        obs[(long long)i * OBS_SIZE + k] = game_obs[((long long)i * NUM_AGENTS + learner) * OBS_SIZE + k];
}

} /* extern "C" */
#endif /* POLICY_HIDDEN */
