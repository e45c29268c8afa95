/* smax.h: jaxmarl's SMAX (StarCraft micro-battles in JAX, jaxmarl 0.2.0's smax_env.py) in its float32 arithmetic:
 * two teams of units on a 32 x 32 map; every unit is an agent, allies first (ally_0..), then enemies (enemy_0..),
 * or with ENEMY=1 the allies alone, the enemies played by jaxmarl's heuristic.
 * One env step is 8 world steps of 1/16 s: each unit moves (its type's speed, clipped to the map) and, with its
 * weapon cooled down, hits the unit it targets if both are alive and it is within its type's attack range (damage
 * summed, health floored at 0); a unit touching a wall dies; overlapping alive units are pushed apart.
 * A hit resets the weapon's cooldown to its type's plus a uniform draw in [-1/16, 2/16); the draws of the next
 * env step are part of the state (drawn at reset and after each step), so a state set from jaxmarl's with its
 * draws steps exactly as jaxmarl does.
 * Actions of an agent: 0-3 move (up, right, down, left), 4 stop, 5.. attack the other team's units (allies
 * number enemies in index order, enemies number allies in reverse order); an action beyond an agent's own space
 * (the smaller team's, where team sizes differ) does nothing.
 * Observation ("unit_list", 13 (N - 1) + 10 float32): every other unit as seen by the agent (its health fraction,
 * position relative to the agent over the agent's sight range, its previous move, its previous attack action
 * over its team's largest action, its cooldown fraction, its type one-hot; zeros where it or the agent is dead or
 * it is out of sight), allies first for allies and in reverse index order for enemies; then the agent's own
 * health fraction, position over the map size, cooldown fraction and type one-hot (zeros when dead).
 * Reward of each agent: its team's, the other team's health lost this step (fractions of full health, summed,
 * over the other team's size) plus 1 when the other team is eliminated and its own is not.
 * Terminated when a team is eliminated; jaxmarl's time limit (max_steps 100, checked before the step count
 * increments) is a truncation at 101 steps, the backends' job.
 * fastvec.h's optional hooks: the available actions (ACTION_MASK, jaxmarl's get_avail_actions; an action ruled out
 * steps as jaxmarl steps it: a dead unit stays put, an attack out of range or on the dead does nothing) and the
 * world state (WORLD_STATE_SIZE, jaxmarl's get_world_state) for a centralised critic.
 * Parameters: MAP, the scenario (the table below; fastvec/native/smax.py names them; in the smacv2 ones each reset
 * draws the units' types and start positions, smax_units.h, and a unit's type is state); ENEMY, who plays the enemies:
 * 0 the agents (every unit an agent, as jaxmarl's SMAX), 1 jaxmarl's heuristic (HeuristicEnemySMAX, enemy_shoots:
 * the agents are the allies alone; smax_heuristic_action below); ATTACK_MODE, the heuristic's attack_mode: 0
 * "closest" (jaxmarl's default), 1 "random". Each checked against jaxmarl by tests/smax.
 */
#ifndef MAP
#define MAP 0
#endif

/* Scenarios (jaxmarl's MAP_NAME_TO_SCENARIO): allies, enemies, unit types in unit order. */
#if MAP == 0 /* 3m */
#define NUM_ALLIES 3
#define NUM_ENEMIES 3
#define SMAX_TYPES {0, 0, 0, 0, 0, 0}
#elif MAP == 1 /* 2s3z */
#define NUM_ALLIES 5
#define NUM_ENEMIES 5
#define SMAX_TYPES {2, 2, 3, 3, 3, 2, 2, 3, 3, 3}
#elif MAP == 2 /* 3s5z */
#define NUM_ALLIES 8
#define NUM_ENEMIES 8
#define SMAX_TYPES {2, 2, 2, 3, 3, 3, 3, 3, 2, 2, 2, 3, 3, 3, 3, 3}
#elif MAP == 3 /* 5m_vs_6m */
#define NUM_ALLIES 5
#define NUM_ENEMIES 6
#define SMAX_TYPES {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
#elif MAP == 4 /* 3s5z_vs_3s6z */
#define NUM_ALLIES 8
#define NUM_ENEMIES 9
#define SMAX_TYPES {2, 2, 2, 3, 3, 3, 3, 3, 2, 2, 2, 3, 3, 3, 3, 3, 3}
#elif MAP == 5 /* 3s_vs_5z */
#define NUM_ALLIES 3
#define NUM_ENEMIES 5
#define SMAX_TYPES {2, 2, 2, 3, 3, 3, 3, 3}
#elif MAP == 6 /* 6h_vs_8z */
#define NUM_ALLIES 6
#define NUM_ENEMIES 8
#define SMAX_TYPES {5, 5, 5, 5, 5, 5, 3, 3, 3, 3, 3, 3, 3, 3}
#elif MAP >= 7 && MAP <= 10 /* 8m, 25m, 10m_vs_11m, 27m_vs_30m: marines only */
#define NUM_ALLIES (MAP == 7 ? 8 : MAP == 8 ? 25 : MAP == 9 ? 10 : 27)
#define NUM_ENEMIES (MAP == 7 ? 8 : MAP == 8 ? 25 : MAP == 9 ? 11 : 30)
#define SMAX_ALL_MARINES 1
#elif MAP >= 11 && MAP <= 13 /* smacv2_5_units, smacv2_10_units, smacv2_20_units: each reset draws the units */
#define NUM_ALLIES (MAP == 11 ? 5 : MAP == 12 ? 10 : 20)
#define NUM_ENEMIES NUM_ALLIES
#define SMAX_RANDOM_UNITS 1 /* smax_units.h: every reset draws the units' types and start positions */
#else
#error "MAP must be 0 (3m), 1 (2s3z), 2 (3s5z), 3 (5m_vs_6m), 4 (3s5z_vs_3s6z), 5 (3s_vs_5z), 6 (6h_vs_8z), 7 (8m), 8 (25m), 9 (10m_vs_11m), 10 (27m_vs_30m), 11 (smacv2_5_units), 12 (smacv2_10_units) or 13 (smacv2_20_units)"
#endif
#ifndef SMAX_RANDOM_UNITS
#define SMAX_RANDOM_UNITS 0
#endif

