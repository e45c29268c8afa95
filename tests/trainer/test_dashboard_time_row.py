"""The live panel's time row: each part of an update's time as its whole-percent share of their sum (shares
computed by hand here), then the learning rate; no parts, or parts of zero seconds, are shown as such."""

import io

import pytest

from fastvec.trainer.dashboard import Dashboard


def time_row(time_split: dict | None, **extra) -> str:
    from rich.console import Console
    board = Dashboard("fastvec-train test", 1000, enabled=True, stream=io.StringIO(), mode="live")
    metrics = {"global_step": 500, "time": 2.0, "sps": 250.0, "update": 1, **extra}
    if time_split is not None:
        metrics["time_split"] = time_split
    board._remember(metrics, [])
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(board.renderable())
    rows = [line[2:-2].rstrip() for line in console.export_text().splitlines() if line[2:7] == "time "]
    assert len(rows) == 1, console.export_text()
    return rows[0][len("time"):].strip()  # the values, after the labels' column


@pytest.mark.parametrize("split,shown", [
    ({"rollout": 1.25, "update": 2.5}, "rollout 33%   update 67%"),  # 33.3 and 66.7
    ({"rollout": 0.6, "update": 0.4}, "rollout 60%   update 40%"),
    ({"env": 0.01, "policy": 0.985, "copy": 0.005}, "env 1%   policy 98%   copy 0%"),  # 98.5 rounds to even
    ({"rollout": 3.0}, "rollout 100%"),
    ({"rollout": 0.0, "update": 0.0}, "rollout 0%   update 0%"),  # nothing timed yet: no division by zero
])
def test_each_part_is_shown_as_its_share_of_the_updates_time(split, shown):
    assert time_row(split) == shown


def test_the_learning_rate_follows_the_shares_and_no_split_shows_the_learning_rate_alone():
    assert time_row({"rollout": 1.0, "update": 3.0}, **{"charts/learning_rate": 0.0025}) == \
        "rollout 25%   update 75%   lr 0.0025"
    assert time_row(None, **{"charts/learning_rate": 0.0025}) == "lr 0.0025"
    assert time_row({}) == "--"


def test_the_self_play_row_names_each_result_by_the_last_part_of_its_key_and_leaves_out_the_bots_ratings():
    from rich.console import Console
    board = Dashboard("fastvec-train test", 1000, enabled=True, stream=io.StringIO(), mode="live")
    board._remember({"global_step": 500, "time": 2.0, "sps": 250.0, "update": 1, "selfplay/score_bot1": 0.25,
                     "selfplay/score_past": 0.5, "selfplay/elo": 1012.5, "selfplay/elo_bot1": 990.0,
                     "selfplay/pool": 3, "selfplay/league/score_main": 0.75}, [])
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(board.renderable())
    rows = [line[2:-2].rstrip() for line in console.export_text().splitlines() if line[2:12] == "self-play "]
    assert [row[len("self-play"):].strip() for row in rows] == \
        ["vs bot1 0.25   vs past 0.5   elo 1012   pool 3   vs main 0.75"]
