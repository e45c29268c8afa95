"""batch_gpu.h's kernels with Box and MultiDiscrete actions, without a GPU (gpu_on_cpu.cpp, as in
test_env_step_kernels.py): actions read in place in any dtype the device takes and any strides equal the CPU
batch's steps; bad values (out of range, NaN, infinity) are recorded in the error word (smallest flat index,
the value's bits) and step as 0; the random policy stays in the space; the spaces and state-access kernels
give the CPU build's values."""

import ctypes

import numpy as np
import pytest
import test_env_step_kernels as emulation
from test_env_step_kernels import ENVS, NO_ERROR, EmulatedBatch, _ptr, documented_random_actions

from fastvec import native
from fastvec.native import cpu
from fastvec.native.spaces import MAX_OBS_DIMS

build = emulation.build  # the fixture: an env's kernels built for the CPU


def _env(name: str, scalar: bool = True) -> cpu.CompiledEnv:
    path, defines, _ = ENVS[name]
    extra = {"FV_CPU_SCALAR_STEP": 1} if scalar else {}
    return cpu.load(path, tuple(sorted({**defines, **extra}.items())))


def _pair(build, name: str, mode: str, n: int = 300, seed: int = 0):
    env, (_, _, max_steps) = _env(name), ENVS[name]
    code = native.AUTORESET_CODES[mode]
    ref, emu = cpu.CpuBatch(env, n, code, max_steps), EmulatedBatch(build(name), env, n, code, max_steps)
    seeds = np.arange(n, dtype=np.uint64) + seed
    ref.reset(seeds, None)
    emu.reset(seeds, None)
    return env, ref, emu


def _random_actions(env, rng, n: int) -> np.ndarray:
    shape = (n, env.num_agents, env.action_dims)
    if env.action_kind == "box":
        return rng.uniform(-3, 3, shape)  # beyond the bounds too: the env clips
    return rng.integers(0, env.spaces.nvec, shape)


def _layouts(actions: np.ndarray, env) -> list[np.ndarray]:
    """The same actions in the dtypes and strides a device array may have."""
    if env.action_kind == "box":
        typed = [actions.astype(np.float32), actions.astype(np.float32).astype(np.float64)]
    else:
        typed = [actions.astype(np.int64), actions.astype(np.int32), actions.astype(np.uint8)]
    transposed = np.ascontiguousarray(typed[0].transpose(2, 1, 0)).transpose(2, 1, 0)  # dimension-major strides
    return [*typed, transposed]


@pytest.mark.parametrize("kernel", ["staged_wide", "wide"])
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("name", ["box_point", "multi_discrete"])
def test_emulated_steps_with_box_and_multi_discrete_actions_equal_the_cpu_batch(build, name, mode, kernel):
    env, ref, emu = _pair(build, name, mode)
    rng = np.random.default_rng(len(name) + len(mode))
    ended = 0
    for t in range(16):
        actions = _random_actions(env, rng, emu.n)
        layouts = _layouts(actions, env)
        layout = layouts[t % len(layouts)]
        ref.step(actions)
        emu.step(layout, kernel)
        for field in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length"):
            np.testing.assert_array_equal(getattr(emu, field), getattr(ref, field), err_msg=f"{field} at step {t}")
        done = ref.terminated | ref.truncated
        if mode == "SameStep":
            np.testing.assert_array_equal(emu.final_obs[done], ref.final_obs[done])
        np.testing.assert_array_equal(emu.slots[:emu.n * emu.state_size].reshape(emu.n, -1),
                                      ref.slots[:, :emu.state_size], err_msg=f"states at step {t}")
        ended += int(done.sum())
        if mode == "Disabled" and done.any():
            ref.reset(None, done)
            emu.reset(None, done)
    assert emu.error[0] == NO_ERROR
    assert ended > 0


@pytest.mark.parametrize("name,bad", [("box_point", [(7, 0, 1, np.nan), (3, 0, 0, -np.inf), (200, 0, 1, np.inf)]),
                                      ("multi_discrete", [(9, 1, 0, 3), (4, 0, 1, -1), (250, 1, 1, 5)])])
def test_bad_device_actions_are_recorded_and_step_as_zero(build, name, bad):
    env, ref, emu = _pair(build, name, "NextStep")
    rng = np.random.default_rng(1)
    actions = _random_actions(env, rng, emu.n).astype(env.action_dtype)
    for i, a, d, value in bad:
        actions[i, a, d] = value
    emu.step(actions, "wide")
    stepped = actions.copy()
    for i, a, d, _ in bad:
        stepped[i, a, d] = 0
    ref.step(stepped)  # the CPU refuses bad values; the GPU steps them as 0
    np.testing.assert_array_equal(emu.obs, ref.obs)
    i, a, d, value = min(bad)
    flat = (i * env.num_agents + a) * env.action_dims + d
    bits = int(np.array(value, env.action_dtype).view(np.uint64 if env.action_dtype.itemsize == 8 else np.uint32)
               & 0xFFFFFFFF)
    assert int(emu.error[0]) == (flat << 32) | bits
    error = env.spaces.action_error(flat, np.uint32(bits).view(np.float32) if env.action_kind == "box"
                                    else int(np.uint32(bits).view(np.int32)), env.num_agents)
    assert f"at env {i}" in str(error) and f"dimension {d}" in str(error)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("name", ["box_point", "multi_discrete"])
