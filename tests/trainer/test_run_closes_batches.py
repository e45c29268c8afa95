"""run.py closes every env batch it makes (a GymBatch's envs and an async batch's subprocesses live until then):
at the end of a training run and when it fails, when making the trainer fails, after an evaluation and after a
recording."""

from __future__ import annotations

import numpy as np
import pytest

from fastvec.native.cpu import CpuBatch
from fastvec.trainer import checkpoint, run
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.settings import Config

TINY = {"env": {"num_envs": 4}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
        "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8, "minibatch_size": 32, "total_timesteps": 32}}


class Closed:
    """Records each CpuBatch closed (the batches themselves: each must be closed, once)."""

    def __init__(self, monkeypatch):
        self.batches: list = []
        monkeypatch.setattr(CpuBatch, "close", lambda batch: self.batches.append(batch))


class Spy:
    def __init__(self, name):
        self.name, self.closed = name, 0

    def close(self):
        self.closed += 1


def test_close_batches_closes_each_batch_once():
    spies = [Spy("learner"), Spy("group 1"), Spy("group 2")]
    run.close_batches(spies)
    assert [s.closed for s in spies] == [1, 1, 1]
    run.close_batches([])


def test_a_training_run_closes_its_env_batch_when_it_ends(tmp_path, monkeypatch):
    closed = Closed(monkeypatch)
    made = []
    make_trainer = run.make_trainer
    monkeypatch.setattr(run, "make_trainer", lambda resolved: made.append(make_trainer(resolved)) or made[-1])
    run.train(load_config("cartpole", TINY), tmp_path / "run")
    assert len(made) == 1 and len(made[0].env_batches) == 1
    assert len(closed.batches) == 1 and closed.batches[0] is made[0].env_batches[0]


def test_a_training_run_that_fails_still_closes_its_env_batch(tmp_path, monkeypatch):
    closed = Closed(monkeypatch)

    def failing_loop(trainer, *args, **kwargs):
        raise RuntimeError("the loop broke")
    monkeypatch.setattr(run, "train_loop", failing_loop)
    with pytest.raises(RuntimeError, match="the loop broke"):
        run.train(load_config("cartpole", TINY), tmp_path / "run")
    assert len(closed.batches) == 1 and isinstance(closed.batches[0], CpuBatch)


def test_making_a_trainer_that_fails_closes_the_batch_it_was_given(monkeypatch):
    from fastvec.trainer import numpy_trainer
    from fastvec.trainer.resolve import Resolved
    closed = Closed(monkeypatch)

    def refuse(*args, **kwargs):
        raise ValueError("no trainer")
    monkeypatch.setattr(numpy_trainer, "NumpyTrainer", refuse)
    resolved = Resolved(Config.of(load_config("cartpole", TINY)), "cpu")
    with pytest.raises(ValueError, match="no trainer"):
        run.make_trainer(resolved)
    assert closed.batches == [resolved.batch]


def saved_policy(tmp_path, config):
    from fastvec.trainer.resolve import make_policy_spec
    spec = make_policy_spec(config, 4, 2)
    params = ref.init_params(spec, np.random.default_rng(4))
    path = checkpoint.save(tmp_path / "update_000001.npz", spec, "cartpole", 1,
                           {"params": params, "optimizer": None, "counters": {"update": 1, "global_step": 8}}, config)
    return spec, params, path


def test_an_evaluation_closes_its_env_batch(tmp_path, monkeypatch):
    config = load_config("cartpole", {**TINY, "eval": {"episodes": 3, "deterministic": True}})
    _, _, path = saved_policy(tmp_path, config)
    closed = Closed(monkeypatch)
    result = run.evaluate(config, path)
    assert result["episodes"] == 3
    assert len(closed.batches) == 1 and closed.batches[0].num_envs == 3


def test_a_recording_closes_its_env_batch(tmp_path, monkeypatch):
    pytest.importorskip("imageio.v3")
    config = Config.of(load_config("cartpole", {**TINY, "eval": {"render_max_frames": 5}}))
    spec, params, _ = saved_policy(tmp_path, load_config("cartpole", TINY))
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    closed = Closed(monkeypatch)
    run.record_episode(config, spec, views, str(tmp_path / "play.gif"), np.random.default_rng(0), True)
    assert len(closed.batches) == 1 and closed.batches[0].num_envs == 1
