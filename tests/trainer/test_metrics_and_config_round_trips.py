"""Round trips a user relies on: fastvec-plot reads every metrics row around blank and damaged lines (and
says how many it skipped), and a Config turned back into its dict is the validated config it came from,
[env]'s parameters and name and [sweep]'s search space included."""

import json

import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.plot import read_metrics
from fastvec.trainer.settings import Config


def test_plot_reads_rows_after_blank_lines_and_counts_the_damaged_ones(tmp_path, capsys):
    rows = [{"global_step": k * 10, "time": k * 1.5, "episode_return": float(k)} for k in range(4)]
    lines = [json.dumps(rows[0]), "", json.dumps(rows[1]), "   ", '{"global_step": 5}', "[1, 2]",
             json.dumps(rows[2]), '{"global_step": 30, "ti', json.dumps(rows[3])]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert read_metrics(tmp_path) == rows
    assert "skipped 3 unreadable lines" in capsys.readouterr().err


def test_a_config_object_gives_back_the_dict_it_was_made_of():
    config = load_config("pong", {"env": {"points": 3, "num_envs": 4}, "train": {"seed": 9}})
    assert Config.of(config).to_dict() == config
    assert list(Config.of(config).to_dict()) == list(config)
    swept = load_config("cartpole", {"sweep": {"train.learning_rate": "1e-4:1e-2:log"}})
    assert Config.of(swept).to_dict() == swept
    env = Config.of(config).env
    assert env.name == "pong" and env.params["points"] == 3


def plotted(tmp_path, monkeypatch, runs: dict) -> tuple:
    """plot_runs over run directories holding `runs` (name -> rows); the figure it drew, and the PNG's path."""
    import matplotlib.pyplot as plt

    from fastvec.trainer import plot

    dirs = []
    for name, rows in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        dirs.append(tmp_path / name)
    figures = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: figures.append(fig) or real_close(fig))
    out = plot.plot_runs(dirs, tmp_path / "out" / "curve.png")
    return figures[0], out


