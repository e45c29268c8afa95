"""A multi-agent GPU batch seen by rows (row = game * agents + agent, SuperSuit's layout) without leaving the
GPU: per-row flags and episode facts from the per-game ones, and one seat's device actions into the batch's
(games, agents) actions (game_rows.cu). Used by the PettingZoo vector env with array_type="device"."""

from __future__ import annotations

import sys
from functools import cache

import numpy as np

from fastvec.native import NATIVE_DIR, gpu
from fastvec.native.device_array import DeviceArray, device_view

THREADS = 256


@cache
def _module(device_index: int):
    return gpu.load_module('#include "game_rows.cu"\n', include_dirs=[NATIVE_DIR], name="pettingzoo_rows",
                           device_index=device_index)


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
        view = device_view(array, b.stream_handle, b.env.device_index)
        if view is None:
            raise TypeError(f"{where} must be a CUDA array with array_type='device', got {type(array).__name__}")
        ptr, shape, strides, dtype = view
        if dtype is None or dtype.kind not in "iu":
            given = getattr(array, "dtype", dtype)
            raise TypeError(f"{where} must be integers for {b.env.spaces.describe()}, got dtype {given}")
        if tuple(shape) != (self.games,):
            raise ValueError(f"{where} must have shape ({self.games},) (one per game), got {tuple(shape)}")
        stride = strides[0] if strides else dtype.itemsize
        grid = ((self.games + THREADS - 1) // THREADS, 1)
        self.seat_fn.prepared_async_call(grid, (THREADS, 1, 1), b.stream, self.games, self.agents, seat, ptr,
                                         stride, dtype.itemsize, int(dtype.kind == "i"), b.dev.actions.ptr)
