"""match_play_kernel (fastvec/trainer/cuda/selfplay.cu) on the CPU build: each lane of a group's warp samples only
its own row of the group, so a block whose middle group of games has finished writes no action for those games,
while the open games around it still take the thread forward's actions (pool_forward_kernel), row for row."""

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_selfplay_kernels import (AGENTS, SPEC, EmulatedMatches, _p, build, lib,  # noqa: F401  (the module's harness)
                                   random_policy)

SENTINEL = -7  # an action no policy draws


def test_a_finished_group_of_games_gets_no_action_from_the_group_before_it(lib):  # noqa: F811
    """12 games a block (groups of MATCH_ROWS rows a seat role): games 4-7 finished (scored), the rest open; after a
    sampled step the finished games' actions are untouched, the open games' equal the thread forward's."""
    a, b = random_policy(73, "a"), random_policy(74, "b", scale=1.5)
    rng = np.random.default_rng(73003)
    for deterministic in (False, True):
        fused = EmulatedMatches(lib, [a, b], [-1], [1], 12, seed=73)
        fused.starts[:] = (rng.random(fused.starts.size) < 0.4).astype(np.float32)
        fused.state[:] = rng.normal(0, 1, fused.state.shape).astype(np.float32)
        finished = np.zeros(fused.n, bool)
        finished[4:8] = True
        fused.scores[finished] = 0.5
        fused.actions[:] = SENTINEL
        thread_state, thread_actions = fused.state.copy(), np.zeros_like(fused.actions)
        fn = lib.emu_pool_forward_mode
        fn(fused.n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
           _p(fused.game_weights), _p(fused.game_obs), _p(fused.starts.copy()), _p(thread_state), _p(thread_actions),
           ctypes.c_uint64(fused.key), ctypes.c_int64(7), int(deterministic))
        fused.play(7, 1, deterministic, 12, 2)
        rows = np.repeat(finished, AGENTS)
        assert np.all(fused.actions[rows] == SENTINEL)
        np.testing.assert_array_equal(fused.actions[~rows], thread_actions[~rows])
        assert np.all(fused.scores[finished] == 0.5) and np.isnan(fused.scores[~finished]).all()


ROWS_CHILD = r"""
import ctypes, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import test_selfplay_kernels as t
lib = ctypes.CDLL(sys.argv[2])
assert lib.emu_rows_per_warp() == int(sys.argv[3])
a, b = t.random_policy(1, "a"), t.random_policy(2, "b", scale=1.5)
rng = np.random.default_rng(0)
fused = t.EmulatedMatches(lib, [a, b], [-1], [1], 13, seed=3)
fused.starts[:] = (rng.random(fused.starts.size) < 0.4).astype(np.float32)
fused.state[:] = rng.normal(0, 1, fused.state.shape).astype(np.float32)
thread_state, thread_actions = fused.state.copy(), np.zeros_like(fused.actions)
lib.emu_pool_forward(fused.n * t.AGENTS, t.AGENTS, t._p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                     t._p(fused.game_weights), t._p(fused.game_obs), t._p(fused.starts.copy()), t._p(thread_state),
                     t._p(thread_actions), ctypes.c_uint64(fused.key), ctypes.c_int64(7))
fused.play(7, 1, False, 4, 2)
np.testing.assert_array_equal(fused.actions, thread_actions)
np.testing.assert_array_equal(fused.state, thread_state)
print("equal")
"""


@pytest.mark.parametrize("rows", [1, 4])
def test_other_rows_a_group_step_as_the_thread_forward(tmp_path_factory, rows):
    """match_play_kernel built with MATCH_ROWS 1 or 4 (the counts benchmarks/lab/match_rows.py times beside the
    default 2): with 1 or 2 rows a group's area of shared memory is no whole number of float4s unless rounded up,
    and the next group's float4 reads would be misaligned (a fault; on the GPU a misaligned-address error). In a
    child process, one step of 13 games, 4 a block, gives the thread forward's actions and states."""
    out = build(tmp_path_factory, SPEC, flags=[f"-DMATCH_ROWS={rows}"], load=False)
    child = subprocess.run([sys.executable, "-c", ROWS_CHILD, str(Path(__file__).parent), str(out), str(rows)],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0 and "equal" in child.stdout, child.stderr[-2000:]