#ifndef ENEMY
#define ENEMY 0
#endif
#if ENEMY != 0 && ENEMY != 1
#error "ENEMY must be 0 (the enemies are agents) or 1 (jaxmarl's heuristic enemy)"
#endif
#define SMAX_HEURISTIC (ENEMY == 1)
#ifndef ATTACK_MODE
#define ATTACK_MODE 0
#endif
#if ATTACK_MODE != 0 && ATTACK_MODE != 1
#error "ATTACK_MODE must be 0 (the heuristic attacks the closest ally in range) or 1 (one drawn uniformly)"
#endif
#if ATTACK_MODE == 1 && !SMAX_HEURISTIC
#error "ATTACK_MODE is the heuristic enemy's (ENEMY=1)"
#endif
#define SMAX_RANDOM_ATTACK (ATTACK_MODE == 1)

#define SMAX_N (NUM_ALLIES + NUM_ENEMIES)
#define SMAX_MOVES 5
#define SMAX_TYPE_BITS 6
#define SMAX_UNIT_FEATURES (7 + SMAX_TYPE_BITS)
#define SMAX_OWN_FEATURES (4 + SMAX_TYPE_BITS)
#define SMAX_WORLD_STEPS 8
#define SMAX_MAP_SIZE 32.0f
#define SMAX_DT 0.0625f /* time_per_step, 1/16 */
#define SMAX_UNIT_STATE 8

#define NUM_AGENTS (SMAX_HEURISTIC ? NUM_ALLIES : SMAX_N)
#define OBS_SIZE (SMAX_UNIT_FEATURES * (SMAX_N - 1) + SMAX_OWN_FEATURES)
/* Every feature in [-1, 1] (jaxmarl's bounds), but the own position's where units start off the map (the random-unit
 * scenarios' corners plus offsets, then pushed apart: within (-27, 59) over 32). */
#define OBS_LOW (SMAX_RANDOM_UNITS ? -2.0f : -1.0f)
#define OBS_HIGH (SMAX_RANDOM_UNITS ? 2.0f : 1.0f)
#define NUM_ACTIONS (SMAX_MOVES + (NUM_ALLIES > NUM_ENEMIES && !SMAX_HEURISTIC ? NUM_ALLIES : NUM_ENEMIES))
#define AGENT_SPACES 1
#define NUM_STATS 2
#define STAT_NAMES "allies_won,enemies_won"
/* the heuristic's per enemy: its default target's x and y, its last target, its draws (attack_mode "random": two) */
#define SMAX_ENEMY_STATE (4 + SMAX_RANDOM_ATTACK)
#define SMAX_ENEMY_OFFSET ((SMAX_UNIT_STATE + SMAX_WORLD_STEPS) * SMAX_N)
#define SMAX_TYPE_OFFSET (SMAX_ENEMY_OFFSET + (SMAX_HEURISTIC ? SMAX_ENEMY_STATE * NUM_ENEMIES : 0))
#define STATE_SIZE (SMAX_TYPE_OFFSET + (SMAX_RANDOM_UNITS ? SMAX_N : 0))
#define RENDER_W 256
#define RENDER_H 256
#include "fastvec.h"

