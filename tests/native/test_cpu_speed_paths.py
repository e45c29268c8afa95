"""The CPU step's passes for SIMD_STEP envs (batch.h: vectorised loops over each thread's envs,
NEXT_STEP resets put aside) against the plain per-env loop (the same source built with
-DFV_CPU_SCALAR_STEP=1, fv_step_one per env like the GPU): every buffer and every byte of
simulator state after every step, in all three autoreset modes, with envs ending mid-batch; and
the Gymnasium face's arrays, which the C step writes into a fresh block per step."""

import math
from pathlib import Path

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv as GymCartPole

from fastvec import native
from fastvec.native import cpu

RANDOM_WALK = Path(__file__).resolve().parents[1] / "envs" / "random_walk.h"

# (source, defines, max_episode_steps) of envs that take the passes (SIMD_STEP): CartPole
# vectorises (float64, and float32, whose 48-byte slot is no power of two); float32 Acrobot hands the steps
# whose angles turn more than twice back to env_step (SIMD_STEP_REDO); MountainCar steps the states whose cos is in
# glibc's second range (SIMD_STEP_VALID), at the track's bottom, and sets the others aside (SIMD_STEP forced here, as
# in car_batches, so that a build without AVX2 takes the passes too); the random walk has two agents, byte
# observations, statistics and RNG draws inside env_step; Pong (one point per game; SIMD_STEP forced here) is branchy.
ENVS = {
    "cartpole": (native.source_path("cartpole"), {}, 23),
    "cartpole_float32": (native.source_path("cartpole"), native.resolve_defines("cartpole", {"float32": 1}), 23),
    "acrobot_float32": (native.source_path("acrobot"), native.resolve_defines("acrobot", {"float32": 1}), 40),
    "mountaincar": (native.source_path("mountaincar"), {"SIMD_STEP": 1}, 30),
    "random_walk": (RANDOM_WALK, {"LIMIT": 3}, 9),
    "pong": (native.source_path("pong"), {**native.resolve_defines("pong", {"points": 1}), "SIMD_STEP": 1}, 45),
}
BUFFERS = ["obs", "rewards", "terminated", "truncated", "episode_return", "episode_length",
           "episode_stats", "slots"]


def batches(env: str, num_envs: int, mode: int) -> tuple[cpu.CpuBatch, cpu.CpuBatch]:
    path, defines, max_steps = ENVS[env]
    fast = cpu.load(path, tuple(sorted(defines.items())))
    plain = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    assert fast.lib._name != plain.lib._name  # two different builds
    return tuple(cpu.CpuBatch(lib, num_envs, mode, max_steps) for lib in (fast, plain))


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("env", sorted(ENVS))
@pytest.mark.parametrize("num_envs", [7, 1000, 5000])  # one range; 2 threads' 512 + 488; tiles of 2048 + 512
def test_fast_step_matches_plain_loop(env, mode, num_envs):
    code = native.AUTORESET_CODES[mode]
    fast, plain = batches(env, num_envs, code)
    rng = np.random.default_rng(num_envs + code)
    seeds = rng.integers(0, 2**63, num_envs, dtype=np.uint64)
    for b in (fast, plain):
        b.reset(seeds, None)
    ended_total = 0
    for t in range(100):
        actions = rng.integers(0, fast.env.num_actions, (num_envs, fast.env.num_agents))
        ended = [b.step(actions) for b in (fast, plain)]
        assert ended[0] == ended[1], f"step {t}"
        ended_total += ended[0]
        for name in BUFFERS + (["final_obs"] if mode == "SameStep" else []):
            np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=f"{name} at step {t}")
        if mode == "Disabled" and t % 3 == 2:  # reset some ended envs, step the others past their end
            done = fast.terminated | fast.truncated
            mask = done & (rng.random(num_envs) < 0.7)
            for b in (fast, plain):
                b.reset(None, mask)
    assert ended_total > num_envs  # many envs ended, mid-batch, while others ran on


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_fast_step_matches_plain_loop_with_one_step_episodes(mode):
    """max_episode_steps=1: every env ends on every step, and the NEXT_STEP resets alternate."""
    fast, plain = batches("random_walk", 300, native.AUTORESET_CODES[mode])
    for b in (fast, plain):
        b.max_episode_steps = 1
        b.reset(np.arange(300, dtype=np.uint64), None)
    rng = np.random.default_rng(5)
    for _ in range(6):
        actions = rng.integers(0, 3, (300, 2))
        assert fast.step(actions) == plain.step(actions)
        for name in BUFFERS:
            np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)


