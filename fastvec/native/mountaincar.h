/* mountaincar.h: Gymnasium's MountainCar-v0, exactly: push left, none or right (force 0.001), gravity
 * 0.0025 * cos(3 position) (glibc's cos, glibc_math.h, as Python's math.cos), velocity clipped to
 * +-0.07, position to [-1.2, 0.6] with the velocity zeroed at the left wall, all in float64; reward -1 per
 * step; terminated at position >= 0.5 with velocity >= goal_velocity. Truncation at 200 steps is the
 * backend's. Observation: the float64 state rounded to float32.
 * GOAL_VELOCITY_MICRO: Gymnasium's goal_velocity in millionths (goal_velocity=0.01 is 10000); n / 1e6
 * is the double nearest the decimal, the one Python reads for the same number. */
#include "fastvec.h"
#include "glibc_math.h"

#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 600
#define RENDER_H 400
#define STEP_USES_RNG 0
#define OBS_SIZE 2
#define OBS_LOW_ARRAY {-1.2f, -0.07f}
#define OBS_HIGH_ARRAY {0.6f, 0.07f}
#define STATE_SIZE 2
#ifndef GOAL_VELOCITY_MICRO
#define GOAL_VELOCITY_MICRO 0
#endif

#define MC_MIN_POSITION -1.2
#define MC_MAX_POSITION 0.6
#define MC_MAX_SPEED 0.07
#define MC_GOAL_POSITION 0.5
#define MC_GOAL_VELOCITY (GOAL_VELOCITY_MICRO / 1e6)
#define MC_FORCE 0.001
#define MC_GRAVITY 0.0025

typedef struct {
    double position, velocity; /* Gymnasium's unwrapped.state */
} State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->position = -0.6 + (-0.4 - -0.6) * fv_rand_double(rng); /* uniform in [-0.6, -0.4) */
    s->velocity = 0.0;
    obs[0] = (float)s->position;
    obs[1] = 0.0f;
}

/* np.clip(x, lo, hi) of a float64. */
FV_FN double mountaincar_clip(double x, double lo, double hi) {
    double v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    double velocity = s->velocity + ((double)(actions[0] - 1) * MC_FORCE + fv_cos(3 * s->position) * (-MC_GRAVITY));
    velocity = mountaincar_clip(velocity, -MC_MAX_SPEED, MC_MAX_SPEED);
    double position = mountaincar_clip(s->position + velocity, MC_MIN_POSITION, MC_MAX_POSITION);
    if (position == MC_MIN_POSITION && velocity < 0) velocity = 0.0;
    s->position = position;
    s->velocity = velocity;
    obs[0] = (float)position;
    obs[1] = (float)velocity;
    rewards[0] = -1.0f;
    return position >= MC_GOAL_POSITION && velocity >= MC_GOAL_VELOCITY;
}

FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->position;
    out[1] = s->velocity;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->position = in[0];
    s->velocity = in[1];
    obs[0] = (float)in[0];
    obs[1] = (float)in[1];
}

/* The hill's height at `position`, as Gymnasium's _height. */
FV_FN double mountaincar_height(double position) {
    return sin(3 * position) * 0.45 + 0.55;
}

/* Drawn like Gymnasium's renderer: white field, the black hill curve, the black car, the goal flag. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    const double scale = RENDER_W / (MC_MAX_POSITION - MC_MIN_POSITION);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    for (int x = 0; x < RENDER_W; x++) { /* the hill, 2 pixels thick; image rows grow downward */
        int y = RENDER_H - 1 - (int)(mountaincar_height(MC_MIN_POSITION + x / scale) * scale);
        fv_fill_rect(rgb, RENDER_W, RENDER_H, x, y - 1, x + 1, y + 1, 0, 0, 0);
    }
    int flag_x = (int)((MC_GOAL_POSITION - MC_MIN_POSITION) * scale);
    int flag_y = RENDER_H - 1 - (int)(mountaincar_height(MC_GOAL_POSITION) * scale);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, flag_x, flag_y - 50, flag_x + 1, flag_y, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, flag_x + 1, flag_y - 50, flag_x + 25, flag_y - 40, 204, 204, 0);
    /* the car: a 40 x 20 box tilted with the slope, its bottom centre 10 pixels above the hill */
    double cx = (s->position - MC_MIN_POSITION) * scale;
    double cy = RENDER_H - 1 - (mountaincar_height(s->position) * scale + 10);
    double angle = cos(3 * s->position), ux = cos(angle), uy = -sin(angle);
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
