"""fastvec-sweep's bookkeeping of one trial, without training: what the pruner is told and when (reports per
seed at every 1/reports of the budget, the target's distance for time_to_target), when a seed's run is stopped,
each seed's result, the objective from the seeds (mean or worst), and each seed's own config and seed."""

import json
import sys
from types import SimpleNamespace

import pytest

from fastvec.trainer import sweep

SETTINGS = {"metric": "episode_return", "trial_seconds": 0.0, "reports": 4, "objective": "score", "target": 100.0,
            "pruner": "median", "seed_reduce": "mean", "seeds": 1, "keep_checkpoints": False}


class Trial:
    def __init__(self, prune=False, number=0):
        self.reports, self.prune, self.number, self.params = [], prune, number, {}
        self.user_attrs = {}

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return self.prune

    def set_user_attr(self, key, value):
        self.user_attrs[key] = value


class Progress:
    def __init__(self):
        self.calls = []

    def running(self, *args):
        self.calls.append(args)


def watch(seed_index=0, prune=False, total=100, **settings):
    plan = SimpleNamespace(settings={**SETTINGS, **settings}, multi=settings.get("objective") == "pareto")
    trial = Trial(prune)
    return sweep.TrialWatch(plan, trial, seed_index, total, Progress()), trial


def log(value):
    return {"episode_return": value}


def test_a_step_budget_reports_at_each_quarter_with_the_latest_log():
    w, trial = watch()
    assert w(log(1.0), 1.0, 10) is False and trial.reports == []  # before the first quarter
    assert w(log(2.0), 2.0, 25) is False and trial.reports == [(1, 2.0)]
    assert w(log(3.0), 3.0, 30) is False and trial.reports == [(1, 2.0)]  # same quarter: nothing new
    assert w(None, 3.5, 60) is False and len(trial.reports) == 1  # reports only at a log
    assert w(log(4.0), 4.0, 100) is False
    assert trial.reports == [(1, 2.0), (2, 4.0), (3, 4.0), (4, 4.0)]  # the quarters it passed, filled in
    assert (w.seconds, w.steps, w.pruned) == (4.0, 100, False)


def test_a_later_seeds_reports_follow_the_earlier_seeds():
    w, trial = watch(seed_index=2)
    w(log(5.0), 1.0, 50)
    assert trial.reports == [(9, 5.0), (10, 5.0)]


def test_a_log_without_the_metric_is_not_a_log():
    w, trial = watch()
    assert w({"other": 1.0}, 1.0, 50) is False
    assert trial.reports == [] and w.logs == []
    w(log(7.0), 2.0, 50)
    assert trial.reports == [(1, 7.0), (2, 7.0)] and w.logs == [(2.0, 50, 7.0)]


def test_the_pruner_stops_a_seed_and_says_so():
    w, trial = watch(prune=True)
    assert w(log(1.0), 1.0, 10) is False  # nothing reported yet, so nothing to prune on
    assert w(log(1.0), 1.0, 30) is True and w.pruned


@pytest.mark.parametrize("settings", [{"pruner": "none"}, {"objective": "pareto"}])
def test_without_a_pruner_or_for_a_pareto_study_nothing_is_reported_or_pruned(settings):
    w, trial = watch(prune=True, **settings)
    assert w(log(1.0), 1.0, 100) is False
    assert trial.reports == [] and not w.pruned


def test_a_time_budget_ends_the_seed_when_spent_and_is_never_a_prune():
    w, trial = watch(prune=True, trial_seconds=10.0)
    assert w(log(1.0), 2.4, 999) is False and trial.reports == []  # progress goes by seconds, not steps
    assert w(log(1.0), 10.0, 1000) is True
    assert trial.reports[-1] == (4, 1.0) and not w.pruned
    w2, _ = watch(trial_seconds=10.0)
    assert w2(None, 9.99, 10) is False and w2(None, 10.0, 10) is True


def test_time_to_target_reports_the_distance_and_stops_at_the_target():
    w, trial = watch(objective="time_to_target", target=10.0)
    assert w(log(4.0), 1.0, 25) is False
    assert trial.reports == [(1, 6.0)]  # lower is better: the distance to the target
    assert w(log(10.0), 2.0, 40) is True
    assert w.hit == (2.0, 40)
    assert trial.reports == [(1, 6.0), (2, 0.0), (3, 0.0), (4, 0.0)]  # at the target for the rest of the budget


