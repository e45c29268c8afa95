/* minatar_space_invaders.h: MinAtar Space Invaders, the rules of minatar 1.0.15's space_invaders.py
 * exactly. A cannon on the bottom row shoots upward (one shot per 5 steps) at a 4 x 6 block of aliens
 * that marches sideways, steps down at an edge, speeds up as it thins (it moves every
 * min(aliens left, interval) steps) and fires from the alien nearest the cannon every 10 steps.
 * +1 per alien shot; a cleared wave respawns, and with ramping each new wave moves one step faster
 * (interval 12 down to 6). Terminated when an alien or an alien bullet reaches the cannon, or the
 * aliens must step down from the bottom row. Channels: 0 cannon, 1 alien, 2 alien moving left,
 * 3 alien moving right, 4 cannon bullet, 5 alien bullet. Minimal actions: no-op, left, right, fire.
 * Shared parts: minatar_common.h. Maps are 10 rows of 10-bit masks (bit x = column x).
 */
#define MA_CHANNELS 6
#define OBS_SIZE 600 /* (10, 10, MA_CHANNELS) */
#define NUM_AGENTS 1
#define MA_MINIMAL_SET {MA_NOOP, MA_LEFT, MA_RIGHT, MA_FIRE}
#define MA_PALETTE {{26, 36, 65}, {27, 97, 69}, {105, 123, 48}, {200, 123, 124}, {205, 162, 224}, {198, 225, 241}}
#include "minatar_common.h"

#if MINIMAL_ACTION_SET
#define NUM_ACTIONS 4
#else
#define NUM_ACTIONS 6
#endif
#define MAS_SHOT_COOL_DOWN 5
#define MAS_MOVE_INTERVAL 12
#define MAS_SHOT_INTERVAL 10
#define MAS_ROW 0x3FFu
#define MAS_WAVE_ROW 0xFCu /* columns 2..7 */

typedef struct {
    int score, ramp_index;
    unsigned short alien[10], f_bullet[10], e_bullet[10];
    signed char pos, alien_dir, move_interval, alien_move_timer, alien_shot_timer, shot_timer, last_action, terminal;
} State;

FV_FN int mas_popcount(unsigned int v) {
#ifdef __CUDA_ARCH__
    return __popc(v);
#else
    return __builtin_popcount(v);
#endif
}

FV_FN void mas_new_wave(State* s) {
    for (int y = 0; y < 10; y++) s->alien[y] = y < 4 ? MAS_WAVE_ROW : 0;
}

FV_FN void mas_write_obs(const State* s, unsigned char* obs) {
    int dir_channel = s->alien_dir < 0 ? 2 : 3;
#if MA_ROW_STORES
    for (int y = 0; y < 10; y++) {
        fv_u64 alien = s->alien[y];
        ma_write_row(obs, y, (y == 9 ? 1u << s->pos : 0u) | alien << 10 | alien << (10 * dir_channel) |
                                 (fv_u64)s->f_bullet[y] << 40 | (fv_u64)s->e_bullet[y] << 50);
    }
#else
    ma_clear(obs);
    MA_SET(obs, 9, s->pos, 0);
    for (int y = 0; y < 10; y++) {
        ma_set_row(obs, y, s->alien[y], 1);
        ma_set_row(obs, y, s->alien[y], dir_channel);
        ma_set_row(obs, y, s->f_bullet[y], 4);
        ma_set_row(obs, y, s->e_bullet[y], 5);
    }
#endif
}

