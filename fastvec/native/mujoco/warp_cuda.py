"""WarpBatch on a GPU: mj_view.cu's kernels built by nvcc through gpu.py's cubin cache and launched by PyCUDA on
one stream that MuJoCo Warp's kernels run on too, so the physics and the task logic of a step run in order with no
host synchronisation between them (CudaKernels says why PyCUDA, which context and whose stream)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from fastvec.native.mujoco import HERE

THREADS = 256
KERNELS = ("fv_mjv_take", "fv_mjv_act", "fv_mjv_after", "fv_mjv_keep", "fv_mjv_book", "fv_mjv_reset", "fv_mjv_observe")


def view_source(task_file: str) -> str:
    """The translation unit of a task's kernels. mj_view.cu includes the task file through a macro, which the
    cubin cache's include scan cannot follow, so the file's hash is part of the source text (and of the key)."""
    digest = hashlib.sha256((HERE / task_file).read_bytes()).hexdigest()
    return f'/* {task_file} sha256 {digest} */\n#define FV_MJ_TASK_FILE "{task_file}"\n#include "mj_view.cu"\n'


def view_cubin(task_file: str, arch: str) -> bytes:
    """mj_view.cu over task_file built by nvcc for `arch` (e.g. "sm_90") with fastvec's GPU flags, from the build
    cache when a verified one exists: keyed on the sources, flags, arch and nvcc's version, as every GPU build."""
    from fastvec.native.gpu import compile_cubin

    return compile_cubin(view_source(task_file), include_dirs=[HERE], arch=arch,
                         name=f"mujoco_view-{task_file[:-2]}")


def parse_device(device) -> str:
    """Warp's name of `device`: "cpu", or "cuda:N" for "cuda" and "cuda:N"; errors name the accepted forms."""
    text = str(device)
    if text == "cpu":
        return text
    from fastvec.native.cuda_build import parse_device as cuda_index

    return f"cuda:{cuda_index(text)}"


class CudaKernels:
    """One task's kernels loaded on GPU `index` and launched on one PyCUDA stream, a job (warp_batch.ViewJob) by
    value each; `warp_stream` is the same stream as Warp sees it (None when `wp`, the warp module, is not given).

    The launcher is the one fastvec's own GPU envs use: PyCUDA's driver API. Both sides share the device's primary
    context: Warp makes its CUDA devices over their primary contexts, and gpu.primary_context retains and pushes
    that same context for PyCUDA (cuda.Context.attach would attach to whichever context is current, which need not
    be the primary one before Warp has run); the constructor checks that they agree. The stream is created by
    PyCUDA, because PyCUDA launches only on a pycuda.driver.Stream and cannot wrap a foreign handle, while Warp
    can: wp.Stream(device, cuda_stream=handle) makes it Warp's stream for MuJoCo Warp's launches
    (wp.ScopedStream). It is a blocking stream, as CudaBatch's, so work on the legacy default stream (PyTorch's
    default) is ordered with it."""

    def __init__(self, task_file: str, index: int, job_size: int, wp=None):
        from fastvec.native.device_array import STREAMS
        from fastvec.native.gpu import device_arch, driver, primary_context

        drv = driver()
        context = primary_context(index)
        device = None if wp is None else wp.get_device(f"cuda:{index}")
        if device is not None and int(device.context or 0) != int(context.handle):
            raise RuntimeError(f"Warp's cuda:{index} runs in a CUDA context other than the device's primary one, "
                               "which fastvec's kernels use: make Warp's device over the primary context "
                               "(Warp's default) before building a WarpBatch")
        self.module = drv.module_from_buffer(view_cubin(task_file, device_arch(index)))
        self.functions = {name: self.module.get_function(name).prepare(f"{job_size}s") for name in KERNELS}
        self.stream = drv.Stream()
        self.handle = int(self.stream.handle)
        STREAMS[self.handle] = self.stream
        self.warp_stream = None if wp is None else wp.Stream(device, cuda_stream=self.handle)
        self.index, self.drv = index, drv

    def launch(self, name: str, job, num_worlds: int) -> None:
        blocks = max(1, (num_worlds + THREADS - 1) // THREADS)
        self.functions[name].prepared_async_call((blocks, 1, 1), (THREADS, 1, 1), self.stream, bytes(job))

    def synchronize(self) -> None:
        self.stream.synchronize()


@dataclass
class CapturedStep:
    """One WarpBatch step captured as a CUDA graph: launch() replays it on the batch's stream, reading the actions
    from the batch's `actions` device array (float32) and writing its outputs, without the host."""

    graph: object
    stream: object
    wp: object

    def launch(self) -> None:
        self.wp.capture_launch(self.graph, stream=self.stream)


def host_copy(batch, names) -> None:
    """The device outputs `names` of a GPU WarpBatch copied into its host mirrors (waits for its stream)."""
    drv = batch._gpu.drv
    batch._gpu.synchronize()
    for name in names:
        drv.memcpy_dtoh(batch._host[name], batch._buffers[name].ptr)


def device_views(batch, names) -> dict:
    """fastvec DeviceArrays over the batch's buffers `names` (zero-copy, ordered on the batch's stream)."""
    from fastvec.native.device_array import DeviceArray

    return {name: DeviceArray(batch._buffers[name].ptr, *batch._layout[name], batch._buffers[name], batch._gpu.handle,
                              batch._gpu.index) for name in names}
