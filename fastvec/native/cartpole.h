/* cartpole.h: Gymnasium's CartPole-v1, exactly: same constants, Euler integration in double
 * precision, reward 1 on every step (the terminating one included), float32 observation.
 * Truncation at 500 steps is the backend's (max_episode_steps), not this file's.
 * sin/cos of a live pole's angle come from a Taylor polynomial accurate to about 1 double ulp
 * (faster than libm's sincos, and it vectorises); the float32 observations are identical to Gymnasium's. */
#include "fastvec.h"

#define OBS_SIZE 4
#define NUM_ACTIONS 2
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 600
#define RENDER_H 400
#if defined(__AVX2__) && !defined(__CUDACC__)
#define SIMD_STEP 1 /* env_step is straight-line code here (see cartpole_sincos): vectorised across envs */
#endif

#define CP_GRAVITY 9.8
#define CP_MASSCART 1.0
#define CP_MASSPOLE 0.1
#define CP_TOTAL_MASS (CP_MASSPOLE + CP_MASSCART)
#define CP_LENGTH 0.5 /* half the pole's length */
#define CP_POLEMASS_LENGTH (CP_MASSPOLE * CP_LENGTH)
#define CP_FORCE_MAG 10.0
#define CP_TAU 0.02
#define CP_THETA_THRESHOLD (12.0 * 2.0 * 3.14159265358979323846 / 360.0)
#define CP_X_THRESHOLD 2.4

typedef struct {
    double x, x_dot, theta, theta_dot; /* Gymnasium keeps float64 state and returns float32 */
} State;

/* sin and cos of the pole's angle: a Taylor series to x^17 / x^18 (truncation error < 1e-19 for
 * |x| <= pi/4), within 1 double ulp of libm, so the float32 observations are Gymnasium's. A live
 * pole has |x| < 0.21; only a fallen pole stepped on (DISABLED) gets further.
 * Where the CPU has AVX2 or wider, batch.h's loop over envs vectorises if env_step has no branch
 * and no call, so larger angles are reduced in line: x = k pi/2 + r with |r| <= pi/4 (Cody-Waite,
 * pi/2 in 33-bit parts, exact products for |k| < 2^20) and the quadrant's swap and signs, within 3
 * ulps of libm up to |x| = 1e6; for |x| < pi/4, k = 0 and r = x exactly. Elsewhere (scalar CPU
 * code, and the GPU) larger angles call libm, which costs nothing on a live pole. */
#if defined(__AVX2__) && !defined(__CUDACC__)
#define CP_INV_PIO2 6.36619772367581382433e-01 /* 2 / pi */
#define CP_PIO2_1 1.57079632673412561417e+00   /* the first 33 bits of pi/2 */
#define CP_PIO2_2 6.07710050630396597660e-11   /* the next 33 bits */
#define CP_PIO2_3 2.02226624871116645580e-21   /* the next 33 bits */
#define CP_PIO2_3T 8.47842766036889956997e-32  /* pi/2 - CP_PIO2_1 - CP_PIO2_2 - CP_PIO2_3 */
#define CP_ROUND_MAGIC 6755399441055744.0      /* 1.5 * 2^52: adding then subtracting it rounds to an integer */
#endif

FV_FN void cartpole_sincos(double x, double* sin_x, double* cos_x) {
#if defined(__AVX2__) && !defined(__CUDACC__)
    double k = (x * CP_INV_PIO2 + CP_ROUND_MAGIC) - CP_ROUND_MAGIC;
    double r = x - k * CP_PIO2_1 - k * CP_PIO2_2 - k * CP_PIO2_3 - k * CP_PIO2_3T;
#else
    if (fabs(x) > 0.5) { *sin_x = sin(x); *cos_x = cos(x); return; }
    double r = x;
#endif
    double r2 = r * r;
    double s = r * (1.0 + r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
               r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0 +
               r2 * (1.0 / 355687428096000.0)))))))));
    double c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
               r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600 + r2 * (-1.0 / 87178291200.0 +
               r2 * (1.0 / 20922789888000.0))))))));
