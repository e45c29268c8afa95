"""The single MuJoCo env (gym.make) over a simulation MuJoCo cannot integrate: the step ends the episode and says
so in its info (`unstable` True), as the vector env's flag does; a stable step's info has no such key."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym

import fastvec  # noqa: F401


def test_an_unstable_step_of_the_single_env_ends_its_episode_flagged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning also goes to MUJOCO_LOG.TXT in the working directory
    env = gym.make("fastvec/Hopper-v5")
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step(np.zeros(3, np.float32))
    assert not terminated and not truncated and "unstable" not in info
    state = env.unwrapped.state.copy()
    state[6:] = 1e300  # velocities MuJoCo cannot integrate
    env.unwrapped.set_state(state[:6], state[6:])
    _, _, terminated, truncated, info = env.step(np.zeros(3, np.float32))
    assert terminated and not truncated
    assert info["unstable"] is True
    env.close()
