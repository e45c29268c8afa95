"""The stop at a target (train.target_return, fastvec/trainer/target.py): the count-weighted mean of the last
train.target_episodes episodes from each log, the run ended (checkpoint saved) where it is reached, for both trainers
through run.py's loop; the summary says when."""

import json
import math
from pathlib import Path

import pytest

from fastvec.trainer import checkpoint, cli, run
from fastvec.trainer.config import ConfigError, check_with_env, load_config
from fastvec.trainer.settings import Config, TrainSection
from fastvec.trainer.target import Target

CORRIDOR = Path(__file__).resolve().parents[2] / "examples" / "my_env.h"


def target(value: float, episodes: int = 100, metric: str = "episode_return") -> Target:
    train = TrainSection(target_return=value, target_metric=metric, target_episodes=episodes, stop_at_target=True)
    return Target(train)


def log(mean, count, time=1.0) -> dict:
    return {"episodes": count, "episode_return": mean, "reached_goal": mean, "time": time, "global_step": 10,
            "update": 1}


def test_the_window_weights_each_log_by_its_episodes():
    t = target(0.6)
    assert not t.add(log(0.0, 80))  # 80 episodes: the window is not full yet
    assert not t.add(log(1.0, 50))  # the last 100: 50 x 1.0 and 30 of the 80 x 0.0 -> 0.5
    assert t.window() == (0.5, 100) and t.reached is None
    assert t.add(log(1.0, 20, time=3.0))  # 70 x 1.0 and 30 x 0.0 -> 0.7
    assert t.reached["time"] == 3.0 and t.reached["mean"] == pytest.approx(0.7)
    assert not t.add(log(1.0, 100))  # reported once: where it was first reached


def test_a_few_lucky_episodes_are_not_the_target():
    t = target(475.0)
    assert not t.add(log(500.0, 26)) and not t.add(log(500.0, 30))  # 56 episodes, fewer than 100
    assert t.reached is None and t.best is None
    assert t.add(log(480.0, 44))


def test_no_target_and_logs_without_episodes_do_nothing():
    t = target(math.inf)
    assert not t.active and not t.add(log(1e9, 1000)) and t.summary(False) is None
    t = target(0.5, episodes=1)
    assert not t.add({"episodes": 0, "episode_return": None}) and t.add(log(1.0, 1))


def test_a_target_metric_the_env_does_not_log_names_the_ones_it_does():
    config = Config.of(load_config("cartpole", {"train": {"target_return": 1.0, "target_metric": "score"}}))
    with pytest.raises(ConfigError, match=r"train.target_metric='score'.*episode_return, episode_length, "
                                          r"reached_goal"):
        check_with_env(config, 1, ["reached_goal"])


def corridor(tmp_path, *extra) -> list[str]:
    return [str(CORRIDOR), "--env.LENGTH=5", "--env.num_envs=16", "--train.horizon=16", "--train.bptt_horizon=16",
            "--train.minibatch_size=256", "--train.log_interval=0", *extra, f"--run-dir={tmp_path / 'run'}"]


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_the_run_stops_where_the_target_is_reached_and_saves_a_checkpoint_there(tmp_path, capsys):
    # any return of the corridor is >= -1: the first log with 20 episodes reaches the target
    args = corridor(tmp_path, "--train.target_return=-1", "--train.target_episodes=20",
                    "--train.total_timesteps=1_000_000")
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    logged = rows(tmp_path / "run")
    stop = next(row for row in logged if sum(r["episodes"] for r in logged if r["update"] <= row["update"]) >= 20)
    assert logged[-1]["update"] == stop["update"] < 1_000_000 // 256  # stopped at that log, not at the budget
    assert "target reached: mean episode_return over the last 20 episodes" in out and "stopped there" in out
    assert f"update {stop['update']})" in out
    assert checkpoint.latest(tmp_path / "run").name == checkpoint.checkpoint_name(stop["update"])


def test_stop_at_target_false_trains_the_budget_and_still_reports_the_target(tmp_path):
    config = load_config(str(CORRIDOR), {"env": {"LENGTH": 5, "num_envs": 16}, "train": {
        "horizon": 16, "bptt_horizon": 16, "minibatch_size": 256, "log_interval": 0.0, "total_timesteps": 4096,
        "target_return": -1.0, "target_episodes": 20, "stop_at_target": False}})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["trained_steps"] == 4096 and summary["update"] == 16
    assert summary["target"]["reached"]["update"] < 16 and not summary["target"]["stopped"]


