"""Resets with a list of seeds that holds Nones, on the Gymnasium vector face, against SyncVectorEnv over
fastvec's single envs (Gymnasium's own rule: an int seeds that env, None lets it go on with its own stream)."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastvec  # noqa: F401  (registers the fastvec/ ids)


def assert_same(a, b):
    for x, y in zip(a[:4], b[:4]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_a_full_reset_with_nones_reseeds_only_the_given_envs(mode):
    n = 4
    ours = gym.make_vec("fastvec/CartPole", num_envs=n, autoreset_mode=mode)
    sync = SyncVectorEnv([lambda: gym.make("fastvec/CartPole")] * n, autoreset_mode=mode)
    np.testing.assert_array_equal(ours.reset(seed=[1, 2, 3, 4])[0], sync.reset(seed=[1, 2, 3, 4])[0])
    rng = np.random.default_rng(0)
    for seeds in ([None, 9, None, 9], [None] * n, None, [5, None, None, None]):
        for _ in range(30):
            actions = rng.integers(0, 2, n)
            assert_same(ours.step(actions), sync.step(actions))
        a, _ = ours.reset(seed=seeds)
        b, _ = sync.reset(seed=seeds)
        np.testing.assert_array_equal(a, b)
    a, _ = ours.reset(seed=[7, None, 7, None])
    np.testing.assert_array_equal(a[0], a[2])


def test_the_first_reset_draws_a_seed_for_each_none_and_the_draws_follow_the_given_base():
    ours = gym.make_vec("fastvec/CartPole", num_envs=3)
    a, _ = ours.reset(seed=[None, 4, None])
    assert not np.array_equal(a[0], a[2])  # each None drew its own seed
    single = gym.make("fastvec/CartPole")
    np.testing.assert_array_equal(a[1], single.reset(seed=4)[0])
