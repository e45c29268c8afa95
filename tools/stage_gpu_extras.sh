#!/usr/bin/env bash
# Run here, from the repo root, after ../shared/gpu/stage.sh: adds to .gpu/ the wheels that the GPU suite's oracle
# and MuJoCo tests import and the GPU machine lacks (mujoco 3.3.7 with glfw and PyOpenGL, minatar, mpe2), as
# CPython 3.12 manylinux wheels; .gpu/remote.sh installs every wheel in .gpu/ there.
set -euo pipefail
[ -f .gpu/remote.sh ] || { echo "run ../shared/gpu/stage.sh first (it makes .gpu/)"; exit 1; }
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .gpu mujoco==3.3.7 glfw pyopengl minatar==1.0.15 mpe2==1.1.1
du -sh .gpu