def test_a_score_objective_never_stops_at_the_target():
    w, _ = watch(objective="score", target=10.0)
    assert w(log(50.0), 1.0, 10) is False and w.hit is None


def test_a_seeds_result_scores_the_last_tenth_of_its_run():
    w, _ = watch(pruner="none")
    for seconds, value in [(10.0, 1.0), (50.0, 3.0), (91.0, 5.0), (100.0, 7.0)]:
        w(log(value), seconds, int(seconds))
    result = w.result({"seed": 3, "startup": 1.23456, "sps": 1234.56})
    assert result["score"] == 6.0 and result["best"] == 7.0 and result["logs"] == 4
    assert (result["seed"], result["seconds"], result["steps"], result["startup"], result["sps"]) == \
        (3, 100.0, 100, 1.2346, 1234.6)
    assert result["hit_seconds"] is None and result["hit_steps"] is None and result["pruned"] is False
    lone, _ = watch()
    lone(log(2.0), 1.0, 10)
    lone(None, 50.0, 50)
    assert lone.result({"startup": 0.0, "sps": 1.0})["score"] == 2.0  # no log in the last tenth: the last one
    empty, _ = watch()
    assert empty.result({"startup": 0.0, "sps": 1.0})["score"] is None


def test_seeds_reduce_to_their_mean_or_their_worst():
    assert sweep.reduce_seeds([1.0, None, 4.0], "mean") == 2.5
    assert sweep.reduce_seeds([1.0, None, 4.0], "worst") == 1.0
    assert sweep.reduce_seeds([1.0, 4.0], "worst", max) == 4.0
    assert sweep.reduce_seeds([None, None], "mean") is None


def seed_result(score, seconds, best=None, hit=None):
    return {"score": score, "seconds": seconds, "best": best if best is not None else score, "hit_seconds": hit}


def test_the_objective_combines_the_seeds_as_sweep_seed_reduce_says():
    results = [seed_result(10.0, 5.0), seed_result(20.0, 9.0)]
    assert sweep.objective_values({**SETTINGS, "objective": "score"}, results) == [15.0]
    assert sweep.objective_values({**SETTINGS, "objective": "score", "seed_reduce": "worst"}, results) == [10.0]
    assert sweep.objective_values({**SETTINGS, "objective": "pareto"}, results) == [15.0, 7.0]
    assert sweep.objective_values({**SETTINGS, "objective": "pareto", "seed_reduce": "worst"}, results) == [10.0, 9.0]
    assert sweep.objective_values(SETTINGS, [seed_result(10.0, 5.0), seed_result(None, 1.0)]) is None


def test_time_to_target_counts_a_miss_as_the_budget_plus_its_shortfall():
    settings = {**SETTINGS, "objective": "time_to_target", "target": 200.0, "trial_seconds": 60.0}
    hit = seed_result(1.0, 60.0, best=210.0, hit=12.5)
    half = seed_result(1.0, 60.0, best=100.0)  # half-way: 1.5 budgets
    worse = seed_result(1.0, 60.0, best=-500.0)  # the shortfall is capped at 1: 2 budgets
    over = seed_result(1.0, 60.0, best=250.0)  # above the target without a hit time: no shortfall
    assert sweep.objective_values(settings, [hit]) == [12.5]
    assert sweep.objective_values(settings, [half]) == [90.0]
    assert sweep.objective_values(settings, [worse]) == [120.0]
    assert sweep.objective_values(settings, [over]) == [60.0]
    assert sweep.objective_values(settings, [hit, half]) == [51.25]
    assert sweep.objective_values({**settings, "seed_reduce": "worst"}, [hit, half]) == [90.0]


def test_each_seeds_run_config_has_its_seed_and_the_sweeps_logging_and_checkpoints():
    config = {"train": {"seed": 1, "log_interval": 30.0, "checkpoint_interval": 5, "checkpoint_seconds": 60.0,
                        "stop_at_target": True}, "env": {"num_envs": 4}}
    plan = SimpleNamespace(settings={**SETTINGS, "trial_seconds": 40.0, "reports": 10})
    out = sweep.run_config(config, 7, plan)
    assert out["train"] == {"seed": 7, "log_interval": 2.0, "checkpoint_interval": 1 << 40,
                            "checkpoint_seconds": 0.0, "stop_at_target": False}
    assert config["train"]["seed"] == 1 and config["train"]["log_interval"] == 30.0  # the trial's own is kept
    plan.settings["trial_seconds"] = 0.0
    assert sweep.run_config(config, 7, plan)["train"]["log_interval"] == 30.0  # a step budget keeps the interval


