"""tools/stage_mjwarp.py cuts warp.so down to one GPU arch by zeroing the other archs' cubins inside its fatbins:
headers, PTX and the kept arch's cubins stay byte for byte, and a fatbin without the kept arch is refused."""

import importlib.util
import struct
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("stage_mjwarp", Path(__file__).parents[2] / "tools" / "stage_mjwarp.py")
stage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stage)

ENTRY_HEADER = 64


def entry(kind: int, arch: int, payload: bytes) -> bytes:
    """A fatbin entry: kind (1 PTX, 2 cubin), header size, payload size, arch at byte 28, then the payload."""
    header = bytearray(ENTRY_HEADER)
    struct.pack_into("<HHIQ", header, 0, kind, 0x0101, ENTRY_HEADER, len(payload))
    struct.pack_into("<I", header, 28, arch)
    return bytes(header) + payload


def fatbin(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", stage.FATBIN_MAGIC, 1, 16, len(body)) + body


def test_only_the_kept_archs_cubins_and_the_ptx_keep_their_bytes():
    kept, ptx, other = b"\x11" * 40, b"\x22" * 24, b"\x33" * 56
    first = fatbin(entry(2, 80, other), entry(2, 90, kept), entry(1, 75, ptx))
    second = fatbin(entry(2, 90, kept), entry(2, 120, other))
    data = bytearray(b"\x99" * 8 + first + second + b"\x99" * 8)
    zeroed = stage.keep_one_arch(data, 8, len(first) + len(second), 90)
    assert zeroed == 2 * len(other)
    want = b"\x99" * 8 + fatbin(entry(2, 80, bytes(56)), entry(2, 90, kept), entry(1, 75, ptx)) + \
        fatbin(entry(2, 90, kept), entry(2, 120, bytes(56))) + b"\x99" * 8
    assert bytes(data) == want


def test_a_fatbin_without_the_kept_arch_is_refused():
    data = bytearray(fatbin(entry(2, 80, b"\x33" * 16), entry(1, 75, b"\x22" * 8)))
    with pytest.raises(ValueError, match="has no sm_90 cubin"):
        stage.keep_one_arch(data, 0, len(data), 90)
