"""An unseeded first reset of fastvec's MuJoCo env and vector env, as Gymnasium's: it works, two fresh envs draw
different states, and envs given equal np_random generators (as a user may set them) reset alike."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401  (registers fastvec/<Task>-v5)


@pytest.mark.parametrize("task", ["Hopper"])
def test_an_unseeded_first_reset_of_the_single_env_draws_fresh_states_and_follows_np_random(task):
    envs = [gym.make(f"fastvec/{task}-v5") for _ in range(4)]
    first = [env.reset()[0] for env in envs[:2]]  # fresh entropy each
    for obs in first:
        assert envs[0].observation_space.contains(obs), task
    assert not np.array_equal(first[0], first[1]), task
    for env in envs[2:]:  # a user's own generator, as Gymnasium's env.np_random may be set
        env.unwrapped.np_random = np.random.default_rng(73002)
    again = [env.reset()[0] for env in envs[2:]]
    np.testing.assert_array_equal(again[0], again[1])
    assert not np.array_equal(again[0], first[0])
    refs = [gym.make(f"{task}-v5").unwrapped for _ in range(2)]  # Gymnasium's env does the same
    for ref in refs:
        ref.np_random = np.random.default_rng(73002)
    np.testing.assert_array_equal(refs[0].reset()[0], refs[1].reset()[0])
    for env in envs:
        env.close()


def test_an_unseeded_first_reset_of_the_vector_env_draws_each_env_fresh_and_follows_np_random():
    envs = [gym.make_vec("fastvec/Hopper-v5", num_envs=3) for _ in range(4)]
    first = [env.reset()[0] for env in envs[:2]]
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(first[0][0], first[0][1])  # each env of one batch its own stream
    for env in envs[2:]:
        env.np_random = np.random.default_rng(73003)
    again = [env.reset()[0] for env in envs[2:]]
    np.testing.assert_array_equal(again[0], again[1])
    for env in envs:
        env.close()
