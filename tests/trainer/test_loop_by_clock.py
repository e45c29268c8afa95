"""The training loop (fastvec/trainer/loop.py) on a clock the test moves: a real NumPy trainer whose rollout and update
are scripted (each takes a known number of seconds, an update returns known losses, and known episodes finish), so
each metrics.jsonl row, each checkpoint by time and the summary can be worked out by hand."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fastvec.trainer import checkpoint, loop, run
from fastvec.trainer.config import load_config

NUM_ENVS, HORIZON = 4, 8
STEPS = NUM_ENVS * HORIZON  # agent steps per update


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def scripted(tmp_path, monkeypatch, updates: int, rollout_s: float = 1.0, update_s: float = 1.0, **train):
    """A trainer for `updates` updates whose rollout takes rollout_s and update update_s seconds of the clock; update
    k (from 1) returns policy_loss k and learning_rate k / 100, and finishes k episodes of return 10 k and length k."""
    clock = Clock()
    monkeypatch.setattr(loop, "time", SimpleNamespace(perf_counter=clock))
    config = load_config("cartpole", {"env": {"num_envs": NUM_ENVS}, "policy": {"hidden": 8, "layers": 1},
                                      "train": {"device": "cpu", "horizon": HORIZON, "bptt_horizon": 8,
                                                "minibatch_size": 32, "total_timesteps": updates * STEPS,
                                                "stop_at_target": False, **train}})
    trainer = run.make_trainer(config)
    finished: list[dict] = []

    def rollout():
        clock.now += rollout_s
        trainer.global_step += STEPS

    def update(num_updates):
        clock.now += update_s
        trainer.update_index += 1
        k = trainer.update_index
        finished.append({"episodes": k, "episode_return": 10.0 * k, "episode_length": float(k)})
        return {"policy_loss": float(k), "learning_rate": k / 100, "ent_coef": 0.01}

    def pop_episodes():
        if not finished:
            return None
        count = sum(e["episodes"] for e in finished)
        out = {"episodes": count,
               "episode_return": sum(e["episodes"] * e["episode_return"] for e in finished) / count,
               "episode_length": sum(e["episodes"] * e["episode_length"] for e in finished) / count}
        finished.clear()
        return out

    trainer.rollout, trainer.update, trainer.pop_episodes = rollout, update, pop_episodes
    trainer.timing = {"env": 0.25, "inference": 0.5, "update": 0.125}
    return trainer, clock


def rows(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_each_log_averages_the_updates_since_the_one_before_on_the_runs_clock(tmp_path, monkeypatch):
    """100 updates of 2 s each, log_interval 7 s: a log every 5th update (a twentieth of the run) and 8 s after the
    one before, so after updates 4, 5, 9, 10, ...; each row the mean of its updates' losses, the count-weighted mean
    of its episodes, the seconds since the start and the steps per second."""
    trainer, _ = scripted(tmp_path, monkeypatch, updates=100, log_interval=7.0, checkpoint_interval=1000)
    summary = loop.train_loop(trainer, 0.5, tmp_path / "run", resume=False, dashboard=False)
    logged = rows(tmp_path / "run")
    updates = [k for k in range(1, 101) if k % 5 in (0, 4)]
    assert [r["update"] for r in logged] == updates
    assert [r["global_step"] for r in logged] == [k * STEPS for k in updates]
    assert [r["time"] for r in logged] == [2.0 * k for k in updates]
    assert {r["sps"] for r in logged} == {STEPS / 2.0}
    assert [r["losses/policy_loss"] for r in logged[:4]] == [2.5, 5.0, 7.5, 10.0]  # (1+2+3+4)/4, 5, (6+...+9)/4
    assert [r["charts/learning_rate"] for r in logged[:4]] == [0.025, 0.05, 0.075, 0.1]
    assert all(r["charts/ent_coef"] == 0.01 and "losses/ent_coef" not in r for r in logged)
    # updates 1-4 finish 1+2+3+4 episodes of returns 10, 20, 30, 40: (10 + 40 + 90 + 160) / 10
    assert [r["episodes"] for r in logged[:3]] == [10, 5, 30]
    assert logged[0]["episode_return"] == pytest.approx(30.0) and logged[1]["episode_return"] == 50.0
    assert logged[2]["episode_length"] == pytest.approx((36 + 49 + 64 + 81) / 30)
    assert all(r["time_split"] == {"env": 0.25, "inference": 0.5, "update": 0.125} for r in logged)
    assert summary["recent_returns"] == [r["episode_return"] for r in logged]
    assert summary["metrics"] == logged[-1]
    assert (summary["elapsed"], summary["startup"], summary["sps"]) == (200.0, 0.5, STEPS / 2.0)
    assert (summary["eval_time"], summary["train_sps"]) == (0.0, STEPS / 2.0)  # no self-play: no evaluations
    assert (summary["update"], summary["trained_steps"], summary["global_step"]) == (100, 100 * STEPS, 100 * STEPS)
    assert summary["checkpoint"] == tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(100)
    assert summary["interrupted"] is False and summary["signal"] is None and summary["saved_at_stop"] is False


def test_a_log_without_finished_episodes_says_so_and_keeps_the_recent_returns(tmp_path, monkeypatch):
    trainer, _ = scripted(tmp_path, monkeypatch, updates=2, log_interval=0.0)
    trainer.pop_episodes = lambda: None
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    logged = rows(tmp_path / "run")
    assert [(r["episodes"], r["episode_return"], r["episode_length"]) for r in logged] == [(0, None, None)] * 2
    assert summary["recent_returns"] == []


def test_checkpoints_by_time_come_every_checkpoint_seconds_and_each_replaces_the_one_before(tmp_path, monkeypatch):
    """checkpoint_seconds 5, 2 s an update, checkpoint_interval 4: by time after update 3 (6 s after the first save),
    on the interval at 4 (which removes update 3's), by time at 7, and the last at 9 (which removes update 7's)."""
    trainer, _ = scripted(tmp_path, monkeypatch, updates=9, log_interval=0.0, checkpoint_interval=4,
                          checkpoint_seconds=5.0)
    saved = []
    real_save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", lambda path, *args: saved.append(path.name) or real_save(path, *args))
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert saved == [checkpoint.checkpoint_name(k) for k in (0, 3, 4, 7, 8, 9)]
    left = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("*.npz"))
    assert left == [checkpoint.checkpoint_name(k) for k in (4, 8, 9)]
    assert checkpoint.load(tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(8))[0]["counters"] == {
        **checkpoint.load(tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(8))[0]["counters"],
        "global_step": 8 * STEPS, "update": 8, "time": 16.0}


def test_watch_is_given_each_update_and_its_own_time_is_left_out(tmp_path, monkeypatch):
    """watch(logged metrics or None, training seconds, trained steps) after every update (a log every second update
    of 40); the 100 s each call takes
    count in no log's time, speed or the summary, and True ends the run after that update."""
    trainer, clock = scripted(tmp_path, monkeypatch, updates=40, log_interval=1000.0, checkpoint_interval=100)
    seen = []

    def watch(metrics, seconds, steps):
        seen.append((None if metrics is None else metrics["update"], seconds, steps))
        clock.now += 100.0
        return len(seen) == 4

    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False, watch=watch)
    assert seen == [(None, 2.0, STEPS), (2, 4.0, 2 * STEPS), (None, 6.0, 3 * STEPS), (4, 8.0, 4 * STEPS)]
    assert [(r["update"], r["time"], r["sps"]) for r in rows(tmp_path / "run")] == [(2, 4.0, 16.0), (4, 8.0, 16.0)]
    assert summary["update"] == 4 and summary["elapsed"] == 8.0 and summary["sps"] == 16.0


