/* mj_batch.c: a batch of one MuJoCo task's envs: one mjModel shared, one mjData per env, stepped by
 * MuJoCo's own library (mj_step frame_skip times, then mj_rnePostConstraint, as Gymnasium's MujocoEnv) on
 * pool.h's threads; the task file (mj_task.h's contract) computes observations, rewards and terminations.
 * Autoreset is Gymnasium's NEXT_STEP (the step after an episode ends resets that env) or SAME_STEP (the step that
 * ends it resets it, keeping its last obs and info in final_obs and final_info). */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "mj_task.h"
#include "../pool.h"

#define FV_EXPORT __attribute__((visibility("default")))

extern const fv_mj_task fv_mj_inverted_pendulum, fv_mj_inverted_double_pendulum, fv_mj_reacher, fv_mj_swimmer,
    fv_mj_half_cheetah, fv_mj_hopper, fv_mj_walker2d, fv_mj_ant, fv_mj_pusher, fv_mj_humanoid,
    fv_mj_humanoid_standup;

/* A user's task file (MujocoBatch's `source`) defines fv_mj_user_task; the build then says -DFV_MJ_USER_TASK. */
#ifdef FV_MJ_USER_TASK
extern const fv_mj_task fv_mj_user_task;
#define FV_MJ_USER_ENTRY &fv_mj_user_task,
#else
#define FV_MJ_USER_ENTRY
#endif

static const fv_mj_task* const fv_mj_tasks[] = {
    FV_MJ_USER_ENTRY /* first: a user's task of a built-in task's name is the user's */
    &fv_mj_inverted_pendulum, &fv_mj_inverted_double_pendulum, &fv_mj_reacher, &fv_mj_swimmer,
    &fv_mj_half_cheetah, &fv_mj_hopper, &fv_mj_walker2d, &fv_mj_ant, &fv_mj_pusher, &fv_mj_humanoid,
    &fv_mj_humanoid_standup, NULL};

typedef struct {
    mjData* d;
    fv_mj_rng rng;
    int elapsed;      /* steps in this episode */
    int needs_reset;  /* the last step ended the episode: the next step resets (NEXT_STEP) */
} fv_mj_env;

typedef struct {
    const fv_mj_task* task;
    mjModel* m;
    double p[FV_MJ_MAX_PARAMS];
    int frame_skip, num_envs, obs_size, info_size;
    double dt;
    double* init_qpos, *init_qvel;
    fv_mj_env* envs;
} fv_mj_batch;

/* One call's arguments, read by the threads. */
typedef struct {
    fv_mj_batch* b;
    const double* actions;
    int action_f32, max_steps;
    double* final_obs, *final_info; /* SAME_STEP autoreset: where an ended episode's last obs and info go; NULL: NEXT_STEP */
    const unsigned long long* seeds;
    const unsigned char* mask;
    double* obs, *rewards, *info;
    unsigned char* terminated, *truncated, *was_reset, *unstable;
} fv_mj_job;

/* pool.h splits [0, n) into chunks of whole 64-index blocks and steps fewer than FV_PAR_MIN_ENVS indices on
 * the caller alone: a MuJoCo step costs tens of microseconds, so every env is given 64 indices, and a chunk
 * is then a run of whole envs however few there are. FV_MJ_CHUNKS_PER_THREAD asks for a chunk an env (up to
 * pool.h's FV_MAX_CHUNKS): a step returns when its slowest thread does, and an env's step time varies with its
 * contacts, so a thread that finishes early takes one more env rather than leaving the rest of a run to one. */
#define FV_MJ_SPREAD 64
#define FV_MJ_CHUNKS_PER_THREAD FV_MAX_CHUNKS

static const fv_mj_task* fv_mj_find(const char* name) {
    for (int i = 0; fv_mj_tasks[i]; i++)
        if (strcmp(fv_mj_tasks[i]->name, name) == 0) return fv_mj_tasks[i];
    return NULL;
}

static fv_mj_ctx fv_mj_context(const fv_mj_batch* b, int i, double* obs, double* info) {
    fv_mj_ctx c;
    memset(&c, 0, sizeof c);
    c.m = b->m, c.d = b->envs[i].d, c.p = b->p, c.init_qpos = b->init_qpos, c.init_qvel = b->init_qvel;
    c.dt = b->dt, c.obs = obs, c.info = info;
    return c;
}

