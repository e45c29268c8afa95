/* mpe_adversary.h: MPE's simple_adversary (mpe2's simple_adversary_v3), bit for bit: N good agents know which
 * of N landmarks is the goal, one adversary does not; nothing collides.
 * Agents: adversary_0, then agent_0..agent_{N-1} (size 0.15, silent). Landmarks size 0.08.
 * Observation: a good agent's is the goal's position relative to it, then every landmark's and every other
 * agent's (2 + 4N); the adversary's lacks the goal (4N, then 2 zeros).
 * Reward: the adversary's is minus its distance to the goal; a good agent's is the adversary's distance to the
 * goal minus the nearest good agent's.
 * Actions: Discrete(5) or, with CONTINUOUS_ACTIONS, Box(0, 1, (5,)).
 * Parameters: N (good agents and landmarks), CONTINUOUS_ACTIONS. State access ends with the goal's index.
 */
#ifndef N
#define N 2
#endif

#define MPE_AGENTS (N + 1)
#define MPE_LANDMARKS N
#define MPE_DIM_C 2
#define MPE_EXTRA_STATE 1
#define OBS_SIZE (2 + 4 * N)
#define MPE_NUM_ACTIONS 5
#define MPE_BOX_DIMS 5
#define MPE_BOX_HIGH {1, 1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { return e < MPE_AGENTS ? 0.15 : 0.08; }
FV_FN int mpe_collide(int e) { (void)e; return 0; }
FV_FN int mpe_movable(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
    int goal; /* the goal landmark, 0..N-1 */
} State;

FV_FN int env_agent_obs_size(int a) { return a == 0 ? 4 * N : OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

FV_FN void adversary_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < MPE_AGENTS; a++) {
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        if (a > 0) mpe_put_rel(&ob, w->pos[MPE_AGENTS + s->goal], w->pos[a]);
        for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        for (int o = 0; o < MPE_AGENTS; o++)
            if (o != a) mpe_put_rel(&ob, w->pos[o], w->pos[a]);
        mpe_pad(&ob);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->goal = fv_rand_int(rng, N);
    mpe_reset_world(&s->w, rng, 1.0);
    adversary_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    const double* goal = w->pos[MPE_AGENTS + s->goal];
    double adv_dist = mpe_dist(w->pos[0], goal);
    double nearest = mpe_dist(w->pos[1], goal);
    for (int a = 2; a < MPE_AGENTS; a++) {
        double d = mpe_dist(w->pos[a], goal);
        nearest = d < nearest ? d : nearest;
    }
    rewards[0] = (float)(-adv_dist);
    double good = -nearest + (0 + adv_dist); /* pos_rew + adv_rew, the latter a sum from 0 */
    for (int a = 1; a < MPE_AGENTS; a++) rewards[a] = (float)good;
    adversary_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) {
    mpe_get_world(&s->w, out);
    out[MPE_WORLD_VALUES] = s->goal;
}
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    int goal = (int)in[MPE_WORLD_VALUES];
    s->goal = goal < 0 ? 0 : goal >= N ? N - 1 : goal;
    adversary_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int e = 0; e < MPE_ENTITIES; e++) {
        int goal = e == MPE_AGENTS + s->goal;
        colors[e][0] = e == 0 ? 170 : e < MPE_AGENTS ? 70 : 30;
        colors[e][1] = e == 0 ? 70 : e < MPE_AGENTS ? 70 : goal ? 130 : 30;
        colors[e][2] = e == 0 ? 70 : e < MPE_AGENTS ? 170 : 30;
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