def test_a_resumed_run_counts_its_speed_from_its_own_steps_and_its_time_after_the_first_runs(tmp_path, monkeypatch):
    trainer, _ = scripted(tmp_path, monkeypatch, updates=3, log_interval=0.0, checkpoint_interval=1)
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    run.close_batches(trainer.env_batches)
    trainer, _ = scripted(tmp_path, monkeypatch, updates=5, rollout_s=3.0, log_interval=0.0, checkpoint_interval=1)
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=True, dashboard=False)
    logged = rows(tmp_path / "run")
    assert [r["update"] for r in logged] == [1, 2, 3, 4, 5]
    assert [r["time"] for r in logged[3:]] == [6.0 + 4.0, 6.0 + 8.0]  # 4 s an update now, after the first 6 s
    assert [r["sps"] for r in logged[3:]] == [STEPS / 4.0, STEPS / 4.0]
    assert summary["sps"] == STEPS / 4.0 and summary["trained_steps"] == 5 * STEPS and summary["elapsed"] == 8.0


def test_a_new_run_prints_what_it_is_first_and_the_target_last_and_a_watched_one_neither(tmp_path, monkeypatch,
                                                                                          capsys):
    """A new run's first stdout lines say what it is (env_defaults.describe); a resumed one's do not; each run
    without watch ends with the target's line; a watched run (a sweep's trial, reported by the sweep) prints neither.
    The trainer's paths go to stderr."""
    from fastvec.trainer.config import declared_by_env
    from fastvec.trainer.env_defaults import describe
    trainer, _ = scripted(tmp_path, monkeypatch, updates=1, log_interval=0.0)
    trainer.describe = lambda: "paths: the chosen ones"
    config = trainer.config.to_dict()
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    out, err = capsys.readouterr()
    start = [f"fastvec-train: {line}" for line in describe(config, declared_by_env("cartpole", config["env"]))]
    assert start and out.splitlines()[:-1] == start
    assert out.splitlines()[-1].startswith("fastvec-train cartpole: target 475 not reached (mean episode_return over ")
    assert err.splitlines()[0] == "paths: the chosen ones"
    run.close_batches(trainer.env_batches)
    trainer, _ = scripted(tmp_path, monkeypatch, updates=2, log_interval=0.0)
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=True, dashboard=False)
    assert capsys.readouterr().out.startswith("fastvec-train cartpole: target 475 not reached")
    run.close_batches(trainer.env_batches)
    trainer, _ = scripted(tmp_path, monkeypatch, updates=1, log_interval=0.0)
    loop.train_loop(trainer, 0.0, tmp_path / "other", resume=False, dashboard=False, watch=lambda *a: False)
    assert capsys.readouterr() == ("", "")
    run.close_batches(trainer.env_batches)