/* Unit types: marine, marauder, stalker, zealot, zergling, hydralisk (jaxmarl's defaults, as float32). */
#define SMAX_VELOCITY {3.15f, 2.25f, 4.13f, 3.15f, 4.13f, 3.15f}
#define SMAX_ATTACK {9.0f, 10.0f, 13.0f, 8.0f, 5.0f, 12.0f}
#define SMAX_RANGE {5.0f, 6.0f, 6.0f, 2.0f, 2.0f, 5.0f}
#define SMAX_SIGHT {9.0f, 10.0f, 10.0f, 9.0f, 8.0f, 9.0f}
#define SMAX_RADIUS {0.375f, 0.5625f, 0.625f, 0.5f, 0.375f, 0.625f}
#define SMAX_HEALTH {45.0f, 125.0f, 160.0f, 150.0f, 35.0f, 80.0f}
#define SMAX_COOLDOWN {0.61f, 1.07f, 1.87f, 0.86f, 0.5f, 0.59f}

typedef struct {
    float pos[SMAX_N][2];
    float health[SMAX_N];
    float cooldown[SMAX_N];
    unsigned char alive[SMAX_N];
    float prev_move[SMAX_N][2];
    int prev_attack[SMAX_N];
    float deviation[SMAX_WORLD_STEPS][SMAX_N]; /* the next env step's cooldown draws, per world step and unit */
#if SMAX_HEURISTIC /* the heuristic enemies' policy state (jaxmarl's HeuristicPolicyState) and draws */
    float enemy_target[NUM_ENEMIES][2]; /* where an enemy heads when it sees no ally; (0, 0) before its first step */
    int enemy_last[NUM_ENEMIES];        /* the ally it attacked last (its k-th, allies in reverse order), -1: none */
    float enemy_draw[NUM_ENEMIES];      /* the next env step's uniform draw of the seen ally it follows */
#if SMAX_RANDOM_ATTACK
    float enemy_attack_draw[NUM_ENEMIES]; /* the next env step's uniform draw of the ally in range it attacks */
#endif
#endif
#if SMAX_RANDOM_UNITS
    unsigned char type[SMAX_N]; /* each unit's type, drawn at reset */
#endif
} State;

#if SMAX_RANDOM_UNITS
FV_FN int smax_type(const State* s, int u) { return s->type[u]; }
#elif defined(SMAX_ALL_MARINES)
FV_FN int smax_type(const State* s, int u) { (void)s, (void)u; return 0; }
#else
FV_TABLE unsigned char smax_types[SMAX_N] = SMAX_TYPES;
FV_FN int smax_type(const State* s, int u) { (void)s; return smax_types[u]; }
#endif

/* The per-type tables as FV_TABLEs: tables local to a function would be rebuilt in each GPU thread's local memory
 * at every call, and these are read in the step's innermost loops. */
FV_TABLE float smax_velocities[SMAX_TYPE_BITS] = SMAX_VELOCITY;
FV_TABLE float smax_attacks[SMAX_TYPE_BITS] = SMAX_ATTACK;
FV_TABLE float smax_ranges[SMAX_TYPE_BITS] = SMAX_RANGE;
FV_TABLE float smax_sights[SMAX_TYPE_BITS] = SMAX_SIGHT;
FV_TABLE float smax_radii[SMAX_TYPE_BITS] = SMAX_RADIUS;
FV_TABLE float smax_healths[SMAX_TYPE_BITS] = SMAX_HEALTH;
FV_TABLE float smax_cooldowns[SMAX_TYPE_BITS] = SMAX_COOLDOWN;
FV_FN float smax_velocity(const State* s, int u) { return smax_velocities[smax_type(s, u)]; }
FV_FN float smax_attack(const State* s, int u) { return smax_attacks[smax_type(s, u)]; }
FV_FN float smax_range(const State* s, int u) { return smax_ranges[smax_type(s, u)]; }
FV_FN float smax_sight(const State* s, int u) { return smax_sights[smax_type(s, u)]; }
FV_FN float smax_radius(const State* s, int u) { return smax_radii[smax_type(s, u)]; }
FV_FN float smax_max_health(const State* s, int u) { return smax_healths[smax_type(s, u)]; }
FV_FN float smax_base_cooldown(const State* s, int u) { return smax_cooldowns[smax_type(s, u)]; }

#if SMAX_RANDOM_UNITS
#include "smax_units.h"
#endif

FV_FN int env_agent_obs_size(int a) { (void)a; return OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return SMAX_MOVES + (a < NUM_ALLIES ? NUM_ENEMIES : NUM_ALLIES); }

/* jnp.linalg.norm of a 2-vector as XLA's CPU code computes it: its sum of squares a loop of fused multiply-adds
 * from 0, then the square root. */
