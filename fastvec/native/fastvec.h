/* fastvec.h: the portable environment ABI. An env file includes this header and then defines,
 * for ONE environment: its sizes, a `State` struct, `env_reset`, `env_step` and `env_render`.
 * The same file compiles as C99 (CPU backend, OpenMP) and as CUDA (GPU backend); see batch.h.
 *
 * Contract an env file fulfils (sizes may depend on -D parameters, e.g. FRAMESKIP):
 *   #define OBS_SIZE      floats (or bytes) per agent observation
 *   #define NUM_ACTIONS   size of each agent's Discrete action space
 *   #define NUM_AGENTS    agents per environment (1 for single-agent games)
 *   #define NUM_STATS     episode statistics the env reports at episode end (0 allowed)
 *   #define STAT_NAMES    comma-separated names of those statistics, e.g. "score"
 *   #define RENDER_W / RENDER_H  size of an rgb_array frame
 *   typedef struct {...} State;
 *   FV_FN void env_reset(State* s, fv_rng* rng, OBS_T* obs);          obs: (NUM_AGENTS, OBS_SIZE)
 *   FV_FN int  env_step(State* s, fv_rng* rng, const long long* actions, OBS_T* obs,
 *                       float* rewards, float* stats);                 returns 1 when terminated
 *   FV_FN void env_render(const State* s, unsigned char* rgb);         rgb: (RENDER_H, RENDER_W, 3)
 * Optional: #define OBS_T unsigned char (default float). #define SIMD_STEP 1 where env_step is
 * straight-line code (no branches and no calls; selects, `|` rather than `||`, and loops of fixed
 * length are fine): the CPU backend then runs it across envs in vector instructions (cartpole.h).
 * #define STEP_USES_RNG 0 where env_step never draws from rng (only env_reset does): the GPU step then
 * reads an env's RNG state only when that env may reset (batch_gpu.h; cartpole.h).
 * Truncation, episode returns, autoreset and seeding are the backends' job, never the env's.
 */
#ifndef FASTVEC_H
#define FASTVEC_H

#ifdef __CUDACC__
#define FV_FN static __device__ __forceinline__
#else
#define FV_FN static inline
#include <math.h>
#include <string.h>
#endif

typedef unsigned long long fv_u64;

/* Counter-based RNG: draw k of the stream keyed by `key` is mix(mix(key) + k * golden), so the
 * stream of env i depends only on its seed (seed + i), never on num_envs or the backend. */
typedef struct {
    fv_u64 key;      /* mix(seed), fixed at seeding */
    fv_u64 counter;  /* draws taken so far */
} fv_rng;

FV_FN fv_u64 fv_mix64(fv_u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

FV_FN void fv_rng_seed(fv_rng* r, fv_u64 seed) {
    r->key = fv_mix64(seed);
    r->counter = 0;
}

FV_FN fv_u64 fv_rand_u64(fv_rng* r) {
    r->counter += 1;
    return fv_mix64(r->key + r->counter * 0x9E3779B97F4A7C15ULL);
}

/* Uniform float in [0, 1) with 24 random bits (exactly representable in float32). */
FV_FN float fv_rand_float(fv_rng* r) {
    return (float)(fv_rand_u64(r) >> 40) * (1.0f / 16777216.0f);
}

/* Uniform double in [0, 1) with 53 random bits. */
FV_FN double fv_rand_double(fv_rng* r) {
    return (double)(fv_rand_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform float in [lo, hi). */
FV_FN float fv_rand_uniform(fv_rng* r, float lo, float hi) {
    return lo + (hi - lo) * fv_rand_float(r);
}

/* Uniform int in [0, n). */
FV_FN int fv_rand_int(fv_rng* r, int n) {
    return (int)((fv_rand_u64(r) >> 33) % (fv_u64)n);
}

/* Fill the axis-aligned rectangle [x0, x1) x [y0, y1) of an (h, w, 3) frame, clipped. */
FV_FN void fv_fill_rect(unsigned char* rgb, int w, int h, int x0, int y0, int x1, int y1,
                        unsigned char r, unsigned char g, unsigned char b) {
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > w) x1 = w;
    if (y1 > h) y1 = h;
    for (int y = y0; y < y1; y++) {
        for (int x = x0; x < x1; x++) {
            unsigned char* p = rgb + 3 * (y * w + x);
            p[0] = r; p[1] = g; p[2] = b;
        }
    }
}

#endif /* FASTVEC_H */