def test_acrobot_float32_steps_whose_angles_turn_many_times_match_the_plain_loop():
    """Set states with angles far outside [-pi, pi], so that a step's angles turn up to ~10 times: the vector
    pass hands those steps to env_step (FV_SIMD_REDO), and every buffer and slot byte equals the plain loop's,
    the other envs stepped in the same passes."""
    n = 3000
    fast, plain = batches("acrobot_float32", n, native.AUTORESET_CODES["Disabled"])
    rng = np.random.default_rng(13)
    states = rng.uniform(-1, 1, (n, 4)) * [np.pi, np.pi, 4 * np.pi, 9 * np.pi]
    far = rng.random(n) < 0.3
    states[far, :2] = rng.choice([-1.0, 1.0], (far.sum(), 2)) * rng.uniform(3 * np.pi, 20 * np.pi, (far.sum(), 2))
    for b in (fast, plain):
        b.reset(np.arange(n, dtype=np.uint64), None)
        b.slots[:, :16].view(np.float32)[:] = states.astype(np.float32)
    actions = rng.integers(0, 3, (n, 1))
    assert fast.step(actions) == plain.step(actions)
    for name in BUFFERS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)


# each car's state type and goal position
CARS = {"mountaincarcontinuous": (np.float32, 0.45), "mountaincar": (np.float64, 0.5)}


def car_batches(car: str, num_envs: int, mode: str = "Disabled", goal_velocity_micro: int = 0):
    defines = {"GOAL_VELOCITY_MICRO": goal_velocity_micro} if goal_velocity_micro else {}
    path = native.source_path(car)
    fast = cpu.load(path, tuple(sorted({**defines, "SIMD_STEP": 1}.items())))  # the passes, with AVX2 or not
    plain = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    return [cpu.CpuBatch(lib, num_envs, native.AUTORESET_CODES[mode], None) for lib in (fast, plain)]


def set_car_states(batches, car: str, position, velocity) -> None:
    for b in batches:
        b.reset(np.arange(len(position), dtype=np.uint64), None)
        b.slots[:, :16].view(np.float64)[:] = np.stack([position, velocity], 1)
        if car == "mountaincarcontinuous":  # float32_state: stepped before, as its vector pass requires
            b.slots[:, 16:20].view(np.int32)[:, 0] = 1


