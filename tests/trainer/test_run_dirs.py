"""Nothing lost between runs: runs started together get their own directories, a new run never writes over
an existing one unless told to (--overwrite), and --resume never drops logged history it has no checkpoint for.
CPU only, tiny CartPole runs."""

import json
import threading
from pathlib import Path

import pytest

from fastvec.trainer import checkpoint, cli, run_dir as run_dir_mod
from fastvec.trainer.config import load_toml

STEPS = 8 * 16  # agent steps per update (8 envs x horizon 16)


def tiny_args(updates: int, *extra: str) -> list[str]:
    return ["cartpole", "--env.num_envs=8", "--policy.hidden=8", "--train.device=cpu", "--train.horizon=16",
            "--train.bptt_horizon=8", "--train.minibatch_size=64", "--train.update_epochs=1", "--train.log_interval=0",
            "--train.checkpoint_interval=2", "--train.stop_at_target=false",
            f"--train.total_timesteps={updates * STEPS}", *extra]


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def snapshot(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def last_error(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("fastvec-train: error: "), lines
    return lines[-1]


@pytest.fixture
def same_second(tmp_path, monkeypatch):
    """Work in tmp_path with every default run directory named for one and the same second."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_dir_mod, "default_run_dir", lambda env: Path("runs") / env / "20260101-120000")
    return tmp_path / "runs" / "cartpole"


def test_runs_started_in_the_same_second_each_get_their_own_directory(same_second, capsys):
    for seed in (1, 2, 3):
        assert cli.main([*tiny_args(4), f"--train.seed={seed}"]) == 0
    dirs = sorted(same_second.iterdir())
    assert [d.name for d in dirs] == ["20260101-120000", "20260101-120000-2", "20260101-120000-3"]
    for seed, run in zip((1, 2, 3), dirs):
        assert load_toml(run / "config.toml")["train"]["seed"] == seed
        assert [r["update"] for r in rows(run)] == [1, 2, 3, 4]
        assert checkpoint.load(checkpoint.latest(run))[0]["config"]["train"]["seed"] == seed


def test_directories_claimed_at_the_same_moment_are_all_different(same_second):
    claimed, start = [], threading.Barrier(8)

    def take():
        start.wait()
        claimed.append(run_dir_mod.new_run_dir("cartpole"))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(claimed)) == 8 and all(path.is_dir() for path in claimed)


def test_a_new_run_into_an_existing_run_directory_is_refused_and_changes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main([*tiny_args(4), f"--run-dir={run}"]) == 0
    before = snapshot(run)
    assert cli.main([*tiny_args(6), "--train.seed=9", f"--run-dir={run}"]) == 2
    error = last_error(capsys)
    assert str(run) in error and f"--resume={run}" in error and "--overwrite" in error
    assert snapshot(run) == before


def test_overwrite_replaces_the_old_run_entirely(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main([*tiny_args(4), f"--run-dir={run}"]) == 0
    (run / "notes.txt").write_text("mine")
    assert cli.main([*tiny_args(6), "--train.seed=9", f"--run-dir={run}", "--overwrite"]) == 0
    assert [r["update"] for r in rows(run)] == list(range(1, 7))
    assert load_toml(run / "config.toml")["train"]["seed"] == 9
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "update_000002.npz", "update_000004.npz", "update_000006.npz"]
    assert all(checkpoint.load(p)[0]["config"]["train"]["seed"] == 9 for p in (run / "checkpoints").iterdir())
    assert (run / "notes.txt").read_text() == "mine"  # not a run's file: left alone


def test_a_run_refused_before_it_starts_leaves_no_empty_directory_behind(same_second, monkeypatch, capsys):
    """The runs/ENV/<time> directory made for a run is taken away again when training refuses to start (here:
    the CUDA trainer with no GPU, as run.train raises it) before writing anything; a --run-dir the user named
    stays."""
    from fastvec.trainer import run
    from fastvec.trainer.config import ConfigError

    def refuse(config, run_dir, **_):
        assert run_dir.is_dir()  # made before training, so that two runs never share it
        raise ConfigError("train.device=cuda: the CUDA trainer needs an NVIDIA GPU")

    monkeypatch.setattr(run, "train", refuse)
    assert cli.main(tiny_args(2)) == 2
    assert "needs an NVIDIA GPU" in last_error(capsys)
    assert same_second.is_dir() and not any(same_second.iterdir())
    named = same_second.parent.parent / "mine"
    named.mkdir()
    assert cli.main([*tiny_args(2), f"--run-dir={named}"]) == 2
    assert named.is_dir()


def test_an_empty_or_unrelated_directory_is_used_and_a_run_that_fails_to_start_leaves_no_claim(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trial.toml").write_text("# a sweep's file")
    assert cli.main([*tiny_args(2), "--policy.kind=no-such-kind", f"--run-dir={run}"]) == 2
    assert sorted(p.name for p in run.iterdir()) == ["trial.toml"]
    assert cli.main([*tiny_args(2), f"--run-dir={run}"]) == 0
    assert [r["update"] for r in rows(run)] == [1, 2]


def test_resume_without_checkpoints_refuses_naming_what_is_missing_and_keeps_the_history(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main([*tiny_args(6), f"--run-dir={run}"]) == 0
    for path in (run / "checkpoints").iterdir():
        path.unlink()
    (run / "checkpoints").rmdir()
    before = snapshot(run)
    assert cli.main([*tiny_args(8), f"--resume={run}"]) == 2
    error = last_error(capsys)
    assert f"{run / 'checkpoints'} is missing" in error and "up to 6" in error
    assert snapshot(run) == before  # metrics.jsonl keeps updates 1-6
    (run / "checkpoints").mkdir()
    assert cli.main([*tiny_args(8), f"--resume={run}"]) == 2
    assert "holds no checkpoint" in last_error(capsys)
    assert [r["update"] for r in rows(run)] == list(range(1, 7))


def test_a_run_holds_a_checkpoint_from_its_first_logged_update_on(tmp_path, monkeypatch):
    """What lets --resume tell removed checkpoints from a run stopped early: update 0 is saved before training,
    and replaced once the first scheduled checkpoint is written."""
    from fastvec.trainer import run as run_mod
    seen = []
    save = checkpoint.save

    def record(path, *args):
        seen.append((path.name, sorted(p.name for p in path.parent.glob("*.npz"))))
        return save(path, *args)

    monkeypatch.setattr(checkpoint, "save", record)
    config = cli.parse_args(tiny_args(3))  # the same values, through the config loader
    from fastvec.trainer.config import load_config
    run_mod.train(load_config("cartpole", config["overrides"]), tmp_path / "run", dashboard=False)
    assert seen[0] == ("update_000000.npz", [])
    assert [name for name, _ in seen] == ["update_000000.npz", "update_000002.npz", "update_000003.npz"]
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == [
        "update_000002.npz", "update_000003.npz"]


# Loaded into the trained process (as sitecustomize): every update takes 0.2 s more, so that two signals sent
# 10 ms apart both land inside one update.
SLOW_UPDATES = """
import time
from fastvec.trainer.numpy_trainer import NumpyTrainer
train_update = NumpyTrainer.update
def update(self, num_updates):
    time.sleep(0.2)
    return train_update(self, num_updates)
NumpyTrainer.update = update
"""


def test_sigterm_then_sigint_saves_the_stop_update_and_names_that_checkpoint(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_UPDATES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    run = tmp_path / "run"
    command = [sys.executable, "-c", "import sys; from fastvec.trainer.cli import main; sys.exit(main())",
               *tiny_args(1000, "--train.checkpoint_interval=1000"), f"--run-dir={run}"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not ((run / "metrics.jsonl").is_file() and len((run / "metrics.jsonl").read_text().splitlines()) >= 3):
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.01)
    proc.send_signal(signal.SIGINT)  # e.g. a wrapper forwarding Ctrl-C as SIGTERM, and the Ctrl-C itself
    _, err = proc.communicate(timeout=60)
    # 143: the SIGTERM's exit; on a loaded machine the SIGINT may land after training handed the signals back (the
    # save done, the message printed), and Python then exits by that SIGINT; or both are pending at once when the
    # interpreter next checks, and it runs their handlers in signal-number order, SIGINT's first (130, "stopped by
    # SIGINT"): either way it is one stop and nothing is lost
    assert proc.returncode in (143, 130, -signal.SIGINT), err
    logged = [r["update"] for r in rows(run)]
    assert logged == list(range(1, len(logged) + 1))
    saved = run / "checkpoints" / f"update_{logged[-1]:06d}.npz"  # the update the stop came at, nothing lost
    assert checkpoint.load(saved)[0]["counters"]["update"] == logged[-1]
    assert f"saved {saved};" in err and "Traceback" not in err


def test_a_run_directory_whose_config_toml_is_not_a_file_is_refused_naming_it(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "config.toml").mkdir(parents=True)
    assert cli.main([*tiny_args(2), f"--run-dir={run}"]) != 0
    error = last_error(capsys)
    assert "config.toml: something other than a file is there" in error and "another --run-dir" in error
    assert (run / "config.toml").is_dir() and not (run / "metrics.jsonl").exists()


def test_a_run_that_takes_the_directory_first_wins_and_the_other_is_told(tmp_path, monkeypatch):
    """Two runs that both found the directory free: the one whose config.toml is created second is refused."""
    from fastvec.trainer.config import ConfigError, load_config
    from fastvec.trainer.settings import Config

    run = tmp_path / "run"
    run.mkdir()
    config = Config.of(load_config("cartpole"))
    release = run_dir_mod.claim(run, config)
    monkeypatch.setattr(run_dir_mod, "HOLDS_A_RUN", {})  # the second run looked before the first wrote
    with pytest.raises(ConfigError, match="another run started there at the same moment"):
        run_dir_mod.claim(run, config)
    release()
    assert list(run.iterdir()) == []


@pytest.mark.parametrize("seconds, saved", [(0, [0, 5]), (1e-9, [0, 1, 2, 3, 4, 5])])
def test_checkpoint_seconds_zero_saves_only_on_the_interval_and_a_tiny_one_after_every_update(tmp_path, monkeypatch,
                                                                                             seconds, saved):
    """train.checkpoint_seconds=0 turns time-based checkpoints off (only the interval's and the last); a
    positive one saves whenever that much time has passed since the last save (here: after every update). The
    run starts with its update-0 checkpoint either way."""
    real, updates = checkpoint.save, []

    def save(path, *args):
        updates.append(int(path.stem.split("_")[-1]))
        return real(path, *args)

    monkeypatch.setattr(checkpoint, "save", save)
    run = tmp_path / "run"
    args = [a for a in tiny_args(5) if not a.startswith("--train.checkpoint_interval")]
    assert cli.main([*args, "--train.checkpoint_interval=100", f"--train.checkpoint_seconds={seconds}",
                     f"--run-dir={run}"]) == 0
    assert updates == saved
    assert [p.name for p in sorted((run / "checkpoints").iterdir())] == [checkpoint.checkpoint_name(5)]


def test_a_time_checkpoint_removed_by_hand_during_the_run_is_not_missed(tmp_path, monkeypatch):
    """Time-only checkpoints are replaced by the next one; one that someone (a cleanup script, a user) removed
    meanwhile is simply gone, and the run carries on to its end."""
    real = checkpoint.save

    def save(path, *args):
        written = real(path, *args)
        for old in path.parent.glob("*.npz"):
            if old != path:
                old.unlink()  # every older checkpoint removed by hand as soon as a newer one exists
        return written

    monkeypatch.setattr(checkpoint, "save", save)
    run = tmp_path / "run"
    args = [a for a in tiny_args(4) if not a.startswith("--train.checkpoint_interval")]
    assert cli.main([*args, "--train.checkpoint_interval=100", "--train.checkpoint_seconds=1e-9",
                     f"--run-dir={run}"]) == 0
    assert [p.name for p in (run / "checkpoints").iterdir()] == [checkpoint.checkpoint_name(4)]


def test_releasing_a_claim_removes_what_the_run_made_before_it_logged_or_saved(tmp_path):
    """A run that fails before its first row or checkpoint gives the directory back as it was: its config.toml,
    an empty metrics.jsonl and checkpoints/ folder go; a directory it created goes too, one it found stays."""
    from fastvec.trainer.config import load_config
    from fastvec.trainer.settings import Config

    config = Config.of(load_config("cartpole"))
    for existed in (False, True):
        run = tmp_path / f"run{existed}"
        if existed:
            run.mkdir()
            (run / "notes.txt").write_text("mine")
        release = run_dir_mod.claim(run, config)
        (run / "checkpoints").mkdir()
        (run / "metrics.jsonl").write_text("")
        release()
        assert (sorted(p.name for p in run.iterdir()) == ["notes.txt"]) if existed else not run.exists()


def test_a_resumed_runs_watch_is_given_the_training_seconds_of_both_runs(tmp_path):
    """watch(metrics, seconds, steps) (what budgets a fastvec-sweep trial) gets the run's training seconds: after
    --resume, counted on from the earlier run's, as its logged time is."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    config = load_config("cartpole", {"env": {"num_envs": 8}, "policy": {"hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64,
                                                "update_epochs": 1, "total_timesteps": 4 * STEPS,
                                                "stop_at_target": False}})
    run.train(config, tmp_path / "run", dashboard=False)
    earlier = rows(tmp_path / "run")[-1]["time"]
    given = []
    config["train"]["total_timesteps"] = 6 * STEPS
    run.train(config, tmp_path / "run", resume=True, dashboard=False,
              watch=lambda metrics, seconds, steps: given.append((seconds, steps)) and False)
    assert [steps for _, steps in given] == [5 * STEPS, 6 * STEPS]
    # (the logged times are rounded to the millisecond)
    assert earlier - 1e-3 <= given[0][0] <= given[1][0] <= rows(tmp_path / "run")[-1]["time"] + 1e-3


