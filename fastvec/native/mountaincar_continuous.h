/* mountaincar_continuous.h: Gymnasium's MountainCarContinuous-v0, exactly: force = the action clipped to
 * [-1, 1] times 0.0015, gravity 0.0025 * cos(3 position) (glibc's cos, glibc_math.h), velocity clipped to
 * +-0.07, position to [-1.2, 0.6] with the velocity zeroed at the left wall; terminated at position >=
 * 0.45 with velocity >= goal_velocity; reward 100 on that step, minus 0.1 action^2 on every step.
 * Truncation at 999 steps is the backend's.
 * Gymnasium stores the state as float32 after each step, so from then on NumPy computes in float32
 * wherever a float32 meets a Python float (NEP 50: 3 * position, the velocity and position updates,
 * the comparisons); the first step after a reset (or a set state) computes in float64. `float32_state`
 * records which, and every operation below takes the type NumPy gives it. Rewards are Gymnasium's
 * float64 values rounded to float32 (the batch's reward type).
 * Shared with the discrete car (the observation, the track, GOAL_VELOCITY_MICRO, the float32 motion, the
 * renderer): mountaincar_common.h.
 *
 * -DFLOAT32=1 (the registry's `float32=1`, opt-in): the same rules on an 8-byte float32 state, every step in
 * float32 in gymnax's MountainCarContinuous-v0 order ((v + force power) - cos(3 position) gravity, cos from
 * math32.h; reward -0.1 action^2 + 100 on reaching the goal). gymnax zeroes a negative velocity at the goal;
 * this variant keeps Gymnasium's rule (at the left wall). Termination is Gymnasium's float32 comparison
 * (as it makes from the first step on); a reset is the float64 build's start rounded to float32. Faster on
 * the GPU, and CPU and GPU give the same bits. */
#define SIMD_SELECTS 1 /* its step picks float32 or float64 work by selects (fastvec.h) */
#include "fastvec.h"
#include "glibc_math.h"
#include "mountaincar_common.h"

#define ACTION_SPACE FV_BOX
#define ACTION_DIMS 1
#define ACTION_LOW {-1.0f}
#define ACTION_HIGH {1.0f}
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define STEP_USES_RNG 0

#define MCC_GOAL_POSITION 0.45
#define MCC_POWER 0.0015

/* The float64 build's steps from a float32 state (every step but the first after a reset or a set state) run
 * across envs in the CPU's vector passes: env_step_simd, with a polynomial cos whose result is only kept where
 * the step's rounding to float32 cannot tell it from glibc's (else env_step takes the step). */
#if defined(__AVX2__) && !defined(__CUDACC__) && !FLOAT32
#define SIMD_STEP 1
#define SIMD_STEP_VALID(s) \
    (((s)->float32_state != 0) & ((s)->position == (s)->position) & ((s)->velocity == (s)->velocity))
#define SIMD_STEP_REDO 1
#endif

#if !FLOAT32
typedef struct {
    double position, velocity; /* Gymnasium's unwrapped.state */
    int float32_state;         /* 1 once stepped: the values are float32 and NumPy computes with them as such */
} State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->position = -0.6 + (-0.4 - -0.6) * fv_rand_double(rng); /* uniform in [-0.6, -0.4) */
    s->velocity = 0.0;
    s->float32_state = 0;
    obs[0] = (float)s->position;
    obs[1] = 0.0f;
}

/* A value with the type NumPy gives it: a float32 (np.float32) or a double (np.float64 or a Python float). */
typedef struct {
    double value;
    int is_float32;
} mcc_num;

/* a > b, a < b and a == b for a Python float b, as NumPy compares: in float32 when a is float32. */
FV_FN int mcc_gt(mcc_num a, double b) { return a.is_float32 ? (float)a.value > (float)b : a.value > b; }
FV_FN int mcc_lt(mcc_num a, double b) { return a.is_float32 ? (float)a.value < (float)b : a.value < b; }
FV_FN int mcc_ge(mcc_num a, double b) { return a.is_float32 ? (float)a.value >= (float)b : a.value >= b; }
FV_FN int mcc_eq(mcc_num a, double b) { return a.is_float32 ? (float)a.value == (float)b : a.value == b; }

