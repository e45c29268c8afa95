/* image_obs.h: a test env with an image-shaped uint8 observation (OBS_SHAPE 4, 5, 2, bounds 0..1, as
 * MinAtar's): channel 0 is a one-hot position on a 4 x 5 grid that Discrete(4) actions move (up, down,
 * left, right; blocked at the edges), channel 1 marks the goal corner; reaching it terminates (reward 1). */
#include "fastvec.h"

#define OBS_T unsigned char
#define OBS_SHAPE 4, 5, 2
#define OBS_SIZE 40
#define OBS_HIGH 1
#define NUM_ACTIONS 4
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define RENDER_W 5
#define RENDER_H 4

typedef struct { int row, col; } State;

FV_FN void io_observe(const State* s, unsigned char* obs) {
    for (int k = 0; k < OBS_SIZE; k++) obs[k] = 0;
    obs[(s->row * 5 + s->col) * 2] = 1;
    obs[(3 * 5 + 4) * 2 + 1] = 1;
}

FV_FN void env_reset(State* s, fv_rng* rng, unsigned char* obs) {
    s->row = fv_rand_int(rng, 3);
    s->col = fv_rand_int(rng, 4);
    io_observe(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, unsigned char* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    long long a = actions[0];
    if (a == 0 && s->row > 0) s->row -= 1;
    if (a == 1 && s->row < 3) s->row += 1;
    if (a == 2 && s->col > 0) s->col -= 1;
    if (a == 3 && s->col < 4) s->col += 1;
    io_observe(s, obs);
    int goal = s->row == 3 && s->col == 4;
    rewards[0] = goal ? 1.0f : 0.0f;
    return goal;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, s->col, s->row, s->col + 1, s->row + 1, 255, 255, 255);
}
