"""Where a MuJoCo task's env steps (EnvSource.on_gpu, trainer_batch): on MuJoCo Warp only when both the trainer and
train.env_device are "cuda"; the CUDA trainer with env_device=cpu, and the CPU trainer whatever env_device says,
step libmujoco's C batch on the host. A training batch of a Gymnasium env is made without its renderer; only
render_batch's draws."""

import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import EnvSource, on_device
from fastvec.trainer.settings import Config

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")


def hopper(device: str, env_device: str) -> Config:
    return Config.of(load_config("hopper", {"env": {"num_envs": 2}})).replace("train", device=device,
                                                                              env_device=env_device)


@pytest.mark.parametrize("device, env_device, on_gpu", [("cuda", "cuda", True), ("cuda", "cpu", False),
                                                        ("cpu", "cuda", False), ("cpu", "cpu", False)])
def test_the_task_steps_on_the_gpu_only_when_the_trainer_and_the_env_device_are_both_cuda(device, env_device,
                                                                                        on_gpu):
    assert EnvSource(hopper(device, env_device)).on_gpu is on_gpu


@pytest.mark.parametrize("device, env_device", [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_host_stepped_task_gets_the_host_batch_of_the_c_library(device, env_device):
    """The CUDA trainer with the env on the host, and a CPU config that still names env_device=cuda (the key's
    default), make the MujocoHostBatch, never MuJoCo Warp's batch (not installed here or not: no GPU asked)."""
    from fastvec.native.mujoco.host_batch import MujocoHostBatch

    batch = EnvSource(hopper(device, env_device)).trainer_batch()
    try:
        assert type(batch) is MujocoHostBatch and batch.num_envs == 2
    finally:
        batch.close()


def test_the_cuda_trainer_with_the_mujoco_settings_steps_the_task_on_the_host():
    """mujoco.toml's env_device=cpu kept by on_device for the CUDA trainer: the env source is not on the GPU."""
    config = on_device(Config.of(load_config("hopper")), "cuda")
    assert (config.train.device, config.train.env_device) == ("cuda", "cpu")
    assert not EnvSource(config).on_gpu


def test_a_training_batch_of_a_gymnasium_env_does_not_draw_and_the_render_batch_does():
    """make_batch (EnvSource.batch without render) makes Gymnasium's envs with no render_mode, so render() is refused
    naming why; render_batch makes one env with render_mode="rgb_array" that draws a frame."""
    import numpy as np

    from fastvec.trainer.resolve import make_batch, render_batch

    config = Config.of(load_config("gym:CartPole-v1", {"env": {"num_envs": 2}}))
    batch = make_batch(config)
    try:
        assert batch.num_envs == 2 and batch.vec.render_mode is None
        with pytest.raises(ValueError, match="gym:CartPole-v1 was made without render_mode='rgb_array'"):
            batch.render(0)
    finally:
        batch.close()
    drawn = render_batch(config)
    try:
        drawn.reset(np.array([3], np.uint64), None)
        frame = drawn.render(0)
        assert drawn.num_envs == 1 and frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    finally:
        drawn.close()
