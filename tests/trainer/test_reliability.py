"""Runs survive being stopped and nothing read back is trusted blindly: kill -9 at random points and
resume, SIGTERM / SIGINT checkpoints with the true step count, damaged checkpoints and config.toml, resume order
by update number, metrics.jsonl repair, bad trainer inputs, and one-line errors. CPU only, tiny CartPole runs."""

import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli, run
from fastvec.trainer.config import CONFIG_DIR, load_config, load_toml, to_toml

STEPS = 8 * 16  # agent steps per update of a tiny run (8 envs x horizon 16)
TINY = {"env": {"num_envs": 8}, "policy": {"kind": "mingru", "hidden": 8, "layers": 1},
        "train": {"device": "cpu", "horizon": 16, "bptt_horizon": 8, "minibatch_size": 64, "update_epochs": 1,
                  "log_interval": 0.0, "checkpoint_interval": 2}}
CKPT_NAME = re.compile(r"update_(\d{6})\.npz")


def tiny_config(updates: int, **train):
    overrides = {section: dict(values) for section, values in TINY.items()}
    overrides["train"].update(total_timesteps=updates * STEPS, **train)
    return load_config("cartpole", overrides)


def tiny_args(updates: int, **train) -> list[str]:
    """fastvec-train's command line for a tiny cartpole run of `updates` updates."""
    values = {f"{section}.{name}": value for section, table in TINY.items() for name, value in table.items()}
    values.update({f"train.{name}": value for name, value in train.items()})
    values["train.total_timesteps"] = updates * STEPS
    text = {True: "true", False: "false"}
    return ["cartpole", *(f"--{key}={text.get(value, value) if isinstance(value, bool) else value}"
                          for key, value in values.items())]


def train_command(args: list[str]) -> list[str]:
    return [sys.executable, "-c", "import sys; from fastvec.trainer.cli import main; sys.exit(main())", *args]


def metrics_rows(run_dir: Path) -> list[dict]:
    """metrics.jsonl's lines (a partial last line of a killed run is left out here)."""
    path = Path(run_dir) / "metrics.jsonl"
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


def checkpoint_files(run_dir: Path) -> dict[int, Path]:
    folder = Path(run_dir) / "checkpoints"
    return {int(m.group(1)): p for p in (folder.iterdir() if folder.is_dir() else [])
            if (m := CKPT_NAME.fullmatch(p.name))}


def newest_good_update(run_dir: Path) -> int:
    """The highest update with a checkpoint that loads and holds finite weights (0: none), read independently
    of the trainer's own choice."""
    for update, path in sorted(checkpoint_files(run_dir).items(), reverse=True):
        try:
            meta, state = checkpoint.load(path)
        except Exception:
            continue
        if meta["counters"].get("update") == update and np.isfinite(state["params"]).all():
            return update
    return 0


def stray_files(run_dir: Path) -> list[str]:
    """Files in checkpoints/ that are not checkpoints: what a save interrupted mid-write leaves."""
    folder = Path(run_dir) / "checkpoints"
    return [p.name for p in (folder.iterdir() if folder.is_dir() else []) if not CKPT_NAME.fullmatch(p.name)]


def wait_for(condition, proc, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.003)
    raise AssertionError("the run made no progress")


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fastvec-train: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------------- kill -9


KILL_CASES = [  # 4 runs x 5 kills = 20 kills at random points
    ("every update, kills inside saves", {"checkpoint_interval": 1}, "0.03"),
    ("every 3 updates", {"checkpoint_interval": 3}, ""),
    ("every 4 updates, async", {"checkpoint_interval": 4, "async": True}, ""),
    ("by time only", {"checkpoint_interval": 1000, "checkpoint_seconds": 0.05}, "0.004"),
]


