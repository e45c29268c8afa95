/* mpe_speaker_listener.h: MPE's simple_speaker_listener (mpe2's simple_speaker_listener_v4), bit for bit: a
 * speaker that cannot move sees the goal landmark's colour and says one of 3 words; a listener that cannot
 * speak hears it and moves. Nothing collides.
 * Agents: speaker_0 (fixed, speaks, observation: the goal's colour, 3), listener_0 (moves, silent,
 * observation: its velocity, the 3 landmarks' positions relative to it, the speaker's utterance: 11).
 * Reward (both): minus the listener's squared distance to the goal.
 * Actions: the speaker Discrete(3) (a word), the listener Discrete(5) (a move); with CONTINUOUS_ACTIONS,
 * Box(0, 1, (3,)) and Box(0, 1, (5,)). fastvec's space is the larger, Discrete(5) or Box(0, 1, (5,)): the
 * speaker's words 3 and 4 say nothing, its values past 3 are ignored.
 * Parameters: CONTINUOUS_ACTIONS. State access ends with the goal's index.
 */
#define MPE_AGENTS 2
#define MPE_LANDMARKS 3
#define MPE_DIM_C 3
#define MPE_EXTRA_STATE 1
#define OBS_SIZE 11
#define MPE_NUM_ACTIONS 5
#define MPE_BOX_DIMS 5
#define MPE_BOX_HIGH {1, 1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { return e < MPE_AGENTS ? 0.075 : 0.04; }
FV_FN int mpe_collide(int e) { (void)e; return 0; }
FV_FN int mpe_movable(int e) { return e == 1; }
FV_FN int mpe_silent(int a) { return a == 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
    int goal; /* the landmark the listener should reach, 0..2 */
} State;

FV_FN int env_agent_obs_size(int a) { return a == 0 ? 3 : OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

/* Landmark l's colour: 0.15 with 0.65 in channel l. */
FV_FN double sl_color(int l, int k) { return k == l ? 0.65 : 0.15; }

FV_FN void sl_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    MpeObs speaker = {obs, 0}, listener = {obs + OBS_SIZE, 0};
    for (int k = 0; k < 3; k++) mpe_put(&speaker, sl_color(s->goal, k));
    mpe_pad(&speaker);
    mpe_put2(&listener, w->vel[1]);
    for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&listener, w->pos[l], w->pos[1]);
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&listener, w->comm[0][k]);
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->goal = fv_rand_int(rng, MPE_LANDMARKS);
    mpe_reset_world(&s->w, rng, 1.0);
    sl_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    const double* goal = w->pos[MPE_AGENTS + s->goal];
    double d0 = w->pos[1][0] - goal[0], d1 = w->pos[1][1] - goal[1];
    float reward = (float)(-(d0 * d0 + d1 * d1));
    rewards[0] = rewards[1] = reward;
    sl_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) {
    mpe_get_world(&s->w, out);
    out[MPE_WORLD_VALUES] = s->goal;
}
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    int goal = (int)in[MPE_WORLD_VALUES];
    s->goal = goal < 0 ? 0 : goal > 2 ? 2 : goal;
    sl_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int k = 0; k < 3; k++) {
        colors[0][k] = 50;
        colors[1][k] = (unsigned char)((sl_color(s->goal, k) + 0.45) * 200); /* the listener: its goal's, lighter */
        for (int l = 0; l < MPE_LANDMARKS; l++) colors[MPE_AGENTS + l][k] = (unsigned char)(sl_color(l, k) * 200);
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
