"""The summary of a resumed run with nothing left to train: no metrics, and no checkpoint of its own (it saved
none; the one it resumed from stays as it was), which cli.py reports as nothing to do."""

from __future__ import annotations

from fastvec.trainer import run
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
