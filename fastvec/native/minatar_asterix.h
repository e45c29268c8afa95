/* minatar_asterix.h: MinAtar Asterix, the rules of minatar 1.0.15's asterix.py exactly.
 * The player moves in four directions (rows 1..8); enemies and gold spawn at either side of a free
 * row (slot i is row i + 1) and cross it; +1 per gold picked up, terminated on touching an enemy.
 * Difficulty ramp: every 101 steps the spawn interval (from 10) and every other time the move
 * interval (from 5) shrink by one, down to 1. Channels: 0 player, 1 enemy, 2 trail (the previous
 * cell of an enemy or gold), 3 gold. Minimal actions: no-op, left, up, right, down.
 * Shared parts: minatar_common.h.
 */
#define MA_CHANNELS 4
#define OBS_SIZE 400 /* (10, 10, MA_CHANNELS) */
#define NUM_AGENTS 1
#define MA_MINIMAL_SET {MA_NOOP, MA_LEFT, MA_UP, MA_RIGHT, MA_DOWN}
#define MA_PALETTE {{22, 61, 78}, {84, 121, 47}, {208, 126, 147}, {193, 202, 243}}
#include "minatar_common.h"

#if MINIMAL_ACTION_SET
#define NUM_ACTIONS 5
#else
#define NUM_ACTIONS 6
#endif
#define MAA_RAMP_INTERVAL 100
#define MAA_SPAWN_SPEED 10
#define MAA_MOVE_INTERVAL 5

typedef struct {
    int score, ramp_index;
    short ramp_timer;
    /* entity i lives in row i + 1 while on */
    signed char ent_on[8], ent_x[8], ent_right[8], ent_gold[8];
    signed char player_x, player_y, spawn_speed, spawn_timer, move_speed, move_timer, last_action, terminal;
} State;

FV_FN void maa_write_obs(const State* s, unsigned char* obs) {
    ma_clear(obs);
    MA_SET(obs, s->player_y, s->player_x, 0);
    /* Without a branch per entity: an entity that is off, or a trail off the board, ORs 0 into a cell (an off
     * entity's x is -1..10, so every index stays inside rows 0..9). */
    for (int i = 0; i < 8; i++) {
        int on = s->ent_on[i] != 0, x = s->ent_x[i];
        obs[((i + 1) * 10 + x) * MA_CHANNELS + (s->ent_gold[i] ? 3 : 1)] |= (unsigned char)on;
        int back = s->ent_right[i] ? x - 1 : x + 1;
        obs[((i + 1) * 10 + back) * MA_CHANNELS + 2] |= (unsigned char)(on & (back >= 0) & (back <= 9));
    }
}

/* minatar's _spawn_entity: side and kind are drawn even when every row is taken. */
FV_FN void maa_spawn(State* s, fv_rng* rng) {
    int right = MA_UNIFORM(rng) < 0.5;
    int gold = MA_UNIFORM(rng) < 1.0 / 3.0;
    int free_slots = 0;
    for (int i = 0; i < 8; i++) free_slots += !s->ent_on[i];
    if (free_slots == 0) return;
    int k = MA_RANDINT(rng, free_slots);
    for (int i = 0; i < 8; i++) {
        if (s->ent_on[i]) continue;
        if (k-- == 0) {
            s->ent_on[i] = 1;
            s->ent_x[i] = right ? 0 : 9;
            s->ent_right[i] = (signed char)right;
            s->ent_gold[i] = (signed char)gold;
            return;
        }
    }
}

/* The game's own start (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN void maa_reset(State* s, fv_rng* rng) {
    (void)rng;
    s->player_x = 5;
    s->player_y = 5;
    for (int i = 0; i < 8; i++) s->ent_on[i] = s->ent_x[i] = s->ent_right[i] = s->ent_gold[i] = 0;
    s->spawn_speed = MAA_SPAWN_SPEED;
    s->spawn_timer = MAA_SPAWN_SPEED;
    s->move_speed = MAA_MOVE_INTERVAL;
    s->move_timer = MAA_MOVE_INTERVAL;
    s->ramp_timer = MAA_RAMP_INTERVAL;
    s->ramp_index = 0;
}

/* Entity i on the player's cell: gold is picked up (+1), an enemy ends the game. */
FV_FN void maa_touch(State* s, int i, int* r, int* terminal) {
    if (s->ent_x[i] != s->player_x || i + 1 != s->player_y) return;
    if (s->ent_gold[i]) {
        s->ent_on[i] = 0;
        *r += 1;
    } else {
        *terminal = 1;
    }
}

/* One step of the game for full-set action a (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN int maa_rules(State* s, fv_rng* rng, int a, int* reward) {
    int r = 0, terminal = 0;
    if (s->spawn_timer == 0) {
        maa_spawn(s, rng);
        s->spawn_timer = s->spawn_speed;
    }
    if (a == MA_LEFT) s->player_x = s->player_x > 0 ? s->player_x - 1 : 0;
    else if (a == MA_RIGHT) s->player_x = s->player_x < 9 ? s->player_x + 1 : 9;
    else if (a == MA_UP) s->player_y = s->player_y > 1 ? s->player_y - 1 : 1;
    else if (a == MA_DOWN) s->player_y = s->player_y < 8 ? s->player_y + 1 : 8;

    /* Only the entity of the player's row can touch it (maa_touch), so each check below is of that one; the
     * moves are selects rather than branches on each entity. */
    int row = s->player_y - 1; /* the player's y is in 1..8 */
    if (s->ent_on[row]) maa_touch(s, row, &r, &terminal);
    if (s->move_timer == 0) {
        s->move_timer = s->move_speed;
        for (int i = 0; i < 8; i++) {
            int on = s->ent_on[i] != 0, x = s->ent_x[i] + (on ? (s->ent_right[i] ? 1 : -1) : 0);
            s->ent_x[i] = (signed char)x;
            s->ent_on[i] = (signed char)(on & (x >= 0) & (x <= 9));
        }
        if (s->ent_on[row]) maa_touch(s, row, &r, &terminal);
    }
    s->spawn_timer -= 1;
    s->move_timer -= 1;

    if (DIFFICULTY_RAMPING && (s->spawn_speed > 1 || s->move_speed > 1)) {
        if (s->ramp_timer >= 0) {
            s->ramp_timer -= 1;
        } else {
            if (s->move_speed > 1 && s->ramp_index % 2) s->move_speed -= 1;
            if (s->spawn_speed > 1) s->spawn_speed -= 1;
            s->ramp_index += 1;
            s->ramp_timer = MAA_RAMP_INTERVAL;
        }
    }

    *reward = r;
    return terminal;
}

MA_DEFINE_ENV(maa_reset, maa_rules, maa_write_obs)
