"""RunLoggers opens its outputs in a run directory that does not exist yet, however deep (a sweep's trial
directory under a study directory not made yet), and in one that does (a resumed run)."""

import copy

import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.loggers import RunLoggers


def tensorboard_config() -> dict:
    config = copy.deepcopy(load_config("cartpole"))
    config["train"].update(tensorboard=True, wandb_project="")
    return config


def test_tensorboard_output_makes_a_run_directory_whose_parents_do_not_exist(tmp_path):
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "study" / "trials" / "trial_0003"
    loggers = RunLoggers(tensorboard_config(), run_dir, resume=False)
    loggers.log({"global_step": 64, "sps": 100.0})
    loggers.close()
    assert run_dir.is_dir()
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))


def test_tensorboard_output_opens_in_a_run_directory_that_exists(tmp_path):
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text("")
    loggers = RunLoggers(tensorboard_config(), run_dir, resume=False)
    loggers.log({"global_step": 64, "sps": 100.0})
    loggers.close()
    assert (run_dir / "config.toml").read_text() == ""
    assert len(list((run_dir / "tensorboard").glob("events.out.tfevents.*"))) == 1