# Loaded into the trained process (as sitecustomize) where a case pauses saves: every checkpoint write first
# leaves a half-written temporary file for PAUSE seconds, as a save in progress does, so kills land inside saves.
SLOW_SAVES = """
import os, time
from pathlib import Path
from fastvec.trainer import checkpoint
PAUSE = float(os.environ["SLOW_SAVE_SECONDS"])
write_whole = checkpoint.atomic_write
def atomic_write(path, data):
    path = Path(path)
    if path.suffix == ".npz":
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        view = memoryview(data)
        with open(tmp, "wb") as f:
            f.write(view[:len(view) // 2])
            f.flush()
            time.sleep(PAUSE)
        os.unlink(tmp)
    return write_whole(path, data)
checkpoint.atomic_write = atomic_write
"""


@pytest.mark.parametrize("name,train,pause", KILL_CASES, ids=[case[0] for case in KILL_CASES])
def test_kill_9_at_random_points_then_resume_loses_and_repeats_nothing_beyond_the_interval(tmp_path, name, train,
                                                                                           pause):
    """With a pause (SLOW_SAVES), every checkpoint write stalls halfway, so that kills land inside saves."""
    updates, kills, inside_save = 60, 0, 0
    rng = random.Random(name)
    run_dir = tmp_path / "run"
    env = dict(os.environ)
    if pause:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SLOW_SAVES)
        env.update(SLOW_SAVE_SECONDS=pause, PYTHONPATH=os.pathsep.join([str(site), env.get("PYTHONPATH", "")]))
    args = tiny_args(updates, **train)
    for _ in range(5):
        resume_from = newest_good_update(run_dir)
        logged = max([r["update"] for r in metrics_rows(run_dir)], default=0)
        where = f"--resume={run_dir}" if (run_dir / "config.toml").is_file() else f"--run-dir={run_dir}"
        proc = subprocess.Popen(train_command([*args, where]), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        ahead = rng.randint(-2, 8)  # < 0: a kill during start-up, resume's repairs or the first update
        if ahead >= 0:
            wait_for(lambda: any(r["update"] > max(resume_from + ahead, logged)
                                     for r in metrics_rows(run_dir)), proc)
            time.sleep(rng.uniform(0, 0.03))
        else:
            time.sleep(rng.uniform(0, 0.4))
        if proc.poll() is not None:
            break  # finished first
        proc.kill()
        proc.wait()
        kills += 1
        inside_save += bool(stray_files(run_dir))
        rows = metrics_rows(run_dir)
        good = newest_good_update(run_dir)
        if rows and rows[-1]["update"] > good:  # work that the next resume redoes
            if "checkpoint_seconds" in train:
                at_good = next((r["time"] for r in rows if r["update"] == good), 0.0)
                assert rows[-1]["time"] - at_good <= train["checkpoint_seconds"] + 0.5
            else:
                assert rows[-1]["update"] - good <= train["checkpoint_interval"]
    assert kills == 5
    if pause == "0.03":
        assert inside_save >= 1, "no kill landed inside a checkpoint save"
    done = subprocess.run(train_command([*args, f"--resume={run_dir}"]), env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    rows = metrics_rows(run_dir)
    assert len(rows) == len((run_dir / "metrics.jsonl").read_text().splitlines())  # every line whole
    assert [r["update"] for r in rows] == list(range(1, updates + 1))  # none lost, none twice
    assert [r["global_step"] for r in rows] == [u * STEPS for u in range(1, updates + 1)]
    meta, _ = checkpoint.load(checkpoint_files(run_dir)[updates])
    assert meta["counters"]["update"] == updates and meta["counters"]["global_step"] == updates * STEPS
    assert stray_files(run_dir) == []
    # What stays: the checkpoint_interval ones and the last; those the killed runs took for time alone are gone
    interval = train["checkpoint_interval"]
    assert sorted(checkpoint_files(run_dir)) == sorted({u for u in range(1, updates + 1) if u % interval == 0}
                                                       | {updates})


# ---------------------------------------------------------------------------------------------- stop signals


def default_sigint() -> None:
    """A child's SIGINT back to the default: pytest started with SIGINT ignored (nohup, `cmd &` in a script)
    passes SIG_IGN on, and fastvec-train keeps an ignored SIGINT ignored, as its user asked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_ignored():
    """This process ignores SIGINT, as pytest does under nohup, until the test ends."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sig,code,asynchronous,pytest_sigint", [
    (signal.SIGTERM, 143, False, "default"), (signal.SIGTERM, 143, True, "default"),
    (signal.SIGINT, 130, False, "default"), (signal.SIGINT, 130, True, "default"),
    (signal.SIGINT, 130, False, "ignored")],
    ids=["SIGTERM-sync", "SIGTERM-async", "SIGINT-sync", "SIGINT-async", "SIGINT-sync-pytest_ignores_SIGINT"])
def test_a_stop_signal_saves_the_true_step_count_and_says_how_to_resume(tmp_path, request, sig, code, asynchronous,
                                                                        pytest_sigint):
    if pytest_sigint == "ignored":
        request.getfixturevalue("sigint_ignored")
    run_dir = tmp_path / "run"
    args = tiny_args(2000, checkpoint_interval=1000, **{"async": asynchronous})
    proc = subprocess.Popen(train_command([*args, f"--run-dir={run_dir}"]), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    wait_for(lambda: len(metrics_rows(run_dir)) >= 5, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert f"fastvec-train cartpole --resume={run_dir}" in err and "Traceback" not in err
    saved = checkpoint_files(run_dir)
    assert len(saved) == 1  # the stop's checkpoint (checkpoint_interval is far away)
    update, path = saved.popitem()
    meta, _ = checkpoint.load(path)
    # an update boundary, with the steps the updates trained on (not a rollout collected for the next one)
    assert meta["counters"]["update"] == update and meta["counters"]["global_step"] == update * STEPS
    assert metrics_rows(run_dir)[-1]["update"] == update
    done = subprocess.run(train_command([*tiny_args(update + 3, checkpoint_interval=1000,
                                                    **{"async": asynchronous}), f"--resume={run_dir}"]),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = metrics_rows(run_dir)
    assert [r["update"] for r in rows] == list(range(1, update + 4))
    assert [r["global_step"] for r in rows] == [u * STEPS for u in range(1, update + 4)]


def test_checkpoints_come_every_checkpoint_seconds_as_well_as_every_interval(tmp_path, monkeypatch):
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    slow_update = NumpyTrainer.update

    def update(self, num_updates):
        time.sleep(0.03)
        return slow_update(self, num_updates)

    saves = []
    save = checkpoint.save

    def record(path, *args):
        saves.append(int(CKPT_NAME.fullmatch(path.name).group(1)))
        return save(path, *args)

    monkeypatch.setattr(NumpyTrainer, "update", update)
    monkeypatch.setattr(checkpoint, "save", record)
    run.train(tiny_config(20, checkpoint_interval=15, checkpoint_seconds=0.1), tmp_path / "run", dashboard=False)
    assert len(saves) >= 5 and 15 in saves and saves[-1] == 20  # by time, at the interval, at the end
    assert all(b - a <= 5 for a, b in zip([0, *saves], saves))  # 0.1 s is about 3 updates of 0.03 s
    # one taken for time alone is deleted once the next is written; the interval's and the last stay
    assert sorted(checkpoint_files(tmp_path / "run")) == [15, 20]


def test_shipped_configs_keep_at_most_a_minute_of_work_at_risk():
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        if path.stem == "default":
            continue
        values = load_toml(path)  # a variant (pong-selfplay.toml) names the env it is for
        # a config a family of envs shares is checked for one member
        family_member = {"mujoco": "hopper", "mujoco-warp": "hopper", "mpe": "simple_spread",
                         "smax": "smax:3m"}.get(path.stem, path.stem)
        config = load_config(values.get("env", {}).pop("name", family_member), values)
        train = config["train"]
        num_updates = math.ceil(train["total_timesteps"] / (config["env"]["num_envs"] * train["horizon"]))
        assert train["checkpoint_interval"] < num_updates, path.name  # a checkpoint before the end
        assert 0 < train["checkpoint_seconds"] <= 60, path.name


# ---------------------------------------------------------------------------------------------- damaged files


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A finished 6-update run with checkpoints at updates 2, 4 and 6."""
    run_dir = tmp_path_factory.mktemp("good") / "run"
    config = tiny_config(6)
    run.train(config, run_dir, dashboard=False)
    assert sorted(checkpoint_files(run_dir)) == [2, 4, 6]
    return config, run_dir


def copy_run(run_dir: Path, dest: Path) -> Path:
    import shutil
    shutil.copytree(run_dir, dest)
    return dest


def _npz(path: Path, **arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _resave(path: Path, config, edit) -> None:
    """Rewrite the checkpoint at path with edit(meta, state) applied (a well-formed file with bad contents)."""
    meta, state = checkpoint.load(path)
    spec = checkpoint.spec_of(meta)
    env = meta["env"]
    spec, env = edit(meta, state, spec, env) or (spec, env)
    if spec.obs_size != checkpoint.spec_of(meta).obs_size or spec.hidden != checkpoint.spec_of(meta).hidden:
        from fastvec.trainer.reference import FlatLayout, param_table
        size = FlatLayout(param_table(spec)).size
        state["params"] = np.zeros(size, np.float32)
        state["optimizer"] = np.zeros(2 * size, np.float32)
    path.unlink()
    checkpoint.save(path, spec, env, 1, state, config)


def _meta_bytes(path: Path, edit) -> None:
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(bytes(arrays["meta"]).decode())
    text = edit(meta)
    arrays["meta"] = np.frombuffer(text if isinstance(text, bytes) else json.dumps(meta).encode(), np.uint8)
    _npz(path, **arrays)


def _nan(meta, state, spec, env):
    state["params"][3] = np.nan


def _inf_optimizer(meta, state, spec, env):
    state["optimizer"][-1] = np.inf


def _other_env(meta, state, spec, env):
    import dataclasses
    return dataclasses.replace(spec, obs_size=118, num_actions=3), "breakout"


def _other_size(meta, state, spec, env):
    import dataclasses
    return dataclasses.replace(spec, hidden=16), env


DAMAGE = {
    "truncated": lambda p, c: p.write_bytes(p.read_bytes()[:p.stat().st_size // 2]),
    "garbage": lambda p, c: p.write_bytes(np.random.default_rng(0).bytes(3000)),
    "empty": lambda p, c: p.write_bytes(b""),
    "no params": lambda p, c: _npz(p, meta=np.load(p)["meta"]),
    "meta not JSON": lambda p, c: _meta_bytes(p, lambda meta: b"{\"format\": \"fastvec-checkp"),
    "no counters": lambda p, c: _meta_bytes(p, lambda meta: meta.pop("counters")),
    "counters of another update": lambda p, c: _meta_bytes(p, lambda meta: meta["counters"].update(update=2)),
    "NaN weights": lambda p, c: _resave(p, c, _nan),
    "inf optimizer state": lambda p, c: _resave(p, c, _inf_optimizer),
    "another env": lambda p, c: _resave(p, c, _other_env),
    "another policy size": lambda p, c: _resave(p, c, _other_size),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_newest_checkpoint_is_reported_in_one_line_and_resume_falls_back(good_run, tmp_path, damage,
                                                                                  capsys):
    config, good = good_run
    run_dir = copy_run(good, tmp_path / "run")
    newest = run_dir / "checkpoints" / "update_000006.npz"
    DAMAGE[damage](newest, config)
    os.utime(newest, (time.time() + 100, time.time() + 100))
    capsys.readouterr()
    assert cli.main([*tiny_args(8), f"--resume={run_dir}"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("fastvec-train: warning: ") and "update_000006.npz" in err[0], err
    assert "update_000004.npz" in err[0]  # where it resumed from
    assert [r["update"] for r in metrics_rows(run_dir)] == list(range(1, 9))  # resumed from 4, no duplicates
    meta, _ = checkpoint.load(checkpoint_files(run_dir)[8])
    assert meta["counters"]["global_step"] == 8 * STEPS
    if damage not in ("another policy size", "counters of another update"):  # fine for --eval: its own
        # architecture, and a file named by the user has no update number to disagree with
        bad = tmp_path / "bad.npz"
        DAMAGE[damage](checkpoint_files(copy_run(good, tmp_path / "again"))[6], config)
        (tmp_path / "again" / "checkpoints" / "update_000006.npz").rename(bad)
        assert cli.main(["cartpole", f"--eval={bad}", "--eval.episodes=2"]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert str(bad) in line
        if damage == "another env":  # both sizes named, each the right one
            assert "breakout (obs 118, actions 3), not cartpole (obs 4, actions 2)" in line


def test_resume_with_only_damaged_checkpoints_is_one_line_error(good_run, tmp_path, capsys):
    config, good = good_run
    run_dir = copy_run(good, tmp_path / "run")
    for update, path in checkpoint_files(run_dir).items():
        DAMAGE["truncated" if update != 4 else "NaN weights"](path, config)
    before = (run_dir / "metrics.jsonl").read_bytes()
    capsys.readouterr()
    assert cli.main([*tiny_args(8), f"--resume={run_dir}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "no usable checkpoint" in line and "update_000006.npz" in line
    assert (run_dir / "metrics.jsonl").read_bytes() == before  # nothing touched


CONFIG_DAMAGE = {
    "truncated mid-file": lambda text: text[:len(text) // 2],
    "sections lost at the end": lambda text: text[:text.index("[eval]")],
    "last lines lost": lambda text: "\n".join(text.rstrip("\n").split("\n")[:-2]) + "\n",
    "empty": lambda text: "",
    "binary garbage": lambda text: "\x00\x81\xfe" * 40,
}


@pytest.mark.parametrize("damage", list(CONFIG_DAMAGE))
def test_resume_refuses_a_damaged_config_toml(good_run, tmp_path, damage, capsys):
    _, good = good_run
    run_dir = copy_run(good, tmp_path / "run")
    path = run_dir / "config.toml"
    path.write_bytes(CONFIG_DAMAGE[damage](path.read_text()).encode("latin-1", "surrogateescape"))
    before = path.read_bytes()
    capsys.readouterr()
    assert cli.main(["cartpole", f"--resume={run_dir}", "--train.total_timesteps=2000"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{path} is damaged (" in line  # (the test's tmp_path has "damaged" in its name too)
    assert path.read_bytes() == before and sorted(checkpoint_files(run_dir)) == [2, 4, 6]


def test_config_toml_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    checkpoint.atomic_write_text(path, "old = 1\n")

    def fail(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        checkpoint.atomic_write_text(path, to_toml(load_config("cartpole")))
    assert path.read_text() == "old = 1\n" and [p.name for p in tmp_path.iterdir()] == ["config.toml"]


# ---------------------------------------------------------------------------------------------- resume order, metrics


def test_resume_goes_by_update_number_not_by_modification_time(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run.train(tiny_config(12), run_dir, dashboard=False)
    files = checkpoint_files(run_dir)
    later = {u: files[u].read_bytes() for u in (6, 8, 10, 12)}
    os.utime(files[4], (time.time() + 1000, time.time() + 1000))  # as `tar x --touch` or a copy can leave it
    assert cli.main([*tiny_args(14), f"--resume={run_dir}"]) == 0
    assert [r["update"] for r in metrics_rows(run_dir)] == list(range(1, 15))
    assert all(files[u].read_bytes() == data for u, data in later.items())  # 6-12 never overwritten
    assert checkpoint.latest(run_dir).name == "update_000014.npz"


def test_resume_repairs_metrics_a_partial_line_and_lines_past_the_checkpoint(good_run, tmp_path, capsys):
    _, good = good_run
    run_dir = copy_run(good, tmp_path / "run")
    (run_dir / "checkpoints" / "update_000006.npz").unlink()  # as if killed after logging 5 and 6
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write('{"global_step": 896, "ti')  # a disk-full or kill mid-line
    from fastvec.trainer import plot
    assert [r["update"] for r in plot.read_metrics(run_dir)] == [1, 2, 3, 4, 5, 6]  # fastvec-plot skips it
    assert cli.main([*tiny_args(7), f"--resume={run_dir}"]) == 0
    text = (run_dir / "metrics.jsonl").read_text()
    assert [json.loads(line)["update"] for line in text.splitlines()] == list(range(1, 8))


# ---------------------------------------------------------------------------------------------- inputs and errors


@pytest.mark.parametrize("flag,key", [
    ("--train.checkpoint_interval=0", "train.checkpoint_interval"),
    ("--train.checkpoint_seconds=-1", "train.checkpoint_seconds"),
    ("--train.checkpoint_seconds=nan", "train.checkpoint_seconds"),
    ("--train.learning_rate=inf", "train.learning_rate"),
    ("--train.learning_rate=nan", "train.learning_rate"),
    ("--train.max_grad_norm=nan", "train.max_grad_norm"),
    ("--train.gamma=nan", "train.gamma"),
    ("--train.ent_coef=inf", "train.ent_coef"),
    ("--train.log_interval=inf", "train.log_interval"),
    ("--train.adam_beta2=1.5", "train.adam_beta2"),
    ("--train.clip_coef=-1", "train.clip_coef"),
    ("--train.env_threads=-1", "train.env_threads"),
    ("--train.blas_threads=-4", "train.blas_threads"),
    ("--train.seed=-1", "train.seed"),
    ("--train.seed=18446744073709551616", "train.seed"),
])
def test_bad_trainer_inputs_are_refused_naming_the_key(flag, key, tmp_path, capsys):
    assert cli.main(["cartpole", "--train.device=cpu", flag, f"--run-dir={tmp_path / 'run'}"]) == 2
    assert key in one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "run").exists()


def test_file_system_errors_are_one_line_naming_the_path_and_operation(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert cli.main([*tiny_args(2), f"--run-dir={blocker / 'run'}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(blocker / "run") in line and "create" in line
    run_dir = tmp_path / "run"
    (run_dir / "metrics.jsonl").mkdir(parents=True)  # metrics.jsonl cannot be opened
    assert cli.main([*tiny_args(2), f"--run-dir={run_dir}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(run_dir / "metrics.jsonl") in line and "open" in line


def test_out_of_memory_is_one_line_naming_the_sizes(tmp_path, capsys, monkeypatch):
    from fastvec.trainer.numpy_trainer import NumpyTrainer

    def new_slot(self):
        raise MemoryError("Unable to allocate 64.0 GiB for an array with shape (16, 8, 4) and data type float32")

    monkeypatch.setattr(NumpyTrainer, "new_slot", new_slot)
    assert cli.main([*tiny_args(2), f"--run-dir={tmp_path / 'run'}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "64.0 GiB" in line and "env.num_envs=8" in line and "lower env.num_envs" in line


def test_selfplay_ratings_resume_at_the_checkpoint_and_a_damaged_file_starts_over(tmp_path, capsys):
    from types import SimpleNamespace
    from fastvec.trainer import reference as ref
    from fastvec.trainer.selfplay import SelfPlay
    from fastvec.trainer.settings import Config
    config = Config.of(load_config("pong", {"selfplay": {"enabled": True}, "policy": {"hidden": 8, "layers": 1}}))
    spec = ref.PolicySpec(obs_size=8, num_actions=3, hidden=8, layers=1)
    trainer = SimpleNamespace(update_index=4, gpu_games=None, spec=spec, params=ref.init_params(spec, np.random.default_rng(0),
                                                                                  np.float32))
    (tmp_path / "ratings.json").write_text(json.dumps({
        "results": [["u2", "bot0", 1.0, 2], ["u6", "u2", 2.0, 2]],  # u6: played after the checkpoint (update 4)
        "history": [{"update": 2, "elo": 1000.0}, {"update": 6, "elo": 1100.0}]}))
    league = SelfPlay(config)
    league.start(trainer, tmp_path)
    assert league.table.as_list() == [["u2", "bot0", 1.0, 2]] and [h["update"] for h in league.history] == [2]
    (tmp_path / "ratings.json").write_text('{"results": [["u2", "bo')
    league = SelfPlay(config)
    league.start(trainer, tmp_path)
    assert league.table.as_list() == [] and league.history == []
    assert "ratings.json is unreadable" in capsys.readouterr().err
