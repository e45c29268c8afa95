/* mpe_common.h: what the MPE scenarios (mpe_*.h, after the `mpe2` package 1.1.1, PettingZoo's MPE) share:
 * the world's float64 physics in mpe2's operation order (core.py's World.step: action forces, contact
 * forces, integration with damping and speed limits, communication), the decoding of discrete and
 * continuous actions (simple_env.py), the state access the oracle tests set mpe2's states through, and
 * a top-down rgb_array frame.
 *
 * A scenario defines, before including this file:
 *   MPE_AGENTS, MPE_LANDMARKS, MPE_DIM_C (its world's dim_c), OBS_SIZE (the largest agent's observation),
 *   MPE_NUM_ACTIONS (the largest agent's Discrete n), MPE_BOX_DIMS (the largest agent's continuous action
 *   values) and MPE_BOX_HIGH (MPE_BOX_DIMS ones: {1, 1, ...}),
 *   and the entities' properties as functions (entity e: agents 0..MPE_AGENTS-1, then the landmarks):
 *     double mpe_size(int e); int mpe_collide(int e); int mpe_movable(int e) (landmarks never move here);
 *     int mpe_silent(int a); double mpe_accel(int a) (mpe2's sensitivity, 5 unless the agent sets accel);
 *     double mpe_max_speed(int a) (0: none)
 *   MPE_EXTRA_STATE: how many float64 values of state access follow the world's (its goals, which its
 *   env_get_state / env_set_state write and read after mpe_get_world / mpe_set_world's).
 * Every agent's action and observation space is its own (fastvec.h's AGENT_SPACES: the scenario defines
 * env_agent_obs_size and env_agent_action_size): observations are padded with zeros to OBS_SIZE, discrete
 * actions are Discrete(the largest agent's n), continuous ones Box(0, 1, the largest agent's dims), an agent's
 * values past its own dims ignored.
 * Parameters (-D, registered in fastvec/native/mpe.py):
 *   CONTINUOUS_ACTIONS  1: Box actions as mpe2's continuous_actions=True (clipped to [0, 1] as its
 *                       ClipOutOfBoundsWrapper does); 0: Discrete
 * The contact force's softplus is NumPy's logaddexp(0, x), which calls the C library's exp and log1p:
 * here glibc's (glibc_exp.h), on the CPU and the GPU alike.
 */
#ifndef FASTVEC_MPE_COMMON_H
#define FASTVEC_MPE_COMMON_H
#include "fastvec.h"
#include "glibc_exp.h"

#ifndef CONTINUOUS_ACTIONS
#define CONTINUOUS_ACTIONS 0
#endif

#define MPE_ENTITIES (MPE_AGENTS + MPE_LANDMARKS)
#define MPE_DIM_P 2
#define MPE_DT 0.1
#define MPE_DAMPING 0.25
#define MPE_CONTACT_FORCE 1e2
#define MPE_CONTACT_MARGIN 1e-3
#define MPE_MOVE_DIMS 5 /* dim_p * 2 + 1: no-op, left, right, down, up */
#define MPE_C_ALLOC (MPE_DIM_C > 0 ? MPE_DIM_C : 1)

#define NUM_AGENTS MPE_AGENTS
#define AGENT_SPACES 1 /* the scenario's env_agent_obs_size and env_agent_action_size */
#define NUM_STATS 0
#define RENDER_W 256
#define RENDER_H 256
#if CONTINUOUS_ACTIONS
#define ACTION_SPACE FV_BOX
#define ACTION_DIMS MPE_BOX_DIMS
#define ACTION_LOW {0.0f}
#define ACTION_HIGH MPE_BOX_HIGH
#else
#define NUM_ACTIONS MPE_NUM_ACTIONS
#define ACTION_DIMS 1
#endif
#define STATE_SIZE (MPE_AGENTS * (4 + MPE_DIM_C) + 2 * MPE_LANDMARKS + MPE_EXTRA_STATE)

/* The world: every entity's position and velocity, every agent's utterance. */
typedef struct {
    double pos[MPE_ENTITIES][MPE_DIM_P];
    double vel[MPE_ENTITIES][MPE_DIM_P];
    double comm[MPE_AGENTS][MPE_C_ALLOC];
} MpeWorld;