FV_FN float smax_norm(float dx, float dy) { return sqrtf(fmaf(dy, dy, dx * dx)); }

/* fmaxf and fminf as x86-64's glibc computes them, inline (its are calls through the PLT: ~10% of a CPU step):
 * for numbers x > y ? x : y (x < y for the min), y on a tie such as -0 and +0; a NaN gives the other argument.
 * Elsewhere (the GPU, other CPUs' libraries) the library's own. */
#if defined(__x86_64__) && !defined(__CUDA_ARCH__)
FV_FN float smax_fmaxf(float x, float y) { return (x > y || y != y) ? x : y; }
FV_FN float smax_fminf(float x, float y) { return (x < y || y != y) ? x : y; }
#else
#define smax_fmaxf fmaxf
#define smax_fminf fminf
#endif

FV_FN float smax_clip01(float x) { return smax_fminf(smax_fmaxf(x, 0.0f), 1.0f); }

/* The next env step's random draws: the cooldown deviations, then the heuristic enemies' draws. */
FV_FN void smax_draw_deviations(State* s, fv_rng* rng) {
    for (int w = 0; w < SMAX_WORLD_STEPS; w++)
        for (int u = 0; u < SMAX_N; u++) s->deviation[w][u] = fv_rand_uniform(rng, -SMAX_DT, 2.0f * SMAX_DT);
#if SMAX_HEURISTIC
    for (int e = 0; e < NUM_ENEMIES; e++) s->enemy_draw[e] = fv_rand_float(rng);
#if SMAX_RANDOM_ATTACK
    for (int e = 0; e < NUM_ENEMIES; e++) s->enemy_attack_draw[e] = fv_rand_float(rng);
#endif
#endif
}

/* Overlapping alive units pushed apart (jaxmarl's _push_units_away, firmness 1). Its distances' sums of squares
 * unfused: XLA's CPU code fuses them or not depending on the batch it compiles for; unfused is its form for
 * batches of 128 and more (tests/smax/smax_oracle.py states the tolerance this leaves). */
FV_FN void smax_push_apart(State* s) {
    float moved[SMAX_N][2];
    for (int i = 0; i < SMAX_N; i++) {
        float sx = 0.0f, sy = 0.0f;
        for (int j = 0; j < SMAX_N; j++) {
            float dx = s->pos[i][0] - s->pos[j][0], dy = s->pos[i][1] - s->pos[j][1];
            float dist = sqrtf(dx * dx + dy * dy) + (i == j ? 1.0f : 0.0f) + 1e-6f;
            float touching = smax_radius(s, i) + smax_radius(s, j);
            float overlap = s->alive[i] && s->alive[j] ? smax_fmaxf(touching / dist - 1.0f, 0.0f) : 0.0f;
            sx = fmaf(dx, overlap, sx);
            sy = fmaf(dy, overlap, sy);
        }
        moved[i][0] = s->alive[i] ? s->pos[i][0] + (1.0f * sx) / 2.0f : s->pos[i][0];
        moved[i][1] = s->alive[i] ? s->pos[i][1] + (1.0f * sy) / 2.0f : s->pos[i][1];
    }
    memcpy(s->pos, moved, sizeof moved);
}

/* The unit an attack action of unit u targets; u itself for a move or stop. */
FV_FN int smax_target(int u, int action) {
    if (action < SMAX_MOVES) return u;
    return u < NUM_ALLIES ? action + NUM_ALLIES - SMAX_MOVES : NUM_ALLIES - 1 - (action - SMAX_MOVES);
}

/* One world step (jaxmarl's _world_step, then walls, deaths and pushing): moves and attacks from the state
 * before it. */
FV_FN void smax_world_step(State* s, const float (*move)[2], const int* attack, const float* deviation) {
    float pos[SMAX_N][2], damage[SMAX_N], cooldown_change[SMAX_N];
    int target[SMAX_N];
    for (int u = 0; u < SMAX_N; u++) {
        for (int d = 0; d < 2; d++) {
            float p = s->pos[u][d] + move[u][d] * smax_velocity(s, u) * SMAX_DT;
            p = smax_fmaxf(smax_fminf(p, SMAX_MAP_SIZE), 0.0f);
            pos[u][d] = s->alive[u] ? p : s->pos[u][d];
        }
        int t = smax_target(u, attack[u]);
        int valid = smax_norm(s->pos[u][0] - s->pos[t][0], s->pos[u][1] - s->pos[t][1]) < smax_range(s, u)
                    && s->alive[u] && s->alive[t] && t != u && s->cooldown[u] <= 0.0f;
        target[u] = t;
        damage[u] = valid ? -smax_attack(s, u) : 0.0f;
        cooldown_change[u] = valid ? (smax_base_cooldown(s, u) + deviation[u]) - s->cooldown[u] : -SMAX_DT;
    }
    for (int u = 0; u < SMAX_N; u++) s->health[target[u]] += damage[u];
    for (int u = 0; u < SMAX_N; u++) {
        s->health[u] = smax_fmaxf(s->health[u], 0.0f);
        s->cooldown[u] += cooldown_change[u];
        s->pos[u][0] = pos[u][0], s->pos[u][1] = pos[u][1];
    }
    for (int u = 0; u < SMAX_N; u++) {
        int wall = s->pos[u][0] <= 0.0f || s->pos[u][1] <= 0.0f || s->pos[u][0] >= SMAX_MAP_SIZE
                   || s->pos[u][1] >= SMAX_MAP_SIZE;
        if (wall) s->health[u] = 0.0f;
        s->alive[u] = s->health[u] > 0.0f;
    }
    smax_push_apart(s);
}

