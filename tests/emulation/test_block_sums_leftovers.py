"""ppo.cu's reductions on the CPU build (data_parallel_on_cpu.cpp): sums_partial_kernel's blocks add only their own
warps' scratch slots, whatever an earlier launch left in the others (a GPU's shared memory is not cleared between
launches; the emulation's __shared__ is a static that keeps them too), and under AddressSanitizer nothing is touched
past an array."""

import ctypes
from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import asan_runtime, build_harness, run_under_asan

HARNESS = Path(__file__).parent / "data_parallel_on_cpu.cpp"


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    lib = build_harness(tmp_path_factory, HARNESS)
    lib.emu_grid_sums_partial_kernel.argtypes = [ctypes.c_longlong, ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
                                                  ctypes.c_void_p, ctypes.c_void_p]
    lib.emu_grid_sums_partial_kernel.restype = None
    return lib


def sums_partial(emu, x: np.ndarray, blocks: int, threads: int) -> np.ndarray:
    """The kernel's partial (blocks, k, 2) over x (k, n) float32."""
    x = np.ascontiguousarray(x, np.float32)
    k, n = x.shape
    partial = np.full((blocks, k, 2), np.nan)
    emu.emu_grid_sums_partial_kernel(blocks, threads, n, k, x.ctypes.data, partial.ctypes.data)
    return partial


def test_block_sums_ignore_slots_an_earlier_wider_launch_left(emu):
    """A 512-thread launch (16 warps) fills scratch slots 0-15 with large sums; the trainer's 256-thread launch
    (8 warps) that follows must add slots 0-7 only: its partials' totals are NumPy's sum and sum of squares of
    each array (advantages and returns, k = 2, as the explained variance's launch)."""
    rng = np.random.default_rng(5)
    wide = np.full((2, 2048), 1e6, np.float32)
    sums_partial(emu, wide, blocks=1, threads=512)
    x = (rng.standard_normal((2, 1000)) * 2 + 0.5).astype(np.float32)
    partial = sums_partial(emu, x, blocks=3, threads=256)
    want = x.astype(np.float64)
    np.testing.assert_allclose(partial.sum(axis=0), np.stack([want.sum(1), (want * want).sum(1)], 1), rtol=1e-12)
    # A block past the data's end (3 blocks of 256 threads stride over 1000 values: every block has some) and a
    # grid of more blocks than the data needs: the idle blocks' partials are exactly 0.
    idle = sums_partial(emu, x[:, :100], blocks=2, threads=256)
    assert (idle[1] == 0).all()
    np.testing.assert_allclose(idle[0], np.stack([want[:, :100].sum(1), (want[:, :100] ** 2).sum(1)], 1),
                               rtol=1e-12)


CHILD = r"""
import ctypes, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from fastvec.trainer.cuda.plan import SCALARS_DTYPE
lib = ctypes.CDLL(sys.argv[2])
p = lambda a: ctypes.c_void_p(a.ctypes.data)
rng = np.random.default_rng(1)
n, blocks = 700, 3
adv_returns = rng.standard_normal((2, n)).astype(np.float32)
scalars = np.zeros(1, SCALARS_DTYPE)
lib.emu_explained_variance(ctypes.c_longlong(n), blocks, p(adv_returns), p(np.zeros(blocks * 4)), p(scalars))
out = np.zeros(2, np.float32)
lib.emu_adv_moments(ctypes.c_longlong(n), blocks, p(adv_returns[0]), p(np.zeros(blocks * 2)), p(out))
for threads in (1024, 32):  # every warp slot of the scratch, and one warp
    partial = np.zeros((1, 2, 2))
    lib.emu_grid_sums_partial_kernel(ctypes.c_longlong(1), threads, ctypes.c_longlong(n), 2, p(adv_returns),
                                     p(partial))
    want = adv_returns.astype(np.float64)
    assert np.allclose(partial[0], np.stack([want.sum(1), (want * want).sum(1)], 1), rtol=1e-12), partial
print("ok")
"""


def test_the_reductions_touch_no_memory_past_their_arrays(tmp_path_factory):
    """sums_partial_kernel at 1024 threads (all 32 scratch slots) and at one warp, and the explained variance's and
    the advantage moments' finishing kernels (their sums into a local array of 2 values an array), built with
    AddressSanitizer and run in a child with libasan preloaded: no read or write past any array or the scratch."""
    runtime = asan_runtime()
    out = build_harness(tmp_path_factory, HARNESS, flags=["-fsanitize=address", "-fno-omit-frame-pointer"],
                        load=False)
    run_under_asan(runtime, CHILD, Path(__file__).resolve().parents[2], out)