def test_a_game_statistic_can_be_the_target(tmp_path):
    config = load_config(str(CORRIDOR), {"env": {"LENGTH": 5, "num_envs": 16}, "train": {
        "horizon": 16, "bptt_horizon": 16, "minibatch_size": 256, "log_interval": 0.0, "total_timesteps": 100_000,
        "target_return": 0.0, "target_metric": "reached_goal", "target_episodes": 10}})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["target"]["metric"] == "reached_goal" and summary["target"]["stopped"]
    assert summary["trained_steps"] < 100_000


def test_a_missed_target_says_how_close_the_run_came(tmp_path, capsys):
    assert cli.main(corridor(tmp_path, "--train.target_return=2", "--train.target_episodes=10",
                             "--train.total_timesteps=2048")) == 0
    out = capsys.readouterr().out
    assert "target 2 not reached (mean episode_return over the last 10 episodes: best " in out
    assert rows(tmp_path / "run")[-1]["global_step"] == 2048


def test_an_inactive_target_or_a_log_without_a_finite_mean_leaves_the_window_alone():
    t = target(math.inf, episodes=1)
    assert not t.add(log(5.0, 10)) and t.best is None and t.window() == (pytest.approx(math.nan, nan_ok=True), 0)
    t = target(0.5, episodes=10)
    for metrics in (log(math.nan, 5), log(math.inf, 5), {"episodes": 5, "episode_return": None}, log(1.0, 0)):
        assert not t.add(metrics)
    assert t.best is None and t.window()[1] == 0
    assert not t.add(log(1.0, 5)) and t.add(log(0.0, 5, time=2.0))  # (5 x 1.0 + 5 x 0.0) / 10 = 0.5 >= 0.5
    assert t.reached == {"time": 2.0, "global_step": 10, "update": 1, "mean": 0.5, "episodes": 10}


def test_the_best_window_mean_is_kept_and_the_summary_records_it():
    t = target(10.0, episodes=4, metric="reached_goal")
    for mean in (1.0, 3.0, 2.0):
        t.add(log(mean, 4))
    assert t.best == 3.0 and t.reached is None
    assert t.summary(stopped=False) == {"metric": "reached_goal", "value": 10.0, "episodes": 4, "reached": None,
                                        "best": 3.0, "stopped": False}


def test_the_summary_line_says_when_the_target_was_reached_or_how_close_the_run_came():
    from fastvec.trainer.target import target_line
    base = {"metric": "episode_return", "value": 475.0, "episodes": 100}
    reached = {"time": 12.345, "global_step": 1_234_567, "update": 301, "mean": 481.23456, "episodes": 100}
    assert target_line({**base, "reached": reached, "best": 481.2, "stopped": True}) == (
        "target reached: mean episode_return over the last 100 episodes 481.2 >= 475 at 12.3 s of training "
        "(step 1,234,567, update 301); stopped there")
    assert target_line({**base, "reached": reached, "best": 481.2, "stopped": False}).endswith("update 301)")
    assert target_line({**base, "reached": None, "best": 123.456789, "stopped": False}) == (
        "target 475 not reached (mean episode_return over the last 100 episodes: best 123.5)")
    assert target_line({**base, "value": 0.5, "reached": None, "best": None, "stopped": False}) == (
        "target 0.5 not reached (mean episode_return over the last 100 episodes: no window of that many episodes "
        "yet)")


def test_the_window_keeps_only_the_logs_it_still_needs():
    """A long run logs thousands of times: logs wholly older than the newest target_episodes episodes are dropped,
    and what is kept still gives the right mean."""
    t = target(100.0, episodes=100)
    for i in range(50):
        t.add(log(float(i), 30))
    # 100 episodes need the newest 4 logs of 30 (the oldest of them partly): nothing older is kept
    assert len(t.logs) == 4
    assert t.window() == (pytest.approx((49 * 30 + 48 * 30 + 47 * 30 + 46 * 10) / 100), 100)
    t.add(log(7.0, 100))  # one log of exactly the window's size: the older ones all go
    assert list(t.logs) == [(7.0, 100)]
