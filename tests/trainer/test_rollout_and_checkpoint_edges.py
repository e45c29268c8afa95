"""Edges of the CPU trainer's rollout and of checkpoint checks: rewards below -1 clamped to -1 under
train.reward_clamp (positive ones are clamped to 1 elsewhere), and a checkpoint whose weights or optimizer
state are not float32 refused as damaged."""

import io
import json
from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu
from fastvec.trainer import checkpoint as ckpt
from fastvec.trainer.config import load_config
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.resolve import make_policy_spec
from fastvec.trainer.reference import FlatLayout, PolicySpec, param_table

COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"


class NegativeRewards:
    """A counting-env batch that pays -2 times the action (0..4): rewards from 0 down to -8."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def step(self, actions):
        out = self.inner.step(actions)
        self.inner.rewards *= -2.0
        return out


@pytest.mark.parametrize("clamp", [True, False])
def test_rewards_below_minus_one_are_clamped_only_when_asked(clamp):
    config = load_config("cartpole", {"env": {"num_envs": 3}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                      "train": {"horizon": 8, "bptt_horizon": 4, "minibatch_size": 4, "seed": 2,
                                                "reward_clamp": clamp}})
    batch = NegativeRewards(cpu.CpuBatch(cpu.load(COUNTING, (("TERMINATE_AT", 3),)), 3,
                                         native.AUTORESET_CODES["SameStep"], None))
    trainer = NumpyTrainer(config, batch, make_policy_spec(config, batch.env.obs_size, batch.env.num_actions))
    trainer.rollout()
    raw = -2.0 * trainer.actions.astype(np.float32)
    assert raw.min() < -1 and (raw == 0).any()
    np.testing.assert_array_equal(trainer.rewards, np.maximum(raw, -1) if clamp else raw)


SPEC = PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=8, layers=1)
SIZE = FlatLayout(param_table(SPEC)).size


def saved(tmp_path, array, dtype):
    state = {"params": np.zeros(SIZE, np.float32), "optimizer": np.zeros(2 * SIZE, np.float32),
             "counters": {"update": 1, "global_step": 8}}
    path = ckpt.save(tmp_path / "update_000001.npz", SPEC, "cartpole", 1, state, {"train": {}})
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays[array] = arrays[array].astype(dtype)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    return path


@pytest.mark.parametrize("array", ["params", "optimizer"])
def test_weights_or_optimizer_state_of_another_dtype_are_refused(tmp_path, array):
    path = saved(tmp_path, array, np.float64)
    with pytest.raises(ckpt.CheckpointError, match="its arrays are not float32"):
        ckpt.load(path)
    meta, state = ckpt.load(saved(tmp_path / "ok", array, np.float32))
    assert json.loads(json.dumps(meta))["env"] == "cartpole" and state["params"].dtype == np.float32
