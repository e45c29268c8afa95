/* humanoid_standup.c: Gymnasium's HumanoidStandup-v5 (a humanoid lying down that learns to stand), for
 * mj_batch.c. */
#include "mj_task.h"

enum { UPH_COST_WEIGHT, CTRL_COST_WEIGHT, IMPACT_COST_WEIGHT, IMPACT_COST_MIN, IMPACT_COST_MAX, RESET_NOISE_SCALE,
       EXCLUDE_POSITIONS, INCLUDE_CINERT, INCLUDE_CVEL, INCLUDE_QFRC_ACTUATOR, INCLUDE_CFRC_EXT };

#define SKIP(p) ((p)[EXCLUDE_POSITIONS] != 0 ? 2 : 0)
#define FLAGS(p) (p)[INCLUDE_CINERT] != 0, (p)[INCLUDE_CVEL] != 0, (p)[INCLUDE_QFRC_ACTUATOR] != 0, (p)[INCLUDE_CFRC_EXT] != 0

FV_MJ_FN int obs_size(const mjModel* m, const double* p) { return fv_mj_obs_bodies_size(m, SKIP(p), FLAGS(p)); }

FV_MJ_FN const char* check(const mjModel* m, const double* p) {
    (void)p;
    return m->nq < 3 || m->nv < 6 || m->nu < 1 ? "it needs a free joint first (nq >= 3, nv >= 6) and an actuator" : NULL;
}

FV_MJ_FN void reset(fv_mj_ctx* c, fv_mj_rng* rng) { fv_mj_noise(c, rng, c->p[RESET_NOISE_SCALE], 0); }

FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }

FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_bodies(c, SKIP(c->p), FLAGS(c->p)); }

/* x_position, y_position, z_distance_from_origin, tendon_length (ntendon), tendon_velocity (ntendon) */
FV_MJ_FN int reset_info(fv_mj_ctx* c) {
    int n = 0, t = c->m->ntendon;
    c->info[n++] = c->d->qpos[0], c->info[n++] = c->d->qpos[1], c->info[n++] = c->d->qpos[2] - c->init_qpos[2];
    for (int k = 0; k < t; k++) c->info[n++] = c->d->ten_length[k];
    for (int k = 0; k < t; k++) c->info[n++] = c->d->ten_velocity[k];
    return n;
}

FV_MJ_FN void reset_values(fv_mj_ctx* c) { reset_info(c); }

FV_MJ_FN void after(fv_mj_ctx* c) {
    const double* p = c->p;
    /* uph_cost_weight is taken and unused, as in Gymnasium */
    double uph_cost = (c->d->qpos[2] - 0) / c->m->opt.timestep;
    double quad_ctrl_cost = p[CTRL_COST_WEIGHT] * fv_np_sum_squares(c->d->ctrl, c->m->nu, 0, 0, 0);
    double quad_impact_cost = fv_np_clip(p[IMPACT_COST_WEIGHT] * fv_np_sum_squares(c->d->cfrc_ext, 6 * c->m->nbody, 0, 0, 0),
                                         p[IMPACT_COST_MIN], p[IMPACT_COST_MAX]);
    c->reward = uph_cost - quad_ctrl_cost - quad_impact_cost + 1;
    c->terminated = 0;
    int n = reset_info(c);
    c->info[n++] = uph_cost, c->info[n++] = -quad_ctrl_cost, c->info[n++] = -quad_impact_cost;
    observe(c);
}

const fv_mj_task fv_mj_humanoid_standup = {
    "HumanoidStandup", "humanoidstandup.xml", 5,
    "uph_cost_weight=1 ctrl_cost_weight=0.1 impact_cost_weight=5e-7 impact_cost_range=-inf:10 reset_noise_scale=1e-2 "
    "exclude_current_positions_from_observation=1 include_cinert_in_observation=1 include_cvel_in_observation=1 "
    "include_qfrc_actuator_in_observation=1 include_cfrc_ext_in_observation=1",
    "x_position,y_position,z_distance_from_origin,tendon_length:d:T,tendon_velocity:d:T,reward_linup,"
    "reward_quadctrl,reward_impact",
    "x_position,y_position,z_distance_from_origin,tendon_length,tendon_velocity",
    obs_size, check, reset, before, after, observe, reset_values};
