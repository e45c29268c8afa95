"""fastvec.trainer.loggers: CleanRL's metric names, TensorBoard event files read back, a W&B run in offline mode
(its history read back from the .wandb file), the missing-package error, and nothing done with both options off."""

import copy
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.loggers import WANDB_ID_FILE, RunLoggers, scalars


def make_config(tensorboard: bool = False, wandb_project: str = "", wandb_mode: str = "offline") -> dict:
    config = copy.deepcopy(load_config("cartpole"))
    config["train"].update(tensorboard=tensorboard, wandb_project=wandb_project, wandb_mode=wandb_mode)
    return config


def make_row(update: int, episode_return: float | None = 20.5) -> dict:
    """A metrics.jsonl row as run.py writes it (CartPole, 512 steps per update)."""
    return {"global_step": 512 * update, "time": 0.25 * update, "sps": 2048.0 + update, "update": update,
            "episodes": 3, "episode_return": episode_return,
            "episode_length": None if episode_return is None else 21.0, "losses/policy_loss": -0.125,
            "losses/value_loss": 4.5, "losses/entropy": 0.625, "losses/approx_kl": 0.0078125, "losses/clipfrac": 0.25,
            "losses/explained_variance": 0.5, "charts/learning_rate": 0.005 - 0.0001 * update,
            "time_split": {"rollout": 0.75, "update": 0.125}}


def test_cleanrl_names_and_flattening():
    row = make_row(3)
    row.update({"score": np.float32(1.5), "selfplay/elo": 1210.5, "selfplay/train_score": None,
                "selfplay/pool": np.int64(4), "device": "cpu", "flag": True, "deep": {"a": {"b": 2}}, "listed": [1, 2]})
    assert scalars(row) == {
        "time": 0.75, "charts/SPS": 2051.0, "update": 3.0, "episodes": 3.0,
        "charts/episodic_return": 20.5, "charts/episodic_length": 21.0,  # fastvec's names -> CleanRL's
        "losses/policy_loss": -0.125, "losses/value_loss": 4.5, "losses/entropy": 0.625, "losses/approx_kl": 0.0078125,
        "losses/clipfrac": 0.25, "losses/explained_variance": 0.5, "charts/learning_rate": pytest.approx(0.0047),
        "time_split/rollout": 0.75, "time_split/update": 0.125, "score": 1.5, "selfplay/elo": 1210.5,
        "selfplay/pool": 4.0, "deep/a/b": 2.0}  # no global_step (the step), None, strings, bools or lists
    assert all(type(v) is float for v in scalars(row).values())
    assert "charts/episodic_return" not in scalars(make_row(1, episode_return=None))


def test_both_off_does_nothing_and_imports_nothing(tmp_path):
    loggers = RunLoggers(make_config(), tmp_path / "run", resume=False)
    assert loggers.outputs == []
    loggers.log(make_row(1))
    loggers.close()
    loggers.close()
    assert not (tmp_path / "run").exists()
    # in a fresh interpreter: constructing and logging with both off imports neither package
    train = {"tensorboard": False, "wandb_project": "", "wandb_mode": "online"}
    code = ("import sys, json; from fastvec.trainer.loggers import RunLoggers; "
            f"r = RunLoggers({{'train': {train!r}}}, {str(tmp_path / 'run')!r}, False); "
            "r.log(json.loads(sys.argv[1])); r.close(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorboard', 'wandb', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(make_row(1))], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("missing, option", [("tensorboard", "train.tensorboard=true"),
                                             ("wandb", "train.wandb_project='proj'")])
def test_missing_package_names_the_extra(tmp_path, monkeypatch, missing, option):
    for name in [m for m in sys.modules if m.split(".")[0] == missing] + [missing]:
        monkeypatch.setitem(sys.modules, name, None)  # `import NAME` now raises ImportError
    run_dir = tmp_path / "run"
    with pytest.raises(ImportError) as err:
        RunLoggers(make_config(tensorboard=True, wandb_project="proj"), run_dir, resume=False)
    message = str(err.value)
    assert "pip install 'fastvec[logging]'" in message and option in message and "\n" not in message
    assert not run_dir.exists()  # raised before either output was opened


