/* cartpole_layout.c: a lab measurement, not product code. How fast one thread steps N exact float64
 * CartPoles (the vector pass of batch.h's fv_step_tile: env_step_simd over every env of a tile) with the
 * state stored as
 *   aos_real  the real fv_slot layout (64-byte stride) and the real cartpole.h env_step_simd, called
 *             through State* as fv_step_tile does;
 *   aos64     the same 64-byte slot (State, fv_rng, ep_return, ep_length, needs_reset), this file's copy
 *             of the step;
 *   aos32     a bare {x, x_dot, theta, theta_dot} per env (32-byte stride);
 *   soa       four double arrays;
 * each with
 *   exact     Gymnasium's three divisions by the total mass 1.1 (cartpole.h's step);
 *   recip     those three as products with (1 / 1.1): NOT Gymnasium's bits, only to bound their cost (the
 *             variable division of thetaacc stays);
 * and each with
 *   out       writing what the real pass writes: float32 obs (N, 4), float32 reward, int terminated flag;
 *   bare      the state alone (a lower bound).
 * Build and run through cartpole_layout.py (fastvec's CPU flags). Prints one line per timed variant.
 *
 * Timing: each sample is STEPS_PER_SAMPLE steps of all N envs, from states drawn like Gymnasium's resets
 * (re-drawn, untimed, before every sample, so that poles stay in the live range where fvm_sincos_mid is
 * valid, as in the real pass), TSC ticks per env-step. Variants are interleaved round-robin, sample by sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "cartpole.h" /* the real env: State, env_step_simd, fvm_sincos_mid (glibc_math.h), fv_rng */

/* batch.h's fv_slot for CartPole (NUM_AGENTS 1), copied so that batch.h's pool is not compiled in. */
typedef struct {
    State env;
    fv_rng rng;
    float ep_return[NUM_AGENTS];
    int ep_length;
    int needs_reset;
} slot_t;

typedef struct { double x, x_dot, theta, theta_dot; } bare_t;

typedef struct {
    int n;
    slot_t* slots;
    bare_t* bare;
    double *x, *x_dot, *theta, *theta_dot;
    long long* actions;
    float* obs;
    float* rewards;
    int* term;
} bufs;

/* cartpole.h's cartpole_step + env_step_simd, on four doubles by reference; RECIP: the three divisions by
 * CP_TOTAL_MASS as products with its reciprocal. Gymnasium's order of operations otherwise. */
#define CP_STEP(X, XD, TH, THD, ACT, OBS, REW, TERM, RECIP, OUT)                                               \
    do {                                                                                                        \
        double sintheta, costheta;                                                                              \
        fvm_sincos_mid((TH), &sintheta, &costheta);                                                             \
        double force = (ACT) == 1 ? CP_FORCE_MAG : -CP_FORCE_MAG;                                               \
        double temp, thetaacc, xacc;                                                                            \
        if (RECIP) {                                                                                            \
            const double inv_tm = 1.0 / CP_TOTAL_MASS;                                                          \
            temp = (force + CP_POLEMASS_LENGTH * ((THD) * (THD)) * sintheta) * inv_tm;                          \
            thetaacc = (CP_GRAVITY * sintheta - costheta * temp) /                                              \
                       (CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (costheta * costheta) * inv_tm));                \
            xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta * inv_tm;                                    \
        } else {                                                                                                \
            temp = (force + CP_POLEMASS_LENGTH * ((THD) * (THD)) * sintheta) / CP_TOTAL_MASS;                   \
            thetaacc = (CP_GRAVITY * sintheta - costheta * temp) /                                              \
                       (CP_LENGTH * (4.0 / 3.0 - CP_MASSPOLE * (costheta * costheta) / CP_TOTAL_MASS));         \
            xacc = temp - CP_POLEMASS_LENGTH * thetaacc * costheta / CP_TOTAL_MASS;                             \
        }                                                                                                       \
        double nx = (X) + CP_TAU * (XD);                                                                        \
        double nxd = (XD) + CP_TAU * xacc;                                                                      \
        double nth = (TH) + CP_TAU * (THD);                                                                     \
        double nthd = (THD) + CP_TAU * thetaacc;                                                                \
        (X) = nx; (XD) = nxd; (TH) = nth; (THD) = nthd;                                                         \
        if (OUT) {                                                                                              \
            (OBS)[0] = (float)nx; (OBS)[1] = (float)nxd; (OBS)[2] = (float)nth; (OBS)[3] = (float)nthd;         \
            (REW)[0] = 1.0f;                                                                                    \
            (TERM) = (nx < -CP_X_THRESHOLD) | (nx > CP_X_THRESHOLD) | (nth < -CP_THETA_THRESHOLD) |             \
                     (nth > CP_THETA_THRESHOLD);                                                                \
        }                                                                                                       \
    } while (0)

