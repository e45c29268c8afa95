/* mpe_crypto.h: MPE's simple_crypto (mpe2's simple_crypto_v3), bit for bit: alice encrypts the goal (one of 2
 * one-hot words of 4) with a key bob shares; eve listens without the key. Nobody moves.
 * Agents: eve_0 (observation: alice's utterance, 4), bob_0 (the key, alice's utterance: 8), alice_0 (the goal,
 * the key: 8); all speak 4 words.
 * Reward: eve's is minus the squared distance of her utterance to the goal (0 while she is silent); bob's and
 * alice's are eve's squared distance minus bob's (each term 0 while its speaker is silent).
 * Actions: Discrete(4) (a word) or, with CONTINUOUS_ACTIONS, Box(0, 1, (4,)).
 * Parameters: CONTINUOUS_ACTIONS. State access ends with the goal's and the key's landmark index.
 */
#define MPE_AGENTS 3
#define MPE_LANDMARKS 2
#define MPE_DIM_C 4
#define MPE_EXTRA_STATE 2
#define OBS_SIZE 8
#define MPE_NUM_ACTIONS 4
#define MPE_BOX_DIMS 4
#define MPE_BOX_HIGH {1, 1, 1, 1}
#include "fastvec.h"

FV_FN double mpe_size(int e) { (void)e; return 0.05; }
FV_FN int mpe_collide(int e) { return e >= MPE_AGENTS; }
FV_FN int mpe_movable(int e) { (void)e; return 0; }
FV_FN int mpe_silent(int a) { (void)a; return 0; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"

typedef struct {
    MpeWorld w;
    int goal, key; /* landmark indices: their colours are one-hot words */
} State;

FV_FN int env_agent_obs_size(int a) { return a == 0 ? 4 : OBS_SIZE; }
FV_FN int env_agent_action_size(int a) { return mpe_action_size(a); }

FV_FN void crypto_obs(const State* s, float* obs) {
    const MpeWorld* w = &s->w;
    MpeObs eve = {obs, 0}, bob = {obs + OBS_SIZE, 0}, alice = {obs + 2 * OBS_SIZE, 0};
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&eve, w->comm[2][k]);
    mpe_pad(&eve);
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&bob, k == s->key ? 1.0 : 0.0);
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&bob, w->comm[2][k]);
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&alice, k == s->goal ? 1.0 : 0.0);
    for (int k = 0; k < MPE_DIM_C; k++) mpe_put(&alice, k == s->key ? 1.0 : 0.0);
}

/* Whether agent a is silent after its action, and the squared distance of its utterance to the goal's word (a
 * 4-term sum in order). A discrete action's utterance is the one-hot of its word: a word that is not the goal's
 * misses by 1 twice (2 exactly), the goal's by nothing. Those are read from the word, not from the utterance just
 * stored: the compiler loads that as vectors over four scalar stores, which the CPU cannot forward (a third of the
 * step's time). */
FV_FN int crypto_silent(const MpeWorld* w, const ACT_T* actions, int a) {
#if CONTINUOUS_ACTIONS
    (void)actions;
    int silent = 1;
    for (int k = 0; k < MPE_DIM_C; k++) silent &= w->comm[a][k] == 0.0;
    return silent;
#else
    (void)w;
    long long word = actions[a * ACTION_DIMS];
    return !(word >= 0 && word < MPE_DIM_C);
#endif
}
FV_FN double crypto_miss(const MpeWorld* w, const ACT_T* actions, int a, int goal) {
#if CONTINUOUS_ACTIONS
    (void)actions;
    double sum = 0.0;
    for (int k = 0; k < MPE_DIM_C; k++) {
        double d = w->comm[a][k] - (k == goal ? 1.0 : 0.0);
        sum = k == 0 ? d * d : sum + d * d;
    }
    return sum;
#else
    (void)w;
    return actions[a * ACTION_DIMS] == goal ? 0.0 : 2.0;
#endif
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->goal = fv_rand_int(rng, MPE_LANDMARKS);
    s->key = fv_rand_int(rng, MPE_LANDMARKS);
    mpe_reset_world(&s->w, rng, 1.0);
    crypto_obs(s, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    MpeWorld* w = &s->w;
    mpe_act(w, actions);
    double eve = crypto_silent(w, actions, 0) ? 0.0 : crypto_miss(w, actions, 0, s->goal);
    double good = 0.0;
    if (!crypto_silent(w, actions, 1)) good -= crypto_miss(w, actions, 1, s->goal);
    rewards[0] = (float)(0.0 - eve);
    rewards[1] = rewards[2] = (float)(eve + good);
    crypto_obs(s, obs);
    return 0;
}

FV_FN void env_get_state(const State* s, double* out) {
    mpe_get_world(&s->w, out);
    out[MPE_WORLD_VALUES] = s->goal;
    out[MPE_WORLD_VALUES + 1] = s->key;
}
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    mpe_set_world(&s->w, in);
    s->goal = in[MPE_WORLD_VALUES] >= 1.0;
    s->key = in[MPE_WORLD_VALUES + 1] >= 1.0;
    crypto_obs(s, obs);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    unsigned char colors[MPE_ENTITIES][3];
    for (int k = 0; k < 3; k++) {
        colors[0][k] = k == 0 ? 150 : 50;
        colors[1][k] = colors[2][k] = 50;
        for (int l = 0; l < MPE_LANDMARKS; l++) colors[MPE_AGENTS + l][k] = k == l ? 200 : 0;
    }
    mpe_render_world(&s->w, (const unsigned char (*)[3])colors, rgb);
}