FV_FN void smax_obs(const State* s, float* obs) {
    for (int i = 0; i < NUM_AGENTS; i++) {
        float* o = obs + i * OBS_SIZE;
        for (int k = 0; k < OBS_SIZE; k++) o[k] = 0.0f;
        float sight = smax_sight(s, i);
        for (int k = 0; k < SMAX_N - 1; k++) {
            /* allies see the others in index order, enemies in reverse */
            int j = i < NUM_ALLIES ? (k < i ? k : k + 1) : (SMAX_N - 1 - k > i ? SMAX_N - 1 - k : SMAX_N - 2 - k);
            float dx = s->pos[j][0] - s->pos[i][0], dy = s->pos[j][1] - s->pos[i][1];
            if (!(smax_norm(dx, dy) < sight && s->alive[i] && s->alive[j])) continue;
            float* f = o + k * SMAX_UNIT_FEATURES;
            float largest_action = (float)(SMAX_MOVES + (j < NUM_ALLIES ? NUM_ENEMIES : NUM_ALLIES) - 1);
            f[0] = s->health[j] / smax_max_health(s, j);
            f[1] = dx * (1.0f / sight); /* XLA divides by the broadcast sight range as a reciprocal's product */
            f[2] = dy * (1.0f / sight);
            f[3] = s->prev_move[j][0];
            f[4] = s->prev_move[j][1];
            f[5] = (float)s->prev_attack[j] * (1.0f / largest_action); /* a constant's reciprocal, as XLA's */
            f[6] = smax_clip01(s->cooldown[j] / smax_base_cooldown(s, j));
            f[7 + smax_type(s, j)] = 1.0f;
        }
        if (!s->alive[i]) continue;
        float* f = o + (SMAX_N - 1) * SMAX_UNIT_FEATURES;
        f[0] = s->health[i] / smax_max_health(s, i);
        f[1] = s->pos[i][0] / SMAX_MAP_SIZE;
        f[2] = s->pos[i][1] / SMAX_MAP_SIZE;
        f[3] = smax_clip01(s->cooldown[i] / smax_base_cooldown(s, i));
        f[4 + smax_type(s, i)] = 1.0f;
    }
}

#if SMAX_HEURISTIC
/* jax.random.choice of one of n with p uniform over `among`'s: the first whose cumulative probability reaches the
 * total times (1 - draw); none among them: the first. */
FV_FN int smax_choice(const int* among, int n, float draw) {
    int count = 0;
    for (int k = 0; k < n; k++) count += among[k];
    if (count == 0) return 0;
    float p = 1.0f / (float)count, cumulative[NUM_ALLIES], sum = 0.0f;
    for (int k = 0; k < n; k++) cumulative[k] = sum = sum + (among[k] ? p : 0.0f);
    float r = sum * (1.0f - draw);
    int k = 0;
    while (k < n - 1 && !(cumulative[k] >= r)) k++;
    return k;
}

/* Enemy e's action by jaxmarl's heuristic (heuristic_enemy.py, shooting; ATTACK_MODE its attack_mode), from what its
 * observation shows and in its arithmetic (the allies' positions rebuilt from the observation's scaled features; a
 * dead enemy sees zeros, its type read as 0); updates its policy state. With an ally in attack range: the ally it
 * attacked last while still in range, else the closest in range ("closest") or one in range drawn uniformly
 * ("random", its attack draw). Else it moves towards a seen ally drawn uniformly (its draw), or with none seen towards
 * its default target (its first position mirrored through the map's centre): the move whose direction has the
 * largest dot product with the way there. */
