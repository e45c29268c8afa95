/* rollout.cu: the env-dependent half of the fused CUDA trainer, compiled after an env file, batch.h
 * and kernels.cu (whose policy.cu supplies the sampler and the activations). One kernel per policy
 * step does, for each env: sample every agent's action from the decoder output (counter-based RNG),
 * write action, log-probability and value into the rollout buffers, step the env (batch.h's
 * fv_step_one, SAME_STEP autoreset), write reward (optionally clamped), done flag and next
 * observation, and add finished episodes to the log accumulators.
 * This is NumpyTrainer.rollout's loop body (numpy_trainer.py) for one t, in one launch; for small
 * policies the policy forward joins it (policy_step_kernel, a thread per env), and with a warp per env
 * (policy_rollout_warp_kernel) one launch steps the whole horizon. With host environments (a CPU batch
 * steps the env) the same step is two kernels around the host's step. selfplay.cu, compiled after this file,
 * holds self-play's kernels; what the two share is in rollout_common.cu.
 */
#include "rollout_common.cu" /* RolloutArgs, step_obs, step_slices, thread_policy_forward */

/* Record env i's step outcome (after its env stepped, SAME_STEP autoreset) for its `agents` rows
 * i * agents + a: rewards (optionally clamped to [-1, 1]; rewards_in may be rewards itself), done flags
 * and next step's start flags; if its episode ended, add it to the log accumulators: episode_acc (3 + S + agents)
 * doubles = episodes, sum of returns (mean over agents), sum of lengths, sums of the env's S stats, then each
 * agent's sum of returns (the trainer's per-team returns).
 * ep_return (per row), ep_length and ep_stats (S) are the env's finished-episode values. */
__device__ void record_outcome(int i, int agents, int num_stats, int done_flag, const float* rewards_in,
                               const float* ep_return, int ep_length, const float* ep_stats, float* rewards,
                               float* dones, float* starts_next, double* episode_acc, int reward_clamp) {
    float done = (float)done_flag;
    float ret = 0.0f;
    for (int a = 0; a < agents; a++) {
        int row = i * agents + a;
        float r = rewards_in[row];
        rewards[row] = reward_clamp ? fminf(fmaxf(r, -1.0f), 1.0f) : r;
        dones[row] = done;
        starts_next[row] = done;
        ret += ep_return[row];
    }
    if (done != 0.0f) { /* logs only: float atomics make these sums order-dependent, nothing else */
        atomicAdd(&episode_acc[0], 1.0);
        atomicAdd(&episode_acc[1], (double)(ret / agents));
        atomicAdd(&episode_acc[2], (double)ep_length);
        for (int k = 0; k < num_stats; k++) atomicAdd(&episode_acc[3 + k], (double)ep_stats[k]);
        for (int a = 0; a < agents; a++) atomicAdd(&episode_acc[3 + num_stats + a], (double)ep_return[i * agents + a]);
    }
}

/* Rows are env-major (row = env * NUM_AGENTS + agent), as the NumPy trainer's reshape(rows, -1).
 * y holds each of env i's agents' decoder rows (A logits, then the value), row stride y_stride; dec_bias (A + 1)
 * or NULL is added to them (the GEMM path leaves the decoder's bias to this: one launch a step fewer).
 * slot: env i's slot; obs_i: where it writes its obs[t + 1] rows (A, O) (in the rollout buffer, or staged in
 * shared memory); s: step t's slices (a MultiDiscrete or Box head's actions are the env's own action type; their
 * decoder rows are HEAD_Y wide and a Box head's log-stds follow dec_bias, as in the flat layout); the batch
 * layer's scratch and the episode accumulators are a's. Sample, record, step env i (SAME_STEP autoreset),
 * record the outcome. */