def test_a_trial_trains_each_seed_from_its_own_seed_in_its_own_directory(tmp_path, monkeypatch):
    from fastvec.trainer import run

    config = {"train": {"seed": 5, "log_interval": 1.0, "checkpoint_interval": 1, "checkpoint_seconds": 1.0,
                        "stop_at_target": True, "horizon": 8, "total_timesteps": 100},
              "env": {"name": "cartpole", "num_envs": 4}}
    calls = []

    def fake_train(seed_config, run_dir, dashboard, watch):
        calls.append((seed_config["train"]["seed"], run_dir))
        watch(log(float(seed_config["train"]["seed"])), 1.0, 128)
        return {"startup": 0.0, "sps": 1.0, "interrupted": False}

    monkeypatch.setattr(run, "train", fake_train)
    monkeypatch.setattr(sweep, "runnable_toml", lambda config, title: "")
    plan = SimpleNamespace(settings={**SETTINGS, "seeds": 3, "pruner": "none"}, multi=False, sweep_dir=tmp_path,
                           trial_config=lambda params: config, env="cartpole", study="s")
    record = sweep.run_trial(plan, Trial(number=2), Progress())
    trial_dir = tmp_path / "trials" / "0002"
    assert calls == [(5, trial_dir / "seed-5"), (6, trial_dir / "seed-6"), (7, trial_dir / "seed-7")]
    assert record["state"] == "COMPLETE" and record["values"] == [6.0]
    assert [r["seed"] for r in record["results"]] == [5, 6, 7]
    calls.clear()
    plan.settings["seeds"] = 1
    sweep.run_trial(plan, Trial(number=3), Progress())
    assert calls == [(5, tmp_path / "trials" / "0003")]  # one seed: the trial's directory itself


def _seeds_of_a_three_seed_trial(tmp_path, monkeypatch, trial, interrupted: bool, **settings):
    """Runs one trial of three seeds whose every run reports one log line and ends (interrupted or not): the
    trial's record and the seeds that ran."""
    from fastvec.trainer import run

    config = {"train": {"seed": 0, "log_interval": 1.0, "checkpoint_interval": 1, "checkpoint_seconds": 1.0,
                        "stop_at_target": True, "horizon": 8, "total_timesteps": 64},
              "env": {"name": "cartpole", "num_envs": 4}}
    seeds = []

    def fake_train(seed_config, run_dir, dashboard, watch):
        seeds.append(seed_config["train"]["seed"])
        watch(log(1.0), 1.0, 32 if interrupted else 64)
        return {"startup": 0.0, "sps": 1.0, "interrupted": interrupted}

    monkeypatch.setattr(run, "train", fake_train)
    monkeypatch.setattr(sweep, "runnable_toml", lambda config, title: "")
    plan = SimpleNamespace(settings={**SETTINGS, "seeds": 3, **settings}, multi=False, sweep_dir=tmp_path,
                           trial_config=lambda params: config, env="cartpole", study="s")
    return sweep.run_trial(plan, trial, Progress()), seeds


def test_a_pruned_seed_ends_the_trial_before_the_next_seed(tmp_path, monkeypatch):
    record, seeds = _seeds_of_a_three_seed_trial(tmp_path, monkeypatch, Trial(prune=True), interrupted=False)
    assert record["state"] == "PRUNED" and seeds == [0] and len(record["results"]) == 1


def test_an_interrupted_seed_fails_the_trial_as_interrupted_before_the_next_seed(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM during a seed's run (train's summary says interrupted): the trial ends there, FAIL with
    the error "interrupted" and the flag the sweep stops on, keeping the interrupted seed's result."""
    record, seeds = _seeds_of_a_three_seed_trial(tmp_path, monkeypatch, Trial(), interrupted=True, pruner="none")
    assert seeds == [0] and record["state"] == "FAIL" and record["error"] == "interrupted"
    assert record["interrupted"] is True and len(record["results"]) == 1


