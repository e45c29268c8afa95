/* pendulum.h: Gymnasium's Pendulum-v1, exactly: torque = the action clipped to [-2, 2] (float32),
 * thdot += (3 g / 2l sin(th) + 3 / (m l^2) u) dt with dt 0.05, clipped to +-8, th += thdot dt, in float64;
 * reward -(angle_normalize(th)^2 + 0.1 thdot^2 + 0.001 u^2) from the state before the step; never
 * terminates (truncation at 200 steps is the backend's). Observation: float32 cos(th), sin(th), thdot.
 * NumPy's types are kept: u is float32, so 3.0 * u and 0.001 * u ** 2 are float32 products (NEP 50);
 * sin, cos and ** 2 are glibc's bits (glibc_math.h), % is NumPy's floored remainder. Rewards are
 * Gymnasium's float64 values rounded to float32 (the batch's reward type).
 * G_MILLI: Gymnasium's g (default 10.0) in thousandths (g=9.81 is 9810); n / 1000.0 is the double
 * nearest the decimal, the one Python reads for the same number.
 *
 * -DFLOAT32=1 (the registry's `float32=1`, opt-in): the same rules on an 8-byte float32 state, every step in
 * float32 in gymnax's Pendulum-v1 order (constants folded in double, then rounded to float32; sin and cos
 * from math32.h; angle_normalize with fmodf, exact on every target). Faster on the GPU, and CPU and GPU give
 * the same bits; a reset is the float64 build's start rounded to float32. */
#include "fastvec.h"
#include "glibc_math.h"
#include "math32.h"

#define ACTION_SPACE FV_BOX
#define ACTION_DIMS 1
#define ACTION_LOW {-2.0f}
#define ACTION_HIGH {2.0f}
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 500
#define RENDER_H 500
#define STEP_USES_RNG 0
#define OBS_SIZE 3
#define OBS_LOW_ARRAY {-1.0f, -1.0f, -8.0f}
#define OBS_HIGH_ARRAY {1.0f, 1.0f, 8.0f}
#define STATE_SIZE 2
#ifndef G_MILLI
#define G_MILLI 10000
#endif
#ifndef FLOAT32
#define FLOAT32 0
#endif

#define PD_PI 3.141592653589793 /* np.pi */
#define PD_G (G_MILLI / 1000.0)
#define PD_M 1.0
#define PD_L 1.0
#define PD_DT 0.05
#define PD_MAX_SPEED 8
#define PD_MAX_TORQUE 2.0f

#if !FLOAT32
typedef struct {
    double th, thdot; /* Gymnasium's unwrapped.state */
} State;

FV_FN void pendulum_write_obs(const State* s, float* obs) {
    obs[0] = (float)fv_cos(s->th);
    obs[1] = (float)fv_sin(s->th);
    obs[2] = (float)s->thdot;
}

/* th uniform in [-pi, pi), thdot in [-1, 1), as Gymnasium's uniform(low=-high, high=high). */
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->th = -PD_PI + (PD_PI - -PD_PI) * fv_rand_double(rng);
    s->thdot = -1.0 + (1.0 - -1.0) * fv_rand_double(rng);
    pendulum_write_obs(s, obs);
}

/* Gymnasium's angle_normalize: ((x + pi) % (2 pi)) - pi with NumPy's floored float remainder. */
FV_FN double pendulum_angle_normalize(double x) {
    const double two_pi = 2 * PD_PI;
    double mod = fmod(x + PD_PI, two_pi);
    if (mod != 0.0) {
        if (mod < 0) mod += two_pi;
    } else {
        mod = 0.0; /* copysign(0, 2 pi) */
    }
    return mod - PD_PI;
}

FV_FN int env_step(State* s, fv_rng* rng, const float* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    (void)stats;
    float u = actions[0] < -PD_MAX_TORQUE ? -PD_MAX_TORQUE : actions[0]; /* np.clip, in float32 */
    u = u > PD_MAX_TORQUE ? PD_MAX_TORQUE : u;
    double costs = fv_pow2(pendulum_angle_normalize(s->th)) + 0.1 * fv_pow2(s->thdot) +
                   (double)(0.001f * fv_powf2(u));
    double newthdot = s->thdot + (3 * PD_G / (2 * PD_L) * fv_sin(s->th) + (double)((float)(3.0 / (PD_M * PD_L * PD_L)) * u)) * PD_DT;
    newthdot = newthdot < -PD_MAX_SPEED ? -PD_MAX_SPEED : newthdot; /* np.clip */
    newthdot = newthdot > PD_MAX_SPEED ? PD_MAX_SPEED : newthdot;
    s->th = s->th + newthdot * PD_DT;
    s->thdot = newthdot;
    pendulum_write_obs(s, obs);
    rewards[0] = (float)-costs;
    return 0;
}