__device__ void sample_and_step_env(int i, const float* y, long long y_stride, const float* dec_bias,
                                                    fv_slot* slot, OBS_T* obs_i, const RolloutArgs& a,
                                                    const StepSlices& s, long long step) {
#if ACTION_SPACE == FV_DISCRETE
    long long act[NUM_AGENTS];
    for (int k = 0; k < NUM_AGENTS; k++) {
        int row = i * NUM_AGENTS + k;
        float yr[NUM_ACTIONS + 1];
        for (int m = 0; m <= NUM_ACTIONS; m++) yr[m] = y[k * y_stride + m] + (dec_bias ? dec_bias[m] : 0.0f);
        float lp, u = policy_uniform(a.seed_key, row, step);
        int action = s.masks ? sample_masked_row(yr, s.masks + (long long)row * NUM_ACTIONS, NUM_ACTIONS, u, &lp)
                             : sample_row(yr, NUM_ACTIONS, u, &lp);
        s.actions[row] = action;
        s.logp[row] = lp;
        s.values[row] = yr[NUM_ACTIONS];
        act[k] = action;
    }
#else
    ACT_T* act = reinterpret_cast<ACT_T*>(s.actions) + (long long)i * FV_ACT_LEN;
    for (int k = 0; k < NUM_AGENTS; k++) {
        int row = i * NUM_AGENTS + k;
        float yr[HEAD_Y];
        for (int m = 0; m < HEAD_Y; m++) yr[m] = y[k * y_stride + m] + (dec_bias ? dec_bias[m] : 0.0f);
#if ACTION_SPACE == FV_BOX
        s.logp[row] = sample_box_row(yr, dec_bias + HEAD_Y, ACTION_DIMS, a.seed_key, row, step, act + k * ACTION_DIMS);
#else
        s.logp[row] = sample_multi_discrete_row(yr, fv_action_nvec, ACTION_DIMS, a.seed_key, row, step,
                                                act + k * ACTION_DIMS);
#endif
        s.values[row] = yr[POLICY_HEAD_SIZE];
    }
#endif
    /* fv_step_one on env i's slot and obs with every other array offset to env i (its index 0) */
    fv_step_one(0, slot, act, obs_i, s.rewards + i * NUM_AGENTS, a.terminated + i, a.truncated + i,
                a.final_obs + (long long)i * NUM_AGENTS * OBS_SIZE, a.ep_return + i * NUM_AGENTS, a.ep_length + i,
                a.ep_stats + i * NUM_STATS, FV_SAME_STEP, a.max_episode_steps);
    record_outcome(i, NUM_AGENTS, NUM_STATS, a.terminated[i] | a.truncated[i], s.rewards, a.ep_return, a.ep_length[i],
                   a.ep_stats + i * NUM_STATS, s.rewards, s.dones, s.starts_next, a.episode_acc, a.reward_clamp);
}

/* One policy step after the GEMM-path forward: y (R, A + 1) is the decoder output for obs[t]. STAGED: the
 * block's slots and obs live in shared memory during the step (batch.h's staging), FV_STAGE_THREADS envs a
 * block; the host picks it for envs with large observations (trainer.ROLLOUT_STAGE_MIN_OBS_BYTES), where
 * the in-place step has each thread store its obs a whole observation apart from its neighbour's, so a
 * warp's every store touches a cache line per lane; staged, the block copies slots and obs out whole. */
