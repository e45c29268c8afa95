/* mj_task.h: what a MuJoCo task file defines for mj_batch.c (its parameters, observation, reward and info
 * terms, termination, reset noise), and the arithmetic in NumPy's order and types that makes those terms
 * equal bit for bit to Gymnasium's (sums, squares, norms, clips); task functions are FV_MJ_FN, so that the
 * same files build over MuJoCo Warp's arrays too (mj_view.h). */
#ifndef FASTVEC_MJ_TASK_H
#define FASTVEC_MJ_TASK_H

#include <math.h>
#include <string.h>

/* FV_MJ_VIEW builds the tasks over MuJoCo Warp's float32 arrays (mj_view.h's mjModel and mjData, C++ for its
 * overloads); otherwise they read libmujoco's own mjModel and mjData. fv_mj_num is their data's scalar. */
#ifdef FV_MJ_VIEW
#include "mj_view.h"
#else
#include <mujoco/mujoco.h>
typedef mjtNum fv_mj_num;
#define FV_MJ_FN static
#define FV_MJ_INLINE static inline
#endif

#define FV_MJ_MAX_PARAMS 48
#define FV_MJ_KEEP 8

/* An env's random stream for reset noise (splitmix64): the same distributions as Gymnasium's
 * np_random draws, not the same bits. */
typedef struct { unsigned long long s; } fv_mj_rng;

