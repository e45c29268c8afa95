"""Frames of the MuJoCo tasks: Gymnasium's renderer, camera and size keywords, the same picture as Gymnasium's own
env draws of the same state."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401


def gymnasium_frame_or_skip(env):
    try:
        return env.render()
    except Exception as err:  # no OpenGL off-screen context on this machine (EGL / OSMesa libraries)
        pytest.skip(f"MuJoCo cannot draw off-screen here ({type(err).__name__}: {err}); set MUJOCO_GL to a working backend")


@pytest.mark.parametrize("task", ["Ant", "Hopper", "InvertedDoublePendulum"])
def test_frame_of_a_state_equals_gymnasiums(task):
    oracle = gym.make(f"{task}-v5", render_mode="rgb_array", width=160, height=120)
    ours = gym.make(f"fastvec/{task}-v5", render_mode="rgb_array", width=160, height=120)
    oracle.reset(seed=0)
    ours.reset(seed=0)
    data = oracle.unwrapped.data
    ours.unwrapped.set_state(data.qpos, data.qvel)
    want = gymnasium_frame_or_skip(oracle)
    got = ours.render()
    assert got.shape == (120, 160, 3) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    oracle.close()
    ours.close()


def test_vector_env_draws_every_env():
    envs = gym.make_vec("fastvec/HalfCheetah-v5", num_envs=3, render_mode="rgb_array", width=64, height=48)
    envs.reset(seed=0)
    envs.step(envs.action_space.sample())
    gymnasium_frame_or_skip(gym.make("HalfCheetah-v5", render_mode="rgb_array", width=64, height=48).unwrapped)
    frames = envs.render()
    assert len(frames) == 3 and all(f.shape == (48, 64, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[1])  # each env's own state
    envs.close()


def test_window_mode_is_refused():
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gym.make_vec("fastvec/Ant-v5", num_envs=2, render_mode="human")
