"""fastvec-sweep's plots (fastvec/trainer/sweep_report.py) of a study made by hand: plots/front.png (every trial's
score against its training seconds, pruned ones apart, the Pareto front, the target) and plots/params.png (each
searched parameter against the objective, the best trial starred), their sizes and what each panel draws."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("matplotlib")

from optuna.distributions import CategoricalDistribution, FloatDistribution  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

from fastvec.trainer import sweep_report  # noqa: E402

DISTRIBUTIONS = {"train.learning_rate": FloatDistribution(1e-4, 1e-2, log=True),
                 "policy.kind": CategoricalDistribution(["mlp", "mingru"])}


def study_of(trials: list[tuple], objective: str = "score"):
    """An in-memory study of (state, learning rate, kind, seconds, score) trials; the objective's value is the score
    (time_to_target: the seconds)."""
    study = optuna.create_study(direction="minimize" if objective == "time_to_target" else "maximize")
    for state, lr, kind, seconds, score in trials:
        value = seconds if objective == "time_to_target" else score
        study.add_trial(create_trial(state=state, value=value if state == TrialState.COMPLETE else None,
                                     params={"train.learning_rate": lr, "policy.kind": kind},
                                     distributions=DISTRIBUTIONS,
                                     user_attrs={"seconds": seconds, "score": score},
                                     intermediate_values={0: value} if state == TrialState.PRUNED else {}))
    return study


def plan_of(objective: str = "score", target: float = 0.0):
    settings = {"objective": objective, "metric": "episode_return", "target": target}
    return SimpleNamespace(settings=settings, study="demo", multi=False)


def drawn(monkeypatch, plan, study, folder, save: bool = True):
    """write_plots' lines and the figures it drew, in order; save=False: the figures drawn but not rendered to PNG
    (their files are the first test's)."""
    import matplotlib.pyplot as plt
    figures, real_close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig: figures.append(fig) or real_close(fig))
    if not save:
        monkeypatch.setattr(sweep_report, "save_figure", lambda fig, path, dpi: None)
    lines = sweep_report.write_plots(plan, study, folder)
    return lines, figures


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


TRIALS = [(TrialState.COMPLETE, 1e-3, "mlp", 10.0, 100.0), (TrialState.COMPLETE, 3e-3, "mingru", 20.0, 300.0),
          (TrialState.COMPLETE, 5e-3, "mlp", 30.0, 200.0), (TrialState.PRUNED, 2e-3, "mingru", 5.0, 50.0)]


def test_the_front_and_params_plots_of_a_study(tmp_path, monkeypatch):
    """front.png: complete and pruned trials apart and the Pareto front; params.png: each parameter against the
    objective, the best trial starred."""
    lines, figures = drawn(monkeypatch, plan_of(), study_of(TRIALS), tmp_path / "plots")
    assert lines == [f"wrote {tmp_path / 'plots' / 'front.png'}, {tmp_path / 'plots' / 'params.png'}"]
    assert png_size(tmp_path / "plots" / "front.png") == (840, 540)  # 7 x 4.5 inches at 120 dpi
    front = figures[0].axes[0]
    complete, pruned = front.collections
    assert complete.get_offsets().tolist() == [[10.0, 100.0], [20.0, 300.0], [30.0, 200.0]]
    assert pruned.get_offsets().tolist() == [[5.0, 50.0]]
    (step,) = front.get_lines()  # no target line for the score objective
    # the front: no trial both faster and higher-scoring (the pruned trial's 5 s too)
    assert list(step.get_xdata()) == [5.0, 10.0, 20.0] and list(step.get_ydata()) == [50.0, 100.0, 300.0]
    assert [t.get_text() for t in front.get_legend().get_texts()] == ["complete", "pruned", "Pareto front"]
    assert front.get_title() == "demo: 4 trials" and front.get_ylabel() == "episode_return"
    assert png_size(tmp_path / "plots" / "params.png") == (924, 352)  # 2 panels of 4.2 x 3.2 inches at 110 dpi
    lr, kind = figures[1].axes
    assert (lr.get_xlabel(), kind.get_xlabel()) == ("train.learning_rate", "policy.kind")
    assert lr.get_xscale() == "log" and kind.get_xscale() == "linear"
    points, star = lr.collections
    assert points.get_offsets().tolist() == [[1e-3, 100.0], [3e-3, 300.0], [5e-3, 200.0]]  # complete trials only
    assert star.get_offsets().tolist() == [[3e-3, 300.0]]
    # the trials small and see-through where they crowd, the best a larger opaque star
    assert (points.get_alpha(), points.get_sizes().tolist()) == (0.6, [18.0])
    assert (star.get_alpha(), star.get_sizes().tolist()) == (None, [60.0])
    assert [t.get_text() for t in lr.get_legend().get_texts()] == ["best (trial 1)"]
    points, star = kind.collections
    assert points.get_offsets().tolist() == [[0, 100.0], [1, 300.0], [0, 200.0]]  # the choices' positions
    assert star.get_offsets().tolist() == [[1, 300.0]]
    assert [t.get_text() for t in kind.get_xticklabels()] == ["mlp", "mingru"]
    assert figures[1]._suptitle.get_text() == "demo: 3 complete trials"