/* a + b: float32 when both are float32, or one is float32 and the other a Python float (b_is_python). */
FV_FN mcc_num mcc_add(mcc_num a, mcc_num b, int b_is_python) {
    mcc_num r;
    if (a.is_float32 && (b.is_float32 || b_is_python)) {
        r.value = (float)a.value + (float)b.value;
        r.is_float32 = 1;
    } else {
        r.value = a.value + b.value;
        r.is_float32 = 0;
    }
    return r;
}

FV_FN int env_step(State* s, fv_rng* rng, const float* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    (void)stats;
    float action = actions[0];
    int f32 = s->float32_state;
    mcc_num position = {s->position, f32}, velocity = {s->velocity, f32};
    /* force = min(max(action, -1.0), 1.0): the float32 action unless a (Python float) bound replaces it */
    int force_is_python = action < -1.0f || action > 1.0f;
    /* term = force * power - 0.0025 * math.cos(3 * position) */
    double cos_arg = f32 ? (double)(3.0f * (float)s->position) : 3 * s->position;
    double gravity_term = 0.0025 * fv_cos(cos_arg);
    mcc_num term;
    if (force_is_python) {
        term.value = (action < -1.0f ? -1.0 : 1.0) * MCC_POWER - gravity_term;
        term.is_float32 = 0;
    } else {
        term.value = action * (float)MCC_POWER - (float)gravity_term;
        term.is_float32 = 1;
    }
    velocity = mcc_add(velocity, term, force_is_python);
    int velocity_is_python = 0;
    if (mcc_gt(velocity, MC_MAX_SPEED)) { velocity.value = MC_MAX_SPEED; velocity.is_float32 = 0; velocity_is_python = 1; }
    if (mcc_lt(velocity, -MC_MAX_SPEED)) { velocity.value = -MC_MAX_SPEED; velocity.is_float32 = 0; velocity_is_python = 1; }
    position = mcc_add(position, velocity, velocity_is_python);
    if (mcc_gt(position, MC_MAX_POSITION)) { position.value = MC_MAX_POSITION; position.is_float32 = 0; }
    if (mcc_lt(position, MC_MIN_POSITION)) { position.value = MC_MIN_POSITION; position.is_float32 = 0; }
    if (mcc_eq(position, MC_MIN_POSITION) && mcc_lt(velocity, 0.0)) { velocity.value = 0.0; velocity.is_float32 = 0; }
    int terminated = mcc_ge(position, MCC_GOAL_POSITION) && mcc_ge(velocity, MC_GOAL_VELOCITY);
    double reward = terminated ? 100.0 : 0.0;
    reward -= ((double)action * (double)action) * 0.1; /* math.pow of a float32: exact, as the product is */
    s->position = (float)position.value;
    s->velocity = (float)velocity.value;
    s->float32_state = 1;
    obs[0] = (float)s->position;
    obs[1] = (float)s->velocity;
    rewards[0] = (float)reward;
    return terminated;
}

/* 1 where a velocity bound (0.07 or -0.07 as a Python float) and its float32 fall on two sides of the goal
 * velocity, so that the bound's comparison with it cannot be made in float32. */
#define MCC_BOUND_APART(v) (((v) >= MC_GOAL_VELOCITY) != ((float)(v) >= (float)MC_GOAL_VELOCITY))
#define MCC_BOUNDS_COMPARE_APART (MCC_BOUND_APART(MC_MAX_SPEED) | MCC_BOUND_APART(-MC_MAX_SPEED))

/* Whether d, computed from g = 0.0025 fvm_cos_near(x) where Gymnasium has 0.0025 cos(x), rounds to the float32
 * that Gymnasium's value does. d is g or +-0.0015 - g; its distance from Gymnasium's is at most |g| 2^-48.5 + |d|
 * 2^-52 (the near cos within 2^-49, then the product's and the difference's roundings), so where d - e and d + e,
 * with e four times that, round to the same float32, so does Gymnasium's value. */
FV_FN int mcc_rounds_alike(double d, double g) {
    double e = fabs(g) * 0x1p-45 + fabs(d) * 0x1p-50;
    return (float)(d - e) == (float)(d + e);
}

/* env_step from a float32 state (SIMD_STEP_VALID) without branches: each of env_step's values is a float32
 * here but where a bound (a Python float) replaced it, which the flags below track; FV_SIMD_REDO where the
 * gravity term's rounding might not be glibc's (mcc_rounds_alike). */
