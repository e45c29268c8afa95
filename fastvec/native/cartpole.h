/* cartpole.h: Gymnasium's CartPole-v1, exactly: same constants, Euler integration in double
 * precision, reward 1 on every step (the terminating one included), float32 observation.
 * Truncation at 500 steps is the backend's (max_episode_steps), not this file's.
 * sin/cos of a live pole's angle (|theta| <= 0.5) come from a Taylor polynomial accurate to about
 * 1 double ulp (4x faster than libm's sincos); the float32 observations are identical to Gymnasium's. */
#include "fastvec.h"

#define OBS_SIZE 4
#define NUM_ACTIONS 2
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 600
#define RENDER_H 400

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

/* sin and cos for |x| <= 0.5: Taylor series to x^17 / x^18 (truncation error < 1e-21). */
FV_FN void cartpole_sincos(double x, double* sin_x, double* cos_x) {
    if (fabs(x) > 0.5) { *sin_x = sin(x); *cos_x = cos(x); return; }
    double x2 = x * x;
    *sin_x = x * (1.0 + x2 * (-1.0 / 6 + x2 * (1.0 / 120 + x2 * (-1.0 / 5040 + x2 * (1.0 / 362880 +
             x2 * (-1.0 / 39916800 + x2 * (1.0 / 6227020800.0 + x2 * (-1.0 / 1307674368000.0 +
             x2 * (1.0 / 355687428096000.0)))))))));
    *cos_x = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24 + x2 * (-1.0 / 720 + x2 * (1.0 / 40320 +
             x2 * (-1.0 / 3628800 + x2 * (1.0 / 479001600 + x2 * (-1.0 / 87178291200.0 +
             x2 * (1.0 / 20922789888000.0))))))));
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
    return s->x < -CP_X_THRESHOLD || s->x > CP_X_THRESHOLD ||
           s->theta < -CP_THETA_THRESHOLD || s->theta > CP_THETA_THRESHOLD;
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