FV_FN int smax_heuristic_action(State* s, int e) {
    int u = NUM_ALLIES + e, alive = s->alive[u];
    int type = alive ? smax_type(s, u) : 0;
    float sight = smax_sights[type], ox = alive ? s->pos[u][0] : 0.0f, oy = alive ? s->pos[u][1] : 0.0f;
    float ex[NUM_ALLIES], ey[NUM_ALLIES];
    int seen[NUM_ALLIES], shootable[NUM_ALLIES], num_seen = 0, closest = 0;
    float closest_dist = 0.0f;
    for (int k = 0; k < NUM_ALLIES; k++) { /* allies in reverse order, as the enemy's observation lists them */
        int j = NUM_ALLIES - 1 - k;
        float dx = s->pos[j][0] - s->pos[u][0], dy = s->pos[j][1] - s->pos[u][1];
        seen[k] = smax_norm(dx, dy) < sight && alive && s->alive[j] && s->health[j] / smax_max_health(s, j) > 0.0f;
        ex[k] = seen[k] ? dx * (1.0f / sight) * sight : 0.0f;
        ey[k] = seen[k] ? dy * (1.0f / sight) * sight : 0.0f;
        shootable[k] = seen[k] && smax_norm(ex[k], ey[k]) < smax_ranges[type];
        float dist = shootable[k] ? smax_norm(ex[k], ey[k]) : 45.254833995939045f; /* the map's diagonal */
        if (k == 0 || dist < closest_dist) closest = k, closest_dist = dist;
        num_seen += seen[k];
    }
    int last = s->enemy_last[e];
    int initial = s->enemy_target[e][0] == 0.0f && s->enemy_target[e][1] == 0.0f && last == -1;
#if SMAX_RANDOM_ATTACK
    int fresh = smax_choice(shootable, NUM_ALLIES, s->enemy_attack_draw[e]);
    (void)closest;
#else
    int fresh = closest;
#endif
    int attack = last != -1 && shootable[last] ? last : fresh;
    s->enemy_last[e] = shootable[attack] ? attack : -1;
    if (initial) { /* rotated by 180 degrees about the centre */
        s->enemy_target[e][0] = -(ox - SMAX_MAP_SIZE / 2.0f) + SMAX_MAP_SIZE / 2.0f;
        s->enemy_target[e][1] = -(oy - SMAX_MAP_SIZE / 2.0f) + SMAX_MAP_SIZE / 2.0f;
    }
    int can_shoot = 0;
    for (int k = 0; k < NUM_ALLIES; k++) can_shoot |= shootable[k];
    if (can_shoot) return SMAX_MOVES + attack;
    float tx = s->enemy_target[e][0], ty = s->enemy_target[e][1];
    if (num_seen > 0) {
        int k = smax_choice(seen, NUM_ALLIES, s->enemy_draw[e]);
        tx = ex[k] + ox, ty = ey[k] + oy;
    }
    float vx = tx - ox, vy = ty - oy;
    const float similarity[4] = {vy, vx, -vy, -vx}; /* up, right, down, left */
    int move = 0;
    for (int m = 1; m < 4; m++)
        if (similarity[m] > similarity[move]) move = m;
    return move;
}
#endif

/* A battle's start from its units' positions (and types, where drawn): full health, weapons ready, no previous
 * actions, the heuristic enemies' policy states fresh; overlapping units pushed apart. */
FV_FN void smax_start(State* s) {
    for (int u = 0; u < SMAX_N; u++) {
        s->health[u] = smax_max_health(s, u);
        s->cooldown[u] = 0.0f;
        s->alive[u] = 1;
        s->prev_move[u][0] = s->prev_move[u][1] = 0.0f;
        s->prev_attack[u] = 0;
    }
#if SMAX_HEURISTIC
    for (int e = 0; e < NUM_ENEMIES; e++) s->enemy_target[e][0] = s->enemy_target[e][1] = 0.0f, s->enemy_last[e] = -1;
#endif
    smax_push_apart(s);
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
#if SMAX_RANDOM_UNITS
    SmaxSpawn spawn;
    smax_draw_spawn(&spawn, rng);
    smax_place_units(&spawn, s->pos, s->type);
#else
    for (int u = 0; u < SMAX_N; u++) { /* the allies around (8, 16), the enemies around (24, 16) */
        float cx = u < NUM_ALLIES ? SMAX_MAP_SIZE / 4.0f : SMAX_MAP_SIZE / 4.0f * 3.0f;
        s->pos[u][0] = cx + fv_rand_uniform(rng, -2.0f, 2.0f);
        s->pos[u][1] = SMAX_MAP_SIZE / 2.0f + fv_rand_uniform(rng, -2.0f, 2.0f);
    }
#endif
    smax_start(s);
    smax_draw_deviations(s, rng);
    smax_obs(s, obs);
}

