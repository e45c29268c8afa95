/* continuous_env.h: a continuous-action environment in one file, as a template for your own.
 * "Puck": push a puck on a frictional table towards a target with a force (fx, fy), each in [-1, 1]
 * (Box(-1.0, 1.0, (2,), float32)). A step costs its distance to the target plus a little for the
 * force used; reaching the target (within TOLERANCE_MILLI / 1000) ends the episode.
 * Load it with:  envs = fastvec.make_vec_from_source("examples/continuous_env.h", num_envs=1024)
 * and step it with float actions of shape (num_envs, 2); examples/continuous_env.py trains it with SB3. */
#include "fastvec.h"

#ifndef TOLERANCE_MILLI
#define TOLERANCE_MILLI 50
#endif

#define ACTION_SPACE FV_BOX  /* env_step receives float actions (ACT_T is float) */
#define ACTION_DIMS 2
#define ACTION_LOW {-1.0f, -1.0f}
#define ACTION_HIGH {1.0f, 1.0f}
#define OBS_SIZE 6           /* puck x, y, velocity x, y, target x, y */
#define OBS_LOW -2           /* the table is [-1, 1]^2; speeds stay below 2 */
#define OBS_HIGH 2
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "reached_target"
#define RENDER_W 64
#define RENDER_H 64

#define PUCK_DT 0.05f
#define PUCK_FRICTION 0.9f   /* velocity kept per step */
#define PUCK_MAX_SPEED 1.5f

typedef struct {
    float x, y, vx, vy, tx, ty;
} State;

FV_FN float puck_clip(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

FV_FN void write_obs(const State* s, float* obs) {
    obs[0] = s->x, obs[1] = s->y, obs[2] = s->vx, obs[3] = s->vy, obs[4] = s->tx, obs[5] = s->ty;
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->x = fv_rand_uniform(rng, -1.0f, 1.0f);
    s->y = fv_rand_uniform(rng, -1.0f, 1.0f);
    s->vx = s->vy = 0.0f;
    s->tx = fv_rand_uniform(rng, -1.0f, 1.0f);
    s->ty = fv_rand_uniform(rng, -1.0f, 1.0f);
    write_obs(s, obs);
}

/* actions: (fx, fy). fastvec never passes NaN or infinity; a finite force outside [-1, 1] is clipped
 * here, as Gymnasium's own continuous envs clip theirs. */
FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    float fx = puck_clip(actions[0], -1.0f, 1.0f), fy = puck_clip(actions[1], -1.0f, 1.0f);
    s->vx = puck_clip(s->vx * PUCK_FRICTION + fx * PUCK_DT * 10.0f, -PUCK_MAX_SPEED, PUCK_MAX_SPEED);
    s->vy = puck_clip(s->vy * PUCK_FRICTION + fy * PUCK_DT * 10.0f, -PUCK_MAX_SPEED, PUCK_MAX_SPEED);
    s->x = puck_clip(s->x + s->vx * PUCK_DT, -1.0f, 1.0f);
    s->y = puck_clip(s->y + s->vy * PUCK_DT, -1.0f, 1.0f);
    float dx = s->tx - s->x, dy = s->ty - s->y;
    float distance = sqrtf(dx * dx + dy * dy);
    int reached = distance < TOLERANCE_MILLI / 1000.0f;
    rewards[0] = -distance - 0.01f * (fx * fx + fy * fy) + (reached ? 10.0f : 0.0f);
    stats[0] = (float)reached;
    write_obs(s, obs);
    return reached;
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 20, 60, 20);
    int tx = (int)((s->tx + 1.0f) * 0.5f * (RENDER_W - 4)), ty = (int)((s->ty + 1.0f) * 0.5f * (RENDER_H - 4));
    int px = (int)((s->x + 1.0f) * 0.5f * (RENDER_W - 4)), py = (int)((s->y + 1.0f) * 0.5f * (RENDER_H - 4));
    fv_fill_rect(rgb, RENDER_W, RENDER_H, tx, ty, tx + 4, ty + 4, 220, 40, 40);
    fv_fill_rect(rgb, RENDER_W, RENDER_H, px, py, px + 4, py + 4, 240, 240, 240);
}
