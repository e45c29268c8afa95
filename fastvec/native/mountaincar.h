/* mountaincar.h: Gymnasium's MountainCar-v0, exactly: push left, none or right (force 0.001), gravity
 * 0.0025 * cos(3 position) (glibc's cos, glibc_math.h, as Python's math.cos), velocity clipped to
 * +-0.07, position to [-1.2, 0.6] with the velocity zeroed at the left wall, all in float64; reward -1 per
 * step; terminated at position >= 0.5 with velocity >= goal_velocity. Truncation at 200 steps is the
 * backend's. Observation: the float64 state rounded to float32. Shared with the continuous car
 * (the observation, the track, GOAL_VELOCITY_MICRO, the float32 motion, the renderer): mountaincar_common.h.
 *
 * -DFLOAT32=1 (the registry's `float32=1`, opt-in): the same rules on an 8-byte float32 state, in gymnax's
 * MountainCar-v0 order ((v + (action - 1) force) - cos(3 position) gravity, cos from math32.h). Faster on the
 * GPU; trajectories stay within float32 rounding of a float32 re-statement (tests/native/
 * test_classic_control_float32.py) and CPU and GPU give the same bits. Termination is Gymnasium's rule on the
 * float32 state read as float64; a reset is the float64 build's start rounded to float32. */
/* With AVX2 alone the vector passes below vectorise only where their selects may compute both sides (SIMD_SELECTS,
 * fastvec.h). */
#if !(defined(FLOAT32) && FLOAT32)
#define SIMD_SELECTS 1
#endif
#include "fastvec.h"
#include "glibc_math.h"
#include "mountaincar_common.h"

#define NUM_ACTIONS 3
#define NUM_AGENTS 1
#define NUM_STATS 0
#define STAT_NAMES ""
#define STEP_USES_RNG 0

#define MC_GOAL_POSITION 0.5
#define MC_FORCE 0.001

/* The float64 step runs across envs in the CPU's vector passes where 3 position is in glibc cos's second range
 * (|position| in [0.285, 0.809): the valley, where the car spends most steps), which fvm_cos_mid2 computes without
 * branches; the other states take env_step one at a time. */
#if !defined(__CUDACC__) && !FLOAT32
#if defined(__AVX2__) && !defined(SIMD_STEP)
#define SIMD_STEP 1
#endif
#define SIMD_STEP_VALID(s) (FVM_COS_MID2(3 * (s)->position) & ((s)->velocity == (s)->velocity))
#endif

#if !FLOAT32
typedef struct {
    double position, velocity; /* Gymnasium's unwrapped.state */
} State;

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->position = -0.6 + (-0.4 - -0.6) * fv_rand_double(rng); /* uniform in [-0.6, -0.4) */
    s->velocity = 0.0;
    obs[0] = (float)s->position;
    obs[1] = 0.0f;
}

/* np.clip(x, lo, hi) of a float64. */
FV_FN double mountaincar_clip(double x, double lo, double hi) {
    double v = x < lo ? lo : x;
    return v > hi ? hi : v;
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    double velocity = s->velocity + ((double)(actions[0] - 1) * MC_FORCE + fv_cos(3 * s->position) * (-MC_GRAVITY));
    velocity = mountaincar_clip(velocity, -MC_MAX_SPEED, MC_MAX_SPEED);
    double position = mountaincar_clip(s->position + velocity, MC_MIN_POSITION, MC_MAX_POSITION);
    if (position == MC_MIN_POSITION && velocity < 0) velocity = 0.0;
    s->position = position;
    s->velocity = velocity;
    obs[0] = (float)position;
    obs[1] = (float)velocity;
    rewards[0] = -1.0f;
    return position >= MC_GOAL_POSITION && velocity >= MC_GOAL_VELOCITY;
}

/* env_step where SIMD_STEP_VALID(s), without branches: the clips by the values' bits (mc_clip64), the tests on the
 * values before them (the same answers: the goal lies inside the track, and a clip keeps the sign), the wall's zero
 * by arithmetic (speed - speed is +0; the speed is never -0, so speed - 0 is the speed). */
FV_FN int env_step_simd(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                        float* stats) {
    (void)rng;
    (void)stats;
    double gravity = fvm_cos_mid2(3 * s->position) * (-MC_GRAVITY);
    /* the push through int: the action is 0, 1 or 2, and AVX2 has no vector conversion of int64 to double */
    double velocity = s->velocity + ((double)(int)(actions[0] - 1) * MC_FORCE + gravity);
    double speed = mc_clip64(velocity, MC_MAX_SPEED, MC_MAX_SPEED);
    double moved = s->position + speed;
    double position = mc_clip64(moved, -MC_MIN_POSITION, MC_MAX_POSITION);
    int fast_enough = (MC_MAX_SPEED >= MC_GOAL_VELOCITY) &
                      ((velocity >= MC_GOAL_VELOCITY) | (-MC_MAX_SPEED >= MC_GOAL_VELOCITY));
    int terminated = (moved >= MC_GOAL_POSITION) & fast_enough;
    double at_wall = (double)((moved <= MC_MIN_POSITION) & (velocity < 0));
    speed = speed - speed * at_wall;
    s->position = position;
    s->velocity = speed;
    obs[0] = (float)position;
    obs[1] = (float)speed;
    rewards[0] = -1.0f;
    return terminated;
}

#else /* FLOAT32 */
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) { mc_reset_f32(s, rng, obs); }

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards,
                   float* stats) {
    (void)rng;
    (void)stats;
    mc_move_f32(s, (float)(actions[0] - 1) * (float)MC_FORCE);
    obs[0] = s->position;
    obs[1] = s->velocity;
    rewards[0] = -1.0f;
    return s->position >= (float)MC_GOAL_POSITION && (double)s->velocity >= MC_GOAL_VELOCITY;
}
#endif /* FLOAT32 */

/* The state as float64 (the float32 build rounds a set state to float32). */
FV_FN void env_get_state(const State* s, double* out) {
    out[0] = s->position;
    out[1] = s->velocity;
}

FV_FN void env_set_state(State* s, const double* in, float* obs) {
    s->position = in[0];
    s->velocity = in[1];
    obs[0] = (float)s->position;
    obs[1] = (float)s->velocity;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    mc_render(s->position, MC_GOAL_POSITION, rgb);
}
