"""CudaBatch's host-side reading of actions and of the GPU's error word, without a GPU: the byte layout of a device
array of actions (axes of size 1 left out, strided views, dtypes refused), the step kernel's grid, and the bad
action decoded from the error word (stand-in driver and spaces)."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.native.cuda import NO_ERROR, CudaBatch
from fastvec.native.device_array import DeviceArray

OURS = 0x5000


class _Spaces:
    def __init__(self, kind):
        self.kind, self.errors = kind, []

    def describe(self):
        return f"Stand({self.kind})"

    def action_error(self, flat, value, num_agents, where=""):
        self.errors.append((flat, value, num_agents, where))
        return RuntimeError("bad action")


def _batch(n=5, agents=1, dims=1, kind="discrete"):
    b = CudaBatch.__new__(CudaBatch)
    b.num_envs, b.stream_handle, b._action_axes = n, OURS, (n, agents, dims)
    b.env = SimpleNamespace(device_index=0, action_kind=kind, num_agents=agents, spaces=_Spaces(kind),
                            action_dtype=np.dtype(np.float32 if kind == "box" else np.int64))
    return b


def _device(shape, dtype, strides=None):
    return DeviceArray(0x7000_0000, shape, dtype, None, OURS, 0, strides)


@pytest.mark.parametrize("shape", [(5,), (5, 1), (5, 1, 1)])
def test_one_discrete_action_per_env_may_leave_out_the_agent_and_dimension_axes(shape):
    """(pointer, env stride, agent stride, dimension stride, item size, signed): env i's action at pointer + 8 i."""
    ptr, env_stride, _, _, size, signed = _batch()._action_view(_device(shape, np.int64))
    assert (ptr, env_stride, size, signed) == (0x7000_0000, 8, 8, 1)


def test_multi_agent_multi_dimension_actions_are_read_with_their_byte_strides():
    b = _batch(n=4, agents=3, dims=2, kind="multi_discrete")
    assert b._action_view(_device((4, 3, 2), np.int32)) == (0x7000_0000, 24, 8, 4, 4, 1)
    assert b._action_view(_device((4, 3, 2), np.uint16)) == (0x7000_0000, 12, 4, 2, 2, 0)


def test_a_strided_column_of_actions_is_read_with_its_stride():
    """Column 1 of a (5, 3) int64 device array: env i's action at pointer + 8 + 24 i."""
    column = DeviceArray(0x7000_0000, (5, 3), np.int64, None, OURS, 0).column(1)
    ptr, env_stride, *_ = _batch()._action_view(column)
    assert (ptr, env_stride) == (0x7000_0008, 24)


def test_an_agent_axis_of_size_one_may_be_left_out_of_box_actions():
    b = _batch(n=4, agents=1, dims=2, kind="box")
    assert b._action_view(_device((4, 2), np.float32)) == (0x7000_0000, 8, 0, 4, 4, 0)
    assert b._action_view(_device((4, 1, 2), np.float64)) == (0x7000_0000, 16, 16, 8, 8, 0)


@pytest.mark.parametrize("shape", [(4,), (5, 2), (5, 1, 2), (1, 5), ()])
def test_a_device_array_of_another_shape_is_refused_naming_the_shapes_taken(shape):
    with pytest.raises(ValueError, match=r"must have shape \(5,\) or \(5, 1\) or \(5, 1, 1\) for 5 envs"):
        _batch()._action_view(_device(shape, np.int64))


def test_axes_other_than_size_one_may_not_be_left_out():
    b = _batch(n=4, agents=2, dims=1, kind="discrete")
    assert b._action_view(_device((4, 2), np.int64))[:4] == (0x7000_0000, 16, 8, 0)
    with pytest.raises(ValueError, match=r"must have shape \(4, 2\) or \(4, 2, 1\)"):
        b._action_view(_device((4,), np.int64))


