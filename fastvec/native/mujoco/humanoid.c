/* humanoid.c: Gymnasium's Humanoid-v5 (a three-dimensional biped running forward), for mj_batch.c. */
#include "mj_task.h"

enum { FORWARD_REWARD_WEIGHT, CTRL_COST_WEIGHT, CONTACT_COST_WEIGHT, CONTACT_COST_MIN, CONTACT_COST_MAX,
       HEALTHY_REWARD, TERMINATE_WHEN_UNHEALTHY, Z_MIN, Z_MAX, RESET_NOISE_SCALE, EXCLUDE_POSITIONS,
       INCLUDE_CINERT, INCLUDE_CVEL, INCLUDE_QFRC_ACTUATOR, INCLUDE_CFRC_EXT };

#define SKIP(p) ((p)[EXCLUDE_POSITIONS] != 0 ? 2 : 0)
#define FLAGS(p) (p)[INCLUDE_CINERT] != 0, (p)[INCLUDE_CVEL] != 0, (p)[INCLUDE_QFRC_ACTUATOR] != 0, (p)[INCLUDE_CFRC_EXT] != 0

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { return fv_mj_obs_bodies_size(m, SKIP(p), FLAGS(p)); }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 3 || m->nv < 6 || m->nu < 1 ? "it needs a free joint first (nq >= 3, nv >= 6) and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 0); }

/* mass_center: np.einsum("b,bj->j", body_mass, xipos) (products summed body by body) / body_mass.sum() */
FV_MJ_FN void mass_center(const fv_mj_ctx* c, double* xy) {
    const mjModel* m = c->m;
    double num[3] = {0.0, 0.0, 0.0};
    for (int b = 0; b < m->nbody; b++)
        for (int j = 0; j < 3; j++) num[j] = num[j] + m->body_mass[b] * c->d->xipos[3 * b + j];
    double denom = 0.0 + fv_np_pairwise(m->body_mass, m->nbody);
    xy[0] = num[0] / denom, xy[1] = num[1] / denom;
}

FV_MJ_FN void before(fv_mj_ctx* c) { mass_center(c, c->keep); }

FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_bodies(c, SKIP(c->p), FLAGS(c->p)); }

/* x_position, y_position, tendon_length (ntendon), tendon_velocity (ntendon), distance_from_origin */
FV_MJ_FN int reset_info(fv_mj_ctx* c) {
    int n = 0, t = c->m->ntendon;
    c->info[n++] = c->d->qpos[0], c->info[n++] = c->d->qpos[1];
    for (int k = 0; k < t; k++) c->info[n++] = c->d->ten_length[k];
    for (int k = 0; k < t; k++) c->info[n++] = c->d->ten_velocity[k];
    c->info[n++] = fv_np_norm(c->d->qpos, 2);
    return n;
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { reset_info(c); }

FV_MJ_FN void after(fv_mj_ctx* c) {
    const double* p = c->p;
    double xy[2];
    mass_center(c, xy);
    double x_velocity = (xy[0] - c->keep[0]) / c->dt, y_velocity = (xy[1] - c->keep[1]) / c->dt;
    observe(c);
    double forward_reward = p[FORWARD_REWARD_WEIGHT] * x_velocity;
    int healthy = p[Z_MIN] < c->d->qpos[2] && c->d->qpos[2] < p[Z_MAX];
    double healthy_reward = healthy * p[HEALTHY_REWARD];
    double ctrl_cost = p[CTRL_COST_WEIGHT] * fv_np_sum_squares(c->d->ctrl, c->m->nu, 0, 0, 0);
    double contact_cost = fv_np_clip(p[CONTACT_COST_WEIGHT] * fv_np_sum_squares(c->d->cfrc_ext, 6 * c->m->nbody, 0, 0, 0),
                                     p[CONTACT_COST_MIN], p[CONTACT_COST_MAX]);
    c->reward = (forward_reward + healthy_reward) - (ctrl_cost + contact_cost);
    c->terminated = !healthy && p[TERMINATE_WHEN_UNHEALTHY] != 0;
    int n = reset_info(c);
    c->info[n++] = x_velocity, c->info[n++] = y_velocity, c->info[n++] = healthy_reward;
    c->info[n++] = forward_reward, c->info[n++] = -ctrl_cost, c->info[n++] = -contact_cost;
}

const fv_mj_task fv_mj_humanoid = {
    "Humanoid", "humanoid.xml", 5,
    "forward_reward_weight=1.25 ctrl_cost_weight=0.1 contact_cost_weight=5e-7 contact_cost_range=-inf:10 "
    "healthy_reward=5 terminate_when_unhealthy=1 healthy_z_range=1:2 reset_noise_scale=1e-2 "
    "exclude_current_positions_from_observation=1 include_cinert_in_observation=1 include_cvel_in_observation=1 "
    "include_qfrc_actuator_in_observation=1 include_cfrc_ext_in_observation=1",
    "x_position,y_position,tendon_length:d:T,tendon_velocity:d:T,distance_from_origin,x_velocity,y_velocity,"
    "reward_survive,reward_forward,reward_ctrl,reward_contact",
    "x_position,y_position,tendon_length,tendon_velocity,distance_from_origin",
    obs_size, check, reset, before, after, observe, reset_values};
