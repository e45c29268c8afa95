/* minatar_freeway.h: MinAtar Freeway, the rules of minatar 1.0.15's freeway.py exactly.
 * A chicken in column 4 crosses eight lanes of cars (one per row 1..8); it moves at most every 3rd
 * step, +1 for reaching the top row (back to the bottom, and every car's speed and direction is
 * drawn anew), back to the bottom when a car hits it. A car with speed k moves one cell every k
 * steps and wraps around. Terminated after 2,500 steps (the 2,501st). Channels: 0 chicken, 1 car,
 * 2..6 the car's trail (its previous cell) on the channel of its speed 1..5. No difficulty ramp.
 * Minimal actions: no-op, up, down. Shared parts: minatar_common.h.
 */
#define MA_CHANNELS 7
#define OBS_SIZE 700 /* (10, 10, MA_CHANNELS) */
#define NUM_AGENTS 1
#define MA_MINIMAL_SET {MA_NOOP, MA_UP, MA_DOWN}
#define MA_PALETTE {{27, 30, 59}, {22, 83, 76}, {68, 119, 49}, {161, 121, 74}, {212, 132, 169}, \
                   {198, 180, 238}, {203, 232, 240}}
#include "minatar_common.h"

#if MINIMAL_ACTION_SET
#define NUM_ACTIONS 3
#else
#define NUM_ACTIONS 6
#endif
#define MAF_PLAYER_SPEED 3
#define MAF_TIME_LIMIT 2500

typedef struct {
    int score;
    short terminate_timer;
    signed char car_x[8], car_timer[8], car_speed[8]; /* car i drives in row i + 1; speed -5..5, sign = direction */
    signed char pos, move_timer, last_action, terminal;
} State;

/* minatar's _randomize_cars (speeds and timers; positions are left alone): eight speeds randint(1, 6),
 * then eight directions sign(rand() - 0.5). */
FV_FN void maf_randomize_cars(State* s, fv_rng* rng) {
    int speed[8];
    for (int i = 0; i < 8; i++) speed[i] = 1 + MA_RANDINT(rng, 5);
    for (int i = 0; i < 8; i++) {
        double u = MA_UNIFORM(rng);
        int sign = u > 0.5 ? 1 : (u < 0.5 ? -1 : 0);
        s->car_speed[i] = (signed char)(sign * speed[i]);
        s->car_timer[i] = (signed char)speed[i] * (sign != 0);
    }
}

FV_FN void maf_write_obs(const State* s, unsigned char* obs) {
    ma_clear(obs);
    MA_SET(obs, s->pos, 4, 0);
    for (int i = 0; i < 8; i++) {
        int x = s->car_x[i], v = s->car_speed[i];
        MA_SET(obs, i + 1, x, 1);
        int back = v > 0 ? (x == 0 ? 9 : x - 1) : (x == 9 ? 0 : x + 1); /* a select: v's sign is random */
        int k = v < 0 ? -v : v;
        if (k >= 1) MA_SET(obs, i + 1, back, 1 + k);
    }
}

/* The game's own start (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN void maf_reset(State* s, fv_rng* rng) {
    maf_randomize_cars(s, rng);
    for (int i = 0; i < 8; i++) s->car_x[i] = 0;
    s->pos = 9;
    s->move_timer = MAF_PLAYER_SPEED;
    s->terminate_timer = MAF_TIME_LIMIT;
}

/* One step of the game for full-set action a (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN int maf_rules(State* s, fv_rng* rng, int a, int* reward) {
    int r = 0, terminal = 0;
    /* Arithmetic rather than branches (the compiler turns selects here back into branches): the action is
     * the agent's, and no branch predicts it. A move needs the timer at 0, which it then sets. */
    int moves = s->move_timer == 0, pos = s->pos + moves * ((a == MA_DOWN) - (a == MA_UP));
    s->pos = (signed char)(pos < 0 ? 0 : (pos > 9 ? 9 : pos));
    s->move_timer = (signed char)(s->move_timer + moves * ((a == MA_UP) | (a == MA_DOWN)) * MAF_PLAYER_SPEED);
    if (s->pos == 0) { /* crossed: new speeds, positions kept */
        r += 1;
        maf_randomize_cars(s, rng);
        s->pos = 9;
    }
    /* The eight cars at once, with selects: which car moves and which way differs from env to env, so a
     * branch per car mispredicts. A car sends the chicken back where it stands on the chicken's cell before
     * or after its move; the chicken's row is then 9, which no car drives in, so the order of the cars does
     * not matter. */
    int hit = 0;
    for (int i = 0; i < 8; i++) {
        int v = s->car_speed[i], x = s->car_x[i], timer = s->car_timer[i];
        int moves = timer == 0, on_row = i + 1 == s->pos;
        int step = x + (v > 0 ? 1 : -1);
        int moved = step < 0 ? 9 : (step > 9 ? 0 : step);
        int new_x = moves ? moved : x;
        hit |= on_row & ((x == 4) | (new_x == 4));
        s->car_timer[i] = (signed char)(moves ? (v < 0 ? -v : v) : timer - 1);
        s->car_x[i] = (signed char)new_x;
    }
    if (hit) s->pos = 9;
    if (s->move_timer > 0) s->move_timer -= 1;
    s->terminate_timer -= 1;
    if (s->terminate_timer < 0) terminal = 1;

    *reward = r;
    return terminal;
}

MA_DEFINE_ENV(maf_reset, maf_rules, maf_write_obs)
