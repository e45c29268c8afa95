/* fastvec.h: the portable environment ABI. An env file includes this header and then defines,
 * for ONE environment: its sizes and spaces, a `State` struct, `env_reset`, `env_step` and `env_render`.
 * The same file compiles as C99 (CPU backend) and as CUDA (GPU backend); see batch.h.
 *
 * Contract an env file fulfils (sizes may depend on -D parameters, e.g. FRAMESKIP):
 *   #define OBS_SIZE      elements per agent observation
 *   #define NUM_AGENTS    agents per environment (1 for single-agent games)
 *   #define NUM_STATS     episode statistics the env reports at episode end (0 allowed)
 *   #define STAT_NAMES    comma-separated names of those statistics, e.g. "score"
 *   #define RENDER_W / RENDER_H  size of an rgb_array frame
 *   the action space (per agent), one of:
 *     #define NUM_ACTIONS n                          Discrete(n) (ACTION_SPACE FV_DISCRETE, the default)
 *     #define ACTION_SPACE FV_MULTI_DISCRETE, ACTION_DIMS k, ACTION_NVEC {n1, ..., nk}   MultiDiscrete
 *     #define ACTION_SPACE FV_BOX, ACTION_DIMS k, ACTION_LOW {l1, ..., lk}, ACTION_HIGH {h1, ..., hk}
 *                                                    Box of float32 with these bounds per dimension
 *   typedef struct {...} State;
 *   FV_FN void env_reset(State* s, fv_rng* rng, OBS_T* obs);          obs: (NUM_AGENTS, OBS_SIZE)
 *   FV_FN int  env_step(State* s, fv_rng* rng, const ACT_T* actions, OBS_T* obs,
 *                       float* rewards, float* stats);                 returns 1 when terminated
 *   FV_FN void env_render(const State* s, unsigned char* rgb);         rgb: (RENDER_H, RENDER_W, 3)
 * ACT_T is `long long` for Discrete and MultiDiscrete, `float` for Box; `actions` is (NUM_AGENTS,
 * ACTION_DIMS) (ACTION_DIMS is 1 for Discrete). Only valid actions reach env_step: discrete ones in
 * range, Box ones finite (the backends raise on NaN and infinity, and step nothing); a finite Box
 * action outside the bounds is passed as it is, and the env clips it as its Gymnasium original does.
 * Observation space, optional: #define OBS_T unsigned char (default float: float32); #define OBS_SHAPE
 * 10, 10, 4 (the product is OBS_SIZE; default (OBS_SIZE,)); bounds for every element, #define OBS_LOW x /
 * OBS_HIGH x, or per element, OBS_LOW_ARRAY {...} / OBS_HIGH_ARRAY {...} (OBS_SIZE values; FV_INF is
 * infinity). Default bounds: float (-FV_INF, FV_INF), unsigned char (0, 255). They are the Gymnasium
 * observation space's, which the host reads back from the build.
 * State access, optional (as Gymnasium's `env.unwrapped.state`): #define STATE_SIZE k and
 *   FV_FN void env_get_state(const State* s, double* out);              k float64 values, Gymnasium's order
 *   FV_FN void env_set_state(State* s, const double* in, OBS_T* obs);   sets them, writes the observation(s)
 * Agents with spaces of their own (MPE's), optional: #define AGENT_SPACES 1 and
 *   FV_FN int env_agent_obs_size(int a);      agent a's observation: the first k of its OBS_SIZE (zeros after)
 *   FV_FN int env_agent_action_size(int a);   its Discrete(n) (n <= NUM_ACTIONS), or its Box's first k dims
 * (the batch's spaces are the largest agent's; an agent's action beyond its own space must be harmless).
 * Available actions (Discrete action spaces only), optional: #define ACTION_MASK 1 and
 *   FV_FN void env_action_mask(const State* s, unsigned char* mask);  mask: (NUM_AGENTS, NUM_ACTIONS), 1 where
 *                                                                       the agent may take the action, else 0
 * (the backends hand it out as `batch.action_mask` for the observation they return; an action the mask
 * rules out still reaches env_step, and the env gives it its own meaning: SMAX's does nothing with it).
 * A global state for centralised critics, optional: #define WORLD_STATE_SIZE k and
 *   FV_FN void env_world_state(const State* s, float* out);           k float32 values (`batch.world_state`)
 * #define SIMD_STEP 1 where env_step is
 * straight-line code (no branches and no calls; selects, `|` rather than `||`, and loops of fixed
 * length are fine): the CPU backend then runs it across envs in vector instructions (cartpole.h).
 * Where only part of the state space has a straight-line step, also #define SIMD_STEP_VALID(s), true for
 * the states that FV_FN int env_step_simd(...) (env_step's signature and results) steps; the others take
 * env_step one at a time. env_step_simd must be harmless on any state (it runs on all, its results for
 * the others are discarded). Where the straight-line step may not cover where a state goes, #define
 * SIMD_STEP_REDO 1 and add FV_SIMD_REDO to env_step_simd's result for such a step: env_step then takes it
 * from the state before (acrobot.h's float32 step, whose angle wraps loop).
 * #define SIMD_SELECTS 1, before including this header, where env_step_simd's selects have floating-point
 * work on both sides: a CPU build without AVX-512 then computes both (it assumes no floating-point traps), which
 * GCC otherwise does only with AVX-512's masked operations, so that the passes vectorise with AVX2 too
 * (cartpole.h). AVX-512 builds keep trapping math: they need no help, and it cost MountainCar's scalar cos 40%.
 * #define STEP_USES_RNG 0 where env_step never draws from rng (only env_reset does): the GPU step then
 * reads an env's RNG state only when that env may reset (batch_gpu.h; cartpole.h).
 * Truncation, episode returns, autoreset and seeding are the backends' job, never the env's.
 */
