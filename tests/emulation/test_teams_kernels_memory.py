"""teams.cu's masked sampler built with AddressSanitizer and run in a child process (libasan preloaded): a row's
draw reads only its own A mask entries and logits (the last row's end is the buffer's end) and writes only A entries
of its MAX_ACTIONS-long local copy, which equal draws alone would not show."""

from pathlib import Path

from test_heads_kernels import asan_runtime, build_harness, run_under_asan

HERE = Path(__file__).resolve().parent

CHILD = r"""
import ctypes, sys
import numpy as np
sys.path[:0] = [sys.argv[1], sys.argv[3]]  # the harness modules, and tests/ for their conftest
from test_heads_kernels import call
from test_teams_kernels import random_masks
from fastvec.trainer import reference as ref
lib = ctypes.CDLL(sys.argv[2])
rng = np.random.default_rng(50721)
for rows, a in ((300, 7), (40, 64)):  # 64: policy.cu's MAX_ACTIONS, the local copy's whole length
    spec = ref.PolicySpec(obs_size=4, num_actions=a)
    logits = (rng.standard_normal((rows, a)) * 3).astype(np.float32)
    mask = random_masks(rng, rows, a)  # exactly rows * a bytes: a read past the last row's mask is past the buffer
    u = rng.random(rows, dtype=np.float32)
    actions, logp = np.zeros(rows, np.int32), np.zeros(rows, np.float32)
    call(lib.emu_sample_masked, rows, a, logits, mask, u, actions, logp)
    want = ref.sample_head(spec, ref.mask_logits(logits, mask), ref.masked_uniforms(u))[0]
    assert np.array_equal(actions, want) and mask[np.arange(rows), actions].all()
print("ok")
"""


def test_masked_sampler_touches_no_mask_entry_past_its_row_and_no_local_entry_past_its_actions(tmp_path_factory):
    runtime = asan_runtime()
    flags = ["-fsanitize=address", "-fno-omit-frame-pointer"]
    out = build_harness(tmp_path_factory, HERE / "teams_on_cpu.cpp", flags=flags, load=False)
    run_under_asan(runtime, CHILD, HERE, out, HERE.parent)