def read_tensorboard(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    accumulator = EventAccumulator(str(run_dir / "tensorboard"))
    accumulator.Reload()
    return accumulator


def test_tensorboard_event_files_round_trip(tmp_path):
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=False)
    for update in (1, 2, 3):
        loggers.log(make_row(update, episode_return=None if update == 2 else 10.0 * update))
    loggers.close()
    loggers.close()
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    tb = read_tensorboard(run_dir)
    tags = set(tb.Tags()["scalars"])
    assert {"charts/episodic_return", "charts/episodic_length", "charts/SPS", "charts/learning_rate",
            "losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl", "losses/clipfrac",
            "losses/explained_variance", "time_split/rollout", "update", "time"} <= tags
    assert not tags & {"episode_return", "sps", "global_step"}
    returns = tb.Scalars("charts/episodic_return")
    assert [(e.step, e.value) for e in returns] == [(512, 10.0), (1536, 30.0)]  # update 2 had no episodes
    assert [(e.step, e.value) for e in tb.Scalars("charts/SPS")] == [(512, 2049.0), (1024, 2050.0), (1536, 2051.0)]
    assert tb.Scalars("losses/policy_loss")[-1].value == -0.125
    assert tb.Scalars("charts/learning_rate")[0].value == pytest.approx(0.0049)


def test_tensorboard_resume_drops_what_the_checkpoint_did_not_keep(tmp_path):
    """A run killed after update 5 resumes from its update-3 checkpoint: run.py has cut metrics.jsonl back to
    updates 1-3, and TensorBoard shows the resumed run's update 4 and 5, not the killed run's."""
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=False)
    for update in range(1, 6):
        loggers.log(make_row(update, episode_return=1.0))
    loggers.close()
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(make_row(u)) + "\n" for u in (1, 2, 3)))
    loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=True)
    for update in (4, 5):
        loggers.log(make_row(update, episode_return=2.0))
    loggers.close()
    assert len(list((run_dir / "tensorboard").glob("events.out.tfevents.*"))) == 2
    points = [(e.step, e.value) for e in read_tensorboard(run_dir).Scalars("charts/episodic_return")]
    assert points == [(512, 1.0), (1024, 1.0), (1536, 1.0), (2048, 2.0), (2560, 2.0)]


def wandb_history(run_file) -> list[dict]:
    """The history rows of a .wandb file: a ':W&B' header (7 bytes), then LevelDB-log records (32 KiB blocks;
    each record a 4-byte checksum, 2-byte length, 1-byte type: full, first, middle, last), each a Record proto.
    wandb >= 0.19 ships no Python reader for it (its Go core writes it), hence this one."""
    from wandb.proto import wandb_internal_pb2
    data = run_file.read_bytes()
    assert data[:4] == b":W&B", data[:8]
    rows, pos, pending, block = [], 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a record header is padding
            pos += block - pos % block
            continue
        length, kind = struct.unpack_from("<HB", data, pos + 4)
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # full, last
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            if record.HasField("history"):
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


