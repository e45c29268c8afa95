/* minatar_seaquest.h: MinAtar Seaquest, the rules of minatar 1.0.15's seaquest.py exactly.
 * A two-cell submarine (front and back give its heading) shoots fish and enemy subs (+1 each), picks
 * up divers (at most 6) and must surface before its oxygen (200 steps) runs out: surfacing with
 * divers refills oxygen and costs one diver, with 6 it pays oxygen * 10 // 200 and then (as the
 * reference does) leaves the diver count at -1; surfacing with none ends the game. Enemy subs fire
 * every 11 steps. Each surfacing ramps: the enemy spawn interval (from 20) shrinks to 1 and every
 * other time the move interval (from 5) to 2. Terminated by a fish, sub or bullet touching the sub,
 * by running out of oxygen, or by surfacing with no diver.
 * Channels: 0 sub front, 1 sub back, 2 sub bullet, 3 trail (the previous cell of a fish, enemy sub or
 * diver), 4 enemy bullet, 5 fish, 6 enemy sub, 7 oxygen gauge, 8 diver gauge, 9 diver. The
 * minimal action set is all six actions. Shared parts: minatar_common.h.
 *
 * The reference keeps its objects in Python lists, updates each list in reversed order while
 * removing from it, and removes by value (the first equal element): the arrays here keep the same
 * order and remove the same way, so even two objects with equal fields go as they go there. The
 * capacities hold every object the rules can create: a fish or sub crosses in at most 11 moves of at
 * least 3 steps and at most one spawns per step (36); a sub fires every 11 steps and its bullet
 * lives at most 11 steps (48); one shot per 5 steps lives at most 10 (4); one diver per 30 steps
 * lives at most 66 (4).
 */
#define MA_CHANNELS 10
#define OBS_SIZE 1000 /* (10, 10, MA_CHANNELS) */
#define NUM_AGENTS 1
#define MA_MINIMAL_SET {MA_NOOP, MA_LEFT, MA_UP, MA_RIGHT, MA_DOWN, MA_FIRE}
#define MA_PALETTE {{25, 18, 43}, {23, 52, 76}, {24, 91, 72}, {60, 118, 50}, {126, 122, 54}, {188, 121, 103}, \
                   {212, 134, 175}, {202, 169, 231}, {194, 210, 243}, {214, 240, 239}}
#include "minatar_common.h"

#define NUM_ACTIONS 6
#define MAQ_RAMP_INTERVAL 100
#define MAQ_MAX_OXYGEN 200
#define MAQ_SPAWN_SPEED 20
#define MAQ_DIVER_SPAWN_SPEED 30
#define MAQ_MOVE_INTERVAL 5
#define MAQ_SHOT_COOL_DOWN 5
#define MAQ_ENEMY_SHOT_INTERVAL 10
#define MAQ_DIVER_MOVE_INTERVAL 5
#define MAQ_MAX_ENEMIES 36
#define MAQ_MAX_EBULLETS 48
#define MAQ_MAX_FBULLETS 4
#define MAQ_MAX_DIVERS 4

/* Objects: x, row, heading (1 = right), and for movers a move timer, for subs a shot timer. */
typedef struct { signed char x, y, right; } maq_bullet;
typedef struct { signed char x, y, right, timer; } maq_mover; /* a fish or a diver */
typedef struct { signed char x, y, right, timer, shot; } maq_sub;

typedef struct {
    int score, ramp_index, oxygen, diver_count;
    maq_sub subs[MAQ_MAX_ENEMIES];
    maq_mover fish[MAQ_MAX_ENEMIES];
    maq_mover divers[MAQ_MAX_DIVERS];
    maq_bullet e_bullets[MAQ_MAX_EBULLETS];
    maq_bullet f_bullets[MAQ_MAX_FBULLETS];
    signed char n_subs, n_fish, n_divers, n_e_bullets, n_f_bullets;
    signed char sub_x, sub_y, sub_right, surface, shot_timer, last_action;
    signed char e_spawn_speed, e_spawn_timer, d_spawn_timer, move_speed, terminal;
} State;

FV_FN int maq_bullet_eq(maq_bullet a, maq_bullet b) { return a.x == b.x && a.y == b.y && a.right == b.right; }
FV_FN int maq_mover_eq(maq_mover a, maq_mover b) {
    return a.x == b.x && a.y == b.y && a.right == b.right && a.timer == b.timer;
}
FV_FN int maq_sub_eq(maq_sub a, maq_sub b) {
    return a.x == b.x && a.y == b.y && a.right == b.right && a.timer == b.timer && a.shot == b.shot;
}

