"""MuJoCo draws off-screen through EGL here unless MUJOCO_GL says otherwise (read when mujoco is first imported)."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