@pytest.fixture
def wandb_offline(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    return wandb


def test_wandb_offline_run_holds_the_history(tmp_path, wandb_offline):
    run_dir = tmp_path / "run"
    loggers = RunLoggers(make_config(wandb_project="fastvec-tests"), run_dir, resume=False)
    run = wandb_offline.run
    assert run is not None and run.project == "fastvec-tests"
    assert run.config["train"]["wandb_project"] == "fastvec-tests" and run.config["env"]["name"] == "cartpole"
    for update in (1, 2, 3):
        loggers.log(make_row(update, episode_return=None if update == 2 else 10.0 * update))
    assert run.summary["charts/episodic_return"] == 30.0 and run.summary["global_step"] == 1536
    assert run.summary["losses/value_loss"] == 4.5 and run.summary["time_split/rollout"] == 0.75
    loggers.close()
    loggers.close()
    assert wandb_offline.run is None
    run_id = (run_dir / WANDB_ID_FILE).read_text().strip()
    (run_file,) = (run_dir / "wandb").glob(f"offline-run-*-{run_id}*/run-{run_id}.wandb")
    history = wandb_history(run_file)
    assert [row["global_step"] for row in history] == [512, 1024, 1536]
    assert [row.get("charts/episodic_return") for row in history] == [10.0, None, 30.0]
    assert [row["charts/SPS"] for row in history] == [2049.0, 2050.0, 2051.0]
    assert {"losses/policy_loss", "losses/approx_kl", "charts/learning_rate", "update"} <= set(history[0])
    assert not set(history[0]) & {"episode_return", "sps"}


def test_wandb_resume_continues_the_same_run(tmp_path, wandb_offline):
    run_dir = tmp_path / "run"
    loggers = RunLoggers(make_config(wandb_project="fastvec-tests"), run_dir, resume=False)
    loggers.log(make_row(1))
    first = wandb_offline.run.id
    loggers.close()
    assert (run_dir / WANDB_ID_FILE).read_text().strip() == first
    loggers = RunLoggers(make_config(wandb_project="fastvec-tests"), run_dir, resume=True)
    assert wandb_offline.run.id == first
    loggers.log(make_row(2))
    loggers.close()
    # two sessions with one run id (the second offline directory gets a -1 suffix when started in the same second)
    assert len(list((run_dir / "wandb").glob(f"offline-run-*-{first}*/run-{first}.wandb"))) == 2
    loggers = RunLoggers(make_config(wandb_project="fastvec-tests"), run_dir, resume=False)  # a fresh run: a new id
    assert wandb_offline.run.id != first and (run_dir / WANDB_ID_FILE).read_text().strip() == wandb_offline.run.id
    loggers.close()


def test_both_outputs_together(tmp_path, wandb_offline):
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    loggers = RunLoggers(make_config(tensorboard=True, wandb_project="fastvec-tests"), run_dir, resume=False)
    loggers.log(make_row(1))
    loggers.close()
    assert [(e.step, e.value) for e in read_tensorboard(run_dir).Scalars("charts/SPS")] == [(512, 2049.0)]
    run_id = (run_dir / WANDB_ID_FILE).read_text().strip()
    (run_file,) = (run_dir / "wandb").glob(f"offline-run-*-{run_id}*/run-{run_id}.wandb")
    assert wandb_history(run_file)[0]["charts/SPS"] == 2049.0


def test_wandb_that_cannot_start_is_a_one_line_config_error(tmp_path, wandb_offline, monkeypatch):
    from fastvec.trainer.config import ConfigError
    pytest.importorskip("tensorboard")

    def refuse(**kwargs):
        raise wandb_offline.errors.UsageError("No API key configured.\nUse `wandb login` to log in.")
    monkeypatch.setattr(wandb_offline, "init", refuse)
    run_dir = tmp_path / "run"
    with pytest.raises(ConfigError) as err:
        RunLoggers(make_config(tensorboard=True, wandb_project="fastvec-tests", wandb_mode="online"), run_dir,
                   resume=False)
    assert not (run_dir / WANDB_ID_FILE).exists() and not (run_dir / "tensorboard").exists()
    assert "train.wandb_project='fastvec-tests'" in str(err.value) and "No API key configured" in str(err.value)
    assert "--train.wandb_mode=offline" in str(err.value) and "\n" not in str(err.value)


def test_a_resumed_runs_tensorboard_purge_starts_one_past_the_last_kept_row(tmp_path):
    """The step from which TensorBoard drops a killed run's later points: one past the last metrics row that
    the resume kept (rows at or after the first new step are the killed run's and are stale), 0 when it kept
    none, the new row's own step without a metrics.jsonl (read without TensorBoard installed)."""
    from fastvec.trainer.loggers import STEP_KEY, _TensorBoard

    board = object.__new__(_TensorBoard)
    board.run_dir = tmp_path
    assert board.purge_step(4096) == 4096
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({STEP_KEY: s}) + "\n" for s in (1024, 2048, 3072)) + "not json\n[1]\n")
    assert board.purge_step(4096) == 3073
    assert board.purge_step(2048) == 1025
    assert board.purge_step(1024) == 0
    metrics.write_text(json.dumps({STEP_KEY: 5000}) + "\n" + json.dumps({STEP_KEY: "7"}) + "\n")
    assert board.purge_step(4096) == 0


