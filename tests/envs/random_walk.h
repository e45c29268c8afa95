/* random_walk.h: a test env for the CPU step's code paths: two agents whose walkers drift by
 * random steps drawn from the env RNG inside env_step (so a wasted or repeated step would show in
 * the RNG stream), byte observations (OBS_T unsigned char), two statistics, and episodes of random
 * length (terminated when a walker leaves [-LIMIT, LIMIT]). */
#include "fastvec.h"

#ifndef LIMIT
#define LIMIT 4
#endif
#define OBS_T unsigned char
#define OBS_SIZE 3
#define NUM_ACTIONS 3
#define NUM_AGENTS 2
#define NUM_STATS 2
#define STAT_NAMES "steps, spread"
#define RENDER_W 4
#define RENDER_H 2
#define SIMD_STEP 1 /* the CPU backend's vectorised passes (tests/test_cpu_speed_paths.py) */

typedef struct {
    int pos[NUM_AGENTS];
    int steps;
} State;

FV_FN void random_walk_obs(const State* s, unsigned char* obs) {
    for (int a = 0; a < NUM_AGENTS; a++) {
        obs[a * OBS_SIZE + 0] = (unsigned char)(s->pos[a] + LIMIT + 1);
        obs[a * OBS_SIZE + 1] = (unsigned char)(s->pos[1 - a] + LIMIT + 1);
        obs[a * OBS_SIZE + 2] = (unsigned char)(s->steps & 255);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, unsigned char* obs) {
    for (int a = 0; a < NUM_AGENTS; a++) s->pos[a] = fv_rand_int(rng, 3) - 1;
    s->steps = 0;
    random_walk_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, unsigned char* obs,
                   float* rewards, float* stats) {
    int out = 0;
    s->steps += 1;
    for (int a = 0; a < NUM_AGENTS; a++) {
        s->pos[a] += (int)actions[a] - 1 + fv_rand_int(rng, 3) - 1;
        rewards[a] = 0.25f * (float)s->pos[a];
        out |= s->pos[a] < -LIMIT || s->pos[a] > LIMIT;
    }
    random_walk_obs(s, obs);
    stats[0] = (float)s->steps;
    stats[1] = (float)(s->pos[0] - s->pos[1]);
    return out;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, s->steps % RENDER_W + 1, 1, 255, 255, 255);
}
