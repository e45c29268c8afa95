/* box_point.h: a test env with a Box action space (fastvec.h's FV_BOX) and state access: a point on a
 * line pushed by a force (action 0, clipped to [-2, 2]) with a gain (action 1, clipped to [0, 1]) that
 * the observation shows, so that a test can see which values reached the env and how they were clipped.
 * Terminates when |x| > 5; the state is (x, v) in float64, as a classic-control env's. */
#include "fastvec.h"

#define ACTION_SPACE FV_BOX
#define ACTION_DIMS 2
#define ACTION_LOW {-2.0f, 0.0f}
#define ACTION_HIGH {2.0f, 1.0f}
#define OBS_SIZE 3
#define OBS_LOW_ARRAY {-10.0f, -FV_INF, 0.0f}
#define OBS_HIGH_ARRAY {10.0f, FV_INF, 1.0f}
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 8
#define RENDER_H 4
#define STATE_SIZE 2

typedef struct {
    double x, v;
    float gain;
} State;

FV_FN float bp_clip(float a, float lo, float hi) { return a < lo ? lo : a > hi ? hi : a; }

FV_FN void bp_observe(const State* s, float* obs) {
    obs[0] = (float)s->x;
    obs[1] = (float)s->v;
    obs[2] = s->gain;
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->x = 2.0 * fv_rand_double(rng) - 1.0;
    s->v = 0.0;
    s->gain = 0.0f;
    bp_observe(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    double force = (double)bp_clip(actions[0], -2.0f, 2.0f);
    s->gain = bp_clip(actions[1], 0.0f, 1.0f);
    s->v += 0.1 * force;
    s->x += 0.1 * s->v;
    rewards[0] = (float)(-s->x * s->x - 0.01 * force * force) * s->gain;
    bp_observe(s, obs);
    return s->x > 5.0 || s->x < -5.0;
}

FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->x;
    out[1] = s->v;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->x = in[0];
    s->v = in[1];
    bp_observe(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    int px = (int)((s->x + 5.0) / 10.0 * RENDER_W);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, px, 0, px + 1, RENDER_H, 255, 255, 255);
}
