/* walker2d.c: Gymnasium's Walker2d-v5 (a planar two-legged walker), for mj_batch.c. */
#include "mj_task.h"

enum { FORWARD_REWARD_WEIGHT, CTRL_COST_WEIGHT, HEALTHY_REWARD, TERMINATE_WHEN_UNHEALTHY, Z_MIN, Z_MAX,
       ANGLE_MIN, ANGLE_MAX, RESET_NOISE_SCALE, EXCLUDE_POSITIONS };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { return m->nq + m->nv - (p[EXCLUDE_POSITIONS] != 0); }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 3 || m->nu < 1 ? "it needs nq >= 3 (x, z, angle) and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 0); }

FV_MJ_FN void before(fv_mj_ctx* c) { c->keep[0] = c->d->qpos[0]; }

FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, c->p[EXCLUDE_POSITIONS] != 0, 10.0); }

FV_MJ_FN int is_healthy(const fv_mj_ctx* c) {
    const double* p = c->p;
    double z = c->d->qpos[1], angle = c->d->qpos[2];
    return p[Z_MIN] < z && z < p[Z_MAX] && p[ANGLE_MIN] < angle && angle < p[ANGLE_MAX];
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { c->info[0] = c->d->qpos[0], c->info[1] = c->d->qpos[1] - c->init_qpos[1]; }

FV_MJ_FN void after(fv_mj_ctx* c) {
    double x_velocity = (c->d->qpos[0] - c->keep[0]) / c->dt;
    observe(c);
    int healthy = is_healthy(c);
    double forward_reward = c->p[FORWARD_REWARD_WEIGHT] * x_velocity;
    double healthy_reward = healthy * c->p[HEALTHY_REWARD];
    double ctrl_cost = fv_np_scale(c, c->p[CTRL_COST_WEIGHT], fv_np_action_squares(c, c->m->nu));
    c->reward = (forward_reward + healthy_reward) - ctrl_cost;
    c->terminated = !healthy && c->p[TERMINATE_WHEN_UNHEALTHY] != 0;
    reset_values(c);
    c->info[2] = x_velocity, c->info[3] = forward_reward, c->info[4] = -ctrl_cost, c->info[5] = healthy_reward;
}

const fv_mj_task fv_mj_walker2d = {
    "Walker2d", "walker2d_v5.xml", 4,
    "forward_reward_weight=1 ctrl_cost_weight=1e-3 healthy_reward=1 terminate_when_unhealthy=1 "
    "healthy_z_range=0.8:2 healthy_angle_range=-1:1 reset_noise_scale=5e-3 "
    "exclude_current_positions_from_observation=1",
    "x_position,z_distance_from_origin,x_velocity,reward_forward,reward_ctrl:f,reward_survive",
    "x_position,z_distance_from_origin",
    obs_size, check, reset, before, after, observe, reset_values};
