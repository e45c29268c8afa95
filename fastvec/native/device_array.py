"""GPU memory handed out without copies: DeviceArray (`__cuda_array_interface__` and DLPack, for
PyTorch, JAX, CuPy) and the readers of other libraries' CUDA arrays (DLPack, torch dtypes)."""

from __future__ import annotations

import ctypes
import sys
from functools import lru_cache

import numpy as np

from fastvec.native import graphs

_DLPACK_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # DLDataTypeCode: kDLInt, kDLUInt, kDLFloat, kDLBool
DL_CUDA = 2  # DLDeviceType kDLCUDA


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DLDeleter)]

_capi = ctypes.pythonapi
_capi.PyCapsule_New.restype = ctypes.py_object
_capi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor gets a capsule whose refcount is already 0: it must not become a Python object
# again, so these two take it as a bare pointer.
_capsule_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _capi))
_capsule_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _capi))
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLTENSOR = b"dltensor"
_exported: dict[int, tuple] = {}  # address of a DLManagedTensor -> what it keeps alive


@_DLDeleter
def _dl_deleter(managed) -> None:
    _exported.pop(ctypes.addressof(managed.contents), None)


@_CapsuleDestructor
def _capsule_destructor(capsule_ptr) -> None:
    # A consumer renames the capsule ("used_dltensor") and calls the deleter itself; an unconsumed
    # capsule still named "dltensor" is ours to release.
    if _capsule_is_valid_raw(capsule_ptr, _DLTENSOR):
        _exported.pop(_capsule_pointer_raw(capsule_ptr, _DLTENSOR), None)


