"""game_rows.cu's kernels built for the CPU (game_rows_on_cpu.cpp) and launched by GameRows itself over a stand-in
driver whose allocations are host buffers of exactly the size asked for, guard bytes after them: each seat's row shows
its game's flags, length and statistics, one seat's actions land in its column only, and nothing past any buffer
GameRows allocated is written."""

import ctypes
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_heads_kernels import build_harness

from fastvec import native
from fastvec.native import game_rows
from fastvec.native.device_array import DeviceArray

HARNESS = Path(__file__).resolve().parent / "game_rows_on_cpu.cpp"
# each allocation is followed by guard bytes (as many again, plus GUARD: room for a whole stray row run) holding FILL
GUARD, FILL = 64, 0xAB
OURS = 0x5000
CTYPES = {"i": ctypes.c_int, "q": ctypes.c_longlong, "P": ctypes.c_void_p}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS, [f"-I{native.NATIVE_DIR}"], cuda_headers=False)


class _Function:
    """A kernel of the emulation, launched as PyCUDA's prepared_async_call launches it (arguments by the prepared
    signature), on the grid and block GameRows passes."""

    def __init__(self, fn):
        self.fn = fn

    def prepare(self, signature):
        self.types = [CTYPES[c] for c in signature]

    def prepared_async_call(self, grid, block, stream, *args):
        assert stream == OURS and grid[1:] == (1,) and tuple(block[1:]) == (1, 1)
        self.fn.restype = None
        self.fn(ctypes.c_longlong(grid[0]), ctypes.c_int(block[0]), *(t(a) for t, a in zip(self.types, args,
                                                                                               strict=True)))


def _host(ptr, nbytes, dtype):
    return np.frombuffer((ctypes.c_char * nbytes).from_address(ptr), dtype)


@pytest.fixture
def make(emu, monkeypatch):
    """make(games, agents, stats, batch arrays): a GameRows whose buffers are host memory (.buffers: each
    allocation with its guard) and whose kernels run in the emulation."""
    buffers = []

    def mem_alloc(size):
        buf = np.full(2 * size + GUARD, FILL, np.uint8)
        buffers.append((size, buf))
        return buf.ctypes.data

    monkeypatch.setitem(sys.modules, "pycuda.driver", SimpleNamespace(mem_alloc=mem_alloc))
    kernels = {"game_rows_kernel": emu.emu_game_rows, "seat_actions_kernel": emu.emu_seat_actions}
    module = SimpleNamespace(get_function=lambda name: _Function(kernels[name]))
    monkeypatch.setattr(game_rows, "_module", lambda device_index: module)

    def build(games, agents, stats, arrays):
        dev = SimpleNamespace(**{name: SimpleNamespace(ptr=a.ctypes.data) for name, a in arrays.items()})
        batch = SimpleNamespace(num_envs=games, stream=OURS, stream_handle=OURS, dev=dev,
                                env=SimpleNamespace(stat_names=[f"s{k}" for k in range(stats)], device_index=0,
                                                    spaces=SimpleNamespace(describe=lambda: "Discrete(3)")))
        r = game_rows.GameRows(batch, agents)
        r.buffers = buffers
        return r

    return build


def _guards_intact(buffers):
    return all((buf[size:] == FILL).all() for size, buf in buffers)


# (games, agents, stats): one partial block; 900 rows over four blocks; a game without statistics
@pytest.mark.parametrize("games,agents,stats", [(5, 2, 3), (300, 3, 1), (4, 2, 0)])
def test_every_row_shows_its_games_values_and_nothing_past_the_buffers_is_written(make, games, agents, stats):
    rng = np.random.default_rng(games)
    rows = games * agents
    terminated, truncated = rng.random(games) < 0.4, rng.random(games) < 0.4
    arrays = {"terminated": terminated, "truncated": truncated, "done": terminated | truncated,
              "episode_length": rng.integers(1, 1000, games).astype(np.int32),
              # the statistics go on past the last game's, as another array's memory would
              "episode_stats": rng.standard_normal(games * stats + 8).astype(np.float32),
              "actions": np.zeros((games, agents), np.int64)}
    r = make(games, agents, stats, arrays)
    r.expand()
    for view, name in zip((r.terminated, r.truncated, r.done), ("terminated", "truncated", "done"), strict=True):
        assert np.array_equal(_host(view.ptr, rows, np.bool_), np.repeat(arrays[name], agents)), name
    assert np.array_equal(_host(r.episode_length.ptr, 4 * rows, np.int32), np.repeat(arrays["episode_length"], agents))
    per_game = arrays["episode_stats"][:games * stats].reshape(games, stats)
    assert len(r.episode_stats) == stats
    for k, view in enumerate(r.episode_stats):
        assert np.array_equal(_host(view.ptr, 4 * rows, np.float32), np.repeat(per_game[:, k], agents)), k
    assert len(r.buffers) == 3 and _guards_intact(r.buffers)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8])
def test_seat_actions_write_the_seats_column_with_each_value_as_given(make, dtype):
    """A seat's actions of any integer type (negative and above the signed range included) reach its column of the
    (games, agents) actions as those integers; the other seats' actions stay as they were."""
    games, agents, seat = 260, 3, 1
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    src = rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), games, dtype=dtype, endpoint=True)
    src[:2] = info.min, info.max if info.bits < 64 else 1 << 40
    table = np.full((games + 2, agents), -99, np.int64)  # two games' rows of guard after the batch's actions
    actions = table[:games]
    r = make(games, agents, 2, {"terminated": np.zeros(games, bool), "truncated": np.zeros(games, bool),
                                "done": np.zeros(games, bool), "episode_length": np.zeros(games, np.int32),
                                "episode_stats": np.zeros(2 * games, np.float32), "actions": actions})
    r.seat_actions(seat, DeviceArray(src.ctypes.data, (games,), dtype, src, OURS, 0), "actions['b']")
    assert np.array_equal(actions[:, seat], src.astype(np.int64))
    assert (np.delete(actions, seat, axis=1) == -99).all() and (table[games:] == -99).all()


def test_seat_actions_from_a_strided_column_read_every_games_own_value(make):
    games, agents = 300, 2
    table = np.arange(games * 3, dtype=np.int32).reshape(games, 3) * -7
    guarded = np.full((games + 2, agents), -99, np.int64)
    actions = guarded[:games]
    r = make(games, agents, 1, {"terminated": np.zeros(games, bool), "truncated": np.zeros(games, bool),
                                "done": np.zeros(games, bool), "episode_length": np.zeros(games, np.int32),
                                "episode_stats": np.zeros(games, np.float32), "actions": actions})
    column = DeviceArray(table.ctypes.data, (games, 3), np.int32, table, OURS, 0).column(2)
    r.seat_actions(0, column, "actions['a']")
    assert np.array_equal(actions[:, 0], table[:, 2]) and (actions[:, 1] == -99).all() and (guarded[games:] == -99).all()