FV_MJ_INLINE unsigned long long fv_mj_next(fv_mj_rng* r) {
    unsigned long long z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
/* uniform in [low, high), as np.random.Generator.uniform */
FV_MJ_INLINE double fv_mj_uniform(fv_mj_rng* r, double low, double high) {
    return low + (high - low) * ((double)(fv_mj_next(r) >> 11) * 0x1.0p-53);
}
/* standard normal (Box-Muller), as np.random.Generator.standard_normal's distribution */
FV_MJ_INLINE double fv_mj_normal(fv_mj_rng* r) {
    double u = ((double)(fv_mj_next(r) >> 11) + 1.0) * 0x1.0p-53, v = (double)(fv_mj_next(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* What a task's functions see for one env. */
typedef struct {
    const mjModel* m;
    mjData* d;
    const double* p;                        /* the task's parameters, in the order of its `params` string */
    const double* init_qpos, *init_qvel;    /* the model's qpos0 and zero velocities, as Gymnasium's init_qpos */
    double dt;                              /* timestep * frame_skip, as MujocoEnv.dt */
    const double* action;                   /* nu values as given (float32 values when action_f32) */
    int action_f32;                         /* the actions' NumPy dtype was float32: costs on them are float32 */
    double keep[FV_MJ_KEEP];                /* what `before` keeps for `after` (positions before the step) */
    double* obs;                            /* obs_size values */
    double* info;                           /* the info values, in the order of the task's `info` string */
    double reward;
    int terminated;
} fv_mj_ctx;

typedef struct {
    const char* name;
    const char* xml_file;  /* Gymnasium's default model file (in its assets folder) */
    int frame_skip;
    /* keyword=default, space-separated; a range keyword takes two values low:high (two slots of p) */
    const char* params;
    /* name[:dtype[:width]] comma-separated, dtype d (float64, the default), f (float32), i (int64);
     * width T means the model's tendon count */
    const char* info;
    const char* reset_info; /* the keys of `info` that Gymnasium's reset info holds */
    int (*obs_size)(const mjModel* m, const double* p);
    /* a model whose sizes do not fit the task: a message naming the problem, else NULL */
    const char* (*check)(const mjModel* m, const double* p);
    void (*reset)(fv_mj_ctx* c, fv_mj_rng* rng); /* qpos, qvel of a fresh episode (after mj_resetData) */
    void (*before)(fv_mj_ctx* c);                /* before the physics steps */
    void (*after)(fv_mj_ctx* c);                 /* after them: obs, reward, terminated, info */
    void (*observe)(fv_mj_ctx* c);               /* obs alone */
    void (*reset_values)(fv_mj_ctx* c);          /* the reset_info keys' values into info */
} fv_mj_task;

/* ---------------------------------------------------------------- NumPy's arithmetic
 * np.sum (add.reduce) of a contiguous float64 array: 0 + pairwise_sum, whose blocks of up to 128 values
 * sum with eight accumulators combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), and whose
 * longer arrays sum as the sum of their halves (the first half's length a multiple of 8). The halving runs
 * on an explicit stack rather than by recursion: nvcc cannot size a recursive kernel's stack, and the
 * driver's default of 1 KB per thread overflows under the tasks' local arrays. */
#define FV_NP_PAIRWISE(NAME, T)                                                        \
    FV_MJ_INLINE T NAME##_block(const T* a, long n) {                                 \
        if (n < 8) {                                                                   \
            T res = 0;                                                                 \
            for (long i = 0; i < n; i++) res += a[i];                                  \
            return res;                                                                \
        }                                                                              \
        T r[8], res;                                                                   \
        long i;                                                                        \
        for (int j = 0; j < 8; j++) r[j] = a[j];                                       \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
            for (int j = 0; j < 8; j++) r[j] += a[i + j];                              \
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));       \
        for (; i < n; i++) res += a[i];                                                \
        return res;                                                                    \
    }                                                                                  \
    FV_MJ_INLINE T NAME(const T* a, long n) {                                         \
        /* frame k: a[off[k]:off[k] + len[k]]; once its first half is summed, left[k] \
         * holds that sum and right[k] is 1. 48 frames hold any n below 2^52. */      \
        long off[48], len[48];                                                         \
        T left[48], sum;                                                               \
        int right[48], top = 0;                                                        \
        off[0] = 0, len[0] = n;                                                        \
        for (;;) {                                                                     \
            while (len[top] > 128) { /* descend into the first half */                 \
                long n2 = len[top] / 2;                                                \
                n2 -= n2 % 8;                                                          \
                right[top] = 0, off[top + 1] = off[top], len[top + 1] = n2, top++;     \
            }                                                                          \
            sum = NAME##_block(a + off[top], len[top]);                                \
            while (top > 0 && right[top - 1]) { /* second halves: first + second */    \
                top--;                                                                 \
                sum = left[top] + sum;                                                 \
            }                                                                          \
            if (top == 0) return sum;                                                  \
            top--; /* a first half: keep it, then sum the second */                    \
            long n2 = len[top] / 2;                                                    \
            n2 -= n2 % 8;                                                              \
            left[top] = sum, right[top] = 1;                                           \
            off[top + 1] = off[top] + n2, len[top + 1] = len[top] - n2, top++;         \
        }                                                                              \
    }
FV_NP_PAIRWISE(fv_np_pairwise, double)  /* float64 arrays */
FV_NP_PAIRWISE(fv_np_pairwise_f, float)  /* float32 arrays (a float32 action's squares) */
#undef FV_NP_PAIRWISE

/* np.sum(np.square(x)) of n float64 values, optionally clipped to [lo, hi] first (np.clip). */
FV_MJ_INLINE double fv_np_sum_squares(const double* x, int n, int clip, double lo, double hi) {
    double sq[512];
    double total = 0.0;
    for (int start = 0; start < n; start += 512) { /* models here have far fewer values than 512 */
        int k = n - start < 512 ? n - start : 512;
        for (int i = 0; i < k; i++) {
            double v = x[start + i];
            if (clip) v = v < lo ? lo : (v > hi ? hi : v);
            sq[i] = v * v;
        }
        total += fv_np_pairwise(sq, k);
    }
    return 0.0 + total;
}

/* The control cost's np.sum(np.square(action)) in the action's dtype: a float32 action sums in float32. */
FV_MJ_INLINE double fv_np_action_squares(const fv_mj_ctx* c, int n) {
    if (c->action_f32) {
        float sq[64];
        for (int i = 0; i < n; i++) {
            float v = (float)c->action[i];
            sq[i] = v * v;
        }
        return (double)(0.0f + fv_np_pairwise_f(sq, n));
    }
    return fv_np_sum_squares(c->action, n, 0, 0.0, 0.0);
}

/* weight * cost as Python multiplies a float by a NumPy scalar (NEP 50): in float32 for a float32 cost. */
FV_MJ_INLINE double fv_np_scale(const fv_mj_ctx* c, double weight, double cost) {
    return c->action_f32 ? (double)((float)weight * (float)cost) : weight * cost;
}

/* np.linalg.norm of a short 1-D float64 vector: sqrt(x.dot(x)), where NumPy's BLAS (OpenBLAS's ddot on x86-64)
 * sums a vector this short in order, with fused multiply-adds or without them by the kernel it picked for this
 * processor: fv_np_dot_fma says which (fv_mj_set_dot_fma, set from a probe of NumPy's own dot when the library
 * loads). Over MuJoCo Warp's arrays the float32 sums below are the ones compared, within a tolerance. */
#ifdef FV_MJ_VIEW
#define FV_NP_DOT_FMA 1
#else
extern int fv_np_dot_fma;
#define FV_NP_DOT_FMA fv_np_dot_fma
#endif
FV_MJ_INLINE double fv_np_norm(const double* x, int n) {
    double s = 0.0;
    if (FV_NP_DOT_FMA)
        for (int i = 0; i < n; i++) s = fma(x[i], x[i], s);
    else
        for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* A NumPy float64 scalar's x ** 2: libm's pow (an array's ** 2 multiplies, a scalar's calls pow, whose
 * rounding differs from x * x now and then). The exponent is read at run time: the compiler would turn
 * pow(x, 2.0) into x * x. */
FV_MJ_INLINE double fv_np_scalar_square(double x) {
    volatile double two = 2.0;
    return pow(x, two);
}

FV_MJ_INLINE double fv_np_clip(double v, double lo, double hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* qpos + U(-scale, scale) and qvel + U(-scale, scale) (or + scale * N(0, 1) when normal_qvel), from the
 * initial state: the reset noise of most locomotion tasks. */
FV_MJ_INLINE void fv_mj_noise(fv_mj_ctx* c, fv_mj_rng* rng, double scale, int normal_qvel) {
    for (int k = 0; k < c->m->nq; k++) c->d->qpos[k] = c->init_qpos[k] + fv_mj_uniform(rng, -scale, scale);
    for (int k = 0; k < c->m->nv; k++)
        c->d->qvel[k] = c->init_qvel[k] + (normal_qvel ? scale * fv_mj_normal(rng) : fv_mj_uniform(rng, -scale, scale));
}

/* qpos[skip:], then qvel (clipped to [-clip, clip] when clip > 0), into obs; returns the values written. */
FV_MJ_INLINE int fv_mj_obs_qpos_qvel(fv_mj_ctx* c, int skip, double clip) {
    int n = 0;
    for (int k = skip; k < c->m->nq; k++) c->obs[n++] = c->d->qpos[k];
    for (int k = 0; k < c->m->nv; k++) c->obs[n++] = clip > 0 ? fv_np_clip(c->d->qvel[k], -clip, clip) : c->d->qvel[k];
    return n;
}

/* Humanoid's observation: qpos[skip:], qvel, then of every body but the world, as the include flags ask:
 * cinert (10 each), cvel (6 each), qfrc_actuator[6:], cfrc_ext (6 each). */
FV_MJ_INLINE int fv_mj_obs_bodies(fv_mj_ctx* c, int skip, int cinert, int cvel, int qfrc_actuator, int cfrc_ext) {
    const mjModel* m = c->m;
    const mjData* d = c->d;
    int n = fv_mj_obs_qpos_qvel(c, skip, 0.0);
    if (cinert) for (int k = 10; k < 10 * m->nbody; k++) c->obs[n++] = d->cinert[k];
    if (cvel) for (int k = 6; k < 6 * m->nbody; k++) c->obs[n++] = d->cvel[k];
    if (qfrc_actuator) for (int k = 6; k < m->nv; k++) c->obs[n++] = d->qfrc_actuator[k];
    if (cfrc_ext) for (int k = 6; k < 6 * m->nbody; k++) c->obs[n++] = d->cfrc_ext[k];
    return n;
}

FV_MJ_INLINE int fv_mj_obs_bodies_size(const mjModel* m, int skip, int cinert, int cvel, int qfrc_actuator, int cfrc_ext) {
    return m->nq - skip + m->nv + (m->nbody - 1) * (10 * cinert + 6 * cvel + 6 * cfrc_ext) + (m->nv - 6) * qfrc_actuator;
}

#ifdef FV_MJ_VIEW
/* The sums and norms above over MuJoCo Warp's float32 arrays: the values widened to float64 first. */
FV_MJ_INLINE double fv_np_sum_squares(const float* x, int n, int clip, double lo, double hi) {
    double wide[512];
    double total = 0.0;
    for (int start = 0; start < n; start += 512) {
        int k = n - start < 512 ? n - start : 512;
        for (int i = 0; i < k; i++) wide[i] = x[start + i];
        total += fv_np_sum_squares(wide, k, clip, lo, hi);
    }
    return total;
}

FV_MJ_INLINE double fv_np_norm(const float* x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s = fma((double)x[i], (double)x[i], s);
    return sqrt(s);
}
#endif

#define FV_MJ_ISFINITE_ALL(x, n, out) do { out = 1; for (int i_ = 0; i_ < (n); i_++) if (!isfinite((x)[i_])) out = 0; } while (0)

#endif /* FASTVEC_MJ_TASK_H */