@pytest.mark.parametrize("rank", [0, 1])
def test_rank_0_alone_sends_each_row_to_the_loggers_and_closes_them(rank, tmp_path, monkeypatch):
    """TensorBoard and W&B (loggers.RunLoggers) get every metrics.jsonl row from rank 0 and are closed when the run
    ends; the other ranks of a multi-GPU run open none (they would open the same W&B run)."""
    opened = []

    class Loggers:
        def __init__(self):
            self.rows, self.closed = [], False

        def log(self, metrics):
            self.rows.append(metrics)

        def close(self):
            self.closed = True

    monkeypatch.setattr(loop, "open_loggers", lambda config, run_dir, resume: opened.append(Loggers()) or opened[-1])
    trainer, _ = scripted(tmp_path, monkeypatch, updates=3, log_interval=0.0)
    trainer.rank = rank
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    if rank == 0:
        (loggers,) = opened
        assert loggers.rows == rows(tmp_path / "run") and len(loggers.rows) == 3 and loggers.closed
    else:
        assert opened == []


def test_no_logger_is_opened_unless_tensorboard_or_wandb_is_asked_for(tmp_path, monkeypatch):
    import sys

    from fastvec.trainer import loggers
    from fastvec.trainer.settings import Config
    config = Config.of(load_config("cartpole", {}))
    monkeypatch.setitem(sys.modules, "fastvec.trainer.loggers", None)  # importing it now raises ImportError
    assert loop.open_loggers(config, tmp_path, False) is None
    monkeypatch.setitem(sys.modules, "fastvec.trainer.loggers", loggers)
    made = []
    monkeypatch.setattr(loggers, "RunLoggers", lambda config, run_dir, resume: made.append((config, run_dir, resume)))
    for train in ({"tensorboard": True}, {"wandb_project": "p"}):
        loop.open_loggers(Config.of(load_config("cartpole", {"train": train})), tmp_path, True)
    assert [(c["train"]["tensorboard"], c["train"]["wandb_project"], d, r) for c, d, r in made] == [
        (True, "", tmp_path, True), (False, "p", tmp_path, True)]


def test_a_non_finite_loss_ends_the_run_but_a_nan_explained_variance_does_not(tmp_path, monkeypatch):
    """explained_variance is NaN whenever a rollout's returns are all equal (an MLP on all-zero observations and
    rewards: every value exactly 0), which is no divergence; an infinite value loss is one."""
    from fastvec.trainer.run_dir import TrainingDiverged
    trainer, _ = scripted(tmp_path, monkeypatch, updates=3, log_interval=0.0, checkpoint_interval=1)
    scripted_update = trainer.update
    trainer.update = lambda n: {**scripted_update(n), "explained_variance": float("nan")}
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert [r["update"] for r in rows(tmp_path / "run")] == [1, 2, 3]
    run.close_batches(trainer.env_batches)
    trainer, _ = scripted(tmp_path, monkeypatch, updates=3, log_interval=0.0, checkpoint_interval=1)
    scripted_update = trainer.update
    trainer.update = lambda n: {**scripted_update(n), "value_loss": float("inf") if trainer.update_index == 2 else 1.0}
    with pytest.raises(TrainingDiverged, match=r"training diverged at update 2: losses/value_loss is inf; the last "
                                               r"finite checkpoint is .*update_000001.npz"):
        loop.train_loop(trainer, 0.0, tmp_path / "other", resume=False, dashboard=False)
    assert [r["update"] for r in rows(tmp_path / "other")] == [1]  # the diverged row is not written


