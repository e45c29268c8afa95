/* inverted_double_pendulum.c: Gymnasium's InvertedDoublePendulum-v5 (a cart balancing two poles), for
 * mj_batch.c. */
#include "mj_task.h"

enum { HEALTHY_REWARD, RESET_NOISE_SCALE };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { (void)p; return 1 + 2 * (m->nq - 1) + m->nv + 1; }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 1 || m->nv < 3 || m->nsite < 1 || m->nu < 1 ? "it needs nq >= 1, nv >= 3, a site (the tip) and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 1); }

FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }

FV_MJ_FN void observe(fv_mj_ctx* c) {
    const mjData* d = c->d;
    int nq = c->m->nq, n = 0;
    c->obs[n++] = d->qpos[0];
    for (int k = 1; k < nq; k++) c->obs[n++] = sin(d->qpos[k]);
    for (int k = 1; k < nq; k++) c->obs[n++] = cos(d->qpos[k]);
    for (int k = 0; k < c->m->nv; k++) c->obs[n++] = fv_np_clip(d->qvel[k], -10, 10);
    c->obs[n++] = fv_np_clip(d->qfrc_constraint[0], -10, 10);
}

FV_MJ_FN void after(fv_mj_ctx* c) {
    observe(c);
    double x = c->d->site_xpos[0], y = c->d->site_xpos[2];
    c->terminated = y <= 1;
    double v1 = c->d->qvel[1], v2 = c->d->qvel[2];
    double dist_penalty = 0.01 * fv_np_scalar_square(x) + fv_np_scalar_square(y - 2);
    double vel_penalty = 0.001 * fv_np_scalar_square(v1) + 0.005 * fv_np_scalar_square(v2);
    double alive_bonus = c->p[HEALTHY_REWARD] * (double)!c->terminated;
    c->reward = alive_bonus - dist_penalty - vel_penalty;
    c->info[0] = alive_bonus, c->info[1] = -dist_penalty, c->info[2] = -vel_penalty;
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { (void)c; }

const fv_mj_task fv_mj_inverted_double_pendulum = {
    "InvertedDoublePendulum", "inverted_double_pendulum.xml", 5, "healthy_reward=10 reset_noise_scale=0.1",
    "reward_survive,distance_penalty,velocity_penalty", "",
    obs_size, check, reset, before, after, observe, reset_values};