def car_actions(car: str, rng, n: int) -> np.ndarray:
    if car == "mountaincar":
        return rng.integers(0, 3, (n, 1))
    actions = rng.uniform(-2, 2, (n, 1, 1)).astype(np.float32)
    bound = rng.random(n) < 0.2
    actions[bound] = rng.choice(np.float32([1.0, -1.0, 1.0000001, -1.0000001]), (bound.sum(), 1, 1))
    return actions


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
@pytest.mark.parametrize("goal_velocity_micro", [0, 20000])
def test_mountaincar_continuous_vector_step_matches_the_plain_loop_over_episodes(mode, goal_velocity_micro):
    """MountainCarContinuous's float32 states take the vector pass (a polynomial cos, kept where its rounding to
    float32 is glibc's): half the cars pump energy (pushing with their velocity, at forces at and beyond the
    bounds) and reach the goal, the others push at random; every buffer and slot byte equals the plain loop's."""
    n = 1000
    fast, plain = car_batches("mountaincarcontinuous", n, mode, goal_velocity_micro)
    for b in (fast, plain):
        b.max_episode_steps = 999
        b.reset(np.arange(n, dtype=np.uint64), None)
    rng = np.random.default_rng(goal_velocity_micro + len(mode))
    pumping = np.arange(n) % 2 == 0
    terminated = 0
    for t in range(1100):
        actions = (rng.standard_normal(n) * rng.choice([0.3, 1.0, 3.0], n)).astype(np.float32)
        push = np.where(fast.obs[:, 0, 1] >= 0, 1, -1) * rng.choice([0.99, 1.0, 1.5], n)
        actions[pumping] = push[pumping]
        assert fast.step(actions.reshape(n, 1, 1)) == plain.step(actions.reshape(n, 1, 1)), f"step {t}"
        for name in BUFFERS + (["final_obs"] if mode == "SameStep" else []):
            np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=f"{name} at step {t}")
        terminated += int(fast.terminated.sum())
    assert terminated > n  # many reached the goal, others were truncated at 999 steps


@pytest.mark.parametrize("car", sorted(CARS))
def test_mountain_car_vector_steps_match_the_plain_loop_at_the_bounds(car):
    """One step at a time from states at and beyond the track's ends, the speed limits and the goal, with forces
    at and beyond the bounds: the clips, the wall's rule and the goal's test, as the plain loop does them (the
    discrete car's vector pass takes the states in the valley; the others are set aside)."""
    n = 100_000
    real, goal = CARS[car]
    fast, plain = car_batches(car, n)
    rng = np.random.default_rng(17)
    position = rng.uniform(-1.3, 0.7, n).astype(real)
    velocity = rng.uniform(-0.09, 0.09, n).astype(real)
    edge = rng.random(n) < 0.3
    position[edge] = rng.choice(np.array([-1.2, 0.6, goal, -1.1999999, goal + 2e-8, -0.285, -0.81], real), edge.sum())
    velocity[edge] = rng.choice(np.array([0.07, -0.07, 0.0, 0.06999, -0.0699], real), edge.sum())
    set_car_states((fast, plain), car, position, velocity)
    actions = car_actions(car, rng, n)
    for t in range(3):
        assert fast.step(actions) == plain.step(actions)
        for name in BUFFERS:
            np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=f"{name} at step {t}")
    assert (fast.obs[:, 0, 0] == np.float32(-1.2)).sum() > 100 and fast.terminated.sum() > 100
    assert (np.abs(fast.obs[:, 0, 1]) == np.float32(0.07)).any()


@pytest.mark.parametrize("car", sorted(CARS))
@pytest.mark.parametrize("end", ["wall", "goal"])
def test_mountain_car_vector_steps_match_the_plain_loop_arriving_exactly(car, end):
    """States whose step ends exactly at the left wall (the wall's rule: velocity zeroed) or exactly at the goal
    position (terminated): the velocity chosen so that position + new velocity is the target in the state's type."""
    n = 20_000
    real, goal = CARS[car]
    target = real(-1.2 if end == "wall" else goal)
    fast, plain = car_batches(car, n)
    rng = np.random.default_rng(19)
    position = (target + rng.uniform(0.01, 0.05, n) * (1 if end == "wall" else -1)).astype(real)
    actions = car_actions(car, rng, n)
    if car == "mountaincarcontinuous":
        actions = np.clip(actions, -1, 1)
    set_car_states((fast, plain), car, position, np.zeros(n, real))
    plain.step(actions)
    term = plain.slots[:, 8:16].view(np.float64)[:, 0].astype(real)  # the velocity the step leaves from rest
    speed = (target - position).astype(real)
    velocity = (speed - term).astype(real)
    exact = ((position + speed).astype(real) == target) & ((velocity + term).astype(real) == speed)
    set_car_states((fast, plain), car, position, velocity)
    assert fast.step(actions) == plain.step(actions)
    for name in BUFFERS:
        np.testing.assert_array_equal(getattr(fast, name), getattr(plain, name), err_msg=name)
    arrived = exact & (plain.slots[:, :8].view(np.float64)[:, 0] == target)
    assert arrived.sum() > n // 4
    if end == "wall":
        assert (plain.obs[arrived, 0, 1] == 0).all()
    else:
        assert plain.terminated[arrived].all()


