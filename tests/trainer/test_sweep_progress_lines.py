"""A sweep's display lines (sweep_report.Progress) written out by hand: the header's pruner (none for a Pareto
sweep, which Optuna cannot prune) and a finished trial's trials per hour over short and long elapsed times."""

import io
from types import SimpleNamespace

import pytest

from fastvec.trainer.sweep_report import Progress

SETTINGS = {"trial_seconds": 20.0, "metric": "episode_return", "target": 475.0, "objective": "score", "trials": 4,
            "timeout": 0, "seeds": 2, "sampler": "tpe", "pruner": "median"}


def progress(**changes):
    settings = {**SETTINGS, **changes}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=settings["objective"] == "pareto",
                           space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    piped = io.StringIO()
    study = SimpleNamespace(trials=[], best_trials=[], get_trials=lambda **kw: [])
    return Progress(plan, study, stream=piped), piped


@pytest.mark.parametrize("objective,pruner,shown", [("score", "median", "median"), ("score", "none", "none"),
                                                    ("time_to_target", "median", "median"),
                                                    ("pareto", "median", "none"), ("pareto", "none", "none")])
def test_the_header_names_the_pruner_the_sweep_uses(objective, pruner, shown):
    """The header ends with the sampler and the pruner in use: the configured one, but none for a Pareto sweep
    (sweep.open_study gives it Optuna's NopPruner whatever sweep.pruner says)."""
    _, piped = progress(objective=objective, pruner=pruner, sampler="nsga2" if objective == "pareto" else "tpe")
    header = piped.getvalue().splitlines()[0]
    sampler = "nsga2" if objective == "pareto" else "tpe"
    assert header.endswith(f", 20 s each, 2 seed(s); {sampler} sampler, pruner {shown}"), header


@pytest.mark.parametrize("done,elapsed,rate", [(1, 0.5, "7.2K"), (1, 0.25, "14.4K"), (3, 0.9, "12K"),
                                               (1, 1.0, "3.6K"), (2, 1.5, "4.8K"), (12, 60.0, "720"),
                                               (1, 7200.0, "0.5")])
def test_a_finished_trials_line_gives_3600_done_over_elapsed_trials_per_hour(done, elapsed, rate):
    """done trials in `elapsed` seconds are 3600 done / elapsed an hour, below a second too (a trial that stops
    at once): 1 in 0.5 s is 7.2K an hour."""
    shown, piped = progress()
    shown.finished("trial 0  complete", done, elapsed)
    assert piped.getvalue().splitlines()[-1] == f"trial 0  complete  |  best --  |  {done} done here, {rate} trials/h"


def test_a_finished_trial_at_elapsed_0_gives_a_finite_rate():
    """No time measured yet (elapsed 0): the rate is bounded by a nanosecond's, never a division by zero."""
    shown, piped = progress()
    shown.finished("trial 0  complete", 1, 0.0)
    assert piped.getvalue().splitlines()[-1] == "trial 0  complete  |  best --  |  1 done here, 3.6T trials/h"


def study_with_best(hit):
    """An in-memory time_to_target study of one complete trial (2.84 s, learning rate 0.0123456, horizon 128),
    its "hit" attribute as given (None: absent, as in a trial recorded without it)."""
    optuna = pytest.importorskip("optuna")
    from optuna.distributions import FloatDistribution, IntDistribution
    from optuna.trial import TrialState, create_trial

    study = optuna.create_study(direction="minimize")
    attrs = {"config": "[env]\nname = \"cartpole\"\n", "seconds": 2.84, "score": 480.0}
    if hit is not None:
        attrs["hit"] = hit
    study.add_trial(create_trial(state=TrialState.COMPLETE, value=2.84,
                                 params={"train.learning_rate": 0.0123456, "train.horizon": 128},
                                 distributions={"train.learning_rate": FloatDistribution(1e-3, 1e-1),
                                                "train.horizon": IntDistribution(64, 256)},
                                 user_attrs=attrs))
    return study


@pytest.mark.parametrize("hit,text", [(None, "2.84 s to 475"), (True, "2.84 s to 475"),
                                      (False, "475 missed (counts as 2.84 s)")])
def test_the_best_so_far_reads_as_hit_unless_the_trial_says_it_missed(hit, text):
    """A time_to_target trial that records no "hit" counts as having reached the target."""
    settings = {**SETTINGS, "objective": "time_to_target"}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=False, space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    piped = io.StringIO()
    shown = Progress(plan, study_with_best(hit), stream=piped)
    shown.finished("trial 0  complete", 1, 60.0)
    assert piped.getvalue().splitlines()[-1] == \
        f"trial 0  complete  |  best {text} (trial 0)  |  1 done here, 60 trials/h"


@pytest.mark.parametrize("hit,text", [(None, "2.84 s to 475"), (False, "475 missed (counts as 2.84 s)")])
def test_the_reports_best_line_gives_floats_to_4_digits_and_ints_whole(tmp_path, monkeypatch, hit, text):
    """write_report's `best:` line: the objective as objective_text words it, then each parameter, a float to 4
    significant digits (0.0123456 -> 0.01235, fmt_number's own example) and an int as it is; best.toml's second
    line says the same."""
    from fastvec.trainer import sweep_report

    monkeypatch.setattr(sweep_report, "write_plots", lambda plan, study, folder: [])
    settings = {**SETTINGS, "objective": "time_to_target"}
    plan = SimpleNamespace(settings=settings, study="s", storage="mem", multi=False, sweep_dir=tmp_path / "sweep",
                           env="cartpole")
    lines = sweep_report.write_report(plan, study_with_best(hit))
    assert lines[1] == f"best: trial 0, {text}, train.learning_rate=0.01235 train.horizon=128"
    assert (tmp_path / "sweep" / "best.toml").read_text().splitlines()[1] == f"# best of 1 trials: {text}"
