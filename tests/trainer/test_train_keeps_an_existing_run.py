"""run.train into a directory that already holds a run refuses by default (its files untouched, nothing trained),
as its docstring says; overwrite=True alone replaces that run."""

from __future__ import annotations

import pytest

from fastvec.trainer import distributed, run
from fastvec.trainer.config import ConfigError, load_config


def tiny() -> dict:
    return load_config("cartpole", {"env": {"num_envs": 4}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                    "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8,
                                              "minibatch_size": 32, "total_timesteps": 32}})


@pytest.mark.parametrize("held", ["config.toml", "metrics.jsonl", "checkpoints"])
def test_train_refuses_a_run_directory_holding_a_run_unless_told_to_overwrite(held, tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(distributed, "launched", lambda: False)
    monkeypatch.setattr(run, "train_one_process", lambda config, run_dir, resume, dashboard, watch=None:
                        trained.append(run_dir) or {"trained": True})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if held == "checkpoints":
        (run_dir / held).mkdir()
        (run_dir / held / "ckpt").write_text("old")
    else:
        (run_dir / held).write_text("old")
    with pytest.raises(ConfigError, match="already holds a run"):
        run.train(tiny(), run_dir)
    assert trained == []
    kept = run_dir / held / "ckpt" if held == "checkpoints" else run_dir / held
    assert kept.read_text() == "old"
    assert run.train(tiny(), run_dir, overwrite=True) == {"trained": True} and trained == [run_dir]
    assert not kept.exists() or kept.read_text() != "old"
