"""Self-play's opponent pool and its draws, without training: the pool keeps its newest `size` snapshots,
refuses another architecture, forgets only what no game plays; a new game meets the newest snapshot with
probability latest_prob, else one drawn uniformly; scores and snapshot labels."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.selfplay import (OpponentPool, Policy, _update_of, draw_opponents, game_scores,
                                      selfplay_keys)

SPEC = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=4, layers=1)


def policy(label, spec=SPEC):
    return Policy(spec, ref.init_params(spec, np.random.default_rng(0)), label)


def test_the_pool_keeps_its_newest_snapshots_and_ids_never_repeat():
    pool = OpponentPool(3, 0.5)
    ids = [pool.add(policy(f"u{k}")) for k in range(5)]
    assert ids == [0, 1, 2, 3, 4]
    assert pool.members == [2, 3, 4]
    assert sorted(pool.policies) == [0, 1, 2, 3, 4]  # left the pool, still alive until pruned
    pool.prune(in_use=[1])
    assert sorted(pool.policies) == [1, 2, 3, 4]
    pool.prune(in_use=[])
    assert sorted(pool.policies) == [2, 3, 4]
    pool.forget(3)
    assert pool.members == [2, 4] and sorted(pool.policies) == [2, 4]
    assert pool.add(policy("u9")) == 5 and pool.members == [2, 4, 5]
    assert pool.spec == SPEC


def test_a_pool_of_one_keeps_the_newest():
    pool = OpponentPool(1, 1.0)
    pool.add(policy("u1"))
    pool.add(policy("u2"))
    assert pool.members == [1] and pool.policies[1].label == "u2"


def test_a_snapshot_of_another_architecture_is_refused():
    pool = OpponentPool(2, 0.5)
    pool.add(policy("u1"))
    other = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=8, layers=1)
    with pytest.raises(ValueError, match="same architecture"):
        pool.add(policy("u2", other))
    assert pool.members == [0]


def test_a_frozen_policy_is_a_copy():
    params = ref.init_params(SPEC, np.random.default_rng(1))
    frozen = Policy(SPEC, params, "u3")
    params[:] = 0
    assert frozen.params.any()
    np.testing.assert_array_equal(frozen.views["enc.w"], frozen.params[:frozen.views["enc.w"].size].reshape(4, 4))


@pytest.mark.parametrize("latest_prob", [0.0, 0.3, 1.0])
def test_new_games_meet_the_newest_snapshot_with_latest_prob_else_a_uniform_draw(latest_prob):
    members = [10, 11, 12, 13]
    _, pool_key = selfplay_keys(ref.sampling_key(5))
    games = np.arange(4000)
    drawn = np.concatenate([draw_opponents(pool_key, games, len(games), step, members, latest_prob)
                            for step in (-1, 0, 1)])
    share = np.array([(drawn == m).mean() for m in members])
    expected = (1 - latest_prob) / 4 + latest_prob * np.array([0, 0, 0, 1])
    np.testing.assert_allclose(share, expected, atol=0.015)
    again = draw_opponents(pool_key, games[:10], len(games), 0, members, latest_prob)
    np.testing.assert_array_equal(again, drawn[4000:4010])  # counter-based: the same draw for the same step


def test_a_pool_of_one_is_always_drawn():
    _, pool_key = selfplay_keys(1)
    np.testing.assert_array_equal(draw_opponents(pool_key, np.arange(50), 50, 3, [7], 0.0), 7)


def test_a_game_is_won_lost_or_tied_against_the_best_other_seat():
    returns = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, -2.0, -3.0]])
    np.testing.assert_array_equal(game_scores(returns, np.array([0, 0, 1, 2])), [1.0, 0.0, 0.5, 0.0])
    np.testing.assert_array_equal(game_scores(returns, np.array([2, 1, 0, 0])), [0.0, 1.0, 0.5, 1.0])


def test_snapshot_labels_carry_their_update():
    assert _update_of("u120") == 120 and _update_of("u0") == 0
    assert _update_of("bot2") == 0 and _update_of("u") == 0 and _update_of("ux1") == 0
