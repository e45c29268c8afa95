"""Frames of the MuJoCo tasks: Gymnasium's renderer, camera and size keywords, the same picture as Gymnasium's own
env draws of the same state. Drawing runs in a child process with MuJoCo's off-screen EGL context (MUJOCO_GL=egl
unless set): a machine without OpenGL can abort the process that tries, which must not be pytest's."""

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401

NO_GL = 77  # the child's exit status where MuJoCo cannot draw off-screen

DRAW = textwrap.dedent("""
    import sys
    import numpy as np
    import gymnasium as gym
    import fastvec
    try:
        probe = gym.make("HalfCheetah-v5", render_mode="rgb_array", width=32, height=32)
        probe.reset(seed=0)
        probe.render()
    except Exception as err:
        print(f"{type(err).__name__}: {err}")
        sys.exit(%d)
    print("can draw", flush=True)
    for task in ("Ant", "Hopper", "InvertedDoublePendulum"):
        oracle = gym.make(f"{task}-v5", render_mode="rgb_array", width=160, height=120)
        ours = gym.make(f"fastvec/{task}-v5", render_mode="rgb_array", width=160, height=120)
        oracle.reset(seed=0)
        ours.reset(seed=0)
        data = oracle.unwrapped.data
        ours.unwrapped.set_state(data.qpos, data.qvel)
        got, want = ours.render(), oracle.render()
        assert got.shape == (120, 160, 3) and got.dtype == np.uint8, got.shape
        np.testing.assert_array_equal(got, want, err_msg=task)
    envs = gym.make_vec("fastvec/HalfCheetah-v5", num_envs=3, render_mode="rgb_array", width=64, height=48)
    envs.reset(seed=0)
    envs.step(envs.action_space.sample())
    frames = envs.render()
    assert len(frames) == 3 and all(f.shape == (48, 64, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[1])  # each env's own state
    print("drawn")
""" % NO_GL)


def test_frames_equal_gymnasiums_and_every_env_draws():
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env.setdefault("PYOPENGL_PLATFORM", env["MUJOCO_GL"] if env["MUJOCO_GL"] in ("egl", "osmesa") else "")
    proc = subprocess.run([sys.executable, "-c", DRAW], capture_output=True, text=True, env=env, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if proc.returncode == NO_GL or "can draw" not in proc.stdout:  # refused, or died trying
        pytest.skip(f"MuJoCo cannot draw off-screen here ({(proc.stdout + proc.stderr).strip()[-300:]}); set MUJOCO_GL to a working backend")
    assert proc.returncode == 0 and "drawn" in proc.stdout, proc.stdout + proc.stderr


def test_window_mode_is_refused():
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        gym.make_vec("fastvec/Ant-v5", num_envs=2, render_mode="human")


def test_the_renderer_takes_gymnasiums_default_keywords_and_the_users(monkeypatch):
    """The frames' MujocoRenderer is made with Gymnasium's MujocoEnv defaults (size 480 x 480, max_geom, no camera
    id or name, no visual options) and the task's default camera, or with the keywords the user gave; nothing is
    drawn (a stand-in renderer records its arguments)."""
    import inspect

    import numpy as np
    from gymnasium.envs.mujoco import mujoco_rendering
    from gymnasium.envs.mujoco.hopper_v5 import HopperEnv
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

    made = []

    class Recorder:
        def __init__(self, model, data, default_cam_config=None, width=None, height=None, max_geom=1000,
                     camera_id=None, camera_name=None, visual_options=None):
            made.append(dict(default_cam_config=default_cam_config, width=width, height=height, max_geom=max_geom,
                             camera_id=camera_id, camera_name=camera_name, visual_options=visual_options))

        def render(self, mode):
            return np.zeros((2, 2, 3), np.uint8)

        def close(self):
            pass

    monkeypatch.setattr(mujoco_rendering, "MujocoRenderer", Recorder)
    defaults = {k: p.default for k, p in inspect.signature(MujocoEnv.__init__).parameters.items()}
    camera = inspect.signature(HopperEnv.__init__).parameters["default_camera_config"].default
    env = gym.make("fastvec/Hopper-v5", render_mode="rgb_array")
    env.reset(seed=0)
    env.render()
    want = {k: defaults[k] for k in ("width", "height", "max_geom", "camera_id", "camera_name")}
    assert made[-1] == {**want, "default_cam_config": camera, "visual_options": None}
    assert defaults["visual_options"] is None and camera is not None
    env.close()
    given = {"width": 64, "height": 48, "max_geom": 50, "camera_id": 0, "visual_options": {2: True}}
    env = gym.make("fastvec/Hopper-v5", render_mode="rgb_array", **given)
    env.reset(seed=0)
    env.render()
    assert made[-1] == {**want, **given, "default_cam_config": camera}
    env.close()
