/* categorical.cu: one categorical distribution over logits[0..A), written once for the sampler (policy.cu's
 * sample_row), the Discrete head's PPO loss (ppo.cu) and the MultiDiscrete head's (heads.cu): its log-softmax,
 * entropy, and the gradient of the PPO loss's policy and entropy terms (reference.py's, heads.py's
 * _categorical_grad). Every caller runs the same float operations in the same order, so they agree bit for bit. */
#pragma once

/* log p_a = (logits[a] - max) - lse, where lse = log sum_a exp(logits[a] - max). */
typedef struct {
    float max;
    float lse;
} LogSoftmax;

__device__ __forceinline__ LogSoftmax log_softmax(const float* logits, int A) {
    float m = logits[0];
    for (int a = 1; a < A; a++) m = fmaxf(m, logits[a]);
    float sum = 0.0f;
    for (int a = 0; a < A; a++) sum += expf(logits[a] - m);
    LogSoftmax s;
    s.max = m;
    s.lse = logf(sum);
    return s;
}

__device__ __forceinline__ float log_prob(LogSoftmax s, const float* logits, int a) {
    return (logits[a] - s.max) - s.lse;
}

/* -sum_a p_a log p_a. */
__device__ __forceinline__ float categorical_entropy(LogSoftmax s, const float* logits, int A) {
    float entropy = 0.0f;
    for (int a = 0; a < A; a++) {
        float lp = log_prob(s, logits, a);
        entropy -= expf(lp) * lp;
    }
    return entropy;
}

/* The gradient of dlogp * log p(action) - went * entropy into dl (A,): dlogp (onehot - p) + went p (log p + H). */
__device__ __forceinline__ void categorical_grad(LogSoftmax s, float entropy, const float* logits, int A, int action,
                                                 float dlogp, float went, float* dl) {
    for (int a = 0; a < A; a++) {
        float lp = log_prob(s, logits, a);
        float p = expf(lp);
        dl[a] = dlogp * ((a == action ? 1.0f : 0.0f) - p) + went * p * (lp + entropy);
    }
}
