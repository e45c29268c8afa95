/* byte_state.h: a test env whose State is STATE_BYTES bytes (a -D parameter), every one of them observed, so that a
 * backend that moves states in words (batch_gpu.h's staged kernels: 8-, 4- or 1-byte words by the state's size)
 * shows any byte it drops or moves wrongly. Each step adds (k + 1) * (action + 1) to byte k; the reward is the last
 * byte; terminated when byte 0 wraps past 255, so episodes end at random. */
#include "fastvec.h"

#ifndef STATE_BYTES
#define STATE_BYTES 28
#endif
#define OBS_T unsigned char
#define OBS_SIZE STATE_BYTES
#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define RENDER_W 4
#define RENDER_H 2

typedef struct {
    unsigned char b[STATE_BYTES];
} State;

FV_FN void env_reset(State* s, fv_rng* rng, unsigned char* obs) {
    for (int k = 0; k < STATE_BYTES; k++) obs[k] = s->b[k] = (unsigned char)fv_rand_int(rng, 256);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, unsigned char* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    for (int k = 0; k < STATE_BYTES; k++) obs[k] = s->b[k] = (unsigned char)(s->b[k] + (k + 1) * (actions[0] + 1));
    rewards[0] = (float)s->b[STATE_BYTES - 1];
    return s->b[0] < actions[0] + 1;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, s->b[0], s->b[1], 0);
}
