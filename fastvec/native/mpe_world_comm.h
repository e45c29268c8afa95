/* mpe_world_comm.h: MPE's simple_world_comm (mpe2's simple_world_comm_v3), bit for bit: predators led by a
 * leader who speaks chase prey that eat food and hide in forests.
 * Agents: leadadversary_0 (moves and speaks 4 words), adversary_0..adversary_{NUM_ADVERSARIES-2}, then
 * agent_0..agent_{NUM_GOOD-1}; adversaries size 0.075, accel 3, max speed 1; prey 0.045, 4, 1.3; all collide.
 * Landmarks: NUM_OBSTACLES obstacles (size 0.2, colliding), NUM_FOOD food (0.03), NUM_FORESTS forests (0.3),
 * all fixed, placed in [-0.9, 0.9)^2.
 * Observation: own velocity and position, every landmark's position relative to it, the other agents'
 * relative positions and (prey only) velocities, hidden as zeros when forests part them (an agent in a forest
 * sees those in the same forest; one in none sees those in none; the leader sees all), +1/-1 per forest
 * for being in it, and for adversaries the leader's utterance. Adversaries' (34 by default): velocity,
 * position, landmarks, others, prey velocities, forests, utterance; prey's (28): velocity, position,
 * landmarks, others, forests, prey velocities.
 * Reward: an adversary's is -0.1 times the nearest prey's distance, +5 per (prey, adversary) pair in
 * contact; a prey's is -5 per adversary touching it, -2 x simple_tag's bound per coordinate, +2 per food it
 * touches, -0.05 times the nearest food's distance.
 * Actions: the leader Discrete(20) (move + 5 * word), the others Discrete(5); with CONTINUOUS_ACTIONS,
 * Box(0, 1, (9,)) and Box(0, 1, (5,)) (fastvec's spaces are the leader's; the others' extra values are ignored).
 * Parameters: NUM_GOOD, NUM_ADVERSARIES, NUM_OBSTACLES, NUM_FOOD, NUM_FORESTS, CONTINUOUS_ACTIONS.
 */
#ifndef NUM_GOOD
#define NUM_GOOD 2
#endif
#ifndef NUM_ADVERSARIES
#define NUM_ADVERSARIES 4
#endif
#ifndef NUM_OBSTACLES
#define NUM_OBSTACLES 1
#endif
#ifndef NUM_FOOD
#define NUM_FOOD 2
#endif
#ifndef NUM_FORESTS
#define NUM_FORESTS 2
#endif

#define MPE_AGENTS (NUM_ADVERSARIES + NUM_GOOD)
#define MPE_LANDMARKS (NUM_OBSTACLES + NUM_FOOD + NUM_FORESTS)
#define MPE_DIM_C 4
#define MPE_EXTRA_STATE 0
#define WC_BASE_OBS (4 + 2 * MPE_LANDMARKS + 2 * (MPE_AGENTS - 1) + NUM_FORESTS)
#define OBS_SIZE (WC_BASE_OBS + 2 * NUM_GOOD + MPE_DIM_C)
#define MPE_NUM_ACTIONS (5 * MPE_DIM_C)
#define MPE_BOX_DIMS (5 + MPE_DIM_C)
#define MPE_BOX_HIGH {1, 1, 1, 1, 1, 1, 1, 1, 1}
#include "fastvec.h"

#define WC_ADVERSARY(a) ((a) < NUM_ADVERSARIES)
#define WC_FOOD0 (MPE_AGENTS + NUM_OBSTACLES) /* entity index of the first food */
#define WC_FOREST0 (WC_FOOD0 + NUM_FOOD)      /* and of the first forest */
FV_FN double mpe_size(int e) {
    return e < NUM_ADVERSARIES ? 0.075 : e < MPE_AGENTS ? 0.045 : e < WC_FOOD0 ? 0.2 : e < WC_FOREST0 ? 0.03 : 0.3;
}
FV_FN int mpe_collide(int e) { return e < WC_FOOD0; }
FV_FN int mpe_movable(int e) { return e < MPE_AGENTS; }
FV_FN int mpe_silent(int a) { return a > 0; }
FV_FN double mpe_accel(int a) { return WC_ADVERSARY(a) ? 3.0 : 4.0; }
FV_FN double mpe_max_speed(int a) { return WC_ADVERSARY(a) ? 1.0 : 1.3; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
} State;

FV_FN int env_agent_obs_size(int a) { return WC_ADVERSARY(a) ? OBS_SIZE : WC_BASE_OBS + 2 * (NUM_GOOD - 1); }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

