"""cuda/nccl.py's ctypes bindings without a GPU: its enum values (data types, reduction ops, result names) are
nccl.h's where an NCCL header is installed, and its error text asks the failing communicator for NCCL's own
explanation (a stand-in library records what it is asked)."""

from __future__ import annotations

import ctypes
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer.cuda import nccl

# numpy dtype -> the ncclDataType_t name NCCL gives that element type
DTYPE_NAMES = {np.dtype(np.float32): "ncclFloat32", np.dtype(np.float64): "ncclFloat64",
               np.dtype(np.int32): "ncclInt32", np.dtype(np.int64): "ncclInt64", np.dtype(np.uint8): "ncclUint8"}
OP_NAMES = {"sum": "ncclSum", "prod": "ncclProd", "max": "ncclMax", "min": "ncclMin", "avg": "ncclAvg"}


def nccl_header() -> Path | None:
    """nccl.h beside a libnccl.so.2 nccl.py would load (the nvidia-nccl wheels keep include/ beside lib/), in an
    nvidia wheel on sys.path, or in the system's include directories."""
    places = [Path(c).parent.parent / "include" / "nccl.h" for c in nccl.library_candidates()]
    for entry in sys.path:
        places += [Path(entry or ".") / "nvidia" / sub / "include" / "nccl.h" for sub in ("nccl", "cu13", "cu12")]
    places += [Path(root) / "include" / "nccl.h" for root in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda",
                                                               "/usr", "/usr/local") if root]
    return next((p for p in places if p.is_file()), None)


@pytest.fixture(scope="module")
def header_values() -> dict[str, int]:
    header = nccl_header()
    if header is None:
        pytest.skip("no nccl.h here (pip install nvidia-nccl-cu13 brings one)")
    text = header.read_text(errors="replace")
    values = {name: int(value) for name, value in re.findall(r"\b(nccl\w+)\s*=\s*(\d+)\b", text)}
    unique = re.search(r"#define\s+NCCL_UNIQUE_ID_BYTES\s+(\d+)", text)
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
    for code, name in nccl.RESULT_NAMES.items():
        assert header_values[name] == code, name
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
