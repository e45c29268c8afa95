/* spaces.h: an env's action and observation spaces as the backends see them, compiled after the env file
 * (batch.h includes it): the defaults of fastvec.h's space constants, the action check that the CPU and
 * the GPU share, and the functions that fill in the spaces' sizes and bounds for the host. */
#ifndef FASTVEC_SPACES_H
#define FASTVEC_SPACES_H

#include "fastvec.h"

#ifndef OBS_T
#define OBS_T float
#endif
#ifndef NUM_AGENTS
#define NUM_AGENTS 1
#endif
#ifndef ACTION_SPACE
#define ACTION_SPACE FV_DISCRETE
#endif
#if ACTION_SPACE == FV_DISCRETE
#ifndef ACTION_DIMS
#define ACTION_DIMS 1
#endif
#if ACTION_DIMS != 1
#error "a Discrete action space has ACTION_DIMS 1; several discrete actions per agent are ACTION_SPACE FV_MULTI_DISCRETE"
#endif
#elif ACTION_SPACE == FV_MULTI_DISCRETE || ACTION_SPACE == FV_BOX
#ifndef ACTION_DIMS
#error "ACTION_SPACE FV_MULTI_DISCRETE and FV_BOX need ACTION_DIMS, the number of values per agent"
#endif
#ifndef NUM_ACTIONS
#define NUM_ACTIONS 0 /* no Discrete(n) count */
#endif
#else
#error "ACTION_SPACE is FV_DISCRETE, FV_MULTI_DISCRETE or FV_BOX"
#endif
#define FV_ACT_LEN (NUM_AGENTS * ACTION_DIMS) /* action values per env */

#ifndef OBS_SHAPE
#define OBS_SHAPE OBS_SIZE
#endif
#define FV_MAX_OBS_DIMS 8

#ifdef STATE_SIZE
#define FV_HAS_STATE 1
#else
#define FV_HAS_STATE 0
#define STATE_SIZE 0
#endif

#if ACTION_SPACE == FV_MULTI_DISCRETE
FV_TABLE long long fv_action_nvec[ACTION_DIMS] = ACTION_NVEC;
#elif ACTION_SPACE == FV_BOX
FV_TABLE float fv_action_low[ACTION_DIMS] = ACTION_LOW;
FV_TABLE float fv_action_high[ACTION_DIMS] = ACTION_HIGH;
#endif

/* The low 32 bits of an action value as the error word keeps them: a Box action's float bits. */
FV_FN unsigned int fv_action_bits(ACT_T v) {
#if ACTION_SPACE == FV_BOX
    union {
        float f;
        unsigned int u;
    } x;
    x.f = v;
    return x.u;
#else
    return (unsigned int)v;
#endif
}

/* Whether value v of dimension d is an action that may not reach env_step: out of [0, n) for the
 * discrete kinds, NaN or infinite for Box (a finite value outside the bounds is the env's to clip).
 * Branch-free, so that the CPU's check of a whole batch vectorises. */
FV_FN int fv_action_bad(ACT_T v, int d) {
#if ACTION_SPACE == FV_BOX
    (void)d;
    return (fv_action_bits(v) & 0x7F800000u) == 0x7F800000u;
#elif ACTION_SPACE == FV_MULTI_DISCRETE
    return (unsigned long long)v >= (unsigned long long)fv_action_nvec[d];
#else
    (void)d;
    return (unsigned long long)v >= (unsigned long long)NUM_ACTIONS;
#endif
}

/* The action space per dimension: nvec (the discrete kinds' counts; Box: 0), low and high (Box: its
 * bounds; discrete: 0 and n - 1). */
FV_FN void fv_fill_action_space(long long* nvec, float* low, float* high) {
    for (int d = 0; d < ACTION_DIMS; d++) {
#if ACTION_SPACE == FV_BOX
        nvec[d] = 0, low[d] = fv_action_low[d], high[d] = fv_action_high[d];
#elif ACTION_SPACE == FV_MULTI_DISCRETE
        nvec[d] = fv_action_nvec[d], low[d] = 0.0f, high[d] = (float)(fv_action_nvec[d] - 1);
#else
        nvec[d] = NUM_ACTIONS, low[d] = 0.0f, high[d] = (float)(NUM_ACTIONS - 1);
#endif
    }
}

/* The observation's shape (returns its number of axes, at most FV_MAX_OBS_DIMS) and bounds per element. */
FV_FN int fv_fill_obs_space(int* shape, float* low, float* high) {
    const int s[] = {OBS_SHAPE};
    int ndim = (int)(sizeof(s) / sizeof(s[0]));
    for (int k = 0; k < ndim && k < FV_MAX_OBS_DIMS; k++) shape[k] = s[k];
#ifdef OBS_LOW_ARRAY
    const float lows[OBS_SIZE] = OBS_LOW_ARRAY;
#endif
#ifdef OBS_HIGH_ARRAY
    const float highs[OBS_SIZE] = OBS_HIGH_ARRAY;
#endif
    for (int k = 0; k < OBS_SIZE; k++) {
#if defined(OBS_LOW_ARRAY)
        low[k] = lows[k];
#elif defined(OBS_LOW)
        low[k] = (float)(OBS_LOW);
#else
        low[k] = sizeof(OBS_T) == 1 ? 0.0f : -FV_INF; /* bytes: 0..255; floats: unbounded */
#endif
#if defined(OBS_HIGH_ARRAY)
        high[k] = highs[k];
#elif defined(OBS_HIGH)
        high[k] = (float)(OBS_HIGH);
#else
        high[k] = sizeof(OBS_T) == 1 ? 255.0f : FV_INF;
#endif
    }
    return ndim;
}

#endif /* FASTVEC_SPACES_H */
