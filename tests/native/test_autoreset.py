"""The three Gymnasium autoreset modes, ported from Gymnasium's tests/vector/test_autoreset_mode.py
(a counting env with known outputs), and checked differentially against SyncVectorEnv."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastvec

COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"


def counting_vec(num_envs=2, **kw):
    return fastvec.make_vec_from_source(COUNTING, num_envs, terminate_at=3, **kw)


def test_next_step_mode_exact():
    envs = counting_vec(2, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert envs.autoreset_mode is AutoresetMode.NEXT_STEP
    obs, info = envs.reset(seed=0)
    assert obs.tolist() == [[0.0], [0.0]] and info == {}
    for count in (1, 2):
        obs, rew, term, trunc, info = envs.step(np.array([1, 2]))
        assert obs.tolist() == [[count], [count]]
        assert rew.tolist() == [1.0, 2.0] and not term.any() and not trunc.any() and info == {}
    obs, rew, term, trunc, info = envs.step(np.array([3, 4]))  # count 3: terminates
    assert obs.tolist() == [[3], [3]] and rew.tolist() == [3.0, 4.0]
    assert term.tolist() == [True, True] and not trunc.any()
    assert info["episode_return"].tolist() == [5.0, 8.0] and info["_episode_return"].all()
    assert info["episode_length"].tolist() == [3, 3] and info["count"].tolist() == [3.0, 3.0]
    obs, rew, term, trunc, info = envs.step(np.array([4, 4]))  # the reset step: action ignored
    assert obs.tolist() == [[0], [0]] and rew.tolist() == [0.0, 0.0]
    assert not term.any() and not trunc.any() and info == {}
    obs, *_ = envs.step(np.array([1, 1]))
    assert obs.tolist() == [[1], [1]]


def test_same_step_mode_exact():
    envs = counting_vec(2, autoreset_mode=AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    envs.step(np.array([1, 1]))
    envs.step(np.array([1, 1]))
    obs, rew, term, trunc, info = envs.step(np.array([2, 3]))
    assert obs.tolist() == [[0], [0]]  # already the reset obs
    assert rew.tolist() == [2.0, 3.0] and term.all() and not trunc.any()
    assert info["_final_obs"].tolist() == [True, True] and info["final_obs"].dtype == object
    assert [o.tolist() for o in info["final_obs"]] == [[3.0], [3.0]]
    assert info["_final_info"].all()
    assert info["final_info"]["episode_return"].tolist() == [4.0, 5.0]
    obs, rew, term, trunc, info = envs.step(np.array([1, 1]))
    assert obs.tolist() == [[1], [1]] and rew.tolist() == [1.0, 1.0] and info == {}


def test_disabled_mode_exact_and_reset_mask():
    envs = counting_vec(3, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=0)
    envs.step(np.array([1, 1, 1]))
    partial = {"reset_mask": np.array([False, True, False])}
    obs, info = envs.reset(options=partial)
    assert "reset_mask" in partial, "reset must not pop the caller's options (RecordEpisodeStatistics reads them)"
    assert obs.tolist() == [[1], [0], [1]]  # envs outside the mask keep their last obs
    envs.step(np.array([1, 1, 1]))
    obs, rew, term, trunc, info = envs.step(np.array([1, 1, 1]))
    assert term.tolist() == [True, False, True] and obs.tolist() == [[3], [2], [3]]
    with pytest.raises(RuntimeError, match="reset_mask"):
        envs.step(np.array([1, 1, 1]))
    obs, _ = envs.reset(options={"reset_mask": term})
    assert obs.tolist() == [[0], [2], [0]]
    obs, rew, term, trunc, info = envs.step(np.array([1, 1, 1]))
    assert obs.tolist() == [[1], [3], [1]] and term.tolist() == [False, True, False]


@pytest.mark.parametrize("bad", [np.array([1, 0, 1]), np.zeros(3, bool), np.ones(2, bool), [True, True, True]])
def test_reset_mask_validation(bad):
    envs = counting_vec(3, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=0)
    with pytest.raises((TypeError, ValueError)):
        envs.reset(options={"reset_mask": bad})


def test_truncation_by_max_episode_steps():
    envs = fastvec.make_vec_from_source(COUNTING, 2, terminate_at=100, max_episode_steps=2,
                                        autoreset_mode=AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    envs.step(np.array([0, 0]))
    obs, rew, term, trunc, info = envs.step(np.array([0, 0]))
    assert trunc.all() and not term.any() and obs.tolist() == [[0], [0]]
    assert info["final_info"]["episode_length"].tolist() == [2, 2]


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_cartpole_matches_sync_vector_env(mode):
    """fastvec's batch against SyncVectorEnv over fastvec's own single env, same seeds and actions:
    the batch layer's autoreset, truncation and seeding must equal Gymnasium's reference loop."""
    n, steps, limit = 8, 300, 40
    ours = gym.make_vec("fastvec/CartPole", num_envs=n, autoreset_mode=mode, max_episode_steps=limit)
    sync = SyncVectorEnv([lambda: gym.make("fastvec/CartPole", max_episode_steps=limit)] * n, autoreset_mode=mode)
    rng = np.random.default_rng(0)
    obs_a, _ = ours.reset(seed=7)
    obs_b, _ = sync.reset(seed=7)
    np.testing.assert_array_equal(obs_a, obs_b)
    saw_term = saw_trunc = False
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        a = ours.step(actions)
        b = sync.step(actions)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        if mode == AutoresetMode.SAME_STEP:
            assert a[4].get("_final_obs", np.zeros(n, bool)).tolist() == b[4].get("_final_obs", np.zeros(n, bool)).tolist()
            for i in np.flatnonzero(b[4].get("_final_obs", [])):
                np.testing.assert_array_equal(a[4]["final_obs"][i], b[4]["final_obs"][i])
        done = a[2] | a[3]
        saw_term |= a[2].any()
        saw_trunc |= a[3].any()
        if mode == AutoresetMode.DISABLED and done.any():
            ours.reset(options={"reset_mask": done})
            sync.reset(options={"reset_mask": done.copy()})
    assert saw_term and saw_trunc, "the run must cover both episode ends"