def assert_logged_time_is_this_runs_training_time(row: dict, start_step: int, before: float) -> None:
    """A metrics row's time is `before` (the earlier runs' training seconds) plus this run's, and its sps this
    run's steps over this run's seconds: the two agree, to their rounding (time to 1 ms, sps to 0.1)."""
    steps = row["global_step"] - start_step
    low, high = row["time"] - before - 5e-4, row["time"] - before + 5e-4
    assert high > 0 and steps > 0, row
    assert steps / high - 0.051 <= row["sps"], row
    if low > 0:
        assert row["sps"] <= steps / low + 0.051, row


def tiny_config(updates: int):
    from fastvec.trainer.config import load_config
    return load_config("cartpole", {"env": {"num_envs": 8}, "policy": {"hidden": 8, "layers": 1},
                                    "train": {"device": "cpu", "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64,
                                              "update_epochs": 1, "total_timesteps": updates * STEPS,
                                              "log_interval": 0.0, "stop_at_target": False}})


def test_a_runs_logged_time_starts_at_zero_and_a_run_resumed_from_nothing_starts_over(tmp_path, capsys):
    """A new run's logged time is its own training time from 0; so is that of a run resumed when it had
    neither a checkpoint nor a logged update (stopped before its first): it starts over, from 0 seconds."""
    from fastvec.trainer import run

    run.train(tiny_config(3), tmp_path / "run", dashboard=False)
    for row in rows(tmp_path / "run"):
        assert_logged_time_is_this_runs_training_time(row, 0, 0.0)
    for path in (tmp_path / "run" / "checkpoints").iterdir():
        path.unlink()
    (tmp_path / "run" / "metrics.jsonl").unlink()
    run.train(tiny_config(3), tmp_path / "run", resume=True, dashboard=False)
    assert "training starts over from update 0" in capsys.readouterr().err
    assert [row["global_step"] for row in rows(tmp_path / "run")] == [STEPS, 2 * STEPS, 3 * STEPS]
    for row in rows(tmp_path / "run"):
        assert_logged_time_is_this_runs_training_time(row, 0, 0.0)


