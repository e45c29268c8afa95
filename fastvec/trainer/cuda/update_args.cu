/* update_args.cu: the argument structs of the update's long-argument kernels (ppo.cu's gae_kernel,
 * gather_minibatch_kernel and ppo_loss_kernel, heads.cu's ppo_loss_head_kernel), each taken by value (a kernel
 * parameter: no copy, no launch cost) and mirrored field for field by kernel_args.py. Pointers a launch does not
 * use are 0. Legend as kernels.cu's. */
#pragma once
#include "common.cu"

/* gae_kernel: GAE (with optional V-trace) over a rollout slot, one thread per row. */
typedef struct {
    const float* values;     /* (T, R) */
    const float* last_value; /* (R,) with a stride: the bootstrap values (the decoder output's value column) */
    const float* rewards;    /* (T, R) */
    const float* dones;      /* (T, R) */
    const float* new_logp;   /* (T, R) V-trace: log pi_new(a|s) */
    const float* old_logp;   /* (T, R) V-trace: log pi_old(a|s) */
    float* adv;              /* (T, R) advantages */
    float* returns;          /* (T, R) advantages + values */
    float gamma;
    float lam;
    float gamma_lambda;      /* gamma * lam rounded once, as the reference's Python floats are */
    float rho_clip;          /* V-trace's clips */
    float c_clip;
    int T;
    int R;
    int last_value_stride;
    int vtrace;              /* 1: ratios = exp(new_logp - old_logp) correct the advantages */
} GaeArgs;

/* gather_minibatch_kernel: minibatch `first / Bm` (sequences perm[first .. first + Bm)) out of a rollout slot. */
typedef struct {
    const int* perm;         /* (Q,) this epoch's sequence order */
    const float* obs;        /* (T + 1, R, O) the slot's observations (bytes with obs_bytes) */
    const float* starts;     /* (T + 1, R) */
    const int* actions;      /* (T, R, action_words) */
    const float* logp;       /* (T, R) */
    const float* values;     /* (T, R) */
    const float* adv;        /* (T, R) */
    const float* returns;    /* (T, R) */
    float* mb_obs;           /* (K, Bm, O) */
    float* mb_starts;        /* (K, Bm) */
    int* mb_actions;         /* (K, Bm, action_words) */
    float* mb_logp;          /* (K, Bm) */
    float* mb_values;        /* (K, Bm) */
    float* mb_adv;           /* (K, Bm) */
    float* mb_returns;       /* (K, Bm) */
    int* mb_src;             /* (K, Bm) each row's rollout index t * R + r */
    double* partial;         /* (blocks, 2) the advantages' per-block sums (with adv_moments) */
    unsigned int* counter;   /* last_block's counter */
    float* adv_moments;      /* (mean, std) of the minibatch's advantages, or 0: not computed */
    int K;
    int Bm;
    int R;
    int O;
    int first;               /* the minibatch's first sequence in perm */
    int action_words;        /* 32-bit words a row's action */
    int obs_bytes;           /* 1: the observations are bytes (an env's OBS_T unsigned char) */
} GatherArgs;

/* ppo_loss_kernel (a Discrete head) and ppo_loss_head_kernel (MultiDiscrete, Box): the PPO loss and its gradient
 * over a minibatch, one thread per row. */
typedef struct {
    const float* y;           /* (n, Y) decoder rows: the head's columns, then the value */
    const int* actions;       /* (n, Wa) each row's action as 32-bit words */
    const long long* nvec;    /* (D,) a MultiDiscrete head's counts, or 0 */
    const float* logstd;      /* (D,) a Box head's log-stds (dec.logstd), or 0 */
    const float* old_logp;    /* (n,) */
    const float* old_values;  /* (n,) */
    const float* adv;         /* (n,) */
    const float* returns;     /* (n,) */
    const float* adv_moments; /* (mean, std) of the advantages, or 0: no normalisation */
    TrainScalars* scalars;    /* ent_coef; the statistics are added to stat[0..5) */
    float* dy;                /* (n, Y) d loss / d y */
    float* dlogstd;           /* (n, D) a Box head's d loss / d log-std per row, or 0 */
    double* partial;          /* (blocks, 5) the statistics' per-block sums, or 0: no statistics */
    unsigned int* counter;    /* last_block's counter */
    float* new_logp;          /* (T, R) V-trace's log-probabilities, scattered through src, or 0 */
    const int* src;           /* (n,) each row's rollout index */
    const float* weights;     /* (Bm,) the minibatch's sequences' importance weights (prio_kernel's), or 0: all 1 */
    float clip_coef;
    float vf_clip_coef;
    float vf_coef;
    int n;                    /* rows */
    int kind;                 /* ppo_loss_head_kernel's HEAD_MULTI_DISCRETE or HEAD_BOX (0: Discrete) */
    int D;                    /* action dimensions (MultiDiscrete, Box) */
    int Y;                    /* decoder width (a Discrete head's A = Y - 1 actions) */
    int Bm;                   /* sequences in the minibatch (row i is sequence i % Bm's), with weights */
} LossArgs;
