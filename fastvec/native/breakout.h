/* breakout.h: Atari Breakout played from state, with the rules and constants of PufferLib's Ocean
 * Breakout (field 576 x 330 px, 6 x 18 bricks, 5 balls, max score 864) so that scores compare.
 * Own code: swept (time-of-impact) collision against only the grid cells the ball can reach.
 *
 * Units: positions in pixels, y grows downward; velocities in pixels per physics tick (1/60 s).
 * One agent step = FRAMESKIP ticks (default 4) with the same action.
 * Actions: 0 no-op, 1 left, 2 right. Each ball launches itself from (272, 135), downward, pi/3.25
 * rad (about 55 degrees) from vertical, to a side drawn from the env RNG.
 * Observation (118 float32):
 *   [0] paddle x / 576 (left edge)   [1] paddle y / 330 (top edge)
 *   [2] ball x / 576 (left edge)     [3] ball y / 330 (top edge)
 *   [4] ball vx / 512, [5] ball vy / 512, both in px per tick (so within +-7.47/512 = +-0.0146)
 *   [6] ball-in-play flag (always 1: the ball launches itself; kept for PufferLib's layout)
 *   [7] score / 864   [8] balls left / 5   [9] paddle width / 62
 *   [10 + 18 * row + col] brick flag, 1 = destroyed, row 0 at the top.
 * Every entry lies in [-1, 1].
 * Rules: a paddle hit sets the ball's direction from where it hit (-45 to +45 degrees from
 * vertical) at the ball's current speed; every 4th paddle hit of a ball then adds 64 px/s (256 up
 * to 448); a brick in the top three rows sets the speed to 448 (taking effect at the next paddle
 * hit, as in PufferLib); the top wall halves the paddle (62 -> 31, once per ball). Bricks pay
 * 7, 7, 4, 4, 1, 1 by row (432 per wall); once the wall is cleared it respawns, once, at the
 * next paddle hit. A ball is lost when its top edge passes the paddle's bottom (y >= 320); the
 * next ball starts with a centred full-width paddle at speed 256. Terminated when the 5th ball is
 * lost or the score reaches 864. stats[0] = "score", the running score, written every step.
 * Differences from PufferLib: no FIRE action (auto-launch), 5 balls rather than 6, a collision
 * consumes only its time of impact (the ball moves on for the rest of the tick), the paddle bounce
 * angle is clamped to +-45 degrees, and sin/cos are polynomials (basic float ops only, so the
 * CPU and a GPU built with --fmad=false take bitwise identical trajectories).
 */
#include "fastvec.h"

#ifndef FRAMESKIP
#define FRAMESKIP 4
#endif

#define OBS_SIZE 118
#define OBS_LOW -1 /* every entry is normalised into [-1, 1] */
#define OBS_HIGH 1
#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "score"
#define RENDER_W 576
#define RENDER_H 330

#define BO_WIDTH 576.0f
#define BO_HEIGHT 330.0f
#define BO_TICK (1.0f / 60.0f)
#define BO_PADDLE_W 62.0f
#define BO_PADDLE_H 8.0f
#define BO_PADDLE_Y 312.0f
#define BO_PADDLE_STEP (620.0f / 60.0f) /* px per tick */
#define BO_BALL 32.0f                   /* the ball is a 32 x 32 square */
#define BO_BALL_X0 272.0f               /* centred over the centred paddle */
#define BO_BALL_Y0 135.0f               /* PufferLib: height / 2 - 30 */
#define BO_SPEED0 256.0f                /* px per second */
#define BO_SPEED_MAX 448.0f
#define BO_SPEED_STEP 64.0f
#define BO_LAUNCH_SIN 0.82298386589365640f /* sin(pi / 3.25) */
#define BO_LAUNCH_COS 0.56806474673115590f /* cos(pi / 3.25) */
#define BO_MAX_BOUNCE 0.78539816339744831f /* pi / 4 */
#define BO_ROWS 6
#define BO_COLS 18
#define BO_NUM_BRICKS (BO_ROWS * BO_COLS)
#define BO_ROW_FULL 0x3FFFFu /* all 18 bricks of a row destroyed */
#define BO_BRICK_W 32.0f
#define BO_BRICK_H 12.0f
#define BO_BRICKS_TOP 50.0f
#define BO_BRICKS_BOTTOM (BO_BRICKS_TOP + BO_ROWS * BO_BRICK_H)
#define BO_BALLS 5
#define BO_WALL_SCORE 432
#define BO_MAX_SCORE 864
/* A contact found this far (in ticks) behind the ball still counts: float rounding can leave
 * the ball a hair inside a surface it was snapped onto. */
