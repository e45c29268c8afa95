"""What spaces.h assumes where an env file leaves a space constant out: one agent, float32 observations of shape
(OBS_SIZE,) without bounds, a Discrete action, no state access; and no Discrete count (0) for Box and
MultiDiscrete envs."""

from pathlib import Path

import numpy as np

from fastvec import native
from fastvec.native import cpu

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"

# The contract's least: the sizes it requires and the three functions, nothing that spaces.h gives a default.
BARE = """#include "fastvec.h"
#define OBS_SIZE 3
#define NUM_ACTIONS 4
#define RENDER_W 2
#define RENDER_H 2
typedef struct { int t; } State;
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    (void)rng;
    s->t = 0;
    for (int k = 0; k < OBS_SIZE; k++) obs[k] = -1.5f * (float)k;
}
FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    (void)rng, (void)stats;
    s->t += 1;
    for (int k = 0; k < OBS_SIZE; k++) obs[k] = (float)(s->t * 10 + actions[0]) + 0.25f * (float)k;
    rewards[0] = (float)actions[0];
    return 0;
}
FV_FN void env_render(const State* s, unsigned char* rgb) {
    (void)s;
    fv_fill_rect(rgb, RENDER_W, RENDER_H, 0, 0, RENDER_W, RENDER_H, 0, 0, 0);
}
"""


def test_an_env_file_that_declares_only_the_contracts_sizes_gets_spaces_defaults(tmp_path):
    path = tmp_path / "bare.h"
    path.write_text(BARE)
    env = cpu.load(path, ())
    assert (env.num_agents, env.obs_size, env.num_actions, env.obs_dtype) == (1, 3, 4, np.float32)
    sp = env.spaces
    assert (sp.action_kind, sp.action_dims, sp.nvec.tolist(), sp.num_actions) == ("discrete", 1, [4], 4)
    assert (sp.action_low.tolist(), sp.action_high.tolist()) == ([0.0], [3.0])
    assert sp.obs_shape == (3,) and sp.obs_dtype == np.float32 and sp.state_size == -1
    assert (sp.obs_low == -np.inf).all() and (sp.obs_high == np.inf).all()
    # without AGENT_SPACES every agent has the env's spaces: its Discrete count, its obs size
    assert (env.lib.fv_agent_action_size(0), env.lib.fv_agent_obs_size(0)) == (4, 3)
    batch = cpu.CpuBatch(env, 2, native.AUTORESET_CODES["NextStep"], None)
    batch.reset(np.arange(2, dtype=np.uint64), None)
    np.testing.assert_array_equal(batch.obs.reshape(2, 3), [[0.0, -1.5, -3.0]] * 2)  # float32, not bytes
    batch.step(np.array([[3], [1]], np.int64))
    np.testing.assert_array_equal(batch.obs.reshape(2, 3), [[13.0, 13.25, 13.5], [11.0, 11.25, 11.5]])
    np.testing.assert_array_equal(batch.rewards.reshape(2), [3.0, 1.0])


def test_box_and_multi_discrete_envs_declare_no_discrete_count():
    """Their NUM_ACTIONS left to spaces.h: 0, which the trainers and checkpoints read as no Discrete head; each
    agent's action size (without AGENT_SPACES) is then its ACTION_DIMS values."""
    for name, defines, dims in (("box_open.h", (), 4), ("box_point.h", (), 2),
                                ("multi_discrete.h", (("AGENTS", 2),), 2)):
        env = cpu.load(ENVS_DIR / name, defines)
        assert env.num_actions == 0 and env.lib.fv_agent_action_size(0) == dims, name
