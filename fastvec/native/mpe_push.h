/* mpe_push.h: MPE's simple_push (mpe2's simple_push_v3), bit for bit: a good agent reaches the goal landmark
 * (which it knows) while an adversary (which does not) pushes it away.
 * Agents: adversary_0, agent_0 (size 0.05, colliding, silent); 2 landmarks (not colliding).
 * Observation: the good agent's is its velocity, the goal's position relative to it, its colour, the
 * landmarks' relative positions and colours, the adversary's relative position (19); the adversary's is its
 * velocity, the landmarks' and the good agent's relative positions (8, then zeros).
 * Reward: the good agent's is minus its distance to the goal; the adversary's is the good agent's distance
 * to the goal minus its own.
 * Actions: Discrete(5) or, with CONTINUOUS_ACTIONS, Box(0, 1, (5,)).
 * Parameters: CONTINUOUS_ACTIONS. State access ends with the goal's index.
 */
#define MPE_AGENTS 2
#define MPE_LANDMARKS 2
#define MPE_DIM_C 2
#define MPE_EXTRA_STATE 1
#define OBS_SIZE 19
#define MPE_NUM_ACTIONS 5
#define MPE_BOX_DIMS 5
#define MPE_BOX_HIGH {1, 1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { (void)e; return 0.05; }
FV_FN int mpe_collide(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_movable(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
    int goal; /* the goal landmark, 0 or 1 */
} State;

FV_FN int env_agent_obs_size(int a) { return a == 0 ? 8 : OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

/* reset_world's colours: landmark i is 0.1 with 0.8 added to channel i + 1; the good agent 0.25 with 0.5
 * added to the goal's channel. */
FV_FN double push_landmark_color(int l, int k) { return k == l + 1 ? 0.1 + 0.8 : 0.1; }
FV_FN double push_agent_color(int goal, int k) { return k == goal + 1 ? 0.25 + 0.5 : 0.25; }

FV_FN void push_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < MPE_AGENTS; a++) {
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        mpe_put2(&ob, w->vel[a]);
        if (a == 1) {
            mpe_put_rel(&ob, w->pos[MPE_AGENTS + s->goal], w->pos[a]);
            for (int k = 0; k < 3; k++) mpe_put(&ob, push_agent_color(s->goal, k));
        }
        for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        if (a == 1)
            for (int l = 0; l < MPE_LANDMARKS; l++)
                for (int k = 0; k < 3; k++) mpe_put(&ob, push_landmark_color(l, k));
        mpe_put_rel(&ob, w->pos[1 - a], w->pos[a]);
        mpe_pad(&ob);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->goal = fv_rand_int(rng, MPE_LANDMARKS);
    mpe_reset_world(&s->w, rng, 1.0);
    push_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    const double* goal = w->pos[MPE_AGENTS + s->goal];
    double good_dist = mpe_dist(w->pos[1], goal);
    rewards[0] = (float)(good_dist - mpe_dist(goal, w->pos[0]));
    rewards[1] = (float)(-good_dist);
    push_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) {
    mpe_get_world(&s->w, out);
    out[MPE_WORLD_VALUES] = s->goal;
}
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    s->goal = in[MPE_WORLD_VALUES] >= 1.0;
    push_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int k = 0; k < 3; k++) {
        colors[0][k] = (unsigned char)((k == 0 ? 0.75 : 0.25) * 200);
        colors[1][k] = (unsigned char)(push_agent_color(s->goal, k) * 200);
        for (int l = 0; l < MPE_LANDMARKS; l++)
            colors[MPE_AGENTS + l][k] = (unsigned char)(push_landmark_color(l, k) * 200);
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
