"""ppo.cu's minibatch gather built with AddressSanitizer and run in a child process (libasan preloaded): each
thread's observation elements in flight stay within its local array, and no read or write passes the end of the
rollout or the minibatch buffers, which the copied values alone would not show."""

from pathlib import Path

from test_heads_kernels import HARNESS, asan_runtime, build_harness, run_under_asan

HERE = Path(__file__).resolve().parent

CHILD = r"""
import ctypes, sys
sys.path[:0] = [sys.argv[1], sys.argv[3]]  # the harness modules, and tests/ for their conftest
import test_heads_kernels as t
lib = ctypes.CDLL(sys.argv[2])
for obs_bytes in (0, 1):
    for threads in ("rows", "planned", "surplus"):
        t.test_gather_copies_multi_word_actions_and_byte_observations(lib, obs_bytes, threads)
print("ok")
"""


def test_gather_touches_no_memory_past_its_arrays_or_its_elements_in_flight(tmp_path_factory):
    """The gather's own test (float and byte observations; a thread a row, the planned count, more threads than
    elements), every copy still the rollout's rows."""
    runtime = asan_runtime()
    flags = ["-fsanitize=address", "-fno-omit-frame-pointer"]
    out = build_harness(tmp_path_factory, HARNESS, flags=flags, load=False)
    run_under_asan(runtime, CHILD, HERE, out, HERE.parent)
