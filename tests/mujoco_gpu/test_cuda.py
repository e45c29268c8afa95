"""WarpBatch on a GPU (marked gpu): the device arrays mode agrees with the host arrays mode and with libmujoco,
takes CUDA arrays as actions in place, reports a non-finite one at the next synchronisation; a captured
step (MJWarp's kernels and the task's in one CUDA graph) steps as step() does; gym.make_vec(device="cuda")."""

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="MuJoCo Warp is not installed: pip install 'fastvec[mujoco-gpu]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402, F401
from fastvec.native.mujoco import MujocoBatch  # noqa: E402
from fastvec.native.mujoco.warp_batch import WarpBatch  # noqa: E402
from fastvec.native.spaces import ActionError  # noqa: E402

pytestmark = pytest.mark.gpu
RTOL = 5e-4  # test_agreement.py's, measured on Warp's CPU device
PUSH = np.array([[3.0], [-3.0], [2.0], [-2.0]], np.float32)  # InvertedPendulum: episodes end every few steps
START = np.array([[0.0, 0.05, 0.0, 0.0], [0.0, -0.05, 0.0, 0.0], [0.0, 0.02, 0.0, 0.0], [0.0, -0.02, 0.0, 0.0]])


def close(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return (np.abs(got - want) / (1 + np.abs(want))).max() <= RTOL


def pushed(device, same_step, host_arrays=True):
    b = (MujocoBatch("InvertedPendulum", 4, same_step=same_step) if device == "libmujoco" else
         WarpBatch("InvertedPendulum", 4, same_step=same_step, device=device, host_arrays=host_arrays))
    b.reset(seeds=np.arange(4))
    b.set_state(None, START)
    return b


@pytest.mark.parametrize("same_step", [False, True])
def test_device_arrays_step_as_the_host_arrays_and_libmujoco(same_step):
    import warp as wp

    host, dev, cpu = pushed("cuda", same_step), pushed("cuda", same_step, False), pushed("libmujoco", same_step)
    given = wp.array(PUSH, device="cuda:0")
    wp.synchronize_device("cuda:0")  # Warp's arrays name no stream (CUDA array interface v2): ready before use
    ended = 0
    for _ in range(30):
        for b in (host, cpu):
            b.step(PUSH)
        assert dev.step(given) is None  # a CUDA array in place; nothing waited for
        for key in ("terminated", "truncated", "was_reset"):
            np.testing.assert_array_equal(np.asarray(getattr(dev, key)), getattr(host, key), err_msg=key)
            np.testing.assert_array_equal(getattr(cpu, key), getattr(host, key), err_msg=key)
        assert close(np.asarray(dev.obs), host.obs) and close(host.obs, cpu.obs)
        assert close(np.asarray(dev.rewards), host.rewards) and close(host.rewards, cpu.rewards)
        if same_step and cpu.terminated.any():
            done = cpu.terminated
            assert close(np.asarray(dev.final_obs)[done], cpu.final_obs[done])
        ended += int(cpu.terminated.sum())
    assert ended >= 4  # the resets were exercised


def test_device_outputs_are_cuda_arrays_that_each_step_overwrites_in_place():
    import warp as wp

    b = pushed("cuda", False, False)
    b.step(PUSH)
    cai = b.obs.__cuda_array_interface__
    assert cai["shape"] == (4, b.obs_size) and cai["typestr"] == "<f8" and b.obs.__dlpack_device__() == (2, 0)
    b.step(PUSH)
    assert b.obs.__cuda_array_interface__["data"] == cai["data"]  # the same memory, the next step's values
    b.synchronize()
    other = wp.array(ptr=cai["data"][0], shape=cai["shape"], dtype=wp.float64, device="cuda:0")  # another reader
    np.testing.assert_array_equal(other.numpy(), np.asarray(b.obs))
    assert b.terminated.dtype == np.bool_ and b.terminated.shape == (4,)


def test_a_non_finite_device_action_is_reported_at_the_next_synchronisation():
    import warp as wp

    b = pushed("cuda", False, False)
    bad = PUSH.copy()
    bad[2, 0] = np.nan
    given = wp.array(bad, device="cuda:0")
    wp.synchronize_device("cuda:0")
    b.step(given)
    with pytest.raises(ActionError, match=r"env 2, dimension 0\) of InvertedPendulum was given to a step on the GPU"):
        b.synchronize()
    b.synchronize()  # reported once
    host = pushed("cuda", False)
    with pytest.raises(ActionError, match="nothing was stepped"):
        host.step(bad)


@pytest.mark.parametrize("same_step", [False, True])
def test_a_captured_step_steps_as_step_does(same_step):
    eager, graphed = pushed("cuda", same_step, False), pushed("cuda", same_step, False)
    step = graphed.capture_step()
    graphed.put_actions(PUSH)
    for _ in range(30):
        eager.step(PUSH)
        step.launch()
        graphed.synchronize()
        for key in ("terminated", "truncated", "was_reset"):
            np.testing.assert_array_equal(np.asarray(getattr(graphed, key)), np.asarray(getattr(eager, key)), key)
        assert close(np.asarray(graphed.obs), np.asarray(eager.obs))


def test_one_step_of_hopper_on_the_gpu_agrees_with_libmujoco_at_8192_worlds():
    n = 8192
    cpu, gpu = MujocoBatch("Hopper", n), WarpBatch("Hopper", n, device="cuda")
    cpu.reset(seeds=np.arange(n))
    gpu.reset(seeds=np.arange(n))
    assert close(gpu.obs, cpu.obs)
    actions = np.random.default_rng(0).uniform(-1, 1, (n, 3)).astype(np.float32)
    cpu.step(actions)
    gpu.step(actions)
    assert close(gpu.obs, cpu.obs) and close(gpu.rewards, cpu.rewards)
    np.testing.assert_array_equal(gpu.terminated, cpu.terminated)


def test_make_vec_on_the_gpu():
    cpu = gym.make_vec("fastvec/Hopper-v5", num_envs=4)
    gpu = gym.make_vec("fastvec/Hopper-v5", num_envs=4, device="cuda")
    dev = gym.make_vec("fastvec/Hopper-v5", num_envs=4, device="cuda", array_type="device")
    outs = [env.reset(seed=7)[0] for env in (cpu, gpu, dev)]
    assert isinstance(outs[1], np.ndarray) and close(outs[1], outs[0]) and close(np.asarray(outs[2]), outs[0])
    actions = np.full((4, 3), 0.2, np.float32)
    steps = [env.step(actions) for env in (cpu, gpu, dev)]
    assert close(steps[1][0], steps[0][0]) and close(np.asarray(steps[2][0]), steps[0][0])
    assert hasattr(steps[2][0], "__cuda_array_interface__")
    for env in (cpu, gpu, dev):
        env.close()
