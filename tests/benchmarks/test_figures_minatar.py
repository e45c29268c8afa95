"""figures.py's MinAtar table beside the peer reads the JSON train_peers.py writes now (rows of a kind, each side's
seeds, the ratio under one rule), made here by train_peers.summarize itself."""

import json

import pytest


@pytest.fixture(scope="module")
def modules(load_benchmark):
    return load_benchmark("figures"), load_benchmark("train_peers")


def run(seed, time_s, reached, train_s, steps=10_000_000):
    return {"seed": seed, "reached": reached, "time_s": time_s, "lower_bound": not reached,
            "steps_to_threshold": 1_500_000 if reached else None, "train_s": train_s, "steps": steps,
            "budget_steps": 10_000_000, "capped": steps < 10_000_000, "sps": 2_500_000, "startup_s": 1.0,
            "final_return": 40.0, "eval_return": 41.5, "eval_return_std": 1.0, "groups": []}


def test_a_row_train_peers_writes_now(modules, tmp_path, monkeypatch):
    figures, train_peers = modules
    mine = [run(1, 0.5, True, 4.0), run(2, 0.7, True, 4.1)]
    peer = {"runs": [run(1, 3.0, True, 14.0, steps=9_000_000), run(2, 14.8, False, 14.8, steps=9_000_000)]}
    row = train_peers.summarize("breakout-minatar", "published", 30.0, mine, peer, 100, {})
    (tmp_path / "peers.json").write_text(json.dumps({"rows": [row]}))
    monkeypatch.setattr(figures, "TRAIN_PEERS_MINATAR", [("breakout-minatar", "peers.json", "published")])
    text = figures.train_peers_minatar(tmp_path)
    # medians: the peer's 8.9 s (3.0, 14.8 as a bound: the median then a bound too) over fastvec's 0.6 s
    assert ("| Breakout (>= 30, 2 seeds; peers.json) | 0.50 / 0.70 s (1.50M steps) | 4.0-4.1 s, 2.50M, 41.5 / 41.5 "
            "| 3.00 / >14.80 s | 14.0-14.8 s (9.00M steps), 41.5 / 41.5 | fastvec >=15x faster |") in text
    monkeypatch.setattr(figures, "TRAIN_PEERS_MINATAR", [("breakout-minatar", "peers.json", "tuned")])
    with pytest.raises(figures.FigureError, match="0 rows with kind == 'tuned'"):
        figures.train_peers_minatar(tmp_path)
