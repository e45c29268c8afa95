/* pong.h: two-paddle Pong for self-play. The rules are mirror-symmetric (x -> -x with the seats
 * swapped gives the same game, bit for bit), so one policy can play either seat from its
 * egocentric observation. With -DPONG_BOT=1 the right paddle is a scripted bot (-DBOT_LEVEL=0..4)
 * and the one agent plays the left paddle (the Gymnasium face). With -DBOT_LEVEL=-1 (two agents; self-play's
 * evaluations) the level is each game's own, State.bot_level, which resets keep: 0..4 puts the bot on the
 * right paddle of that game exactly as the one-agent build at that level plays it (agent 1's actions are
 * ignored), -1 leaves both paddles to the agents; env_set_bot_level writes it before the game's first reset.
 *
 * Units: field x in [-1, 1] (left goal line at -1), y in [-0.75, 0.75] growing upward; speeds per
 * agent step. Agents: 0 = left, 1 = right. Actions Discrete(3): 0 stay, 1 up, 2 down.
 * Observation (8 float32, egocentric: x is negated for the right seat, so "my goal" is always
 * at x = -1 and the ball approaches me when [4] < 0; every entry lies in [-1, 1]):
 *   [0] my paddle y / 0.75        [1] opponent paddle y / 0.75
 *   [2] ball x / 1 (egocentric)   [3] ball y / 0.75
 *   [4] ball vx / 0.07 (egocentric)   [5] ball vy / 0.07
 *   [6] my score / POINTS         [7] opponent score / POINTS
 * Rules: the ball bounces off the top and bottom walls; a paddle returns it when its leading edge
 * crosses the paddle's face within reach (swept test), its slope set by where it hit (|vy| up to
 * 0.8 of the speed off the paddle's end) and 0.002 faster (0.03 at serve, 0.07 at most). A ball
 * whose centre passes a goal line scores a point: +1 to the scorer, -1 to the other (plus
 * RETURN_BONUS_MILLI / 1000 to a player for each return). After every point the ball is served
 * from x = 0 at a random height and slope toward the player who conceded. The game terminates
 * when a player reaches POINTS (default 21); step limits are the backend's truncation.
 * stats (written every step): left and right score (bot mode: score, opponent_score), paddle hits.
 * Only basic float ops and sqrtf, so CPU and GPU (--fmad=false) runs match bit for bit.
 */
#include "fastvec.h"

#ifndef POINTS
#define POINTS 21
#endif
#ifndef PONG_BOT
#define PONG_BOT 0
#endif
#ifndef BOT_LEVEL
#define BOT_LEVEL 2
#endif
#ifndef RETURN_BONUS_MILLI
#define RETURN_BONUS_MILLI 0
#endif

#define OBS_SIZE 8
#define OBS_LOW -1 /* every entry is normalised into [-1, 1] */
#define OBS_HIGH 1
#define NUM_ACTIONS 3
#if PONG_BOT
#define NUM_AGENTS 1
#define STAT_NAMES "score,opponent_score,paddle_hits"
#else
#define NUM_AGENTS 2
#define STAT_NAMES "left_score,right_score,paddle_hits"
#endif
#define NUM_STATS 3
#define RENDER_W 320
#define RENDER_H 240

#define PG_HALF_W 1.0f
#define PG_HALF_H 0.75f
#define PG_PADDLE_X 0.9f       /* |x| of the paddles' centres */
#define PG_PADDLE_HALF_W 0.02f
#define PG_PADDLE_HALF_H 0.12f
#define PG_PADDLE_SPEED 0.035f
#define PG_BALL_R 0.02f
#define PG_SPEED0 0.03f
#define PG_SPEED_STEP 0.002f
#define PG_SPEED_MAX 0.07f
#define PG_MAX_SLOPE 0.8f      /* |vy| / speed after a return off the paddle's very end */
#define PG_SERVE_SLOPE 0.5f    /* |vy| / speed at most, at a serve */
#define PG_SERVE_HEIGHT 0.4f   /* serves start at |y| < this */

typedef struct {
    float ball_x, ball_y;   /* centre */
    float ball_vx, ball_vy; /* per step */
    float ball_speed;       /* |(vx, vy)|, kept so that it never drifts by rounding */
    float paddle_y[2];      /* centres of the left [0] and right [1] paddles */
    float bot_aim;          /* bot mode: offset from the ball at which the bot means to meet it */
    int score[2];
    int paddle_hits;        /* returns in this game, both players */
    int bot_level;          /* BOT_LEVEL, or with BOT_LEVEL = -1 the game's own (-1: no bot), kept by resets */
} State;