#define BO_EPS 1e-4f
#define BO_MAX_CONTACTS_PER_TICK 4

typedef struct {
    float paddle_x, paddle_w;
    float ball_x, ball_y, ball_vx, ball_vy; /* top-left corner; px per tick */
    float ball_speed;                       /* px per second, applied at the next paddle hit */
    int score, balls_left, paddle_hits, bricks_left, wall_respawned;
    unsigned int destroyed[BO_ROWS]; /* bit col of row = brick destroyed */
} State;

FV_FN int breakout_brick_value(int row) { return row < 2 ? 7 : (row < 4 ? 4 : 1); }

/* sin and cos on [-pi/4, pi/4] by Taylor polynomials (error below float precision there). */
FV_FN void breakout_sincos(float a, float* s, float* c) {
    float a2 = a * a;
    *s = a * (1.0f - a2 / 6.0f * (1.0f - a2 / 20.0f * (1.0f - a2 / 42.0f * (1.0f - a2 / 72.0f))));
    *c = 1.0f - a2 / 2.0f * (1.0f - a2 / 12.0f * (1.0f - a2 / 30.0f * (1.0f - a2 / 56.0f)));
}

/* A new ball: paddle centred at full width, ball launched downward to a random side. */
FV_FN void breakout_new_ball(State* s, fv_rng* rng) {
    s->paddle_w = BO_PADDLE_W;
    s->paddle_x = (BO_WIDTH - BO_PADDLE_W) / 2.0f;
    s->ball_x = BO_BALL_X0;
    s->ball_y = BO_BALL_Y0;
    s->ball_speed = BO_SPEED0;
    s->paddle_hits = 0;
    float side = (fv_rand_u64(rng) >> 63) ? 1.0f : -1.0f;
    s->ball_vx = side * BO_LAUNCH_SIN * BO_SPEED0 * BO_TICK;
    s->ball_vy = BO_LAUNCH_COS * BO_SPEED0 * BO_TICK;
}

/* The first eight entries divided as one vector on the CPU (GCC's vector extension; each lane rounds as the
 * scalar division, or the compiler's folding of a constant one, does). */
#if defined(__GNUC__) && !defined(__CUDACC__)
typedef float breakout_lanes __attribute__((vector_size(8 * sizeof(float))));
#endif

