"""The MPE scenarios on the GPU (PyCUDA): the CPU build is the oracle, bit for bit (float64 physics, glibc's exp and
log1p from glibc_exp.h on both), in every autoreset mode, discrete and continuous actions, and with every step
kernel. Marked `gpu`: skipped without PyCUDA and a CUDA GPU; without one, each scenario's GPU build still compiles
where nvcc is installed."""

import shutil
import subprocess

import numpy as np
import pytest

from fastvec import native
from fastvec.native.cuda import STEP_KERNEL_NAMES
from fastvec.native.gpu import NVCC_FLAGS
from fastvec.native.mpe import SCENARIOS, scenario_defines

NAMES = sorted(SCENARIOS)
MODES = ["NextStep", "SameStep", "Disabled"]


def batches(name, n, mode, continuous, kernel="auto"):
    from fastvec.native import cpu, cuda

    path = native.NATIVE_DIR / SCENARIOS[name].source
    defines = tuple(sorted(scenario_defines(name, continuous, {})[0].items()))
    code = native.AUTORESET_CODES[mode]
    c = cpu.CpuBatch(cpu.load(path, defines), n, code, 25)
    g = cuda.CudaBatch(cuda.load(path, defines, 0), n, code, 25, numpy=True, step_kernel=kernel)
    return c, g


def actions(rng, batch, continuous):
    """Random actions in the batch's (largest) space; continuous ones past [0, 1] too, which the env clips."""
    env, n = batch.env, batch.num_envs
    if continuous:
        return rng.uniform(-0.2, 1.2, (n, env.num_agents, env.action_dims)).astype(np.float32)
    return rng.integers(0, env.num_actions, (n, env.num_agents, 1))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", NAMES)
def test_compiles_for_the_gpu(name, tmp_path):
    for continuous in (0, 1):
        driver = tmp_path / "driver.cu"
        driver.write_text(f'#include "{SCENARIOS[name].source}"\n#include "batch.h"\n')
        cmd = ["nvcc", "--cubin", "-arch=sm_90", *NVCC_FLAGS, f"-DCONTINUOUS_ACTIONS={continuous}",
               f"-I{native.NATIVE_DIR}", str(driver), "-o", str(tmp_path / "env.cubin")]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_gpu_equals_cpu(name, mode, continuous):
    """Every buffer after every step for 200 steps (8 episodes of 25), and the float64 states at the end."""
    n = 512
    c, g = batches(name, n, mode, continuous)
    rng = np.random.default_rng(7)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    c.reset(seeds, None)
    g.reset(seeds, None)
    np.testing.assert_array_equal(g.obs, c.obs)
    for t in range(200):
        a = actions(rng, c, continuous)
        c.step(a)
        g.step(a)
        for buf in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length"):
            np.testing.assert_array_equal(getattr(g, buf), getattr(c, buf), err_msg=f"{name} {buf} at step {t}")
        done = c.terminated | c.truncated
        if mode == "SameStep":
            np.testing.assert_array_equal(g.final_obs[done], c.final_obs[done])
        if mode == "Disabled" and done.any():
            c.reset(None, done)
            g.reset(None, done.copy())
            np.testing.assert_array_equal(g.obs, c.obs)
    np.testing.assert_array_equal(g.get_state().view(np.uint64), c.get_state().view(np.uint64))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["simple_tag", "simple_world_comm"])
def test_every_step_kernel_gives_the_cpu_bits(name):
    n = 1000  # partial last blocks
    rng = np.random.default_rng(8)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    runs = [batches(name, n, "NextStep", True, kernel) for kernel in STEP_KERNEL_NAMES]
    for c, g in runs:
        c.reset(seeds, None)
        g.reset(seeds, None)
    for t in range(100):
        a = actions(rng, runs[0][0], True)
        for kernel, (c, g) in zip(STEP_KERNEL_NAMES, runs):
            c.step(a)
            g.step(a)
            np.testing.assert_array_equal(g.obs, c.obs, err_msg=f"{name} {kernel} at step {t}")
            np.testing.assert_array_equal(g.rewards, c.rewards, err_msg=f"{name} {kernel} at step {t}")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["simple_spread", "simple_world_comm"])
def test_gpu_vector_env_equals_the_cpu(name):
    from fastvec.wrappers.mpe import vector_env

    cpu_env, gpu_env = vector_env(name, 64), vector_env(name, 64, device="cuda")
    a, b = cpu_env.reset(seed=3), gpu_env.reset(seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    rng = np.random.default_rng(5)
    for _ in range(60):
        actions = rng.integers(0, cpu_env.single_action_space.n, cpu_env.num_envs)
        for x, y in zip(cpu_env.step(actions)[:4], gpu_env.step(actions)[:4]):
            np.testing.assert_array_equal(x, y)
