/* reacher.c: Gymnasium's Reacher-v5 (a two-joint arm reaching a target), for mj_batch.c. */
#include "mj_task.h"

enum { REWARD_DIST_WEIGHT, REWARD_CONTROL_WEIGHT };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { (void)p; return 4 + (m->nq - 2) + 2 + 2; }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    if (m->nq < 4 || m->nv < 4 || m->nu < 1) return "it needs nq >= 4 and nv >= 4 (two arm joints, the target's two) and an actuator";
    if (mj_name2id(m, mjOBJ_BODY, "fingertip") < 0 || mj_name2id(m, mjOBJ_BODY, "target") < 0)
        return "it needs bodies named fingertip and target";
    return NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) {
    int nq = c->m->nq, nv = c->m->nv;
    for (int k = 0; k < nq; k++) c->d->qpos[k] = fv_mj_uniform(rng, -0.1, 0.1) + c->init_qpos[k];
    double goal[2];
    do {
        goal[0] = fv_mj_uniform(rng, -0.2, 0.2), goal[1] = fv_mj_uniform(rng, -0.2, 0.2);
    } while (!(fv_np_norm(goal, 2) < 0.2));
    c->d->qpos[nq - 2] = goal[0], c->d->qpos[nq - 1] = goal[1];
    for (int k = 0; k < nv; k++) c->d->qvel[k] = c->init_qvel[k] + fv_mj_uniform(rng, -0.005, 0.005);
    c->d->qvel[nv - 2] = c->d->qvel[nv - 1] = 0;
}

FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }

FV_MJ_FN void tip_to_target(const fv_mj_ctx* c, double* vec) {
    int tip = mj_name2id(c->m, mjOBJ_BODY, "fingertip"), target = mj_name2id(c->m, mjOBJ_BODY, "target");
    for (int k = 0; k < 3; k++) vec[k] = c->d->xpos[3 * tip + k] - c->d->xpos[3 * target + k];
}

FV_MJ_FN void observe(fv_mj_ctx* c) {
    const fv_mj_num* q = c->d->qpos;
    double vec[3];
    int n = 0;
    c->obs[n++] = cos(q[0]), c->obs[n++] = cos(q[1]), c->obs[n++] = sin(q[0]), c->obs[n++] = sin(q[1]);
    for (int k = 2; k < c->m->nq; k++) c->obs[n++] = q[k];
    c->obs[n++] = c->d->qvel[0], c->obs[n++] = c->d->qvel[1];
    tip_to_target(c, vec);
    c->obs[n++] = vec[0], c->obs[n++] = vec[1];
}

FV_MJ_FN void after(fv_mj_ctx* c) {
    observe(c);
    double vec[3];
    tip_to_target(c, vec);
    double reward_dist = -fv_np_norm(vec, 3) * c->p[REWARD_DIST_WEIGHT];
    double reward_ctrl = fv_np_scale(c, c->p[REWARD_CONTROL_WEIGHT], -fv_np_action_squares(c, c->m->nu));
    c->reward = reward_dist + reward_ctrl;
    c->terminated = 0;
    c->info[0] = reward_dist, c->info[1] = reward_ctrl;
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { (void)c; }

const fv_mj_task fv_mj_reacher = {
    "Reacher", "reacher.xml", 2, "reward_dist_weight=1 reward_control_weight=1", "reward_dist,reward_ctrl:f", "",
    obs_size, check, reset, before, after, observe, reset_values};