/* An agent's decoded action: the physical force (before the speed limit) and the utterance. */
typedef struct {
    double u[MPE_DIM_P];
    double c[MPE_C_ALLOC];
} MpeAction;

/* simple_env.py's action spaces: a movable agent has 5 moves, a speaking one dim_c words; discrete actions
 * are their product (move + 5 * word), continuous ones the moves' 5 values then the words' dim_c. */
FV_FN int mpe_action_size(int a) {
#if CONTINUOUS_ACTIONS
    return (mpe_movable(a) ? MPE_MOVE_DIMS : 0) + (mpe_silent(a) ? 0 : MPE_DIM_C);
#else
    return (mpe_movable(a) ? MPE_MOVE_DIMS : 1) * (mpe_silent(a) ? 1 : MPE_DIM_C);
#endif
}

#if CONTINUOUS_ACTIONS
FV_FN float mpe_clip01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }
#endif

/* simple_env.py's _set_action for agent a from its action values `act`. */
FV_FN void mpe_decode(int a, const ACT_T* act, MpeAction* out) {
    out->u[0] = out->u[1] = 0.0;
    for (int k = 0; k < MPE_C_ALLOC; k++) out->c[k] = 0.0;
#if CONTINUOUS_ACTIONS
    int off = 0;
    if (mpe_movable(a)) {
        /* The differences are float32's (the actions' dtype), then added to float64 zeros. */
        float dx = mpe_clip01(act[2]) - mpe_clip01(act[1]), dy = mpe_clip01(act[4]) - mpe_clip01(act[3]);
        out->u[0] += (double)dx;
        out->u[1] += (double)dy;
        off = MPE_MOVE_DIMS;
    }
    if (!mpe_silent(a))
        for (int k = 0; k < MPE_DIM_C; k++) out->c[k] = (double)mpe_clip01(act[off + k]);
#else
    long long v = act[0];
    if (mpe_movable(a)) {
        long long move = v % MPE_MOVE_DIMS;
        v /= MPE_MOVE_DIMS;
        /* From tables (no-op, left, right, down, up), not a branch per move: the moves differ from env to env. */
#ifdef __CUDACC__
        if (move == 1) out->u[0] = -1.0;
        if (move == 2) out->u[0] = +1.0;
        if (move == 3) out->u[1] = -1.0;
        if (move == 4) out->u[1] = +1.0;
#else
        static const double move_x[MPE_MOVE_DIMS] = {0.0, -1.0, +1.0, 0.0, 0.0};
        static const double move_y[MPE_MOVE_DIMS] = {0.0, 0.0, 0.0, -1.0, +1.0};
        out->u[0] = move_x[move];
        out->u[1] = move_y[move];
#endif
    }
    if (!mpe_silent(a) && v >= 0 && v < MPE_DIM_C) out->c[v] = 1.0;
#endif
    if (mpe_movable(a)) {
        double sensitivity = mpe_accel(a);
        out->u[0] *= sensitivity;
        out->u[1] *= sensitivity;
    }
}

/* NumPy's logaddexp(0, y) (npy_logaddexp: the C library's exp and log1p, glibc's here). Below y = -746, exp(y)
 * is +0 (under half the least subnormal) and log1p(+0) is +0: the result, 0 + +0, is taken without calling them,
 * which spares most pairs of entities (apart by more than 746 contact margins) the two functions. */
FV_FN double mpe_softplus(double y) {
    if (0.0 == y) return 0.0 + 0.693147180559945309417232121458176568;
    double tmp = 0.0 - y;
    if (tmp > 746.0) return 0.0;
    if (tmp > 0.0) return 0.0 + fv_log1p(fv_exp(-tmp));
    if (tmp <= 0.0) return y + fv_log1p(fv_exp(tmp));
    return tmp;
}

/* simple_tag's and simple_world_comm's bound(x) for x = |coordinate|: the penalty for leaving the screen. */
FV_FN double mpe_offscreen_penalty(double x) {
    if (x < 0.9) return 0.0;
    if (x < 1.0) return (x - 0.9) * 10;
    double e = fv_exp(2 * x - 2); /* np.exp: glibc's, or NumPy's own SIMD exp on AVX-512 CPUs */
    return 10 < e ? 10.0 : e;
}

/* |p - q| as mpe2 writes it: np.sqrt(np.sum(np.square(p - q))). */
FV_FN double mpe_dist(const double* p, const double* q) {
    double d0 = p[0] - q[0], d1 = p[1] - q[1];
    return sqrt(d0 * d0 + d1 * d1);
}

