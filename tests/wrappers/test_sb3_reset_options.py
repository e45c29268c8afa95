"""The SB3 adapter's reset takes the options SB3's set_options() gave it to the vector env (a partial reset by
Gymnasium's reset_mask, a bad mask refused), once."""

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from fastvec.wrappers.sb3 import FastvecVecEnv  # noqa: E402


def test_set_options_reach_the_next_reset_only():
    venv = FastvecVecEnv("fastvec/CartPole", 3)
    venv.seed(0)
    venv.reset()
    for _ in range(3):
        obs, _, done, _ = venv.step(np.ones(3, np.int64))
    assert not done.any()
    venv.set_options({"reset_mask": np.array([True, False, False])})
    again = venv.reset()
    np.testing.assert_array_equal(again[1:], obs[1:])  # left alone
    assert not np.array_equal(again[0], obs[0])
    for _ in range(2):
        obs, *_ = venv.step(np.ones(3, np.int64))
    fresh = venv.reset()  # the options were used once: every env resets now
    assert not (fresh == obs).all(axis=1).any()
    venv.set_options({"reset_mask": np.zeros(3, bool)})
    with pytest.raises(ValueError, match="at least one True"):
        venv.reset()