def test_an_interrupted_trial_stops_the_sweep_with_status_130(monkeypatch, tmp_path):
    """After a trial that was interrupted no other trial starts; the sweep says why and exits with 130 (as a shell
    command stopped by Ctrl-C does); a failed trial that was not interrupted lets the sweep go on."""
    progress = SweepProgress()
    status, ran = fake_sweep(monkeypatch, tmp_path, ["FAIL", {"state": "FAIL", "interrupted": True}, "COMPLETE"],
                             progress=progress)
    assert status == 130
    assert ran == [0, 1] and any("stopped by Ctrl-C or SIGTERM" in line for line in progress.lines)


class SweepProgress(Progress):
    def __init__(self):
        super().__init__()
        self.lines = []

    def finished(self, line, done, seconds):
        self.lines.append(line)

    def note(self, line):
        self.lines.append(line)

    def close(self):
        pass


def fake_sweep(monkeypatch, tmp_path, states, progress=None, **settings):
    """Runs a sweep whose trials end in `states` (a trial state, or a dict of the record's keys): its exit status
    and the trial numbers that ran."""
    records = iter(states)
    ran = []

    def fake_run_trial(plan, trial, progress):
        ran.append(trial.number)
        state = next(records)
        return {"trial": trial.number, "values": [1.0], "results": [], "params": {}, "error": "bad",
                **(state if isinstance(state, dict) else {"state": state})}

    monkeypatch.setattr(sweep, "run_trial", fake_run_trial)
    monkeypatch.setattr(sweep, "finish_trial", lambda *args: None)
    monkeypatch.setattr(sweep, "describe_trial", lambda plan, record: f"trial {record['trial']}")
    monkeypatch.setattr(sweep, "write_report", lambda plan, study: [])
    numbers = iter(range(100))
    study = SimpleNamespace(ask=lambda distributions: Trial(number=next(numbers)))
    plan = SimpleNamespace(settings={**SETTINGS, "trials": 3, "timeout": 0, **settings},
                           space=SimpleNamespace(distributions={}), sweep_dir=tmp_path)
    return sweep.sweep(plan, study, progress or SweepProgress()), ran


def test_a_sweep_runs_its_trial_count(monkeypatch, tmp_path):
    code, ran = fake_sweep(monkeypatch, tmp_path, ["COMPLETE"] * 10)
    assert code == 0 and ran == [0, 1, 2]


def test_failing_trials_in_a_row_end_the_sweep_naming_the_last_error(monkeypatch, tmp_path):
    from fastvec.trainer.config import ConfigError

    with pytest.raises(ConfigError, match=f"{sweep.FAILURES_IN_A_ROW} trials in a row failed; the last: bad"):
        fake_sweep(monkeypatch, tmp_path, ["FAIL"] * 50, trials=50)
    code, ran = fake_sweep(monkeypatch, tmp_path, (["FAIL"] * (sweep.FAILURES_IN_A_ROW - 1) + ["PRUNED"]) * 3,
                           trials=3 * sweep.FAILURES_IN_A_ROW)
    assert code == 0 and len(ran) == 3 * sweep.FAILURES_IN_A_ROW  # a success in between starts the count again


def test_each_finished_trial_is_reported_with_the_sweeps_count_and_time_so_far(monkeypatch, tmp_path):
    """The trials-per-hour line gets the trials done here and the seconds since this sweep started (never more
    than the time the test itself measures around it)."""
    import time

    reports = []

    class Recording(SweepProgress):
        def finished(self, line, done, seconds):
            reports.append((line, done, seconds, time.perf_counter() - began))

    monkeypatch.setattr(sys.modules[__name__], "SweepProgress", Recording)
    began = time.perf_counter()
    code, _ = fake_sweep(monkeypatch, tmp_path, ["COMPLETE"] * 3)
    assert code == 0 and [(line, done) for line, done, *_ in reports] == [("trial 0", 1), ("trial 1", 2),
                                                                          ("trial 2", 3)]
    for _, _, seconds, measured in reports:
        assert 0 <= seconds <= measured
    assert [r[2] for r in reports] == sorted(r[2] for r in reports)


