"""WarpBatch's GPU side without a GPU: on Warp's CPU device, with the launcher and PyCUDA's copies replaced by the
host build and memmove (warp_cuda.CudaKernels' interface), the device arrays mode (DeviceArray outputs, device
actions in place, a non-finite one reported at the next synchronisation) and the host arrays mode (outputs copied
back after each step) give what the CPU device's batch gives; a step limit of 0 is no limit, and close() waits for
the kernels. What this cannot check is the GPU's own: the cubin's launches, the stream order with MJWarp, graph
capture (tests/mujoco_gpu/test_cuda.py, marked gpu)."""

import ctypes
import sys
import types

import numpy as np
import pytest

pytest.importorskip("mujoco_warp", reason="MuJoCo Warp is not installed: pip install 'fastvec[mujoco-gpu]'")

from fastvec.native.device_array import STREAMS, DeviceArray  # noqa: E402
from fastvec.native.mujoco.warp_batch import WarpBatch, task_file, view_library  # noqa: E402
from fastvec.native.spaces import ActionError  # noqa: E402

HANDLE = 0x5EED  # the emulated stream's handle


class HostCopies(types.ModuleType):
    """pycuda.driver's copies, over host memory."""

    @staticmethod
    def memcpy_htod(ptr, values):
        values = np.ascontiguousarray(values)
        ctypes.memmove(int(ptr), values.ctypes.data, values.nbytes)

    @staticmethod
    def memcpy_dtoh(out, ptr):
        ctypes.memmove(out.ctypes.data, int(ptr), out.nbytes)


class HostKernels:
    """warp_cuda.CudaKernels' interface with the host build of mj_view.cu as the kernels."""

    handle, index, warp_stream = HANDLE, 0, None
    drv = HostCopies("pycuda.driver")

    def __init__(self, task: str):
        self.lib = view_library(task_file(task))
        self.launched = []

    def launch(self, name, job, num_worlds):
        self.launched.append(name)
        getattr(self.lib, name)(job)

    def synchronize(self):
        pass


class EmulatedGpuBatch(WarpBatch):
    def _device_kernels(self, task):
        return HostKernels(task)


@pytest.fixture(autouse=True)
def host_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda.driver", HostKernels.drv)
    monkeypatch.setitem(STREAMS, HANDLE, types.SimpleNamespace(synchronize=lambda: None))


PUSH = np.array([[3.0], [-3.0], [2.0], [-2.0]], np.float32)
START = np.array([[0.0, 0.05, 0.0, 0.0], [0.0, -0.05, 0.0, 0.0], [0.0, 0.02, 0.0, 0.0], [0.0, -0.02, 0.0, 0.0]])


def pushed(cls, same_step, **keywords):
    b = cls("InvertedPendulum", 4, same_step=same_step, **keywords)
    b.reset(seeds=np.arange(4))
    b.set_state(None, START)
    return b


def device_actions(values: np.ndarray) -> DeviceArray:
    return DeviceArray(values.ctypes.data, values.shape, values.dtype, values, HANDLE, 0)


@pytest.mark.parametrize("same_step", [False, True])
def test_both_array_modes_step_as_the_cpu_device(same_step):
    cpu = pushed(WarpBatch, same_step)
    host = pushed(EmulatedGpuBatch, same_step)
    dev = pushed(EmulatedGpuBatch, same_step, host_arrays=False)
    assert isinstance(dev.obs, DeviceArray) and isinstance(host.obs, np.ndarray)
    given = PUSH.copy()
    resets = 0
    for k in range(30):
        cpu.step(PUSH)
        assert host.step(PUSH) == int((cpu.terminated | cpu.truncated).sum())
        assert dev.step(device_actions(given) if k % 2 else PUSH) is None  # device actions in place, or NumPy
        for name in ("obs", "rewards", "terminated", "truncated", "was_reset", "unstable", "info"):
            np.testing.assert_array_equal(getattr(host, name), getattr(cpu, name), err_msg=name)
            np.testing.assert_array_equal(np.asarray(getattr(dev, name)), getattr(cpu, name), err_msg=name)
        if same_step:
            np.testing.assert_array_equal(np.asarray(dev.final_obs), cpu.final_obs)
        resets += int(cpu.was_reset.sum())
    assert resets >= 4
    np.testing.assert_array_equal(dev.get_state(), cpu.get_state())


def test_device_actions_with_a_non_finite_value_are_reported_at_the_next_synchronisation():
    dev = pushed(EmulatedGpuBatch, False, host_arrays=False)
    bad = PUSH.copy()
    bad[2, 0] = np.inf
    dev.step(device_actions(bad))  # stepped, the bad action taken as 0
    with pytest.raises(ActionError, match=r"env 2, dimension 0\) of InvertedPendulum was given to a step on the GPU"):
        dev.synchronize()
    dev.synchronize()  # reported once
    dev.step(PUSH)
    with pytest.raises(ActionError, match="env 1, dimension 0"):
        bad = PUSH.copy()
        bad[1, 0] = np.nan
        dev.step(bad)  # NumPy actions in device mode: checked on the device too
        dev.reset()  # reset synchronises first


