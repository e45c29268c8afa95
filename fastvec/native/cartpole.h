/* cartpole.h: Gymnasium's CartPole-v1, exactly: same constants, Euler integration in double
 * precision, reward 1 on every step (the terminating one included), float32 observation.
 * Truncation at 500 steps is the backend's (max_episode_steps), not this file's. SUTTON_BARTO_REWARD=1 is
 * Gymnasium's sutton_barto_reward=True. One difference: a terminated pole stepped on (DISABLED autoreset, or
 * a single env past its end) keeps earning 1 here, where Gymnasium gives 0 (and warns).
 * sin and cos of the pole's angle are glibc's bits (glibc_math.h), the values NumPy's np.sin/np.cos give
 * Gymnasium, so whole trajectories are Gymnasium's to the bit.
 *
 * -DFLOAT32=1 (the registry's `float32=1`, opt-in): the same equations in float32 with a 16-byte
 * float32 state, like gymnax's CartPole (the observation is the state). Faster, above all on the GPU,
 * but the trajectories leave Gymnasium's after some steps (float32 rounding; tests/native/test_cartpole_float32.py
 * measures how closely they track). Termination follows Gymnasium's rule on the float32 state exactly
 * (|x| > 2.4, |theta| > 12 degrees, both read as float64); resets draw from [-0.05, 0.05) like Gymnasium,
 * in steps of 0.1 / 65536 (four 16-bit uniforms from one RNG draw: on the GPU an episode's reset costs
 * about as much as its step). CPU and GPU builds give the same bits: no libm call, and the fused
 * multiply-adds are explicit fmaf (one IEEE rounding on every target; a CPU without FMA instructions
 * calls libm's fmaf, correct but slower). */
#define SIMD_SELECTS 1 /* fvm_sincos_mid picks its Taylor or table sin by a select (fastvec.h) */
#include "fastvec.h"
#include "glibc_math.h"
#include "math32.h"

#define OBS_SIZE 4
/* Gymnasium's observation bounds: twice the termination thresholds, the velocities unbounded. */
#define OBS_HIGH_ARRAY {4.8f, FV_INF, (float)(12 * 2 * 3.14159265358979323846 / 360 * 2), FV_INF}
#define OBS_LOW_ARRAY {-4.8f, -FV_INF, -(float)(12 * 2 * 3.14159265358979323846 / 360 * 2), -FV_INF}
#define NUM_ACTIONS 2
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 600
#define RENDER_H 400
#ifndef FLOAT32
#define FLOAT32 0
#endif
#ifndef SUTTON_BARTO_REWARD
#define SUTTON_BARTO_REWARD 0 /* 1: Gymnasium's sutton_barto_reward=True: 0 per step, -1 on the terminating one */
#endif
/* Both steps run across envs in the CPU's vector passes. The float32 step is straight-line code. The
 * float64 step's glibc sin/cos branch on the angle's range: the passes run env_step_simd, whose sin/cos
 * cover only the range of a live pole (fvm_sincos_mid, branch-free), and batch.h steps the envs outside it
 * (a fallen pole stepped on, an angle under 2^-26) with env_step, one at a time. */
#if defined(__AVX2__) && !defined(__CUDACC__)
#define SIMD_STEP 1
#if !FLOAT32
#define SIMD_STEP_VALID(s) FVM_SINCOS_MID((s)->theta)
#endif
#endif
#define STEP_USES_RNG 0 /* env_step never draws: the GPU step leaves the RNG in memory unless an env resets */
#define STATE_SIZE 4 /* x, x_dot, theta, theta_dot: Gymnasium's unwrapped.state */

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

#if FLOAT32
typedef struct {
    float x, x_dot, theta, theta_dot; /* the opt-in float32 variant: also its observation */
} State;
#else
typedef struct {
    double x, x_dot, theta, theta_dot; /* Gymnasium keeps float64 state and returns float32 */
} State;
#endif

#if !FLOAT32
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