FV_FN void wc_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    for (int a = 0; a < MPE_AGENTS; a++) {
        int in_forest[NUM_FORESTS > 0 ? NUM_FORESTS : 1], any_in = 0;
        for (int f = 0; f < NUM_FORESTS; f++) any_in |= in_forest[f] = mpe_overlap(w, a, WC_FOREST0 + f);
        /* the other agents as a sees them: visible, or zeros */
        double other_pos[MPE_AGENTS][2], other_vel[MPE_AGENTS][2];
        int num_vel = 0;
        for (int o = 0, k = 0; o < MPE_AGENTS; o++) {
            if (o == a) continue;
            int shared = 0, other_in = 0; /* in a forest with a; in any forest */
            for (int f = 0; f < NUM_FORESTS; f++) {
                int in_f = mpe_overlap(w, o, WC_FOREST0 + f);
                other_in |= in_f;
                shared |= in_forest[f] & in_f;
            }
            int visible = shared || (!any_in && !other_in) || a == 0;
            other_pos[k][0] = visible ? w->pos[o][0] - w->pos[a][0] : 0.0;
            other_pos[k][1] = visible ? w->pos[o][1] - w->pos[a][1] : 0.0;
            k++;
            if (!WC_ADVERSARY(o)) {
                other_vel[num_vel][0] = visible ? w->vel[o][0] : 0.0;
                other_vel[num_vel][1] = visible ? w->vel[o][1] : 0.0;
                num_vel++;
            }
        }
        MpeObs ob = {obs + a * OBS_SIZE, 0};
        mpe_put2(&ob, w->vel[a]);
        mpe_put2(&ob, w->pos[a]);
        for (int l = MPE_AGENTS; l < MPE_ENTITIES; l++) mpe_put_rel(&ob, w->pos[l], w->pos[a]);
        for (int k = 0; k < MPE_AGENTS - 1; k++) mpe_put2(&ob, other_pos[k]);
        if (WC_ADVERSARY(a)) {
            for (int k = 0; k < num_vel; k++) mpe_put2(&ob, other_vel[k]);
            for (int f = 0; f < NUM_FORESTS; f++) mpe_put(&ob, in_forest[f] ? 1.0 : -1.0);
            for (int c = 0; c < MPE_DIM_C; c++) mpe_put(&ob, w->comm[0][c]);
        } else {
            for (int f = 0; f < NUM_FORESTS; f++) mpe_put(&ob, in_forest[f] ? 1.0 : -1.0);
            for (int k = 0; k < num_vel; k++) mpe_put2(&ob, other_vel[k]);
        }
        mpe_pad(&ob);
    }
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    mpe_reset_world(&s->w, rng, 0.9);
    wc_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    for (int a = 0; a < MPE_AGENTS; a++) {
        double rew = 0.0;
        if (WC_ADVERSARY(a)) {
            double nearest = mpe_dist(w->pos[NUM_ADVERSARIES], w->pos[a]);
            for (int g = NUM_ADVERSARIES + 1; g < MPE_AGENTS; g++) {
                double d = mpe_dist(w->pos[g], w->pos[a]);
                nearest = d < nearest ? d : nearest;
            }
            rew -= 0.1 * nearest;
            for (int g = NUM_ADVERSARIES; g < MPE_AGENTS; g++)
                for (int v = 0; v < NUM_ADVERSARIES; v++)
                    if (mpe_overlap(w, g, v)) rew += 5;
        } else {
            for (int v = 0; v < NUM_ADVERSARIES; v++)
                if (mpe_overlap(w, v, a)) rew -= 5;
            for (int p = 0; p < MPE_DIM_P; p++) rew -= 2 * mpe_offscreen_penalty(fabs(w->pos[a][p]));
            for (int f = WC_FOOD0; f < WC_FOREST0; f++)
                if (mpe_overlap(w, a, f)) rew += 2;
            double nearest = mpe_dist(w->pos[WC_FOOD0], w->pos[a]);
            for (int f = WC_FOOD0 + 1; f < WC_FOREST0; f++) {
                double d = mpe_dist(w->pos[f], w->pos[a]);
                nearest = d < nearest ? d : nearest;
            }
            rew -= 0.05 * nearest;
        }
        rewards[a] = (float)rew;
    }
    wc_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) { mpe_get_world(&s->w, out); }
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    wc_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int e = 0; e < MPE_ENTITIES; e++) {
        double r = 0.25, g = 0.25, b = 0.25; /* obstacles */
        if (e < MPE_AGENTS) r = WC_ADVERSARY(e) ? 0.95 : 0.45, g = WC_ADVERSARY(e) ? 0.45 : 0.95, b = 0.45;
        if (e == 0) r -= 0.3, g -= 0.3, b -= 0.3;
        if (e >= WC_FOOD0) r = 0.15, g = 0.15, b = 0.65;
        if (e >= WC_FOREST0) r = 0.6, g = 0.9, b = 0.6;
        colors[e][0] = (unsigned char)(r * 200), colors[e][1] = (unsigned char)(g * 200);
        colors[e][2] = (unsigned char)(b * 200);
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