def test_device_actions_of_the_wrong_kind_are_refused_before_stepping():
    dev = pushed(EmulatedGpuBatch, False, host_arrays=False)
    for wrong in (np.zeros((4, 1), np.int32), np.zeros((4, 2), np.float32), np.zeros((1, 4), np.float32)[:, ::2]):
        with pytest.raises(ValueError, match="device actions for 4 envs of InvertedPendulum must be 4 x 1 float32"):
            dev.step(device_actions(wrong))
    assert dev.step(device_actions(np.zeros((4, 1), np.float64))) is None


def test_a_step_is_one_sequence_of_launches_and_put_actions_fills_the_captured_steps_actions():
    dev = pushed(EmulatedGpuBatch, True, host_arrays=False)
    dev.put_actions(PUSH)
    np.testing.assert_array_equal(np.asarray(dev.dev.actions), PUSH)
    dev._gpu.launched.clear()
    dev.step(dev.dev.actions)
    assert dev._gpu.launched == ["fv_mjv_take", "fv_mjv_act", "fv_mjv_after", "fv_mjv_keep", "fv_mjv_book",
                                 "fv_mjv_reset", "fv_mjv_observe", "fv_mjv_keep"]


@pytest.mark.parametrize("autoreset", ["NextStep", "SameStep"])
def test_the_face_with_device_arrays_gives_the_cpu_devices_values(monkeypatch, autoreset):
    import gymnasium as gym
    from gymnasium.vector import AutoresetMode

    import fastvec  # noqa: F401
    from fastvec.native.mujoco import warp_batch

    class OnTheCpuDevice(EmulatedGpuBatch):  # the face asks for cuda; Warp's CPU device serves it here
        def __init__(self, *args, **keywords):
            super().__init__(*args, **{**keywords, "device": "cpu"})

    monkeypatch.setattr(warp_batch, "WarpBatch", OnTheCpuDevice)
    mode = AutoresetMode(autoreset)
    dev = gym.make_vec("fastvec/InvertedPendulum-v5", num_envs=4, device="cuda", array_type="device",
                       autoreset_mode=mode)
    monkeypatch.setattr(warp_batch, "WarpBatch", WarpBatch)
    cpu = WarpBatch("InvertedPendulum", 4, same_step=mode == AutoresetMode.SAME_STEP)
    obs, infos = dev.reset(seed=3)
    cpu.reset(seeds=np.arange(3, 7))
    assert isinstance(obs, DeviceArray) and infos == {}
    np.testing.assert_array_equal(np.asarray(obs), cpu.obs)
    ended = 0
    for _ in range(40):
        obs, rewards, terminated, truncated, infos = dev.step(PUSH)
        cpu.step(PUSH)
        np.testing.assert_array_equal(np.asarray(obs), cpu.obs)
        np.testing.assert_array_equal(np.asarray(rewards), cpu.rewards)
        np.testing.assert_array_equal(np.asarray(terminated), cpu.terminated)
        np.testing.assert_array_equal(np.asarray(infos["was_reset"]), cpu.was_reset)
        if mode == AutoresetMode.SAME_STEP:
            np.testing.assert_array_equal(np.asarray(infos["final_obs"])[cpu.was_reset], cpu.final_obs[cpu.was_reset])
        ended += int(cpu.terminated.sum())
    assert ended >= 4
    dev.close()


def test_a_step_limit_of_zero_never_truncates_on_either_device_as_on_libmujoco():
    """max_episode_steps=0 is "no limit": the batch reports 0, as MujocoBatch does, and no step is truncated, on
    Warp's CPU device, on the GPU's launches (here emulated) or on libmujoco."""
    from fastvec.native.mujoco import MujocoBatch

    batches = [pushed(WarpBatch, False, max_episode_steps=0), pushed(EmulatedGpuBatch, False, max_episode_steps=0),
               pushed(MujocoBatch, False, max_episode_steps=0)]
    assert [b.max_episode_steps for b in batches] == [0, 0, 0]
    for _ in range(3):
        for b in batches:
            b.step(np.zeros((4, 1), np.float32))
            assert not np.asarray(b.truncated).any()


def test_close_releases_the_model_waiting_first_for_the_gpus_kernels():
    """close() on Warp's CPU device just drops the model and data; with GPU kernels, it waits for them first."""
    cpu, gpu = pushed(WarpBatch, False), pushed(EmulatedGpuBatch, False)
    waits = []
    gpu._gpu.synchronize = lambda: waits.append("synchronize")
    cpu.close()
    gpu.close()
    assert waits == ["synchronize"]
    assert (cpu.model, cpu.data, gpu.model, gpu.data) == (None, None, None, None)
