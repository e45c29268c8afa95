/* mpe_spread.h: MPE's simple_spread (mpe2's simple_spread_v3), bit for bit: N agents cover N landmarks.
 * Agents agent_0..agent_{N-1} (size 0.15, colliding, silent); landmarks don't collide.
 * Observation (6N float32): own velocity, own position, every landmark's position relative to it, every other
 * agent's relative position, every other agent's utterance (2 zeros each: all are silent).
 * Reward of each agent: global * (1 - local_ratio) + local * local_ratio, where global is minus the sum over
 * landmarks of the nearest agent's distance and local is -1 per other agent it overlaps.
 * Actions: Discrete(5) (no-op, left, right, down, up) or, with CONTINUOUS_ACTIONS, Box(0, 1, (5,)).
 * Parameters: N (agents and landmarks), LOCAL_RATIO_MILLI (local_ratio in thousandths), CONTINUOUS_ACTIONS.
 */
#ifndef N
#define N 3
#endif
#ifndef LOCAL_RATIO_MILLI
#define LOCAL_RATIO_MILLI 500
#endif

#define MPE_AGENTS N
#define MPE_LANDMARKS N
#define MPE_DIM_C 2
#define MPE_EXTRA_STATE 0
#define OBS_SIZE (6 * N)
#define MPE_NUM_ACTIONS 5
#define MPE_BOX_DIMS 5
#define MPE_BOX_HIGH {1, 1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { return e < N ? 0.15 : 0.05; }
FV_FN int mpe_collide(int e) { return e < N; }
FV_FN int mpe_movable(int e) { return e < N; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
} State;

FV_FN int env_agent_obs_size(int a) { (void)a; return OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

FV_FN void spread_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < N; a++) {
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        mpe_put2(&ob, w->vel[a]);
        mpe_put2(&ob, w->pos[a]);
        for (int l = N; l < 2 * N; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        for (int o = 0; o < N; o++)
            if (o != a) mpe_put_rel(&ob, w->pos[o], w->pos[a]);
        for (int o = 0; o < N; o++)
            if (o != a) mpe_put(&ob, w->comm[o][0]), mpe_put(&ob, w->comm[o][1]);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    mpe_reset_world(&s->w, rng, 1.0);
    spread_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    double global = 0.0;
    for (int l = N; l < 2 * N; l++) {
        double nearest = mpe_dist(w->pos[0], w->pos[l]);
        for (int a = 1; a < N; a++) {
            double d = mpe_dist(w->pos[a], w->pos[l]);
            nearest = d < nearest ? d : nearest;
        }
        global -= nearest;
    }
    const double ratio = LOCAL_RATIO_MILLI / 1000.0;
    for (int a = 0; a < N; a++) {
        double local = 0.0;
        for (int o = 0; o < N; o++) local -= 1.0 * (o != a && mpe_overlap(w, o, a));
        rewards[a] = (float)(global * (1 - ratio) + local * ratio);
    }
    spread_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) { mpe_get_world(&s->w, out); }
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    spread_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[2 * N][3];
    for (int e = 0; e < 2 * N; e++) {
        colors[e][0] = e < N ? 70 : 50, colors[e][1] = e < N ? 70 : 50, colors[e][2] = e < N ? 170 : 50;
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
