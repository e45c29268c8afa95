"""The training loop's metrics.jsonl cadence on a clock the test moves: a line at every twentieth of the run's
updates (at least every update), at the last one, and once train.log_interval seconds have passed since the
line before (that many exactly too), counted by hand."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fastvec.trainer import loop, run
from fastvec.trainer.config import load_config

NUM_ENVS, HORIZON = 4, 8
STEPS = NUM_ENVS * HORIZON


def scripted_trainer(monkeypatch, updates: int, update_seconds: float = 0.0, log_interval: float = 1e9):
    """A NumPy trainer for `updates` updates whose rollout only counts and whose update moves the clock by
    update_seconds (a power of two's fraction, so the sums are exact)."""
    clock = [1000.0]
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    config = load_config("cartpole", {"env": {"num_envs": NUM_ENVS}, "policy": {"hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": HORIZON, "bptt_horizon": 8,
                                                "minibatch_size": 32, "total_timesteps": updates * STEPS,
                                                "stop_at_target": False, "log_interval": log_interval,
                                                "checkpoint_interval": 10**6}})
    trainer = run.make_trainer(config)

    def rollout():
        trainer.global_step += STEPS

    def update(num_updates):
        clock[0] += update_seconds
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


@pytest.mark.parametrize("interval,beats", [(1.5, (0, 2, 4)), (2.0, (0, 3)), (2.25, (0, 3))])
def test_a_line_comes_once_log_interval_seconds_have_passed_since_the_one_before(tmp_path, monkeypatch, interval,
                                                                                 beats):
    """100 updates of 0.75 s each: a line every 5th update by the count, and by the clock at the first update
    `interval` seconds or more after the line before: 1.5 s is 2 updates exactly (lines at 2, 4, 5, 7, 9, 10, ...),
    2 s and 2.25 s (exactly) both 3 updates (lines at 3, 5, 8, 10, ...)."""
    trainer = scripted_trainer(monkeypatch, 100, update_seconds=0.75, log_interval=interval)
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    logged = [json.loads(line)["update"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert logged == [k for k in range(1, 101) if k % 5 in beats]