class FakeWandb:
    """The part of the wandb package fastvec uses, recording what it is given (wandb is optional here)."""

    class errors:
        class Error(Exception):
            pass

    def __init__(self, fail: str = ""):
        self.inits, self.logged, self.metrics, self.fail, self.finished, self.torn_down = [], [], [], fail, 0, 0

    def init(self, **kwargs):
        if self.fail:
            raise self.errors.Error(self.fail)
        self.inits.append(kwargs)
        return self

    def define_metric(self, name, **kwargs):
        self.metrics.append((name, kwargs))

    def log(self, values):
        self.logged.append(values)

    def finish(self):
        self.finished += 1

    def teardown(self):
        self.torn_down += 1


def test_a_wandb_run_gets_a_fresh_id_kept_for_its_resume_and_logs_against_global_step(tmp_path, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    run_dir = tmp_path / "20260101-120000"
    run_dir.mkdir()
    config = make_config(wandb_project="proj", wandb_mode="offline")
    loggers = RunLoggers(config, run_dir, resume=False)
    first = fake.inits[0]
    run_id = first["id"]
    assert len(run_id) == 12 and set(run_id) <= set("abcdefghijklmnopqrstuvwxyz0123456789")
    assert (run_dir / WANDB_ID_FILE).read_text() == run_id + "\n"
    assert first["project"] == "proj" and first["resume"] == "allow" and first["mode"] == "offline"
    assert first["name"] == "cartpole-20260101-120000" and first["dir"] == str(run_dir) and first["config"] == config
    assert fake.metrics == [("global_step", {}), ("*", {"step_metric": "global_step"})]
    loggers.log(make_row(1))
    assert fake.logged[0]["global_step"] == 512 and fake.logged[0]["charts/SPS"] == 2049.0
    loggers.close()
    assert (fake.finished, fake.torn_down) == (1, 1)
    RunLoggers(config, run_dir, resume=True).close()
    assert fake.inits[1]["id"] == run_id  # the resumed run continues the same W&B run
    RunLoggers(config, run_dir, resume=False).close()
    assert fake.inits[2]["id"] != run_id  # a new run starts a new one
    online = make_config(wandb_project="proj", wandb_mode="")
    RunLoggers(online, run_dir, resume=False).close()
    assert fake.inits[3]["mode"] is None  # wandb's own default (its settings, WANDB_MODE)


def test_a_wandb_run_that_cannot_start_is_one_config_error_and_keeps_no_id(tmp_path, monkeypatch):
    from fastvec.trainer.config import ConfigError

    monkeypatch.setitem(sys.modules, "wandb", FakeWandb(fail="api_key not configured\n (no-tty)"))
    with pytest.raises(ConfigError, match=r"train.wandb_project='proj': W&B could not start the run: api_key not "
                                          r"configured \(no-tty\) \(log in with `wandb login`"):
        RunLoggers(make_config(wandb_project="proj"), tmp_path, resume=False)
    assert not (tmp_path / WANDB_ID_FILE).exists()


def test_only_a_resumed_runs_first_tensorboard_event_is_a_start_at_the_purge_step(tmp_path):
    """The events as written (TensorBoard's reader hides what a START purges): a new run's file holds scalars
    only; a resumed run's opens with one SessionLog START at one past the last kept row, then scalars."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    run_dir = tmp_path / "run"

    def events(after: set):
        (path,) = set((run_dir / "tensorboard").glob("events.out.tfevents.*")) - after
        return path, [e for e in EventFileLoader(str(path)).Load() if not e.HasField("file_version")]

    loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=False)
    for update in (1, 2, 3):
        loggers.log(make_row(update))
    loggers.close()
    first, written = events(set())
    assert [(e.step, e.HasField("summary")) for e in written] == [(512, True), (1024, True), (1536, True)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(make_row(u)) + "\n" for u in (1, 2)))
    loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=True)
    for update in (3, 4):
        loggers.log(make_row(update))
    loggers.close()
    _, written = events({first})
    assert written[0].HasField("session_log") and written[0].session_log.status == written[0].session_log.START
    assert written[0].step == 1025
    assert [(e.step, e.HasField("summary")) for e in written[1:]] == [(1536, True), (2048, True)]


def test_tensorboard_events_as_handed_to_its_writer(tmp_path, monkeypatch):
    """Without the tensorboard package (its modules stood in for): a new run hands its writer scalar events only,
    each flushed; a resumed run's first event is one SessionLog START at the purge step, then its scalars."""
    from types import SimpleNamespace

    from fastvec.trainer import loggers as loggers_mod
    writers = []

    class Writer:
        def __init__(self, logdir):
            self.logdir, self.events, self.flushes, self.closed = logdir, [], 0, False
            writers.append(self)

        def add_event(self, event):
            self.events.append(event)

        def flush(self):
            self.flushes += 1

        def close(self):
            self.closed = True

    class SessionLog(SimpleNamespace):
        START = "START"

    class Summary(SimpleNamespace):
        Value = SimpleNamespace

    modules = {"tensorboard.compat.proto.event_pb2": SimpleNamespace(Event=SimpleNamespace, SessionLog=SessionLog),
               "tensorboard.compat.proto.summary_pb2": SimpleNamespace(Summary=Summary),
               "tensorboard.summary.writer.event_file_writer": SimpleNamespace(EventFileWriter=Writer)}
    monkeypatch.setattr(loggers_mod, "_import", lambda module, option: modules[module])
    run_dir = tmp_path / "run"
    for resume, updates in ((False, (1, 2)), (True, (3, 4))):
        loggers = RunLoggers(make_config(tensorboard=True), run_dir, resume=resume)
        for update in updates:
            loggers.log(make_row(update))
        loggers.close()
        if not resume:
            (run_dir / "metrics.jsonl").write_text(json.dumps(make_row(1)) + "\n")  # the resume kept update 1
    new, resumed = writers
    assert new.logdir == resumed.logdir == str(run_dir / "tensorboard") and new.closed and resumed.closed
    assert [e.step for e in new.events] == [512, 1024] and all(hasattr(e, "summary") for e in new.events)
    assert new.flushes == 2
    assert resumed.events[0].session_log.status == "START" and resumed.events[0].step == 513
    assert [(e.step, hasattr(e, "summary")) for e in resumed.events[1:]] == [(1536, True), (2048, True)]
    values = {v.tag: v.simple_value for v in resumed.events[1].summary.value}
    assert values["losses/value_loss"] == 4.5 and values["charts/SPS"] == 2051.0


@pytest.mark.parametrize("garbled", ['{"global_st', "[3]", "7", ""])
def test_a_garbled_metrics_line_does_not_hide_the_rows_after_it(tmp_path, garbled):
    """purge_step skips a line that is not a JSON object (a half-written row, a stray value, a blank line) and
    reads on: the rows after it still count toward the last kept row."""
    from fastvec.trainer.loggers import STEP_KEY, _TensorBoard

    board = object.__new__(_TensorBoard)
    board.run_dir = tmp_path
    rows = [json.dumps({STEP_KEY: 1024}), garbled, json.dumps({STEP_KEY: 2048}), json.dumps({STEP_KEY: 3072})]
    (tmp_path / "metrics.jsonl").write_text("\n".join(rows) + "\n")
    assert board.purge_step(4096) == 3073
    assert board.purge_step(3072) == 2049


@pytest.mark.parametrize("missing, option", [("tensorboard", "train.tensorboard=true"),
                                             ("wandb", "train.wandb_project='proj'")])
def test_missing_package_error_names_the_top_level_package_to_install(tmp_path, monkeypatch, missing, option):
    """The error names the distribution a user installs (tensorboard, not the submodule whose import failed,
    e.g. tensorboard.compat.proto.event_pb2) in both places: the package it needs and the pip fallback."""
    for name in [m for m in sys.modules if m.split(".")[0] == missing] + [missing]:
        monkeypatch.setitem(sys.modules, name, None)
    # only the logger under test asked for: the other's package may be missing too (a venv without the extra)
    config = make_config(tensorboard=missing == "tensorboard", wandb_project="proj" if missing == "wandb" else "")
    with pytest.raises(ImportError) as err:
        RunLoggers(config, tmp_path / "run", resume=False)
    assert str(err.value).startswith(f"{option} needs the {missing} package: pip install 'fastvec[logging]' "
                                     f"(or pip install {missing}); importing {missing}")
