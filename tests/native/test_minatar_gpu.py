"""The MinAtar games on the GPU (PyCUDA): the CPU build is the oracle, bit for bit, for 1,000 steps
in every autoreset mode and with every step kernel, through the fused random rollout and the
rgb_array frame. Marked `gpu`: skipped without PyCUDA and a CUDA GPU. Without one, each game's GPU
build still compiles where nvcc is installed."""

import os
import shutil
import subprocess

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import gymnasium as gym
import numpy as np
import pytest

import fastvec  # noqa: F401  (registers fastvec/<Game>-MinAtar)
from fastvec import native
from fastvec.native.cuda import STEP_KERNEL_NAMES
from fastvec.native.gpu import NVCC_FLAGS

GAMES = ["asterix-minatar", "breakout-minatar", "freeway-minatar", "seaquest-minatar", "spaceinvaders-minatar"]
MODES = ["NextStep", "SameStep", "Disabled"]


def vector_env(game, n, **kw):
    """The Gymnasium vector env of a MinAtar game, through its registered id (fastvec/<Game>-MinAtar)."""
    return gym.make_vec(native.ENVS[game].gym_id, n, **kw)


def batches(game, n, mode, limit, kernel="auto", **params):
    from fastvec.native import cpu, cuda

    path, key = native.source_path(game), tuple(sorted(native.resolve_defines(game, params).items()))
    code = native.AUTORESET_CODES[mode]
    c = cpu.CpuBatch(cpu.load(path, key), n, code, limit)
    g = cuda.CudaBatch(cuda.load(path, key, 0), n, code, limit, numpy=True, step_kernel=kernel)
    return c, g


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("game", GAMES)
def test_compiles_for_the_gpu(game, tmp_path):
    driver = tmp_path / "driver.cu"
    driver.write_text(f'#include "{native.source_path(game).name}"\n#include "batch.h"\n')
    cmd = ["nvcc", "--cubin", "-arch=sm_90", *NVCC_FLAGS, f"-I{native.NATIVE_DIR}", str(driver), "-o",
           str(tmp_path / "env.cubin")]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("game", GAMES)
def test_gpu_equals_cpu_for_1000_steps(game, mode):
    """Every buffer after every step, through terminations, truncations (a 300-step limit: Freeway's
    own end is at 2,501) and masked resets (Disabled), with sticky actions and the full action set."""
    n, steps = 512, 1000
    c, g = batches(game, n, mode, 300, minimal_action_set=0)
    rng = np.random.default_rng(7)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    c.reset(seeds, None)
    g.reset(seeds, None)
    np.testing.assert_array_equal(g.obs, c.obs)
    ended = 0
    for t in range(steps):
        actions = rng.integers(0, c.env.num_actions, (n, 1))
        c.step(actions)
        g.step(actions)
        for name in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length", "episode_stats"):
            np.testing.assert_array_equal(getattr(g, name), getattr(c, name), err_msg=f"{game} {name} at step {t}")
        done = c.terminated | c.truncated
        if mode == "SameStep":
            np.testing.assert_array_equal(g.final_obs[done], c.final_obs[done])
        ended += int(done.sum())
        if mode == "Disabled" and done.any():
            mask = done & (rng.random(n) < 0.8)
            mask[t % n] = True  # and one env that may still be running
            c.reset(None, mask)
            g.reset(None, mask.copy())
            np.testing.assert_array_equal(g.obs, c.obs)
    assert ended > n


@pytest.mark.gpu
@pytest.mark.parametrize("game", GAMES)
def test_every_step_kernel_gives_the_cpu_bits(game):
    n = 1000  # partial last blocks
    rng = np.random.default_rng(8)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    runs = [batches(game, n, "NextStep", 200, kernel) for kernel in STEP_KERNEL_NAMES]
    for c, g in runs:
        c.reset(seeds, None)
        g.reset(seeds, None)
    for t in range(300):
        actions = rng.integers(0, runs[0][0].env.num_actions, (n, 1))
        for kernel, (c, g) in zip(STEP_KERNEL_NAMES, runs):
            c.step(actions)
            g.step(actions)
            np.testing.assert_array_equal(g.obs, c.obs, err_msg=f"{game} {kernel} at step {t}")
            np.testing.assert_array_equal(g.rewards, c.rewards, err_msg=f"{game} {kernel} at step {t}")


@pytest.mark.gpu
@pytest.mark.parametrize("game", GAMES)
def test_fused_random_rollout_equals_eager_steps(game):
    n, steps = 777, 200
    fused = vector_env(game, n, device="cuda", array_type="device", max_episode_steps=150)
    eager = vector_env(game, n, device="cuda", array_type="device", max_episode_steps=150)
    fused.reset(seed=11)
    eager.reset(seed=11)
    fused.rollout("random", steps)
    b = eager.unwrapped.batch
    for t in range(steps):
        b.random_actions(t)
        eager.step(b.dev.actions)
    for name in ("slots", "obs", "rewards", "terminated", "truncated", "done", "episode_return", "episode_length"):
        np.testing.assert_array_equal(getattr(fused.unwrapped.batch.dev, name).get(), getattr(b.dev, name).get(), name)


@pytest.mark.gpu
@pytest.mark.parametrize("game", GAMES)
def test_gpu_vector_env_and_frames_equal_the_cpu(game):
    n = 64
    cpu_env = vector_env(game, n, render_mode="rgb_array")
    gpu_env = vector_env(game, n, render_mode="rgb_array", device="cuda")
    assert gpu_env.single_observation_space == cpu_env.single_observation_space
    a, b = cpu_env.reset(seed=3), gpu_env.reset(seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    rng = np.random.default_rng(5)
    for _ in range(100):
        actions = rng.integers(0, cpu_env.single_action_space.n, n)
        for x, y in zip(cpu_env.step(actions)[:4], gpu_env.step(actions)[:4]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(cpu_env.render()[5], gpu_env.render()[5])
