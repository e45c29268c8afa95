"""warp_cuda's host side of a GPU WarpBatch without a GPU: host_copy fills every named output's host mirror from its
device buffer after the stream is done, and device_views wraps each named buffer as a DeviceArray of its layout on
the batch's stream and device (the driver and the buffers stood in for by host memory)."""

import ctypes
import types

import numpy as np
import pytest

from fastvec.native.device_array import DeviceArray
from fastvec.native.mujoco.warp_cuda import device_views, host_copy

LAYOUT = {"obs": ((3, 4), np.float32), "rewards": ((3,), np.float32), "terminated": ((3,), np.uint8),
          "error": ((1,), np.uint64)}


class Buffer:
    """A device buffer's stand-in: host memory with a `ptr`, as Warp's arrays have."""

    def __init__(self, values: np.ndarray):
        self.values = np.ascontiguousarray(values)
        self.ptr = self.values.ctypes.data


def fake_batch(events: list):
    """A GPU batch's parts host_copy and device_views read: the kernels' driver and stream, the device buffers, their
    layout and the host mirrors (zeros, as WarpBatch makes them)."""
    rng = np.random.default_rng(5)
    buffers = {name: Buffer((rng.random(shape) * 200).astype(dtype)) for name, (shape, dtype) in LAYOUT.items()}

    def memcpy_dtoh(out, ptr):
        events.append(("copy", int(ptr)))
        ctypes.memmove(out.ctypes.data, int(ptr), out.nbytes)

    gpu = types.SimpleNamespace(drv=types.SimpleNamespace(memcpy_dtoh=memcpy_dtoh), handle=0x5EED, index=1,
                                synchronize=lambda: events.append(("synchronize",)))
    host = {name: np.zeros(shape, dtype) for name, (shape, dtype) in LAYOUT.items()}
    return types.SimpleNamespace(_gpu=gpu, _buffers=buffers, _layout=LAYOUT, _host=host)


def test_host_copy_fills_each_named_mirror_from_its_buffer_after_the_stream_is_done():
    events = []
    batch = fake_batch(events)
    host_copy(batch, ["obs", "rewards", "error"])
    for name in ("obs", "rewards", "error"):
        np.testing.assert_array_equal(batch._host[name], batch._buffers[name].values, err_msg=name)
    assert not batch._host["terminated"].any()  # not named: left as it was
    assert events[0] == ("synchronize",)
    assert sorted(e[1] for e in events[1:]) == sorted(batch._buffers[n].ptr for n in ("obs", "rewards", "error"))


def test_host_copy_of_no_names_only_waits_for_the_stream():
    events = []
    batch = fake_batch(events)
    host_copy(batch, [])
    assert events == [("synchronize",)]
    assert not any(m.any() for m in batch._host.values())


def test_device_views_wrap_each_named_buffer_in_its_layout_on_the_batchs_stream_and_device():
    batch = fake_batch([])
    views = device_views(batch, ["obs", "terminated", "error"])
    assert list(views) == ["obs", "terminated", "error"]
    for name, view in views.items():
        shape, dtype = LAYOUT[name]
        assert isinstance(view, DeviceArray)
        assert (view.ptr, view.shape, view.dtype) == (batch._buffers[name].ptr, shape, np.dtype(dtype))
        assert view.owner is batch._buffers[name]  # keeps the buffer alive while the view lives
        assert (view.stream, view.device_index) == (0x5EED, 1)
        assert view.strides is None  # C-contiguous


def test_warps_device_names_are_cpu_and_cuda_with_its_ordinal():
    """parse_device: "cpu" stays "cpu", "cuda" is Warp's "cuda:0", "cuda:N" keeps N; anything else is refused naming
    the accepted forms."""
    from fastvec.native.mujoco.warp_cuda import parse_device

    assert [parse_device(d) for d in ("cpu", "cuda", "cuda:0", "cuda:3")] == ["cpu", "cuda:0", "cuda:0", "cuda:3"]
    for bad in ("gpu", "cuda:", "CPU", "cpu:0"):
        with pytest.raises(ValueError, match="is not one of 'cpu', 'cuda', 'cuda:N'"):
            parse_device(bad)
