/* mj_view.cu: one task's rules (the task file FV_MJ_TASK_FILE names) over MuJoCo Warp's arrays, a world at a
 * time: the host's C++ compiler loops over the CPU device's worlds, nvcc runs a thread per world on the GPU's. */
#ifndef FV_MJ_TASK_FILE
#error "mj_view.cu: name the task file, e.g. -DFV_MJ_TASK_FILE='\"hopper.c\"'"
#endif
#define FV_MJ_VIEW 1
#include "mj_task.h"
#include FV_MJ_TASK_FILE

#ifdef __CUDACC__
#define FV_MJV_EXPORT extern "C" __global__
#define FV_MJV_WORLDS(i, n) \
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)
#else
#define FV_MJV_EXPORT extern "C" __attribute__((visibility("default")))
#define FV_MJV_WORLDS(i, n) for (long i = 0; i < (n); i++)
#endif

/* One call's arguments (ctypes' fv_mjv_job in warp_batch.py mirrors it field by field). */
typedef struct {
    mjModel m;
    fv_mjv_arrays a;
    const double* p, *init_qpos, *init_qvel;  /* the task's parameters; qpos0 and zero velocities */
    double dt;
    int obs_size, info_size, action_f32, num_worlds;
    double* actions;                          /* (N, nu) as given (float32 values when action_f32) */
    double* keep;                             /* (N, FV_MJ_KEEP): what `before` kept for `after` */
    double* obs, *rewards, *info;             /* (N, obs_size), (N,), (N, info_size) */
    unsigned char* terminated, *unstable;     /* (N,) */
    const unsigned char* mask;                /* (N,): the worlds to reset and observe */
    fv_mj_rng* rng;                           /* (N,): each world's reset noise stream */
    /* The step's bookkeeping (fv_mjv_take, fv_mjv_book), so that a whole step runs without the host */
    const void* given;                        /* (N, nu) the caller's actions: float32 if given_f32, else float64 */
    unsigned char* reset_now;                 /* the same buffer as mask: fv_mjv_book writes it */
    unsigned char* needs_reset, *resetting;   /* (N,): ended last step (NEXT_STEP); reset instead of stepped now */
    unsigned char* out_terminated, *out_truncated, *out_was_reset, *out_unstable;  /* (N,) the step's flags */
    long long* elapsed;                       /* (N,): steps of the running episode */
    double* final_obs, *final_info;           /* (N, obs_size), (N, info_size) under SAME_STEP, else NULL */
    unsigned long long* error;                /* the lowest (world * nu + dimension) of a non-finite action */
    int given_f32, same_step, max_episode_steps, pad_;
} fv_mjv_job;

FV_MJ_INLINE fv_mj_ctx fv_mjv_context(const fv_mjv_job* j, mjData* d, long i) {
    fv_mj_ctx c;
    memset(&c, 0, sizeof c);
    c.m = &j->m, c.d = d, c.p = j->p, c.init_qpos = j->init_qpos, c.init_qvel = j->init_qvel, c.dt = j->dt;
    c.obs = j->obs + i * j->obs_size, c.info = j->info + i * j->info_size;
    c.action = j->actions ? j->actions + i * j->m.nu : NULL, c.action_f32 = j->action_f32;
    return c;
}

/* The task's `before` of the worlds in mask, into keep. Called once a world's state is final for the step to
 * come (after the last step or a reset's forward), so a later forward of other worlds cannot reach it: the step's
 * `before` reads the state the last step left (xpos of the state before its last mj_step, as libmujoco's). */
FV_MJV_EXPORT void fv_mjv_keep(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        if (j.mask[i]) {
            mjData d = fv_mjv_world(&j.m, &j.a, i);
            fv_mj_ctx c = fv_mjv_context(&j, &d, i);
            before(&c);
            for (int k = 0; k < FV_MJ_KEEP; k++) j.keep[i * FV_MJ_KEEP + k] = c.keep[k];
        }
    }
}

