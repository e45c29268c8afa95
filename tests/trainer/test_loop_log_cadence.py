"""The training loop's metrics.jsonl cadence on a clock that never reaches train.log_interval: a line at every
twentieth of the run's updates (at least every update) and at the last one, counted by hand."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fastvec.trainer import loop, run
from fastvec.trainer.config import load_config

NUM_ENVS, HORIZON = 4, 8
STEPS = NUM_ENVS * HORIZON


def scripted_trainer(monkeypatch, updates: int):
    """A NumPy trainer for `updates` updates whose rollout and update only count (the clock stands still)."""
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=lambda: 1000.0))
    config = load_config("cartpole", {"env": {"num_envs": NUM_ENVS}, "policy": {"hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": HORIZON, "bptt_horizon": 8,
                                                "minibatch_size": 32, "total_timesteps": updates * STEPS,
                                                "stop_at_target": False, "log_interval": 1e9,
                                                "checkpoint_interval": 10**6}})
    trainer = run.make_trainer(config)

    def rollout():
        trainer.global_step += STEPS

    def update(num_updates):
        trainer.update_index += 1
        return {"policy_loss": 1.0}

    trainer.rollout, trainer.update, trainer.pop_episodes = rollout, update, lambda: None
    trainer.timing = {"env": 0.0, "inference": 0.0, "update": 0.0}
    return trainer


@pytest.mark.parametrize("updates,every", [(19, 1), (38, 1), (40, 2), (57, 2), (60, 3), (100, 5)])
def test_a_line_comes_every_twentieth_of_the_updates_and_at_the_last(tmp_path, monkeypatch, updates, every):
    """updates // 20 updates apart (1 below 40 updates), plus the run's last update when that is not on the beat."""
    trainer = scripted_trainer(monkeypatch, updates)
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    logged = [json.loads(line)["update"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    expected = [k for k in range(1, updates + 1) if k % every == 0 or k == updates]
    assert logged == expected