def test_a_time_to_target_front_draws_the_target(tmp_path, monkeypatch):
    _, figures = drawn(monkeypatch, plan_of("time_to_target", 250.0), study_of(TRIALS, "time_to_target"),
                       tmp_path / "plots", save=False)
    target = [line for line in figures[0].axes[0].get_lines() if list(line.get_ydata()) == [250.0, 250.0]]
    assert len(target) == 1 and target[0].get_label() == "target 250"


def test_a_parameter_the_best_trial_lacks_gets_no_star(tmp_path, monkeypatch):
    """A parameter searched only by some trials (another process's search space): its panel has no star when the
    best trial did not search it."""
    study = study_of(TRIALS[:1])
    study.add_trial(create_trial(state=TrialState.COMPLETE, value=50.0, params={"train.gamma": 0.99},
                                 distributions={"train.gamma": FloatDistribution(0.9, 0.999)},
                                 user_attrs={"seconds": 1.0, "score": 50.0}))
    _, figures = drawn(monkeypatch, plan_of(), study, tmp_path / "plots", save=False)
    panels = {ax.get_xlabel(): ax for ax in figures[1].axes if ax.get_visible()}
    assert set(panels) == {"train.learning_rate", "policy.kind", "train.gamma"}
    assert len(panels["train.gamma"].collections) == 1 and panels["train.gamma"].get_legend() is None
    assert len(panels["policy.kind"].collections) == 2


def test_no_plots_before_any_trial_reports_and_no_params_plot_without_searched_parameters(tmp_path, monkeypatch):
    study = optuna.create_study(direction="maximize")
    assert drawn(monkeypatch, plan_of(), study, tmp_path / "a")[0] == []
    study.add_trial(create_trial(state=TrialState.COMPLETE, value=1.0, user_attrs={"seconds": 2.0, "score": 1.0}))
    lines, _ = drawn(monkeypatch, plan_of(), study, tmp_path / "b")
    assert lines == [f"wrote {tmp_path / 'b' / 'front.png'}"] and not (tmp_path / "b" / "params.png").exists()


def test_the_front_keeps_trials_with_both_seconds_and_score_and_each_faster_trials_best():
    """front_points: only trials that recorded both their training seconds and their score are points (one with
    either missing, e.g. failed before its first report, is left out), sorted by seconds; the Pareto front is each
    point that scores higher than every faster one (a later tie is not on it)."""
    def trial(number, **attrs):
        return SimpleNamespace(number=number, user_attrs=attrs)

    trials = [trial(0, seconds=5.0, score=10.0), trial(1, seconds=2.0, score=12.0), trial(2, seconds=None, score=50.0),
              trial(3, score=60.0), trial(4, seconds=1.0), trial(5, seconds=3.0, score=None),
              trial(6, seconds=4.0, score=12.0), trial(7, seconds=8.0, score=20.0), trial(8, seconds=1.5, score=-3.0)]
    points, front = sweep_report.front_points(trials)
    assert points == [(1.5, -3.0, 8), (2.0, 12.0, 1), (4.0, 12.0, 6), (5.0, 10.0, 0), (8.0, 20.0, 7)]
    assert front == [(1.5, -3.0, 8), (2.0, 12.0, 1), (8.0, 20.0, 7)]
    assert sweep_report.front_points([trial(0, seconds=None, score=None), trial(1, score=1.0)]) == ([], [])