/* list.remove(v): drop the first element equal to v, keeping the order; returns its index. */
#define MAQ_DEFINE_REMOVE(name, T, eq)                                        \
    FV_FN int name(T* list, signed char* n, T v) {                            \
        int j = 0;                                                            \
        while (j < *n && !eq(list[j], v)) j++;                                \
        if (j == *n) return -1;                                               \
        for (int k = j; k + 1 < *n; k++) list[k] = list[k + 1];               \
        *n -= 1;                                                              \
        return j;                                                             \
    }
MAQ_DEFINE_REMOVE(maq_remove_bullet, maq_bullet, maq_bullet_eq)
MAQ_DEFINE_REMOVE(maq_remove_mover, maq_mover, maq_mover_eq)
MAQ_DEFINE_REMOVE(maq_remove_sub, maq_sub, maq_sub_eq)

/* Where the object being updated (held in a local copy, at index *at of its list, -1 once it left
 * the list) is after list.remove(v) took index j out: the object itself, or one before it. */
FV_FN void maq_track(int* at, int j) {
    if (j == *at) *at = -1;
    else if (j >= 0 && j < *at) *at -= 1;
}

FV_FN void maq_write_obs(const State* s, unsigned char* obs) {
    ma_clear(obs);
    MA_SET(obs, s->sub_y, s->sub_x, 0);
    MA_SET(obs, s->sub_y, s->sub_right ? s->sub_x - 1 : s->sub_x + 1, 1);
    int oxygen_cells = (s->oxygen > 0 ? s->oxygen : 0) * 10 / MAQ_MAX_OXYGEN;
    for (int x = 0; x < oxygen_cells; x++) MA_SET(obs, 9, x, 7);
    for (int x = 9 - s->diver_count; x < 9; x++) MA_SET(obs, 9, x, 8);
    for (int k = 0; k < s->n_f_bullets; k++) MA_SET(obs, s->f_bullets[k].y, s->f_bullets[k].x, 2);
    for (int k = 0; k < s->n_e_bullets; k++) MA_SET(obs, s->e_bullets[k].y, s->e_bullets[k].x, 4);
    for (int k = 0; k < s->n_fish + s->n_subs + s->n_divers; k++) {
        int x, y, right, channel;
        if (k < s->n_fish) {
            x = s->fish[k].x; y = s->fish[k].y; right = s->fish[k].right; channel = 5;
        } else if (k < s->n_fish + s->n_subs) {
            const maq_sub* e = &s->subs[k - s->n_fish];
            x = e->x; y = e->y; right = e->right; channel = 6;
        } else {
            const maq_mover* d = &s->divers[k - s->n_fish - s->n_subs];
            x = d->x; y = d->y; right = d->right; channel = 9;
        }
        MA_SET(obs, y, x, channel);
        int back = right ? x - 1 : x + 1;
        if (back >= 0 && back <= 9) MA_SET(obs, y, back, 3);
    }
}

/* The game's own start (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN void maq_reset(State* s, fv_rng* rng) {
    (void)rng;
    s->oxygen = MAQ_MAX_OXYGEN;
    s->diver_count = 0;
    s->sub_x = 5;
    s->sub_y = 0;
    s->sub_right = 0;
    s->n_subs = s->n_fish = s->n_divers = s->n_e_bullets = s->n_f_bullets = 0;
    s->e_spawn_speed = MAQ_SPAWN_SPEED;
    s->e_spawn_timer = MAQ_SPAWN_SPEED;
    s->d_spawn_timer = MAQ_DIVER_SPAWN_SPEED;
    s->move_speed = MAQ_MOVE_INTERVAL;
    s->ramp_index = 0;
    s->shot_timer = 0;
    s->surface = 1;
}

/* minatar's _spawn_enemy: nothing spawns in a row where an enemy heads the other way. */
FV_FN void maq_spawn_enemy(State* s, fv_rng* rng) {
    int right = MA_UNIFORM(rng) < 0.5;
    int is_sub = MA_UNIFORM(rng) < 1.0 / 3.0;
    int y = 1 + MA_RANDINT(rng, 8);
    for (int k = 0; k < s->n_subs; k++)
        if (s->subs[k].y == y && s->subs[k].right != right) return;
    for (int k = 0; k < s->n_fish; k++)
        if (s->fish[k].y == y && s->fish[k].right != right) return;
    signed char x = right ? 0 : 9;
    if (is_sub && s->n_subs < MAQ_MAX_ENEMIES) {
        maq_sub e = {x, (signed char)y, (signed char)right, s->move_speed, MAQ_ENEMY_SHOT_INTERVAL};
        s->subs[s->n_subs++] = e;
    } else if (!is_sub && s->n_fish < MAQ_MAX_ENEMIES) {
        maq_mover f = {x, (signed char)y, (signed char)right, s->move_speed};
        s->fish[s->n_fish++] = f;
    }
}

