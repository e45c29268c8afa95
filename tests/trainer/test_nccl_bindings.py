"""cuda/nccl.py's ctypes bindings without a GPU: its enum values are nccl.h's where an NCCL header is installed;
against a stand-in libnccl that records each call, its collectives, communicators and error text (which asks
the failing communicator for NCCL's own explanation) pass what NCCL's API expects."""

from __future__ import annotations

import ctypes
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import cuda_header, header_enums

from fastvec.trainer.cuda import nccl

# numpy dtype -> the ncclDataType_t name NCCL gives that element type
DTYPE_NAMES = {np.dtype(np.float32): "ncclFloat32", np.dtype(np.float64): "ncclFloat64",
               np.dtype(np.int32): "ncclInt32", np.dtype(np.int64): "ncclInt64", np.dtype(np.uint8): "ncclUint8"}
OP_NAMES = {"sum": "ncclSum", "prod": "ncclProd", "max": "ncclMax", "min": "ncclMin", "avg": "ncclAvg"}


@pytest.fixture(scope="module")
def header_values() -> dict[str, int]:
    """nccl.h's values: the one beside a libnccl.so.2 nccl.py would load first (the nvidia-nccl wheels keep
    include/ beside lib/), else the toolkit's or an nvidia wheel's."""
    header = cuda_header("nccl.h", [Path(c).parent.parent / "include" / "nccl.h" for c in nccl.library_candidates()])
    values = header_enums(header)
    unique = re.search(r"#define\s+NCCL_UNIQUE_ID_BYTES\s+(\d+)", header.read_text(errors="replace"))
    values["NCCL_UNIQUE_ID_BYTES"] = int(unique.group(1))
    return values


def test_each_wired_dtype_is_nccls_code_for_that_element_type(header_values):
    """A reduction of uint8 bytes as ncclInt8 would sum and compare them as signed; each dtype's code must be the
    ncclDataType_t of the same type, and every wired dtype is checked here."""
    assert set(nccl.DTYPES) == set(DTYPE_NAMES)
    for dtype, name in DTYPE_NAMES.items():
        assert nccl.DTYPES[dtype] == header_values[name], (dtype, name)
        assert nccl._dtype_code(dtype) == header_values[name]


def test_reduction_ops_results_and_unique_id_size_are_ncclh_values(header_values):
    for op, name in OP_NAMES.items():
        assert nccl.OPS[op] == header_values[name], op
    for code, name in nccl.RESULT_NAMES.items():  # an older nccl.h lacks the newest results (ncclTimeout)
        assert header_values.get(name, code) == code, name
    assert nccl.UNIQUE_ID_BYTES == header_values["NCCL_UNIQUE_ID_BYTES"] == ctypes.sizeof(nccl.UniqueId)


class _StandInNccl:
    """A libnccl that keeps a last error per communicator (NCCL's API takes the communicator; some builds read
    it) and records which communicator each ncclGetLastError call named."""

    def __init__(self):
        self.asked = []

    def ncclGetErrorString(self, result):
        return {5: b"invalid usage", 4: b"invalid argument"}.get(result, b"unknown")

    def ncclGetLastError(self, comm):
        handle = comm.value if isinstance(comm, ctypes.c_void_p) else comm
        self.asked.append(handle)
        return {0xAB00: b"peer rank 1 closed its connection"}.get(handle, b"")


def test_error_text_names_the_result_nccls_description_and_the_communicators_last_error(monkeypatch):
    lib = _StandInNccl()
    monkeypatch.setattr(nccl, "load", lambda: lib)
    assert nccl.error_text(5, 0xAB00) == "ncclInvalidUsage (invalid usage): peer rank 1 closed its connection"
    assert lib.asked == [0xAB00]  # the failing communicator, not NULL
    assert nccl.error_text(4) == "ncclInvalidArgument (invalid argument)"  # no communicator: NULL, nothing more
    assert lib.asked[1:] == [None]
    assert nccl.error_text(42) == "ncclResult_t 42 (unknown)"
    with pytest.raises(nccl.NcclError, match=r"^ncclAllReduce failed with ncclInvalidUsage \(invalid usage\): "
                                             r"peer rank 1 closed its connection; NCCL_DEBUG=INFO"):
        nccl.check(5, "ncclAllReduce", 0xAB00)
    nccl.check(0, "ncclAllReduce", 0xAB00)  # ncclSuccess: nothing raised, nothing asked
    assert len(lib.asked) == 4


def test_error_text_of_an_nccl_without_get_last_error_is_the_name_and_description(monkeypatch):
    """NCCL before 2.13 has no ncclGetLastError."""
    class OldNccl:
        def ncclGetErrorString(self, result):
            return b"unhandled cuda error"

    monkeypatch.setattr(nccl, "load", lambda: OldNccl())
    assert nccl.error_text(1, 0xAB00) == "ncclUnhandledCudaError (unhandled cuda error)"


# ------------------------------------------------------------------------------------------------
# The collectives as the library is asked for them (a stand-in libnccl records each call's arguments)

class _RecordingNccl(_StandInNccl):
    def __init__(self):
        super().__init__()
        self.calls = []

    def ncclCommInitRank(self, handle_ref, world_size, uid, rank):
        handle_ref._obj.value = 0xC0FFEE
        self.calls.append(("init", world_size, bytes(uid.internal)[:4], rank))
        return 0

    def ncclAllReduce(self, send, recv, count, dtype, op, comm, stream):
        self.calls.append(("all_reduce", send.value, recv.value, count, dtype, op, comm.value, stream.value))
        return 0

    def ncclBroadcast(self, send, recv, count, dtype, root, comm, stream):
        self.calls.append(("broadcast", send.value, recv.value, count, dtype, root, comm.value, stream.value))
        return 0

    def ncclCommDestroy(self, comm):
        self.calls.append(("destroy", comm.value))
        return 0

    def ncclCommAbort(self, comm):
        self.calls.append(("abort", comm.value))
        return 0

    def ncclGetVersion(self, code_ref):
        code_ref._obj.value = 23007  # NCCL_VERSION(2, 30, 7)
        return 0

    def ncclGetUniqueId(self, uid_ref):
        ctypes.memmove(ctypes.addressof(uid_ref._obj), bytes(range(128)), 128)
        return 0


