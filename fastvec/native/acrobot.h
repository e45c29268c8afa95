/* acrobot.h: Gymnasium's Acrobot-v1, exactly: the book's dynamics (or the NeurIPS paper's, nips=1)
 * integrated by one RK4 step of 0.2 s in float64 with Gymnasium's operations in Gymnasium's order,
 * its `wrap` and `bound`, reward -1 per step and 0 on the terminating one, float32 observation
 * (cos, sin of both angles, both velocities). Truncation at 500 steps is the backend's.
 * sin, cos and ** 2 are glibc's bits (glibc_math.h), as NumPy computes them: a chaotic double pendulum
 * turns any 1-ulp difference into a different trajectory within a few hundred steps.
 * Gymnasium's reset state is float32, so its first observation takes NumPy's float32 cos/sin (NumPy's
 * own polynomial, not libm's: acrobot_numpy_sincosf); from the first step on, the state is float64.
 *
 * -DFLOAT32=1 (the registry's `float32=1`, opt-in): the same equations in float32 (a 16-byte state, sin and
 * cos from math32.h, x ** 2 as x * x), like gymnax's Acrobot. Much faster on the GPU; trajectories leave
 * Gymnasium's (the system is chaotic), and CPU and GPU still give the same bits. */
/* The float32 step's selects have float work on both sides: SIMD_SELECTS lets its vector passes vectorise with
 * AVX2 alone (fastvec.h). */
#if defined(FLOAT32) && FLOAT32
#define SIMD_SELECTS 1
#endif
#include "fastvec.h"
#include "glibc_math.h"
#include "math32.h"

#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 500
#define RENDER_H 500
#define STEP_USES_RNG 0
#define OBS_SIZE 6
#define AC_PI 3.141592653589793 /* np.pi */
#define AC_MAX_VEL_1 (4 * AC_PI)
#define AC_MAX_VEL_2 (9 * AC_PI)
#define OBS_LOW_ARRAY {-1.0f, -1.0f, -1.0f, -1.0f, -(float)AC_MAX_VEL_1, -(float)AC_MAX_VEL_2}
#define OBS_HIGH_ARRAY {1.0f, 1.0f, 1.0f, 1.0f, (float)AC_MAX_VEL_1, (float)AC_MAX_VEL_2}
#define STATE_SIZE 4
#ifndef NIPS
#define NIPS 0 /* 1: the NeurIPS paper's equations (Gymnasium's book_or_nips = "nips") */
#endif
#ifndef FLOAT32
#define FLOAT32 0
#endif
/* The float32 step is straight-line code but for `wrap`'s loops: the CPU's vector passes (batch.h) run
 * env_step_simd, which turns an angle at most twice, and hand the rare step that needs more to env_step. */
#if FLOAT32 && defined(__AVX2__) && !defined(__CUDACC__)
#define SIMD_STEP 1
#define SIMD_STEP_REDO 1
#endif

#define AC_DT 0.2
#define AC_L1 1.0  /* link lengths */
#define AC_M1 1.0  /* link masses */
#define AC_M2 1.0
#define AC_LC1 0.5 /* positions of the centres of mass */
#define AC_LC2 0.5
#define AC_I1 1.0  /* moments of inertia */
#define AC_I2 1.0
#define AC_G 9.8

#if FLOAT32
typedef struct {
    float theta1, theta2, dtheta1, dtheta2; /* the opt-in float32 variant */
} State;
#else
typedef struct {
    double theta1, theta2, dtheta1, dtheta2; /* Gymnasium's unwrapped.state */
} State;
#endif

#if !FLOAT32

/* Gymnasium's _dsdt: the derivative of (theta1, theta2, dtheta1, dtheta2) under torque s[4]. Every
 * expression keeps Python's evaluation order; Python's constants fold to the same doubles here. */
FV_FN void acrobot_dsdt(const double* s, double* d) {
    double a = s[4], theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    double cos2 = fv_cos(theta2), sin2 = fv_sin(theta2);
    double d1 = AC_M1 * (AC_LC1 * AC_LC1) +
                AC_M2 * (AC_L1 * AC_L1 + AC_LC2 * AC_LC2 + 2 * AC_L1 * AC_LC2 * cos2) + AC_I1 + AC_I2;
    double d2 = AC_M2 * (AC_LC2 * AC_LC2 + AC_L1 * AC_LC2 * cos2) + AC_I2;
    double phi2 = AC_M2 * AC_LC2 * AC_G * fv_cos(theta1 + theta2 - AC_PI / 2.0);
    double phi1 = -AC_M2 * AC_L1 * AC_LC2 * fv_pow2(dtheta2) * sin2 -
                  2 * AC_M2 * AC_L1 * AC_LC2 * dtheta2 * dtheta1 * sin2 +
                  (AC_M1 * AC_LC1 + AC_M2 * AC_L1) * AC_G * fv_cos(theta1 - AC_PI / 2) + phi2;
    double den = AC_M2 * (AC_LC2 * AC_LC2) + AC_I2 - fv_pow2(d2) / d1;
#if NIPS
    double ddtheta2 = (a + d2 / d1 * phi1 - phi2) / den;
#else
    double ddtheta2 = (a + d2 / d1 * phi1 - AC_M2 * AC_L1 * AC_LC2 * fv_pow2(dtheta1) * sin2 - phi2) / den;
#endif
    d[0] = dtheta1;
    d[1] = dtheta2;
    d[2] = -(d2 * ddtheta2 + phi1) / d1;
    d[3] = ddtheta2;
    d[4] = 0.0;
}

