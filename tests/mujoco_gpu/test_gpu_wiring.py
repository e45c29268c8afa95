"""What of the MuJoCo tasks' GPU path is checkable without a GPU or MuJoCo Warp: the face routes device= and
array_type= (the tasks MJWarp cannot run refused in one line naming the solver, bad values named), the kernels'
cubin comes from nvcc through the build cache keyed on every source, and ctypes' job matches the C struct."""

import shutil
import types

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


class _FakeDriver:
    """pycuda.driver's part CudaKernels uses: a module of prepared functions and a stream with a handle."""

    class Stream:
        handle = 0x5EED

    class _Function:
        def prepare(self, _):
            return self

    def module_from_buffer(self, cubin):
        return types.SimpleNamespace(get_function=lambda name: self._Function())


class _FakeWarp:
    """The warp module's part CudaKernels uses: a device in context `context` and streams over foreign handles."""

    def __init__(self, context):
        self.device = types.SimpleNamespace(context=context)

    def get_device(self, name):
        return self.device

    def Stream(self, device, cuda_stream):  # noqa: N802 (Warp's name)
        return ("warp stream", device, cuda_stream)


@pytest.fixture
def no_gpu_kernels(monkeypatch):
    """CudaKernels' GPU calls replaced: the primary context's handle is 0xC0, the cubin a stub; its streams are
    registered in a table of this test's own."""
    from fastvec.native import device_array, gpu
    from fastvec.native.mujoco import warp_cuda

    monkeypatch.setattr(gpu, "driver", _FakeDriver)
    monkeypatch.setattr(gpu, "primary_context", lambda index: types.SimpleNamespace(handle=0xC0))
    monkeypatch.setattr(gpu, "device_arch", lambda index: "sm_90")
    monkeypatch.setattr(warp_cuda, "view_cubin", lambda task_file, arch: b"cubin")
    monkeypatch.setattr(device_array, "STREAMS", {})
    return warp_cuda.CudaKernels


def test_warp_launches_on_the_stream_the_task_kernels_launch_on(no_gpu_kernels):
    """Given Warp, CudaKernels hands it its own stream (Warp's wrapper over that handle), so MuJoCo Warp's physics
    and the task kernels run in order on one stream; without Warp there is no Warp stream."""
    from fastvec.native import device_array

    wp = _FakeWarp(context=0xC0)
    kernels = no_gpu_kernels("hopper.c", 0, 8, wp=wp)
    assert kernels.warp_stream == ("warp stream", wp.device, 0x5EED) and device_array.STREAMS[0x5EED] is kernels.stream
    assert no_gpu_kernels("hopper.c", 0, 8).warp_stream is None


@pytest.mark.parametrize("context", [0xD0, None])
def test_a_warp_device_outside_the_primary_context_is_refused(no_gpu_kernels, context):
    with pytest.raises(RuntimeError, match="Warp's cuda:0 runs in a CUDA context other than the device's primary"):
        no_gpu_kernels("hopper.c", 0, 8, wp=_FakeWarp(context))


@pytest.mark.parametrize("task_file", ["ant.c", "humanoid.c", "humanoid_standup.c"])
def test_each_tasks_cubin_is_built_under_the_tasks_own_name(task_file, monkeypatch):
    """view_cubin hands the build cache the task's name (the file's stem) for the cubin's file name, with the
    task's own source and the arch asked for; no nvcc is run here (compile_cubin is stood in for)."""
    import fastvec.native.gpu as gpu

    seen = {}

    def fake_compile_cubin(source, include_dirs=(), arch="", name="module", **kw):
        seen.update(source=source, include_dirs=list(include_dirs), arch=arch, name=name)
        return b"cubin"

    monkeypatch.setattr(gpu, "compile_cubin", fake_compile_cubin)
    assert view_cubin(task_file, "sm_90") == b"cubin"
    assert seen == {"source": view_source(task_file), "include_dirs": [HERE], "arch": "sm_90",
                    "name": "mujoco_view-" + task_file.split(".")[0]}


@pytest.mark.parametrize("num_worlds, blocks", [(0, 1), (1, 1), (255, 1), (256, 1), (257, 2), (512, 2), (513, 3),
                                                (4096, 16)])
def test_a_kernel_launch_covers_every_world_with_blocks_of_256_threads(num_worlds, blocks):
    """CudaKernels.launch asks for ceil(num_worlds / 256) blocks of 256 threads (at least one block), on the
    batch's stream, with the job passed by value as its bytes; no GPU needed (the prepared function is stood in
    for)."""
    import ctypes

    from fastvec.native.mujoco.warp_cuda import THREADS, CudaKernels

    calls = []

    class Prepared:
        def prepared_async_call(self, grid, block, stream, *args):
            calls.append((grid, block, stream, args))

    kernels = CudaKernels.__new__(CudaKernels)
    kernels.functions, kernels.stream = {"fv_mjv_step": Prepared()}, object()
    job = ViewJob()
    job.obs_size = 7
    kernels.launch("fv_mjv_step", job, num_worlds)
    assert THREADS == 256
    assert calls == [((blocks, 1, 1), (256, 1, 1), kernels.stream, (bytes(job),))]
    assert blocks * 256 >= num_worlds > (blocks - 1) * 256 or num_worlds == 0
    assert len(calls[0][3][0]) == ctypes.sizeof(ViewJob)
