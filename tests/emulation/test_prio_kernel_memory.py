"""prio.cu's prio_kernel built with AddressSanitizer and run in a child process (libasan preloaded): the block's
maximum weight reads only its 32 warps' partial maxima from the shared scratch, and the draws touch no array past
its end (adv, the scratch, perm, weights), which bit-for-bit draws alone would not show."""

from pathlib import Path

from test_heads_kernels import asan_runtime, build_harness, run_under_asan

HERE = Path(__file__).resolve().parent

CHILD = r"""
import ctypes, sys
import numpy as np
sys.path[:0] = [sys.argv[1], sys.argv[3]]  # the harness modules, and tests/ for their conftest
import test_prio_kernel as t
from fastvec.trainer import reference as ref
lib = ctypes.CDLL(sys.argv[2])
rng = np.random.default_rng(73011)
for t_len, rows, k, update in ((8, 40, 4, 2), (4, 600, 2, 0)):
    adv = (rng.standard_normal((t_len, rows)) * rng.exponential(1.0, rows)).astype(np.float32)
    key = ref.shuffle_key(ref.sampling_key(9))
    perm, weights, _ = t.kernel_draws(lib, adv, k, 0.7, 0.3, 10, update, key, 1)
    want_order, want_weights = ref.prioritized_draws(t.to_segments(adv, k), 0.7, ref.prio_beta(0.3, update, 10), key,
                                                     update, 1)
    assert np.array_equal(perm, want_order) and np.array_equal(weights, want_weights)
print("ok")
"""


def test_prio_kernel_touches_no_memory_past_its_arrays_or_its_shared_scratch(tmp_path_factory):
    """Q of 20 (most threads without a draw) and 1,200 (more draws than threads), the weights still the
    reference's."""
    runtime = asan_runtime()
    flags = ["-fsanitize=address", "-fno-omit-frame-pointer"]
    out = build_harness(tmp_path_factory, HERE / "prio_on_cpu.cpp", flags=flags, load=False)
    run_under_asan(runtime, CHILD, HERE, out, HERE.parent)