/* The game's bot level; -1: no bot (both paddles are agents). Constant unless BOT_LEVEL = -1. */
FV_FN int pong_bot_level(const State* s) {
    return BOT_LEVEL >= 0 ? (PONG_BOT ? BOT_LEVEL : -1) : s->bot_level;
}
#if BOT_LEVEL < 0
#define FV_BOT_LEVELS 1 /* self-play's evaluation kernels (selfplay.cu) set each game's level */
FV_FN void env_set_bot_level(State* s, int level) { s->bot_level = level; }
#endif

/* The bot, by level 0..4: top speed as a fraction of the agent's, and how far (in paddle reaches)
 * its aim may be off; an aim beyond 1 reach misses if the bot gets there in time. */
FV_FN float pong_bot_speed(int level) {
    return PG_PADDLE_SPEED * (level <= 0 ? 0.4f : level == 1 ? 0.55f : level == 2 ? 0.7f
                              : level == 3 ? 0.85f : 1.0f);
}
FV_FN float pong_bot_noise(int level) {
    return level <= 0 ? 1.8f : level == 1 ? 1.5f : level == 2 ? 1.3f : level == 3 ? 1.15f : 1.05f;
}
/* Drawn whenever the ball turns toward the bot. */
FV_FN void pong_bot_new_aim(State* s, fv_rng* rng) {
    float reach = PG_PADDLE_HALF_H + PG_BALL_R;
    s->bot_aim = fv_rand_uniform(rng, -1.0f, 1.0f) * pong_bot_noise(pong_bot_level(s)) * reach;
}
/* Follow the ball's height (plus aim) while it comes, drift back to the centre while it goes. */
FV_FN void pong_bot_move(State* s) {
    float target = s->ball_vx > 0.0f ? s->ball_y + s->bot_aim : 0.0f;
    float d = target - s->paddle_y[1], v = pong_bot_speed(pong_bot_level(s));
    d = d > v ? v : (d < -v ? -v : d);
    float lim = PG_HALF_H - PG_PADDLE_HALF_H, y = s->paddle_y[1] + d;
    s->paddle_y[1] = y > lim ? lim : (y < -lim ? -lim : y);
}

/* On the CPU, a step from a table and a clamp by min and max, with no branch: the actions differ from env to
 * env, and random ones keep a paddle at a wall, so branches mispredict (they were 40% of a step). A paddle's
 * height is never -0 (it starts at +0, and a sum that comes out zero is +0), so adding the no-op's +0 leaves
 * it as it is; min and max give what y > lim ? lim : (y < -lim ? -lim : y) gives for every y but NaN. */
FV_FN float pong_move_paddle(float y, long long action) {
#ifdef __CUDACC__
    if (action == 1) y += PG_PADDLE_SPEED;
    else if (action == 2) y -= PG_PADDLE_SPEED;
#else
    static const float step[NUM_ACTIONS] = {0.0f, PG_PADDLE_SPEED, -PG_PADDLE_SPEED};
    y += step[action];
#endif
    float lim = PG_HALF_H - PG_PADDLE_HALF_H;
    return fv_maxf(fv_minf(y, lim), -lim);
}

/* Reflect a ball height that went past the top or bottom wall back into the field. */
FV_FN int pong_fold(float* y) {
    float top = PG_HALF_H - PG_BALL_R;
    if (*y > top) { *y = 2.0f * top - *y; return 1; }
    if (*y < -top) { *y = -2.0f * top - *y; return 1; }
    return 0;
}

/* Serve from x = 0 toward side `toward` (-1: the left goal, +1: the right goal). */
FV_FN void pong_serve(State* s, fv_rng* rng, float toward) {
    s->ball_x = 0.0f;
    s->ball_y = fv_rand_uniform(rng, -PG_SERVE_HEIGHT, PG_SERVE_HEIGHT);
    s->ball_speed = PG_SPEED0;
    s->ball_vy = PG_SPEED0 * fv_rand_uniform(rng, -PG_SERVE_SLOPE, PG_SERVE_SLOPE);
    s->ball_vx = toward * sqrtf(PG_SPEED0 * PG_SPEED0 - s->ball_vy * s->ball_vy);
    if (pong_bot_level(s) >= 0 && toward > 0.0f) pong_bot_new_aim(s, rng);
}