@pytest.mark.parametrize("world_size,stops", [(1, True), (2, False)])
def test_a_single_process_stops_at_the_target_and_a_rank_of_several_trains_on(world_size, stops, tmp_path,
                                                                                monkeypatch, capsys):
    """Update 2's log brings the mean of the last 3 episodes to (10 + 2 x 20) / 3 >= 15: one process stops there,
    with a checkpoint; ranks of a multi-GPU run (each deciding on its own episodes) train the whole budget."""
    trainer, _ = scripted(tmp_path, monkeypatch, updates=8 * world_size, log_interval=0.0, checkpoint_interval=100,
                          target_return=15.0, target_episodes=3, stop_at_target=True)
    monkeypatch.setattr(loop.Loop, "__init__", _with_world_size(loop.Loop.__init__, trainer, world_size))
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert summary["target"]["reached"]["update"] == 2 and summary["target"]["stopped"] == stops
    assert summary["update"] == (2 if stops else 8)
    assert summary["checkpoint"].name == checkpoint.checkpoint_name(summary["update"])
    assert capsys.readouterr().out.splitlines()[-1].endswith("(step 64, update 2); stopped there" if stops else
                                                              f"(step {2 * STEPS * world_size}, update 2)")


def _with_world_size(init, trainer, world_size):
    def patched(self, *args, **kwargs):
        trainer.world_size = world_size
        init(self, *args, **kwargs)
    return patched


@pytest.mark.parametrize("during", ["rollout", "update"])
def test_sigterm_stops_at_the_update_boundary_saving_the_steps_the_updates_trained_on(during, tmp_path, monkeypatch):
    """SIGTERM in update 3: that update completes and is saved; in rollout 3: that rollout is dropped, and the
    checkpoint of update 2 holds 2 updates' steps."""
    import os
    import signal
    trainer, _ = scripted(tmp_path, monkeypatch, updates=10, log_interval=0.0, checkpoint_interval=100)
    phase = getattr(trainer, during)

    def signalled(*args):
        out = phase(*args)
        if trainer.global_step == 3 * STEPS and (during == "rollout" or trainer.update_index == 3):
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    setattr(trainer, during, signalled)
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    done = 3 if during == "update" else 2
    assert summary["interrupted"] and summary["signal"] == "SIGTERM" and summary["saved_at_stop"]
    assert summary["update"] == done and summary["trained_steps"] == done * STEPS
    meta, _ = checkpoint.load(summary["checkpoint"])
    assert summary["checkpoint"].name == checkpoint.checkpoint_name(done)
    assert (meta["counters"]["update"], meta["counters"]["global_step"]) == (done, done * STEPS)
    assert signal.getsignal(signal.SIGTERM) is not None and signal.getsignal(signal.SIGTERM) != summary


class League:
    """A stand-in for selfplay.SelfPlay: each update's evaluation takes eval_s seconds of the clock."""

    def __init__(self, clock, eval_s: float):
        self.clock, self.eval_s = clock, eval_s

    def start(self, trainer, run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "ratings.json").write_text("{}")

    def after_update(self, trainer, final):
        self.clock.now += self.eval_s
        trainer.timing["selfplay_eval"] = trainer.timing.get("selfplay_eval", 0.0) + self.eval_s

    def metrics(self):
        return {}


def test_evaluation_time_is_left_out_of_the_training_speed_and_a_run_of_only_evaluations_still_ends(
        tmp_path, monkeypatch):
    """train_sps counts the seconds not spent evaluating; when every second of the run went to evaluations the
    summary still comes (a large finite speed, no division by zero), and the self-play run plots its ratings."""
    plotted = []
    monkeypatch.setattr("fastvec.trainer.selfplay.plot_ratings", lambda run_dir: plotted.append(run_dir))
    trainer, clock = scripted(tmp_path, monkeypatch, updates=4, rollout_s=1.0, update_s=1.0, log_interval=0.0)
    trainer.selfplay = League(clock, 2.0)
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert (summary["elapsed"], summary["eval_time"]) == (16.0, 8.0)
    assert summary["sps"] == 4 * STEPS / 16.0 and summary["train_sps"] == 4 * STEPS / 8.0
    assert [r["train_sps"] for r in rows(tmp_path / "run")] == [STEPS / 2.0] * 4
    assert plotted == [tmp_path / "run"]
    trainer, clock = scripted(tmp_path, monkeypatch, updates=2, rollout_s=0.0, update_s=0.0, log_interval=0.0)
    trainer.selfplay = League(clock, 3.0)
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run2", resume=False, dashboard=False)
    assert (summary["elapsed"], summary["eval_time"]) == (6.0, 6.0)
    assert summary["train_sps"] > 1e9 and summary["train_sps"] != float("inf")


