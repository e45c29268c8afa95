"""The CUDA trainer's device-env kernels (rollout.cu's device_env_actions_kernel and device_env_outputs_kernel: a
MuJoCo task on MuJoCo Warp stepped inside the rollout) without a GPU, built for the CPU by device_env_on_cpu.cpp
around the host stub a MuJoCo task's trainer module compiles, against MujocoHostBatch.step: the host-env path's
clipping of the actions and its float32 obs, rewards and episode returns and lengths, over whole episodes."""

from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness, call

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

HARNESS = Path(__file__).resolve().parent / "device_env_on_cpu.cpp"


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    from fastvec import native
    from fastvec.native.cpu import cache_dir
    from fastvec.native.gym_batch import host_stub_source
    from fastvec.native.mujoco.host_batch import MujocoHostBatch

    batch = MujocoHostBatch("Hopper", 2)
    try:
        stub = host_stub_source(batch.env, cache_dir())
    finally:
        batch.close()
    return build_harness(tmp_path_factory, HARNESS, [f"-I{native.NATIVE_DIR}", f"-I{stub.parent}", f'-DENV="{stub}"'])


def test_actions_are_clipped_to_the_control_range_as_the_host_batch_clips_them(emu):
    rng = np.random.default_rng(3)
    n, dims = 300, 3  # 900 values: more than one 256-thread block
    low = np.array([-1.0, -0.4, 0.0], np.float32)
    high = np.array([1.0, 0.4, 2.5], np.float32)
    actions = (rng.standard_normal((n, dims)) * 2).astype(np.float32)
    actions[0] = low  # the bounds themselves
    actions[1] = high
    out = np.full((n, dims), 7.0, np.float32)
    call(emu.emu_device_env_actions, np.int64(n), np.int32(dims), actions, low, high, out)
    np.testing.assert_array_equal(out, np.clip(actions, low, high))
    assert (out != actions).any() and (out == actions).any()


def test_a_non_finite_action_reaches_the_env_as_it_was_for_the_env_to_report(emu):
    low, high = np.array([-1.0, -1.0], np.float32), np.array([1.0, 1.0], np.float32)
    actions = np.array([[np.nan, 0.5], [np.inf, -np.inf], [3.0, -3.0]], np.float32)
    out = np.zeros_like(actions)
    call(emu.emu_device_env_actions, np.int64(3), np.int32(2), actions, low, high, out)
    assert np.isnan(out[0, 0]) and out[0, 1] == 0.5
    assert out[1, 0] == np.inf and out[1, 1] == -np.inf  # not clipped to a bound: the env refuses non-finite values
    np.testing.assert_array_equal(out[2], [1.0, -1.0])


@pytest.mark.parametrize("task, limit", [("Hopper", 40), ("InvertedPendulum", 1000)])
def test_step_outputs_become_the_host_batchs_obs_rewards_and_episodes(emu, task, limit):
    """The kernel fed a SAME_STEP MujocoBatch's float64 outputs writes what MujocoHostBatch.step writes from the
    same step, over episodes that terminate (InvertedPendulum falls) and are truncated (Hopper at 40 steps): float32
    obs and rewards, the flags, and each ended episode's return and length."""
    from fastvec.native.mujoco.host_batch import MujocoHostBatch

    n = 9
    host = MujocoHostBatch(task, n, max_episode_steps=limit)
    try:
        host.reset(np.arange(n, dtype=np.uint64) + 50, None)
        o, mj = host.env.obs_size, host.mj
        run_return, run_length = np.zeros(n, np.float64), np.zeros(n, np.int32)
        obs_out, rewards_out = np.zeros((n, o), np.float32), np.zeros(n, np.float32)
        ep_return_out, ep_length_out = np.zeros(n, np.float32), np.zeros(n, np.int32)
        terminated_out, truncated_out = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        rng, ended, kinds = np.random.default_rng(5), 0, set()
        for _ in range(120):
            host.step(rng.uniform(-1.5, 1.5, (n, mj.nu)).astype(np.float32))
            call(emu.emu_device_env_outputs, np.ascontiguousarray(mj.obs), np.ascontiguousarray(mj.rewards),
                 mj.terminated.view(np.uint8), mj.truncated.view(np.uint8), run_return, run_length, obs_out,
                 rewards_out, ep_return_out, ep_length_out, terminated_out, truncated_out, np.int32(n), np.int32(o))
            np.testing.assert_array_equal(obs_out, host.obs[:, 0])
            np.testing.assert_array_equal(rewards_out, host.rewards[:, 0])
            np.testing.assert_array_equal(terminated_out.astype(bool), host.terminated)
            np.testing.assert_array_equal(truncated_out.astype(bool), host.truncated)
            done = host.terminated | host.truncated
            np.testing.assert_array_equal(ep_return_out[done], host.episode_return[done, 0])
            np.testing.assert_array_equal(ep_length_out[done], host.episode_length[done])
            assert (run_return[done] == 0).all() and (run_length[done] == 0).all()
            ended += int(done.sum())
            kinds |= {"terminated"} if host.terminated.any() else set()
            kinds |= {"truncated"} if host.truncated.any() else set()
        assert ended >= n and ("truncated" if task == "Hopper" else "terminated") in kinds
    finally:
        host.close()