template <int STAGED>
__device__ __forceinline__ void rollout_step(const RolloutArgs& a, const StepSlices& s, int t) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* y_i = a.y + (long long)i * NUM_AGENTS * HEAD_Y;
    long long step = a.scalars->rollout_steps + t;
    if (!STAGED) {
        if (i < a.num_envs)
            sample_and_step_env(i, y_i, HEAD_Y, a.dec_bias, &a.slots[i],
                                s.obs_next + (long long)i * NUM_AGENTS * OBS_SIZE, a, s, step);
        return;
    }
    __shared__ unsigned long long sh_slots[STAGED ? FV_STAGE_SLOT_WORDS : 1];
    __shared__ __align__(16) unsigned long long sh_obs[STAGED ? FV_STAGE_OBS_WORDS : 2];
    int base = blockIdx.x * blockDim.x, count = min((int)blockDim.x, a.num_envs - base);
    fv_slot* sh = (fv_slot*)sh_slots;
    fv_block_copy(sh, a.slots + base, count * (int)sizeof(fv_slot));
    __syncthreads();
    if (i < a.num_envs)
        sample_and_step_env(i, y_i, HEAD_Y, a.dec_bias, &sh[threadIdx.x],
                            (OBS_T*)sh_obs + threadIdx.x * NUM_AGENTS * OBS_SIZE, a, s, step);
    __syncthreads();
    fv_block_copy(a.slots + base, sh, count * (int)sizeof(fv_slot));
    fv_block_copy_wide(s.obs_next + (long long)base * NUM_AGENTS * OBS_SIZE, sh_obs, count * FV_OBS_BYTES);
}

extern "C" {

/* rollout_step_staged_kernel's block size (0: one env's slot and obs do not fit FV_STAGE_BYTES). */
__device__ const int rollout_stage_threads = FV_STAGE_THREADS;

/* Step t of a rollout slot (RolloutArgs a; s: step t's slices, step_slices computed by the host), after the
 * GEMM-path forward of obs[t] into a.y. */
__global__ void rollout_step_kernel(const RolloutArgs a, const StepSlices s, int t) { rollout_step<0>(a, s, t); }
__global__ void __launch_bounds__(FV_STAGE_ALLOC) rollout_step_staged_kernel(const RolloutArgs a, const StepSlices s,
                                                                             int t) {
    if constexpr (FV_STAGE_THREADS > 0) rollout_step<1>(a, s, t);
}

/* ------------------------------------------------------------------------------------------------
 * Host environments (train.env_device = "cpu"): the env is a CPU batch, so one policy step is split in
 * two launches around the host's batch.step, each over one env group's rows [row0, row0 + rows):
 * host_sample_kernel is sample_and_step_env's first half (same counter-based uniforms for the same
 * global row and step, so the same logits give the same actions as the GPU-env path), and
 * host_record_kernel its second half on the outputs the host copied up (fv_step_one's, SAME_STEP). */

/* y: the group's decoder rows (rows, HEAD_Y), with the decoder's bias; logstd (D,): a Box head's log-stds (else
 * unused); mask: a Discrete head's available actions at the group's rows (rows, NUM_ACTIONS) uint8, or NULL (all
 * are); actions/logp/values: step t's slices at the group's rows (a MultiDiscrete or Box head's actions are D
 * values of the env's own action type a row). */
__global__ void host_sample_kernel(int rows, int row0, const float* y, const float* logstd, const unsigned char* mask,
                                   int* actions, float* logp, float* values, const TrainScalars* scalars, int t,
                                   unsigned long long seed_key) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= rows) return;
    const float* yr = y + (long long)j * HEAD_Y;
    long long row = row0 + j, step = scalars->rollout_steps + t;
#if ACTION_SPACE == FV_BOX
    logp[j] = sample_box_row(yr, logstd, ACTION_DIMS, seed_key, row, step,
                             reinterpret_cast<float*>(actions) + (long long)j * ACTION_DIMS);
#elif ACTION_SPACE == FV_MULTI_DISCRETE
    logp[j] = sample_multi_discrete_row(yr, fv_action_nvec, ACTION_DIMS, seed_key, row, step,
                                        reinterpret_cast<long long*>(actions) + (long long)j * ACTION_DIMS);
#else
    float lp, u = policy_uniform(seed_key, row, step);
    actions[j] = mask ? sample_masked_row(yr, mask + (long long)j * NUM_ACTIONS, NUM_ACTIONS, u, &lp)
                      : sample_row(yr, NUM_ACTIONS, u, &lp);
    logp[j] = lp;
