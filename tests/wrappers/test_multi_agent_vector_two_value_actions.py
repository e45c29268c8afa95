"""A batched PettingZoo face over agents whose action is two values (MultiDiscrete([3, 5]), two seats): actions by
row (num_envs, 2) or by seat {agent: (num_games, 2)} reach each seat in order; one value per row or per game is
refused naming the shape it must have."""

from pathlib import Path

import numpy as np
import pytest

from fastvec.native.batches import load_batch
from fastvec.wrappers.pettingzoo import MultiAgentVectorEnv

MULTI = Path(__file__).resolve().parents[1] / "envs" / "multi_discrete.h"  # obs = the agent's action, reward 10a0+a1
GAMES = 3


class TwoValueSeats(MultiAgentVectorEnv):
    """The face over tests/envs/multi_discrete.h with two agents (no built-in multi-agent game takes two values)."""

    def _open(self, name, num_games, max_cycles, params, **batch_args):
        batch = load_batch(MULTI, num_games, {"AGENTS": 2}, max_episode_steps=max_cycles, **batch_args)
        return batch, ["north", "south"], max_cycles, "two_value_seats_v0", 30


@pytest.fixture
def envs():
    envs = TwoValueSeats("two_value_seats", GAMES)
    envs.reset(seed=0)
    yield envs
    envs.close()


def test_two_value_actions_by_row_and_by_seat_reach_each_agent_of_each_game(envs):
    assert envs.num_envs == 2 * GAMES and envs.single_action_space.nvec.tolist() == [3, 5]
    rows = np.array([[g % 3, 2 * a + g] for g in range(GAMES) for a in range(2)], np.int64)  # row g * 2 + a
    obs, rewards, *_ = envs.step(rows)
    np.testing.assert_array_equal(obs, rows.astype(np.float32))
    np.testing.assert_array_equal(rewards, 10 * rows[:, 0] + rows[:, 1])
    by_seat = {"north": rows[0::2][::-1].copy(), "south": rows[1::2][::-1].copy()}
    obs, rewards, *_ = envs.step(by_seat)
    np.testing.assert_array_equal(obs[0::2], by_seat["north"].astype(np.float32))
    np.testing.assert_array_equal(obs[1::2], by_seat["south"].astype(np.float32))
    np.testing.assert_array_equal(rewards[1::2], 10 * by_seat["south"][:, 0] + by_seat["south"][:, 1])


def test_one_value_per_game_for_a_two_value_seat_is_refused_naming_the_shape(envs):
    actions = {"north": np.zeros((GAMES, 2), np.int64), "south": np.zeros(GAMES, np.int64)}
    with pytest.raises(ValueError, match=r"^actions\['south'\] must have shape \(3, 2\) \(one per game\), got \(3,\)$"):
        envs.step(actions)
    actions["south"] = np.zeros((GAMES, 1), np.int64)
    with pytest.raises(ValueError, match=r"actions\['south'\] must have shape \(3, 2\) \(one per game\), got \(3, 1\)"):
        envs.step(actions)


def test_one_value_per_row_for_two_value_agents_is_refused_naming_the_shape(envs):
    for bad in (np.zeros(2 * GAMES, np.int64), np.zeros((2 * GAMES, 1), np.int64), np.zeros((GAMES, 2), np.int64)):
        with pytest.raises(ValueError, match=r"^actions must have shape \(6, 2\) \(num_games \* num_agents rows\) "
                                             r"or be a dict \{agent: \(num_games,\)\}, got "):
            envs.step(bad)
    obs, *_ = envs.step(np.ones((2 * GAMES, 2), np.int64))  # the refusals stepped nothing: the envs go on
    np.testing.assert_array_equal(obs, np.ones((2 * GAMES, 2), np.float32))


def test_a_value_out_of_range_is_named_with_its_row_game_and_agent(envs):
    rows = np.zeros((2 * GAMES, 2), np.int64)
    rows[3, 1] = 5  # row 3: game 1, agent "south", dimension 1 (takes 0 to 4)
    with pytest.raises(ValueError, match=r"^action 5 out of range for MultiDiscrete\(\[3 5\]\) at index 3 \(row 3: "
                                         r"game 1, agent 'south'\)$"):
        envs.step(rows)
    seats = {"north": np.zeros((GAMES, 2), np.int64), "south": np.zeros((GAMES, 2), np.int64)}
    seats["south"][2, 0] = -1  # game 2's south seat
    with pytest.raises(ValueError, match=r"^action -1 out of range for MultiDiscrete\(\[3 5\]\) at index 2 "
                                         r"\(agent 'south'\)$"):
        envs.step(seats)
