/* mpe_tag.h: MPE's simple_tag (mpe2's simple_tag_v3), bit for bit: predators chase prey among obstacles.
 * Agents: adversary_0..adversary_{NUM_ADVERSARIES-1} (size 0.075, accel 3, max speed 1), then
 * agent_0..agent_{NUM_GOOD-1} (size 0.05, accel 4, max speed 1.3), all colliding and silent; NUM_OBSTACLES
 * landmarks (size 0.2, colliding, fixed) placed in [-0.9, 0.9)^2.
 * Observation: own velocity, own position, the landmarks' and the other agents' positions relative to it,
 * the other prey's velocities (an adversary's is 2 longer than a prey's; the prey's ends in 2 zeros).
 * Reward: +10 to every adversary per (prey, adversary) pair in contact; a prey -10 per adversary touching it
 * and, per coordinate, -0 inside 0.9, -(|x| - 0.9) * 10 up to 1, -min(exp(2|x| - 2), 10) beyond.
 * Actions: Discrete(5) or, with CONTINUOUS_ACTIONS, Box(0, 1, (5,)).
 * Parameters: NUM_GOOD, NUM_ADVERSARIES, NUM_OBSTACLES, CONTINUOUS_ACTIONS.
 */
#ifndef NUM_GOOD
#define NUM_GOOD 1
#endif
#ifndef NUM_ADVERSARIES
#define NUM_ADVERSARIES 3
#endif
#ifndef NUM_OBSTACLES
#define NUM_OBSTACLES 2
#endif

#define MPE_AGENTS (NUM_ADVERSARIES + NUM_GOOD)
#define MPE_LANDMARKS NUM_OBSTACLES
#define MPE_DIM_C 2
#define MPE_EXTRA_STATE 0
#define OBS_SIZE (4 + 2 * MPE_LANDMARKS + 2 * (MPE_AGENTS - 1) + 2 * NUM_GOOD)
#define MPE_NUM_ACTIONS 5
#define MPE_BOX_DIMS 5
#define MPE_BOX_HIGH {1, 1, 1, 1, 1}
#include "fastvec.h"

#define TAG_ADVERSARY(a) ((a) < NUM_ADVERSARIES)
FV_FN double mpe_size(int e) { return e < NUM_ADVERSARIES ? 0.075 : e < MPE_AGENTS ? 0.05 : 0.2; }
FV_FN int mpe_collide(int e) { (void)e; return 1; }
FV_FN int mpe_movable(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { return TAG_ADVERSARY(a) ? 3.0 : 4.0; }
FV_FN double mpe_max_speed(int a) { return TAG_ADVERSARY(a) ? 1.0 : 1.3; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
} State;

FV_FN int env_agent_obs_size(int a) { return OBS_SIZE - (TAG_ADVERSARY(a) ? 0 : 2); }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

FV_FN void tag_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < MPE_AGENTS; a++) {
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        mpe_put2(&ob, w->vel[a]);
        mpe_put2(&ob, w->pos[a]);
        for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        for (int o = 0; o < MPE_AGENTS; o++)
            if (o != a) mpe_put_rel(&ob, w->pos[o], w->pos[a]);
        for (int o = NUM_ADVERSARIES; o < MPE_AGENTS; o++)
            if (o != a) mpe_put2(&ob, w->vel[o]);
        mpe_pad(&ob);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    mpe_reset_world(&s->w, rng, 0.9);
    tag_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    double caught = 0.0; /* every adversary's reward: +10 per (prey, adversary) pair in contact */
    for (int g = NUM_ADVERSARIES; g < MPE_AGENTS; g++)
        for (int v = 0; v < NUM_ADVERSARIES; v++)
            if (mpe_overlap(w, g, v)) caught += 10;
    for (int a = 0; a < MPE_AGENTS; a++) {
        if (TAG_ADVERSARY(a)) {
            rewards[a] = (float)caught;
            continue;
        }
        double rew = 0.0;
        for (int v = 0; v < NUM_ADVERSARIES; v++)
            if (mpe_overlap(w, v, a)) rew -= 10;
        for (int p = 0; p < MPE_DIM_P; p++) rew -= mpe_offscreen_penalty(fabs(w->pos[a][p]));
        rewards[a] = (float)rew;
    }
    tag_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) { mpe_get_world(&s->w, out); }
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    tag_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int e = 0; e < MPE_ENTITIES; e++) {
        int adv = e < NUM_ADVERSARIES, good = !adv && e < MPE_AGENTS;
        colors[e][0] = adv ? 170 : good ? 70 : 50, colors[e][1] = good ? 170 : adv ? 70 : 50, colors[e][2] = 70;
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