FV_FN void maq_spawn_diver(State* s, fv_rng* rng) {
    int right = MA_UNIFORM(rng) < 0.5;
    int y = 1 + MA_RANDINT(rng, 8);
    if (s->n_divers < MAQ_MAX_DIVERS) {
        maq_mover d = {(signed char)(right ? 0 : 9), (signed char)y, (signed char)right, MAQ_DIVER_MOVE_INTERVAL};
        s->divers[s->n_divers++] = d;
    }
}

/* minatar's _surface: the reward for a full load of divers, refilled oxygen, and a ramp step. */
FV_FN int maq_surface(State* s) {
    int r = 0;
    s->surface = 1;
    if (s->diver_count == 6) {
        s->diver_count = 0;
        r = s->oxygen * 10 / MAQ_MAX_OXYGEN; /* oxygen >= 0 here, where C division floors as Python's */
    }
    s->oxygen = MAQ_MAX_OXYGEN;
    s->diver_count -= 1;
    if (DIFFICULTY_RAMPING && (s->e_spawn_speed > 1 || s->move_speed > 2)) {
        if (s->move_speed > 2 && s->ramp_index % 2) s->move_speed -= 1;
        if (s->e_spawn_speed > 1) s->e_spawn_speed -= 1;
        s->ramp_index += 1;
    }
    return r;
}

FV_FN int maq_at_sub(const State* s, int x, int y) { return x == s->sub_x && y == s->sub_y; }

FV_FN void maq_update_f_bullets(State* s, int* r) {
    for (int i = s->n_f_bullets - 1; i >= 0 && i < s->n_f_bullets; i--) {
        maq_bullet* b = &s->f_bullets[i];
        b->x += b->right ? 1 : -1;
        if (b->x < 0 || b->x > 9) {
            maq_remove_bullet(s->f_bullets, &s->n_f_bullets, *b);
            continue;
        }
        int hit = 0;
        for (int k = 0; k < s->n_fish; k++) {
            if (b->x == s->fish[k].x && b->y == s->fish[k].y) {
                maq_remove_mover(s->fish, &s->n_fish, s->fish[k]);
                maq_remove_bullet(s->f_bullets, &s->n_f_bullets, *b);
                *r += 1;
                hit = 1;
                break;
            }
        }
        if (hit) continue;
        for (int k = 0; k < s->n_subs; k++) {
            if (b->x == s->subs[k].x && b->y == s->subs[k].y) {
                maq_remove_sub(s->subs, &s->n_subs, s->subs[k]);
                maq_remove_bullet(s->f_bullets, &s->n_f_bullets, *b);
                *r += 1;
                break;
            }
        }
    }
}

FV_FN void maq_update_divers(State* s) {
    for (int i = s->n_divers - 1; i >= 0 && i < s->n_divers; i--) {
        maq_mover* d = &s->divers[i];
        if (maq_at_sub(s, d->x, d->y) && s->diver_count < 6) {
            maq_remove_mover(s->divers, &s->n_divers, *d);
            s->diver_count += 1;
        } else if (d->timer == 0) {
            d->timer = MAQ_DIVER_MOVE_INTERVAL;
            d->x += d->right ? 1 : -1;
            if (d->x < 0 || d->x > 9) {
                maq_remove_mover(s->divers, &s->n_divers, *d);
            } else if (maq_at_sub(s, d->x, d->y) && s->diver_count < 6) {
                maq_remove_mover(s->divers, &s->n_divers, *d);
                s->diver_count += 1;
            }
        } else {
            d->timer -= 1;
        }
    }
}

/* A fish or sub that moves onto a sub bullet: both go, +1. */
FV_FN int maq_shot_down(State* s, int x, int y) {
    for (int k = 0; k < s->n_f_bullets; k++)
        if (x == s->f_bullets[k].x && y == s->f_bullets[k].y) return k;
    return -1;
}

FV_FN void maq_update_subs(State* s, int* r, int* terminal) {
    for (int i = s->n_subs - 1; i >= 0 && i < s->n_subs; i--) {
        maq_sub e = s->subs[i]; /* the object; written back while it is in the list */
        int at = i;
        if (maq_at_sub(s, e.x, e.y)) *terminal = 1;
        if (e.timer == 0) {
            e.timer = s->move_speed;
            e.x += e.right ? 1 : -1;
            s->subs[at] = e;
            if (e.x < 0 || e.x > 9) {
                maq_track(&at, maq_remove_sub(s->subs, &s->n_subs, e));
            } else if (maq_at_sub(s, e.x, e.y)) {
                *terminal = 1;
            } else {
                int k = maq_shot_down(s, e.x, e.y);
                if (k >= 0) {
                    maq_track(&at, maq_remove_sub(s->subs, &s->n_subs, e));
                    maq_remove_bullet(s->f_bullets, &s->n_f_bullets, s->f_bullets[k]);
                    *r += 1;
                }
            }
        } else {
            e.timer -= 1;
        }
        if (e.shot == 0) { /* a sub fires in the step it is removed too, as in the reference */
            e.shot = MAQ_ENEMY_SHOT_INTERVAL;
            if (s->n_e_bullets < MAQ_MAX_EBULLETS) {
                maq_bullet b = {e.x, e.y, e.right};
                s->e_bullets[s->n_e_bullets++] = b;
            }
        } else {
            e.shot -= 1;
        }
        if (at >= 0) s->subs[at] = e;
    }
}

