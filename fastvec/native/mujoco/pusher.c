/* pusher.c: Gymnasium's Pusher-v5 (a seven-joint arm pushing a cylinder to a goal), for mj_batch.c. */
#include "mj_task.h"

enum { REWARD_NEAR_WEIGHT, REWARD_DIST_WEIGHT, REWARD_CONTROL_WEIGHT };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { (void)m, (void)p; return 23; }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    if (m->nq < 7 || m->nv < 7 || m->nu < 1) return "it needs nq >= 7, nv >= 7 (the arm's joints) and an actuator";
    if (mj_name2id(m, mjOBJ_BODY, "tips_arm") < 0 || mj_name2id(m, mjOBJ_BODY, "object") < 0 ||
        mj_name2id(m, mjOBJ_BODY, "goal") < 0)
        return "it needs bodies named tips_arm, object and goal";
    return NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) {
    int nq = c->m->nq, nv = c->m->nv;
    double cylinder[2];
    for (int k = 0; k < nq; k++) c->d->qpos[k] = c->init_qpos[k];
    do {
        cylinder[0] = fv_mj_uniform(rng, -0.3, 0.0), cylinder[1] = fv_mj_uniform(rng, -0.2, 0.2);
    } while (!(fv_np_norm(cylinder, 2) > 0.17)); /* the goal is at (0, 0) */
    c->d->qpos[nq - 4] = cylinder[0], c->d->qpos[nq - 3] = cylinder[1];
    c->d->qpos[nq - 2] = c->d->qpos[nq - 1] = 0.0;
    for (int k = 0; k < nv; k++) c->d->qvel[k] = c->init_qvel[k] + fv_mj_uniform(rng, -0.005, 0.005);
    for (int k = nv - 4; k < nv; k++) c->d->qvel[k] = 0.0;
}

FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }

FV_MJ_FN const fv_mj_num* com(const fv_mj_ctx* c, const char* body) { return c->d->xpos + 3 * mj_name2id(c->m, mjOBJ_BODY, body); }

FV_MJ_FN void observe(fv_mj_ctx* c) {
    int n = 0;
    for (int k = 0; k < 7; k++) c->obs[n++] = c->d->qpos[k];
    for (int k = 0; k < 7; k++) c->obs[n++] = c->d->qvel[k];
    const char* bodies[3] = {"tips_arm", "object", "goal"};
    for (int b = 0; b < 3; b++)
        for (int k = 0; k < 3; k++) c->obs[n++] = com(c, bodies[b])[k];
}

FV_MJ_FN void after(fv_mj_ctx* c) {
    observe(c);
    const fv_mj_num* object = com(c, "object"), *tips = com(c, "tips_arm"), *goal = com(c, "goal");
    double vec_1[3], vec_2[3];
    for (int k = 0; k < 3; k++) vec_1[k] = object[k] - tips[k], vec_2[k] = object[k] - goal[k];
    double reward_near = -fv_np_norm(vec_1, 3) * c->p[REWARD_NEAR_WEIGHT];
    double reward_dist = -fv_np_norm(vec_2, 3) * c->p[REWARD_DIST_WEIGHT];
    double reward_ctrl = fv_np_scale(c, c->p[REWARD_CONTROL_WEIGHT], -fv_np_action_squares(c, c->m->nu));
    c->reward = reward_dist + reward_ctrl + reward_near;
    c->terminated = 0;
    c->info[0] = reward_dist, c->info[1] = reward_ctrl, c->info[2] = reward_near;
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { (void)c; }

const fv_mj_task fv_mj_pusher = {
    "Pusher", "pusher_v5.xml", 5, "reward_near_weight=0.5 reward_dist_weight=1 reward_control_weight=0.1",
    "reward_dist,reward_ctrl:f,reward_near", "",
    obs_size, check, reset, before, after, observe, reset_values};
