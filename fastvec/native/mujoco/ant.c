/* ant.c: Gymnasium's Ant-v5 (a four-legged walker), for mj_batch.c. */
#include "mj_task.h"

enum { FORWARD_REWARD_WEIGHT, CTRL_COST_WEIGHT, CONTACT_COST_WEIGHT, HEALTHY_REWARD, MAIN_BODY,
       TERMINATE_WHEN_UNHEALTHY, Z_MIN, Z_MAX, FORCE_MIN, FORCE_MAX, RESET_NOISE_SCALE, EXCLUDE_POSITIONS,
       INCLUDE_CFRC_EXT };

FV_MJ_FN int obs_size(const mjModel* m, const double* p) {
    return m->nq + m->nv - 2 * (p[EXCLUDE_POSITIONS] != 0) + 6 * (m->nbody - 1) * (p[INCLUDE_CFRC_EXT] != 0);
}

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    if (m->nq < 3 || m->nu < 1) return "it needs nq >= 3 (a free joint's x, y, z) and an actuator";
    if (p[MAIN_BODY] < 0 || p[MAIN_BODY] >= m->nbody) return "main_body is not one of its bodies";
    return NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 1); }

FV_MJ_FN void before(fv_mj_ctx* c) {
    int body = (int)c->p[MAIN_BODY];
    c->keep[0] = c->d->xpos[3 * body], c->keep[1] = c->d->xpos[3 * body + 1];
}

FV_MJ_FN void observe(fv_mj_ctx* c) {
    int n = fv_mj_obs_qpos_qvel(c, c->p[EXCLUDE_POSITIONS] != 0 ? 2 : 0, 0.0);
    if (c->p[INCLUDE_CFRC_EXT] != 0)
        for (int k = 6; k < 6 * c->m->nbody; k++) c->obs[n++] = fv_np_clip(c->d->cfrc_ext[k], c->p[FORCE_MIN], c->p[FORCE_MAX]);
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) {
    c->info[0] = c->d->qpos[0], c->info[1] = c->d->qpos[1], c->info[2] = fv_np_norm(c->d->qpos, 2);
}

FV_MJ_FN void after(fv_mj_ctx* c) {
    const double* p = c->p;
    int body = (int)p[MAIN_BODY];
    double x_velocity = (c->d->xpos[3 * body] - c->keep[0]) / c->dt;
    double y_velocity = (c->d->xpos[3 * body + 1] - c->keep[1]) / c->dt;
    observe(c);
    double forward_reward = x_velocity * p[FORWARD_REWARD_WEIGHT];
    int finite_q, finite_v;
    FV_MJ_ISFINITE_ALL(c->d->qpos, c->m->nq, finite_q);
    FV_MJ_ISFINITE_ALL(c->d->qvel, c->m->nv, finite_v);
    int healthy = finite_q && finite_v && p[Z_MIN] <= c->d->qpos[2] && c->d->qpos[2] <= p[Z_MAX];
    double healthy_reward = healthy * p[HEALTHY_REWARD];
    double ctrl_cost = fv_np_scale(c, p[CTRL_COST_WEIGHT], fv_np_action_squares(c, c->m->nu));
    double contact_cost =
        p[CONTACT_COST_WEIGHT] * fv_np_sum_squares(c->d->cfrc_ext, 6 * c->m->nbody, 1, p[FORCE_MIN], p[FORCE_MAX]);
    c->reward = (forward_reward + healthy_reward) - (ctrl_cost + contact_cost);
    c->terminated = !healthy && p[TERMINATE_WHEN_UNHEALTHY] != 0;
    reset_values(c);
    c->info[3] = x_velocity, c->info[4] = y_velocity, c->info[5] = forward_reward, c->info[6] = -ctrl_cost;
    c->info[7] = -contact_cost, c->info[8] = healthy_reward;
}

const fv_mj_task fv_mj_ant = {
    "Ant", "ant.xml", 5,
    "forward_reward_weight=1 ctrl_cost_weight=0.5 contact_cost_weight=5e-4 healthy_reward=1 main_body=1 "
    "terminate_when_unhealthy=1 healthy_z_range=0.2:1 contact_force_range=-1:1 reset_noise_scale=0.1 "
    "exclude_current_positions_from_observation=1 include_cfrc_ext_in_observation=1",
    "x_position,y_position,distance_from_origin,x_velocity,y_velocity,reward_forward,reward_ctrl:f,"
    "reward_contact,reward_survive",
    "x_position,y_position,distance_from_origin",
    obs_size, check, reset, before, after, observe, reset_values};
