/* inverted_pendulum.c: Gymnasium's InvertedPendulum-v5 (a cart balancing a pole), for mj_batch.c. */
#include "mj_task.h"

enum { RESET_NOISE_SCALE };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { (void)p; return m->nq + m->nv; }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq + m->nv < 2 || m->nu < 1 ? "the observation's pole angle needs nq + nv >= 2 and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 0); }

FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }

FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); }

FV_MJ_FN void after(fv_mj_ctx* c) {
    observe(c);
    int finite;
    FV_MJ_ISFINITE_ALL(c->obs, c->m->nq + c->m->nv, finite);
    c->terminated = !finite || fabs(c->obs[1]) > 0.2;
    c->reward = c->terminated ? 0.0 : 1.0;
    c->info[0] = c->reward; /* reward_survive */
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { (void)c; }

const fv_mj_task fv_mj_inverted_pendulum = {
    "InvertedPendulum", "inverted_pendulum.xml", 2, "reset_noise_scale=0.01", "reward_survive:i", "",
    obs_size, check, reset, before, after, observe, reset_values};
