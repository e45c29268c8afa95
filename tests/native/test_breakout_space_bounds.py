"""Breakout's declared observation space: Box(-1, 1, (118,), float32) on every entry, the range its normalised
observation really spans (the ball's velocity entries go negative, the bricks reach 1)."""

import gymnasium as gym
import numpy as np

import fastvec  # noqa: F401  (registers fastvec/...)


def test_every_observation_entry_is_declared_in_minus_one_to_one():
    envs = gym.make_vec("fastvec/Breakout", num_envs=8)
    space = envs.single_observation_space
    assert isinstance(space, gym.spaces.Box) and space.shape == (118,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, np.full(118, -1.0, np.float32))
    np.testing.assert_array_equal(space.high, np.full(118, 1.0, np.float32))
    single = gym.make("fastvec/Breakout").observation_space
    np.testing.assert_array_equal(single.low, space.low)
    np.testing.assert_array_equal(single.high, space.high)
    obs, _ = envs.reset(seed=5)
    lowest, highest = obs.min(axis=0), obs.max(axis=0)
    rng = np.random.default_rng(5)
    for _ in range(100):
        obs, *_ = envs.step(rng.integers(0, 3, 8))
        assert space.contains(obs[0]) and np.all(obs >= -1) and np.all(obs <= 1)
        lowest, highest = np.minimum(lowest, obs.min(axis=0)), np.maximum(highest, obs.max(axis=0))
    assert lowest[4] < 0 and lowest[5] < 0 and highest[4] > 0 and highest[5] > 0  # the ball's velocity both ways
    assert highest[10:].max() == 1.0
