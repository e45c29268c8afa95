"""A user's env file with ACTION_MASK (fastvec.h) on the CUDA trainer with the env on the host
(train.env_device=cpu): the rollout samples only the actions the env's mask allows at each step, as NumpyTrainer
does (the GPU suite: each test needs a GPU with PyCUDA)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

ACTIONS = 4
# Each step a random non-empty set of the four actions is available; the observation is that set (1: available),
# so the test reads each step's mask from the rollout's own observations. Taking an unavailable action scores -1.
MASKED_ENV = """#include "fastvec.h"
#define OBS_SIZE 4
#define NUM_ACTIONS 4
#define NUM_AGENTS 1
#define NUM_STATS 1
#define STAT_NAMES "illegal"
#define RENDER_W 4
#define RENDER_H 1
#define ACTION_MASK 1

typedef struct { int t, avail, illegal; } State;

FV_FN void draw(State* s, fv_rng* rng, float* obs) {
    s->avail = 1 + fv_rand_int(rng, 15);
    for (int i = 0; i < 4; i++) obs[i] = (float)((s->avail >> i) & 1);
}

FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    s->t = 0;
    s->illegal = 0;
    draw(s, rng, obs);
}

FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    int bad = !((s->avail >> (int)actions[0]) & 1);
    s->illegal += bad;
    rewards[0] = bad ? -1.0f : 0.0f;
    s->t += 1;
    stats[0] = (float)s->illegal;
    draw(s, rng, obs);
    return s->t >= 12;
}

FV_FN void env_action_mask(const State* s, unsigned char* mask) {
    for (int i = 0; i < 4; i++) mask[i] = (unsigned char)((s->avail >> i) & 1);
}

FV_FN void env_render(const State* s, unsigned char* rgb) {
    for (int i = 0; i < 4; i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = ((s->avail >> i) & 1) ? 255 : 0;
}
"""


def write_masked_env(folder: Path) -> Path:
    path = folder / "masked_choice.h"
    path.write_text(MASKED_ENV)
    return path


def masked_config(path: Path, **train):
    from fastvec.trainer.config import load_config
    return load_config(str(path), {
        "env": {"num_envs": 24},
        "policy": {"kind": "mingru", "hidden": 16, "layers": 1},
        "train": {"device": "cuda", "env_device": "cpu", "env_groups": 2, "async": False, "horizon": 16,
                  "bptt_horizon": 8, "minibatch_size": 96, "update_epochs": 1, "seed": 3, **train}})


def test_host_env_rollouts_sample_only_the_actions_an_env_files_mask_allows(tmp_path):
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    from fastvec.trainer import run
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.resolve import make_policy_spec
    config = masked_config(write_masked_env(tmp_path))
    batch = run.make_batch(config)
    assert batch.action_mask is not None and batch.env.num_actions == ACTIONS
    spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions)
    trainer = CudaTrainer(config, batch, spec)
    try:
        assert trainer.host_env and trainer.plan.masked
        for _ in range(2):  # the first rollout eager, the second through the captured graphs
            trainer.rollout()
            suffix = "" if trainer.active_slot == 0 else "@1"
            obs = trainer.arena.get(trainer.cuda, "obs" + suffix)
            actions = trainer.arena.get(trainer.cuda, "actions" + suffix).astype(np.int64)
            t_len = actions.shape[0]
            assert obs.shape[1:] == (24, ACTIONS) and (obs[:t_len] == 0).mean() > 0.3  # a mask rules out some
            taken = np.take_along_axis(obs[:t_len], actions[..., None], -1)[..., 0]
            assert (taken == 1).all(), np.argwhere(taken != 1)[:5]
            trainer.update(num_updates=4)
    finally:
        trainer.close()