def test_a_watch_that_returns_true_ends_the_run_after_that_update(tmp_path):
    """watch() (a sweep's pruner and trial budget) ends the run at the update where it first returns True:
    no update after it is trained or logged."""
    from fastvec.trainer import run

    calls = []
    summary = run.train(tiny_config(6), tmp_path / "run", dashboard=False,
                        watch=lambda metrics, seconds, steps: calls.append(steps) or steps >= 2 * STEPS)
    assert calls == [STEPS, 2 * STEPS]
    assert summary["update"] == 2 and summary["trained_steps"] == 2 * STEPS
    assert rows(tmp_path / "run")[-1]["global_step"] == 2 * STEPS


@pytest.mark.parametrize("updates, logged", [(3, [1, 2, 3]), (40, list(range(2, 41, 2)))])
def test_a_run_logs_at_every_twentieth_of_its_updates_whatever_the_log_interval(tmp_path, updates, logged):
    """With train.log_interval far off, a run still logs about 20 times: every max(1, updates // 20)-th update
    and the last, so a short run's last log shows where it ended."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    config = load_config("cartpole", {"env": {"num_envs": 4}, "policy": {"hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8, "minibatch_size": 32,
                                                "update_epochs": 1, "total_timesteps": updates * 32,
                                                "log_interval": 1e9, "stop_at_target": False}})
    run.train(config, tmp_path / "run", dashboard=False)
    assert [row["update"] for row in rows(tmp_path / "run")] == logged


def test_the_logged_learning_rate_and_entropy_weight_are_the_updates_own(tmp_path):
    """Each metrics row holds the mean over the updates since the last row of what they report: with constant
    schedules (no annealing) the configured learning rate and entropy weight, whatever the number of updates a
    row covers (one or two here)."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    for updates, log_interval in ((3, 0.0), (40, 1e9)):
        config = load_config("cartpole", {"env": {"num_envs": 4}, "policy": {"hidden": 8, "layers": 1},
                                          "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8,
                                                    "minibatch_size": 32, "update_epochs": 1, "anneal_lr": False,
                                                    "learning_rate": 0.002, "ent_coef": 0.03,
                                                    "total_timesteps": updates * 32, "log_interval": log_interval,
                                                    "stop_at_target": False}})
        run.train(config, tmp_path / str(updates), dashboard=False)
        logged = rows(tmp_path / str(updates))
        assert len(logged) == min(updates, 20)
        assert {(row["charts/learning_rate"], row["charts/ent_coef"]) for row in logged} == {(0.002, 0.03)}


