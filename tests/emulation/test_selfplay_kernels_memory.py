"""selfplay.cu's kernels and rollout_common.cu's thread forward built with AddressSanitizer and run in a child
process (libasan preloaded, so NumPy's buffers have red zones too): the policy step of pool_forward_kernel and
match_play_kernel, for a MinGRU policy with a highway and an MLP one, reads and writes no array past its end
(the decoder row y, the weights, the obs and states), which the outputs alone would not show."""

from pathlib import Path

import pytest
from test_heads_kernels import asan_runtime, run_under_asan
from test_selfplay_kernels import MLP_SPEC, SPEC, build

CHILD = r"""
import ctypes, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import test_selfplay_kernels as t
spec = t.MLP_SPEC if sys.argv[3] == "mlp" else t.SPEC
lib = ctypes.CDLL(sys.argv[2])
a, b = t.random_policy(1, "a", spec=spec), t.random_policy(2, "b", scale=1.5, spec=spec)
rng = np.random.default_rng(0)
for deterministic in (0, 1):
    fused = t.EmulatedMatches(lib, [a, b], [-1, 3], [1, 0], 5, seed=3)
    fused.starts[:] = (rng.random(fused.starts.size) < 0.4).astype(np.float32)
    state, actions = fused.state.copy(), np.zeros_like(fused.actions)
    lib.emu_pool_forward_mode(fused.n * t.AGENTS, t.AGENTS, t._p(fused.weights),
                              ctypes.c_int64(fused.weights.shape[1]), t._p(fused.game_weights), t._p(fused.game_obs),
                              t._p(fused.starts), t._p(state), t._p(actions), ctypes.c_uint64(fused.key),
                              ctypes.c_int64(7), deterministic)
    fused.play(0, 3, bool(deterministic), 4, 2)
    fused.play(3, 3, bool(deterministic), 2, 1)
print("ok")
"""


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_the_policy_steps_touch_no_memory_past_their_arrays(tmp_path_factory, kind):
    runtime = asan_runtime()
    out = build(tmp_path_factory, MLP_SPEC if kind == "mlp" else SPEC,
                flags=["-fsanitize=address", "-fno-omit-frame-pointer"], load=False)
    run_under_asan(runtime, CHILD, Path(__file__).parent, out, kind)
