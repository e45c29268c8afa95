"""NCCL (libnccl.so.2) through ctypes, for data-parallel training: unique ids, communicators, in-place
all-reduce and broadcast of device buffers on a stream (graph-capturable). Every call is checked and fails
with the ncclResult_t's name; importing this module needs neither NCCL nor a GPU."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES
INSTALL_HINT = "pip install nvidia-nccl-cu13 (or pip install 'fastvec[multigpu]')"

# ncclResult_t, ncclRedOp_t and ncclDataType_t values from nccl.h.
RESULT_NAMES = {0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError",
                4: "ncclInvalidArgument", 5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress",
                8: "ncclTimeout"}
OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
DTYPES = {np.dtype(np.float32): 7, np.dtype(np.float64): 8, np.dtype(np.int32): 2, np.dtype(np.int64): 4,
          np.dtype(np.uint8): 1}


class NcclUnavailable(RuntimeError):
    """libnccl.so.2 could not be found or loaded; the message says where it looked and how to install it."""


class NcclError(RuntimeError):
    """An NCCL call failed; the message names the call, the ncclResult_t and NCCL's own explanation."""


class UniqueId(ctypes.Structure):
    """ncclUniqueId: 128 opaque bytes that rank 0 makes and every rank receives (passed by value)."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def library_candidates() -> list[str]:
    """Where libnccl.so.2 may be, in order: FASTVEC_NCCL_LIBRARY, the nvidia-nccl-cu13/cu12 wheels'
    directories in every site-packages on sys.path, then the system loader's name."""
    override = os.environ.get("FASTVEC_NCCL_LIBRARY")
    if override:
        return [override]
    found = []
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        for sub in ("nccl/lib", "cu13/lib", "cu12/lib"):
            path = base / sub / "libnccl.so.2"
            if path.is_file() and str(path) not in found:
                found.append(str(path))
    system = ctypes.util.find_library("nccl")
    found.append(system or "libnccl.so.2")
    return found


@lru_cache(maxsize=None)
def load() -> ctypes.CDLL:
    """libnccl.so.2 (loaded once, argument types declared), or NcclUnavailable saying how to get it."""
    errors = []
    for path in library_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as err:
            errors.append(f"{path}: {err}")
            continue
        _declare(lib)
        return lib
    raise NcclUnavailable(f"multi-GPU training needs NCCL (libnccl.so.2) and none could be loaded; "
                          f"{INSTALL_HINT}, or set FASTVEC_NCCL_LIBRARY=/path/to/libnccl.so.2. Tried: "
                          + "; ".join(errors))


def _declare(lib: ctypes.CDLL) -> None:
    p, size, i32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    lib.ncclGetErrorString.argtypes = [i32]
    if hasattr(lib, "ncclGetLastError"):  # NCCL >= 2.13
        lib.ncclGetLastError.restype = ctypes.c_char_p
        lib.ncclGetLastError.argtypes = [p]
    lib.ncclGetVersion.argtypes = [ctypes.POINTER(i32)]
    lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(UniqueId)]
    lib.ncclCommInitRank.argtypes = [ctypes.POINTER(p), i32, UniqueId, i32]
    lib.ncclAllReduce.argtypes = [p, p, size, i32, i32, p, p]
    lib.ncclBroadcast.argtypes = [p, p, size, i32, i32, p, p]
    lib.ncclCommDestroy.argtypes = [p]
    lib.ncclCommAbort.argtypes = [p]
    for name in ("ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce", "ncclBroadcast",
                 "ncclCommDestroy", "ncclCommAbort"):
        getattr(lib, name).restype = i32


def error_text(result: int, comm: int | None = None) -> str:
    """'ncclX (NCCL's description)[: the communicator's last error]' for an ncclResult_t."""
    lib = load()
    name = RESULT_NAMES.get(result, f"ncclResult_t {result}")
    text = (lib.ncclGetErrorString(result) or b"").decode(errors="replace")
    last = ""
    if hasattr(lib, "ncclGetLastError"):
        last = (lib.ncclGetLastError(ctypes.c_void_p(comm) if comm else None) or b"").decode(errors="replace")
    return f"{name} ({text})" + (f": {last}" if last else "")


def check(result: int, call: str, comm: int | None = None) -> None:
    """Raise NcclError naming `call` and the result unless it is ncclSuccess."""
    if result != 0:
        raise NcclError(f"{call} failed with {error_text(result, comm)}; NCCL_DEBUG=INFO in the environment "
                        f"makes NCCL say more")


def version() -> tuple[int, int, int]:
    """The loaded NCCL's (major, minor, patch)."""
    code = ctypes.c_int()
    check(load().ncclGetVersion(ctypes.byref(code)), "ncclGetVersion")
    major, rest = divmod(code.value, 10000)
    minor, patch = divmod(rest, 100)
    return major, minor, patch