/* The scenarios' is_collision(e, f): the entities' discs overlap. */
FV_FN int mpe_overlap(const MpeWorld* w, int e, int f) {
    return mpe_dist(w->pos[e], w->pos[f]) < mpe_size(e) + mpe_size(f);
}

/* core.py's World.step after the actions are set: forces, integration, utterances. */
FV_FN void mpe_world_step(MpeWorld* w, const MpeAction* act) {
    double force[MPE_ENTITIES][MPE_DIM_P];
    int has[MPE_ENTITIES];
    for (int e = 0; e < MPE_ENTITIES; e++) has[e] = 0, force[e][0] = force[e][1] = 0.0;
    /* apply_action_force: the control plus a noise of 0.0 */
    for (int a = 0; a < MPE_AGENTS; a++) {
        if (!mpe_movable(a)) continue;
        force[a][0] = act[a].u[0] + 0.0;
        force[a][1] = act[a].u[1] + 0.0;
        has[a] = 1;
    }
    /* apply_environment_force: each pair once, a softplus penetration along the centres' line */
    for (int a = 0; a < MPE_ENTITIES; a++) {
        for (int b = a + 1; b < MPE_ENTITIES; b++) {
            if (!mpe_collide(a) || !mpe_collide(b)) continue;
            int move_a = mpe_movable(a), move_b = mpe_movable(b);
            if (!move_a && !move_b) continue; /* forces on nothing */
            double delta[2] = {w->pos[a][0] - w->pos[b][0], w->pos[a][1] - w->pos[b][1]};
            double dist = sqrt(delta[0] * delta[0] + delta[1] * delta[1]);
            double dist_min = mpe_size(a) + mpe_size(b);
            double penetration = mpe_softplus(-(dist - dist_min) / MPE_CONTACT_MARGIN) * MPE_CONTACT_MARGIN;
            for (int k = 0; k < MPE_DIM_P; k++) {
                double f = MPE_CONTACT_FORCE * delta[k] / dist * penetration;
                if (move_a) force[a][k] = f + (has[a] ? force[a][k] : 0.0);
                if (move_b) force[b][k] = -f + (has[b] ? force[b][k] : 0.0);
            }
            has[a] |= move_a;
            has[b] |= move_b;
        }
    }
    /* integrate_state */
    for (int e = 0; e < MPE_ENTITIES; e++) {
        if (!mpe_movable(e)) continue;
        for (int k = 0; k < MPE_DIM_P; k++) {
            w->pos[e][k] = w->pos[e][k] + w->vel[e][k] * MPE_DT;
            w->vel[e][k] = w->vel[e][k] * (1 - MPE_DAMPING);
            if (has[e]) w->vel[e][k] = w->vel[e][k] + (force[e][k] / 1.0) * MPE_DT; /* mass 1 */
        }
        double max_speed = e < MPE_AGENTS ? mpe_max_speed(e) : 0.0;
        if (max_speed > 0.0) {
            double speed = sqrt(w->vel[e][0] * w->vel[e][0] + w->vel[e][1] * w->vel[e][1]);
            if (speed > max_speed) {
                double norm = sqrt(w->vel[e][0] * w->vel[e][0] + w->vel[e][1] * w->vel[e][1]);
                w->vel[e][0] = w->vel[e][0] / norm * max_speed;
                w->vel[e][1] = w->vel[e][1] / norm * max_speed;
            }
        }
    }
    /* update_agent_state: the utterance, plus a noise of 0.0 */
    for (int a = 0; a < MPE_AGENTS; a++)
        for (int k = 0; k < MPE_DIM_C; k++) w->comm[a][k] = mpe_silent(a) ? 0.0 : act[a].c[k] + 0.0;
}

/* Decode every agent's action and step the world. */
FV_FN void mpe_act(MpeWorld* w, const ACT_T* actions) {
    MpeAction act[MPE_AGENTS];
    for (int a = 0; a < MPE_AGENTS; a++) mpe_decode(a, actions + a * ACTION_DIMS, &act[a]);
    mpe_world_step(w, act);
}

/* np_random.uniform(lo, hi) for one coordinate: lo + (hi - lo) * u. */
FV_FN double mpe_uniform(fv_rng* rng, double lo, double hi) { return lo + (hi - lo) * fv_rand_double(rng); }