@pytest.mark.parametrize("objective,target,lines", [("pareto", 250.0, 1), ("pareto", 0.0, 0), ("score", 250.0, 0)])
def test_the_front_draws_a_target_line_for_pareto_only_with_a_target(tmp_path, monkeypatch, objective, target, lines):
    """front.png's dashed target line: the pareto objective draws it only where sweep.target is set (0: none), and
    the score objective never (its target is no part of the objective)."""
    if objective == "pareto":
        study = optuna.create_study(directions=["maximize", "minimize"])
    else:
        study = optuna.create_study(direction="maximize")
    for seconds, score in [(10.0, 100.0), (20.0, 300.0), (30.0, 200.0)]:
        study.add_trial(create_trial(state=TrialState.COMPLETE,
                                     values=[score, seconds] if objective == "pareto" else [score],
                                     user_attrs={"seconds": seconds, "score": score}))
    _, figures = drawn(monkeypatch, plan_of(objective, target), study, tmp_path / "plots", save=False)
    drawn_lines = figures[0].axes[0].get_lines()
    assert len(drawn_lines) == 1 + lines
    assert [line.get_label() for line in drawn_lines[1:]] == ["target 250"] * lines


def test_the_best_pareto_trial_is_the_fastest_that_reaches_the_target_else_the_highest_score():
    """pick_best on a (score, seconds) front: with the target reached by some front trials, the fastest of those;
    with none reaching it, the front's highest score; before any trial completes, None."""
    study = optuna.create_study(directions=["maximize", "minimize"])
    assert sweep_report.pick_best(study, {"objective": "pareto", "target": 0.0}) is None
    for score, seconds in [(100.0, 5.0), (300.0, 20.0), (450.0, 40.0), (200.0, 30.0)]:  # the last is dominated
        study.add_trial(create_trial(state=TrialState.COMPLETE, values=[score, seconds], params={},
                                     distributions={}))
    for target, values in [(250.0, [300.0, 20.0]), (100.0, [100.0, 5.0]), (460.0, [450.0, 40.0])]:
        assert sweep_report.pick_best(study, {"objective": "pareto", "target": target}).values == values


def test_the_front_plot_draws_the_front_as_steps_and_the_target_as_a_thin_grey_dashed_line(tmp_path, monkeypatch):
    """front.png for a time_to_target sweep: the Pareto front a red (C3) step line through each faster trial's best
    score, holding each score until the next (steps-post), and the target a grey dashed line 1 point wide at the
    target's height across the plot."""
    from matplotlib.colors import to_rgba
    study = optuna.create_study(direction="minimize")
    for seconds, score in [(10.0, 100.0), (20.0, 300.0), (30.0, 200.0)]:
        study.add_trial(create_trial(state=TrialState.COMPLETE, value=seconds,
                                     user_attrs={"seconds": seconds, "score": score}))
    _, figures = drawn(monkeypatch, plan_of("time_to_target", 250.0), study, tmp_path / "plots", save=False)
    front, target = figures[0].axes[0].get_lines()
    assert front.get_label() == "Pareto front" and front.get_drawstyle() == "steps-post"
    assert list(front.get_xdata()) == [10.0, 20.0] and list(front.get_ydata()) == [100.0, 300.0]
    assert to_rgba(front.get_color()) == to_rgba("C3")
    assert target.get_label() == "target 250" and list(target.get_ydata()) == [250.0, 250.0]
    assert list(target.get_xdata()) == [0, 1]  # axes coordinates: the whole width
    assert target.get_linestyle() == "--" and target.get_linewidth() == 1.0
    assert to_rgba(target.get_color()) == to_rgba("grey")
    (complete,) = figures[0].axes[0].collections  # no pruned trial: one scatter, half see-through
    assert complete.get_label() == "complete" and complete.get_alpha() == 0.6
    assert complete.get_offsets().tolist() == [[10.0, 100.0], [20.0, 300.0], [30.0, 200.0]]
