"""cuda/nccl.py names every ncclResult_t an NCCL call can return: the codes 0 to ncclNumResults - 1 without a gap
(nccl.h's, where a header is installed), so a failing call's error says which result it was; its op and dtype
codes are nccl.h's even where no header is installed."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import cuda_header

from fastvec.trainer.cuda import nccl

# nccl.h's ncclResult_t as NCCL 2.30 spells it (a test oracle written out, not read from the module)
NCCL_RESULTS = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"]


class _Described:
    """A libnccl whose descriptions are the code, without ncclGetLastError (as NCCL before 2.13)."""

    def ncclGetErrorString(self, result):
        return f"code {result}".encode()


def test_every_result_code_has_its_own_name_in_order():
    assert nccl.RESULT_NAMES == dict(enumerate(NCCL_RESULTS))


@pytest.mark.parametrize("code", range(1, len(NCCL_RESULTS)))
def test_a_failed_call_names_its_result(monkeypatch, code):
    monkeypatch.setattr(nccl, "load", lambda: _Described())
    with pytest.raises(nccl.NcclError, match=rf"^ncclCommInitRank failed with {NCCL_RESULTS[code]} \(code {code}\);"):
        nccl.check(code, "ncclCommInitRank")


def test_every_ncclresult_t_of_the_installed_header_is_named_with_its_value():
    """An older nccl.h may lack the newest results; every one it has is named, none beyond ncclNumResults."""
    header = cuda_header("nccl.h", [Path(c).parent.parent / "include" / "nccl.h" for c in nccl.library_candidates()])
    enum = re.search(r"typedef\s+enum\s*\{([^}]*)\}\s*ncclResult_t\s*;", header.read_text(errors="replace"))
    assert enum, f"no ncclResult_t in {header}"
    results = {name: int(value) for name, value in re.findall(r"\b(\w+)\s*=\s*(\d+)", enum.group(1))}
    count = results.pop("ncclNumResults")
    assert results == {name: code for code, name in nccl.RESULT_NAMES.items() if code < count}
    assert sorted(results.values()) == list(range(count))



def test_reduction_ops_dtypes_and_unique_id_size_are_ncclh_values_without_a_header():
    """nccl.h's ncclRedOp_t, ncclDataType_t and NCCL_UNIQUE_ID_BYTES written out (they are part of NCCL's ABI), for
    machines without a header: a sum sent as ncclProd, or uint8 bytes reduced as ncclInt8, would run and be wrong."""
    assert nccl.OPS == {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
    assert nccl.DTYPES == {np.dtype(np.uint8): 1, np.dtype(np.int32): 2, np.dtype(np.int64): 4,
                           np.dtype(np.float32): 7, np.dtype(np.float64): 8}
    assert nccl.UNIQUE_ID_BYTES == ctypes.sizeof(nccl.UniqueId) == 128
