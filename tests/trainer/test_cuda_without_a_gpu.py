"""The CUDA trainer's pieces that decide things before any GPU work, checked on any machine: whether the CUDA
trainer is available (answered from the driver's device count, a stand-in driver here) and the arena's layout
(every tensor aligned, none overlapping the one before, whatever its size)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from fastvec.trainer import cuda as cuda_trainer
from fastvec.trainer.cuda.arena import ALIGN, Arena


@pytest.mark.parametrize("devices,init_fails,expected", [(0, False, False), (1, False, True), (4, False, True),
                                                          (2, True, False)])
def test_the_cuda_trainer_is_available_only_where_the_driver_counts_a_device(monkeypatch, devices, init_fails,
                                                                              expected):
    def init():
        if init_fails:
            raise RuntimeError("cuInit failed: no CUDA-capable device is detected")

    driver = types.ModuleType("pycuda.driver")
    driver.init = init
    driver.Device = types.SimpleNamespace(count=lambda: devices)
    package = types.ModuleType("pycuda")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    cuda_trainer.available.cache_clear()
    try:
        assert cuda_trainer.available() is expected
    finally:
        cuda_trainer.available.cache_clear()


def test_arena_tensors_start_aligned_and_never_overlap_whatever_their_sizes():
    """Odd byte counts included (a bool per env of an odd number of envs): the next tensor starts at the next
    ALIGN boundary at or after the end of the previous one."""
    rng = np.random.default_rng(5)
    arena, end = Arena(), 0
    sizes = [1, 60, 255, 256, 257, 2 * ALIGN + 1, 3, 1, 4096]
    for k, nbytes in enumerate(sizes):
        dtype = np.uint8 if k % 2 == 0 or nbytes % 4 else np.float32
        arena.add(f"t{k}", (nbytes // np.dtype(dtype).itemsize,), dtype, "test")
        offset = arena.entries[f"t{k}"][0]
        assert offset % ALIGN == 0 and end <= offset < end + ALIGN, (k, nbytes, offset, end)
        end = offset + arena.nbytes(f"t{k}")
    assert arena.size == end
    for _ in range(50):  # random shapes and dtypes
        arena = Arena()
        end = 0
        for k in range(int(rng.integers(1, 12))):
            dtype = np.dtype(rng.choice([np.uint8, np.bool_, np.int32, np.float32, np.float64, np.uint16]))
            arena.add(f"r{k}", tuple(int(s) for s in rng.integers(1, 40, int(rng.integers(1, 4)))), dtype, "")
            offset = arena.entries[f"r{k}"][0]
            assert offset % ALIGN == 0 and end <= offset < end + ALIGN
            end = offset + arena.nbytes(f"r{k}")
