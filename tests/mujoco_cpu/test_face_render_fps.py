"""The MuJoCo faces' render_fps is Gymnasium's own task's (its metadata, 1 / dt rounded half to even), for the
single env and the vector env, at each task's frame_skip and at others."""

import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym

import fastvec  # noqa: F401
from fastvec.native.mujoco import TASKS


def _fps(env) -> int:
    fps = env.metadata["render_fps"]
    env.close()
    return fps


@pytest.mark.parametrize("task", list(TASKS))
def test_each_tasks_render_fps_is_gymnasiums(task):
    want = _fps(gym.make(f"{task}-v5"))
    assert _fps(gym.make(f"fastvec/{task}-v5")) == want
    assert _fps(gym.make_vec(f"fastvec/{task}-v5", num_envs=2)) == want


@pytest.mark.parametrize("task,frame_skip,fps", [("Hopper", 8, 62), ("Hopper", 2, 250), ("Reacher", 3, 33),
                                                 ("Humanoid", 3, 111)])
def test_another_frame_skip_gives_gymnasiums_render_fps(task, frame_skip, fps):
    """Hopper at frame_skip 8: dt 0.016, 62.5 frames a second, which Gymnasium rounds to 62."""
    assert _fps(gym.make(f"{task}-v5", frame_skip=frame_skip)) == fps
    assert _fps(gym.make(f"fastvec/{task}-v5", frame_skip=frame_skip)) == fps
    assert _fps(gym.make_vec(f"fastvec/{task}-v5", num_envs=2, frame_skip=frame_skip)) == fps
