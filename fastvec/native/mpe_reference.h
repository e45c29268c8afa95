/* mpe_reference.h: MPE's simple_reference (mpe2's simple_reference_v3), bit for bit: two agents each know
 * the landmark the OTHER should reach, and both move and speak (10 words). Nothing collides.
 * Agents: agent_0, agent_1 (size 0.05). Observation (21): its velocity, the 3 landmarks' positions relative
 * to it, the colour of its goal for the other, the other's utterance (10).
 * Reward of each: global * (1 - local_ratio) + own * local_ratio, where own is minus the other's distance to
 * the landmark this agent knows and global the mean of the two.
 * Actions: Discrete(50) (move + 5 * word) or, with CONTINUOUS_ACTIONS, Box(0, 1, (15,)) (5 moves, 10 words).
 * Parameters: LOCAL_RATIO_MILLI (local_ratio in thousandths), CONTINUOUS_ACTIONS. State access ends with
 * each agent's goal landmark index.
 */
#ifndef LOCAL_RATIO_MILLI
#define LOCAL_RATIO_MILLI 500
#endif

#define MPE_AGENTS 2
#define MPE_LANDMARKS 3
#define MPE_DIM_C 10
#define MPE_EXTRA_STATE 2
#define OBS_SIZE 21
#define MPE_NUM_ACTIONS 50
#define MPE_BOX_DIMS 15
#define MPE_BOX_HIGH {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { (void)e; return 0.05; }
FV_FN int mpe_collide(int e) { (void)e; return 0; }
FV_FN int mpe_movable(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_silent(int a) { (void)a; return 0; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
    int goal[MPE_AGENTS]; /* goal[a]: the landmark agent a knows the other should reach */
} State;

FV_FN int env_agent_obs_size(int a) { (void)a; return OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

/* Landmark l's colour: 0.25 with 0.75 in channel l. */
FV_FN double ref_color(int l, int k) { return k == l ? 0.75 : 0.25; }

FV_FN void ref_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < MPE_AGENTS; a++) {
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        mpe_put2(&ob, w->vel[a]);
        for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        for (int k = 0; k < 3; k++) mpe_put(&ob, ref_color(s->goal[a], k));
        for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&ob, w->comm[1 - a][k]);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->goal[0] = fv_rand_int(rng, MPE_LANDMARKS);
    s->goal[1] = fv_rand_int(rng, MPE_LANDMARKS);
    mpe_reset_world(&s->w, rng, 1.0);
    ref_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    double own[MPE_AGENTS];
    for (int a = 0; a < MPE_AGENTS; a++) own[a] = -mpe_dist(w->pos[1 - a], w->pos[MPE_AGENTS + s->goal[a]]);
    double global = (0 + own[0] + own[1]) / MPE_AGENTS;
    const double ratio = LOCAL_RATIO_MILLI / 1000.0;
    for (int a = 0; a < MPE_AGENTS; a++) rewards[a] = (float)(global * (1 - ratio) + own[a] * ratio);
    ref_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) {
    mpe_get_world(&s->w, out);
    for (int a = 0; a < MPE_AGENTS; a++) out[MPE_WORLD_VALUES + a] = s->goal[a];
}
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    for (int a = 0; a < MPE_AGENTS; a++) {
        int goal = (int)in[MPE_WORLD_VALUES + a];
        s->goal[a] = goal < 0 ? 0 : goal > 2 ? 2 : goal;
    }
    ref_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int k = 0; k < 3; k++) {
        for (int a = 0; a < MPE_AGENTS; a++) colors[a][k] = (unsigned char)(ref_color(s->goal[1 - a], k) * 200);
        for (int l = 0; l < MPE_LANDMARKS; l++) colors[MPE_AGENTS + l][k] = (unsigned char)(ref_color(l, k) * 200);
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