/* The real pass: fv_step_tile's first loop (actions, obs, rewards, stats at the same offsets). */
__attribute__((noinline)) static void step_aos_real(bufs* b) {
    slot_t* slots = b->slots;
    const long long* actions = b->actions;
    float *obs = b->obs, *rewards = b->rewards;
    int* term = b->term;
    float stats[1];
    #pragma omp simd
    for (int i = 0; i < b->n; i++)
        term[i] = env_step_simd(&slots[i].env, &slots[i].rng, actions + i, obs + i * 4, rewards + i, stats) != 0;
}

#define DEF_AOS(name, T, FIELD, RECIP, OUT)                                                                  \
    __attribute__((noinline)) static void name(bufs* b) {                                                    \
        T* a = b->FIELD;                                                                                     \
        const long long* actions = b->actions;                                                               \
        float *obs = b->obs, *rewards = b->rewards;                                                          \
        int* term = b->term;                                                                                 \
        _Pragma("omp simd") for (int i = 0; i < b->n; i++)                                                   \
            CP_STEP(a[i].ST x, a[i].ST x_dot, a[i].ST theta, a[i].ST theta_dot, actions[i], obs + i * 4,     \
                    rewards + i, term[i], RECIP, OUT);                                                       \
    }
#define ST env.
DEF_AOS(step_aos64_exact_out, slot_t, slots, 0, 1)
DEF_AOS(step_aos64_recip_out, slot_t, slots, 1, 1)
DEF_AOS(step_aos64_exact_bare, slot_t, slots, 0, 0)
DEF_AOS(step_aos64_recip_bare, slot_t, slots, 1, 0)
#undef ST
#define ST
DEF_AOS(step_aos32_exact_out, bare_t, bare, 0, 1)
DEF_AOS(step_aos32_recip_out, bare_t, bare, 1, 1)
DEF_AOS(step_aos32_exact_bare, bare_t, bare, 0, 0)
DEF_AOS(step_aos32_recip_bare, bare_t, bare, 1, 0)
#undef ST

#define DEF_SOA(name, RECIP, OUT)                                                                            \
    __attribute__((noinline)) static void name(bufs* b) {                                                    \
        double* restrict x = b->x;                                                                           \
        double* restrict xd = b->x_dot;                                                                      \
        double* restrict th = b->theta;                                                                      \
        double* restrict thd = b->theta_dot;                                                                 \
        const long long* restrict actions = b->actions;                                                      \
        float* restrict obs = b->obs;                                                                        \
        float* restrict rewards = b->rewards;                                                                \
        int* restrict term = b->term;                                                                        \
        _Pragma("omp simd") for (int i = 0; i < b->n; i++)                                                   \
            CP_STEP(x[i], xd[i], th[i], thd[i], actions[i], obs + i * 4, rewards + i, term[i], RECIP, OUT);  \
    }
DEF_SOA(step_soa_exact_out, 0, 1)
DEF_SOA(step_soa_recip_out, 1, 1)
DEF_SOA(step_soa_exact_bare, 0, 0)
DEF_SOA(step_soa_recip_bare, 1, 0)

typedef enum { L_SLOT, L_BARE, L_SOA } layout;
typedef struct { const char* name; void (*fn)(bufs*); layout lay; } variant;
static const variant VARIANTS[] = {
    {"aos_real  exact out ", step_aos_real, L_SLOT},
    {"aos64     exact out ", step_aos64_exact_out, L_SLOT},
    {"aos32     exact out ", step_aos32_exact_out, L_BARE},
    {"soa       exact out ", step_soa_exact_out, L_SOA},
    {"aos64     recip out ", step_aos64_recip_out, L_SLOT},
    {"aos32     recip out ", step_aos32_recip_out, L_BARE},
    {"soa       recip out ", step_soa_recip_out, L_SOA},
    {"aos64     exact bare", step_aos64_exact_bare, L_SLOT},
    {"aos32     exact bare", step_aos32_exact_bare, L_BARE},
    {"soa       exact bare", step_soa_exact_bare, L_SOA},
    {"aos64     recip bare", step_aos64_recip_bare, L_SLOT},
    {"aos32     recip bare", step_aos32_recip_bare, L_BARE},
    {"soa       recip bare", step_soa_recip_bare, L_SOA},
};
#define NV ((int)(sizeof(VARIANTS) / sizeof(VARIANTS[0])))