def assert_one_cartpole_step_matches_gymnasium(states: np.ndarray, rng) -> None:
    """One step of CartPole (the CPU build's passes) from each of states (N, 4) with random actions, against
    Gymnasium's CartPole from the same state: observations and float64 states bit for bit."""
    n = len(states)
    batch = cpu.CpuBatch(cpu.load(native.source_path("cartpole"), ()), n, native.AUTORESET_CODES["Disabled"], None)
    batch.reset(np.arange(n, dtype=np.uint64), None)
    batch.slots[:, :32].view(np.float64)[:] = states
    actions = rng.integers(0, 2, (n, 1))
    batch.step(actions)
    ref = GymCartPole()
    ref.reset(seed=0)
    for i in range(n):
        ref.state = states[i].copy()
        ref.steps_beyond_terminated = None
        obs, *_ = ref.step(int(actions[i, 0]))
        np.testing.assert_array_equal(batch.obs[i, 0], obs, err_msg=f"state {states[i]!r}")
        assert batch.slots[i, :32].view(np.float64).tolist() == list(ref.state), f"state {states[i]!r}"


def test_cartpole_past_its_end_matches_gymnasium():
    """sin/cos of any angle (a fallen pole stepped on, under DISABLED), not only a live pole's:
    one step from random states with |theta| up to 60 rad, and a few huge ones, vs Gymnasium."""
    rng = np.random.default_rng(7)
    states = rng.uniform(-1, 1, (2000, 4)) * [3.0, 5.0, 60.0, 20.0]
    states[:8, 2] = [math.pi / 4, -math.pi / 4, math.pi / 2, math.pi, -3 * math.pi / 2, 1e3, -4e4, 1e5]
    assert_one_cartpole_step_matches_gymnasium(states, rng)


def test_cartpole_vector_step_matches_gymnasium_at_every_sin_cos_boundary():
    """The vector pass's sin/cos (glibc_math.h's fvm_sincos_mid: Taylor below |theta| = 0.126, the table
    above, up to 0.855469; outside, batch.h steps the env alone): one step from angles on and around each
    boundary, at table-entry midpoints and log-spaced over the whole range, both signs, vs Gymnasium."""
    edges = [2.0**-27, 2.0**-26, 0.126, 0.855469] + [(k + 0.5) / 128 for k in range(110)]
    near = [np.nextafter(e, d) for e in edges for d in (0.0, 1.0)] + edges
    thetas = np.concatenate([near, np.geomspace(2.0**-28, 1.0, 3000), [0.0]])
    thetas = np.concatenate([thetas, -thetas])
    rng = np.random.default_rng(11)
    states = rng.uniform(-1, 1, (len(thetas), 4)) * [2.0, 2.0, 0.0, 3.0]
    states[:, 2] = thetas
    assert_one_cartpole_step_matches_gymnasium(states, rng)


def test_cartpole_vector_sin_cos_matches_the_scalar_step_over_the_live_range():
    """The vector pass against the one-env-at-a-time build (fv_sin/fv_cos, tests/native/test_glibc_math.py's
    oracle) on 200,000 random angles over the whole range the vector pass covers, both signs."""
    n = 200_000
    fast, plain = batches("cartpole", n, native.AUTORESET_CODES["Disabled"])
    rng = np.random.default_rng(12)
    states = rng.uniform(-1, 1, (n, 4)) * [2.0, 2.0, 0.0, 3.0]
    states[:, 2] = rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(math.log(2.0**-26), math.log(0.855469), n))
    actions = rng.integers(0, 2, (n, 1))
    for b in (fast, plain):
        b.reset(np.arange(n, dtype=np.uint64), None)
        b.slots[:, :32].view(np.float64)[:] = states
        b.step(actions)
    np.testing.assert_array_equal(fast.slots, plain.slots)