def test_a_changed_env_file_is_named_in_one_warning_with_both_paths_and_hashes(tmp_path, capsys):
    """--resume and --eval of a checkpoint trained on a user's env file whose content has changed since: one line
    naming the file now and then, each with the start of its sha256; the same content (a moved file), a checkpoint
    that records no file, or a built-in env: nothing."""
    import hashlib

    from fastvec.trainer.config import load_config
    from fastvec.trainer.settings import Config
    corridor = Path(__file__).resolve().parents[2] / "examples" / "my_env.h"
    config = Config.of(load_config(str(corridor)))
    sha = hashlib.sha256(corridor.read_bytes()).hexdigest()
    old = {"env_source": {"path": "/elsewhere/my_env.h", "sha256": "0123456789abcdef" * 4}}
    run_dir_mod.warn_if_source_changed(old, config, "ck.npz")
    assert capsys.readouterr().err == (
        f"fastvec-train: warning: the env file {config.env.source} (sha256 {sha[:12]}...) differs from the one "
        f"ck.npz was trained on (/elsewhere/my_env.h, sha256 0123456789ab...); its sizes match, so it runs, but the "
        f"env's rules may have changed\n")
    for meta, cfg in (({"env_source": {"path": "/moved/my_env.h", "sha256": sha}}, config), ({}, config),
                      ({"env_source": "damaged"}, config), (old, Config.of(load_config("cartpole")))):
        run_dir_mod.warn_if_source_changed(meta, cfg, "ck.npz")
        assert capsys.readouterr().err == "", meta


def test_a_resume_counts_on_from_the_checkpoints_training_seconds_or_from_0_if_it_records_none(tmp_path):
    """resume_state returns the seconds the checkpoint says were trained (the run's logged time goes on from there);
    a checkpoint that records none (written by hand, or by an older fastvec) counts from 0."""
    from fastvec.trainer import run as run_mod
    from fastvec.trainer.config import load_config
    config = load_config("cartpole", {"env": {"num_envs": 4}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": 8, "bptt_horizon": 8,
                                                "minibatch_size": 32}})
    trainer = run_mod.make_trainer(config)
    try:
        for counters, elapsed in (({"time": 12.5}, 12.5), ({}, 0.0)):
            run = tmp_path / f"run{len(counters)}"
            state = trainer.state_dict()
            state["counters"] = {**{k: v for k, v in state["counters"].items() if k != "time"}, **counters}
            checkpoint.save(run / "checkpoints" / checkpoint.checkpoint_name(0), trainer.spec, "cartpole", 1, state,
                            config)
            assert run_dir_mod.resume_state(trainer, run, "cartpole") == elapsed, counters
    finally:
        run_mod.close_batches(trainer.env_batches)
