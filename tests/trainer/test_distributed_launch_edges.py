"""distributed.py's edges: a single process's whole Launch (local rank 0 too: the GPU it pins), a launcher whose
work directory is gone when it cleans up still raises its own error (not the cleanup's), and only rank 0's
standard output reaches the terminal."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from test_distributed import stand_in_ranks  # noqa: F401  (the fixture: ranks with NCCL and training stood in)

from fastvec.trainer import distributed


@pytest.mark.parametrize("environ", [{}, {"PATH": "/usr/bin", "MASTER_ADDR": "10.0.0.1", "LOCAL_RANK": "3"}])
def test_a_single_process_is_rank_0_of_1_local_rank_0_on_the_default_port(environ):
    launch = distributed.discover(environ)
    assert dataclasses.astuple(launch) == (0, 1, 0, None, 29500, "single")
    assert distributed.DEFAULT_PORT == 29500  # torchrun's default MASTER_PORT


def test_a_work_directory_gone_before_cleanup_leaves_the_launchers_own_error(stand_in_ranks, monkeypatch):  # noqa: F811
    """The ranks ran, but the work directory (and rank 0's summary in it) vanished before the launcher read it
    (a temp cleaner): the error says rank 0's summary is missing; removing the directory raises nothing more."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    dirs, real_mkdtemp, real_wait = [], distributed.tempfile.mkdtemp, distributed._wait
    monkeypatch.setattr(distributed.tempfile, "mkdtemp", lambda **kw: dirs.append(real_mkdtemp(**kw)) or dirs[-1])

    def wait_then_lose_the_directory(procs):
        real_wait(procs)
        shutil.rmtree(dirs[-1])
    monkeypatch.setattr(distributed, "_wait", wait_then_lose_the_directory)
    with pytest.raises(distributed.DistributedError, match="rank 0 finished without writing its summary"):
        run.train(load_config("cartpole", {"train": {"gpus": 2}}), stand_in_ranks / "run", dashboard=False)


LOUD_RANKS = """
_quiet_train = run.train_one_process
def _loud_train(config, run_dir, resume, dashboard):
    print(f"the progress of rank {os.environ['RANK']}", flush=True)
    return _quiet_train(config, run_dir, resume, dashboard)
run.train_one_process = _loud_train
"""


def test_rank_0_alone_prints_to_the_terminal(stand_in_ranks, capfd):  # noqa: F811
    """--train.gpus=2: rank 0's standard output (the progress, the summary) reaches the launcher's; the other
    ranks', the same lines again, go nowhere."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    with open(stand_in_ranks / "site" / "sitecustomize.py", "a") as f:
        f.write(LOUD_RANKS)
    run.train(load_config("cartpole", {"train": {"gpus": 2}}), stand_in_ranks / "run", dashboard=False)
    out = capfd.readouterr().out
    assert "the progress of rank 0" in out and "the progress of rank 1" not in out