/* Gymnasium's step given sin and cos of the pole's angle. */
FV_FN int cartpole_step(State* s, double sintheta, double costheta, const long long* actions, float* obs,
                        float* rewards) {
    double force = actions[0] == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;
    /* Gymnasium's order of operations; np.square(v) is v * v, one rounding */
    double temp = (force + CP_POLEMASS_LENGTH * (s->theta_dot * s->theta_dot) * sintheta) / CP_TOTAL_MASS;
    double thetaacc = (CP_GRAVITY * sintheta - costheta * temp) /
                      (CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (costheta * costheta) / CP_TOTAL_MASS));
    double xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;
    s->x = s->x + CP_TAU * s->x_dot;
    s->x_dot = s->x_dot + CP_TAU * xacc;
    s->theta = s->theta + CP_TAU * s->theta_dot;
    s->theta_dot = s->theta_dot + CP_TAU * thetaacc;
    cartpole_write_obs(s, obs);
    int terminated = (s->x < -CP_X_THRESHOLD) | (s->x > CP_X_THRESHOLD) | /* | rather than ||: no branches */
                     (s->theta < -CP_THETA_THRESHOLD) | (s->theta > CP_THETA_THRESHOLD);
    rewards[0] = SUTTON_BARTO_REWARD ? (terminated ? -1.0f : 0.0f) : 1.0f;
    return terminated;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    return cartpole_step(s, fv_sin(s->theta), fv_cos(s->theta), actions, obs, rewards); /* np.sin, np.cos */
}

/* env_step where SIMD_STEP_VALID(s). */
FV_FN int env_step_simd(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                        float* stats) {
    (void)rng;
    (void)stats;
    double sintheta, costheta;
    fvm_sincos_mid(s->theta, &sintheta, &costheta);
    return cartpole_step(s, sintheta, costheta, actions, obs, rewards);
}

#else /* FLOAT32 */
/* Thresholds as floats that make the float32 comparisons Gymnasium's float64 ones: (float)2.4 and
 * (float)(12 * 2 pi / 360) both round up, so for a float v, v > 2.4 exactly when v >= 2.4f. */
#define CP_F_X_THRESHOLD 2.4f                 /* 2.4000000953674316 */
#define CP_F_THETA_THRESHOLD 0.2094395160675f /* 0.20943951606750488 */

FV_FN void cartpole_write_obs(const State* s, float* obs) {
    obs[0] = s->x;
    obs[1] = s->x_dot;
    obs[2] = s->theta;
    obs[3] = s->theta_dot;
}

/* A uniform in [-0.05, 0.05) from 16 random bits. */
FV_FN float cartpole_uniform16(fv_u64 bits) {
    return -0.05f + (float)(unsigned int)(bits & 0xFFFFu) * (0.1f / 65536.0f);
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    fv_u64 u = fv_rand_u64(rng);
    s->x = cartpole_uniform16(u >> 48);
    s->x_dot = cartpole_uniform16(u >> 32);
    s->theta = cartpole_uniform16(u >> 16);
    s->theta_dot = cartpole_uniform16(u);
    cartpole_write_obs(s, obs);
}

/* Gymnasium's equations in float32 (with fused multiply-adds); its divisions by the total mass
 * are products with its reciprocal here (one float division per step instead of four). */
FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    const float inv_total_mass = (float)(1.0 / CP_TOTAL_MASS);
    const float polemass_length = (float)CP_POLEMASS_LENGTH, tau = (float)CP_TAU;
    float force = actions[0] == 1 ? (float)CP_FORCE_MAG : -(float)CP_FORCE_MAG;
    float sintheta, costheta;
    fv_sincosf(s->theta, &sintheta, &costheta);
    float temp = fmaf(polemass_length * s->theta_dot * s->theta_dot, sintheta, force) * inv_total_mass;
    float thetaacc = fmaf((float)CP_GRAVITY, sintheta, -(costheta * temp)) /
                     ((float)CP_LENGTH * fmaf(-(float)(CP_MASSPOLE / CP_TOTAL_MASS) * costheta, costheta, (float)(4.0 / 3.0)));
    float xacc = fmaf(-(float)(CP_POLEMASS_LENGTH / CP_TOTAL_MASS) * thetaacc, costheta, temp);
    s->x = fmaf(tau, s->x_dot, s->x);
    s->x_dot = fmaf(tau, xacc, s->x_dot);
    s->theta = fmaf(tau, s->theta_dot, s->theta);
    s->theta_dot = fmaf(tau, thetaacc, s->theta_dot);
    cartpole_write_obs(s, obs);
    int terminated = (s->x <= -CP_F_X_THRESHOLD) | (s->x >= CP_F_X_THRESHOLD) |
                     (s->theta <= -CP_F_THETA_THRESHOLD) | (s->theta >= CP_F_THETA_THRESHOLD);
    rewards[0] = SUTTON_BARTO_REWARD ? (terminated ? -1.0f : 0.0f) : 1.0f;
    return terminated;
}
#endif /* FLOAT32 */

/* The state as float64, Gymnasium's order (the float32 build rounds a set state to float32). */
FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->x;
    out[1] = s->x_dot;
    out[2] = s->theta;
    out[3] = s->theta_dot;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->x = in[0];
    s->x_dot = in[1];
    s->theta = in[2];
    s->theta_dot = in[3];
    cartpole_write_obs(s, obs);
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
