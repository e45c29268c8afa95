"""The faces' inputs: a bad action refused by the AEC face before it is taken, make_vec's keywords, seeds
and Box actions beyond float32's range checked as Gymnasium would, each refusal one line that names the
value and what is accepted."""

import gymnasium as gym
import numpy as np
import pytest

import fastvec  # noqa: F401  (registers the fastvec/ ids)
from fastvec.pettingzoo import env as aec_env


# ------------------------------------------------------------------ the AEC face
@pytest.mark.parametrize("bad", [99, -1, 1.5, "up"])
def test_aec_refuses_a_bad_action_when_given_and_keeps_playing(bad):
    e, twin = aec_env("Pong"), aec_env("Pong")
    e.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises((ValueError, TypeError), match=r"agent 'left'") as err:
        e.step(bad)
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)
    assert "\n" not in str(err.value)
    assert e.agent_selection == "left"  # the bad action was not taken: still left's turn
    for action in (1, 2, 0, 1):  # later valid steps play on, as the twin that never saw the bad action
        e.step(action)
        twin.step(action)
        assert e.agent_selection == twin.agent_selection
    for agent in e.possible_agents:
        np.testing.assert_array_equal(e.observe(agent), twin.observe(agent))
    assert e.rewards == twin.rewards


def test_aec_after_the_game_ends_still_takes_none():
    e = aec_env("CartPole", max_cycles=2)
    e.reset(seed=0)
    while e.agents:
        e.step(None if e.terminations[e.agent_selection] or e.truncations[e.agent_selection] else 0)
    assert e.agents == []
