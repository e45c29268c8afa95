"""The classic-control envs on the GPU give the CPU's bits: 1,000 steps of 4,096 envs from the same seeds and
from the same set states (angles and speeds over their whole ranges), with autoresets, random and out-of-bound
actions; observations, rewards, flags and the float64 states compared bit for bit. Marked `gpu`."""

import numpy as np
import pytest

import fastvec
from fastvec import native

KEYS = ["cartpole", "acrobot", "acrobot-float32", "mountaincar", "mountaincar-float32", "mountaincarcontinuous",
        "mountaincarcontinuous-float32", "pendulum", "pendulum-float32"]
# random set states: (low, high) per state variable, wider than a reset draws
STATE_RANGES = {
    "cartpole": ([-2.4, -3, -0.2, -3], [2.4, 3, 0.2, 3]),
    "acrobot": ([-np.pi, -np.pi, -4 * np.pi, -9 * np.pi], [np.pi, np.pi, 4 * np.pi, 9 * np.pi]),
    "acrobot-float32": ([-np.pi, -np.pi, -4 * np.pi, -9 * np.pi], [np.pi, np.pi, 4 * np.pi, 9 * np.pi]),
    "mountaincar": ([-1.2, -0.07], [0.6, 0.07]),
    "mountaincarcontinuous": ([-1.2, -0.07], [0.6, 0.07]),
    "pendulum": ([-100.0, -8.0], [100.0, 8.0]),
}
STATE_RANGES.update({f"{key}-float32": STATE_RANGES[key] for key in ("mountaincar", "mountaincarcontinuous", "pendulum")})


def pair(key: str, n: int):
    """The CPU and GPU batches of a registry key, or of its float32 variant ("<key>-float32")."""
    key, float32 = key.removesuffix("-float32"), key.endswith("-float32")
    path, limit = native.source_path(key), native.ENVS[key].max_episode_steps
    defines = {"FLOAT32": 1} if float32 else {}
    return [fastvec.make_vec_from_source(path, n, max_episode_steps=limit, device=d, **defines) for d in ("cpu", "cuda")]


def actions(envs, rng):
    space = envs.single_action_space
    if hasattr(space, "n"):
        return rng.integers(0, space.n, envs.num_envs)
    return rng.uniform(1.5 * space.low, 1.5 * space.high, (envs.num_envs, *space.shape)).astype(np.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("key", KEYS)
def test_gpu_steps_equal_cpu_steps(key):
    n, rng = 4096, np.random.default_rng(0)
    cpu, gpu = pair(key, n)
    for envs in (cpu, gpu):
        envs.reset(seed=7)
    np.testing.assert_array_equal(cpu.get_state().view(np.uint64), gpu.get_state().view(np.uint64))
    low, high = STATE_RANGES[key]
    states = rng.uniform(low, high, (n, len(low)))
    states[: n // 2] = cpu.get_state()[: n // 2]  # half from resets, half set
    for envs in (cpu, gpu):
        envs.set_state(states)
    ended = 0
    for t in range(1000):
        a = actions(cpu, rng)
        out_c, out_g = cpu.step(a), gpu.step(a)
        for name, c, g in zip(("obs", "reward", "terminated", "truncated"), out_c[:4], out_g[:4]):
            np.testing.assert_array_equal(np.asarray(c), np.asarray(g), err_msg=f"{key} {name} at step {t}")
        np.testing.assert_array_equal(out_c[0].view(np.uint32), np.asarray(out_g[0]).view(np.uint32))
        ended += int(np.sum(out_c[2] | out_c[3]))
        if t % 100 == 99:
            np.testing.assert_array_equal(cpu.get_state().view(np.uint64), gpu.get_state().view(np.uint64),
                                          err_msg=f"{key} states at step {t}")
    assert ended > 0
