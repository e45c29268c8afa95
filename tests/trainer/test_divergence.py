"""Divergence stops a run: the first non-finite loss (at a log) or weight (before a checkpoint save) ends
training with a one-line error and a non-zero exit, keeping the last finite checkpoint to resume or evaluate.
CPU only, tiny CartPole runs whose weights are poisoned after a chosen update."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli
from fastvec.trainer.numpy_trainer import NumpyTrainer

STEPS = 8 * 16


def tiny_args(updates: int, *extra: str) -> list[str]:
    return ["cartpole", "--env.num_envs=8", "--policy.hidden=8", "--train.device=cpu", "--train.horizon=16",
            "--train.bptt_horizon=8", "--train.minibatch_size=64", "--train.update_epochs=1",
            "--train.checkpoint_interval=2", "--train.stop_at_target=false",
            f"--train.total_timesteps={updates * STEPS}", *extra]


@pytest.fixture
def poison_after(monkeypatch):
    """poison_after(n): the weights turn NaN at the end of update n (its own losses are still finite)."""
    def install(update: int):
        train_update = NumpyTrainer.update

        def update_then_poison(self, num_updates):
            stats = train_update(self, num_updates)
            if self.update_index == update:
                self.params[0] = np.nan
            return stats
        monkeypatch.setattr(NumpyTrainer, "update", update_then_poison)
    return install


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fastvec-train: error: ") and "Traceback" not in err, err
    return lines[0]


def test_a_nan_loss_stops_the_run_keeping_the_last_finite_checkpoint(tmp_path, capsys, poison_after, monkeypatch):
    run_dir = tmp_path / "run"
    poison_after(5)  # update 6 trains on NaN weights: its losses are NaN
    assert cli.main([*tiny_args(20), "--train.log_interval=0", f"--run-dir={run_dir}"]) == 2
    error = error_line(capsys)
    last = run_dir / "checkpoints" / "update_000004.npz"
    assert "diverged at update 6" in error and "loss" in error and str(last) in error
    assert [r["update"] for r in rows(run_dir)] == [1, 2, 3, 4, 5]  # no NaN row
    assert all(math.isfinite(v) for r in rows(run_dir) for k, v in r.items() if k.startswith("losses/")
               and "loss" in k)
    assert checkpoint.latest(run_dir) == last
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=2"]) == 0  # evaluates the kept one
    monkeypatch.undo()  # the weights stay finite from here on
    assert cli.main([*tiny_args(8), f"--resume={run_dir}"]) == 0  # and continues from it
    assert [r["update"] for r in rows(run_dir)] == list(range(1, 9))


def test_nan_weights_are_never_saved(tmp_path, capsys, poison_after):
    run_dir = tmp_path / "run"
    poison_after(4)  # its losses are finite, so the log passes; the checkpoint at 4 must not be written
    assert cli.main([*tiny_args(20), "--train.log_interval=1000", f"--run-dir={run_dir}"]) == 2
    error = error_line(capsys)
    assert "diverged at update 4" in error and "weights" in error
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["update_000002.npz"]
    meta, state = checkpoint.load(run_dir / "checkpoints" / "update_000002.npz")
    assert np.isfinite(state["params"]).all()


def test_divergence_before_any_scheduled_checkpoint_keeps_the_initial_weights(tmp_path, capsys, poison_after):
    run_dir = tmp_path / "run"
    poison_after(1)
    assert cli.main([*tiny_args(20), "--train.log_interval=0", f"--run-dir={run_dir}"]) == 2
    assert "update_000000.npz" in error_line(capsys)
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=2"]) == 0


def test_a_diverged_sweep_trial_fails_and_the_sweep_goes_on(tmp_path, capsys, poison_after):
    pytest.importorskip("optuna")
    from fastvec.trainer import sweep
    poison_after(1)  # every trial diverges at update 2
    folder = tmp_path / "sweep"
    assert sweep.main(["cartpole", "--train.device=cpu", "--env.num_envs=8", "--policy.hidden=8",
                       "--policy.layers=1", "--train.horizon=16", "--train.bptt_horizon=8",
                       "--train.minibatch_size=64", "--train.log_interval=0", "--sweep.sampler_seed=0",
                       f"--sweep.dir={folder}", "--sweep.objective=score", "--sweep.trial_seconds=0",
                       "--sweep.trials=2", f"--train.total_timesteps={8 * STEPS}"]) == 0
    trials = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    assert [t["state"] for t in trials] == ["FAIL", "FAIL"]
    assert all("training diverged at update 2" in t["error"] for t in trials)
