"""ratings.png's bot labels: each bot rating's label sits at the last evaluation's global step (the right end of
the learner's line), and a ratings file with bots but no history yet still plots, its labels at step 0."""

import json

import pytest

pytest.importorskip("matplotlib")


def plotted_axes(tmp_path, monkeypatch, history, ratings):
    import matplotlib.pyplot as plt

    from fastvec.trainer.selfplay import plot_ratings

    (tmp_path / "ratings.json").write_text(json.dumps({"ratings": ratings, "history": history, "results": []}))
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    assert plot_ratings(tmp_path) == tmp_path / "ratings.png" and (tmp_path / "ratings.png").is_file()
    return kept[0].axes[0]


def test_each_bot_label_sits_at_the_last_evaluations_step_and_its_rating(tmp_path, monkeypatch):
    history = [{"global_step": 300, "player": "u3", "elo": 1000.0, "selfplay/score_bot0": 0.5},
               {"global_step": 900, "player": "u9", "elo": 1050.0, "selfplay/score_bot0": 0.75}]
    ax = plotted_axes(tmp_path, monkeypatch, history, {"u3": 990.0, "u9": 1060.0, "bot0": 940.0, "bot1": 1210.0})
    labels = sorted((text.get_text(), tuple(text.get_position())) for text in ax.texts)
    assert labels == [(" bot0", (900, 940.0)), (" bot1", (900, 1210.0))]


@pytest.mark.filterwarnings("ignore:No artists with labels found")  # no score series yet: an empty legend
def test_bots_without_any_history_yet_plot_with_their_labels_at_step_0(tmp_path, monkeypatch):
    ax = plotted_axes(tmp_path, monkeypatch, [], {"bot0": 1000.0})
    assert [(text.get_text(), tuple(text.get_position())) for text in ax.texts] == [(" bot0", (0, 1000.0))]