def get_unique_id() -> bytes:
    """A fresh ncclUniqueId (rank 0 makes it; every rank passes the same bytes to Communicator)."""
    uid = UniqueId()
    check(load().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return ctypes.string_at(ctypes.addressof(uid), UNIQUE_ID_BYTES)


def _dtype_code(dtype) -> int:
    dtype = np.dtype(dtype)
    if dtype not in DTYPES:
        raise ValueError(f"NCCL reduction of {dtype} is not wired up here; use one of {sorted(map(str, DTYPES))}")
    return DTYPES[dtype]


class Communicator:
    """One rank's NCCL communicator on the current CUDA device (the caller's context must be current).
    Collective calls only enqueue work on `stream` (a CUstream handle, 0 for the legacy stream), so they
    may be captured into a CUDA graph; every rank must make the same calls in the same order."""

    def __init__(self, unique_id: bytes, world_size: int, rank: int):
        if len(unique_id) != UNIQUE_ID_BYTES:
            raise ValueError(f"an NCCL unique id is {UNIQUE_ID_BYTES} bytes, got {len(unique_id)}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world_size {world_size}")
        self.world_size, self.rank = world_size, rank
        self.handle = ctypes.c_void_p()
        uid = UniqueId.from_buffer_copy(unique_id)
        check(load().ncclCommInitRank(ctypes.byref(self.handle), world_size, uid, rank),
              f"ncclCommInitRank(rank {rank} of {world_size})")

    def _comm(self) -> ctypes.c_void_p:
        if not self.handle.value:
            raise RuntimeError("this NCCL communicator was destroyed; make a new one")
        return self.handle

    def all_reduce(self, ptr: int, count: int, dtype=np.float32, op: str = "sum", stream: int = 0) -> None:
        """In place: buffer[0:count] at device pointer `ptr` becomes its reduction (sum, avg, max, min,
        prod) over all ranks, enqueued on `stream`."""
        if op not in OPS:
            raise ValueError(f"op={op!r}: NCCL reduces with one of {sorted(OPS)}")
        check(load().ncclAllReduce(ctypes.c_void_p(ptr), ctypes.c_void_p(ptr), count, _dtype_code(dtype), OPS[op],
                                   self._comm(), ctypes.c_void_p(stream)), "ncclAllReduce", self.handle.value)

    def broadcast(self, ptr: int, count: int, dtype=np.float32, root: int = 0, stream: int = 0) -> None:
        """In place: every rank's buffer[0:count] at `ptr` becomes rank `root`'s, enqueued on `stream`."""
        check(load().ncclBroadcast(ctypes.c_void_p(ptr), ctypes.c_void_p(ptr), count, _dtype_code(dtype), root,
                                   self._comm(), ctypes.c_void_p(stream)), "ncclBroadcast", self.handle.value)

    def destroy(self) -> None:
        """Free the communicator after its work finished (also at garbage collection)."""
        if self.handle.value:
            handle, self.handle = self.handle, ctypes.c_void_p()
            check(load().ncclCommDestroy(handle), "ncclCommDestroy")

    def abort(self) -> None:
        """Free the communicator without waiting for peers (after an error: a peer may be gone)."""
        if self.handle.value:
            handle, self.handle = self.handle, ctypes.c_void_p()
            check(load().ncclCommAbort(handle), "ncclCommAbort")

    def __del__(self):
        try:
            self.destroy()
        except Exception:  # interpreter shutdown: the library or the driver may be gone already
            pass


class ProcessGroup:
    """This rank's communicator and place in the job, as the CUDA trainer uses it: every call enqueues on the
    given stream (graph-capturable) and every rank must make the same calls in the same order."""

    def __init__(self, rank: int, world_size: int, comm):
        self.rank, self.world_size, self.comm = rank, world_size, comm

    def average(self, ptr: int, count: int, stream: int) -> None:
        """float32 buffer[0:count] at ptr becomes its mean over the ranks (the gradient all-reduce)."""
        self.comm.all_reduce(ptr, count, np.float32, "avg", stream)

    def sum(self, ptr: int, count: int, stream: int, dtype=np.float64) -> None:
        """buffer[0:count] at ptr becomes its sum over the ranks (the advantage moments' partial sums)."""
        self.comm.all_reduce(ptr, count, dtype, "sum", stream)

    def broadcast(self, ptr: int, count: int, stream: int, dtype=np.float32) -> None:
        """buffer[0:count] at ptr becomes rank 0's (the initial weights)."""
        self.comm.broadcast(ptr, count, dtype, 0, stream)


_active_group: ProcessGroup | None = None


def set_active_group(group: ProcessGroup | None) -> None:
    """distributed.run_rank's group while this rank trains (None after): CUDA trainers made meanwhile use it."""
    global _active_group
    _active_group = group


def active_group() -> ProcessGroup | None:
    """The process group of this rank while distributed training runs in it, else None (one GPU)."""
    return _active_group