FV_FN void maq_update_e_bullets(State* s, int* terminal) {
    for (int i = s->n_e_bullets - 1; i >= 0 && i < s->n_e_bullets; i--) {
        maq_bullet* b = &s->e_bullets[i];
        if (maq_at_sub(s, b->x, b->y)) *terminal = 1;
        b->x += b->right ? 1 : -1;
        if (b->x < 0 || b->x > 9) maq_remove_bullet(s->e_bullets, &s->n_e_bullets, *b);
        else if (maq_at_sub(s, b->x, b->y)) *terminal = 1;
    }
}

FV_FN void maq_update_fish(State* s, int* r, int* terminal) {
    for (int i = s->n_fish - 1; i >= 0 && i < s->n_fish; i--) {
        maq_mover* f = &s->fish[i];
        if (maq_at_sub(s, f->x, f->y)) *terminal = 1;
        if (f->timer == 0) {
            f->timer = s->move_speed;
            f->x += f->right ? 1 : -1;
            if (f->x < 0 || f->x > 9) {
                maq_remove_mover(s->fish, &s->n_fish, *f);
            } else if (maq_at_sub(s, f->x, f->y)) {
                *terminal = 1;
            } else {
                int k = maq_shot_down(s, f->x, f->y);
                if (k >= 0) {
                    maq_remove_mover(s->fish, &s->n_fish, *f);
                    maq_remove_bullet(s->f_bullets, &s->n_f_bullets, s->f_bullets[k]);
                    *r += 1;
                }
            }
        } else {
            f->timer -= 1;
        }
    }
}

/* One step of the game for full-set action a (minatar_common.h's MA_DEFINE_ENV wraps it). */
FV_FN int maq_rules(State* s, fv_rng* rng, int a, int* reward) {
    int r = 0, terminal = 0;
    if (s->e_spawn_timer == 0) {
        maq_spawn_enemy(s, rng);
        s->e_spawn_timer = s->e_spawn_speed;
    }
    if (s->d_spawn_timer == 0) {
        maq_spawn_diver(s, rng);
        s->d_spawn_timer = MAQ_DIVER_SPAWN_SPEED;
    }
    if (a == MA_FIRE && s->shot_timer == 0) {
        if (s->n_f_bullets < MAQ_MAX_FBULLETS) {
            maq_bullet b = {s->sub_x, s->sub_y, s->sub_right};
            s->f_bullets[s->n_f_bullets++] = b;
        }
        s->shot_timer = MAQ_SHOT_COOL_DOWN;
    } else if (a == MA_LEFT) {
        s->sub_x = s->sub_x > 0 ? s->sub_x - 1 : 0;
        s->sub_right = 0;
    } else if (a == MA_RIGHT) {
        s->sub_x = s->sub_x < 9 ? s->sub_x + 1 : 9;
        s->sub_right = 1;
    } else if (a == MA_UP) {
        s->sub_y = s->sub_y > 0 ? s->sub_y - 1 : 0;
    } else if (a == MA_DOWN) {
        s->sub_y = s->sub_y < 8 ? s->sub_y + 1 : 8;
    }

    maq_update_f_bullets(s, &r);
    maq_update_divers(s);
    maq_update_subs(s, &r, &terminal);
    maq_update_e_bullets(s, &terminal);
    maq_update_fish(s, &r, &terminal);

    if (s->e_spawn_timer > 0) s->e_spawn_timer -= 1;
    if (s->d_spawn_timer > 0) s->d_spawn_timer -= 1;
    if (s->shot_timer > 0) s->shot_timer -= 1;
    if (s->oxygen <= 0) terminal = 1;
    if (s->sub_y > 0) {
        s->oxygen -= 1;
        s->surface = 0;
    } else if (!s->surface) {
        if (s->diver_count == 0) terminal = 1;
        else r += maq_surface(s);
    }

    *reward = r;
    return terminal;
}

MA_DEFINE_ENV(maq_reset, maq_rules, maq_write_obs)