/* An agent's eight entries divided as one vector on the CPU (GCC's vector extension; each lane rounds as the
 * scalar division does). */
#if defined(__GNUC__) && !defined(__CUDACC__)
typedef float pong_entries __attribute__((vector_size(OBS_SIZE * sizeof(float))));
#endif

FV_FN void pong_write_obs(const State* s, float* obs) {
    for (int a = 0; a < NUM_AGENTS; a++) {
        float side = a == 0 ? 1.0f : -1.0f; /* negation is exact, so the mirror is too */
        float* o = obs + a * OBS_SIZE;
#if defined(__GNUC__) && !defined(__CUDACC__)
        pong_entries value = {s->paddle_y[a], s->paddle_y[1 - a], side * s->ball_x, s->ball_y,
                              side * s->ball_vx, s->ball_vy, (float)s->score[a], (float)s->score[1 - a]};
        const pong_entries scale = {PG_HALF_H, PG_HALF_H, PG_HALF_W, PG_HALF_H,
                                    PG_SPEED_MAX, PG_SPEED_MAX, (float)POINTS, (float)POINTS};
        value /= scale;
        memcpy(o, &value, sizeof value);
#else
        o[0] = s->paddle_y[a] / PG_HALF_H;
        o[1] = s->paddle_y[1 - a] / PG_HALF_H;
        o[2] = side * s->ball_x / PG_HALF_W;
        o[3] = s->ball_y / PG_HALF_H;
        o[4] = side * s->ball_vx / PG_SPEED_MAX;
        o[5] = s->ball_vy / PG_SPEED_MAX;
        o[6] = (float)s->score[a] / (float)POINTS;
        o[7] = (float)s->score[1 - a] / (float)POINTS;
#endif
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->paddle_y[0] = s->paddle_y[1] = 0.0f;
    s->score[0] = s->score[1] = 0;
    s->paddle_hits = 0;
    s->bot_aim = 0.0f;
    if (BOT_LEVEL >= 0) s->bot_level = pong_bot_level(s);
    pong_serve(s, rng, fv_rand_float(rng) < 0.5f ? -1.0f : 1.0f);
    pong_write_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    int bot = pong_bot_level(s) >= 0;
    for (int a = 0; a < NUM_AGENTS; a++) {
        if (!(bot && a == 1)) s->paddle_y[a] = pong_move_paddle(s->paddle_y[a], actions[a]);
        rewards[a] = 0.0f;
    }
    if (bot) pong_bot_move(s);
    float x0 = s->ball_x, y0 = s->ball_y, vy0 = s->ball_vy;
    float x1 = x0 + s->ball_vx, y1 = y0 + vy0;
    if (pong_fold(&y1)) s->ball_vy = -vy0;

    /* The paddle the ball moves toward, in that player's egocentric x (its goal at -1). */
    int p = s->ball_vx < 0.0f ? 0 : 1;
    float side = p == 0 ? 1.0f : -1.0f;
    float e0 = side * x0, e1 = side * x1;
    float contact = -(PG_PADDLE_X - PG_PADDLE_HALF_W) + PG_BALL_R; /* ball centre on the face */
    if (e0 >= contact && e1 < contact) {
        float t = (e0 - contact) / (e0 - e1); /* fraction of the step at contact */
        float yc = y0 + t * vy0;
        pong_fold(&yc);
        float offset = (yc - s->paddle_y[p]) / (PG_PADDLE_HALF_H + PG_BALL_R);
        if (offset >= -1.0f && offset <= 1.0f) {
            float speed = s->ball_speed + PG_SPEED_STEP;
            speed = speed > PG_SPEED_MAX ? PG_SPEED_MAX : speed;
            float vy = offset * PG_MAX_SLOPE * speed;
            float evx = sqrtf(speed * speed - vy * vy);
            float rest = 1.0f - t;
            e1 = contact + rest * evx;
            y1 = yc + rest * vy;
            if (pong_fold(&y1)) vy = -vy;
            s->ball_speed = speed;
            s->ball_vx = side * evx;
            s->ball_vy = vy;
            x1 = side * e1;
            s->paddle_hits += 1;
            if (p < NUM_AGENTS) rewards[p] += RETURN_BONUS_MILLI / 1000.0f;
            if (bot && p == 0) pong_bot_new_aim(s, rng);
        }
    }
    s->ball_x = x1;
    s->ball_y = y1;

    int terminated = 0;
    int scorer = x1 < -PG_HALF_W ? 1 : (x1 > PG_HALF_W ? 0 : -1);
    if (scorer >= 0) {
        s->score[scorer] += 1;
        for (int a = 0; a < NUM_AGENTS; a++) rewards[a] += a == scorer ? 1.0f : -1.0f;
        terminated = s->score[scorer] >= POINTS;
        /* Served even after the last point, so every observation stays inside the field. */
        pong_serve(s, rng, scorer == 0 ? 1.0f : -1.0f);
    }
    stats[0] = (float)s->score[0];
    stats[1] = (float)s->score[1];
    stats[2] = (float)s->paddle_hits;
    pong_write_obs(s, obs);
    return terminated;
}

/* 3 x 5 pixel digits, row-major from the top, most significant bit first. */
FV_FN int pong_digit_bits(int d) {
    switch (d) {
        case 0: return 0x7B6F; case 1: return 0x2C97; case 2: return 0x73E7; case 3: return 0x73CF;
        case 4: return 0x5BC9; case 5: return 0x79CF; case 6: return 0x79EF; case 7: return 0x7249;
        case 8: return 0x7BEF; default: return 0x7BCF;
    }
}

FV_FN void pong_draw_number(unsigned char* rgb, int value, int x_right, int y, int px,
                            unsigned char r, unsigned char g, unsigned char b) {
    int x = x_right;
    do {
        int bits = pong_digit_bits(value % 10);
        x -= 4 * px;
        for (int k = 0; k < 15; k++)
            if ((bits >> (14 - k)) & 1)
                fv_fill_rect(rgb, RENDER_W, RENDER_H, x + (k % 3) * px, y + (k / 3) * px,
                             x + (k % 3 + 1) * px, y + (k / 3 + 1) * px, r, g, b);
        value /= 10;
    } while (value > 0);
}

/* Dark field, dashed centre line, left paddle orange, right paddle blue, scores in their colours. */
FV_FN void env_render(const State* s, unsigned char* rgb) {
    const float scale = RENDER_W / (2.0f * PG_HALF_W); /* px per unit; y rows grow downward */
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 14, 16, 24);
    for (int y = 0; y < RENDER_H; y += 16)
        fv_fill_rect(rgb, RENDER_W, RENDER_H, RENDER_W / 2 - 1, y, RENDER_W / 2 + 1, y + 8, 70, 70, 80);
    pong_draw_number(rgb, s->score[0], RENDER_W / 2 - 20, 10, 4, 235, 120, 60);
    pong_draw_number(rgb, s->score[1], RENDER_W / 2 + 20 + 16 * (s->score[1] >= 10 ? 2 : 1), 10, 4,
                     80, 160, 240); /* a digit is 16 px wide at 4 px per font pixel */
    for (int a = 0; a < 2; a++) {
        float cx = (a == 0 ? -PG_PADDLE_X : PG_PADDLE_X) + PG_HALF_W;
        float cy = PG_HALF_H - s->paddle_y[a];
        int x0 = (int)((cx - PG_PADDLE_HALF_W) * scale + 0.5f), x1 = (int)((cx + PG_PADDLE_HALF_W) * scale + 0.5f);
        int y0 = (int)((cy - PG_PADDLE_HALF_H) * scale + 0.5f), y1 = (int)((cy + PG_PADDLE_HALF_H) * scale + 0.5f);
        if (a == 0) fv_fill_rect(rgb, RENDER_W, RENDER_H, x0, y0, x1, y1, 235, 120, 60);
        else fv_fill_rect(rgb, RENDER_W, RENDER_H, x0, y0, x1, y1, 80, 160, 240);
    }
    float bx = (s->ball_x + PG_HALF_W) * scale, by = (PG_HALF_H - s->ball_y) * scale;
    int r = (int)(PG_BALL_R * scale + 0.5f);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, (int)(bx + 0.5f) - r, (int)(by + 0.5f) - r,
                 (int)(bx + 0.5f) + r, (int)(by + 0.5f) + r, 245, 245, 245);
}