def test_a_run_without_self_play_plots_no_ratings_even_beside_a_ratings_file(tmp_path, monkeypatch):
    plotted = []
    monkeypatch.setattr("fastvec.trainer.selfplay.plot_ratings", lambda run_dir: plotted.append(run_dir))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ratings.json").write_text("{}")
    trainer, _ = scripted(tmp_path, monkeypatch, updates=1, log_interval=0.0)
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert plotted == [] and summary["update"] == 1 and "eval_time" not in rows(tmp_path / "run")[0]


def test_a_second_ctrl_c_mid_update_saves_nothing_and_the_last_checkpoint_stands(tmp_path, monkeypatch):
    """A KeyboardInterrupt inside rollout 4 (a second Ctrl-C, or one without the handler): nothing consistent to
    save, so the summary says interrupted by SIGINT without a save at the stop, and names update 2's checkpoint
    (checkpoint_interval 2), the last one written."""
    trainer, _ = scripted(tmp_path, monkeypatch, updates=10, log_interval=0.0, checkpoint_interval=2)
    rollout = trainer.rollout

    def interrupted():
        if trainer.update_index == 3:
            raise KeyboardInterrupt
        rollout()

    trainer.rollout = interrupted
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert summary["interrupted"] is True and summary["signal"] == "SIGINT"
    assert summary["saved_at_stop"] is False
    assert summary["update"] == 3 and summary["trained_steps"] == 3 * STEPS
    assert summary["checkpoint"] == tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(2)
    assert not (tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(3)).exists()


def test_sigterm_during_the_last_update_is_a_finished_run_not_an_interrupted_one(tmp_path, monkeypatch):
    """SIGTERM while update 4 of 4 runs: that update completes, the run has then trained every update, so the
    summary is a normal end (not interrupted, no signal) with the final checkpoint."""
    import os
    import signal
    trainer, _ = scripted(tmp_path, monkeypatch, updates=4, log_interval=0.0, checkpoint_interval=100)
    update = trainer.update

    def signalled(num_updates):
        out = update(num_updates)
        if trainer.update_index == 4:
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    trainer.update = signalled
    summary = loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    assert summary["interrupted"] is False and summary["signal"] is None and summary["saved_at_stop"] is False
    assert summary["update"] == 4 and summary["trained_steps"] == 4 * STEPS
    assert summary["checkpoint"] == tmp_path / "run" / "checkpoints" / checkpoint.checkpoint_name(4)


def test_each_rows_figures_are_rounded_to_their_stated_places(tmp_path, monkeypatch):
    """Times to 3 places, speeds to 1, losses to 6, on a clock that makes none of them whole: each update's rollout
    takes 1 s, its update 4/3 s and its evaluation 1/7 s (a stand-in league), the update's policy loss is k / 7,
    and the time split holds thirds and sevenths."""
    monkeypatch.setattr("fastvec.trainer.selfplay.plot_ratings", lambda run_dir: None)
    trainer, clock = scripted(tmp_path, monkeypatch, updates=2, rollout_s=1.0, update_s=4 / 3, log_interval=0.0)
    trainer.selfplay = League(clock, 1 / 7)
    update = trainer.update

    def sevenths(num_updates):
        stats = update(num_updates)
        return {**stats, "policy_loss": trainer.update_index / 7}

    trainer.update = sevenths
    trainer.timing = {"env": 1 / 3}
    loop.train_loop(trainer, 0.0, tmp_path / "run", resume=False, dashboard=False)
    first = rows(tmp_path / "run")[0]
    # elapsed 1 + 4/3 + 1/7 = 2.476190...; 32 steps in it: 12.923...; without the evaluation's 1/7 s: 13.714...
    assert (first["time"], first["sps"]) == (2.476, 12.9)
    assert (first["eval_time"], first["train_sps"]) == (0.143, 13.7)
    assert first["losses/policy_loss"] == 0.142857
    assert first["time_split"] == {"env": 0.333, "selfplay_eval": 0.143}