/* Gymnasium's wrap(x, -pi, pi); a non-finite x, where Gymnasium's loop never ends, is returned. */
FV_FN double acrobot_wrap(double x) {
    const double diff = AC_PI - (-AC_PI);
    if (!(fabs(x) <= 1.0e300)) return x;
    while (x > AC_PI) x = x - diff;
    while (x < -AC_PI) x = x + diff;
    return x;
}

/* Gymnasium's bound(x, -m, m), i.e. Python's min(max(x, -m), m). */
FV_FN double acrobot_bound(double x, double m) {
    double v = (-m > x) ? -m : x;
    return (m < v) ? m : v;
}


FV_FN void acrobot_write_obs(const State* s, float* obs) {
    obs[0] = (float)fv_cos(s->theta1);
    obs[1] = (float)fv_sin(s->theta1);
    obs[2] = (float)fv_cos(s->theta2);
    obs[3] = (float)fv_sin(s->theta2);
    obs[4] = (float)s->dtheta1;
    obs[5] = (float)s->dtheta2;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    double y0[5] = {s->theta1, s->theta2, s->dtheta1, s->dtheta2, (double)(actions[0] - 1)};
    double k1[5], k2[5], k3[5], k4[5], y[5];
    const double dt = AC_DT - 0, dt2 = dt / 2.0; /* rk4's t = [0, dt] */
    acrobot_dsdt(y0, k1);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k1[i];
    acrobot_dsdt(y, k2);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k2[i];
    acrobot_dsdt(y, k3);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt * k3[i];
    acrobot_dsdt(y, k4);
    for (int i = 0; i < 4; i++) y[i] = y0[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    s->theta1 = acrobot_wrap(y[0]);
    s->theta2 = acrobot_wrap(y[1]);
    s->dtheta1 = acrobot_bound(y[2], AC_MAX_VEL_1);
    s->dtheta2 = acrobot_bound(y[3], AC_MAX_VEL_2);
    int terminated = -fv_cos(s->theta1) - fv_cos(s->theta2 + s->theta1) > 1.0;
    acrobot_write_obs(s, obs);
    rewards[0] = terminated ? 0.0f : -1.0f;
    return terminated;
}

#else /* FLOAT32 */
#define AC_F(x) ((float)(x)) /* a constant folded in double, as Gymnasium's, then rounded to float32 */

/* acrobot_dsdt in float32. */
FV_FN void acrobot_dsdt(const float* s, float* d) {
    float a = s[4], theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
    float sin2, cos2, sin_a, cos_a, sin_b, cos_b;
    fv_sincosf(theta2, &sin2, &cos2);
    fv_sincosf(theta1 + theta2 - AC_F(AC_PI / 2.0), &sin_a, &cos_a);
    fv_sincosf(theta1 - AC_F(AC_PI / 2), &sin_b, &cos_b);
    float d1 = AC_F(AC_M1 * (AC_LC1 * AC_LC1)) +
               AC_F(AC_M2) * (AC_F(AC_L1 * AC_L1 + AC_LC2 * AC_LC2) + AC_F(2 * AC_L1 * AC_LC2) * cos2) + AC_F(AC_I1 + AC_I2);
    float d2 = AC_F(AC_M2) * (AC_F(AC_LC2 * AC_LC2) + AC_F(AC_L1 * AC_LC2) * cos2) + AC_F(AC_I2);
    float phi2 = AC_F(AC_M2 * AC_LC2 * AC_G) * cos_a;
    float phi1 = -AC_F(AC_M2 * AC_L1 * AC_LC2) * (dtheta2 * dtheta2) * sin2 -
                 AC_F(2 * AC_M2 * AC_L1 * AC_LC2) * dtheta2 * dtheta1 * sin2 +
                 AC_F((AC_M1 * AC_LC1 + AC_M2 * AC_L1) * AC_G) * cos_b + phi2;
    float den = AC_F(AC_M2 * (AC_LC2 * AC_LC2) + AC_I2) - (d2 * d2) / d1;
#if NIPS
    float ddtheta2 = (a + d2 / d1 * phi1 - phi2) / den;
#else
    float ddtheta2 = (a + d2 / d1 * phi1 - AC_F(AC_M2 * AC_L1 * AC_LC2) * (dtheta1 * dtheta1) * sin2 - phi2) / den;
#endif
    d[0] = dtheta1;
    d[1] = dtheta2;
    d[2] = -(d2 * ddtheta2 + phi1) / d1;
    d[3] = ddtheta2;
    d[4] = 0.0f;
}

FV_FN float acrobot_wrap(float x) {
    const float diff = AC_F(AC_PI - (-AC_PI));
    if (!(fabsf(x) <= 1.0e30f)) return x;
    while (x > AC_F(AC_PI)) x = x - diff;
    while (x < -AC_F(AC_PI)) x = x + diff;
    return x;
}

/* acrobot_wrap's result without branches where it takes at most two turns (both loops unrolled twice: the same
 * operations); *more is set where it takes more, and the result is then meaningless. */
FV_FN float acrobot_wrap_twice(float x, int* more) {
    const float diff = AC_F(AC_PI - (-AC_PI));
    x = x > AC_F(AC_PI) ? x - diff : x;
    x = x > AC_F(AC_PI) ? x - diff : x;
    x = x < -AC_F(AC_PI) ? x + diff : x;
    x = x < -AC_F(AC_PI) ? x + diff : x;
    *more |= (x > AC_F(AC_PI)) | (x < -AC_F(AC_PI));
    return x;
}

FV_FN float acrobot_bound(float x, float m) {
    float v = (-m > x) ? -m : x;
    return (m < v) ? m : v;
}

FV_FN void acrobot_write_obs(const State* s, float* obs) {
    fv_sincosf(s->theta1, &obs[1], &obs[0]);
    fv_sincosf(s->theta2, &obs[3], &obs[2]);
    obs[4] = s->dtheta1;
    obs[5] = s->dtheta2;
}

/* One step; vector: the angles turned by acrobot_wrap_twice, and FV_SIMD_REDO added to the result where that
 * does not suffice (vector is a constant: each caller's copy keeps one wrap). */
FV_FN int acrobot_step(State* s, const long long* actions, float* obs, float* rewards, int vector) {
    /* the torque through int: the action is 0, 1 or 2, and AVX2 has no vector conversion of int64 to float */
    float y0[5] = {s->theta1, s->theta2, s->dtheta1, s->dtheta2, (float)(int)(actions[0] - 1)};
    float k1[5], k2[5], k3[5], k4[5], y[5];
    const float dt = AC_F(AC_DT), dt2 = AC_F(AC_DT / 2.0), dt6 = AC_F(AC_DT / 6.0);
    acrobot_dsdt(y0, k1);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k1[i];
    acrobot_dsdt(y, k2);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt2 * k2[i];
    acrobot_dsdt(y, k3);
    for (int i = 0; i < 5; i++) y[i] = y0[i] + dt * k3[i];
    acrobot_dsdt(y, k4);
    for (int i = 0; i < 4; i++) y[i] = y0[i] + dt6 * (k1[i] + 2.0f * k2[i] + 2.0f * k3[i] + k4[i]);
    int more = 0;
    s->theta1 = vector ? acrobot_wrap_twice(y[0], &more) : acrobot_wrap(y[0]);
    s->theta2 = vector ? acrobot_wrap_twice(y[1], &more) : acrobot_wrap(y[1]);
    s->dtheta1 = acrobot_bound(y[2], AC_F(AC_MAX_VEL_1));
    s->dtheta2 = acrobot_bound(y[3], AC_F(AC_MAX_VEL_2));
    acrobot_write_obs(s, obs);
    float sin12, cos12;
    fv_sincosf(s->theta2 + s->theta1, &sin12, &cos12);
    int terminated = -obs[0] - cos12 > 1.0f;
    rewards[0] = terminated ? 0.0f : -1.0f;
    return terminated | (more ? FV_SIMD_REDO : 0);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    return acrobot_step(s, actions, obs, rewards, 0);
}

FV_FN int env_step_simd(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                        float* stats) {
    (void)rng;
    (void)stats;
    return acrobot_step(s, actions, obs, rewards, 1);
}
#endif /* FLOAT32 */

/* NumPy's float32 sin (want_cos 0) or cos (1) as its SIMD loop computes them on CPUs with FMA: x = q pi/2 + r
 * (Cody-Waite, three parts of pi/2), minimax polynomials in r, quadrant swap and sign. The reset range
 * (|x| <= 0.1) is checked against NumPy; NumPy itself calls libm beyond |x| = 71476. */
FV_FN float acrobot_numpy_sincosf(float x, int want_cos) {
    float q = (x * 0x1.45f306p-1f + 0x1.8p23f) - 0x1.8p23f;
    float r = fmaf(q, -0x1.921fb0p+00f, x);
    r = fmaf(q, -0x1.5110b4p-22f, r);
    r = fmaf(q, -0x1.846988p-48f, r);
    float r2 = r * r;
    float c = fmaf(fmaf(fmaf(fmaf(0x1.98e616p-16f, r2, -0x1.6c06dcp-10f), r2, 0x1.55553cp-05f), r2, -0.5f), r2, 1.0f);
    float p = fmaf(fmaf(fmaf(0x1.7d3bbcp-19f, r2, -0x1.a06bbap-13f), r2, 0x1.11119ap-07f), r2, -0x1.555556p-03f);
    float sn = fmaf(fmaf(p, r2, 0.0f), r, r);
    int quadrant = (int)q + want_cos;
    float v = (quadrant & 1) ? c : sn;
    return (quadrant & 2) ? 0.0f - v : v;
}

/* A uniform in [-0.1, 0.1), rounded to float32 as Gymnasium's reset rounds it. The rounding goes through a
 * volatile float: GCC 12's SLP vectoriser (-O2 and up, x86-64) otherwise stored the four unrounded doubles
 * (it converted them to float for the observation, then reused the pre-conversion vector for the state). */
FV_FN float acrobot_reset_value(fv_rng* rng) {
    volatile float v = (float)(-0.1 + 0.2 * fv_rand_double(rng));
    return v;
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    float theta1 = acrobot_reset_value(rng), theta2 = acrobot_reset_value(rng);
    float dtheta1 = acrobot_reset_value(rng), dtheta2 = acrobot_reset_value(rng);
    obs[0] = acrobot_numpy_sincosf(theta1, 1);
    obs[1] = acrobot_numpy_sincosf(theta1, 0);
    obs[2] = acrobot_numpy_sincosf(theta2, 1);
    obs[3] = acrobot_numpy_sincosf(theta2, 0);
    obs[4] = dtheta1;
    obs[5] = dtheta2;
    s->theta1 = theta1;
    s->theta2 = theta2;
    s->dtheta1 = dtheta1;
    s->dtheta2 = dtheta2;
}

FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->theta1;
    out[1] = s->theta2;
    out[2] = s->dtheta1;
    out[3] = s->dtheta2;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->theta1 = in[0];
    s->theta2 = in[1];
    s->dtheta1 = in[2];
    s->dtheta2 = in[3];
    acrobot_write_obs(s, obs);
}