def test_plot_draws_return_and_each_stat_against_steps_and_time_one_line_a_run(tmp_path, monkeypatch):
    a = [{"global_step": 100 * k, "time": 0.5 * k, "sps": 200.0, "episode_return": float(k), "score": 2.0 * k,
          "selfplay/elo": 1000.0} for k in range(1, 4)]
    b = [{"global_step": 50, "time": 1.0, "sps": 50.0, "episode_return": 7.0},
         {"global_step": 90, "time": 2.0, "sps": 45.0, "episode_return": 8.0, "score": 1.0}]
    fig, out = plotted(tmp_path, monkeypatch, {"a": a, "b": b})
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # 1100 pixels wide, 320 a panel row: 11 x 3.2 inches a row at 100 dpi
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1100, 640)
    axes = fig.axes
    assert len(axes) == 4  # episode_return and score (sps and "/" keys are no panels), by steps and by time
    assert [ax.get_ylabel() for ax in axes[::2]] == ["mean episode_return", "mean score"]
    assert [ax.get_xlabel() for ax in axes] == ["agent steps", "training time (s)"] * 2
    by_steps, by_time = axes[2].get_lines(), axes[3].get_lines()
    assert [line.get_label() for line in by_steps] == ["a", "b"]
    assert list(by_steps[0].get_xdata()) == [100, 200, 300] and list(by_steps[0].get_ydata()) == [2.0, 4.0, 6.0]
    assert list(by_time[1].get_xdata()) == [2.0] and list(by_time[1].get_ydata()) == [1.0]  # rows with the stat
    assert all([t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"] for ax in axes)
    assert {t.get_fontsize() for ax in axes for t in ax.get_legend().get_texts()} == {7.0}  # small: many runs fit
    assert fig._suptitle.get_text() == f"{tmp_path / 'a'}  (300 steps, 200 SPS)"


def test_plot_of_one_run_has_no_legend(tmp_path, monkeypatch):
    rows = [{"global_step": 10, "time": 1.0, "sps": 1234.4, "episode_return": 1.0}]
    fig, _ = plotted(tmp_path, monkeypatch, {"solo": rows})
    assert len(fig.axes) == 2 and all(ax.get_legend() is None for ax in fig.axes)
    assert fig.axes[0].get_lines()[0].get_label().startswith("_")  # unlabelled
    assert fig._suptitle.get_text().endswith("(10 steps, 1,234 SPS)")


def test_plot_of_a_run_with_nothing_logged_yet_draws_empty_panels(tmp_path, monkeypatch):
    """A run just started (metrics.jsonl exists, no row yet) plots: its return panels, empty, titled with 0
    steps."""
    fig, out = plotted(tmp_path, monkeypatch, {"fresh": []})
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(fig.axes) == 2 and not any(ax.get_lines() for ax in fig.axes)
    assert fig._suptitle.get_text() == f"{tmp_path / 'fresh'}  (0 steps, 0 SPS)"


def test_plot_help_says_what_it_draws_and_what_it_needs(capsys):
    from fastvec.trainer import plot

    with pytest.raises(SystemExit) as exit_:
        plot.main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert exit_.value.code == 0 and out.startswith("usage: fastvec-plot [-h] [-o OUT] run_dirs [run_dirs ...]")
    assert "Plot the learning curves of fastvec-train runs (mean episode return, the env's stats, SPS) as one PNG." in out
    assert "Needs matplotlib: pip install 'fastvec[plot]'" in out


def test_plot_warns_of_one_damaged_line_in_the_singular_of_two_in_the_plural_and_of_none_not_at_all(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text('{"global_step": 1, "time": 0.5}\n{"global_st\n')
    assert read_metrics(tmp_path) == [{"global_step": 1, "time": 0.5}]
    assert capsys.readouterr().err == f"fastvec-plot: warning: skipped 1 unreadable line of {tmp_path / 'metrics.jsonl'}\n"
    (tmp_path / "metrics.jsonl").write_text('{"global_step": 1, "time": 0.5}\n[]\n{"global_st\n')
    read_metrics(tmp_path)
    assert capsys.readouterr().err == (f"fastvec-plot: warning: skipped 2 unreadable lines of "
                                       f"{tmp_path / 'metrics.jsonl'}\n")
    (tmp_path / "metrics.jsonl").write_text('{"global_step": 1, "time": 0.5}\n')
    read_metrics(tmp_path)
    assert capsys.readouterr().err == ""


def test_fastvec_plot_writes_beside_the_first_run_by_default_and_prints_the_path(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from fastvec.trainer import plot
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text('{"global_step": 8, "time": 0.5, "episode_return": 1.0}\n')
    assert plot.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'a' / 'learning_curve.png'}\n"
    assert (tmp_path / "a" / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "b" / "learning_curve.png").exists()
    nested = tmp_path / "plots" / "2026" / "a.png"  # -o into folders that do not exist yet: made
    assert plot.main([str(tmp_path / "a"), "-o", str(nested)]) == 0
    assert nested.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fastvec_plot_failures_are_one_line_with_exit_status_2(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from fastvec.trainer import plot
    assert plot.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr() == ("", f"fastvec-plot: error: {tmp_path / 'nowhere' / 'metrics.jsonl'} not found; "
                                       f"give a run directory written by fastvec-train\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text('{"global_step": 8, "time": 0.5, "episode_return": 1.0}\n')
    (tmp_path / "file").write_text("not a directory")
    assert plot.main([str(tmp_path / "run"), "-o", str(tmp_path / "file" / "x" / "out.png")]) == 2
    assert capsys.readouterr().err == f"fastvec-plot: error: Not a directory: {tmp_path / 'file' / 'x'}\n"

    def full(run_dirs, out):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plot, "plot_runs", full)
    assert plot.main([str(tmp_path / "run"), "-o", str(tmp_path / "c.png")]) == 2
    assert capsys.readouterr().err == f"fastvec-plot: error: No space left on device: {tmp_path / 'c.png'}\n"

    def missing(run_dirs, out):
        raise ImportError("fastvec-plot needs matplotlib: pip install 'fastvec[plot]'")

    monkeypatch.setattr(plot, "plot_runs", missing)
    assert plot.main([str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == ("fastvec-plot: error: fastvec-plot needs matplotlib: pip install "
                                       "'fastvec[plot]'\n")


def test_plot_of_several_runs_is_titled_with_the_first_runs_last_row_whatever_the_others_logged(tmp_path, monkeypatch):
    """The title names the first run and its latest steps and SPS: a later run with nothing logged yet leaves it,
    and a first run with nothing logged is titled with 0 steps though a later run has rows."""
    rows = [{"global_step": 64, "time": 1.0, "sps": 64.0, "episode_return": 1.0},
            {"global_step": 128, "time": 2.0, "sps": 2500.6, "episode_return": 2.0}]
    (tmp_path / "one").mkdir()
    fig, _ = plotted(tmp_path / "one", monkeypatch, {"logged": rows, "fresh": []})
    assert fig._suptitle.get_text() == f"{tmp_path / 'one' / 'logged'}  (128 steps, 2,501 SPS)"
    (tmp_path / "two").mkdir()
    fig, _ = plotted(tmp_path / "two", monkeypatch, {"fresh": [], "middle": rows[:1], "logged": rows})
    assert fig._suptitle.get_text() == f"{tmp_path / 'two' / 'fresh'}  (0 steps, 0 SPS)"
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2]  # the runs with rows are drawn all the same