@pytest.mark.parametrize("env_id,limit", [("fastvec/Breakout", 12), ("fastvec/Pong", 40)])  # 1 statistic; 3
@pytest.mark.parametrize("copy", [True, False])
def test_gymnasium_step_returns_fresh_arrays(copy, env_id, limit):
    """The CPU Gymnasium face cuts its returned arrays out of a block the C step fills: each step's
    arrays are new, apart from one another, keep their values after later steps, and equal the
    batch's own buffers (obs and every episode statistic too, some of them nonzero; obs a view of them only
    with copy=False)."""
    import gymnasium as gym

    n = 300
    envs = gym.make_vec(env_id, num_envs=n, copy=copy, max_episode_steps=limit)
    envs.reset(seed=1)
    batch = envs.unwrapped.batch
    rng = np.random.default_rng(3)
    kept, nonzero = [], set()
    for t in range(2 * limit + 6):
        obs, rew, term, trunc, info = envs.step(rng.integers(0, 3, n))
        assert rew.dtype == np.float64 and term.dtype == trunc.dtype == np.bool_
        assert rew.shape == term.shape == trunc.shape == (n,)
        np.testing.assert_array_equal(rew, batch.rewards[:, 0])
        np.testing.assert_array_equal(term, batch.terminated)
        np.testing.assert_array_equal(trunc, batch.truncated)
        np.testing.assert_array_equal(obs, batch.obs[:, 0])
        assert np.shares_memory(obs, batch.obs) != copy
        arrays = [rew, term, trunc] + ([obs] if copy else []) + list(info.values())
        if info:
            done = term | trunc
            np.testing.assert_array_equal(info["_episode_return"], done)
            np.testing.assert_array_equal(info["episode_length"], np.where(done, batch.episode_length, 0))
            assert info["episode_length"].dtype == np.int32
            for k, name in enumerate(envs.unwrapped.stat_names):
                np.testing.assert_array_equal(info["_" + name], done)
                np.testing.assert_array_equal(info[name], batch.episode_stats[:, k])
                assert info[name].dtype == np.float32
                if info[name].any():
                    nonzero.add(name)
        for a, b in [(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:]]:
            assert not np.shares_memory(a, b)
        kept.append(([a.copy() for a in arrays], arrays))
    for saved, returned in kept:  # later steps wrote elsewhere
        for s, r in zip(saved, returned):
            np.testing.assert_array_equal(s, r)
    assert any(len(returned) > 4 for _, returned in kept)  # some steps had episode info
    if len(envs.unwrapped.stat_names) > 1:  # values that one statistic read for another would change
        assert len(nonzero) >= 2


@pytest.mark.parametrize("bad_env", [3, 700, 999])  # in the first thread's range, and in the second's
def test_bad_action_anywhere_steps_nothing(bad_env):
    """Each thread checks its own envs' actions; a bad one in either range stops both threads."""
    fast, _ = batches("random_walk", 1000, native.AUTORESET_CODES["NextStep"])
    fast.reset(np.arange(1000, dtype=np.uint64), None)
    actions = np.random.default_rng(bad_env).integers(0, 3, (1000, 2))
    for _ in range(5):  # envs ended, so some NEXT_STEP resets are pending
        fast.step(actions)
    before = {name: getattr(fast, name).copy() for name in BUFFERS}
    actions[bad_env, 1] = -2 if bad_env % 2 else 3
    with pytest.raises(cpu.ActionError, match=rf"action {actions[bad_env, 1]} out of range for Discrete\(3\) at env {bad_env}, agent 1"):
        fast.step(actions)
    for name in BUFFERS:
        np.testing.assert_array_equal(getattr(fast, name), before[name], err_msg=name)
