"""The mountain cars' and Pendulum's opt-in float32 variants (`float32=1`) against a NumPy float32 re-statement of
Gymnasium's rules in gymnax's order of operations (the oracle, below): whole episodes with autoresets, the oracle
run free from each episode's start, observations and rewards within a stated tolerance (the oracle's sin and cos
are the nearest floats, math32.h's within an ulp or so of them, and the difference grows along a trajectory), the
same terminations and truncations on the same steps; one step to the bit given math32.h's sin and cos; one step
within XLA's rounding of gymnax's own step where gymnax is installed. Resets are the float64 build's starts rounded
to float32, and each float32 build compiles for the GPU (its CPU == GPU bits:
tests/native/test_classic_control_gpu.py)."""

import ctypes
import shutil
import subprocess

import gymnasium as gym
import numpy as np
import pytest

import fastvec
from fastvec import native
from fastvec.native.gpu import NVCC_FLAGS

F = np.float32


def cos(x):
    """The float32 nearest cos(x) (NumPy's float64 cos, rounded): the same on every CPU, unlike NumPy's float32 loop."""
    return np.cos(x.astype(np.float64)).astype(F)


def sin(x):
    return np.sin(x.astype(np.float64)).astype(F)


def mountaincar(state, action, goal_velocity=0.0, sin=sin, cos=cos):
    """MountainCar-v0 in float32, gymnax's order: (state, reward, terminated) after `action` (0, 1, 2)."""
    pos, vel = state[:, 0], state[:, 1]
    vel = (vel + (action - 1).astype(F) * F(0.001)) - cos(F(3) * pos) * F(0.0025)
    vel = np.clip(vel, F(-0.07), F(0.07))
    pos = np.clip(pos + vel, F(-1.2), F(0.6))
    vel = np.where((pos == F(-1.2)) & (vel < 0), F(0), vel)
    terminated = (pos >= F(0.5)) & (vel.astype(np.float64) >= goal_velocity)  # Gymnasium's rule, read as float64
    return np.stack([pos, vel], 1), np.full(len(pos), -1.0, F), terminated


def mountaincar_continuous(state, action, sin=sin, cos=cos):
    """MountainCarContinuous-v0 in float32, gymnax's order; the velocity zeroed at the left wall (Gymnasium's rule)."""
    pos, vel, action = state[:, 0], state[:, 1], action[:, 0]
    force = np.clip(action, F(-1), F(1))
    vel = (vel + force * F(0.0015)) - cos(F(3) * pos) * F(0.0025)
    vel = np.clip(vel, F(-0.07), F(0.07))
    pos = np.clip(pos + vel, F(-1.2), F(0.6))
    vel = np.where((pos == F(-1.2)) & (vel < 0), F(0), vel)
    terminated = (pos >= F(0.45)) & (vel >= F(0))
    reward = F(-0.1) * (action * action) + np.where(terminated, F(100), F(0))
    return np.stack([pos, vel], 1), reward, terminated


def pendulum(state, action, sin=sin, cos=cos):
    """Pendulum-v1 in float32, gymnax's order (constants folded in float64, then rounded)."""
    th, thdot, u = state[:, 0], state[:, 1], np.clip(action[:, 0], F(-2), F(2))
    th_n = np.remainder(th + F(np.pi), F(2 * np.pi)) - F(np.pi)
    costs = (th_n * th_n + F(0.1) * (thdot * thdot)) + F(0.001) * (u * u)
    newthdot = thdot + (F(3 * 10.0 / 2) * sin(th) + F(3.0) * u) * F(0.05)
    newthdot = np.clip(newthdot, F(-8), F(8))
    return np.stack([th + newthdot * F(0.05), newthdot], 1), -costs, np.zeros(len(th), bool)


def observe(key, state, sin=sin, cos=cos):
    if key == "Pendulum":
        return np.stack([cos(state[:, 0]), sin(state[:, 0]), state[:, 1]], 1)
    return state


