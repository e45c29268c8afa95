"""selfplay.cu's match_play_kernel and rollout_common.cu's thread forward at hidden 64 (two full warps of units, lane u
of slice s computing unit 32 * s + u) against the NumPy reference's policy step, row by row: the actions its logits
give (decoder rows plus their biases) and the new MinGRU states, built for the CPU by selfplay_on_cpu.cpp."""

import ctypes

import numpy as np
import pytest
from test_selfplay_kernels import AGENTS, EmulatedMatches, _p, build, random_policy

from fastvec.trainer import reference as ref

WIDE = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=64, layers=2, highway=True)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    return build(tmp_path_factory, WIDE)


def reference_step(fused, policies, state0, uniforms=None):
    """The reference's step of every row (game g's seat g % A the player's, policies[0]; the others its opponent,
    policies[1]): actions (the mode, or drawn with uniforms), new states (Ls, rows, H) and each row's logit gap
    between its best and second-best action."""
    rows = fused.n * AGENTS
    obs = fused.game_obs.reshape(rows, -1).astype(np.float32)
    player = (np.arange(rows) % AGENTS) == (np.arange(rows) // AGENTS) % AGENTS
    actions, state, gaps = np.zeros(rows, np.int64), np.zeros_like(state0), np.zeros(rows)
    for which, policy in ((player, policies[0]), (~player, policies[1])):
        logits, _, new_state, _ = ref.policy_forward(WIDE, policy.views, obs[None, which], fused.starts[None, which],
                                                     state0[:, which])
        if uniforms is None:
            actions[which] = ref.head_mode(WIDE, logits[0])
        else:
            actions[which] = ref.sample_head(WIDE, logits[0], uniforms[which])[0]
        state[:, which] = new_state
        top = np.sort(logits[0], axis=-1)
        gaps[which] = top[:, -1] - top[:, -2]
    return actions, state, gaps


@pytest.mark.parametrize("deterministic", [True, False])
def test_at_hidden_64_a_match_step_is_the_references_policy_step(wide, deterministic):
    """One match of a policy against another (13 games, 4 a block, the weights in shared memory), from random MinGRU
    states and start flags: the kernel's actions are the reference's (argmax, or the draw of policy_uniform(key, row,
    t)) and its new states the reference's to float rounding, every unit of both warps; the thread forward
    (pool_forward_kernel) takes the same actions and states."""
    a, b = random_policy(21, "a", scale=0.5, spec=WIDE), random_policy(22, "b", scale=0.4, spec=WIDE)
    for policy in (a, b):  # decoder biases as large as the rows' products: each logit's bias decides actions
        policy.views["dec.b"][...] *= 6.0
    rng = np.random.default_rng(5)
    fused = EmulatedMatches(wide, [a, b], [-1], [1], 13, seed=4)
    fused.starts[:] = (rng.random(fused.starts.size) < 0.4).astype(np.float32)
    fused.state[:] = rng.normal(0, 1, fused.state.shape).astype(np.float32)
    state0, t = fused.state.copy(), 3
    uniforms = None if deterministic else ref.policy_uniforms(fused.key, fused.n * AGENTS, t)
    want_actions, want_state, gaps = reference_step(fused, (a, b), state0, uniforms)
    assert len(np.unique(want_actions)) > 1 and (not deterministic or gaps.min() > 1e-3)  # the argmax: no near-tie

    thread_state, thread_actions = state0.copy(), np.zeros_like(fused.actions)
    wide.emu_pool_forward_mode(fused.n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                               _p(fused.game_weights), _p(fused.game_obs), _p(fused.starts.copy()), _p(thread_state),
                               _p(thread_actions), ctypes.c_uint64(fused.key), ctypes.c_int64(t), int(deterministic))
    fused.play(t, 1, deterministic, 4, 2)
    for actions, state in ((fused.actions, fused.state), (thread_actions, thread_state)):
        np.testing.assert_array_equal(actions, want_actions)
        np.testing.assert_allclose(state, want_state, rtol=1e-5, atol=1e-5)
