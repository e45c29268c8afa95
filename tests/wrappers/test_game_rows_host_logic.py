"""GameRows (the PettingZoo vector env's per-row device views) without a GPU: where each row view lies in its
buffers, the grids that cover every row and game, and which seat actions are taken and how they are read (a
stand-in driver and kernels)."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.native import game_rows
from fastvec.native.device_array import DeviceArray

OURS = 0x5000


def _launch_shape(grid, block):
    """(blocks along x, threads along x), after checking that no dimension is empty (CUDA refuses those launches);
    the kernels index rows and games with x alone, so copies along y or z would write the same values."""
    assert min(grid) >= 1 and min(block) >= 1
    return grid[0], block[0]


class _Function:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def prepare(self, signature):
        self.signature = signature

    def prepared_async_call(self, grid, block, stream, *args):
        self.calls.append((self.name, grid, block, stream, args))


@pytest.fixture
def rows(monkeypatch):
    """make(games, agents, stats): a GameRows over a stand-in batch; .calls records the kernel launches."""
    calls, allocs = [], []

    def mem_alloc(size):
        allocs.append(size)
        return 0x1000_0000 * len(allocs)

    monkeypatch.setitem(sys.modules, "pycuda.driver", SimpleNamespace(mem_alloc=mem_alloc))
    module = SimpleNamespace(get_function=lambda name: _Function(name, calls))
    monkeypatch.setattr(game_rows, "_module", lambda device_index: module)

    def make(games, agents, stats=2):
        dev = SimpleNamespace(**{name: SimpleNamespace(ptr=0x100 * (k + 1)) for k, name in enumerate(
            ["terminated", "truncated", "done", "episode_length", "episode_stats", "actions"])})
        batch = SimpleNamespace(num_envs=games, stream=OURS, stream_handle=OURS, dev=dev,
                                env=SimpleNamespace(stat_names=[f"s{k}" for k in range(stats)], device_index=0,
                                                    spaces=SimpleNamespace(describe=lambda: "Discrete(3)")))
        r = game_rows.GameRows(batch, agents)
        r.calls, r.allocs = calls, allocs
        return r

    return make


def test_the_row_views_split_their_buffers_by_row(rows):
    """terminated, truncated, done: three runs of G * A bools in one buffer; one run of G * A float32 per statistic."""
    r = rows(5, 2, stats=3)
    assert r.allocs == [3 * 10, 4 * 10, 4 * 10 * 3]
    flags, length, stats = 0x1000_0000, 0x2000_0000, 0x3000_0000
    assert [v.ptr for v in (r.terminated, r.truncated, r.done)] == [flags, flags + 10, flags + 20]
    assert all(v.shape == (10,) and v.dtype == np.bool_ for v in (r.terminated, r.truncated, r.done))
    assert (r.episode_length.ptr, r.episode_length.shape, r.episode_length.dtype) == (length, (10,), np.int32)
    assert [v.ptr for v in r.episode_stats] == [stats, stats + 40, stats + 80]
    assert all(v.shape == (10,) and v.dtype == np.float32 for v in r.episode_stats)
    assert all(v.stream == OURS for v in (r.terminated, r.episode_length, *r.episode_stats))


def test_a_game_without_statistics_still_gets_a_buffer(rows):
    r = rows(3, 2, stats=0)
    assert r.allocs[2] >= 1 and r.episode_stats == []  # the driver refuses an allocation of 0 bytes


@pytest.mark.parametrize("games,agents,blocks", [(1, 2, 1), (128, 2, 1), (129, 2, 2), (256, 3, 3), (257, 1, 2)])
def test_expand_covers_every_row_from_the_batchs_per_game_arrays(rows, games, agents, blocks):
    r = rows(games, agents, stats=2)
    r.expand()
    name, grid, block, stream, args = r.calls[-1]
    assert (name, _launch_shape(grid, block), stream) == ("game_rows_kernel", (blocks, 256), OURS)
    assert args == (games, agents, 2, 0x100, 0x200, 0x300, 0x400, 0x500, 0x1000_0000, 0x2000_0000, 0x3000_0000)


@pytest.mark.parametrize("games,blocks", [(1, 1), (256, 1), (257, 2), (600, 3)])
@pytest.mark.parametrize("dtype,signed", [(np.int64, 1), (np.int32, 1), (np.int8, 1), (np.uint8, 0), (np.uint16, 0)])
def test_seat_actions_read_every_game_with_the_arrays_item_size_and_sign(rows, games, blocks, dtype, signed):
    r = rows(games, 2)
    size = np.dtype(dtype).itemsize
    r.seat_actions(1, DeviceArray(0x8000, (games,), dtype, None, OURS, 0), "actions['right']")
    name, grid, block, stream, args = r.calls[-1]
    assert (name, _launch_shape(grid, block), stream) == ("seat_actions_kernel", (blocks, 256), OURS)
    assert args == (games, 2, 1, 0x8000, size, size, signed, 0x600)


def test_seat_actions_from_a_strided_column_use_its_stride(rows):
    r = rows(4, 2)
    column = DeviceArray(0x8000, (4, 2), np.int64, None, OURS, 0).column(1)
    r.seat_actions(0, column, "actions['left']")
    assert r.calls[-1][4][3:5] == (0x8008, 16)


def test_seat_actions_refuse_host_arrays_floats_and_other_shapes(rows):
    r = rows(4, 2)
    with pytest.raises(TypeError, match=r"actions\['left'\] must be a CUDA array with array_type='device', got ndarray"):
        r.seat_actions(0, np.zeros(4, np.int64), "actions['left']")
    with pytest.raises(TypeError, match=r"must be integers for Discrete\(3\), got dtype float32"):
        r.seat_actions(0, DeviceArray(0x8000, (4,), np.float32, None, OURS, 0), "actions['left']")
    with pytest.raises(TypeError, match=r"must be integers for Discrete\(3\), got dtype bool"):
        r.seat_actions(0, DeviceArray(0x8000, (4,), np.bool_, None, OURS, 0), "actions['left']")
    with pytest.raises(ValueError, match=r"must have shape \(4,\) \(one per game\), got \(4, 1\)"):
        r.seat_actions(0, DeviceArray(0x8000, (4, 1), np.int64, None, OURS, 0), "actions['left']")
    with pytest.raises(ValueError, match=r"got \(8,\)"):
        r.seat_actions(0, DeviceArray(0x8000, (8,), np.int64, None, OURS, 0), "actions['left']")
    assert r.calls == []