def test_emulated_fused_rollout_draws_in_the_space_and_equals_eager_steps(build, name, staged):
    env, (_, _, max_steps) = _env(name, scalar=False), ENVS[name]
    n, key, lib = 300, 0x5EED, build(name)
    fused, eager = (EmulatedBatch(lib, env, n, 0, max_steps) for _ in range(2))
    seeds = np.arange(n, dtype=np.uint64) + 5
    fused.reset(seeds, None)
    eager.reset(seeds, None)
    fused.rollout(10, key, 0, staged)
    drawn, ended = [], 0
    for t in range(10):
        drawn.append(eager.random_actions(key, t))
        eager.step(drawn[-1], "staged_wide" if staged else "wide")
        ended += int(eager.done.sum())
    for field in ("slots", "obs", "rewards", "terminated", "truncated", "done", "episode_return", "episode_length"):
        np.testing.assert_array_equal(getattr(fused, field), getattr(eager, field), err_msg=field)
    drawn = np.array(drawn).reshape(-1, env.action_dims)
    if env.action_kind == "box":
        assert drawn.dtype == np.float32
        assert (drawn >= env.spaces.action_low).all() and (drawn < env.spaces.action_high).all()
        for d in range(env.action_dims):  # uniform: the mean and quartiles of U(low, high)
            low, high = env.spaces.action_low[d], env.spaces.action_high[d]
            np.testing.assert_allclose(np.quantile(drawn[:, d], [0.25, 0.5, 0.75]),
                                       low + (high - low) * np.array([0.25, 0.5, 0.75]), atol=0.03 * (high - low))
    else:
        for d, k in enumerate(env.spaces.nvec):
            np.testing.assert_allclose(np.bincount(drawn[:, d], minlength=k) / len(drawn), 1 / k, atol=0.02)
    assert ended > 0


@pytest.mark.parametrize("name", ["box_point", "box_open", "multi_discrete"])
def test_the_random_policy_draws_the_documented_stream_for_box_and_multi_discrete(build, name):
    """Box (bounded dimensions; and unbounded, bounded below or above only: an interval of width 2 at the finite
    bound, [-1, 1) with none) and MultiDiscrete([3, 5]) random actions are random_gpu.h's documented stream: 32 bits
    a value, two values a draw."""
    env, (_, _, max_steps) = _env(name, scalar=False), ENVS[name]
    emu = EmulatedBatch(build(name), env, 4, 0, max_steps)
    for t in (0, 1, 2, 9, 40):
        drawn = emu.random_actions(0xABC, t)
        np.testing.assert_array_equal(drawn, documented_random_actions(env, 0xABC, 4, t))
    if name == "box_open":
        drawn = np.concatenate([emu.random_actions(0xABC, t) for t in range(100)]).reshape(-1, 4)
        low, high = drawn.min(0), drawn.max(0)
        assert (low >= [-1, 0.5, -2.5, -3]).all() and (high < [1, 2.5, -0.5, 3]).all()
        assert (low < [-0.9, 0.6, -2.4, -2.8]).all() and (high > [0.9, 2.4, -0.6, 2.8]).all()


@pytest.mark.parametrize("name", ["box_point", "multi_discrete", "cartpole", "random_walk"])
def test_the_spaces_kernel_gives_the_cpu_builds_spaces(build, name):
    env, lib = _env(name), build(name)
    shape, ndim = np.zeros(MAX_OBS_DIMS, np.int32), np.zeros(1, np.int32)
    obs_low, obs_high = np.zeros(env.obs_size, np.float32), np.zeros(env.obs_size, np.float32)
    nvec = np.zeros(env.action_dims, np.int64)
    low, high = np.zeros(env.action_dims, np.float32), np.zeros(env.action_dims, np.float32)
    lib.emu_spaces(*(_ptr(a) for a in (shape, obs_low, obs_high, nvec, low, high, ndim)))
    s = env.spaces
    assert tuple(shape[:ndim[0]]) == s.obs_shape
    for got, want in [(obs_low, s.obs_low), (obs_high, s.obs_high), (nvec, s.nvec), (low, s.action_low),
                      (high, s.action_high)]:
        np.testing.assert_array_equal(got, want)


def test_emulated_state_access_equals_the_cpu_batch(build):
    _, ref, emu = _pair(build, "box_point", "NextStep", n=40)
    idx = np.array([3, 0, 39], np.int64)
    out = np.zeros((3, 2))
    emu.lib.emu_get_state(emu.n, _ptr(emu.slots), 3, _ptr(idx), _ptr(out))
    np.testing.assert_array_equal(out, ref.get_state(idx))
    values = np.array([[1.5, -0.5], [-2.0, 0.25], [4.0, 1.0]])
    emu.lib.emu_set_state(emu.n, _ptr(emu.slots), ctypes.c_int(3), _ptr(idx), _ptr(values), _ptr(emu.obs))
    ref.set_state(idx, values)
    np.testing.assert_array_equal(emu.obs, ref.obs)
    actions = np.full((40, 2), 1.0, np.float32)
    ref.step(actions)
    emu.step(actions, "wide")
    np.testing.assert_array_equal(emu.obs, ref.obs)
    np.testing.assert_array_equal(emu.slots[:40 * emu.state_size].reshape(40, -1), ref.slots[:, :emu.state_size])