static void* xalloc(size_t bytes) {
    void* p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    memset(p, 0, bytes);
    return p;
}

static bufs make_bufs(int n) {
    bufs b;
    b.n = n;
    b.slots = xalloc(sizeof(slot_t) * n);
    b.bare = xalloc(sizeof(bare_t) * n);
    b.x = xalloc(8 * (size_t)n); b.x_dot = xalloc(8 * (size_t)n);
    b.theta = xalloc(8 * (size_t)n); b.theta_dot = xalloc(8 * (size_t)n);
    b.actions = xalloc(8 * (size_t)n);
    b.obs = xalloc(16 * (size_t)n);
    b.rewards = xalloc(4 * (size_t)n);
    b.term = xalloc(4 * (size_t)n);
    return b;
}

/* Every layout's state from one array of States. */
static void load_state(bufs* b, const State* s) {
    for (int i = 0; i < b->n; i++) {
        b->slots[i].env = s[i];
        b->bare[i].x = s[i].x; b->bare[i].x_dot = s[i].x_dot;
        b->bare[i].theta = s[i].theta; b->bare[i].theta_dot = s[i].theta_dot;
        b->x[i] = s[i].x; b->x_dot[i] = s[i].x_dot; b->theta[i] = s[i].theta; b->theta_dot[i] = s[i].theta_dot;
    }
}

static State read_state(const bufs* b, layout lay, int i) {
    State s;
    if (lay == L_SLOT) return b->slots[i].env;
    if (lay == L_BARE) { s.x = b->bare[i].x; s.x_dot = b->bare[i].x_dot; s.theta = b->bare[i].theta; s.theta_dot = b->bare[i].theta_dot; return s; }
    s.x = b->x[i]; s.x_dot = b->x_dot[i]; s.theta = b->theta[i]; s.theta_dot = b->theta_dot[i];
    return s;
}

/* Gymnasium-like starting states (uniform [-0.05, 0.05)), drawn with fastvec's RNG. */
static void draw_states(State* s, int n, fv_u64 seed) {
    float obs[4];
    for (int i = 0; i < n; i++) {
        fv_rng r;
        fv_rng_seed(&r, seed + (fv_u64)i);
        env_reset(&s[i], &r, obs);
    }
}

static void draw_actions(long long* a, int n, fv_u64 seed) {
    for (int i = 0; i < n; i++) a[i] = (long long)(fv_mix64(seed * 0x9E3779B97F4A7C15ULL + (fv_u64)i) >> 63);
}

/* Bit-identity check: every exact variant against the real one (aos_real) and the scalar env_step (glibc
 * sin/cos through fv_sin/fv_cos, not the vector fvm_sincos_mid) over `steps` steps, states compared by
 * bits after every step for envs still in fvm_sincos_mid's range, and the final states of all envs
 * against aos_real's. */
