/* forward_task.c: a user's task file for the tests: HalfCheetah's model rewarded for forward speed alone. */
#include "mj_task.h"

enum { RESET_NOISE_SCALE };

static int obs_size(const mjModel* m, const double* p) { (void)p; return m->nq - 1 + m->nv; }

static const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 1 || m->nu < 1 ? "it needs nq >= 1 (the x slide) and an actuator" : NULL;
}

static void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 1); }

static void before(fv_mj_ctx* c) { c->keep[0] = c->d->qpos[0]; }

static void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 1, 0.0); }

static void after(fv_mj_ctx* c) {
    double x_velocity = (c->d->qpos[0] - c->keep[0]) / c->dt;
    observe(c);
    c->reward = x_velocity;
    c->terminated = 0;
    c->info[0] = x_velocity;
}

static void reset_values(fv_mj_ctx* c) { (void)c; }

const fv_mj_task fv_mj_user_task = {
    "ForwardCheetah", "half_cheetah.xml", 5, "reset_noise_scale=0.1", "x_velocity", "",
    obs_size, check, reset, before, after, observe, reset_values};