FV_FN int env_step_simd(State* s, fv_rng* rng, const float* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    (void)stats;
    float action = actions[0];
    float position = (float)s->position, velocity = (float)s->velocity;
    double gravity_term = MC_GRAVITY * fvm_cos_near((double)(3.0f * position));
    /* force * power - gravity_term: in float32 for a float32 force (its product and difference, exact in double
     * and then rounded once, are float32's), in double for a bound (a Python float). Picked by arithmetic, which is
     * exact here, rather than by a select: GCC turns a select into branches with the conversions inside, and
     * then the loop does not vectorise (a conversion might trap). */
    double bound = (double)((action < -1.0f) | (action > 1.0f)); /* 1.0 where the force is a bound */
    double python_term = copysign(MCC_POWER, (double)action) - gravity_term;
    double float_term = (double)(float)((double)action * (double)(float)MCC_POWER) - (double)(float)gravity_term;
    float term = (float)(bound * python_term + (1.0 - bound) * float_term);
    int alike = mcc_rounds_alike(bound * python_term + (1.0 - bound) * gravity_term, gravity_term);
    velocity = velocity + term;
    /* The clips by the values' bits, the tests on the values before them (the same answers), and the wall's zero by
     * arithmetic: GCC turns a select of a float into branches where a test or a conversion follows it, and a vector
     * loop cannot hold those. */
    int bound_speed = (velocity > (float)MC_MAX_SPEED) | (velocity < -(float)MC_MAX_SPEED);
    float speed = mc_clip32(velocity, (float)MC_MAX_SPEED, (float)MC_MAX_SPEED);
    float moved = position + speed;
    float place = mc_clip32(moved, -(float)MC_MIN_POSITION, (float)MC_MAX_POSITION);
    /* the goal's velocity test in float32 also where a bound is a Python float (the same unless the goal velocity
     * lies between a bound and its float32: MCC_BOUNDS_COMPARE_APART), of the clipped speed */
    int fast_enough = ((float)MC_MAX_SPEED >= (float)MC_GOAL_VELOCITY) &
                      ((velocity >= (float)MC_GOAL_VELOCITY) | (-(float)MC_MAX_SPEED >= (float)MC_GOAL_VELOCITY));
    int terminated = (moved >= (float)MCC_GOAL_POSITION) & fast_enough;
    /* at the wall, moving left: 0 (speed - speed, +0; elsewhere speed - 0 is speed, which is never -0) */
    float at_wall = (float)((moved <= (float)MC_MIN_POSITION) & (velocity < 0.0f));
    speed = speed - speed * at_wall;
    double reward = 100.0 * (double)terminated - ((double)action * (double)action) * 0.1;
    s->position = place;
    s->velocity = speed; /* float32_state is 1 already (SIMD_STEP_VALID) */
    obs[0] = place;
    obs[1] = speed;
    rewards[0] = (float)reward;
    int hand_back = (alike == 0) | (MCC_BOUNDS_COMPARE_APART & bound_speed);
    return terminated | (hand_back ? FV_SIMD_REDO : 0);
}

#else /* FLOAT32 */
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) { mc_reset_f32(s, rng, obs); }

FV_FN int env_step(State* s, fv_rng* rng, const float* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    (void)stats;
    float action = actions[0];
    float force = action < -1.0f ? -1.0f : action; /* jnp.clip(action, -1, 1) */
    force = force > 1.0f ? 1.0f : force;
    mc_move_f32(s, force * (float)MCC_POWER);
    obs[0] = s->position;
    obs[1] = s->velocity;
    int terminated = s->position >= (float)MCC_GOAL_POSITION && s->velocity >= (float)MC_GOAL_VELOCITY;
    rewards[0] = -0.1f * (action * action) + (terminated ? 100.0f : 0.0f);
    return terminated;
}
#endif /* FLOAT32 */

/* The state as float64 (the float32 build rounds a set state to float32). */
FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->position;
    out[1] = s->velocity;
}

/* A set state is float64 (as a float64 array assigned to Gymnasium's unwrapped.state); the float32 build
 * rounds it to float32. */
FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->position = in[0];
    s->velocity = in[1];
#if !FLOAT32
    s->float32_state = 0;
#endif
    obs[0] = (float)s->position;
    obs[1] = (float)s->velocity;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    mc_render(s->position, MCC_GOAL_POSITION, rgb);
}
