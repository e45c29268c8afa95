"""device_view on arrays that only speak DLPack (JAX's, or any other library's): the (pointer, shape, byte strides,
dtype) the envs read actions from, the consumer stream handed to the producer, and host arrays (None: copied from
the host). Without a GPU: the capsules are DeviceArray's own, over addresses nothing dereferences."""

import ctypes

import numpy as np
import pytest

from fastvec.native import device_array
from fastvec.native.device_array import DeviceArray, device_view, dlpack_view

OURS = 0x5000  # our stream handle


@pytest.fixture(autouse=True)
def no_stream_waits(monkeypatch):
    # The capsules come from DeviceArrays on our stream, so nothing should wait; a stand-in keeps the GPU out.
    monkeypatch.setattr(device_array, "stream_event", lambda: pytest.fail("no stream should be made to wait"))


class _DlpackOnly:
    """Another library's CUDA array: __dlpack__ and __dlpack_device__ only (a DeviceArray's capsule inside)."""

    def __init__(self, inner, byte_offset=0, device=device_array.DL_CUDA, takes_stream=True):
        self.inner, self.byte_offset, self.device, self.takes_stream = inner, byte_offset, device, takes_stream
        self.streams = []

    def __dlpack__(self, **kw):
        if not self.takes_stream and kw:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        self.streams.append(kw.get("stream"))
        capsule = self.inner.__dlpack__(stream=OURS)
        address = device_array._capi.PyCapsule_GetPointer(capsule, device_array._DLTENSOR)
        t = device_array._DLManagedTensor.from_address(address).dl_tensor
        t.byte_offset = self.byte_offset
        t.device.device_type = self.device
        return capsule

    def __dlpack_device__(self):
        return (self.device, 0)


class _JaxLike(_DlpackOnly):
    pass


_JaxLike.__module__ = "jaxlib._jax"  # device_view takes JAX's arrays by their module


def _inner(shape=(6,), dtype=np.int64, strides=None):
    return DeviceArray(0x7000_0000, shape, dtype, None, OURS, 0, strides)


@pytest.mark.parametrize("kind", [_DlpackOnly, _JaxLike])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32, np.uint64,
                                   np.float32, np.float64, np.float16, np.bool_])
def test_a_dlpack_array_gives_its_pointer_shape_and_dtype(kind, dtype):
    a = kind(_inner((4, 3), dtype))
    assert device_view(a, OURS, 0) == (0x7000_0000, (4, 3), None, np.dtype(dtype))


@pytest.mark.parametrize("kind", [_DlpackOnly, _JaxLike])
def test_a_strided_dlpack_array_gives_byte_strides_and_its_byte_offset(kind):
    """DLPack strides count elements and byte_offset is added to the data pointer: a column of a (5, 3) int32
    array starting 8 bytes in is read with a 12-byte stride from pointer + 8."""
    a = kind(_inner((5,), np.int32, strides=(12,)), byte_offset=8)
    assert device_view(a, OURS, 0) == (0x7000_0008, (5,), (12,), np.dtype(np.int32))


@pytest.mark.parametrize("stream,asked", [(OURS, OURS), (0, 1)])
def test_the_producer_is_asked_to_order_its_work_before_our_stream(stream, asked):
    """Our stream is passed to __dlpack__ (the legacy default stream, handle 0, as DLPack's 1)."""
    a = _DlpackOnly(_inner())
    device_view(a, stream, 0)
    assert a.streams == [asked]


def test_a_producer_that_takes_no_stream_is_asked_without_one():
    a = _DlpackOnly(_inner(), takes_stream=False)
    assert device_view(a, OURS, 0) == (0x7000_0000, (6,), None, np.dtype(np.int64))


def test_dlpack_view_keeps_the_capsule_alive_with_the_view():
    ptr, shape, strides, dtype, keep = dlpack_view(_DlpackOnly(_inner()), OURS)
    assert (ptr, shape, strides, dtype) == (0x7000_0000, (6,), None, np.dtype(np.int64))
    assert type(keep).__name__ == "PyCapsule"


def test_a_dlpack_array_on_the_host_is_not_a_device_view():
    """A producer on the host (DLPack device 1): None, so that the envs copy it from the host."""
    assert device_view(_DlpackOnly(_inner(), device=1), OURS, 0) is None


def test_a_dlpack_array_claiming_cuda_but_exporting_host_memory_is_refused():
    a = _DlpackOnly(_inner(), device=1)
    a.__dlpack_device__ = lambda: (device_array.DL_CUDA, 0)
    with pytest.raises(TypeError, match="not on a CUDA device"):
        device_view(a, OURS, 0)


def test_host_arrays_of_numpy_torch_and_jax_are_not_device_views():
    """Host arrays of every library the envs take: None, so that a GPU env in NumPy mode copies them as it does a
    NumPy array (a JAX policy run on the CPU hands its actions over like this)."""
    assert device_view(np.arange(3), OURS, 0) is None
    torch = pytest.importorskip("torch")
    assert device_view(torch.arange(3), OURS, 0) is None
    jax = pytest.importorskip("jax")
    # Explicitly on the host: on a machine with a GPU, JAX puts a new array on the GPU.
    assert device_view(jax.device_put(jax.numpy.arange(3), jax.devices("cpu")[0]), OURS, 0) is None
    assert device_view(ctypes.c_int(3), OURS, 0) is None


class _NoDevice:
    """A producer with __dlpack__ but no __dlpack_device__ (a host-only exporter)."""

    def __dlpack__(self, **kw):
        return _DlpackOnly(_inner(), device=1).__dlpack__()


def test_a_dlpack_producer_without_a_device_is_taken_for_a_host_array():
    assert device_view(_NoDevice(), OURS, 0) is None


@pytest.mark.gpu
def test_a_gpu_env_in_device_mode_steps_with_jax_host_actions_as_with_numpy_ones():
    """A JAX policy run on the CPU: its actions are copied from the host like a NumPy array's (same obs)."""
    jax = pytest.importorskip("jax")
    import fastvec

    n = 64
    envs = fastvec.make_vec("CartPole", n, device="cuda", array_type="device")
    ref = fastvec.make_vec("CartPole", n, device="cuda")
    envs.reset(seed=4)
    ref.reset(seed=4)
    rng = np.random.default_rng(4)
    for t in range(5):
        actions = rng.integers(0, 2, n).astype(np.int32)
        obs, *_ = envs.step(jax.device_put(actions, jax.devices("cpu")[0]))
        np.testing.assert_array_equal(obs.get(), ref.step(actions)[0], err_msg=f"step {t}")
    envs.close()
    ref.close()
