"""The training loop's edges around its checkpoints: the summary of a resumed run with nothing left to train (no
metrics, and no checkpoint of its own: the one it resumed from stays as it was, and cli.py says nothing to do),
and the checkpoint a stop saves, which stays when a later one is written (never one of the replaceable)."""

from __future__ import annotations

import os
import signal

from test_loop_by_clock import STEPS, scripted

from fastvec.trainer import checkpoint, loop, run
from fastvec.trainer.config import load_config

TINY = {"env": {"num_envs": 4}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
        "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8, "minibatch_size": 32, "total_timesteps": 64}}


def test_a_resumed_run_with_nothing_left_to_train_names_no_checkpoint_of_its_own(tmp_path):
    config = load_config("cartpole", TINY)
    first = run.train(config, tmp_path / "run")
    saved = first["checkpoint"]
    assert first["update"] == 2 and saved is not None and saved.is_file() and first["metrics"]
    before = saved.read_bytes()
    again = run.train(config, tmp_path / "run", resume=True)
    assert again["update"] == 2 and again["metrics"] == {} and not again["interrupted"]
    assert again["checkpoint"] is None
    assert saved.read_bytes() == before


def test_the_checkpoint_a_stop_saves_is_not_one_a_later_save_replaces(tmp_path, monkeypatch):
    """SIGTERM in rollout 3: the stop saves update 2 (the update-0 checkpoint, taken for time alone, goes); that
    checkpoint is a kept one, not replaceable, so a resumed run's own saves never remove it."""
    trainer, _ = scripted(tmp_path, monkeypatch, updates=10, log_interval=0.0, checkpoint_interval=100)
    rollout = trainer.rollout

    def signalled(*args):
        out = rollout(*args)
        if trainer.global_step == 3 * STEPS:
            os.kill(os.getpid(), signal.SIGTERM)
        return out
    trainer.rollout = signalled
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert summary["interrupted"] and summary["saved_at_stop"] and summary["update"] == 2
    folder = tmp_path / "run" / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == [checkpoint.checkpoint_name(2)]
    meta, _ = checkpoint.load(summary["checkpoint"])
    assert "replaceable" not in meta and checkpoint.replaceable_checkpoints(folder) == []