class DeviceArray:
    """A view of GPU memory that fastvec owns, exchanged without copies: it exposes
    `__cuda_array_interface__` (v3, with our stream) for CuPy/Numba/PyTorch (`torch.as_tensor(a,
    device="cuda")`) and `__dlpack__`/`__dlpack_device__` for JAX (`jax.numpy.from_dlpack(a)`) and
    `torch.from_dlpack`. `np.asarray(a)` or `a.get()` copy to the host (and wait for the GPU).

    The buffers of an env are reused: a view shows the values of the latest step."""

    def __init__(self, ptr: int, shape: tuple, dtype, owner, stream: int, device_index: int,
                 strides: tuple | None = None):
        self.ptr, self.shape, self.dtype = int(ptr), tuple(int(s) for s in shape), np.dtype(dtype)
        self.owner, self.stream, self.device_index = owner, int(stream), device_index
        self.strides = strides  # in bytes; None: C-contiguous
        self._cai = None

    # sizes
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> str:
        return f"cuda:{self.device_index}"

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device!r})"

    # views and copies
    def reshape(self, *shape) -> DeviceArray:
        """A view with another shape (-1 allowed) of a C-contiguous array."""
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        self._need_contiguous("reshape")
        return DeviceArray(self.ptr, _infer_shape(self.size, shape), self.dtype, self.owner, self.stream, self.device_index)

    def column(self, k: int) -> DeviceArray:
        """Column k of a C-contiguous 2-D array, as a strided view."""
        self._need_contiguous("column")
        return DeviceArray(self.ptr + k * self.dtype.itemsize, self.shape[:1], self.dtype, self.owner, self.stream,
                           self.device_index, (self.shape[1] * self.dtype.itemsize,))

    def _need_contiguous(self, what: str) -> None:
        if self.strides is not None:
            raise ValueError(f"{what}() needs a C-contiguous DeviceArray; this one has strides {self.strides}")

    def copy(self) -> DeviceArray:
        """A new device array with the same values (a device-to-device copy on our stream)."""
        drv = sys.modules["pycuda.driver"]
        self._need_contiguous("copy")
        alloc = drv.mem_alloc(max(self.nbytes, 1))
        drv.memcpy_dtod_async(alloc, self.ptr, self.nbytes, STREAMS[self.stream])
        return DeviceArray(int(alloc), self.shape, self.dtype, alloc, self.stream, self.device_index)

    def get(self) -> np.ndarray:
        """A host (NumPy) copy; waits for the work that writes this array."""
        drv = sys.modules["pycuda.driver"]
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        STREAMS[self.stream].synchronize()
        if self.strides is None:
            out = np.empty(self.shape, self.dtype)
            drv.memcpy_dtoh(out, self.ptr)
            return out
        span = sum((n - 1) * st for n, st in zip(self.shape, self.strides)) + self.dtype.itemsize
        raw = np.empty(span, np.uint8)
        drv.memcpy_dtoh(raw, self.ptr)
        return np.ndarray(self.shape, self.dtype, raw, 0, self.strides).copy()

    def __array__(self, dtype=None, copy=None):
        out = self.get()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __iter__(self):
        # Lets Gymnasium's ArrayConversion treat this as an array (it asks for abc.Iterable).
        return iter(self.get())

    def __array_namespace__(self, api_version=None):
        # Present so that array_api_compat.is_array_api_obj() accepts this array; conversions go
        # through __dlpack__. The namespace named is NumPy's, used only by host-copy fallbacks.
        return np

    # interchange protocols
    @property
    def __cuda_array_interface__(self) -> dict:
        if self._cai is None:
            self._cai = {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                         "version": 3, "strides": self.strides, "stream": self.stream or 1}
        return self._cai

    def __dlpack_device__(self) -> tuple[int, int]:
        return (DL_CUDA, self.device_index)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array. `stream` is the consumer's: it is made to wait for the
        work that writes this array (None/1 legacy default stream: ordered already, since ours is
        a blocking stream; -1: no ordering)."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"this array lives on {self.device}; it cannot be exported to device {dl_device}")
        if copy:
            return self.copy().__dlpack__(stream=stream)
        if stream is not None and stream not in (1, -1) and stream != self.stream:
            stream_event().make_wait(waiter=stream, producer=self.stream)
        kind = self.dtype.kind
        if kind not in _DLPACK_CODES:
            raise BufferError(f"dtype {self.dtype} has no DLPack code")
        managed = _DLManagedTensor()
        shape = (ctypes.c_int64 * max(self.ndim, 1))(*self.shape)
        strides = None if self.strides is None else \
            (ctypes.c_int64 * self.ndim)(*(st // self.dtype.itemsize for st in self.strides))
        t = managed.dl_tensor
        t.data = self.ptr
        t.device = _DLDevice(DL_CUDA, self.device_index)
        t.ndim = self.ndim
        t.dtype = _DLDataType(_DLPACK_CODES[kind], self.dtype.itemsize * 8, 1)
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = None if strides is None else ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))  # None: C order
        t.byte_offset = 0
        managed.deleter = _dl_deleter
        address = ctypes.addressof(managed)
        _exported[address] = (managed, shape, strides, self.owner)
        return _capi.PyCapsule_New(address, _DLTENSOR, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def _infer_shape(size: int, shape: tuple) -> tuple:
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        shape[shape.index(-1)] = size // known if known else 0
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError(f"cannot reshape an array of size {size} into shape {tuple(shape)}")
    return tuple(shape)


STREAMS: dict[int, object] = {}  # stream handle -> pycuda Stream, for DeviceArray copies


@lru_cache(maxsize=None)
def stream_event() -> graphs.Event:
    """One event, reused to order one stream after another (Event.make_wait)."""
    return graphs.Event()


# ---------------------------------------------------------------------- other libraries' arrays
_TORCH_DTYPES: dict = {}


def torch_dtype(dtype) -> np.dtype | None:
    """The NumPy dtype of a torch integer or float dtype (None for others: bool, complex, bfloat16), from a
    table built on first use (torch is imported by then)."""
    if not _TORCH_DTYPES:
        torch = sys.modules["torch"]
        names = ["int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "float64", "float32",
                 "float16"]
        _TORCH_DTYPES.update({getattr(torch, name): np.dtype(name) for name in names if hasattr(torch, name)})
    return _TORCH_DTYPES.get(dtype)


def dlpack_view(obj, stream: int) -> tuple[int, tuple, tuple | None, np.dtype, object]:
    """(pointer, shape, byte strides or None, dtype, keep-alive) of a DLPack-only CUDA array."""
    try:
        capsule = obj.__dlpack__(stream=stream or 1)
    except TypeError:
        capsule = obj.__dlpack__()
    address = _capi.PyCapsule_GetPointer(capsule, _DLTENSOR)
    t = _DLManagedTensor.from_address(address).dl_tensor
    if t.device.device_type != DL_CUDA:
        raise TypeError(f"{type(obj).__name__} is not on a CUDA device (DLPack device type {t.device.device_type})")
    codes = {0: "i", 1: "u", 2: "f", 6: "b"}
    dtype = np.dtype(f"{codes.get(t.dtype.code, 'V')}{t.dtype.bits // 8}")
    shape = tuple(t.shape[k] for k in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[k] * dtype.itemsize for k in range(t.ndim))
    return t.data + t.byte_offset, shape, strides, dtype, capsule


def device_view(array, stream: int, device_index: int) -> tuple[int, tuple, tuple | None, np.dtype | None] | None:
    """(pointer, shape, byte strides or None, dtype) of a CUDA array of any library: a DeviceArray, PyTorch,
    JAX, CuPy, or anything with __cuda_array_interface__ or a CUDA __dlpack__; work on `stream` is ordered
    after the array's producer. None for a host array; dtype None for a torch dtype NumPy has no name for."""
    if isinstance(array, DeviceArray):
        if array.stream != stream:
            stream_event().make_wait(waiter=stream, producer=array.stream)
        return array.ptr, array.shape, array.strides, array.dtype
    if type(array).__module__ == "torch" and getattr(array, "is_cuda", False):
        dtype = torch_dtype(array.dtype)
        if array.device.index != device_index:
            raise ValueError(f"the array is on {array.device}, the envs on cuda:{device_index}")
        torch_stream = sys.modules["torch"].cuda.current_stream(array.device).cuda_stream
        if torch_stream not in (0, stream):  # torch's default stream is ordered with ours already
            stream_event().make_wait(waiter=stream, producer=torch_stream)
        strides = None if dtype is None else tuple(st * dtype.itemsize for st in array.stride())
        return array.data_ptr(), tuple(array.shape), strides, dtype
    if type(array).__module__.startswith("jax") and hasattr(array, "__dlpack__"):
        # JAX orders its own stream before ours when it exports through DLPack; a JAX array on the host is read
        # from the host like a NumPy one (JAX refuses a CUDA stream for it).
        return dlpack_view(array, stream)[:4] if array.__dlpack_device__()[0] == DL_CUDA else None
    if hasattr(array, "__cuda_array_interface__") and not isinstance(array, np.ndarray):
        cai = array.__cuda_array_interface__
        if cai.get("stream") not in (None, 1, stream):
            stream_event().make_wait(waiter=stream, producer=cai["stream"])
        return cai["data"][0], tuple(cai["shape"]), cai.get("strides"), np.dtype(cai["typestr"])
    if hasattr(array, "__dlpack__") and not isinstance(array, np.ndarray) and \
            getattr(array, "__dlpack_device__", lambda: (1, 0))()[0] == DL_CUDA:
        return dlpack_view(array, stream)[:4]
    return None