#if defined(__AVX2__) && !defined(__CUDACC__)
    /* k mod 4 as k4 in {-2, ..., 2}, in doubles (no 64-bit integer conversion to vectorise);
     * sin(r + q pi/2) is s, c, -s, -c and cos(r + q pi/2) is c, -s, -c, s for q = 0, 1, 2, 3. */
    double k4 = k - 4.0 * ((k * 0.25 + CP_ROUND_MAGIC) - CP_ROUND_MAGIC);
    int odd = (k4 == 1.0) | (k4 == -1.0);
    double sin_q = odd ? c : s, cos_q = odd ? s : c;
    *sin_x = ((k4 < -0.5) | (k4 > 1.5)) ? -sin_q : sin_q; /* q = 2 or 3 */
    *cos_x = ((k4 > 0.5) | (k4 < -1.5)) ? -cos_q : cos_q; /* q = 1 or 2 */
#else
    *sin_x = s;
    *cos_x = c;
#endif
}

FV_FN void cartpole_write_obs(const State* s, float* obs) {
    obs[0] = (float)s->x;
    obs[1] = (float)s->x_dot;
    obs[2] = (float)s->theta;
    obs[3] = (float)s->theta_dot;
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->x = -0.05 + 0.1 * fv_rand_double(rng);
    s->x_dot = -0.05 + 0.1 * fv_rand_double(rng);
    s->theta = -0.05 + 0.1 * fv_rand_double(rng);
    s->theta_dot = -0.05 + 0.1 * fv_rand_double(rng);
    cartpole_write_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    double force = actions[0] == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;
    double sintheta, costheta;
    cartpole_sincos(s->theta, &sintheta, &costheta);
    double temp = (force + CP_POLEMASS_LENGTH * s->theta_dot * s->theta_dot * sintheta) / CP_TOTAL_MASS;
    double thetaacc = (CP_GRAVITY * sintheta - costheta * temp) /
                      (CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * costheta * costheta / CP_TOTAL_MASS));
    double xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;
    s->x = s->x + CP_TAU * s->x_dot;
    s->x_dot = s->x_dot + CP_TAU * xacc;
    s->theta = s->theta + CP_TAU * s->theta_dot;
    s->theta_dot = s->theta_dot + CP_TAU * thetaacc;
    cartpole_write_obs(s, obs);
    rewards[0] = 1.0f;
    return (s->x < -CP_X_THRESHOLD) | (s->x > CP_X_THRESHOLD) | /* | rather than ||: no branches */
           (s->theta < -CP_THETA_THRESHOLD) | (s->theta > CP_THETA_THRESHOLD);
}

/* Drawn like Gymnasium's pygame renderer: white field, black cart and track, brown pole. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    const double scale = RENDER_W / (2.0 * CP_X_THRESHOLD);
    const double pole_w = 10.0, pole_len = scale * 2.0 * CP_LENGTH;
    const int cart_w = 50, cart_h = 30, cart_top = RENDER_H - 100; /* image rows grow downward */
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, cart_top, RENDER_W, cart_top + 1, 0, 0, 0);
    int cart_x = (int)(s->x * scale + RENDER_W / 2.0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, cart_x - cart_w / 2, cart_top - cart_h / 2,
                 cart_x + cart_w / 2, cart_top + cart_h / 2, 0, 0, 0);
    /* Pole: a rectangle from the axle along (sin theta, -cos theta) in image coordinates. */
    double ax = cart_x, ay = cart_top - cart_h / 4.0;
    double ux = sin(s->theta), uy = -cos(s->theta);
    for (int y = 0; y < RENDER_H; y++) {
        for (int x = 0; x < RENDER_W; x++) {
            double dx = x + 0.5 - ax, dy = y + 0.5 - ay;
            double along = dx * ux + dy * uy, across = dx * uy - dy * ux;
            if (along >= 0.0 && along <= pole_len && across >= -pole_w / 2 && across <= pole_w / 2) {
                unsigned char* p = rgb + 3 * (y * RENDER_W + x);
                p[0] = 202; p[1] = 152; p[2] = 101;
            }
        }
    }
    fv_fill_rect(rgb, RENDER_W, RENDER_H, cart_x - 5, (int)ay - 5, cart_x + 5, (int)ay + 5, 129, 132, 203);
}