static int check(int n, int steps) {
    bufs b = make_bufs(n);
    State* start = malloc(sizeof(State) * n);
    State* ref = malloc(sizeof(State) * n);
    draw_states(start, n, 12345);
    int exact_ids[] = {0, 1, 2, 3, 7, 8, 9};
    int n_exact = (int)(sizeof(exact_ids) / sizeof(exact_ids[0]));
    int bad = 0;
    for (int v = 0; v < n_exact; v++) {
        const variant* var = &VARIANTS[exact_ids[v]];
        int with_out = strstr(var->name, "out") != NULL;
        load_state(&b, start);
        memcpy(ref, start, sizeof(State) * n);
        long long mismatches = 0, scalar_steps = 0;
        for (int t = 0; t < steps; t++) {
            draw_actions(b.actions, n, (fv_u64)t + 1);
            var->fn(&b);
            for (int i = 0; i < n; i++) {
                /* the reference: scalar env_step where it is valid (every state in this check), else stop */
                float o[4], r;
                if (FVM_SINCOS_MID(ref[i].theta)) {
                    int tm = env_step(&ref[i], NULL, &b.actions[i], o, &r, NULL);
                    scalar_steps++;
                    State got = read_state(&b, var->lay, i);
                    if (memcmp(&got, &ref[i], sizeof(State)) != 0) mismatches++;
                    if (with_out && (memcmp(o, b.obs + 4 * i, 16) != 0 || tm != b.term[i])) mismatches++;
                } else {
                    /* outside fvm_sincos_mid's range: the real batch steps it with env_step (set aside);
                     * here both sides keep their (meaningless) values; re-sync the reference */
                    ref[i] = read_state(&b, var->lay, i);
                }
            }
        }
        printf("check %s: %d envs x %d steps, %lld env-steps compared with scalar env_step: %lld mismatches\n",
               var->name, n, steps, scalar_steps, mismatches);
        bad += mismatches != 0;
    }
    /* all layouts against aos_real over every env, in range or not: bitwise equal final states */
    State* final_real = malloc(sizeof(State) * n);
    for (int v = 0; v < n_exact; v++) {
        const variant* var = &VARIANTS[exact_ids[v]];
        load_state(&b, start);
        for (int t = 0; t < steps; t++) { draw_actions(b.actions, n, (fv_u64)t + 1); var->fn(&b); }
        long long diff = 0;
        for (int i = 0; i < n; i++) {
            State s = read_state(&b, var->lay, i);
            if (v == 0) final_real[i] = s;
            else diff += memcmp(&s, &final_real[i], sizeof(State)) != 0;
        }
        if (v > 0) printf("check %s: final states after %d steps vs aos_real, all %d envs: %lld differ\n",
                          var->name, steps, n, diff);
        bad += diff != 0;
    }
    free(final_real); free(start); free(ref);
    return bad;
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    int samples = argc > 2 ? atoi(argv[2]) : 200;
    int steps_per_sample = argc > 3 ? atoi(argv[3]) : 10;
    int check_only = argc > 4 ? atoi(argv[4]) : 0;
    printf("sizeof(slot_t) = %zu (batch.h's fv_slot for CartPole), sizeof(State) = %zu\n", sizeof(slot_t), sizeof(State));
    if (check(n, 200)) { printf("CHECK FAILED\n"); return 1; }
    if (check_only) return 0;
    bufs b = make_bufs(n);
    State* start = malloc(sizeof(State) * n);
    draw_states(start, n, 777);
    draw_actions(b.actions, n, 99);
    double* ticks = malloc(sizeof(double) * NV * samples);
    double* ns = malloc(sizeof(double) * NV * samples);
    for (int rep = 0; rep < samples; rep++) {
        for (int v = 0; v < NV; v++) {
            int vv = (v + rep) % NV; /* rotate the order too */
            load_state(&b, start);
            VARIANTS[vv].fn(&b); /* warm: the state and outputs in cache, as in the real tile passes */
            load_state(&b, start);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            unsigned long long c0 = __rdtsc();
            for (int k = 0; k < steps_per_sample; k++) VARIANTS[vv].fn(&b);
            unsigned long long c1 = __rdtsc();
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double env_steps = (double)n * steps_per_sample;
            ticks[vv * samples + rep] = (double)(c1 - c0) / env_steps;
            ns[vv * samples + rep] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / env_steps;
        }
    }
    /* Paired ratios: each sample against aos_real's sample of the same round (the rounds take a few ms, so
     * both almost always ran at the same VM speed level), then the median over rounds. */
    double* ratio = malloc(sizeof(double) * samples);
    printf("%-22s %8s %8s %8s %8s %8s %12s %10s\n", "variant", "tsc/env", "tsc/env", "tsc/env", "ns/env", "ns/env",
           "tsc per 4096", "vs aos_real");
    printf("%-22s %8s %8s %8s %8s %8s %12s %10s\n", "", "min", "p10", "median", "min", "median", "(median)",
           "(paired)");
    for (int v = 0; v < NV; v++) {
        for (int r = 0; r < samples; r++) ratio[r] = ticks[v * samples + r] / ticks[0 * samples + r];
        qsort(ratio, samples, sizeof(double), cmp_double);
        double rmed = ratio[samples / 2];
        if (v == 0) continue;
        /* sorted after aos_real's ratios are taken */
        qsort(ticks + v * samples, samples, sizeof(double), cmp_double);
        qsort(ns + v * samples, samples, sizeof(double), cmp_double);
        double tmin = ticks[v * samples], tp10 = ticks[v * samples + samples / 10], tmed = ticks[v * samples + samples / 2];
        printf("%-22s %8.2f %8.2f %8.2f %8.3f %8.3f %12.0f %10.3f\n", VARIANTS[v].name, tmin, tp10, tmed, ns[v * samples],
               ns[v * samples + samples / 2], tmed * 4096, rmed);
    }
    {
        int v = 0;
        qsort(ticks, samples, sizeof(double), cmp_double);
        qsort(ns, samples, sizeof(double), cmp_double);
        printf("%-22s %8.2f %8.2f %8.2f %8.3f %8.3f %12.0f %10.3f\n", VARIANTS[v].name, ticks[0], ticks[samples / 10],
               ticks[samples / 2], ns[0], ns[samples / 2], ticks[samples / 2] * 4096, 1.0);
    }
    return 0;
}