/* Fill the pixels within `half_width` of the segment (x0, y0)-(x1, y1) (image coordinates). */
FV_FN void acrobot_segment(unsigned char* rgb, double x0, double y0, double x1, double y1, double half_width,
                           unsigned char r, unsigned char g, unsigned char b) {
    double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    for (int y = 0; y < RENDER_H; y++) {
        for (int x = 0; x < RENDER_W; x++) {
            double px = x + 0.5 - x0, py = y + 0.5 - y0;
            double t = len2 > 0 ? (px * dx + py * dy) / len2 : 0.0;
            t = t < 0 ? 0 : (t > 1 ? 1 : t);
            double ex = px - t * dx, ey = py - t * dy;
            if (ex * ex + ey * ey <= half_width * half_width) {
                unsigned char* p = rgb + 3 * (y * RENDER_W + x);
                p[0] = r; p[1] = g; p[2] = b;
            }
        }
    }
}

/* Drawn like Gymnasium's pygame renderer: white field, the target height as a black line, cyan links
 * and yellow joints; the fixed joint at the centre, y up. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    const double scale = RENDER_W / (2 * (AC_L1 + AC_L1 + 0.2)), offset = RENDER_W / 2.0;
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    int line_y = (int)(offset - 1.0 * scale);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, (int)(offset - 2.2 * scale), line_y, (int)(offset + 2.2 * scale),
                 line_y + 1, 0, 0, 0);
    double x1 = offset + AC_L1 * sin(s->theta1) * scale, y1 = offset + AC_L1 * cos(s->theta1) * scale;
    double x2 = x1 + AC_L1 * sin(s->theta1 + s->theta2) * scale;
    double y2 = y1 + AC_L1 * cos(s->theta1 + s->theta2) * scale;
    acrobot_segment(rgb, offset, offset, x1, y1, 0.1 * scale, 0, 204, 204);
    acrobot_segment(rgb, x1, y1, x2, y2, 0.1 * scale, 0, 204, 204);
    acrobot_segment(rgb, offset, offset, offset, offset, 0.1 * scale, 204, 204, 0);
    acrobot_segment(rgb, x1, y1, x1, y1, 0.1 * scale, 204, 204, 0);
}
