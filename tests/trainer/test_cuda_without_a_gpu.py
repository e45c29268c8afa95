"""The CUDA trainer's pieces that decide things before any GPU work, checked on any machine: whether it is
available (from the driver's device count, a stand-in driver here), the arena's layout and pointers, the
Newton-Schulz scratch layout, and which rollout path a policy's width takes."""

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


def test_arena_pointers_are_the_base_plus_each_offset_and_its_map_names_every_tensor():
    """ptr(name, k) is the k-th element of the tensor (at a made-up base: nothing is allocated), every tensor 256-byte
    aligned in absolute terms (cuBLAS's and vector loads' alignment), describe() one line per tensor."""
    arena = Arena()
    shapes = {"params": ((7, 3), np.float32), "flags": ((5,), np.uint8), "moments": ((4,), np.float64)}
    for name, (shape, dtype) in shapes.items():
        arena.add(name, shape, dtype, f"the {name}")
    arena.base = 1 << 30
    for name, (shape, dtype) in shapes.items():
        offset = arena.entries[name][0]
        assert arena.ptr(name) == arena.base + offset and arena.ptr(name) % 256 == 0
        assert arena.ptr(name, 3) == arena.base + offset + 3 * np.dtype(dtype).itemsize
    described = arena.describe().splitlines()
    assert described[0] == f"arena: {arena.size:,} bytes in 3 tensors" and len(described) == 4
    assert [line.split()[2] for line in described[1:]] == list(shapes)


def test_newton_schulz_scratch_parts_are_256_byte_aligned_and_hold_their_matrices():
    """optimizers.ns_scratch_offsets: u and the two iterates (rows * cols floats each), then gram and poly (r * r,
    r = min(rows, cols)), each part starting on a 256-byte boundary right after the previous one."""
    from fastvec.trainer.cuda.optimizers import ns_scratch_offsets
    for shape in [(1, 1), (3, 5), (64, 64), (17, 200), (300, 7)]:
        offsets = ns_scratch_offsets(shape)
        sizes = [shape[0] * shape[1]] * 3 + [min(shape) ** 2] * 2
        assert len(offsets) == len(sizes) + 1 and offsets[0] == 0
        for start, end, size in zip(offsets, offsets[1:], sizes):
            assert (4 * start) % 256 == 0 and size <= end - start < size + 64, (shape, offsets)


@pytest.mark.parametrize("hidden,path", [(128, "thread"), (132, "gemm"), (126, "gemm"), (64, "thread")])
def test_the_fused_rollout_takes_policies_up_to_128_wide_in_multiples_of_4(hidden, path):
    """plan.fused_rollout_kernel: the per-thread policy step runs policies of H a multiple of 4 and at most 128,
    the widths the fused kernels are written for (a small MLP here, whose weights fit shared memory); wider ones
    and others take the GEMM path."""
    from fastvec.trainer import reference as ref
    from fastvec.trainer.cuda import plan
    spec = ref.PolicySpec(obs_size=6, num_actions=3, kind="mlp", hidden=hidden, layers=1)
    layout = ref.FlatLayout(ref.param_table(spec))
    kind, block = plan.fused_rollout_kernel(spec, layout, num_envs=plan.FUSED_THREAD_MIN_ENVS, num_agents=1)
    assert kind == path and (block >= 32) == (path != "gemm")
