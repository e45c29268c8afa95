"""The MinAtar games' GPU step (batch_gpu.h's kernels over minatar_*.h) without a GPU, on
tests/emulation/gpu_on_cpu.cpp: every buffer and every env's state equal the CPU batch's after each
step, through truncations, autoresets and masked resets, in every autoreset mode."""

import pytest
from test_env_step_kernels import build  # noqa: F401  (build: the harness fixture; its ENVS list the games)
from test_env_step_kernels import (
    test_emulated_gpu_steps_equal_the_cpu_batch as check_steps,
)

# Every game and every autoreset mode, each kernel family (Seaquest's state and observation, about 1.6 KB
# an env, stage 16 envs a block: blocks of half a warp); the GPU tests (tests/native/test_minatar_gpu.py)
# run every game in every mode on the device.
CASES = [("asterix-minatar", "NextStep", "wide"), ("breakout-minatar", "SameStep", "staged_wide"),
         ("breakout-minatar", "Disabled", "wide"), ("freeway-minatar", "Disabled", "staged_wide"),
         ("seaquest-minatar", "SameStep", "staged_wide"), ("seaquest-minatar", "Disabled", "wide"),
         ("spaceinvaders-minatar", "NextStep", "staged_wide"), ("spaceinvaders-minatar", "SameStep", "wide")]


@pytest.mark.parametrize("env_name,mode,kernel", CASES)
def test_emulated_gpu_steps_equal_the_cpu_batch(build, env_name, mode, kernel):  # noqa: F811
    check_steps(build, env_name, mode, kernel)
