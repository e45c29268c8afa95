/* minatar_breakout.h: MinAtar Breakout, the rules of minatar 1.0.15's breakout.py exactly.
 * A paddle on the bottom row bounces a ball that moves one cell diagonally per step; +1 per brick
 * broken (three rows, refilled when the ball comes back down with none left); terminated when the
 * ball reaches the bottom row beside the paddle. Channels: 0 paddle, 1 ball, 2 trail (the ball's
 * previous cell), 3 brick. No difficulty ramp. Minimal actions: no-op, left, right.
 * Shared parts (actions, sticky actions, draws, observation, rendering, the step around the rules):
 * minatar_common.h.
 */
#define MA_CHANNELS 4
#define OBS_SIZE 400 /* (10, 10, MA_CHANNELS) */
#define NUM_AGENTS 1
#define MA_MINIMAL_SET {MA_NOOP, MA_LEFT, MA_RIGHT}
#define MA_PALETTE {{22, 61, 78}, {84, 121, 47}, {208, 126, 147}, {193, 202, 243}}
#include "minatar_common.h"

#if MINIMAL_ACTION_SET
#define NUM_ACTIONS 3
#else
#define NUM_ACTIONS 6
#endif

typedef struct {
    int score;
    unsigned short bricks[10]; /* bit x of row y: a brick at (y, x) */
    signed char ball_x, ball_y, ball_dir; /* dir 0: up-left, 1: up-right, 2: down-right, 3: down-left */
    signed char last_x, last_y, pos, strike, last_action, terminal;
} State;

FV_FN void mab_write_obs(const State* s, unsigned char* obs) {
    ma_clear(obs);
    /* bricks only ever lie in rows 1..3; a whole-row store goes before the cells set in the same rows */
#if MA_ROW_STORES
    for (int y = 1; y <= 3; y++) ma_write_row(obs, y, (fv_u64)s->bricks[y] << 30);
#else
    for (int y = 1; y <= 3; y++) ma_set_row(obs, y, s->bricks[y], 3);
#endif
    MA_SET(obs, s->ball_y, s->ball_x, 1);
    MA_SET(obs, 9, s->pos, 0);
    MA_SET(obs, s->last_y, s->last_x, 2);
}

/* The game's own start (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN void mab_reset(State* s, fv_rng* rng) {
    s->ball_y = 3;
    int start = MA_RANDINT(rng, 2);
    s->ball_x = start ? 9 : 0;
    s->ball_dir = start ? 3 : 2;
    s->pos = 4;
    for (int y = 0; y < 10; y++) s->bricks[y] = (y >= 1 && y <= 3) ? 0x3FF : 0;
    s->strike = 0;
    s->last_x = s->ball_x;
    s->last_y = s->ball_y;
}

/* One step of the game for full-set action a (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN int mab_rules(State* s, fv_rng* rng, int a, int* reward) {
    int r = 0, terminal = 0;
    if (a == MA_LEFT) s->pos = s->pos > 0 ? s->pos - 1 : 0;
    else if (a == MA_RIGHT) s->pos = s->pos < 9 ? s->pos + 1 : 9;

    s->last_x = s->ball_x;
    s->last_y = s->ball_y;
    int dir = s->ball_dir;
    int new_x = s->ball_x + ((dir == 1 || dir == 2) ? 1 : -1);
    int new_y = s->ball_y + (dir >= 2 ? 1 : -1);
    const int flip_x[4] = {1, 0, 3, 2}, flip_y[4] = {3, 2, 1, 0}, flip_both[4] = {2, 3, 0, 1};
    int strike_toggle = 0;
    if (new_x < 0 || new_x > 9) {
        new_x = new_x < 0 ? 0 : 9;
        dir = flip_x[dir];
    }
    if (new_y < 0) {
        new_y = 0;
        dir = flip_y[dir];
    } else if ((s->bricks[new_y] >> new_x) & 1) {
        strike_toggle = 1;
        if (!s->strike) {
            r += 1;
            s->strike = 1;
            s->bricks[new_y] &= (unsigned short)~(1u << new_x);
            new_y = s->last_y;
            dir = flip_y[dir];
        }
    } else if (new_y == 9) {
        int any = 0;
        for (int y = 0; y < 10; y++) any |= s->bricks[y];
        if (!any)
            for (int y = 1; y <= 3; y++) s->bricks[y] = 0x3FF;
        if (s->ball_x == s->pos) {
            dir = flip_y[dir];
            new_y = s->last_y;
        } else if (new_x == s->pos) {
            dir = flip_both[dir];
            new_y = s->last_y;
        } else {
            terminal = 1;
        }
    }
    if (!strike_toggle) s->strike = 0;
    s->ball_dir = (signed char)dir;
    s->ball_x = (signed char)new_x;
    s->ball_y = (signed char)new_y;

    *reward = r;
    return terminal;
}

MA_DEFINE_ENV(mab_reset, mab_rules, mab_write_obs)
