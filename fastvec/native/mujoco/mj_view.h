/* mj_view.h: the mjModel and mjData a task file reads, as one world's view into MuJoCo Warp's float32 arrays
 * (per-world pointers, the fields the tasks use), for the task files built with -DFV_MJ_VIEW: by nvcc over the
 * device arrays, or by the host's C++ compiler over the CPU device's. */
#ifndef FASTVEC_MJ_VIEW_H
#define FASTVEC_MJ_VIEW_H

#ifndef __cplusplus
#error "mj_view.h: the task files over MuJoCo Warp's arrays compile as C++ (float32 overloads of mj_task.h's sums); build them with g++ or nvcc"
#endif

#ifdef __CUDACC__
#define FV_MJ_FN static __host__ __device__
#define FV_MJ_INLINE static inline __host__ __device__
#else
#define FV_MJ_FN static
#define FV_MJ_INLINE static inline
#endif

typedef float fv_mj_num;

/* The model's sizes and the few model values the tasks read, float64 as the model MuJoCo compiled holds them
 * (the same for every world). body_names: the bodies' names one after another, each ended by a NUL. */
typedef struct {
    int nq, nv, nu, nbody, ntendon, nsite;
    struct { double timestep; } opt;
    const double* body_mass;
    const char* body_names;
} mjModel;

/* One world's rows of MuJoCo Warp's Data arrays (row-major (nworld, ...) float32, vec3 and spatial vectors
 * packed): qpos (nq), qvel (nv), ctrl (nu), xpos, xipos (nbody x 3), site_xpos (nsite x 3), cinert (nbody x 10),
 * cvel, cfrc_ext (nbody x 6), qfrc_actuator, qfrc_constraint (nv), ten_length, ten_velocity (ntendon). */
typedef struct {
    float* qpos, *qvel, *ctrl, *xpos, *xipos, *site_xpos, *cinert, *cvel, *cfrc_ext, *qfrc_actuator, *qfrc_constraint,
        *ten_length, *ten_velocity;
} mjData;

/* MuJoCo Warp's Data arrays, every world's (the base pointers the views are cut from). */
typedef mjData fv_mjv_arrays;

enum { mjOBJ_BODY = 1 };

/* A body's index by name, as libmujoco's mj_name2id for bodies; -1 for none. */
FV_MJ_INLINE int mj_name2id(const mjModel* m, int type, const char* name) {
    if (type != mjOBJ_BODY) return -1;
    const char* s = m->body_names;
    for (int b = 0; b < m->nbody; b++) {
        int k = 0;
        while (s[k] && s[k] == name[k]) k++;
        if (s[k] == name[k]) return b;
        while (*s) s++;
        s++;
    }
    return -1;
}

/* World i's view into the arrays. */
FV_MJ_INLINE mjData fv_mjv_world(const mjModel* m, const fv_mjv_arrays* a, long i) {
    mjData d;
    d.qpos = a->qpos + i * m->nq, d.qvel = a->qvel + i * m->nv, d.ctrl = a->ctrl + i * m->nu;
    d.xpos = a->xpos + i * 3 * m->nbody, d.xipos = a->xipos + i * 3 * m->nbody;
    d.site_xpos = a->site_xpos + i * 3 * m->nsite;
    d.cinert = a->cinert + i * 10 * m->nbody, d.cvel = a->cvel + i * 6 * m->nbody;
    d.cfrc_ext = a->cfrc_ext + i * 6 * m->nbody;
    d.qfrc_actuator = a->qfrc_actuator + i * m->nv, d.qfrc_constraint = a->qfrc_constraint + i * m->nv;
    d.ten_length = a->ten_length + i * m->ntendon, d.ten_velocity = a->ten_velocity + i * m->ntendon;
    return d;
}

#endif /* FASTVEC_MJ_VIEW_H */
