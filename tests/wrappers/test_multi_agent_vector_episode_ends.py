"""The multi-agent vector env's episode ends, row by row, against the parallel env playing each game alone:
every seat's final observation, return, length and game statistics in the infos, and the rows flagged."""

import numpy as np
import pytest

from fastvec.wrappers.pettingzoo import parallel_env, vector_env


def test_each_seats_final_observation_and_episode_info_are_its_games_at_the_end():
    games, seed = 3, 11
    envs = vector_env("Pong", games, points=1)
    agents = envs.possible_agents
    solo = [parallel_env("Pong", points=1) for _ in range(games)]
    envs.reset(seed=seed)
    for g, env in enumerate(solo):
        env.reset(seed=seed + g)  # game g of a vector env reset with `seed` is seeded with seed + g
    rng = np.random.default_rng(3)
    ended = np.zeros(games, bool)
    for _ in range(4000):
        actions = rng.integers(0, 3, envs.num_envs)
        _, rewards, terminated, truncated, infos = envs.step(actions)
        for g in np.flatnonzero(~ended):
            obs, rew, term, trunc, info = solo[g].step({a: actions[2 * g + i] for i, a in enumerate(agents)})
            for i, a in enumerate(agents):
                assert rewards[2 * g + i] == rew[a]
                assert terminated[2 * g + i] == term[a] and truncated[2 * g + i] == trunc[a]
            if term[agents[0]] or trunc[agents[0]]:
                ended[g] = True
                final = infos["final_info"]
                for i, a in enumerate(agents):
                    r = 2 * g + i
                    assert infos["_final_obs"][r] and infos["_final_info"][r]
                    np.testing.assert_array_equal(infos["final_obs"][r], obs[a])
                    np.testing.assert_array_equal(infos["terminal_observation"][r], obs[a])
                    assert final["_episode_return"][r] and final["_episode_length"][r]
                    assert final["episode_return"][r] == info[a]["episode_return"]
                    assert final["episode_length"][r] == info[a]["episode_length"]
                    for stat in envs.stat_names:
                        assert final["_" + stat][r] and final[stat][r] == info[a][stat]
        if infos:
            done_rows = np.repeat(terminated[::2] | truncated[::2], 2)
            np.testing.assert_array_equal(infos["_final_obs"], done_rows)
            np.testing.assert_array_equal(infos["_final_info"], done_rows)
            assert all(infos["final_obs"][r] is None for r in np.flatnonzero(~done_rows))
        else:
            assert not (terminated | truncated).any()
        if ended.all():
            break
    assert ended.all()


def test_the_two_seats_of_a_game_get_their_own_returns():
    envs = vector_env("Pong", 2, points=1)
    envs.reset(seed=5)
    rng = np.random.default_rng(0)
    totals = np.zeros(envs.num_envs)
    for _ in range(4000):
        _, rewards, terminated, truncated, infos = envs.step(rng.integers(0, 3, envs.num_envs))
        totals += rewards
        if infos:
            rows = np.flatnonzero(infos["_final_info"])
            np.testing.assert_allclose(infos["final_info"]["episode_return"][rows], totals[rows])
            assert sorted(infos["final_info"]["episode_return"][rows[:2]]) == [-1.0, 1.0]  # one point, zero-sum
            break
    else:
        pytest.fail("no game ended")


def test_a_step_limit_truncates_every_seat_with_the_length_in_the_infos():
    envs = vector_env("Pong", 2, max_cycles=7)
    envs.reset(seed=0)
    for t in range(1, 8):
        _, _, terminated, truncated, infos = envs.step(np.ones(envs.num_envs, np.int64))
    assert truncated.all() and not terminated.any()
    np.testing.assert_array_equal(infos["final_info"]["episode_length"], 7)
    assert infos["_final_info"].all()
