/* rollout_common.cu: what rollout.cu's and selfplay.cu's kernels share, compiled after an env file, batch.h and
 * kernels.cu (policy.cu's sampler and activations): RolloutArgs, the one argument of every kernel that steps the
 * env in a rollout (kernel_args.py mirrors it), where step t's slices of a rollout slot lie (step_obs,
 * step_slices), and, with the fused policy's sizes (POLICY_HIDDEN, POLICY_LAYERS, POLICY_MINGRU,
 * POLICY_HIGHWAY), the policy forward of one row by one thread (thread_policy_forward). */
#pragma once

/* The decoder row's width: the action head's columns (POLICY_HEAD_SIZE, the trainer's -D: A logits, sum(nvec)
 * logits, or D Gaussian means), then the value. */
#ifndef POLICY_HEAD_SIZE
#define POLICY_HEAD_SIZE NUM_ACTIONS
#endif
#define HEAD_Y (POLICY_HEAD_SIZE + 1)

/* A rollout's kernels take this by value (a kernel parameter: no copy, no launch cost): one rollout slot's
 * buffers whole (a kernel finds step t's slices itself, step_slices), the policy's buffers, the env batch's
 * state. Pointers a path does not use are 0. Rows are env-major (row = env * NUM_AGENTS + agent), R of them a
 * step; self-play's rows are the learner's seats alone (R = N), its batch scratch every seat's. */
typedef struct {
    OBS_T* obs;                  /* (T + 1, R, O) at step_obs's offsets */
    float* starts;               /* (T + 1, R) 1: obs[t] begins an episode */
    int* actions;                /* (T, R) int32, or (T, R, D) of the env's ACT_T (a MultiDiscrete or Box head) */
    float* logp;                 /* (T, R) log pi(a|s) */
    float* values;               /* (T, R) V(s) */
    float* rewards;              /* (T, R) (optionally clamped) */
    float* dones;                /* (T, R) 1: the episode ended at step t */
    float* last_value;           /* (R,) V(obs[T]), the fused paths' bootstrap */
    float* segment_state;        /* (S, Ls, R, H) the state entering each segment of K steps */
    const float* params;         /* (P,) the weights the fused policy steps read */
    const float* y;              /* (R, HEAD_Y) the GEMM path's decoder output for the step, without dec_bias */
    const float* dec_bias;       /* (HEAD_Y,) the decoder bias the GEMM path's step adds, then a Box head's log-stds */
    float* state;                /* (Ls, R, H) the live recurrent state */
    float* last_state;           /* (Ls, R, H) scratch: the state after the bootstrap step */
    fv_slot* slots;              /* (N,) the envs */
    OBS_T* final_obs;            /* (N * NUM_AGENTS, O) batch-layer scratch (terminal obs) */
    unsigned char* terminated;   /* (N,) */
    unsigned char* truncated;    /* (N,) */
    float* ep_return;            /* (N * NUM_AGENTS,) finished episodes' returns where done */
    int* ep_length;              /* (N,) */
    float* ep_stats;             /* (N, NUM_STATS) */
    double* episode_acc;         /* episodes, sums of returns, lengths, stats, each agent's returns (record_outcome) */
    const TrainScalars* scalars; /* rollout_steps: the sampler's policy-step counter */
    unsigned long long seed_key; /* the sampler's key */
    int num_envs;                /* N, the envs */
    int R;                       /* rows a step */
    int T;                       /* horizon */
    int K;                       /* bptt: steps a segment */
    int reward_clamp;            /* 1: rewards clamped to [-1, 1] */
    int max_episode_steps;       /* the batch layer's truncation (0: none) */
} RolloutArgs;

/* Step t's observations in a (T + 1, R, O) rollout buffer: every step's R * O elements start at float offset
 * t * R * O whatever OBS_T is (byte observations fill the first quarter of their step's floats), which is where
 * the host's slot addresses put a step; the update's gather and the statistics read them there. */
__device__ __forceinline__ OBS_T* step_obs(OBS_T* obs, long long t, long long R) {
    return reinterpret_cast<OBS_T*>(reinterpret_cast<float*>(obs) + t * R * OBS_SIZE);
}

/* Step t of a rollout slot: the obs and start flags it reads, where the recurrent state after it goes (the live
 * state, or last_state at the bootstrap step T), and what its env step writes: its slices of the slot's (T, R)
 * buffers (actions: (R,) int32 or (R, D) ACT_T) and the next step's obs and start flags. */
typedef struct {
    const OBS_T* obs;
    const float* starts;
    float* state_out;
    OBS_T* obs_next;
    int* actions;
    float* logp;
    float* values;
    float* rewards;
    float* dones;
    float* starts_next;
    const unsigned char* masks; /* (R, NUM_ACTIONS) step t's available actions (a team's), or NULL: all are */
} StepSlices;