#endif
    values[j] = yr[POLICY_HEAD_SIZE];
}

/* host_record_kernel's arguments (kernel_args.py mirrors them): one group of n envs with `agents` rows each, after
 * the host stepped them. The *_in arrays are the batch's outputs as copied up; the others are the group's rows of
 * step t's slices of the rollout slot. */
typedef struct {
    const float* obs_in;                /* (n * agents, O) */
    const float* rewards_in;            /* (n * agents,) */
    const float* ep_return_in;          /* (n * agents,) */
    const float* ep_stats_in;           /* (n, S) */
    const int* ep_length_in;            /* (n,) */
    const unsigned char* terminated_in; /* (n,) */
    const unsigned char* truncated_in;  /* (n,) */
    float* obs_next;                    /* the group's rows of obs[t + 1] */
    float* rewards;                     /* ... of rewards[t] */
    float* dones;                       /* ... of dones[t] */
    float* starts_next;                 /* ... of starts[t + 1] */
    double* episode_acc;                /* episodes finished, their returns, lengths and stats (record_outcome) */
    int n;
    int agents;
    int obs_size;
    int num_stats;
    int reward_clamp;                   /* 1: rewards clamped to [-1, 1] in the rollout */
} HostRecordArgs;

/* Every thread copies one obs element; threads i < n also record env i's outcome (record_outcome, as
 * sample_and_step_env). */
__global__ void host_record_kernel(const HostRecordArgs a) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long)a.n * a.agents * a.obs_size) a.obs_next[idx] = a.obs_in[idx];
    if (idx >= a.n) return;
    int i = (int)idx;
    record_outcome(i, a.agents, a.num_stats, a.terminated_in[i] | a.truncated_in[i], a.rewards_in, a.ep_return_in,
                   a.ep_length_in[i], a.ep_stats_in + (long long)i * a.num_stats, a.rewards, a.dones, a.starts_next,
                   a.episode_acc, a.reward_clamp);
}

/* ------------------------------------------------------------------------------------------------
 * Device environments (a MuJoCo task on MuJoCo Warp, device_envs.py): the env steps on the GPU between the
 * policy's launches, so these two kernels stand where the host's batch.step stands in the host-env path, with
 * MujocoHostBatch.step's arithmetic. device_env_actions_kernel hands the env its actions: a Box head's samples
 * (n, D) clipped to the control range [low, high], a non-finite value passed on unclipped so the env reports it;
 * device_env_outputs_kernel turns the env's float64 step outputs into host_record_kernel's inputs (float32 obs and
 * rewards; an ended episode's return, summed in float64, and length), keeping each env's running episode. */
__global__ void device_env_actions_kernel(long long n, int dims, const float* actions, const float* low,
                                          const float* high, float* out) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n * dims) return;
    int d = (int)(idx % dims);
    float x = actions[idx];
    out[idx] = isfinite(x) ? fminf(fmaxf(x, low[d]), high[d]) : x;
}

/* obs (n, O), rewards (n,) float64 and terminated, truncated (n,) bool: the env's step outputs; run_return (n,)
 * float64 and run_length (n,) int32: each env's running episode (zero at the start); the *_out arrays are
 * host_record_kernel's *_in (staging_layout's). Every thread converts one obs element; threads i < n env i. */
__global__ void device_env_outputs_kernel(const double* obs, const double* rewards, const unsigned char* terminated,
                                          const unsigned char* truncated, double* run_return, int* run_length,
                                          float* obs_out, float* rewards_out, float* ep_return_out,
                                          int* ep_length_out, unsigned char* terminated_out,
                                          unsigned char* truncated_out, int n, int obs_size) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < (long long)n * obs_size) obs_out[idx] = (float)obs[idx];
    if (idx >= n) return;
    int i = (int)idx;
    double reward = rewards[i], episode = run_return[i] + reward;
    int length = run_length[i] + 1;
    unsigned char ended = terminated[i] | truncated[i];
    rewards_out[i] = (float)reward;
    terminated_out[i] = terminated[i];
    truncated_out[i] = truncated[i];
    if (ended) {
        ep_return_out[i] = (float)episode;
        ep_length_out[i] = length;
    }
    run_return[i] = ended ? 0.0 : episode;
    run_length[i] = ended ? 0 : length;
}