/* Whether every unit of units [lo, hi) is dead. */
FV_FN int smax_eliminated(const State* s, int lo, int hi) {
    int any = 0;
    for (int u = lo; u < hi; u++) any |= s->alive[u];
    return !any;
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    /* jaxmarl's decoded movement vectors as its jitted step computes them: diagonals of length 1 rotated by 45
     * degrees, a matrix product whose fused multiply-adds leave a residue off the axis. */
    const float one = 0x1.fffffep-1f, off = 0x1.b3f548p-27f;
    const float moves[SMAX_MOVES][2] = {{-off, one}, {one, -off}, {off, -one}, {-one, off}, {0.0f, 0.0f}};
    float move[SMAX_N][2], before[SMAX_N];
    int attack[SMAX_N];
    int chosen[SMAX_N];
    for (int u = 0; u < NUM_AGENTS; u++) chosen[u] = (int)actions[u];
#if SMAX_HEURISTIC
    for (int e = 0; e < NUM_ENEMIES; e++) chosen[NUM_ALLIES + e] = smax_heuristic_action(s, e);
#endif
    for (int u = 0; u < SMAX_N; u++) {
        int a = chosen[u];
        if (a >= env_agent_action_size(u)) a = SMAX_MOVES - 1; /* beyond the agent's own space: stop */
        move[u][0] = a < SMAX_MOVES ? moves[a][0] : 0.0f;
        move[u][1] = a < SMAX_MOVES ? moves[a][1] : 0.0f;
        attack[u] = a >= SMAX_MOVES ? a : 0;
        before[u] = s->health[u];
    }
    for (int w = 0; w < SMAX_WORLD_STEPS; w++) smax_world_step(s, (const float (*)[2])move, attack, s->deviation[w]);
    for (int u = 0; u < SMAX_N; u++) {
        s->prev_move[u][0] = move[u][0], s->prev_move[u][1] = move[u][1];
        s->prev_attack[u] = attack[u];
    }
    int allies_out = smax_eliminated(s, 0, NUM_ALLIES), enemies_out = smax_eliminated(s, NUM_ALLIES, SMAX_N);
    for (int team = 0; team < 2; team++) {
        int lo = team == 0 ? NUM_ALLIES : 0, hi = team == 0 ? SMAX_N : NUM_ALLIES;
        float lost = 0.0f;
        for (int u = lo; u < hi; u++) lost += (s->health[u] - before[u]) / smax_max_health(s, u);
        int won = team == 0 ? enemies_out && !allies_out : allies_out && !enemies_out;
        /* over the team's size as XLA computes it: its reciprocal's product, fused with the bonus's sum */
        float reward = fmaf(fabsf(lost), 1.0f / (float)(hi - lo), won ? 1.0f : 0.0f);
        for (int u = team == 0 ? 0 : NUM_ALLIES; u < (team == 0 ? NUM_ALLIES : NUM_AGENTS); u++) rewards[u] = reward;
    }
    stats[0] = (float)(enemies_out && !allies_out);
    stats[1] = (float)(allies_out && !enemies_out);
    smax_draw_deviations(s, rng);
    smax_obs(s, obs);
    return allies_out || enemies_out;
}

/* Agent a's available actions (jaxmarl's get_avail_actions): stop always; moves while alive; attacking each unit of
 * the other team alive within its attack range (in its action order); 0 beyond its own space. */
FV_FN void smax_action_mask(const State* s, int a, unsigned char* mask) {
    for (int k = 0; k < NUM_ACTIONS; k++) mask[k] = 0;
    mask[SMAX_MOVES - 1] = 1;
    for (int k = 0; k < SMAX_MOVES - 1; k++) mask[k] = s->alive[a];
    for (int k = SMAX_MOVES; k < env_agent_action_size(a); k++) {
        int t = smax_target(a, k);
        mask[k] = s->alive[a] && s->alive[t]
                  && smax_norm(s->pos[t][0] - s->pos[a][0], s->pos[t][1] - s->pos[a][1]) < smax_range(s, a);
    }
}

#define ACTION_MASK 1
FV_FN void env_action_mask(const State* s, unsigned char* mask) {
    for (int a = 0; a < NUM_AGENTS; a++) smax_action_mask(s, a, mask + a * NUM_ACTIONS);
}

/* jaxmarl's world state ((4 + 6 + 2) N float32): per unit its health fraction, position, cooldown and type
 * one-hot (zeros when dead), then every unit's team, then every unit's type. */
