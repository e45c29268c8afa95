/* box_open.h: a test env whose Box actions have infinite bounds: dimension 0 unbounded, 1 bounded below only,
 * 2 bounded above only, 3 bounded, so that a backend's random policy shows how it treats each kind (random_gpu.h:
 * an interval of width 2 at the finite bound, or [-1, 1)). The observation is the last action; no termination. */
#include "fastvec.h"

#define ACTION_SPACE FV_BOX
#define ACTION_DIMS 4
#define ACTION_LOW {-FV_INF, 0.5f, -FV_INF, -3.0f}
#define ACTION_HIGH {FV_INF, FV_INF, -0.5f, 3.0f}
#define OBS_SIZE 4
#define NUM_AGENTS 1
#define RENDER_W 4
#define RENDER_H 2

typedef struct {
    float last[ACTION_DIMS];
} State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    (void)rng;
    for (int d = 0; d < ACTION_DIMS; d++) obs[d] = s->last[d] = 0.0f;
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    for (int d = 0; d < ACTION_DIMS; d++) obs[d] = s->last[d] = actions[d];
    rewards[0] = 0.0f;
    return 0;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    (void)s;
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
}