def test_a_finished_trial_is_told_to_the_study_in_its_state_and_logged(tmp_path):
    """Completed trials are told their values; pruned ones PRUNED and failed ones FAIL (with their error), so that
    the sampler and a resumed sweep's report see them as they ended; every one gets a trials.jsonl line."""
    optuna = pytest.importorskip("optuna")
    from optuna.trial import TrialState

    study = optuna.create_study(direction="maximize")
    result = {"seconds": 2.0, "score": 5.0, "steps": 100, "startup": 0.5, "hit_seconds": None}
    for state in ("COMPLETE", "PRUNED", "FAIL"):
        trial = study.ask()
        record = {"trial": trial.number, "state": state, "values": [5.0], "results": [result], "params": {},
                  **({"error": "it broke"} if state == "FAIL" else {})}
        sweep.finish_trial(study, trial, record, tmp_path)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL]
    assert study.trials[0].values == [5.0] and study.trials[2].user_attrs["error"] == "it broke"
    lines = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert [line["state"] for line in lines] == ["COMPLETE", "PRUNED", "FAIL"]


@pytest.mark.parametrize("sampler,pruner,multi,kinds", [
    ("tpe", "median", False, ("TPESampler", "MedianPruner")), ("nsga2", "median", True, ("NSGAIISampler", "NopPruner")),
    ("random", "none", False, ("RandomSampler", "NopPruner")), ("tpe", "median", True, ("TPESampler", "NopPruner"))])
def test_the_study_takes_the_configured_sampler_and_pruner(tmp_path, sampler, pruner, multi, kinds):
    """sweep.sampler picks TPE (multivariate, with the constant liar for parallel processes), NSGA-II or random
    search; the median pruner, with sweep.prune_startup trials and sweep.prune_warmup of the reports as warm-up, only
    for a single objective (a Pareto study is never pruned); sweep.sampler_seed >= 0 makes the draws repeat."""
    optuna = pytest.importorskip("optuna")

    def study(name, seed):
        plan = SimpleNamespace(settings={**SETTINGS, "sampler": sampler, "pruner": pruner, "sampler_seed": seed,
                                         "prune_startup": 3, "prune_warmup": 0.5, "reports": 4,
                                         "objective": "pareto" if multi else "score"},
                               multi=multi, storage=f"sqlite:///{tmp_path / 'study.db'}", study=name,
                               base={"env": {"name": "cartpole"}})
        return sweep.open_study(plan)

    first = study("a", 0)
    assert (type(first.sampler).__name__, type(first.pruner).__name__) == kinds
    if sampler == "tpe":
        assert first.sampler._multivariate and first.sampler._constant_liar
    if kinds[1] == "MedianPruner":
        assert (first.pruner._n_startup_trials, first.pruner._n_warmup_steps) == (3, 2)
    space = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    draw = first.ask(space).params["x"]
    assert study("b", 0).ask(space).params["x"] == draw and study("c", -1).ask(space).params["x"] != draw


def test_a_trial_whose_directory_an_earlier_study_left_runs_and_rewrites_its_trial_toml(tmp_path, monkeypatch):
    """Another study in the same sweep dir (another objective or --sweep.study) numbers its trials from 0 again:
    trials/0002 already there from the earlier study is reused, its trial.toml replaced, the trial run."""
    from fastvec.trainer import run

    config = {"train": {"seed": 5, "log_interval": 1.0, "checkpoint_interval": 1, "checkpoint_seconds": 1.0,
                        "stop_at_target": True, "horizon": 8, "total_timesteps": 64},
              "env": {"name": "cartpole", "num_envs": 4}}
    trial_dir = tmp_path / "trials" / "0002"
    trial_dir.mkdir(parents=True)
    (trial_dir / "trial.toml").write_text("# the earlier study's trial 2\n")
    ran = []

    def fake_train(seed_config, run_dir, dashboard, watch):
        ran.append(run_dir)
        watch(log(3.0), 1.0, 64)
        return {"startup": 0.0, "sps": 1.0, "interrupted": False}

    monkeypatch.setattr(run, "train", fake_train)
    monkeypatch.setattr(sweep, "runnable_toml", lambda config, title: f"# {title}\n")
    plan = SimpleNamespace(settings={**SETTINGS, "pruner": "none"}, multi=False, sweep_dir=tmp_path,
                           trial_config=lambda params: config, env="cartpole", study="second")
    record = sweep.run_trial(plan, Trial(number=2), Progress())
    assert record["state"] == "COMPLETE" and record["values"] == [3.0] and ran == [trial_dir]
    assert (trial_dir / "trial.toml").read_text() == "# fastvec-sweep cartpole: study second, trial 2\n"


