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


@pytest.mark.parametrize("nips", [0, 1])
def test_one_step_tracks_gymnasium_from_any_state(nips):
    """The book's dynamics, and with nips=1 the NeurIPS paper's (Gymnasium's book_or_nips="nips")."""
    n = 2000
    envs = gym.make_vec("fastvec/Acrobot", num_envs=n, float32=1, nips=nips)
    envs.reset(seed=1)
    rng = np.random.default_rng(2)
    envs.set_state(rng.uniform(LOW, np.negative(LOW), (n, 4)))
    start = envs.get_state()  # rounded to float32
    assert np.array_equal(start, start.astype(np.float32))
    actions = rng.integers(0, 3, n)
    obs, rewards, terminated, truncated, _ = envs.step(actions)
    ref = gym.make("Acrobot-v1").unwrapped
    ref.book_or_nips = "nips" if nips else "book"
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


def _cos_of(envs, angles):
    """The variant's own float32 cos of each angle: the observation's cos(theta1) right after a set state."""
    states = np.zeros((len(angles), 4))
    states[:, 0] = angles
    envs.set_state(states)
    return envs.unwrapped.batch.obs[:, 0, 0].copy()


def test_float32_a_height_of_exactly_one_does_not_terminate():
    """Termination is -cos(t1) - cos(t1 + t2) > 1, strictly (Gymnasium's and gymnax's): over starts at rest around
    the crossing (a float32 grid of theta1 for several theta2), the flag after one step is exactly the strict test of
    the height computed in float32 from the stepped state with the variant's own cos, and some steps land on a height
    of exactly 1.0 (not terminated)."""
    f32 = np.float32
    grid = np.arange(-40, 40, dtype=np.int32)
    rows, theta2 = [], np.linspace(-0.8, 0.8, 24)
    for t2 in theta2:
        base = f32(2.0944 - t2 / 2)
        rows.append(np.stack([(base.view(np.int32) + grid).view(np.float32), np.full(len(grid), t2, f32)], 1))
    starts = np.concatenate(rows).astype(np.float64)
    n = len(starts)
    envs = gym.make_vec("fastvec/Acrobot", num_envs=n, float32=1)
    envs.reset(seed=0)
    def height_after_step(t1, t2):
        envs.reset(seed=0)  # clears a pending autoreset of the last probe's terminated envs
        envs.set_state(np.tile([t1, t2, 0.0, 0.0], (n, 1)))
        envs.step(np.ones(n, np.int64))
        s = envs.get_state()[0]
        return -np.cos(s[0]) - np.cos(s[0] + s[1])

    for row in range(len(theta2)):  # shift each row's grid onto the start whose step ends nearest the height 1
        sl = slice(row * len(grid), (row + 1) * len(grid))
        t2 = starts[sl][0, 1]
        a, b = 1.6 - t2 / 2, 2.6 - t2 / 2
        rising = height_after_step(a, t2) < 1.0
        assert rising == (height_after_step(b, t2) > 1.0)
        for _ in range(40):
            mid = (a + b) / 2
            a, b = (mid, b) if (height_after_step(mid, t2) < 1.0) == rising else (a, mid)
        starts[sl, 0] = (np.float32(a).view(np.int32) + grid).view(np.float32)
    full = np.zeros((n, 4))
    full[:, :2] = starts
    envs.reset(seed=0)
    envs.set_state(full)
    _, rewards, terminated, _, _ = envs.step(np.ones(n, np.int64))
    after = envs.get_state().astype(np.float32)
    t1, t12 = after[:, 0], after[:, 0] + after[:, 1]
    height = -_cos_of(envs, t1.astype(np.float64)) - _cos_of(envs, t12.astype(np.float64))
    np.testing.assert_array_equal(terminated, height > f32(1.0))
    np.testing.assert_array_equal(rewards, np.where(terminated, 0.0, -1.0))
    assert (height == f32(1.0)).sum() >= 2 and terminated.sum() >= 100 and (~terminated).sum() >= 100
