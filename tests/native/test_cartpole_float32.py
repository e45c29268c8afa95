"""CartPole's opt-in float32 variant (`float32=1`) against Gymnasium's float64 CartPole-v1 (the
oracle): it tracks the float64 physics closely over the first steps, its termination rule is
Gymnasium's exactly (thresholds included), resets draw from Gymnasium's range, and the CPU's
vectorised passes give the same bits as the plain per-env loop (which the GPU runs)."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv as GymCartPole

import fastvec
from fastvec import native
from fastvec.native import cpu

X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360  # Gymnasium's thresholds


def state64(envs) -> np.ndarray:
    return envs.unwrapped.batch.slots[:, :32].view(np.float64)


def state32(envs) -> np.ndarray:
    """The (N, 4) float32 states of a float32=1 batch: State is the first member of each slot."""
    return envs.unwrapped.batch.slots[:, :16].view(np.float32)


def test_float32_is_opt_in_and_checked():
    default = fastvec.make_vec("CartPole", 2)
    small = fastvec.make_vec("CartPole", 2, float32=1)
    assert small.unwrapped.batch.slots.shape[1] < default.unwrapped.batch.slots.shape[1]
    assert small.single_observation_space == default.single_observation_space
    with pytest.raises(ValueError, match=r"float32=2 .* out of range \[0, 1\]"):
        fastvec.make_vec("CartPole", 2, float32=2)
    as_bool = fastvec.make_vec("CartPole", 2, float32=True)  # a switch may be written as a bool
    assert as_bool.unwrapped.batch.slots.shape == small.unwrapped.batch.slots.shape
    with pytest.raises(TypeError, match="must be an int"):
        fastvec.make_vec("CartPole", 2, float32=0.5)


def test_float32_tracks_float64_over_the_first_steps():
    """Same start states, same actions: float32 and float64 observations stay within 2e-6 of each
    other for 20 steps (measured: 6e-7; they drift apart later, ~2e-5 after 100 steps) and end the
    same episodes on the same steps."""
    n, steps = 2000, 20
    rng = np.random.default_rng(7)
    f32, f64 = fastvec.make_vec("CartPole", n, float32=1), fastvec.make_vec("CartPole", n)
    f32.reset(seed=3)
    f64.reset(seed=3)
    start = rng.uniform(-0.05, 0.05, (n, 4))
    start[: n // 4] *= 4  # some poles start far enough out to fall within the 20 steps
    state64(f64)[:] = start
    state32(f32)[:] = start.astype(np.float32)
    live = np.ones(n, bool)
    ended = 0
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        o32, r32, term32, trunc32, _ = f32.step(actions)
        o64, r64, term64, trunc64, _ = f64.step(actions)
        np.testing.assert_allclose(o32[live], o64[live], rtol=0, atol=2e-6)
        np.testing.assert_array_equal(term32[live], term64[live])
        np.testing.assert_array_equal(r32[live], r64[live])
        ended += int(term64[live].sum())
        live &= ~term64
    assert ended > 50, "the comparison must include terminations"


def test_float32_termination_is_gymnasiums_rule_at_the_thresholds():
    """With zero velocities a step leaves x and theta unchanged, so the float32 values at and next
    to 2.4 and 12 degrees are tested against Gymnasium's own step from the same state."""
    def around(v):
        f = np.float32(v)
        return [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]

    states = [(x, 0.0, 0.0, 0.0) for v in (X_LIMIT, -X_LIMIT) for x in around(v)]
    states += [(0.0, 0.0, th, 0.0) for v in (THETA_LIMIT, -THETA_LIMIT) for th in around(v)]
    states = np.array(states, np.float32)
    n = len(states)
    envs = fastvec.make_vec("CartPole", n, float32=1)
    envs.reset(seed=0)
    state32(envs)[:] = states
    _, _, term, _, _ = envs.step(np.zeros(n, np.int64))
    np.testing.assert_array_equal(state32(envs)[:, [0, 2]], states[:, [0, 2]])  # unchanged, as planned
    ref = GymCartPole()
    ref.reset(seed=0)
    expected = []
    for s in states:
        ref.state = s.astype(np.float64)
        ref.steps_beyond_terminated = None
        expected.append(ref.step(0)[2])
    assert 0 < sum(expected) < n
    np.testing.assert_array_equal(term, expected)


