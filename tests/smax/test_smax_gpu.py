"""SMAX's action masks and world state on the GPU backend equal the CPU backend's, through steps, autoresets,
masked resets, set states and a policy rollout (device arrays included); skipped without a GPU."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR
from fastvec.native.batches import load_batch


def batches(name_map: int, n: int, autoreset: str, **gpu):
    params = {"MAP": name_map}
    return (load_batch(NATIVE_DIR / "smax.h", n, params, autoreset=autoreset, max_episode_steps=15),
            load_batch(NATIVE_DIR / "smax.h", n, params, autoreset=autoreset, max_episode_steps=15, device="cuda",
                       **gpu))


@pytest.mark.gpu
@pytest.mark.parametrize("autoreset", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("name_map", [0, 4, 11, 13])  # 3m, 3s5z_vs_3s6z, smacv2_5_units, smacv2_20_units
def test_gpu_masks_and_world_state_equal_the_cpu_batch(name_map, autoreset):
    n = 300
    cpu_batch, gpu_batch = batches(name_map, n, autoreset)
    assert gpu_batch.action_mask.shape == cpu_batch.action_mask.shape and gpu_batch.action_mask.dtype == np.uint8
    seeds = np.arange(n, dtype=np.uint64)
    rng = np.random.default_rng(name_map)
    for b in (cpu_batch, gpu_batch):
        b.reset(seeds, None)
    ended = 0
    for t in range(40):
        np.testing.assert_array_equal(gpu_batch.action_mask, cpu_batch.action_mask, err_msg=f"step {t}")
        np.testing.assert_array_equal(gpu_batch.world_state, cpu_batch.world_state, err_msg=f"step {t}")
        logits = np.where(cpu_batch.action_mask, rng.random(cpu_batch.action_mask.shape), -1.0)
        actions = logits.argmax(-1)
        for b in (cpu_batch, gpu_batch):
            b.step(actions)
        done = cpu_batch.terminated | cpu_batch.truncated
        ended += int(done.sum())
        if autoreset == "Disabled" and done.any():
            for b in (cpu_batch, gpu_batch):
                b.reset(None, done)
    assert ended > 0
    state = cpu_batch.get_state()
    state[:, 2] = 0.0  # ally_0 killed: its moves leave the masks
    state[:, 4] = 0.0
    for b in (cpu_batch, gpu_batch):
        b.set_state(None, state)
    assert not cpu_batch.action_mask[:, 0, :4].any()
    np.testing.assert_array_equal(gpu_batch.action_mask, cpu_batch.action_mask)
    np.testing.assert_array_equal(gpu_batch.world_state, cpu_batch.world_state)


@pytest.mark.gpu
@pytest.mark.parametrize("graph", [False, True])
def test_a_policy_rollout_refreshes_the_masks_every_step(graph):
    """rollout(policy) steps on the device (in a captured graph with graph=True), where a policy reads
    batch.dev.action_mask: the masks and world state after it are the CPU batch's after the same steps."""
    import pycuda.driver as drv

    n, steps = 64, 30
    cpu_batch, gpu_batch = batches(0, n, "SameStep", host_arrays=True)
    for b in (cpu_batch, gpu_batch):
        b.reset(np.arange(n, dtype=np.uint64), None)

    def policy(t, batch):  # every agent moves up (action 0), written on the device
        drv.memset_d8_async(batch.dev.actions.ptr, 0, batch.dev.actions.nbytes, batch.stream)
    gpu_batch.rollout(policy, steps, graph=graph)
    gpu_batch.synchronize()
    for _ in range(steps):
        cpu_batch.step(np.zeros((n, 6), np.int64))
    mirrors = np.array(gpu_batch.action_mask), np.array(gpu_batch.world_state)
    np.testing.assert_array_equal(mirrors[0], cpu_batch.action_mask)
    np.testing.assert_array_equal(mirrors[1], cpu_batch.world_state)