FV_FN void breakout_write_obs(const State* s, float* obs) {
#if defined(__GNUC__) && !defined(__CUDACC__)
    breakout_lanes value = {s->paddle_x, BO_PADDLE_Y, s->ball_x, s->ball_y, s->ball_vx, s->ball_vy, 1.0f,
                            (float)s->score};
    const breakout_lanes scale = {BO_WIDTH, BO_HEIGHT, BO_WIDTH, BO_HEIGHT, 512.0f, 512.0f, 1.0f,
                                  (float)BO_MAX_SCORE};
    value /= scale;
    memcpy(obs, &value, sizeof value);
#else
    obs[0] = s->paddle_x / BO_WIDTH;
    obs[1] = BO_PADDLE_Y / BO_HEIGHT;
    obs[2] = s->ball_x / BO_WIDTH;
    obs[3] = s->ball_y / BO_HEIGHT;
    obs[4] = s->ball_vx / 512.0f;
    obs[5] = s->ball_vy / 512.0f;
    obs[6] = 1.0f;
    obs[7] = (float)s->score / (float)BO_MAX_SCORE;
#endif
    obs[8] = (float)s->balls_left / (float)BO_BALLS;
    obs[9] = s->paddle_w / BO_PADDLE_W;
    float* bricks = obs + 10;
    for (int row = 0; row < BO_ROWS; row++) {
        unsigned int mask = s->destroyed[row];
        for (int col = 0; col < BO_COLS; col++) bricks[row * BO_COLS + col] = (float)((mask >> col) & 1u);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->score = 0;
    s->balls_left = BO_BALLS;
    s->bricks_left = BO_NUM_BRICKS;
    s->wall_respawned = 0;
    for (int row = 0; row < BO_ROWS; row++) s->destroyed[row] = 0u;
    breakout_new_ball(s, rng);
    breakout_write_obs(s, obs);
}

/* What the ball touches first in a tick. */
#define BO_HIT_NONE 0
#define BO_HIT_SIDE 1
#define BO_HIT_TOP 2
#define BO_HIT_PADDLE 3
#define BO_HIT_BRICK_X 4 /* a brick's left or right face */
#define BO_HIT_BRICK_Y 5 /* a brick's top or bottom face */

/* Entry and exit times (in ticks) of a point moving at v through the open interval (lo, hi);
 * returns 0 when it never is inside. */
FV_FN int breakout_slab(float p, float v, float lo, float hi, float* t_in, float* t_out) {
    if (v > 0.0f) {
        *t_in = (lo - p) / v;
        *t_out = (hi - p) / v;
    } else if (v < 0.0f) {
        *t_in = (hi - p) / v;
        *t_out = (lo - p) / v;
    } else {
        if (!(p > lo && p < hi)) return 0;
        *t_in = -1e30f;
        *t_out = 1e30f;
    }
    return 1;
}

/* The paddle's move for an action: left (1) stops at 0, right (2) at the right wall. On the CPU, from tables
 * and min/max with no branch (actions differ from env to env, so branches mispredict): the no-op adds +0 and
 * its bounds are infinite, the paddle's x is never -0 (a sum that comes out zero is +0), and min and max
 * give what the selects give for every x but NaN. */
FV_FN float breakout_move_paddle(float x, float width, long long action) {
#ifdef __CUDACC__
    if (action == 1) {
        x -= BO_PADDLE_STEP;
        if (x < 0.0f) x = 0.0f;
    } else if (action == 2) {
        x += BO_PADDLE_STEP;
        if (x > BO_WIDTH - width) x = BO_WIDTH - width;
    }
    return x;
#else
    static const float step[NUM_ACTIONS] = {0.0f, -BO_PADDLE_STEP, BO_PADDLE_STEP};
    static const float low[NUM_ACTIONS] = {-FV_INF, 0.0f, -FV_INF}, high_pad[NUM_ACTIONS] = {FV_INF, FV_INF, 0.0f};
    return fv_minf(fv_maxf(x + step[action], low[action]), (BO_WIDTH - width) + high_pad[action]);
#endif
}

/* One physics tick; returns the reward it earned. */
FV_FN int breakout_tick(State* s, fv_rng* rng, long long action) {
    int reward = 0;
    s->paddle_x = breakout_move_paddle(s->paddle_x, s->paddle_w, action);

    float remaining = 1.0f; /* of this tick */
    for (int contact = 0; contact < BO_MAX_CONTACTS_PER_TICK; contact++) {
        float x = s->ball_x, y = s->ball_y, vx = s->ball_vx, vy = s->ball_vy;
        float best_t = remaining, best_overlap = -1.0f;
        int hit = BO_HIT_NONE, hit_row = 0, hit_col = 0;

        /* Walls: left, right and top; the bottom is open. */
        if (vx < 0.0f) {
            float t = -x / vx;
            if (t < best_t) { best_t = t; hit = BO_HIT_SIDE; }
        } else if (vx > 0.0f) {
            float t = (BO_WIDTH - BO_BALL - x) / vx;
            if (t < best_t) { best_t = t; hit = BO_HIT_SIDE; }
        }
        if (vy < 0.0f) {
            float t = -y / vy;
            if (t < best_t) { best_t = t; hit = BO_HIT_TOP; }
        }

        /* Paddle: its top face only, while the ball falls. */
        if (vy > 0.0f) {
            float t = (BO_PADDLE_Y - BO_BALL - y) / vy;
            if (t >= -BO_EPS && t < best_t) {
                float xt = x + vx * t;
                if (xt + BO_BALL > s->paddle_x && xt < s->paddle_x + s->paddle_w) {
                    best_t = t;
                    hit = BO_HIT_PADDLE;
                }
            }
        }

        /* Bricks: only the cells under the box the ball sweeps this tick. */
        /* min and max rather than selects on the heading (which differs from env to env): the same values,
         * since y + vy * remaining lies on the side of y that vy's sign says, or equals y. */
        float sweep_y0 = fv_minf(y, y + vy * remaining);
        float sweep_y1 = fv_maxf(y, y + vy * remaining) + BO_BALL;
        if (sweep_y0 <= BO_BRICKS_BOTTOM && sweep_y1 >= BO_BRICKS_TOP) {
            float sweep_x0 = fv_minf(x, x + vx * remaining);
            float sweep_x1 = fv_maxf(x, x + vx * remaining) + BO_BALL;
            int col0 = (int)(sweep_x0 / BO_BRICK_W), col1 = (int)(sweep_x1 / BO_BRICK_W);
            int row0 = (int)((sweep_y0 - BO_BRICKS_TOP) / BO_BRICK_H);
            int row1 = (int)((sweep_y1 - BO_BRICKS_TOP) / BO_BRICK_H);
            if (sweep_x0 < 0.0f) col0 = 0; /* (int) truncates toward zero */
            if (sweep_y0 < BO_BRICKS_TOP) row0 = 0;
            if (col1 > BO_COLS - 1) col1 = BO_COLS - 1;
            if (row1 > BO_ROWS - 1) row1 = BO_ROWS - 1;
            for (int row = row0; row <= row1; row++) {
                unsigned int mask = s->destroyed[row];
                float by = BO_BRICKS_TOP + row * BO_BRICK_H;
                for (int col = col0; col <= col1; col++) {
                    if ((mask >> col) & 1u) continue;
                    float bx = col * BO_BRICK_W;
                    /* The ball's corner against the brick grown by the ball's size. */
                    float tx_in, tx_out, ty_in, ty_out;
                    if (!breakout_slab(x, vx, bx - BO_BALL, bx + BO_BRICK_W, &tx_in, &tx_out)) continue;
                    if (!breakout_slab(y, vy, by - BO_BALL, by + BO_BRICK_H, &ty_in, &ty_out)) continue;
                    float t_in = tx_in > ty_in ? tx_in : ty_in;
                    float t_out = tx_out < ty_out ? tx_out : ty_out;
                    if (!(t_in < t_out && t_in >= -BO_EPS && t_in <= best_t)) continue;
                    /* Of bricks hit at the same time (a seam), take the one the ball covers most. */
                    int face_x = tx_in > ty_in;
                    float overlap;
                    if (face_x) {
                        float yt = y + vy * t_in;
                        overlap = fminf(yt + BO_BALL, by + BO_BRICK_H) - fmaxf(yt, by);
                    } else {
                        float xt = x + vx * t_in;
                        overlap = fminf(xt + BO_BALL, bx + BO_BRICK_W) - fmaxf(xt, bx);
                    }
                    if (t_in == best_t && hit >= BO_HIT_BRICK_X && overlap <= best_overlap) continue;
                    best_t = t_in;
                    best_overlap = overlap;
                    hit = face_x ? BO_HIT_BRICK_X : BO_HIT_BRICK_Y;
                    hit_row = row;
                    hit_col = col;
                }
            }
        }

        if (hit == BO_HIT_NONE) {
            s->ball_x = x + vx * remaining;
            s->ball_y = y + vy * remaining;
            break;
        }
        if (best_t < 0.0f) best_t = 0.0f;
        s->ball_x = x + vx * best_t;
        s->ball_y = y + vy * best_t;
        remaining -= best_t;

        if (hit == BO_HIT_SIDE) {
            s->ball_x = vx < 0.0f ? 0.0f : BO_WIDTH - BO_BALL;
            s->ball_vx = -vx;
        } else if (hit == BO_HIT_TOP) {
            s->ball_y = 0.0f;
            s->ball_vy = -vy;
            s->paddle_w = BO_PADDLE_W / 2.0f;
        } else if (hit == BO_HIT_PADDLE) {
            s->ball_y = BO_PADDLE_Y - BO_BALL;
            float where = (s->ball_x + BO_BALL / 2.0f - s->paddle_x) / s->paddle_w; /* 0 left .. 1 right */
            where = fminf(fmaxf(where, 0.0f), 1.0f);
            float sn, cs;
            breakout_sincos((2.0f * where - 1.0f) * BO_MAX_BOUNCE, &sn, &cs);
            s->ball_vx = sn * s->ball_speed * BO_TICK;
            s->ball_vy = -cs * s->ball_speed * BO_TICK;
            s->paddle_hits += 1;
            if (s->paddle_hits % 4 == 0 && s->ball_speed < BO_SPEED_MAX) {
                s->ball_speed = fminf(s->ball_speed + BO_SPEED_STEP, BO_SPEED_MAX);
            }
            /* Atari respawns a cleared wall when the ball comes back to the paddle. */
            if (s->bricks_left == 0 && !s->wall_respawned) {
                for (int row = 0; row < BO_ROWS; row++) s->destroyed[row] = 0u;
                s->bricks_left = BO_NUM_BRICKS;
                s->wall_respawned = 1;
            }
        } else {
            float bx = hit_col * BO_BRICK_W, by = BO_BRICKS_TOP + hit_row * BO_BRICK_H;
            if (hit == BO_HIT_BRICK_X) {
                s->ball_x = vx > 0.0f ? bx - BO_BALL : bx + BO_BRICK_W;
                s->ball_vx = -vx;
            } else {
                s->ball_y = vy > 0.0f ? by - BO_BALL : by + BO_BRICK_H;
                s->ball_vy = -vy;
            }
            s->destroyed[hit_row] |= 1u << hit_col;
            s->bricks_left -= 1;
            int value = breakout_brick_value(hit_row);
            s->score += value;
            reward += value;
            if (hit_row < 3) s->ball_speed = BO_SPEED_MAX;
            if (s->score >= BO_MAX_SCORE) return reward;
        }
        /* The tick is used up: another contact at this same instant is the next tick's first, at t = 0. */
        if (remaining <= 0.0f) break;
    }

    if (s->ball_y >= BO_PADDLE_Y + BO_PADDLE_H) {
        s->balls_left -= 1;
        if (s->balls_left > 0) breakout_new_ball(s, rng);
    }
    return reward;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    long long action = actions[0];
    int reward = 0, terminated = 0;
    for (int tick = 0; tick < FRAMESKIP; tick++) {
        reward += breakout_tick(s, rng, action);
        if (s->balls_left == 0 || s->score >= BO_MAX_SCORE) {
            terminated = 1;
            break;
        }
    }
    rewards[0] = (float)reward;
    stats[0] = (float)s->score;
    breakout_write_obs(s, obs);
    return terminated;
}

/* Dark background, bricks in Atari's row colours, cyan paddle, white ball. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 6, 24, 24);
    for (int row = 0; row < BO_ROWS; row++) {
        unsigned char r, g, b;
        switch (row) {
            case 0: r = 200; g = 72; b = 72; break;
            case 1: r = 198; g = 108; b = 58; break;
            case 2: r = 180; g = 122; b = 48; break;
            case 3: r = 162; g = 162; b = 42; break;
            case 4: r = 72; g = 160; b = 72; break;
            default: r = 66; g = 72; b = 200; break;
        }
        int y0 = (int)BO_BRICKS_TOP + row * (int)BO_BRICK_H;
        for (int col = 0; col < BO_COLS; col++) {
            if ((s->destroyed[row] >> col) & 1u) continue;
            int x0 = col * (int)BO_BRICK_W;
            /* A 1 px dark seam keeps neighbouring bricks apart. */
            fv_fill_rect(rgb, RENDER_W, RENDER_H, x0, y0, x0 + (int)BO_BRICK_W - 1, y0 + (int)BO_BRICK_H - 1, r, g, b);
        }
    }
    int px = (int)(s->paddle_x + 0.5f);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, px, (int)BO_PADDLE_Y, px + (int)(s->paddle_w + 0.5f),
                 (int)(BO_PADDLE_Y + BO_PADDLE_H), 0, 255, 255);
    int bx = (int)(s->ball_x + 0.5f), by = (int)(s->ball_y + 0.5f);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, bx, by, bx + (int)BO_BALL, by + (int)BO_BALL, 255, 255, 255);
}