def test_a_failed_trials_error_is_kept_to_its_first_500_characters(tmp_path):
    """finish_trial of a FAIL record: the study is told FAIL and the trial keeps the error's first 500 characters
    (a traceback can be long); trial.json keeps the whole record."""
    from optuna.trial import TrialState

    told = []
    study = SimpleNamespace(tell=lambda trial, values=None, state=None: told.append((trial.number, values, state)))
    trial = Trial(number=4)
    error = "".join(f"{i % 10}" for i in range(700))
    sweep.finish_trial(study, trial, {"trial": 4, "state": "FAIL", "error": error, "params": {}}, tmp_path)
    assert told == [(4, None, TrialState.FAIL)]
    assert trial.user_attrs["error"] == error[:500] and len(trial.user_attrs["error"]) == 500
    assert json.loads((tmp_path / "trials" / "0004" / "trial.json").read_text())["error"] == error


@pytest.mark.parametrize("where", ["in a trial", "between trials"])
def test_ctrl_c_marks_the_trial_in_progress_failed_and_the_sweep_exits_130(monkeypatch, tmp_path, where):
    """A KeyboardInterrupt (a second Ctrl-C) inside a trial tells the study that trial failed; one between trials,
    after the last was told, tells it nothing more. Either way the sweep says so and exits with 130."""
    from optuna.trial import TrialState

    told, ran = [], []

    def fake_run_trial(plan, trial, progress):
        ran.append(trial.number)
        if where == "in a trial" and trial.number == 1:
            raise KeyboardInterrupt
        return {"trial": trial.number, "values": [1.0], "results": [], "params": {}, "state": "COMPLETE"}

    class Interrupted(SweepProgress):
        def finished(self, line, done, seconds):
            super().finished(line, done, seconds)
            if where == "between trials" and done == 2:
                raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "run_trial", fake_run_trial)
    monkeypatch.setattr(sweep, "finish_trial", lambda study, trial, *args: told.append((trial.number, "finished")))
    monkeypatch.setattr(sweep, "describe_trial", lambda plan, record: f"trial {record['trial']}")
    monkeypatch.setattr(sweep, "write_report", lambda plan, study: [])
    numbers = iter(range(100))
    study = SimpleNamespace(ask=lambda distributions: Trial(number=next(numbers)),
                            tell=lambda trial, state=None: told.append((trial.number, state)))
    plan = SimpleNamespace(settings={**SETTINGS, "trials": 5, "timeout": 0}, space=SimpleNamespace(distributions={}),
                           sweep_dir=tmp_path)
    progress = Interrupted()
    assert sweep.sweep(plan, study, progress) == 130
    if where == "in a trial":
        assert ran == [0, 1] and told == [(0, "finished"), (1, TrialState.FAIL)]
    else:
        assert ran == [0, 1] and told == [(0, "finished"), (1, "finished")]
    assert progress.lines[-1] == "fastvec-sweep: interrupted; the trial in progress is marked failed"


def test_opening_a_trials_study_retries_only_a_database_servers_refusal(monkeypatch):
    """On a database server (a URL, not SQLite), a DBAPIError while creating the study is retried after a pause,
    up to the last attempt; any other error, and any error on the last attempt, is raised at once."""
    optuna = pytest.importorskip("optuna")
    from sqlalchemy.exc import OperationalError
    slept = []
    monkeypatch.setattr(sweep.time, "sleep", slept.append)
    plan = SimpleNamespace(storage="postgresql://db.example/sweeps", study="demo", settings={"objective": "score"})

    def opener(errors):
        calls = []

        def create_study(**kwargs):
            calls.append(kwargs["storage"])
            if errors:
                raise errors.pop(0)
            return "study"
        return SimpleNamespace(storages=optuna.storages, create_study=create_study, load_study=create_study), calls

    refusal = OperationalError("CREATE TABLE", {}, Exception("relation already exists"))
    fake, calls = opener([refusal, refusal])
    assert sweep.create_study(fake, plan, None, None) == "study" and len(calls) == 3 and slept == [1.0, 2.0]
    slept.clear()
    fake, calls = opener([ValueError("bad directions")])
    with pytest.raises(ValueError, match="bad directions"):
        sweep.create_study(fake, plan, None, None)
    assert len(calls) == 1 and slept == []
    fake, calls = opener([refusal, refusal, refusal])
    with pytest.raises(OperationalError):
        sweep.create_study(fake, plan, None, None, load=True)
    assert len(calls) == 3 and slept == [1.0, 2.0]


