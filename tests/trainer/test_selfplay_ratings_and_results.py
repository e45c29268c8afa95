"""Self-play's bookkeeping against hand computation: EloTable's ratings are the maximum of the posterior its
docstring states (Bradley-Terry on the Elo scale, ties half, every rating ~ N(1000, 400^2)), maximised here by
scipy; and --eval's match results count each game's score (1 a win, 0.5 a tie, 0 a loss)."""

from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import selfplay
from fastvec.trainer.config import load_config

optimize = pytest.importorskip("scipy.optimize")


def posterior_ratings(results: list[tuple[str, str, float, int]], prior_sd: float = 400.0) -> dict:
    """The docstring's model maximised directly: sum of score log P(a beats b) + (games - score) log P(b beats a),
    P = 1 / (1 + 10^((r_b - r_a) / 400)), minus sum (r - 1000)^2 / (2 prior_sd^2)."""
    players = []
    for a, b, _, _ in results:
        players += [p for p in (a, b) if p not in players]
    index = {p: i for i, p in enumerate(players)}

    scale = np.log(10) / 400.0  # natural log-odds per Elo point

    def minus_log_posterior(r):
        total = ((r - 1000.0) ** 2).sum() / (2 * prior_sd ** 2)
        grad = (r - 1000.0) / prior_sd ** 2
        for a, b, score, games in results:
            d = (r[index[b]] - r[index[a]]) * scale
            total += score * np.logaddexp(0, d) + (games - score) * np.logaddexp(0, -d)
            slope = (score / (1 + np.exp(-d)) - (games - score) / (1 + np.exp(d))) * scale  # d total / d r_b
            grad[index[b]] += slope
            grad[index[a]] -= slope
        return total, grad

    # the exact gradient: with finite differences BFGS stops short of gtol by an amount that varies with the
    # processor's floating-point kernels
    fit = optimize.minimize(minus_log_posterior, np.full(len(players), 1000.0), jac=True, method="BFGS",
                            options={"gtol": 1e-10})
    return {p: float(fit.x[i]) for p, i in index.items()}


RESULTS = [
    [("a", "b", 3, 4)],  # few games: the prior pulls hard
    [("a", "b", 2, 2)],  # a perfect record stays finite
    [("a", "b", 750, 1000), ("b", "c", 250, 1000)],
    [("a", "b", 5.5, 8), ("b", "c", 1, 6), ("c", "a", 2.5, 3), ("a", "d", 0, 2)],
]


@pytest.mark.parametrize("results", RESULTS)
def test_elo_ratings_are_the_stated_posteriors_maximum(results):
    table = selfplay.EloTable()
    for a, b, score, games in results:
        table.record(a, b, score, games)
    got, want = table.ratings(), posterior_ratings(results)
    assert got.keys() == want.keys()
    for name in want:
        assert got[name] == pytest.approx(want[name], abs=1e-3), name


def test_a_wider_prior_spreads_a_short_record_further():
    """prior_sd is the prior's standard deviation: 3 wins in 4 games under N(1000, 200^2) as the model says, and
    closer together than under the default 400."""
    table = selfplay.EloTable(prior_sd=200.0)
    table.record("a", "b", 3, 4)
    want = posterior_ratings([("a", "b", 3, 4)], prior_sd=200.0)
    assert table.ratings()["a"] == pytest.approx(want["a"], abs=1e-3)
    default = posterior_ratings([("a", "b", 3, 4)])
    assert want["a"] - want["b"] < default["a"] - default["b"]


def test_eval_against_the_bot_counts_wins_ties_and_losses_from_the_scores(monkeypatch):
    """8 games scored 1, 0.5, 0.5, 0, 1, 1, 0, 0.5: 3 wins, 3 ties, 2 losses, score 0.5625, and the Elo table of
    A's 4.5 points in 8 games against the bot."""
    scores = np.array([1, 0.5, 0.5, 0, 1, 1, 0, 0.5])
    monkeypatch.setattr(selfplay, "load_policy", lambda path: SimpleNamespace(spec=None))
    monkeypatch.setattr(selfplay, "bot_levels", lambda config: [2])
    monkeypatch.setattr(selfplay, "play_all", lambda *args: ({2: scores}, []))
    config = load_config("pong", {"eval": {"episodes": 8}})
    result = selfplay.evaluate_checkpoints(config, "a.npz", "bot")
    assert result["matches"] == [{"opponent": "bot level 2", "score": 0.5625, "wins": 3, "ties": 3, "losses": 2}]
    want = posterior_ratings([("A", "bot2", 4.5, 8)])
    assert result["elo"] == pytest.approx(want, abs=1e-3)