#ifdef POLICY_HIDDEN
/* ------------------------------------------------------------------------------------------------
 * The fused policy step for small policies (compiled with POLICY_HIDDEN, POLICY_LAYERS, POLICY_MINGRU,
 * POLICY_HIGHWAY): one thread per env runs reference.policy_forward for one step (encoder, layers,
 * decoder) with every weight in shared memory and the activations in registers, then samples and steps
 * its env: the whole policy step is one launch. Same math as the GEMM path (sums in another order).
 * Dynamic shared memory: P floats of parameters, then (H, blockDim) floats of per-thread scratch
 * holding the current layer's input, overwritten unit by unit with its output.
 * s: step t's slices (step_slices, computed by the host: as kernel parameters they take no registers, and this
 * kernel's registers bound its blocks per SM). With bootstrap = 1 (t = T; s.state_out is last_state) it only
 * writes V(obs[T]) to last_value (R,) and the state after it to s.state_out.
 * The forwards here write their fused multiply-adds out with fmaf, as thread_policy_forward's. */
__global__ void policy_step_kernel(const RolloutArgs a, const StepSlices s, int t, int bootstrap) {
    extern __shared__ float4 shared4[];
    float* w = reinterpret_cast<float*>(shared4);
    float* scratch = w + ((P_TOTAL + 3) / 4) * 4;
    for (int k = threadIdx.x; k < P_TOTAL; k += blockDim.x) w[k] = a.params[k];
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.num_envs) return;
    const long long R = (long long)a.num_envs * NUM_AGENTS;
    float y[NUM_AGENTS][NUM_ACTIONS + 1];
    for (int k = 0; k < NUM_AGENTS; k++) {
        long long row = (long long)i * NUM_AGENTS + k;
        thread_policy_forward(w, s.obs + row * OBS_SIZE, 1.0f - s.starts[row], a.state, s.state_out, row, R,
                              scratch + threadIdx.x, blockDim.x, y[k]);
        if (bootstrap) a.last_value[row] = y[k][NUM_ACTIONS];
    }
    if (bootstrap) return;
    sample_and_step_env(i, &y[0][0], NUM_ACTIONS + 1, nullptr, &a.slots[i],
                        s.obs_next + (long long)i * NUM_AGENTS * OBS_SIZE, a, s, a.scalars->rollout_steps + t);
}
/* ------------------------------------------------------------------------------------------------
 * The rollout with a warp per env (policy_rollout_warp_kernel), for fewer envs than fill the GPU with
 * one thread each (a thread-per-env step is one thread's long serial chain of dot products; here lane j
 * computes units j, j + 32, ...; lane 0 then samples and steps the env). Each env's trajectory depends on
 * nothing but its own env and the weights, so one launch can step a warp's env through many policy
 * steps: steps t0 .. t0 + steps - 1, where step T is the bootstrap (V(obs[T]) with the live state into
 * last_value, the state after it into last_state); the trainer launches the whole horizon at once (or
 * one step a launch, plan.Choices(warp_launch="step")). At steps t % K == 0 < T the state entering the step
 * is also saved to segment_state, as the GEMM path's copy does. Buffers are the rollout slot's whole
 * (T + 1, R, ...) / (T, R) arrays.
 * The weights sit in shared memory (loaded once a launch) with every matrix (rows, cols) stored column
 * by column with a stride of rows + 1, so the lanes of consecutive units read consecutive banks and the
 * transposing stores do not conflict either (S_TOTAL floats: trainer.py's _warp_weight_floats). Then, per
 * warp, two (H,) activation buffers and the agents' decoder rows. Sums run over k in order (the
 * thread-per-env kernel groups them in fours; the GEMM path in cuBLAS's order). */