#ifndef FASTVEC_H
#define FASTVEC_H

/* SIMD_SELECTS: no env reads floating-point exception flags, and the values stay IEEE's. Set here, ahead of every
 * function of the build, so that all of it has the same options and inlines into the passes. */
#if defined(SIMD_SELECTS) && SIMD_SELECTS && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    !defined(__AVX512F__)
#pragma GCC optimize("no-trapping-math")
#endif

#ifdef __CUDACC__
#define FV_FN static __device__ __forceinline__
#define FV_TABLE static __constant__ const /* a table every thread reads: the constant cache */
#else
#define FV_FN static inline
#define FV_TABLE static const
#include <math.h>
#include <string.h>
#endif

typedef unsigned long long fv_u64;

/* a < b ? a : b and a > b ? a : b, as minss and maxss on the CPU: GCC keeps a clamp's select as a branch,
 * which mispredicts where the values differ from env to env. SSE's own header, not immintrin.h: with
 * -march=native that one brings every AVX-512 header, most of the time a small env's build takes. */
#if defined(__SSE__) && !defined(__CUDACC__)
#include <xmmintrin.h>
FV_FN float fv_minf(float a, float b) { return _mm_cvtss_f32(_mm_min_ss(_mm_set_ss(a), _mm_set_ss(b))); }
FV_FN float fv_maxf(float a, float b) { return _mm_cvtss_f32(_mm_max_ss(_mm_set_ss(a), _mm_set_ss(b))); }
#else
FV_FN float fv_minf(float a, float b) { return a < b ? a : b; }
FV_FN float fv_maxf(float a, float b) { return a > b ? a : b; }
#endif

/* Added to env_step_simd's result where env_step must take the step instead (SIMD_STEP_REDO). */
#define FV_SIMD_REDO 2

/* The action space kinds (ACTION_SPACE). */
#define FV_DISCRETE 0
#define FV_MULTI_DISCRETE 1
#define FV_BOX 2

/* An action's type, from ACTION_SPACE as defined when it is used (an env defines ACTION_SPACE after
 * including this file): long long for the discrete kinds (and when ACTION_SPACE is not defined),
 * float for FV_BOX. */
#define ACT_T FV_ACT_T_OF(ACTION_SPACE)
#define FV_ACT_T_OF(kind) FV_ACT_T_PASTE(kind)
#define FV_ACT_T_PASTE(kind) fv_act_t_##kind
#define fv_act_t_0 long long
#define fv_act_t_1 long long
#define fv_act_t_2 float
#define fv_act_t_ACTION_SPACE long long

/* Infinity as a float constant, for observation bounds. */
#define FV_INF (__builtin_inff())

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