/* A reset's world: agents at rest in [-1, 1)^2 with silent utterances; landmarks as `lm_range` says. */
FV_FN void mpe_reset_world(MpeWorld* w, fv_rng* rng, double lm_range) {
    for (int e = 0; e < MPE_ENTITIES; e++) {
        double r = e < MPE_AGENTS ? 1.0 : lm_range;
        w->pos[e][0] = mpe_uniform(rng, -r, r);
        w->pos[e][1] = mpe_uniform(rng, -r, r);
        w->vel[e][0] = w->vel[e][1] = 0.0;
    }
    for (int a = 0; a < MPE_AGENTS; a++)
        for (int k = 0; k < MPE_C_ALLOC; k++) w->comm[a][k] = 0.0;
}

/* An observation under construction: values appended as float64, stored as float32, zeros after. */
typedef struct {
    float* o;
    int n;
} MpeObs;
FV_FN void mpe_put(MpeObs* ob, double v) { ob->o[ob->n++] = (float)v; }
FV_FN void mpe_put_rel(MpeObs* ob, const double* p, const double* origin) {
    mpe_put(ob, p[0] - origin[0]);
    mpe_put(ob, p[1] - origin[1]);
}
FV_FN void mpe_put2(MpeObs* ob, const double* v) {
    mpe_put(ob, v[0]);
    mpe_put(ob, v[1]);
}
FV_FN void mpe_pad(MpeObs* ob) {
    while (ob->n < OBS_SIZE) ob->o[ob->n++] = 0.0f;
}

/* State access: per agent pos (2), vel (2), utterance (dim_c); per landmark pos (2); the scenario's extras. */
FV_FN void mpe_get_world(const MpeWorld* w, double* out) {
    int k = 0;
    for (int a = 0; a < MPE_AGENTS; a++) {
        out[k++] = w->pos[a][0], out[k++] = w->pos[a][1];
        out[k++] = w->vel[a][0], out[k++] = w->vel[a][1];
        for (int c = 0; c < MPE_DIM_C; c++) out[k++] = w->comm[a][c];
    }
    for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) out[k++] = w->pos[l][0], out[k++] = w->pos[l][1];
}
FV_FN void mpe_set_world(MpeWorld* w, const double* in) {
    int k = 0;
    for (int a = 0; a < MPE_AGENTS; a++) {
        w->pos[a][0] = in[k++], w->pos[a][1] = in[k++];
        w->vel[a][0] = in[k++], w->vel[a][1] = in[k++];
        for (int c = 0; c < MPE_DIM_C; c++) w->comm[a][c] = in[k++];
    }
    for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) {
        w->pos[l][0] = in[k++], w->pos[l][1] = in[k++];
        w->vel[l][0] = w->vel[l][1] = 0.0;
    }
}
#define MPE_WORLD_VALUES (MPE_AGENTS * (4 + MPE_DIM_C) + 2 * MPE_LANDMARKS)

/* Top-down frame of the square [-1.5, 1.5]^2 (y up): white, each entity a disc of its size in colors[e]. */
FV_FN void mpe_render_world(const MpeWorld* w, const unsigned char (*colors)[3], unsigned char* rgb) {
    const double half = 1.5, scale = RENDER_W / (2.0 * half);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 255, 255, 255);
    for (int e = MPE_ENTITIES - 1; e >= 0; e--) { /* agents drawn last, over the landmarks */
        double cx = (w->pos[e][0] + half) * scale, cy = (half - w->pos[e][1]) * scale, r = mpe_size(e) * scale;
        int x0 = (int)(cx - r), x1 = (int)(cx + r) + 1, y0 = (int)(cy - r), y1 = (int)(cy + r) + 1;
        for (int y = y0 < 0 ? 0 : y0; y < (y1 > RENDER_H ? RENDER_H : y1); y++) {
            for (int x = x0 < 0 ? 0 : x0; x < (x1 > RENDER_W ? RENDER_W : x1); x++) {
                double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
                if (dx * dx + dy * dy > r * r) continue;
                unsigned char* p = rgb + 3 * (y * RENDER_W + x);
                p[0] = colors[e][0], p[1] = colors[e][1], p[2] = colors[e][2];
            }
        }
    }
}

#endif /* FASTVEC_MPE_COMMON_H */
