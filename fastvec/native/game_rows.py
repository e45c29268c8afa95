"""A multi-agent GPU batch seen by rows (row = game * agents + agent, SuperSuit's layout) without leaving the
GPU: per-row flags and episode facts from the per-game ones, and one seat's device actions into the batch's
(games, agents) actions (game_rows.cu). Used by the PettingZoo vector env with array_type="device"."""

from __future__ import annotations

import sys
from functools import cache

import numpy as np

from fastvec.native import NATIVE_DIR, gpu
from fastvec.native.device_array import (
    DeviceArray,
    dlpack_view,
    stream_event,
    torch_dtype,
)

THREADS = 256
DL_CUDA = 2  # DLPack's kDLCUDA


@cache
def _module(device_index: int):
    return gpu.load_module('#include "game_rows.cu"\n', include_dirs=[NATIVE_DIR], name="pettingzoo_rows",
                           device_index=device_index)


def device_view(array, stream: int, device_index: int):
    """(pointer, shape, byte strides or None, dtype) of a CUDA array of any library (a DeviceArray, PyTorch,
    JAX, CuPy or anything with __cuda_array_interface__ or CUDA __dlpack__), ordered before work on `stream`;
    None for a host array."""
    if isinstance(array, DeviceArray):
        if array.stream != stream:
            stream_event().make_wait(waiter=stream, producer=array.stream)
        return array.ptr, array.shape, array.strides, array.dtype
    if type(array).__module__ == "torch" and getattr(array, "is_cuda", False):
        dtype = torch_dtype(array.dtype)
        if dtype is None:
            raise TypeError(f"actions must be integers, got torch dtype {array.dtype}")
        if array.device.index != device_index:
            raise ValueError(f"actions are on {array.device}, the games on cuda:{device_index}")
        torch_stream = sys.modules["torch"].cuda.current_stream(array.device).cuda_stream
        if torch_stream not in (0, stream):
            stream_event().make_wait(waiter=stream, producer=torch_stream)
        return array.data_ptr(), tuple(array.shape), tuple(s * dtype.itemsize for s in array.stride()), dtype
    if hasattr(array, "__cuda_array_interface__") and not isinstance(array, np.ndarray):
        cai = array.__cuda_array_interface__
        if cai.get("stream") not in (None, 1, stream):
            stream_event().make_wait(waiter=stream, producer=cai["stream"])
        return cai["data"][0], tuple(cai["shape"]), cai.get("strides"), np.dtype(cai["typestr"])
    if hasattr(array, "__dlpack__") and not isinstance(array, np.ndarray) and \
            getattr(array, "__dlpack_device__", lambda: (1, 0))()[0] == DL_CUDA:
        ptr, shape, strides, dtype, _ = dlpack_view(array, stream)
        return ptr, shape, strides, dtype
    return None


class GameRows:
    """Per-row device views of a CudaBatch of `agents`-seat games, refreshed by expand() after each step on the
    batch's stream: terminated, truncated, done (G * A,) bool, episode_length (G * A,) int32, and
    episode_stats, one (G * A,) float32 array per statistic (each row shows its game's values)."""

    def __init__(self, batch, agents: int):
        drv = sys.modules["pycuda.driver"]
        self.batch, self.agents = batch, agents
        self.games, self.stats = batch.num_envs, len(batch.env.stat_names)
        rows = self.games * agents
        module = _module(batch.env.device_index)
        self.expand_fn = module.get_function("game_rows_kernel")
        self.expand_fn.prepare("iiiPPPPPPPP")
        self.seat_fn = module.get_function("seat_actions_kernel")
        self.seat_fn.prepare("iiiPqiiP")
        self._flags = drv.mem_alloc(3 * rows)
        self._length = drv.mem_alloc(4 * rows)
        self._stats = drv.mem_alloc(max(4 * rows * self.stats, 1))
        view = lambda ptr, shape, dtype, owner: DeviceArray(ptr, shape, dtype, owner, batch.stream_handle,
                                                            batch.env.device_index)
        flags = int(self._flags)
        self.terminated, self.truncated, self.done = (view(flags + k * rows, (rows,), np.bool_, self._flags)
                                                      for k in range(3))
        self.episode_length = view(int(self._length), (rows,), np.int32, self._length)
        self.episode_stats = [view(int(self._stats) + 4 * k * rows, (rows,), np.float32, self._stats)
                              for k in range(self.stats)]
        self.grid = ((rows + THREADS - 1) // THREADS, 1)

    def expand(self) -> None:
        d = self.batch.dev
        self.expand_fn.prepared_async_call(self.grid, (THREADS, 1, 1), self.batch.stream, self.games, self.agents,
                                           self.stats, d.terminated.ptr, d.truncated.ptr, d.done.ptr,
                                           d.episode_length.ptr, d.episode_stats.ptr, int(self._flags),
                                           int(self._length), int(self._stats))

    def seat_actions(self, seat: int, array, where: str) -> None:
        """Seat `seat`'s actions (games,) from a device array into the batch's (games, agents) int64 actions."""
        b = self.batch
        ptr, shape, strides, dtype = device_view(array, b.stream_handle, b.env.device_index)
        if dtype.kind not in "iu":
            raise TypeError(f"{where} must be integers for {b.env.spaces.describe()}, got dtype {dtype}")
        if tuple(shape) != (self.games,):
            raise ValueError(f"{where} must have shape ({self.games},) (one per game), got {tuple(shape)}")
        stride = strides[0] if strides else dtype.itemsize
        grid = ((self.games + THREADS - 1) // THREADS, 1)
        self.seat_fn.prepared_async_call(grid, (THREADS, 1, 1), b.stream, self.games, self.agents, seat, ptr,
                                         stride, dtype.itemsize, int(dtype.kind == "i"), b.dev.actions.ptr)