/* Every world's action into ctrl (float32, as MuJoCo Warp holds it), before the physics steps. */
FV_MJV_EXPORT void fv_mjv_act(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        float* ctrl = j.a.ctrl + i * j.m.nu;
        for (int k = 0; k < j.m.nu; k++) ctrl[k] = (float)j.actions[i * j.m.nu + k];
    }
}

/* After them (and rne_postconstraint): obs, reward, terminated and info; a world whose qpos or qvel is not
 * finite is unstable and terminated. */
FV_MJV_EXPORT void fv_mjv_after(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        mjData d = fv_mjv_world(&j.m, &j.a, i);
        fv_mj_ctx c = fv_mjv_context(&j, &d, i);
        for (int k = 0; k < FV_MJ_KEEP; k++) c.keep[k] = j.keep[i * FV_MJ_KEEP + k];
        int finite_q, finite_v;
        FV_MJ_ISFINITE_ALL(d.qpos, j.m.nq, finite_q);
        FV_MJ_ISFINITE_ALL(d.qvel, j.m.nv, finite_v);
        after(&c);
        j.rewards[i] = c.reward;
        j.unstable[i] = (unsigned char)!(finite_q && finite_v);
        j.terminated[i] = (unsigned char)(c.terminated || j.unstable[i]);
    }
}

/* The reset noise of the worlds in mask, over the state MuJoCo Warp's reset_data left (qpos0, zero qvel). */
FV_MJV_EXPORT void fv_mjv_reset(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        if (j.mask[i]) {
            mjData d = fv_mjv_world(&j.m, &j.a, i);
            fv_mj_ctx c = fv_mjv_context(&j, &d, i);
            reset(&c, &j.rng[i]);
        }
    }
}

/* The observation and reset info of the worlds in mask (after forward), the other info values 0; their episodes
 * start: no steps taken, nothing left to reset. */
FV_MJV_EXPORT void fv_mjv_observe(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        if (j.mask[i]) {
            mjData d = fv_mjv_world(&j.m, &j.a, i);
            fv_mj_ctx c = fv_mjv_context(&j, &d, i);
            for (int k = 0; k < j.info_size; k++) c.info[k] = 0.0;
            observe(&c);
            reset_values(&c);
            j.elapsed[i] = 0;
            j.needs_reset[i] = 0;
        }
    }
}

/* Before the physics: a world whose episode ended last step (NEXT_STEP) is reset this step instead of stepped, and
 * its action is 0; every other world's action is the caller's, as float64 (a float32 one keeps its value). A
 * non-finite action is taken as 0 and its index, the lowest, kept in *error for the host to report. */
FV_MJV_EXPORT void fv_mjv_take(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        unsigned char skip = j.needs_reset[i];
        j.resetting[i] = skip;
        for (int k = 0; k < j.m.nu; k++) {
            long at = i * j.m.nu + k;
            double v = j.given_f32 ? (double)((const float*)j.given)[at] : ((const double*)j.given)[at];
            if (!isfinite(v)) {
                if (!skip) {
#ifdef __CUDACC__
                    atomicMin(j.error, (unsigned long long)at);
#else
                    if ((unsigned long long)at < *j.error) *j.error = (unsigned long long)at;
#endif
                }
                v = 0.0;
            }
            j.actions[at] = skip ? 0.0 : v;
        }
    }
}

/* After fv_mjv_after: the step's flags (a world reset this step neither terminates nor truncates, and earns 0),
 * the ended episodes' last obs and info under SAME_STEP, and reset_now, the worlds to reset now: those that were
 * reset instead of stepped, and under SAME_STEP those whose episode just ended. */
FV_MJV_EXPORT void fv_mjv_book(fv_mjv_job j) {
    FV_MJV_WORLDS(i, j.num_worlds) {
        unsigned char skip = j.resetting[i];
        long long steps = ++j.elapsed[i];
        unsigned char term = j.terminated[i] && !skip;
        unsigned char trunc = j.max_episode_steps > 0 && steps >= j.max_episode_steps && !skip;
        unsigned char ended = term || trunc;
        j.out_terminated[i] = term, j.out_truncated[i] = trunc;
        j.out_unstable[i] = j.unstable[i] && !skip;
        if (skip) j.rewards[i] = 0.0;
        if (j.same_step && ended) {
            for (int k = 0; k < j.obs_size; k++) j.final_obs[i * j.obs_size + k] = j.obs[i * j.obs_size + k];
            for (int k = 0; k < j.info_size; k++) j.final_info[i * j.info_size + k] = j.info[i * j.info_size + k];
        }
        unsigned char now = skip || (j.same_step && ended);
        j.reset_now[i] = now;
        j.out_was_reset[i] = now;
        j.needs_reset[i] = ended && !j.same_step;
    }
}

