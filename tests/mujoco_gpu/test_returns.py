"""Episodes on MuJoCo Warp (Warp's CPU device, and marked gpu a GPU) against libmujoco's: a fixed policy's episode
returns on WarpBatch have the same distribution as on MujocoBatch (two-sample Kolmogorov-Smirnov at the 0.1%
level, and means within 4 standard errors), for Hopper and InvertedPendulum; SAME_STEP and NEXT_STEP autoreset as
MujocoBatch's."""

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="MuJoCo Warp is not installed: pip install 'fastvec[mujoco-gpu]'")

from fastvec.native.mujoco import MujocoBatch  # noqa: E402
from fastvec.native.mujoco.warp_batch import WarpBatch  # noqa: E402

# Fixed policies with short episodes (MJWarp on Warp's CPU device steps slowly): Hopper pushing one way falls in
# 12-14 steps (return 8.4 +- 0.15), InvertedPendulum without a push drops its pole in 25 steps on average.
POLICIES = {"Hopper": np.array([0.5, -0.5, 0.5], np.float32), "InvertedPendulum": np.zeros(1, np.float32)}
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
KS_CRITICAL = 1.95  # the two-sample KS statistic's critical value at alpha = 0.001, times sqrt((n + m) / (n m))


def episode_returns(batch, action, seeds):
    """The first episode's return of every env from reset with seeds, under a constant action."""
    n = batch.num_envs
    batch.reset(seeds=seeds)
    total, done = np.zeros(n), np.zeros(n, bool)
    actions = np.tile(action, (n, 1))
    while not done.all():
        batch.step(actions)
        total += np.where(done, 0.0, batch.rewards)
        done |= batch.terminated | batch.truncated
    return total


def ks_statistic(a, b):
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    return np.abs(cdf_a - cdf_b).max()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("task", list(POLICIES))
def test_fixed_policy_returns_have_the_cpu_batchs_distribution(task, device):
    n_warp, n_cpu = 48, 2000
    # other seeds than the reference's: independent samples, not the same starts rounded to float32
    warp = episode_returns(WarpBatch(task, n_warp, same_step=True, device=device), POLICIES[task],
                           np.arange(10**6, 10**6 + n_warp))
    cpu = episode_returns(MujocoBatch(task, n_cpu, same_step=True), POLICIES[task], np.arange(n_cpu))
    d = ks_statistic(warp, cpu)
    critical = KS_CRITICAL * np.sqrt((n_warp + n_cpu) / (n_warp * n_cpu))
    assert d < critical, \
        f"{task}: KS statistic {d:.3f} >= {critical:.3f} (returns {warp.mean():.3f} vs {cpu.mean():.3f})"
    se = np.sqrt(warp.var(ddof=1) / n_warp + cpu.var(ddof=1) / n_cpu)
    assert abs(warp.mean() - cpu.mean()) < 4 * se, f"{task}: mean return {warp.mean():.3f} vs {cpu.mean():.3f}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("same_step", [False, True])
def test_autoreset_is_the_cpu_batchs(same_step, device):
    # InvertedPendulum from one state with a hard push: both batches end the episode at the same step
    cpu = MujocoBatch("InvertedPendulum", 2, same_step=same_step)
    warp = WarpBatch("InvertedPendulum", 2, same_step=same_step, device=device)
    for b in (cpu, warp):
        b.reset(seeds=[0, 1])
        b.set_state(None, np.array([[0.0, 0.05, 0.0, 0.0], [0.0, -0.05, 0.0, 0.0]]))
    push = np.array([[3.0], [-3.0]], np.float32)
    ended = 0
    for _ in range(40):
        cpu.step(push)
        warp.step(push)
        for key in ("terminated", "truncated", "was_reset"):
            np.testing.assert_array_equal(getattr(warp, key), getattr(cpu, key), err_msg=key)
        np.testing.assert_allclose(warp.obs, cpu.obs, rtol=1e-3, atol=1e-3)  # the next episodes' starts too
        np.testing.assert_array_equal(warp.rewards, cpu.rewards)
        ended += int(cpu.terminated.sum())
        if same_step and cpu.terminated.any():
            done = cpu.terminated
            np.testing.assert_allclose(warp.final_obs[done], cpu.final_obs[done], rtol=1e-3, atol=1e-3)
    assert ended >= 4  # the push ends episodes every few steps: the resets above were exercised