@pytest.mark.parametrize("kind,dtype,need", [("discrete", np.float32, "integers"), ("discrete", np.bool_, "integers"),
                                             ("box", np.int64, "float32 or float64"),
                                             ("box", np.float16, "float32 or float64")])
def test_device_actions_of_the_wrong_dtype_are_refused(kind, dtype, need):
    """Device actions are read in place: integers for the discrete kinds, float32 or float64 for Box."""
    b = _batch(kind=kind, dims=1)
    with pytest.raises(TypeError, match=f"actions must be {need} for Stand\\({kind}\\), got dtype"):
        b._action_view(_device((5,), dtype))


@pytest.mark.parametrize("count,blocks", [(1, 1), (256, 1), (257, 2), (512, 2), (513, 3)])
def test_the_state_kernels_grid_covers_every_index(count, blocks):
    assert CudaBatch._grid_of(None, count) == (blocks, 1)


@pytest.mark.parametrize("name,threads", [("wide", 256), ("staged_wide", 64)])
@pytest.mark.parametrize("n", [1, 64, 65, 256, 257])
def test_the_step_kernels_grid_has_one_thread_per_env(name, threads, n):
    """256 threads a block, or the staged kernel's env.stage_threads; enough blocks for every env, none spare."""
    b = CudaBatch.__new__(CudaBatch)
    b.num_envs, b._graphs = n, {}
    b.env = SimpleNamespace(stage_threads=64, wide_kernel_name="wide", state_size=8, num_agents=1, obs_size=4,
                            obs_dtype=np.dtype(np.float32), step_kernels={"wide": "W", "staged_wide": "S"})
    b.use_step_kernel(name)
    blocks = b._step_grid[0]
    assert b._step_block == (threads, 1, 1) and b._step_grid[1] == 1
    assert (blocks - 1) * threads < n <= blocks * threads
    assert b._step_fn == ("W" if name == "wide" else "S")


# ---------------------------------------------------------------------- the error word
@pytest.fixture
def driver(monkeypatch):
    memsets = []
    monkeypatch.setitem(sys.modules, "pycuda.driver",
                        SimpleNamespace(memset_d8=lambda ptr, value, count: memsets.append((ptr, value, count))))
    return memsets


def _errors_batch(kind, agents=2):
    b = _batch(agents=agents, kind=kind)
    b._error_ptr = 0x200
    return b


def test_no_error_word_raises_nothing_and_keeps_the_word(driver):
    b = _errors_batch("discrete")
    b._raise_if_error(NO_ERROR)
    assert driver == [] and b.env.spaces.errors == []


def test_the_error_word_names_the_flat_index_and_the_signed_action(driver):
    """High 32 bits: the flat index of the bad action; low 32: its value as an int32 (here -2). The word is set
    back to no error (all bits 1) so that the next step starts clean."""
    b = _errors_batch("discrete")
    with pytest.raises(RuntimeError, match="bad action"):
        b._raise_if_error((7 << 32) | 0xFFFF_FFFE)
    flat, value, agents, where = b.env.spaces.errors[0]
    assert (flat, value, agents) == (7, -2, 2) and type(value) is int
    assert "checked on the GPU" in where
    assert driver == [(0x200, 0xFF, 8)]
    assert NO_ERROR == 2**64 - 1


def test_a_box_error_word_holds_the_float32_bits_of_the_action(driver):
    b = _errors_batch("box", agents=1)
    bits = int(np.float32(np.nan).view(np.uint32))
    with pytest.raises(RuntimeError):
        b._raise_if_error((3 << 32) | bits)
    flat, value, agents, _ = b.env.spaces.errors[0]
    assert (flat, agents) == (3, 1) and np.isnan(value) and value.dtype == np.float32
    b.env.spaces.errors.clear()
    with pytest.raises(RuntimeError):
        b._raise_if_error(int(np.float32(-1.5).view(np.uint32)))
    assert b.env.spaces.errors[0][:2] == (0, -1.5)

