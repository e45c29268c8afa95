/* my_env.h: a complete fastvec environment in one file, as a template for your own.
 * "Corridor": the agent starts in the middle of a corridor of LENGTH cells and walks left or right;
 * reaching the right end gives +1 and ends the episode, the left end gives -1 and ends it.
 * Load it with:  envs = fastvec.make_vec_from_source("examples/my_env.h", num_envs=1024, length=12)
 * (keyword arguments that are not VectorEnv options become -D defines: length=12 -> -DLENGTH=12). */
#include "fastvec.h"

#ifndef LENGTH
#define LENGTH 9
#endif

#define OBS_SIZE 2          /* position / LENGTH, steps taken / 100 */
#define NUM_ACTIONS 2       /* 0: left, 1: right */
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "reached_goal"
#define REWARD_THRESHOLD 0.9 /* optional: the mean return that counts as solved; fastvec-train stops there */
#define RENDER_W (LENGTH * 16)
#define RENDER_H 16

typedef struct {
    int position;   /* 0 .. LENGTH - 1 */
    int steps;
} State;

FV_FN void write_obs(const State* s, float* obs) {
    obs[0] = (float)s->position / LENGTH;
    obs[1] = (float)s->steps / 100.0f;
}

/* Start in the middle, or one cell off it at random: randomness only through the env's rng. */
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->position = LENGTH / 2 + fv_rand_int(rng, 3) - 1;
    s->steps = 0;
    write_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    s->position += actions[0] == 1 ? 1 : -1;
    s->steps += 1;
    int at_goal = s->position >= LENGTH - 1, at_pit = s->position <= 0;
    rewards[0] = at_goal ? 1.0f : (at_pit ? -1.0f : 0.0f);
    stats[0] = (float)at_goal;
    write_obs(s, obs);
    return at_goal || at_pit;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 30, 30, 30);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, 16, 16, 200, 40, 40);                    /* pit */
    fv_fill_rect(rgb, RENDER_W, RENDER_H, RENDER_W - 16, 0, RENDER_W, 16, 40, 200, 40);  /* goal */
    fv_fill_rect(rgb, RENDER_W, RENDER_H, s->position * 16 + 4, 4, s->position * 16 + 12, 12, 240, 240, 240);
}