@pytest.fixture
def recording(monkeypatch):
    lib = _RecordingNccl()
    monkeypatch.setattr(nccl, "load", lambda: lib)
    return lib


def test_collectives_pass_the_buffer_in_place_with_the_dtypes_and_ops_codes(recording):
    comm = nccl.Communicator(bytes([7, 8, 9, 10]) + bytes(124), world_size=3, rank=2)
    assert recording.calls == [("init", 3, bytes([7, 8, 9, 10]), 2)] and comm.handle.value == 0xC0FFEE
    comm.all_reduce(0x1000, 5, np.int64, "max", stream=0x77)
    comm.all_reduce(0x2000, 6)  # float32 sums on the legacy stream by default
    comm.broadcast(0x3000, 7, np.uint8, root=1, stream=0x78)
    comm.broadcast(0x4000, 8)  # rank 0's float32 values on the legacy stream by default
    assert recording.calls[1:] == [
        ("all_reduce", 0x1000, 0x1000, 5, nccl.DTYPES[np.dtype(np.int64)], nccl.OPS["max"], 0xC0FFEE, 0x77),
        ("all_reduce", 0x2000, 0x2000, 6, nccl.DTYPES[np.dtype(np.float32)], nccl.OPS["sum"], 0xC0FFEE, None),
        ("broadcast", 0x3000, 0x3000, 7, nccl.DTYPES[np.dtype(np.uint8)], 1, 0xC0FFEE, 0x78),
        ("broadcast", 0x4000, 0x4000, 8, nccl.DTYPES[np.dtype(np.float32)], 0, 0xC0FFEE, None)]
    with pytest.raises(ValueError, match="op='mean'"):
        comm.all_reduce(0x1000, 5, op="mean")
    with pytest.raises(ValueError, match="float16 is not wired up"):
        comm.all_reduce(0x1000, 5, np.float16)
    assert len(recording.calls) == 5  # the refused calls reached no library
    comm.destroy()
    comm.destroy()  # once only
    assert recording.calls[5:] == [("destroy", 0xC0FFEE)] and not comm.handle.value
    with pytest.raises(RuntimeError, match="destroyed"):
        comm.broadcast(0x3000, 7)


def test_abort_frees_the_communicator_once(recording):
    comm = nccl.Communicator(bytes(128), world_size=2, rank=0)
    comm.abort()
    comm.abort()
    comm.destroy()
    assert recording.calls[1:] == [("abort", 0xC0FFEE)]


def test_a_process_group_averages_float32_sums_float64_and_broadcasts_rank_0s(recording):
    """The trainer's three collectives: the gradient's mean, the advantage moments' partial sums, the weights."""
    group = nccl.ProcessGroup(1, 2, nccl.Communicator(bytes(128), world_size=2, rank=1))
    group.average(0x10, 100, 5)
    group.sum(0x20, 256, 6)
    group.broadcast(0x30, 100, 7)
    f32, f64 = nccl.DTYPES[np.dtype(np.float32)], nccl.DTYPES[np.dtype(np.float64)]
    assert recording.calls[1:] == [("all_reduce", 0x10, 0x10, 100, f32, nccl.OPS["avg"], 0xC0FFEE, 5),
                                   ("all_reduce", 0x20, 0x20, 256, f64, nccl.OPS["sum"], 0xC0FFEE, 6),
                                   ("broadcast", 0x30, 0x30, 100, f32, 0, 0xC0FFEE, 7)]


def test_version_decodes_ncclGetVersions_code_and_unique_ids_are_its_128_bytes(recording):  # noqa: N802
    assert nccl.version() == (2, 30, 7)
    assert nccl.get_unique_id() == bytes(range(128))


def test_a_failing_call_raises_naming_it(recording, monkeypatch):
    monkeypatch.setattr(recording, "ncclAllReduce", lambda *args: 5)
    comm = nccl.Communicator(bytes(128), world_size=2, rank=0)
    with pytest.raises(nccl.NcclError, match=r"^ncclAllReduce failed with ncclInvalidUsage \(invalid usage\)"):
        comm.all_reduce(0x1000, 5)
    assert recording.asked == [0xC0FFEE]


def test_library_candidates_are_the_override_alone_else_the_wheels_then_the_system_name(monkeypatch, tmp_path):
    monkeypatch.setenv("FASTVEC_NCCL_LIBRARY", "/opt/mine/libnccl.so.2")
    assert nccl.library_candidates() == ["/opt/mine/libnccl.so.2"]
    monkeypatch.delenv("FASTVEC_NCCL_LIBRARY")
    wheels = []
    for site, sub in [("a", "cu12"), ("b", "nccl")]:
        lib = tmp_path / site / "nvidia" / sub / "lib"
        lib.mkdir(parents=True)
        (lib / "libnccl.so.2").write_bytes(b"")
        wheels.append(str(lib / "libnccl.so.2"))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "nowhere"), str(tmp_path / "b"),
                                      str(tmp_path / "a")])
    monkeypatch.setattr(nccl.ctypes.util, "find_library", lambda name: None)
    assert nccl.library_candidates() == [*wheels, "libnccl.so.2"]