#ifndef __CUDACC__
#include <stddef.h>
#include <stdlib.h>

/* The task's observation size for this model and parameters. */
FV_MJV_EXPORT int fv_mjv_obs_size(const mjModel* m, const double* p) { return obs_size(m, p); }

/* A model whose sizes do not fit the task: the reason, else NULL. */
FV_MJV_EXPORT const char* fv_mjv_check(const mjModel* m, const double* p) { return check(m, p); }

/* Whether the task's observe, reset_values or before read more of a world than qpos and qvel (what MuJoCo's forward
 * computes: positions, inertias, velocities, forces): they run on one world at qpos0 with small velocities whose
 * other fields are filled with NaN, then with two different numbers; a NaN in what they write, or a difference,
 * says they do. A task that does not needs no forward after a reset: the next step's own forward computes the
 * rest from qpos and qvel. */
FV_MJV_EXPORT int fv_mjv_reset_reads_forward(const mjModel* m, const double* p, const double* init_qpos,
                                             const double* init_qvel, int obs_size, int info_size) {
    int sizes[] = {m->nq, m->nv, m->nu, 3 * m->nbody, 3 * m->nbody, 3 * m->nsite, 10 * m->nbody, 6 * m->nbody,
                   6 * m->nbody, m->nv, m->nv, m->ntendon, m->ntendon};
    enum { FIELDS = sizeof(sizes) / sizeof(sizes[0]) };
    float* fields[FIELDS];
    int total = obs_size + info_size + FV_MJ_KEEP, reads = 0;
    double* out = (double*)calloc(3 * (size_t)total, sizeof(double));
    for (int f = 0; f < FIELDS; f++) fields[f] = (float*)calloc((size_t)sizes[f] + 1, sizeof(float));
    const float fill[3] = {NAN, 7.25f, -3.5f};
    for (int run = 0; run < 3; run++) {
        for (int f = 3; f < FIELDS; f++)
            for (int k = 0; k < sizes[f]; k++) fields[f][k] = fill[run];
        for (int k = 0; k < m->nq; k++) fields[0][k] = (float)init_qpos[k];
        for (int k = 0; k < m->nv; k++) fields[1][k] = (float)(0.01 * (k + 1));
        mjData d = {fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6], fields[7], fields[8],
                    fields[9], fields[10], fields[11], fields[12]};
        fv_mj_ctx c;
        memset(&c, 0, sizeof c);
        double* o = out + run * total;
        c.m = m, c.d = &d, c.p = p, c.init_qpos = init_qpos, c.init_qvel = init_qvel, c.dt = m->opt.timestep;
        c.obs = o, c.info = o + obs_size;
        observe(&c);
        reset_values(&c);
        before(&c);
        for (int k = 0; k < FV_MJ_KEEP; k++) o[obs_size + info_size + k] = c.keep[k];
    }
    for (int k = 0; k < total; k++)
        if (isnan(out[k]) || out[total + k] != out[2 * total + k]) reads = 1;
    for (int f = 0; f < FIELDS; f++) free(fields[f]);
    free(out);
    return reads;
}

/* fv_mjv_job's size and the offsets of its first and last bookkeeping fields, for the Python mirror's test. */
FV_MJV_EXPORT void fv_mjv_job_layout(long* out) {
    out[0] = (long)sizeof(fv_mjv_job), out[1] = (long)offsetof(fv_mjv_job, given);
    out[2] = (long)offsetof(fv_mjv_job, error), out[3] = (long)offsetof(fv_mjv_job, max_episode_steps);
}
#endif