def policy(key, obs, rng):
    """The cars: three envs in four pump energy (push along the velocity, with noise) and reach the goal, the
    fourth acts at random and is truncated. Pendulum: random torques, past the bounds too (the env clips)."""
    n = len(obs)
    pumping = np.arange(n) % 4 != 0
    if key == "MountainCar":
        pump = np.where(rng.random(n) < 0.8, np.where(obs[:, 1] >= 0, 2, 0), rng.integers(0, 3, n))
        return np.where(pumping, pump, rng.integers(0, 3, n))
    if key == "MountainCarContinuous":
        push = np.where(obs[:, 1] >= 0, 1.0, -1.0) * rng.uniform(0.3, 1.5, n)
        push = np.where(rng.random(n) < 0.8, push, rng.uniform(-1.5, 1.5, n))
        return np.where(pumping, push, rng.uniform(-0.3, 0.3, n)).astype(F)[:, None]
    return rng.uniform(-3, 3, (n, 1)).astype(F)


ORACLES = {"MountainCar": mountaincar, "MountainCarContinuous": mountaincar_continuous, "Pendulum": pendulum}
# Tolerances on observations and rewards (absolute), the largest deviation measured over the test's episodes beside
# each. One step from the env's own state: math32.h's cos/sin are within an ulp or so of the oracle's (the nearest
# floats), so a state or a reward (Pendulum's reach -16.3) lands within an ulp or two.
STEP_TOLERANCE = 4e-6  # measured: MountainCar 6.0e-8, MountainCarContinuous 1.2e-7, Pendulum 1.9e-6
# The oracle run free over whole episodes: the ulps grow along a trajectory, most of all in Pendulum, whose upright
# balance is unstable (its observations span [-1, 1] and [-8, 8]); the cars' terminations and every truncation
# must still fall on the same steps.
EPISODE_TOLERANCE = {"MountainCar": 1e-4, "MountainCarContinuous": 1e-4, "Pendulum": 1.0}  # measured: 3.6e-5, 1.9e-5, 0.33
STEPS = {"MountainCar": 600, "MountainCarContinuous": 1500, "Pendulum": 600}  # three to four episode limits


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_float32_is_opt_in_and_checked(key):
    default, small = fastvec.make_vec(key, 2), fastvec.make_vec(key, 2, float32=1)
    assert small.unwrapped.batch.slots.shape[1] < default.unwrapped.batch.slots.shape[1]
    assert small.single_observation_space == default.single_observation_space
    assert small.single_action_space == default.single_action_space
    with pytest.raises(ValueError, match=r"float32=2 .* out of range \[0, 1\]"):
        fastvec.make_vec(key, 2, float32=2)


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_resets_are_the_float64_starts_rounded(key):
    n = 4096
    f32, f64 = gym.make_vec(f"fastvec/{key}", num_envs=n, float32=1), gym.make_vec(f"fastvec/{key}", num_envs=n)
    obs, _ = f32.reset(seed=9)
    f64.reset(seed=9)
    start = f32.get_state()
    np.testing.assert_array_equal(start, f64.get_state().astype(F))
    assert len(np.unique(start[:, 0])) > n // 2
    np.testing.assert_allclose(obs, observe(key, start.astype(F)), rtol=0, atol=2e-7)


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_whole_episodes_follow_the_float32_oracle(key):
    """Two oracles side by side: one stepped from the env's state before each step (STEP_TOLERANCE), one run free
    from each episode's start (EPISODE_TOLERANCE), restarted from the env's own state where an episode starts
    (NextStep autoreset: the step after an end returns the reset, reward 0)."""
    n, steps, tol = 1000, STEPS[key], EPISODE_TOLERANCE[key]
    envs = gym.make_vec(f"fastvec/{key}", num_envs=n, float32=1)
    limit = native.ENVS[key.lower()].max_episode_steps
    obs, _ = envs.reset(seed=4)
    free, length = envs.get_state().astype(F), np.zeros(n, int)
    rng = np.random.default_rng(5)
    resetting = np.zeros(n, bool)
    worst, ends = np.zeros(2), {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        actions = policy(key, obs, rng)
        before = envs.get_state().astype(F)
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        length += 1
        live = ~resetting
        for i, (start, tolerance) in enumerate([(before, STEP_TOLERANCE), (free, tol)]):
            want_state, want_rewards, want_terminated = ORACLES[key](start, actions)
            np.testing.assert_array_equal(terminated[live], want_terminated[live])
            np.testing.assert_array_equal(truncated[live], length[live] >= limit)
            deviation = np.abs(np.concatenate([obs - observe(key, want_state), (rewards - want_rewards)[:, None]], 1))
            assert deviation[live].max(initial=0.0) <= tolerance, f"{['one step', 'free run'][i]}: {deviation[live].max()}"
            worst[i] = max(worst[i], deviation[live].max(initial=0.0))
            if i == 1:
                free = np.where(resetting[:, None], envs.get_state().astype(F), want_state)
        np.testing.assert_array_equal(rewards[resetting], 0.0)
        assert not (terminated[resetting] | truncated[resetting]).any()
        ends["terminated"] += int(terminated[live].sum())
        ends["truncated"] += int(truncated[live].sum())
        length[resetting] = 0
        resetting = terminated | truncated
    print(f"{key}: max deviation one step {worst[0]:.3g}, free run {worst[1]:.3g}; ends {ends}")
    assert ends["truncated"] > n // 8 and (key == "Pendulum" or ends["terminated"] > n)


MATH32 = r"""
#include "math32.h"
void v_sincosf(const float* x, float* s, float* c, long n) { for (long i = 0; i < n; i++) fv_sincosf(x[i], &s[i], &c[i]); }
"""
# Set states over the whole state space: the cars' from a range past the track's ends, clipped to it (some at the
# walls, their speed at the limit); Pendulum's angle far past one turn.
STATE_RANGES = {"MountainCar": ([-1.25, -0.08], [0.65, 0.08]), "MountainCarContinuous": ([-1.25, -0.08], [0.65, 0.08]),
                "Pendulum": ([-100.0, -8.0], [100.0, 8.0])}
STATE_BOUNDS = {"MountainCar": ([-1.2, -0.07], [0.6, 0.07]), "MountainCarContinuous": ([-1.2, -0.07], [0.6, 0.07]),
                "Pendulum": (-np.inf, np.inf)}


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_one_step_is_the_oracles_to_the_bit_with_math32s_sin_and_cos(key, c_shim):
    """The oracle's arithmetic with math32.h's sin and cos in place of the nearest floats (math32.h itself is checked
    by tests/native/test_math32.py): one step from states all over the state space, with actions past the bounds,
    gives the same observation, reward and termination bits."""
    lib = c_shim(MATH32)

    def sincos(x):
        x = np.ascontiguousarray(x, F)
        s, c = np.empty_like(x), np.empty_like(x)
        lib.v_sincosf(*(a.ctypes.data_as(ctypes.c_void_p) for a in (x, s, c)), ctypes.c_long(x.size))
        return s, c

    trig = {"sin": lambda x: sincos(x)[0], "cos": lambda x: sincos(x)[1]}
    n, rng = 20000, np.random.default_rng(3)
    envs = gym.make_vec(f"fastvec/{key}", num_envs=n, float32=1)
    envs.reset(seed=0)
    low, high = STATE_RANGES[key]
    states = np.clip(rng.uniform(low, high, (n, 2)), *STATE_BOUNDS[key])
    if key == "MountainCar":
        actions = rng.integers(0, 3, n)
    else:
        actions = (rng.uniform(-1.5, 1.5, (n, 1)) * envs.single_action_space.high).astype(F)
    if key != "Pendulum":  # the first envs one step short of the goal's and the wall's edges
        edge_action = actions[:1] * 0 + (1 if key == "MountainCar" else 0)  # no push: the gravity term alone
        edges = car_edges(lambda state: ORACLES[key](state, np.repeat(edge_action, len(state), 0), **trig))
        states[:len(edges)], actions[:len(edges)] = edges, edge_action
    envs.set_state(states)
    start = envs.get_state().astype(F)
    obs, rewards, terminated, _, _ = envs.step(actions)
    want_state, want_rewards, want_terminated = ORACLES[key](start, actions, **trig)
    np.testing.assert_array_equal(obs.view(np.uint32), observe(key, want_state, **trig).view(np.uint32))
    np.testing.assert_array_equal(rewards, want_rewards)
    np.testing.assert_array_equal(terminated, want_terminated)
    if key != "Pendulum":
        assert 0 < terminated.sum() < n and (start[:, 0] == F(-1.2)).sum() > n // 100  # goals and walls reached


def car_edges(step):
    """float32 car states one step from each rule's edge under `step` (the oracle with math32.h's trig, no push): the
    velocity landing exactly on 0 past the goal (terminated), the position exactly on the goal (terminated) and
    one float short of it (not), and the car against the left wall with the smallest positive velocity (kept:
    only a negative one is zeroed)."""
    push = lambda p: step(np.array([[p, 0.0]], F))[0][0, 1]  # the velocity gained from rest at p: exact
    ends = lambda s: step(np.array(s, F))
    on_goal = [F(0.55), -push(F(0.55))]
    low, high = F(0.3), F(0.6)  # bisect the start whose step ends on the goal, at speed 0.02
    while np.nextafter(low, high) < high:
        mid = F(low + (high - low) / F(2))
        low, high = (low, mid) if ends([[mid, 0.02]])[2][0] else (mid, high)
    wall = [F(-1.2), np.nextafter(-push(F(-1.2)), F(np.inf))]
    starts = np.array([on_goal, [high, 0.02], [low, 0.02], wall], F)
    state, _, terminated = ends(starts)
    assert terminated.tolist() == [True, True, False, False] and state[0, 1] == 0.0 and state[3, 0] == F(-1.2)
    assert 0.0 < state[3, 1] < 1e-6 and state[1, 0] in (F(0.5), F(0.45))  # the goal's own float
    return starts


GYMNAX = {"MountainCar": ("MountainCar-v0", 1e-6), "MountainCarContinuous": ("MountainCarContinuous-v0", 1e-6),
          "Pendulum": ("Pendulum-v1", 2e-5)}  # (gymnax id, tolerance): measured 3.0e-8, 6.0e-8 and 7.6e-6


@pytest.mark.parametrize("key", sorted(GYMNAX))
def test_one_step_is_gymnaxs_where_its_rules_are_gymnasiums(key, load_benchmark):
    """gymnax's own step_env from the same states (jitted on the CPU): the same rewards and terminations, the
    observations within XLA's float32 rounding (its sin and cos are its own; Pendulum's angles reach 100, whose
    float32 ulp is 7.6e-6). gymnax's continuous car zeroes a negative velocity at the goal and not at the left
    wall, where Gymnasium's rule (kept here) is the reverse: those states are left out."""
    pytest.importorskip("jax")
    load_benchmark("env_steps")._flax_struct_shim()  # gymnax needs only flax.struct
    gymnax = pytest.importorskip("gymnax")
    import jax
    import jax.numpy as jnp

    gymnax_id, tolerance = GYMNAX[key]
    n, rng = 5000, np.random.default_rng(8)
    envs = gym.make_vec(f"fastvec/{key}", num_envs=n, float32=1)
    envs.reset(seed=0)
    envs.set_state(np.clip(rng.uniform(*STATE_RANGES[key], (n, 2)), *STATE_BOUNDS[key]))
    start = envs.get_state().astype(F)
    if key == "MountainCar":
        actions = rng.integers(0, 3, n)
    else:
        actions = (rng.uniform(-1.5, 1.5, (n, 1)) * envs.single_action_space.high).astype(F)
    obs, rewards, terminated, _, _ = envs.step(actions)
    env, params = gymnax.make(gymnax_id)
    state_type = type(env.reset_env(jax.random.PRNGKey(0), params)[1])

    def step(s, a):
        fields = {"theta": s[0], "theta_dot": s[1], "last_u": jnp.float32(0)} if key == "Pendulum" else \
                 {"position": s[0], "velocity": s[1]}
        o, _, r, d, _ = env.step_env(jax.random.PRNGKey(0), state_type(time=0, **fields), a, params)
        return o, r, d

    g_obs, g_rewards, g_done = map(np.asarray, jax.jit(jax.vmap(step))(jnp.asarray(start), jnp.asarray(actions)))
    same = np.ones(n, bool)
    if key == "MountainCarContinuous":
        same = ~((obs[:, 0] >= F(0.45)) & (obs[:, 1] < 0)) & (obs[:, 0] != F(-1.2))
        assert same.sum() > n * 0.8
    np.testing.assert_allclose(obs[same], g_obs[same], rtol=0, atol=tolerance)
    np.testing.assert_allclose(rewards[same], g_rewards[same], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(terminated[same], g_done[same])
    assert key == "Pendulum" or 0 < terminated[same].sum() < same.sum()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("key", ["mountaincar", "mountaincarcontinuous", "pendulum"])
def test_float32_builds_compile_for_the_gpu(key, tmp_path):
    driver = tmp_path / "driver.cu"
    driver.write_text(f'#include "{native.source_path(key).name}"\n#include "batch.h"\n')
    cmd = ["nvcc", "--cubin", "-arch=sm_90", *NVCC_FLAGS, "-DFLOAT32=1", f"-I{native.NATIVE_DIR}", str(driver), "-o",
           str(tmp_path / "env.cubin")]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
