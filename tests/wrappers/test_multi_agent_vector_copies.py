"""The multi-agent vector env's `copy` switch, as Gymnasium's vector envs define it: with copy=True (the
default) the observations reset and step return are the caller's to keep; with copy=False they are the env's
buffer, which the next step overwrites."""

import numpy as np

from fastvec.wrappers.pettingzoo import vector_env


def play(copy):
    envs = vector_env("Pong", 2, copy=copy)
    first, _ = envs.reset(seed=1)
    kept = first.copy()
    stepped = envs.step(np.ones(envs.num_envs, np.int64))[0]
    kept_step = stepped.copy()
    envs.step(np.full(envs.num_envs, 2, np.int64))
    return first, kept, stepped, kept_step


def test_copied_observations_stay_as_they_were_returned():
    first, kept, stepped, kept_step = play(True)
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(stepped, kept_step)
    assert not np.shares_memory(first, stepped)


def test_uncopied_observations_are_the_envs_buffer():
    first, kept, stepped, kept_step = play(False)
    assert np.shares_memory(first, stepped)
    assert not np.array_equal(stepped, kept_step)  # the last step wrote into it
    assert not np.array_equal(first, kept)
