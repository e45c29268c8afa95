"""Acrobot's opt-in float32 variant (`float32=1`) against Gymnasium's float64 Acrobot-v1 (the oracle): one
RK4 step from states over the whole state space lands within float32 rounding of Gymnasium's, the
termination flag and reward follow its own observation, resets draw from Gymnasium's range, and episodes
run to their ends under the vector env."""

import gymnasium as gym
import numpy as np
import pytest

import fastvec

LOW = [-np.pi, -np.pi, -4 * np.pi, -9 * np.pi]


def test_float32_is_opt_in():
    default = fastvec.make_vec("Acrobot", 2)
    small = fastvec.make_vec("Acrobot", 2, float32=1)
    assert small.unwrapped.batch.slots.shape[1] < default.unwrapped.batch.slots.shape[1]
    assert small.single_observation_space == default.single_observation_space
    assert small.single_action_space == default.single_action_space
    with pytest.raises(ValueError, match=r"float32=2 .* out of range \[0, 1\]"):
        fastvec.make_vec("Acrobot", 2, float32=2)


def test_one_step_tracks_gymnasium_from_any_state():
    n = 2000
    envs = gym.make_vec("fastvec/Acrobot", num_envs=n, float32=1)
    envs.reset(seed=1)
    rng = np.random.default_rng(2)
    envs.set_state(rng.uniform(LOW, np.negative(LOW), (n, 4)))
    start = envs.get_state()  # rounded to float32
    assert np.array_equal(start, start.astype(np.float32))
    actions = rng.integers(0, 3, n)
    obs, rewards, terminated, truncated, _ = envs.step(actions)
    ref = gym.make("Acrobot-v1").unwrapped
    ref.reset(seed=0)
    for i in range(n):
        ref.state = start[i].copy()
        ref_obs = ref.step(int(actions[i]))[0]
        np.testing.assert_allclose(obs[i], ref_obs, rtol=5e-4, atol=5e-4, err_msg=f"state {start[i]}")
    # the flag and reward are the float32 state's own: -cos(t1) - cos(t1 + t2) > 1
    t1, t2 = envs.get_state()[:, 0], envs.get_state()[:, 1]
    height = -np.cos(t1) - np.cos(t1 + t2)
    clear = np.abs(height - 1.0) > 1e-5
    np.testing.assert_array_equal(terminated[clear], height[clear] > 1.0)
    np.testing.assert_array_equal(rewards, np.where(terminated, 0.0, -1.0))
    assert not truncated.any()


def test_episodes_reset_in_gymnasiums_range_and_end():
    n = 512
    envs = gym.make_vec("fastvec/Acrobot", num_envs=n, float32=1)
    obs, _ = envs.reset(seed=3)
    state = envs.get_state()
    assert np.all(np.abs(state) <= 0.1) and len(np.unique(state)) > n
    rng = np.random.default_rng(4)
    ended = 0
    for _ in range(500):
        obs, _, terminated, truncated, _ = envs.step(rng.integers(0, 3, n))
        ended += int(np.sum(terminated | truncated))
    assert ended >= n  # every env reached an end (termination or the 500-step limit) at least once
    assert envs.single_observation_space.contains(obs[0])