#define WORLD_STATE_SIZE ((SMAX_OWN_FEATURES + 2) * SMAX_N)
FV_FN void env_world_state(const State* s, float* out) {
    for (int k = 0; k < WORLD_STATE_SIZE; k++) out[k] = 0.0f;
    for (int u = 0; u < SMAX_N; u++) {
        float* f = out + u * SMAX_OWN_FEATURES;
        out[SMAX_OWN_FEATURES * SMAX_N + u] = u < NUM_ALLIES ? 0.0f : 1.0f;
        out[(SMAX_OWN_FEATURES + 1) * SMAX_N + u] = (float)smax_type(s, u);
        if (!s->alive[u]) continue;
        f[0] = s->health[u] / smax_max_health(s, u);
        f[1] = s->pos[u][0], f[2] = s->pos[u][1], f[3] = s->cooldown[u];
        f[4 + smax_type(s, u)] = 1.0f;
    }
}

/* State values per unit: x, y, health, cooldown, alive, previous move x and y, previous attack action; then
 * the next step's cooldown draws, per world step and unit; with ENEMY=1 the heuristic enemies' (target x and y,
 * last target, draw, with ATTACK_MODE=1 its attack draw); in the random-unit scenarios every unit's type (0-5, as
 * SMAX_VELOCITY's order). */
FV_FN void env_get_state(const State* s, double* out) {
    for (int u = 0; u < SMAX_N; u++) {
        double* v = out + u * SMAX_UNIT_STATE;
        v[0] = s->pos[u][0], v[1] = s->pos[u][1], v[2] = s->health[u], v[3] = s->cooldown[u];
        v[4] = s->alive[u], v[5] = s->prev_move[u][0], v[6] = s->prev_move[u][1], v[7] = s->prev_attack[u];
    }
    for (int w = 0; w < SMAX_WORLD_STEPS; w++)
        for (int u = 0; u < SMAX_N; u++) out[SMAX_UNIT_STATE * SMAX_N + w * SMAX_N + u] = s->deviation[w][u];
#if SMAX_HEURISTIC
    for (int e = 0; e < NUM_ENEMIES; e++) {
        double* v = out + SMAX_ENEMY_OFFSET + e * SMAX_ENEMY_STATE;
        v[0] = s->enemy_target[e][0], v[1] = s->enemy_target[e][1], v[2] = s->enemy_last[e], v[3] = s->enemy_draw[e];
#if SMAX_RANDOM_ATTACK
        v[4] = s->enemy_attack_draw[e];
#endif
    }
#endif
#if SMAX_RANDOM_UNITS
    for (int u = 0; u < SMAX_N; u++) out[SMAX_TYPE_OFFSET + u] = s->type[u];
#endif
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    for (int u = 0; u < SMAX_N; u++) {
        const double* v = in + u * SMAX_UNIT_STATE;
        s->pos[u][0] = (float)v[0], s->pos[u][1] = (float)v[1], s->health[u] = (float)v[2];
        s->cooldown[u] = (float)v[3], s->alive[u] = v[4] != 0.0, s->prev_move[u][0] = (float)v[5];
        s->prev_move[u][1] = (float)v[6], s->prev_attack[u] = (int)v[7];
    }
    for (int w = 0; w < SMAX_WORLD_STEPS; w++)
        for (int u = 0; u < SMAX_N; u++) s->deviation[w][u] = (float)in[SMAX_UNIT_STATE * SMAX_N + w * SMAX_N + u];
#if SMAX_HEURISTIC
    for (int e = 0; e < NUM_ENEMIES; e++) {
        const double* v = in + SMAX_ENEMY_OFFSET + e * SMAX_ENEMY_STATE;
        s->enemy_target[e][0] = (float)v[0], s->enemy_target[e][1] = (float)v[1];
        s->enemy_last[e] = (int)v[2], s->enemy_draw[e] = (float)v[3];
#if SMAX_RANDOM_ATTACK
        s->enemy_attack_draw[e] = (float)v[4];
#endif
    }
#endif
#if SMAX_RANDOM_UNITS
    for (int u = 0; u < SMAX_N; u++) { /* a type beyond the six is read as a marine's: the tables stay in bounds */
        double t = in[SMAX_TYPE_OFFSET + u];
        s->type[u] = t >= 0.0 && t < SMAX_TYPE_BITS ? (unsigned char)t : 0;
    }
#endif
    smax_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    const float scale = RENDER_W / SMAX_MAP_SIZE;
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    for (int u = 0; u < SMAX_N; u++) {
        if (!s->alive[u]) continue;
        int r = (int)(smax_radius(s, u) * scale + 0.5f);
        int x = (int)(s->pos[u][0] * scale), y = RENDER_H - 1 - (int)(s->pos[u][1] * scale);
        int ally = u < NUM_ALLIES;
        fv_fill_rect(rgb, RENDER_W, RENDER_H, x - r, y - r, x + r + 1, y + r + 1, 0, ally ? 0 : 160, ally ? 220 : 0);
    }
}