def test_float32_step_follows_gymnasium_on_random_states():
    """From random float32 states (terminal ones included), one step: the observation within float32
    rounding of Gymnasium's, and terminated by Gymnasium's rule applied to our float32 state."""
    n = 4096
    rng = np.random.default_rng(11)
    envs = fastvec.make_vec("CartPole", n, float32=1, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    envs.reset(seed=1)
    states = (rng.uniform(-1, 1, (n, 4)) * [2.5, 2.0, 0.22, 2.0]).astype(np.float32)
    state32(envs)[:] = states
    actions = rng.integers(0, 2, n)
    obs, rew, term, trunc, _ = envs.step(actions)  # DISABLED: obs is the stepped state of every env
    after = obs.astype(np.float64)
    ref = GymCartPole()
    ref.reset(seed=0)
    for i in range(n):
        ref.state = states[i].astype(np.float64)
        ref.steps_beyond_terminated = None
        r_obs, r_rew, _, _, _ = ref.step(int(actions[i]))
        np.testing.assert_allclose(after[i], r_obs, rtol=1e-5, atol=1e-6)
        assert rew[i] == r_rew
    rule = (np.abs(after[:, 0]) > X_LIMIT) | (np.abs(after[:, 2]) > THETA_LIMIT)
    assert 0 < rule.sum() < n
    np.testing.assert_array_equal(term, rule)
    assert not trunc.any()


def test_float32_resets_draw_from_gymnasiums_range():
    envs = fastvec.make_vec("CartPole", 20000, float32=1)
    obs, _ = envs.reset(seed=5)
    assert obs.dtype == np.float32 and np.all(np.abs(obs) <= 0.05)
    assert np.all(np.abs(obs.mean(axis=0)) < 0.002) and np.all(obs.std(axis=0) > 0.027)  # uniform: std 0.0289
    levels = np.round((obs.astype(np.float64) + 0.05) * 65536 / 0.1)  # 16-bit steps: 80,000 draws of 65,536
    np.testing.assert_allclose(obs, -0.05 + levels * 0.1 / 65536, rtol=0, atol=1e-8)
    assert levels.min() >= 0 and levels.max() <= 65535 and len(np.unique(levels)) > 40000  # expected ~46,200
    # Gymnasium's four values are independent draws: no bit of one value's 16 follows a bit of another's
    # (independent bits: correlations within +-0.03 over 20,000 resets; a shared bit: 1).
    value_bits = (levels.astype(np.int64)[:, :, None] >> np.arange(16)) & 1
    correlation = np.corrcoef(value_bits.reshape(len(obs), 64).T)
    np.fill_diagonal(correlation, 0)
    assert np.abs(correlation).max() < 0.05
    again, _ = fastvec.make_vec("CartPole", 3, float32=1).reset(seed=[5 + i for i in range(3)])
    np.testing.assert_array_equal(again, obs[:3])  # per-env streams, as for float64


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_float32_vectorised_cpu_step_equals_the_plain_loop(mode):
    """The CPU's passes (SIMD_STEP) against -DFV_CPU_SCALAR_STEP=1, the per-env loop the GPU also runs."""
    path, defines = native.source_path("cartpole"), native.resolve_defines("cartpole", {"float32": 1})
    fast = cpu.load(path, tuple(sorted(defines.items())))
    plain = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    n, code = 3000, native.AUTORESET_CODES[mode]
    batches = [cpu.CpuBatch(env, n, code, 40) for env in (fast, plain)]
    rng = np.random.default_rng(2)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    angles = rng.uniform(-3, 3, n // 2)  # past pi/4 too: the sin/cos range reduction
    for b in batches:
        b.reset(seeds, None)
        b.slots[: n // 2, :16].view(np.float32)[:, 2] = angles
    ended = 0
    for t in range(60):
        actions = rng.integers(0, 2, (n, 1))
        counts = [b.step(actions) for b in batches]
        assert counts[0] == counts[1]
        ended += counts[0]
        for name in ["obs", "rewards", "terminated", "truncated", "episode_return", "episode_length", "slots"]:
            np.testing.assert_array_equal(getattr(batches[0], name), getattr(batches[1], name), err_msg=f"{name} at {t}")
    assert ended > n
