"""muon_small_kernel's Newton-Schulz (fastvec/trainer/cuda/newton_schulz.cu: float4 shared-memory products on a
padded layout) without a GPU: built for the CPU by tests/emulation/newton_schulz_on_cpu.cpp and compared with
reference.newton_schulz, for the shapes Breakout's and CartPole's policies have and awkward ones. The GPU test
test_muon_small_kernel_matches_reference checks the whole kernel on the device. Skipped where the C++
compiler lacks C++20's <barrier>."""

import ctypes
from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness

from fastvec.trainer import reference as ref

HARNESS = Path(__file__).resolve().parent / "newton_schulz_on_cpu.cpp"


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    lib = build_harness(tmp_path_factory, HARNESS, cuda_headers=False)
    lib.emu_newton_schulz.restype = None
    return lib


def assert_newton_schulz_matches_reference(emu, shape, seed):
    """The emulated kernel's five iterations on a random float32 matrix, within 1e-5 of the float64 reference."""
    g = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    out = np.empty(shape, np.float32)
    f32 = ctypes.c_float
    emu.emu_newton_schulz(g.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(shape[0]), ctypes.c_int(shape[1]),
                          ctypes.c_int(5), *(f32(c) for c in ref.NS_COEFFS), out.ctypes.data_as(ctypes.c_void_p))
    want = ref.newton_schulz(g.astype(np.float64))
    assert np.abs(out - want).max() <= 1e-5 * np.abs(want).max()


@pytest.mark.parametrize("shape", [(192, 64), (64, 118), (4, 64), (48, 16), (3, 16), (24, 40), (96, 32), (5, 7)])
def test_shared_memory_newton_schulz_matches_reference(emu, shape):
    assert_newton_schulz_matches_reference(emu, shape, sum(shape))


@pytest.mark.parametrize("shape", [(36, 20), (8, 100), (3, 4), (36, 36), (4, 4)])
def test_rows_that_fill_their_padded_stride_match_reference(emu, shape):
    """Widths of 4 more than a multiple of 32 (4, 36, 100) are their own muon_stride: no padding columns follow
    a row, so a product that ran over more than the width rounded up to 4 would read the next row's values
    (the wide side for X X^T, the narrow side for the gram's products)."""
    assert_newton_schulz_matches_reference(emu, shape, sum(shape) + 1)



def test_the_kernels_row_stride_is_the_one_the_launch_sizes_shared_memory_by(emu):
    """muon_small_kernel's shared memory is sized on the host by optimizers.muon_small_shared_bytes, from
    optimizers.muon_stride: the .cu's stride must be the same for every width, or the kernel's buffers run past
    the launch's (a stride that grew) or overlap (one that shrank). Also its own rule by hand: the least
    multiple of 4, at least n, that is 4 more than a multiple of 32."""
    from fastvec.trainer.cuda.optimizers import muon_stride
    emu.emu_muon_stride.restype = ctypes.c_int
    strides = [emu.emu_muon_stride(ctypes.c_int(n)) for n in range(1, 300)]
    assert strides == [muon_stride(n) for n in range(1, 300)]
    assert strides == [min(s for s in range(4, 400, 32) if s >= n) for n in range(1, 300)]
    assert (strides[0], strides[3], strides[4], strides[35], strides[36]) == (4, 4, 36, 36, 68)


def _compiler_takes(flags) -> bool:
    """Whether the C++ compiler accepts flags (GCC's bounds-strict; clang has no such option)."""
    import shutil
    import subprocess
    cxx = shutil.which("g++") or shutil.which("c++")
    probe = subprocess.run([cxx, *flags, "-x", "c++", "-fsyntax-only", "-"], input="int main() { return 0; }",
                           capture_output=True, text=True) if cxx else None
    return probe is not None and probe.returncode == 0


GUARDED_CHILD = """
import ctypes, sys
import numpy as np
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.optimizers import muon_small_shared_bytes
lib = ctypes.CDLL(sys.argv[1])
lib.emu_newton_schulz_guarded.restype = ctypes.c_int
for rows, cols in [(4, 64), (3, 64), (64, 8), (8, 100), (36, 36), (5, 7), (13, 40), (4, 200), (260, 3)]:
    g = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
    out = np.empty((rows, cols), np.float32)
    f32 = ctypes.c_float
    status = lib.emu_newton_schulz_guarded(
        g.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(rows), ctypes.c_int(cols), ctypes.c_int(5),
        *(f32(c) for c in ref.NS_COEFFS), ctypes.c_longlong(muon_small_shared_bytes((rows, cols))),
        out.ctypes.data_as(ctypes.c_void_p))
    want = ref.newton_schulz(g.astype(np.float64))
    print(rows, cols, status, float(np.abs(out - want).max() / np.abs(want).max()), flush=True)
"""


def test_newton_schulz_stays_inside_the_shared_memory_the_launch_gives_and_its_tile_arrays(tmp_path_factory):
    """With the block's shared memory exactly optimizers.muon_small_shared_bytes long and an unreadable page after
    it (emu_newton_schulz_guarded, in a child process: a stray access is a SIGSEGV there, as it is an illegal
    address on the GPU), every product's tiles read and write only inside it, for narrow sides a multiple of 4
    and not, over five steps (the iterate alternates between the two buffers, the second one nearer the end),
    and the result is still the reference's. Built with GCC's bounds check trapping, so an index past a tile's
    own arrays (a[4], acc[4][4]) stops the child too."""
    flags = ["-fsanitize=bounds-strict", "-fsanitize-undefined-trap-on-error"]
    if not _compiler_takes(flags):
        flags = []
    lib = build_harness(tmp_path_factory, HARNESS, flags=flags, cuda_headers=False)
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(ref.__file__).parents[2]),
                                                                   os.environ.get("PYTHONPATH")])))
    child = subprocess.run([sys.executable, "-c", GUARDED_CHILD, lib._name], capture_output=True, text=True,
                           timeout=120, env=env)
    assert child.returncode == 0, (child.returncode, child.stdout, child.stderr[-2000:])
    lines = [line.split() for line in child.stdout.splitlines()]
    assert len(lines) == 9
    for rows, cols, status, err in lines:
        assert status == "0", (rows, cols, status)
        assert float(err) <= 1e-5, (rows, cols, err)
