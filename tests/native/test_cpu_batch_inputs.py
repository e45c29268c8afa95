"""CpuBatch used directly (as the trainers do): bad seeds refused before anything changes, out-of-range
actions reported as given, actions of the wrong size refused, step limits that would wrap batch.h's C int
refused."""

import numpy as np
import pytest

from fastvec.native import AUTORESET_CODES, cpu, resolve_defines, source_path
from fastvec.native.batches import load_batch


def test_negative_or_non_integer_seeds_are_refused_and_nothing_changes():
    batch = load_batch("cartpole", 4)
    batch.reset(np.arange(4, dtype=np.uint64), None)
    before = batch.obs.copy()
    for seeds in (np.array([-1, 2, 3, 4]), np.array([0.5, 1, 2, 3])):
        with pytest.raises(ValueError, match="seeds must be non-negative integers"):
            batch.reset(seeds, None)
        assert np.array_equal(batch.obs, before)


def test_out_of_range_actions_are_reported_as_given():
    batch = load_batch("cartpole", 4)
    batch.reset(np.arange(4, dtype=np.uint64), None)
    with pytest.raises(cpu.ActionError, match="action 9223372036854775813 out of range for Discrete.2. at env 0"):
        batch.step(np.full((4, 1), 2**63 + 5, dtype=np.uint64))
    with pytest.raises(cpu.ActionError, match="action 7 out of range for Discrete.2. at env 2"):
        batch.step(np.array([[0], [1], [7], [0]], dtype=np.int32))


@pytest.mark.parametrize("env,count", [("cartpole", 1), ("cartpole", 3), ("pong", 3), ("pong", 5)])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_actions_of_the_wrong_size_are_refused_before_anything_is_stepped(env, count, dtype):
    """Two envs take 2 actions (cartpole) or 4 (pong's two paddles each): one more or fewer, in the batch's own
    dtype or one it casts, is a ValueError naming the size wanted, and every env is left as it was."""
    batch = load_batch(env, 2)
    batch.reset(np.arange(2, dtype=np.uint64), None)
    before = batch.obs.copy()
    with pytest.raises(ValueError, match=rf"actions must hold {batch.actions.size} values .*got shape \({count},\)"):
        batch.step(np.zeros(count, dtype))
    np.testing.assert_array_equal(batch.obs, before)
    batch.step(np.zeros(batch.actions.size, dtype))
    assert not np.array_equal(batch.obs, before)  # the right size steps


@pytest.mark.parametrize("limit", [2**31, 2**32 + 3, -1])
def test_step_limits_that_would_wrap_are_refused(limit):
    compiled = cpu.load(source_path("cartpole"), tuple(sorted(resolve_defines("cartpole", {}).items())))
    with pytest.raises(ValueError, match="max_episode_steps"):
        cpu.CpuBatch(compiled, 2, AUTORESET_CODES["SameStep"], limit)


def test_render_draws_an_env_of_the_batch_and_refuses_one_past_either_end():
    """render(i) draws env i (a negative index counting from the end, as a list's); an env past either end is an
    IndexError naming it, never a frame drawn from memory past the batch's envs."""
    batch = load_batch("cartpole", 3)
    batch.reset(np.array([1, 2, 3], np.uint64), None)
    frames = [batch.render(i) for i in range(3)]
    assert not np.array_equal(frames[1], frames[2])  # each env's own cart
    np.testing.assert_array_equal(batch.render(-1), frames[2])
    np.testing.assert_array_equal(batch.render(np.int64(-3)), frames[0])
    for bad in (3, -4, 10**6):
        with pytest.raises(IndexError, match=f"env index {bad} out of range for 3 envs"):
            batch.render(bad)


@pytest.mark.parametrize("name,size", [("cartpole", 2), ("pong", 3), ("mountaincarcontinuous", 1)])
def test_an_env_without_agent_spaces_gives_every_agent_the_batch_action_space(name, size):
    """fv_agent_action_size of an env that declares no AGENT_SPACES (fastvec.h): each agent's action space is the
    batch's, a Discrete(NUM_ACTIONS) count or a Box's ACTION_DIMS, as the faces read it per agent."""
    env = load_batch(name, 1).env
    assert [env.lib.fv_agent_action_size(a) for a in range(env.num_agents)] == [size] * env.num_agents
    assert size == (env.num_actions if env.action_kind == "discrete" else env.action_dims)


@pytest.mark.parametrize("env", ["cartpole", "pong"])
def test_strided_and_reversed_view_actions_step_as_the_values_they_hold(env):
    """Actions in the batch's own dtype but not laid out contiguously (a column of a wider array, a view with
    negative strides) step the envs exactly as a contiguous copy of the same values does."""
    rng = np.random.default_rng(3)
    batches = [load_batch(env, 5) for _ in range(3)]
    for b in batches:
        b.reset(np.arange(5, dtype=np.uint64), None)
    shape = batches[0].actions.shape
    for _ in range(12):
        values = rng.integers(0, batches[0].env.num_actions, size=shape).astype(batches[0].env.action_dtype)
        wide = np.concatenate([values, (values + 1) % batches[0].env.num_actions], axis=-1)  # (N, A, 2)
        strided = wide[..., :1]
        reversed_view = values[::-1].copy()[::-1]
        assert not strided.flags.c_contiguous and not reversed_view.flags.c_contiguous
        assert strided.dtype == reversed_view.dtype == batches[0].env.action_dtype
        for b, given in zip(batches, (values.copy(), strided, reversed_view)):
            b.step(given)
        for b in batches[1:]:
            assert np.array_equal(b.obs, batches[0].obs)
            assert np.array_equal(b.rewards, batches[0].rewards)
            assert np.array_equal(b.terminated, batches[0].terminated)