__device__ __forceinline__ StepSlices step_slices(const RolloutArgs& a, int t) {
    long long tr = (long long)t * a.R;
    StepSlices s;
    s.obs = step_obs(a.obs, t, a.R);
    s.starts = a.starts + tr;
    s.state_out = t == a.T ? a.last_state : a.state;
    s.obs_next = step_obs(a.obs, t + 1, a.R);
#if ACTION_SPACE == FV_DISCRETE
    s.actions = a.actions + tr;
#else
    s.actions = reinterpret_cast<int*>(reinterpret_cast<ACT_T*>(a.actions) + tr * ACTION_DIMS);
#endif
    s.logp = a.logp + tr;
    s.values = a.values + tr;
    s.rewards = a.rewards + tr;
    s.dones = a.dones + tr;
    s.starts_next = a.starts + tr + a.R;
    s.masks = nullptr; /* the fused kernels and self-play play games without masks */
    return s;
}

#ifdef POLICY_HIDDEN
/* ------------------------------------------------------------------------------------------------
 * The policy forward of one row by one thread (compiled with POLICY_HIDDEN, POLICY_LAYERS, POLICY_MINGRU,
 * POLICY_HIGHWAY): reference.policy_forward for one step (encoder, layers, decoder) with the activations in
 * registers; rollout.cu's policy_step_kernel runs it for the learner, selfplay.cu's pool_forward_kernel for the
 * opponents. The module is compiled without FMA contraction (--fmad=false: the env code in it must step as the
 * CPU build does), so the forward writes its fused multiply-adds out with fmaf: the dot products' chains, which
 * would take twice the instructions otherwise, and the MinGRU and highway mixes. P_* are the flat layout's
 * offsets (reference.FlatLayout). */
#define PH POLICY_HIDDEN
#define PW ((POLICY_MINGRU ? (POLICY_HIGHWAY ? 3 : 2) : 1) * PH)
#define P_ENC_W 0
#define P_ENC_B (PH * OBS_SIZE)
#define P_LAYER(l) (P_ENC_B + PH + (l) * (PW * PH + PW))
#define P_DEC_W P_LAYER(POLICY_LAYERS)
#define P_DEC_B (P_DEC_W + (NUM_ACTIONS + 1) * PH)
#define P_TOTAL (P_DEC_B + NUM_ACTIONS + 1)

/* w_row (H,) in shared memory, 16-byte aligned, dot x (H,) in registers: each group of four as one
 * product and three fused multiply-adds, added to the running sum. */
__device__ __forceinline__ float dot_row(const float* w_row, const float* x) {
    const float4* w4 = reinterpret_cast<const float4*>(w_row);
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < PH / 4; k++) {
        float4 w = w4[k];
        float group = fmaf(w.x, x[4 * k], w.y * x[4 * k + 1]);
        group = fmaf(w.z, x[4 * k + 2], group);
        acc += fmaf(w.w, x[4 * k + 3], group);
    }
    return acc;
}

/* One policy forward of one row by one thread (reference.policy_forward for one step): w the flat weights
 * (shared or global memory, 16-byte aligned), o the row's obs, keep = 1 - its start flag; MinGRU: its state
 * is row `row` of the (Ls, rows, H) state_in / state_out (may be the same). scratch: the thread's (H,)
 * buffer, element j at scratch[j * stride], holding each layer's input, overwritten unit by unit with its
 * output. Writes the decoder row y (A + 1). */
__device__ __forceinline__ void thread_policy_forward(const float* w, const OBS_T* o, float keep, const float* state_in,
                                                      float* state_out, long long row, long long rows, float* scratch,
                                                      int stride, float* y) {
    float x[PH];
#pragma unroll
    for (int j = 0; j < PH; j++) {
        float acc = 0.0f;
        for (int k = 0; k < OBS_SIZE; k++) acc = fmaf(w[P_ENC_W + j * OBS_SIZE + k], (float)o[k], acc);
        x[j] = acc + w[P_ENC_B + j];
        scratch[j * stride] = x[j];  /* each layer's input also sits in scratch */
    }
#if !POLICY_MINGRU
    (void)keep;
    (void)state_in;
    (void)state_out;
    (void)row;
    (void)rows;
#endif
    for (int l = 0; l < POLICY_LAYERS; l++) {
        const float* lw = w + P_LAYER(l);
        const float* lb = lw + PW * PH;
        for (int j = 0; j < PH; j++) {
            float zp = dot_row(lw + j * PH, x) + lb[j];
            float out;
#if POLICY_MINGRU
            float cp = dot_row(lw + (PH + j) * PH, x) + lb[PH + j];
            float z = sigmoidf_ref(zp), c = mingru_g(cp);
            long long si = ((long long)l * rows + row) * PH + j;
            float h = fmaf(z, c, (1.0f - z) * keep * state_in[si]);
            state_out[si] = h;
            out = h;
#if POLICY_HIGHWAY
            float s = sigmoidf_ref(dot_row(lw + (2 * PH + j) * PH, x) + lb[2 * PH + j]);
            float xj = scratch[j * stride];  /* the layer input, overwritten just below */
            out = fmaf(s, h, (1.0f - s) * xj);
#endif
#else
            out = fmaxf(zp, 0.0f);
#endif
            scratch[j * stride] = out;
        }
#pragma unroll
        for (int k = 0; k < PH; k++) x[k] = scratch[k * stride];
    }
    for (int m = 0; m < NUM_ACTIONS + 1; m++) y[m] = dot_row(w + P_DEC_W + m * PH, x) + w[P_DEC_B + m];
}

#endif /* POLICY_HIDDEN */
