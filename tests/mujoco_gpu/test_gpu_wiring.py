"""What of the MuJoCo tasks' GPU path is checkable without a GPU or MuJoCo Warp: the face routes device= and
array_type= (the tasks MJWarp cannot run refused in one line naming the solver, bad values named), the kernels'
cubin comes from nvcc through the build cache keyed on every source, and ctypes' job matches the C struct."""

import shutil

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the MuJoCo tasks need the mujoco package")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402, F401  (registers the fastvec/ ids)
from fastvec.native.mujoco import HERE, MujocoBatch  # noqa: E402
from fastvec.native.mujoco.warp_batch import KERNELS, ViewJob, mujoco_batch, view_library  # noqa: E402
from fastvec.native.mujoco.warp_cuda import view_cubin, view_source  # noqa: E402


@pytest.mark.parametrize("task", ["Humanoid", "HumanoidStandup"])
def test_the_gpu_refuses_the_pgs_tasks_in_one_line(task):
    with pytest.raises(ValueError, match=f"^{task}-v5 on MuJoCo Warp: its model uses the PGS constraint solver, "
                                         "which MuJoCo Warp does not have") as e:
        gym.make_vec(f"fastvec/{task}-v5", num_envs=2, device="cuda")
    assert "\n" not in str(e.value) and "device='cpu'" in str(e.value)


@pytest.mark.parametrize("keywords, message", [
    ({"device": "tpu"}, "device='tpu' is not one of 'cpu', 'cuda', 'cuda:N'"),
    ({"device": "cuda:x"}, "device='cuda:x' is not one of"),
    ({"array_type": "device"}, "array_type='device' needs a GPU env: pass device='cuda'"),
    ({"device": "cuda", "array_type": "torch"}, "array_type='torch' is not one of 'numpy', 'device'"),
])
def test_bad_device_and_array_type_are_named(keywords, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gym.make_vec("fastvec/Hopper-v5", num_envs=2, **keywords)


def test_the_cpu_stays_libmujocos_batch():
    env = gym.make_vec("fastvec/Hopper-v5", num_envs=2, device="cpu")
    assert type(env.unwrapped.batch) is MujocoBatch
    obs, _ = env.reset(seed=3)
    assert obs.dtype == np.float64 and obs.shape == (2, 11)
    env.close()


def test_a_users_task_file_is_refused_on_the_gpu():
    with pytest.raises(ValueError, match="a task file of your own runs on the CPU only"):
        mujoco_batch(None, 2, device="cuda", source=HERE / "hopper.c")


def test_the_job_struct_of_ctypes_is_the_c_one():
    import ctypes

    layout = np.zeros(4, np.int64)
    view_library("hopper.c").fv_mjv_job_layout(layout.ctypes.data)
    assert layout.tolist() == [ctypes.sizeof(ViewJob), ViewJob.given.offset, ViewJob.error.offset,
                               ViewJob.max_episode_steps.offset]


def test_the_task_files_hash_keys_the_cubin():
    # mj_view.cu includes the task by a macro, which the cache's include scan does not follow
    source = view_source("hopper.c")
    assert '#define FV_MJ_TASK_FILE "hopper.c"' in source
    assert view_source("walker2d.c") != source.replace("hopper", "walker2d")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (the CUDA toolkit)")
def test_the_cubin_holds_every_kernel_and_comes_from_the_build_cache(monkeypatch):
    from fastvec.native import gpu

    cubin = view_cubin("hopper.c", "sm_90")
    assert cubin[:4] == b"\x7fELF"
    for name in KERNELS:
        assert name.encode() in cubin, name

    def no_nvcc(cmd):
        raise AssertionError(f"nvcc ran again for an unchanged build: {cmd}")

    monkeypatch.setattr(gpu, "_run_nvcc", no_nvcc)
    assert view_cubin("hopper.c", "sm_90") == cubin