def test_a_sqlite_studys_database_error_is_raised_at_once(tmp_path, monkeypatch):
    """On an SQLite file the processes wait for its lock (a 60 s busy timeout) instead: a DBAPIError is not retried."""
    optuna = pytest.importorskip("optuna")
    from sqlalchemy.exc import OperationalError
    slept, calls = [], []
    monkeypatch.setattr(sweep.time, "sleep", slept.append)

    def create_study(**kwargs):
        calls.append(kwargs["storage"])
        raise OperationalError("CREATE TABLE", {}, Exception("database is locked"))

    fake = SimpleNamespace(storages=optuna.storages, create_study=create_study, load_study=create_study)
    plan = SimpleNamespace(storage=f"sqlite:///{tmp_path / 'sweep.db'}", study="demo", settings={"objective": "score"})
    with pytest.raises(OperationalError, match="database is locked"):
        sweep.create_study(fake, plan, None, None)
    assert len(calls) == 1 and isinstance(calls[0], optuna.storages.RDBStorage) and slept == []


def test_a_log_at_exactly_nine_tenths_of_the_run_is_in_its_last_tenth():
    """The score's last tenth of a 100 s run is [90 s, 100 s], both ends in: a log at 90 s counts, one at 89 s
    does not; the same at the edge of a 10 s run."""
    w, _ = watch(pruner="none")
    for seconds, value in [(50.0, 100.0), (89.0, 50.0), (90.0, 2.0), (100.0, 4.0)]:
        w(log(value), seconds, int(seconds))
    assert w.result({"startup": 0.0, "sps": 1.0})["score"] == 3.0
    short, _ = watch(pruner="none")
    for seconds, value in [(8.0, 9.0), (9.0, 1.0), (10.0, 5.0)]:
        short(log(value), seconds, int(seconds))
    assert short.result({"startup": 0.0, "sps": 1.0})["score"] == 3.0


def test_time_to_target_reached_at_a_later_log_reports_that_logs_distance_for_the_rest_of_the_budget():
    """The hit is reported with the log that reached the target (an overshoot is a negative distance), not an
    earlier log's, at every point of the budget still to come; and no reports without a pruner."""
    w, trial = watch(objective="time_to_target", target=10.0)
    assert w(log(4.0), 1.0, 10) is False and w(log(7.0), 2.0, 30) is False
    assert trial.reports == [(1, 3.0)]
    assert w(log(12.5), 3.0, 35) is True and w.hit == (3.0, 35)
    assert trial.reports == [(1, 3.0), (2, -2.5), (3, -2.5), (4, -2.5)]
    w, trial = watch(seed_index=1, objective="time_to_target", target=10.0)
    w(log(1.0), 1.0, 30), w(log(2.0), 2.0, 40), w(log(11.0), 3.0, 45)
    assert trial.reports == [(5, 9.0), (6, -1.0), (7, -1.0), (8, -1.0)]
    w, trial = watch(objective="time_to_target", target=10.0, pruner="none")
    w(log(1.0), 1.0, 30), w(log(2.0), 2.0, 40)
    assert w(log(11.0), 3.0, 45) is True and trial.reports == []


def test_a_seed_stopped_before_its_first_update_reports_no_time_no_steps_and_no_score():
    """A run that never called its watch (Ctrl-C during the first rollout) is recorded as 0 s and 0 steps with
    no logs, no score, no best and no hit, not pruned."""
    w, trial = watch()
    result = w.result({"seed": 5, "startup": 0.5, "sps": 0.0})
    assert (result["seconds"], result["steps"], result["logs"], result["score"], result["best"]) == (0.0, 0, 0, None,
                                                                                                      None)
    assert result["hit_seconds"] is None and result["hit_steps"] is None and result["pruned"] is False
    assert trial.reports == []