#else /* FLOAT32 */
#define PD_F(x) ((float)(x)) /* a constant folded in double, as Python folds gymnax's, then rounded to float32 */
typedef struct {
    float th, thdot; /* the opt-in float32 variant */
} State;

FV_FN void pendulum_write_obs(const State* s, float* obs) {
    fv_sincosf(s->th, &obs[1], &obs[0]);
    obs[2] = s->thdot;
}

/* The float64 build's start rounded to float32. */
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->th = (float)(-PD_PI + (PD_PI - -PD_PI) * fv_rand_double(rng));
    s->thdot = (float)(-1.0 + (1.0 - -1.0) * fv_rand_double(rng));
    pendulum_write_obs(s, obs);
}

/* gymnax's angle_normalize in float32: ((x + pi) % (2 pi)) - pi, the remainder floored as jnp's (fmodf is
 * exact, so the same bits on every target). */
FV_FN float pendulum_angle_normalize(float x) {
    const float two_pi = PD_F(2 * PD_PI);
    float mod = fmodf(x + PD_F(PD_PI), two_pi);
    if (mod != 0.0f && mod < 0.0f) mod = mod + two_pi;
    return mod - PD_F(PD_PI);
}

FV_FN int env_step(State* s, fv_rng* rng, const float* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    (void)stats;
    float u = actions[0] < -PD_MAX_TORQUE ? -PD_MAX_TORQUE : actions[0]; /* jnp.clip */
    u = u > PD_MAX_TORQUE ? PD_MAX_TORQUE : u;
    float th_n = pendulum_angle_normalize(s->th);
    float costs = (th_n * th_n + PD_F(0.1) * (s->thdot * s->thdot)) + PD_F(0.001) * (u * u);
    float sin_th, cos_th; /* cos_th unused: the compiler drops its polynomial */
    fv_sincosf(s->th, &sin_th, &cos_th);
    float newthdot =
        s->thdot + (PD_F(3 * PD_G / (2 * PD_L)) * sin_th + PD_F(3.0 / (PD_M * PD_L * PD_L)) * u) * PD_F(PD_DT);
    newthdot = newthdot < -PD_F(PD_MAX_SPEED) ? -PD_F(PD_MAX_SPEED) : newthdot;
    newthdot = newthdot > PD_F(PD_MAX_SPEED) ? PD_F(PD_MAX_SPEED) : newthdot;
    s->th = s->th + newthdot * PD_F(PD_DT);
    s->thdot = newthdot;
    pendulum_write_obs(s, obs);
    rewards[0] = -costs;
    return 0;
}
#endif /* FLOAT32 */

/* The state as float64 (the float32 build rounds a set state to float32). */
FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->th;
    out[1] = s->thdot;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->th = in[0];
    s->thdot = in[1];
    pendulum_write_obs(s, obs);
}

/* Drawn like Gymnasium's renderer: white field, a red rod of width 0.2 from the axle (upright at
 * th = 0, y up) with round ends, a black axle. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    const double scale = RENDER_W / (2 * 2.2), c = RENDER_W / 2.0;
    const double half_width = 0.1 * scale, length = 1.0 * scale;
    double ux = -sin(s->th), uy = -cos(s->th); /* the rod's direction in image coordinates */
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    for (int y = 0; y < RENDER_H; y++) {
        for (int x = 0; x < RENDER_W; x++) {
            double dx = x + 0.5 - c, dy = y + 0.5 - c;
            double t = dx * ux + dy * uy;
            t = t < 0 ? 0 : (t > length ? length : t);
            double ex = dx - t * ux, ey = dy - t * uy, d2 = ex * ex + ey * ey;
            unsigned char* p = rgb + 3 * (y * RENDER_W + x);
            if (dx * dx + dy * dy <= 0.05 * scale * 0.05 * scale) {
                p[0] = 0; p[1] = 0; p[2] = 0;
            } else if (d2 <= half_width * half_width) {
                p[0] = 204; p[1] = 77; p[2] = 77;
            }
        }
    }
}