/* The game's own start (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN void mas_reset(State* s, fv_rng* rng) {
    (void)rng;
    s->pos = 5;
    for (int y = 0; y < 10; y++) s->f_bullet[y] = s->e_bullet[y] = 0;
    mas_new_wave(s);
    s->alien_dir = -1;
    s->move_interval = MAS_MOVE_INTERVAL;
    s->alien_move_timer = MAS_MOVE_INTERVAL;
    s->alien_shot_timer = MAS_SHOT_INTERVAL;
    s->ramp_index = 0;
    s->shot_timer = 0;
}

/* One step of the game for full-set action a (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN int mas_rules(State* s, fv_rng* rng, int a, int* reward) {
    int r = 0, terminal = 0;
    unsigned int cannon = 1u << s->pos;
    if (a == MA_FIRE && s->shot_timer == 0) {
        s->f_bullet[9] |= (unsigned short)cannon;
        s->shot_timer = MAS_SHOT_COOL_DOWN;
    } else if (a == MA_LEFT) {
        s->pos = s->pos > 0 ? s->pos - 1 : 0;
    } else if (a == MA_RIGHT) {
        s->pos = s->pos < 9 ? s->pos + 1 : 9;
    }
    cannon = 1u << s->pos;

    for (int y = 0; y < 9; y++) s->f_bullet[y] = s->f_bullet[y + 1]; /* up one row; the top row leaves */
    s->f_bullet[9] = 0;
    for (int y = 9; y > 0; y--) s->e_bullet[y] = s->e_bullet[y - 1]; /* down one row; the bottom row leaves */
    s->e_bullet[0] = 0;
    if (s->e_bullet[9] & cannon) terminal = 1;

    if (s->alien[9] & cannon) terminal = 1;
    if (s->alien_move_timer == 0) {
        int count = 0;
        unsigned int cols = 0;
        for (int y = 0; y < 10; y++) {
            count += mas_popcount(s->alien[y]);
            cols |= s->alien[y];
        }
        s->alien_move_timer = (signed char)(count < s->move_interval ? count : s->move_interval);
        if (((cols & 1u) && s->alien_dir < 0) || ((cols & 0x200u) && s->alien_dir > 0)) {
            s->alien_dir = (signed char)-s->alien_dir;
            if (s->alien[9]) terminal = 1;
            unsigned short bottom = s->alien[9]; /* np.roll: the bottom row wraps to the top */
            for (int y = 9; y > 0; y--) s->alien[y] = s->alien[y - 1];
            s->alien[0] = bottom;
        } else {
            for (int y = 0; y < 10; y++) {
                unsigned int v = s->alien[y];
                v = s->alien_dir > 0 ? (v << 1) | (v >> 9) : (v >> 1) | (v << 9); /* np.roll along x */
                s->alien[y] = (unsigned short)(v & MAS_ROW);
            }
        }
        if (s->alien[9] & cannon) terminal = 1;
    }
    if (s->alien_shot_timer == 0) {
        s->alien_shot_timer = MAS_SHOT_INTERVAL;
        /* The column nearest the cannon that holds an alien (the left one of a tie), its lowest alien. */
        for (int d = 0; d < 10; d++) {
            int col = -1;
            for (int side = -1; side <= 1 && col < 0; side += 2) {
                int x = s->pos + side * d;
                if (x < 0 || x > 9 || (d == 0 && side > 0)) continue;
                for (int y = 0; y < 10; y++)
                    if ((s->alien[y] >> x) & 1) col = x;
            }
            if (col >= 0) {
                int row = 0;
                for (int y = 0; y < 10; y++)
                    if ((s->alien[y] >> col) & 1) row = y;
                s->e_bullet[row] |= (unsigned short)(1u << col);
                break;
            }
        }
    }
    int left = 0;
    for (int y = 0; y < 10; y++) {
        unsigned int kill = s->alien[y] & s->f_bullet[y];
        r += mas_popcount(kill);
        s->alien[y] &= (unsigned short)~kill;
        s->f_bullet[y] &= (unsigned short)~kill;
        left += s->alien[y] != 0;
    }

    if (s->shot_timer > 0) s->shot_timer -= 1;
    s->alien_move_timer -= 1;
    s->alien_shot_timer -= 1;
    if (!left) {
        if (s->move_interval > 6 && DIFFICULTY_RAMPING) {
            s->move_interval -= 1;
            s->ramp_index += 1;
        }
        mas_new_wave(s);
    }

    *reward = r;
    return terminal;
}

MA_DEFINE_ENV(mas_reset, mas_rules, mas_write_obs)
