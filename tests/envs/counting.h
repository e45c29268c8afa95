/* counting.h: a test env for the autoreset contract (after Gymnasium's count env): the observation
 * counts steps since reset, the reward is the action, and the episode terminates when the count
 * reaches TERMINATE_AT (a -D parameter) so every mode's expected output can be written down. */
#include "fastvec.h"

#ifndef TERMINATE_AT
#define TERMINATE_AT 3
#endif
#define OBS_SIZE 1
#define NUM_ACTIONS 5
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "count"
#define RENDER_W 4
#define RENDER_H 2

typedef struct { int count; } State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    (void)rng;
    s->count = 0;
    obs[0] = 0.0f;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    s->count += 1;
    obs[0] = (float)s->count;
    rewards[0] = (float)actions[0];
    stats[0] = (float)s->count;
    return s->count >= TERMINATE_AT;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, s->count % RENDER_W + 1, 1, 255, 255, 255);
}