/* Gymnasium's reset: mj_resetData, the task's noise, set_state (mj_forward); writes obs and the reset info. */
static void fv_mj_reset_one(fv_mj_batch* b, int i, double* obs, double* info) {
    fv_mj_ctx c = fv_mj_context(b, i, obs, info);
    mj_resetData(b->m, c.d);
    b->task->reset(&c, &b->envs[i].rng);
    mj_forward(b->m, c.d);
    memset(info, 0, sizeof(double) * b->info_size);
    b->task->observe(&c);
    b->task->reset_values(&c);
    b->envs[i].elapsed = 0, b->envs[i].needs_reset = 0;
}

static int fv_mj_warnings(const mjData* d) {
    return d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number + d->warning[mjWARN_BADQACC].number;
}

static int fv_mj_step_chunk(const void* arg, int lo, int hi) {
    const fv_mj_job* j = arg;
    fv_mj_batch* b = j->b;
    const mjModel* m = b->m;
    int ended = 0;
    for (int i = lo / FV_MJ_SPREAD; i < (hi + FV_MJ_SPREAD - 1) / FV_MJ_SPREAD && i < b->num_envs; i++) {
        fv_mj_env* e = &b->envs[i];
        double* obs = j->obs + (long)i * b->obs_size, *info = j->info + (long)i * b->info_size;
        j->unstable[i] = 0;
        if (e->needs_reset) {
            fv_mj_reset_one(b, i, obs, info);
            j->rewards[i] = 0.0, j->terminated[i] = j->truncated[i] = 0, j->was_reset[i] = 1;
            continue;
        }
        fv_mj_ctx c = fv_mj_context(b, i, obs, info);
        c.action = j->actions + (long)i * m->nu, c.action_f32 = j->action_f32;
        b->task->before(&c);
        for (int k = 0; k < m->nu; k++) c.d->ctrl[k] = c.action[k];
        int warned = fv_mj_warnings(c.d);
        for (int k = 0; k < b->frame_skip; k++) mj_step(m, c.d);
        mj_rnePostConstraint(m, c.d);
        int bad = fv_mj_warnings(c.d) != warned;
        for (int k = 0; k < m->nq && !bad; k++) bad = !isfinite(c.d->qpos[k]);
        for (int k = 0; k < m->nv && !bad; k++) bad = !isfinite(c.d->qvel[k]);
        b->task->after(&c);
        e->elapsed += 1;
        j->rewards[i] = c.reward;
        j->terminated[i] = (unsigned char)(c.terminated || bad);
        j->truncated[i] = (unsigned char)(j->max_steps > 0 && e->elapsed >= j->max_steps);
        j->unstable[i] = (unsigned char)bad, j->was_reset[i] = 0;
        e->needs_reset = j->terminated[i] || j->truncated[i];
        ended += e->needs_reset;
        if (e->needs_reset && j->final_obs) { /* SAME_STEP: keep the last obs and info, start the next episode now */
            memcpy(j->final_obs + (long)i * b->obs_size, obs, sizeof(double) * b->obs_size);
            memcpy(j->final_info + (long)i * b->info_size, info, sizeof(double) * b->info_size);
            fv_mj_reset_one(b, i, obs, info);
            j->was_reset[i] = 1;
        }
    }
    return ended;
}

static int fv_mj_reset_chunk(const void* arg, int lo, int hi) {
    const fv_mj_job* j = arg;
    fv_mj_batch* b = j->b;
    for (int i = lo / FV_MJ_SPREAD; i < (hi + FV_MJ_SPREAD - 1) / FV_MJ_SPREAD && i < b->num_envs; i++) {
        if (j->mask && !j->mask[i]) continue;
        if (j->seeds) { /* the seed hashed: seed + 1's stream must not be seed's shifted by one draw */
            fv_mj_rng mixer = {j->seeds[i] ^ 0x2545F4914F6CDD1DULL};
            b->envs[i].rng.s = fv_mj_next(&mixer);
        }
        fv_mj_reset_one(b, i, j->obs + (long)i * b->obs_size, j->info + (long)i * b->info_size);
    }
    return 0;
}

