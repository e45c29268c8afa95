/* multi_discrete.h: a test env with a MultiDiscrete([3, 5]) action space per agent (AGENTS agents, a -D
 * parameter, default 1): the observation is the agent's last action, the reward 10 * a0 + a1, and an
 * episode terminates after 4 steps, so a test can see exactly which values reached the env. */
#include "fastvec.h"

#ifndef AGENTS
#define AGENTS 1
#endif
#define ACTION_SPACE FV_MULTI_DISCRETE
#define ACTION_DIMS 2
#define ACTION_NVEC {3, 5}
#define OBS_SIZE 2
#define OBS_LOW 0
#define OBS_HIGH 4
#define NUM_AGENTS AGENTS
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 4
#define RENDER_H 2

typedef struct { int steps; } State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    (void)rng;
    s->steps = 0;
    for (int k = 0; k < NUM_AGENTS * OBS_SIZE; k++) obs[k] = 0.0f;
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    s->steps += 1;
    for (int a = 0; a < NUM_AGENTS; a++) {
        obs[a * OBS_SIZE] = (float)actions[a * ACTION_DIMS];
        obs[a * OBS_SIZE + 1] = (float)actions[a * ACTION_DIMS + 1];
        rewards[a] = (float)(10 * actions[a * ACTION_DIMS] + actions[a * ACTION_DIMS + 1]);
    }
    return s->steps >= 4;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, s->steps % RENDER_W + 1, 1, 255, 255, 255);
}
