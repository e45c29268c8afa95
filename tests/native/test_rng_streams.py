"""The envs' random streams are the counter-based stream fastvec.h documents, computed here from splitmix64's
published constants: env i's draw k is mix(mix(seed_i) + k * 0x9E3779B97F4A7C15), so a reset is a function of
its seed alone (CartPole's four uniforms in [-0.05, 0.05) are its first four draws)."""

import gymnasium as gym
import numpy as np
import pytest

import fastvec  # noqa: F401  (registers fastvec/CartPole)
from fastvec import native
from fastvec.native.batches import load_batch

M = (1 << 64) - 1


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def draw(seed, k):
    return mix((mix(seed) + k * 0x9E3779B97F4A7C15) & M)


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**63 + 7, 2**64 - 4])
def test_cartpoles_reset_is_the_first_four_draws_of_its_seeds_stream(seed):
    envs = gym.make_vec("fastvec/CartPole", num_envs=3)
    envs.reset(seed=seed)
    for i, state in enumerate(envs.unwrapped.get_state()):
        expected = [-0.05 + 0.1 * ((draw((seed + i) & M, k) >> 11) * 2.0**-53) for k in range(1, 5)]
        np.testing.assert_array_equal(state, expected)


@pytest.mark.parametrize("env", sorted(native.ENVS))
def test_a_reset_slot_is_the_same_after_any_history(env):
    """Every byte of a slot after a reset with a seed, entity lists past their counts too, is what a fresh batch
    reset with that seed holds, whatever the env played before (so slots can be compared and hashed)."""
    n = 64
    played, fresh = (load_batch(env, n) for _ in range(2))
    seeds = np.arange(n, dtype=np.uint64) + 11
    played.reset(seeds, None)
    rng = np.random.default_rng(3)
    spaces = played.env.spaces
    for _ in range(300):
        if spaces.action_kind == "box":
            low, high = spaces.action_low.reshape(-1), spaces.action_high.reshape(-1)
            actions = rng.uniform(low[0], high[0], played.actions.shape).astype(np.float32)
        else:
            actions = rng.integers(0, spaces.nvec.reshape(-1)[0], played.actions.shape)
        played.step(actions)
    played.reset(seeds, None)
    fresh.reset(seeds, None)
    np.testing.assert_array_equal(played.slots, fresh.slots)
