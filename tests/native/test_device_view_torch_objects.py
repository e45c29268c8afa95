"""device_view on torch's objects, without a GPU: a CUDA tensor (a stand-in with torch's attributes) gives its pointer,
shape, byte strides and dtype, refuses another device and orders our stream after torch's; torch's host objects (a
CPU tensor, torch.Size, any torch type without is_cuda) are read from the host or by the interface they have; a
DeviceArray's and a __cuda_array_interface__ array's stream is waited for unless ours is ordered after it already."""

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastvec.native import device_array
from fastvec.native.device_array import device_view

OURS, THEIRS = 0x5000, 0x6000
N_ROWS = 5


@pytest.fixture
def waits(monkeypatch):
    """The stream waits device_view asks for, recorded by a stand-in event."""
    seen = []
    event = SimpleNamespace(make_wait=lambda waiter, producer: seen.append((waiter, producer)))
    monkeypatch.setattr(device_array, "stream_event", lambda: event)
    return seen


class _CudaTensor:
    """What device_view reads of a torch CUDA tensor."""

    is_cuda = True

    def __init__(self, dtype=torch.float32, shape=(4, 3), stride=(3, 1), index=0, ptr=0x7000_0000):
        self.dtype, self.shape, self._stride, self._ptr = dtype, torch.Size(shape), stride, ptr
        self.device = _Device(index)

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


class _Device:
    def __init__(self, index):
        self.index = index

    def __str__(self):
        return f"cuda:{self.index}"


_CudaTensor.__module__ = "torch"  # device_view knows torch's tensors by their type's module


class _TorchTypeWithInterface:
    """A type of module torch without is_cuda, exposing its memory through __cuda_array_interface__."""

    __cuda_array_interface__ = {"data": (0x7100_0000, False), "shape": (5,), "typestr": "<i8", "strides": None,
                                "version": 3}


_TorchTypeWithInterface.__module__ = "torch"


@pytest.fixture
def torch_stream(monkeypatch):
    current = SimpleNamespace(cuda_stream=0)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: current)
    return current


@pytest.mark.parametrize("dtype,np_dtype", [(torch.float32, np.float32), (torch.int64, np.int64),
                                            (torch.uint8, np.uint8), (torch.float16, np.float16)])
def test_a_cuda_tensor_gives_its_pointer_shape_byte_strides_and_dtype(torch_stream, waits, dtype, np_dtype):
    """torch counts strides in elements; device_view gives them in bytes, as NumPy and the envs read them."""
    t = _CudaTensor(dtype, shape=(4, 3), stride=(6, 2))
    size = np.dtype(np_dtype).itemsize
    assert device_view(t, OURS, 0) == (0x7000_0000, (4, 3), (6 * size, 2 * size), np.dtype(np_dtype))
    assert waits == []


def test_a_transposed_cuda_tensor_gives_its_byte_strides(torch_stream, waits):
    t = _CudaTensor(torch.int16, shape=(4, 3), stride=(1, 4))  # a transposed (3, 4) int16 tensor
    assert device_view(t, OURS, 0) == (0x7000_0000, (4, 3), (2, 8), np.dtype(np.int16))


@pytest.mark.parametrize("dtype", [torch.bool, torch.bfloat16])
def test_a_cuda_tensor_of_a_dtype_numpy_cannot_name_gives_none_for_dtype_and_strides(torch_stream, waits, dtype):
    assert device_view(_CudaTensor(dtype), OURS, 0) == (0x7000_0000, (4, 3), None, None)


def test_a_cuda_tensor_on_another_gpu_is_refused(torch_stream, waits):
    with pytest.raises(ValueError, match="the array is on cuda:1, the envs on cuda:0"):
        device_view(_CudaTensor(index=1), OURS, 0)
    assert device_view(_CudaTensor(index=1), OURS, 1)[0] == 0x7000_0000


@pytest.mark.parametrize("theirs,expected", [(0, []), (OURS, []), (THEIRS, [(OURS, THEIRS)])])
def test_our_stream_waits_for_torchs_side_stream_only(torch_stream, waits, theirs, expected):
    """torch's default stream (0) is ordered with ours already, and our own stream needs no wait."""
    torch_stream.cuda_stream = theirs
    device_view(_CudaTensor(), OURS, 0)
    assert waits == expected


def test_torchs_host_objects_are_read_from_the_host(waits):
    """A CPU tensor, and torch.Size (a tuple of ints, and a torch type without is_cuda): None, so the caller copies
    them from the host, as NumPy reads them."""
    assert device_view(torch.tensor([1, 0, 1]), OURS, 0) is None
    assert device_view(torch.zeros(2, 3)[:, 1], OURS, 0) is None
    size = torch.Size([1, 0, 1])
    assert type(size).__module__ == "torch" and not hasattr(size, "is_cuda")
    assert device_view(size, OURS, 0) is None
    np.testing.assert_array_equal(np.asarray(size), [1, 0, 1])
    assert waits == []


def test_a_torch_type_without_is_cuda_is_read_through_its_cuda_array_interface(waits):
    assert device_view(_TorchTypeWithInterface(), OURS, 0) == (0x7100_0000, (5,), None, np.dtype(np.int64))


# ---------------------------------------------------------------------- the stream orders of other arrays
@pytest.mark.parametrize("theirs,expected", [(OURS, []), (THEIRS, [(OURS, THEIRS)]), (0, [(OURS, 0)])])
def test_a_device_array_of_another_stream_orders_ours_after_it(waits, theirs, expected):
    a = device_array.DeviceArray(0x7200_0000, (N_ROWS,), np.float32, None, theirs, 0)
    assert device_view(a, OURS, 0) == (0x7200_0000, (N_ROWS,), a.strides, np.dtype(np.float32))
    assert waits == expected


class _Interface:
    """Another library's CUDA array, through __cuda_array_interface__ (version 3, with its producer's stream)."""

    def __init__(self, stream):
        self.__cuda_array_interface__ = {"data": (0x7300_0000, False), "shape": (N_ROWS, 2), "typestr": "<i4",
                                         "strides": (16, 4), "version": 3}
        if stream != "absent":
            self.__cuda_array_interface__["stream"] = stream


@pytest.mark.parametrize("stream,expected", [
    ("absent", []), (None, []),   # no stream: nothing to order
    (1, []),                      # the legacy default stream, which our blocking stream is ordered with already
    (2, [(OURS, 2)]),             # the per-thread default stream is not
    (THEIRS, [(OURS, THEIRS)]), (OURS, [])])
def test_an_interface_arrays_stream_is_waited_for_unless_already_ordered(waits, stream, expected):
    assert device_view(_Interface(stream), OURS, 0) == (0x7300_0000, (N_ROWS, 2), (16, 4), np.dtype(np.int32))
    assert waits == expected