#define S_ENC_W 0
#define S_ENC_B (OBS_SIZE * (PH + 1))
#define S_LAYER(l) (S_ENC_B + PH + (l) * (PH * (PW + 1) + PW))
#define S_DEC_W S_LAYER(POLICY_LAYERS)
#define S_DEC_B (S_DEC_W + PH * (NUM_ACTIONS + 2))
#define S_TOTAL (S_DEC_B + NUM_ACTIONS + 1)
#define WARP_SCRATCH (2 * PH + NUM_AGENTS * (NUM_ACTIONS + 1))
#define WARP_UNITS ((PH + 31) / 32)

/* Where flat parameter k (reference.FlatLayout order) goes in the warp kernel's shared layout. */
__device__ __forceinline__ int warp_weight_index(int k) {
    if (k < P_ENC_B) return S_ENC_W + (k % OBS_SIZE) * (PH + 1) + k / OBS_SIZE;
    if (k < P_LAYER(0)) return S_ENC_B + (k - P_ENC_B);
    if (k < P_DEC_W) {
        int l = (k - P_LAYER(0)) / (PW * PH + PW), off = (k - P_LAYER(0)) % (PW * PH + PW);
        if (off < PW * PH) return S_LAYER(l) + (off % PH) * (PW + 1) + off / PH;
        return S_LAYER(l) + PH * (PW + 1) + (off - PW * PH);
    }
    if (k < P_DEC_B) return S_DEC_W + ((k - P_DEC_W) % PH) * (NUM_ACTIONS + 2) + (k - P_DEC_W) / PH;
    return S_DEC_B + (k - P_DEC_B);
}

/* One policy forward of row `row` by one warp (weights w in the shared layout above): obs (O,) ->
 * decoder row y (A + 1) in shared memory; x and out are the warp's two (H,) buffers. MinGRU: the state
 * of layer l, row `row` is read from state_in and written to state_out ((Ls, R, H), may be the same). */
__device__ void warp_policy_forward(const float* w, int lane, long long row, long long R, const OBS_T* o, float keep,
                                    const float* state_in, float* state_out, float* x, float* out, float* y) {
    for (int j = lane; j < PH; j += 32) {
        float acc = 0.0f;
        for (int k = 0; k < OBS_SIZE; k++) acc = fmaf(w[S_ENC_W + k * (PH + 1) + j], (float)o[k], acc);
        x[j] = acc + w[S_ENC_B + j];
    }
    __syncwarp();
    for (int l = 0; l < POLICY_LAYERS; l++) {
        const float* lw = w + S_LAYER(l);  /* lw[k * (W + 1) + r] = layer weight (r, k) */
        const float* lb = lw + PH * (PW + 1);
        float acc[WARP_UNITS][PW / PH];
#pragma unroll
        for (int u = 0; u < WARP_UNITS; u++)
#pragma unroll
            for (int g = 0; g < PW / PH; g++) acc[u][g] = 0.0f;
#pragma unroll 4
        for (int k = 0; k < PH; k++) {
            float xk = x[k];
            const float* col = lw + k * (PW + 1);
#pragma unroll
            for (int u = 0; u < WARP_UNITS; u++) {
                int j = lane + 32 * u;
                if (j < PH) {
#pragma unroll
                    for (int g = 0; g < PW / PH; g++) acc[u][g] = fmaf(col[g * PH + j], xk, acc[u][g]);
                }
            }
        }
#pragma unroll
        for (int u = 0; u < WARP_UNITS; u++) {
            int j = lane + 32 * u;
            if (j >= PH) continue;
            float zp = acc[u][0] + lb[j];
            float value;
#if POLICY_MINGRU
            float cp = acc[u][1] + lb[PH + j];
            float z = sigmoidf_ref(zp), c = mingru_g(cp);
            long long si = ((long long)l * R + row) * PH + j;
            float h = fmaf(z, c, (1.0f - z) * keep * state_in[si]);
            state_out[si] = h;
            value = h;
#if POLICY_HIGHWAY
            float s = sigmoidf_ref(acc[u][2] + lb[2 * PH + j]);
            value = fmaf(s, h, (1.0f - s) * x[j]);
#endif
#else
            (void)keep;
            (void)state_in;
            (void)state_out;
            (void)R;
            value = fmaxf(zp, 0.0f);
#endif
            out[j] = value;
        }
        __syncwarp();
        float* next = out;
        out = x;
        x = next;
    }
    for (int m = lane; m < NUM_ACTIONS + 1; m += 32) {
        float acc = 0.0f;
        for (int k = 0; k < PH; k++) acc = fmaf(w[S_DEC_W + k * (NUM_ACTIONS + 2) + m], x[k], acc);
        y[m] = acc + w[S_DEC_B + m];
    }
    __syncwarp(); /* y complete, and x free for the next forward */
}

