"""Every task file builds over MuJoCo Warp's arrays (mj_view.cu with -DFV_MJ_VIEW): by the host's C++ compiler,
warnings as errors, and, where nvcc is installed, for the GPU (sm_90); no MuJoCo Warp needed."""

import shutil
import subprocess

import pytest

from fastvec.native.mujoco import HERE, TASKS
from fastvec.native.mujoco.warp_batch import CXX_FLAGS, task_file


@pytest.mark.parametrize("task", list(TASKS))
def test_task_builds_over_warp_arrays_on_the_host(task, tmp_path):
    from fastvec.native.cpu import find_compiler

    cmd = [*find_compiler(), *CXX_FLAGS, "-Wall", "-Wextra", "-Werror", f'-DFV_MJ_TASK_FILE="{task_file(task)}"',
           f"-I{HERE}", str(HERE / "mj_view.cu"), "-o", str(tmp_path / "view.so")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (the CUDA toolkit)")
@pytest.mark.parametrize("task", ["Hopper", "Humanoid", "Pusher"])
def test_task_builds_over_warp_arrays_with_nvcc(task, tmp_path):
    from fastvec.native.gpu import NVCC_FLAGS

    cmd = ["nvcc", "-arch=sm_90", "-c", *NVCC_FLAGS, f'-DFV_MJ_TASK_FILE="{task_file(task)}"', f"-I{HERE}",
           str(HERE / "mj_view.cu"), "-o", str(tmp_path / "view.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
