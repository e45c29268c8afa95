/* half_cheetah.c: Gymnasium's HalfCheetah-v5 (a planar two-legged runner), for mj_batch.c. */
#include "mj_task.h"

enum { FORWARD_REWARD_WEIGHT, CTRL_COST_WEIGHT, RESET_NOISE_SCALE, EXCLUDE_POSITIONS };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { return m->nq + m->nv - (p[EXCLUDE_POSITIONS] != 0); }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 1 || m->nu < 1 ? "it needs nq >= 1 (the x slide) and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 1); }

FV_MJ_FN void before(fv_mj_ctx* c) { c->keep[0] = c->d->qpos[0]; }

FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, c->p[EXCLUDE_POSITIONS] != 0, 0.0); }

FV_MJ_FN void reset_values(fv_mj_ctx* c) { c->info[0] = c->d->qpos[0]; }

FV_MJ_FN void after(fv_mj_ctx* c) {
    double x_velocity = (c->d->qpos[0] - c->keep[0]) / c->dt;
    observe(c);
    double forward_reward = c->p[FORWARD_REWARD_WEIGHT] * x_velocity;
    double ctrl_cost = fv_np_scale(c, c->p[CTRL_COST_WEIGHT], fv_np_action_squares(c, c->m->nu));
    c->reward = forward_reward - ctrl_cost;
    c->terminated = 0;
    c->info[0] = c->d->qpos[0], c->info[1] = x_velocity, c->info[2] = forward_reward, c->info[3] = -ctrl_cost;
}

const fv_mj_task fv_mj_half_cheetah = {
    "HalfCheetah", "half_cheetah.xml", 5,
    "forward_reward_weight=1 ctrl_cost_weight=0.1 reset_noise_scale=0.1 exclude_current_positions_from_observation=1",
    "x_position,x_velocity,reward_forward,reward_ctrl:f", "x_position",
    obs_size, check, reset, before, after, observe, reset_values};