__global__ void policy_rollout_warp_kernel(const RolloutArgs a, int t0, int steps) {
    extern __shared__ float4 shared4[];
    float* w = reinterpret_cast<float*>(shared4);
    for (int k = threadIdx.x; k < P_TOTAL; k += blockDim.x) w[warp_weight_index(k)] = a.params[k];
    __syncthreads();
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int i = blockIdx.x * (blockDim.x >> 5) + warp;
    if (i >= a.num_envs) return;  /* whole warps leave: no block-wide barrier follows */
    float* x = w + ((S_TOTAL + 3) / 4) * 4 + warp * WARP_SCRATCH;
    float* ys = x + 2 * PH;  /* (NUM_AGENTS, A + 1) decoder rows */
    const long long R = a.R;
    long long rollout_steps = a.scalars->rollout_steps;
    for (int t = t0; t < t0 + steps; t++) {
        int bootstrap = t == a.T;
#if POLICY_MINGRU
        if (!bootstrap && t % a.K == 0) /* the state entering this segment, for the update's sequences */
            for (int l = 0; l < POLICY_LAYERS; l++)
                for (int k = 0; k < NUM_AGENTS; k++)
                    for (int j = lane; j < PH; j += 32) {
                        long long si = ((long long)l * R + i * NUM_AGENTS + k) * PH + j;
                        a.segment_state[((long long)(t / a.K) * POLICY_LAYERS) * R * PH + si] = a.state[si];
                    }
#endif
        for (int k = 0; k < NUM_AGENTS; k++) {
            long long row = (long long)i * NUM_AGENTS + k;
            long long tr = (long long)t * R + row;
            warp_policy_forward(w, lane, row, R, step_obs(a.obs, t, R) + row * OBS_SIZE, 1.0f - a.starts[tr], a.state,
                                bootstrap ? a.last_state : a.state, x, x + PH, ys + k * (NUM_ACTIONS + 1));
        }
        if (lane == 0) {
            if (bootstrap) {
                for (int k = 0; k < NUM_AGENTS; k++)
                    a.last_value[i * NUM_AGENTS + k] = ys[k * (NUM_ACTIONS + 1) + NUM_ACTIONS];
            } else {
                StepSlices s = step_slices(a, t);
                sample_and_step_env(i, ys, NUM_ACTIONS + 1, nullptr, &a.slots[i],
                                    s.obs_next + (long long)i * NUM_AGENTS * OBS_SIZE, a, s, rollout_steps + t);
            }
        }
        __syncwarp(); /* the env's next obs and start flag, written by lane 0, before every lane reads them */
    }
}
#endif /* POLICY_HIDDEN */

} /* extern "C" */
