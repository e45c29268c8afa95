/* mountaincar_common.h: what Gymnasium's two mountain cars (mountaincar.h, mountaincar_continuous.h)
 * share: the observation and state, the track's bounds, the goal velocity parameter, the float32 variant's
 * state and motion, and the rgb_array renderer.
 * GOAL_VELOCITY_MICRO: Gymnasium's goal_velocity in millionths (goal_velocity=0.01 is 10000); n / 1e6
 * is the double nearest the decimal, the one Python reads for the same number.
 * FLOAT32=1 (the registry's `float32=1`, opt-in): an 8-byte float32 state and float32 physics in gymnax's
 * order of operations, cos from math32.h (CPU and GPU give the same bits). */
#ifndef FASTVEC_MOUNTAINCAR_COMMON_H
#define FASTVEC_MOUNTAINCAR_COMMON_H
#include "fastvec.h"
#include "glibc_math.h"
#include "math32.h"

#ifndef GOAL_VELOCITY_MICRO
#define GOAL_VELOCITY_MICRO 0
#endif
#ifndef FLOAT32
#define FLOAT32 0
#endif

/* The observation and the state (Gymnasium's unwrapped.state): position and velocity. */
#define OBS_SIZE 2
#define OBS_LOW_ARRAY {-1.2f, -0.07f}
#define OBS_HIGH_ARRAY {0.6f, 0.07f}
#define STATE_SIZE 2

#define MC_MIN_POSITION -1.2
#define MC_MAX_POSITION 0.6
#define MC_MAX_SPEED 0.07
#define MC_GOAL_VELOCITY (GOAL_VELOCITY_MICRO / 1e6)
#define MC_GRAVITY 0.0025 /* both cars' */
#define RENDER_W 600
#define RENDER_H 400

/* np.clip(x, -low, high) (low, high > 0; x not NaN) by x's bits: an integer minimum of its magnitude against the
 * bound on its side. The cars' vector steps clip so: GCC turns a select of a floating-point value into a branch
 * where a test or a conversion follows it, and a vector loop cannot hold that (mountaincar_continuous.h). */
FV_FN double mc_clip64(double x, double low, double high) {
    fv_u64 bits = fvm_bits(x), sign = bits & 0x8000000000000000ULL, magnitude = bits & 0x7fffffffffffffffULL;
    fv_u64 limit = sign ? fvm_bits(low) : fvm_bits(high);
    return fvm_double(sign | (magnitude < limit ? magnitude : limit));
}

FV_FN float mc_clip32(float x, float low, float high) {
    unsigned bits = fvm_float_bits(x), sign = bits & 0x80000000u, magnitude = bits & 0x7fffffffu;
    unsigned limit = sign ? fvm_float_bits(low) : fvm_float_bits(high);
    return fvm_float(sign | (magnitude < limit ? magnitude : limit));
}

#if FLOAT32
typedef struct {
    float position, velocity; /* the opt-in float32 variant: also its observation */
} State;

/* The float32 car's move after a push of `push` (force times the action's power), gymnax's order: velocity
 * (v + push) - cos(3 position) * gravity, clipped to +-max speed, position + velocity clipped to the track,
 * the velocity zeroed against the left wall (Gymnasium's rule, for both cars); bounds are the decimals
 * rounded to float32, as jnp.clip rounds them. */
FV_FN void mc_move_f32(State* s, float push) {
    float velocity = (s->velocity + push) - fv_cosf(3.0f * s->position) * (float)MC_GRAVITY;
    velocity = velocity < -(float)MC_MAX_SPEED ? -(float)MC_MAX_SPEED : velocity;
    velocity = velocity > (float)MC_MAX_SPEED ? (float)MC_MAX_SPEED : velocity;
    float position = s->position + velocity;
    position = position < (float)MC_MIN_POSITION ? (float)MC_MIN_POSITION : position;
    position = position > (float)MC_MAX_POSITION ? (float)MC_MAX_POSITION : position;
    if (position == (float)MC_MIN_POSITION && velocity < 0.0f) velocity = 0.0f;
    s->position = position;
    s->velocity = velocity;
}

/* A reset: the position the float64 build draws (uniform in [-0.6, -0.4)) rounded to float32, at rest; the
 * observation is the state. Both cars' env_reset. */
FV_FN void mc_reset_f32(State* s, fv_rng* rng, float* obs) {
    s->position = (float)(-0.6 + (-0.4 - -0.6) * fv_rand_double(rng));
    s->velocity = 0.0f;
    obs[0] = s->position;
    obs[1] = 0.0f;
}
#endif

/* The hill's height at `position`, as Gymnasium's _height. */
FV_FN double mc_height(double position) {
    return sin(3 * position) * 0.45 + 0.55;
}

/* Drawn like Gymnasium's renderer: white field, the black hill curve, the black car at `position`, the
 * goal flag at `goal_position`. */
FV_FN void mc_render(double position, double goal_position, unsigned char* rgb) {
    const double scale = RENDER_W / (MC_MAX_POSITION - MC_MIN_POSITION);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    for (int x = 0; x < RENDER_W; x++) { /* the hill, 2 pixels thick; image rows grow downward */
        int y = RENDER_H - 1 - (int)(mc_height(MC_MIN_POSITION + x / scale) * scale);
        fv_fill_rect(rgb, RENDER_W, RENDER_H, x, y - 1, x + 1, y + 1, 0, 0, 0);
    }
    int flag_x = (int)((goal_position - MC_MIN_POSITION) * scale);
    int flag_y = RENDER_H - 1 - (int)(mc_height(goal_position) * scale);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, flag_x, flag_y - 50, flag_x + 1, flag_y, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, flag_x + 1, flag_y - 50, flag_x + 25, flag_y - 40, 204, 204, 0);
    /* the car: a 40 x 20 box tilted with the slope, its bottom centre 10 pixels above the hill */
    double cx = (position - MC_MIN_POSITION) * scale;
    double cy = RENDER_H - 1 - (mc_height(position) * scale + 10);
    double angle = cos(3 * position), ux = cos(angle), uy = -sin(angle);
    for (int y = 0; y < RENDER_H; y++) {
        for (int x = 0; x < RENDER_W; x++) {
            double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
            double along = dx * ux + dy * uy, up = dx * uy - dy * ux;
            if (along >= -20 && along <= 20 && up >= 0 && up <= 20) {
                unsigned char* p = rgb + 3 * (y * RENDER_W + x);
                p[0] = 0; p[1] = 0; p[2] = 0;
            }
        }
    }
}

#endif /* FASTVEC_MOUNTAINCAR_COMMON_H */