/* ---------------------------------------------------------------- the library's functions */
FV_EXPORT const char* fv_mj_task_field(const char* name, int which) {
    const fv_mj_task* t = fv_mj_find(name);
    if (!t) return NULL;
    switch (which) {
        case 0: return t->xml_file;
        case 1: return t->params;
        case 2: return t->info;
        case 3: return t->reset_info;
        default: return NULL;
    }
}

/* The user's task's name, or NULL in a build without one. */
FV_EXPORT const char* fv_mj_user_task_name(void) {
#ifdef FV_MJ_USER_TASK
    return fv_mj_user_task.name;
#else
    return NULL;
#endif
}

FV_EXPORT int fv_mj_task_frame_skip(const char* name) {
    const fv_mj_task* t = fv_mj_find(name);
    return t ? t->frame_skip : -1;
}

int fv_np_dot_fma = 1;

FV_EXPORT void fv_mj_set_dot_fma(int fused) { fv_np_dot_fma = fused != 0; }

FV_EXPORT void fv_mj_set_threads(int threads) {
    __atomic_store_n(&fv_pool.threads, threads < 1 ? 1 : (threads > FV_MAX_THREADS ? FV_MAX_THREADS : threads),
                     __ATOMIC_RELAXED);
}

FV_EXPORT void fv_mj_destroy(fv_mj_batch* b) {
    if (!b) return;
    if (b->envs)
        for (int i = 0; i < b->num_envs; i++)
            if (b->envs[i].d) mj_deleteData(b->envs[i].d);
    free(b->envs), free(b->init_qpos), free(b->init_qvel);
    if (b->m) mj_deleteModel(b->m);
    free(b);
}

/* A batch of num_envs envs of task `name` on the model in xml_path, or NULL with err naming the problem. */
FV_EXPORT fv_mj_batch* fv_mj_create(const char* name, const char* xml_path, const double* params, int num_params,
                                    int frame_skip, int num_envs, char* err, int err_len) {
    const fv_mj_task* t = fv_mj_find(name);
    if (!t) return snprintf(err, err_len, "no MuJoCo task named %s", name), NULL;
    if (num_params > FV_MJ_MAX_PARAMS) return snprintf(err, err_len, "too many parameters (%d)", num_params), NULL;
    fv_mj_batch* b = calloc(1, sizeof *b);
    if (!b) return snprintf(err, err_len, "out of memory"), NULL;
    b->task = t, b->frame_skip = frame_skip, b->num_envs = num_envs;
    memcpy(b->p, params, sizeof(double) * num_params);
    char load_err[1000] = "";
    b->m = mj_loadXML(xml_path, NULL, load_err, sizeof load_err);
    if (!b->m) return snprintf(err, err_len, "MuJoCo could not load %s: %s", xml_path, load_err), fv_mj_destroy(b), NULL;
    const char* bad = t->check(b->m, b->p);
    if (bad) return snprintf(err, err_len, "%s does not fit %s: %s", xml_path, name, bad), fv_mj_destroy(b), NULL;
    b->dt = b->m->opt.timestep * frame_skip;
    b->obs_size = t->obs_size(b->m, b->p);
    b->init_qpos = calloc(b->m->nq, sizeof(double)), b->init_qvel = calloc(b->m->nv + 1, sizeof(double));
    b->envs = calloc(num_envs, sizeof(fv_mj_env));
    if (!b->init_qpos || !b->init_qvel || !b->envs) return snprintf(err, err_len, "out of memory"), fv_mj_destroy(b), NULL;
    memcpy(b->init_qpos, b->m->qpos0, sizeof(double) * b->m->nq); /* MjData(model).qpos: qpos0 */
    for (int i = 0; i < num_envs; i++) {
        b->envs[i].d = mj_makeData(b->m);
        if (!b->envs[i].d) return snprintf(err, err_len, "out of memory for env %d's mjData", i), fv_mj_destroy(b), NULL;
        b->envs[i].rng.s = (unsigned long long)i;
    }
    return b;
}

/* obs_size, nq, nv, nu, ntendon, nbody */
FV_EXPORT void fv_mj_sizes(const fv_mj_batch* b, int* out) {
    out[0] = b->obs_size, out[1] = b->m->nq, out[2] = b->m->nv, out[3] = b->m->nu, out[4] = b->m->ntendon;
    out[5] = b->m->nbody;
}

FV_EXPORT void fv_mj_set_info_size(fv_mj_batch* b, int info_size) { b->info_size = info_size; }

FV_EXPORT void fv_mj_ctrlrange(const fv_mj_batch* b, double* low, double* high) {
    for (int k = 0; k < b->m->nu; k++) low[k] = b->m->actuator_ctrlrange[2 * k], high[k] = b->m->actuator_ctrlrange[2 * k + 1];
}

FV_EXPORT double fv_mj_timestep(const fv_mj_batch* b) { return b->m->opt.timestep; }


FV_EXPORT void fv_mj_reset(fv_mj_batch* b, const unsigned long long* seeds, const unsigned char* mask, double* obs,
                           double* info) {
    fv_mj_job j = {b, NULL, 0, 0, NULL, NULL, seeds, mask, obs, NULL, info, NULL, NULL, NULL, NULL};
    fv_pool_run_chunks(fv_mj_reset_chunk, &j, b->num_envs * FV_MJ_SPREAD, FV_MJ_CHUNKS_PER_THREAD);
}

/* Steps every env; returns how many episodes ended, or -1 - k when action value k is NaN or infinite
 * (then nothing is stepped). final_obs and final_info given: SAME_STEP autoreset, else NEXT_STEP. was_reset:
 * the env was reset in this step (NEXT_STEP: instead of stepping; SAME_STEP: after its episode ended). */
FV_EXPORT int fv_mj_step(fv_mj_batch* b, const double* actions, int action_f32, int max_steps, double* obs,
                         double* rewards, unsigned char* terminated, unsigned char* truncated, double* info,
                         unsigned char* was_reset, unsigned char* unstable, double* final_obs, double* final_info) {
    long count = (long)b->num_envs * b->m->nu;
    for (long k = 0; k < count; k++)
        if (!isfinite(actions[k]) && !b->envs[k / b->m->nu].needs_reset) return (int)(-1 - k);
    fv_mj_job j = {b, actions, action_f32, max_steps, final_obs, final_info, NULL, NULL, obs, rewards, info,
                   terminated, truncated, was_reset, unstable};
    return fv_pool_run_chunks(fv_mj_step_chunk, &j, b->num_envs * FV_MJ_SPREAD, FV_MJ_CHUNKS_PER_THREAD);
}

/* qpos then qvel of envs idx, as Gymnasium's (data.qpos, data.qvel). */
FV_EXPORT void fv_mj_get_state(const fv_mj_batch* b, int n, const long long* idx, double* out) {
    int nq = b->m->nq, nv = b->m->nv;
    for (int k = 0; k < n; k++) {
        const mjData* d = b->envs[idx[k]].d;
        memcpy(out + (long)k * (nq + nv), d->qpos, sizeof(double) * nq);
        memcpy(out + (long)k * (nq + nv) + nq, d->qvel, sizeof(double) * nv);
    }
}

/* Sets envs idx to qpos, qvel as Gymnasium's reset does after its noise (mj_resetData, then set_state's
 * mj_forward): the rest of the physics state (warm start, time, activations) is a fresh episode's. */
FV_EXPORT void fv_mj_set_state(fv_mj_batch* b, int n, const long long* idx, const double* values, double* obs) {
    int nq = b->m->nq, nv = b->m->nv;
    for (int k = 0; k < n; k++) {
        int i = (int)idx[k];
        mjData* d = b->envs[i].d;
        mj_resetData(b->m, d);
        memcpy(d->qpos, values + (long)k * (nq + nv), sizeof(double) * nq);
        memcpy(d->qvel, values + (long)k * (nq + nv) + nq, sizeof(double) * nv);
        mj_forward(b->m, d);
        fv_mj_ctx c = fv_mj_context(b, i, obs + (long)i * b->obs_size, NULL);
        b->task->observe(&c);
        b->envs[i].needs_reset = 0;
    }
}
