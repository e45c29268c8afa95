"""Where a MuJoCo task's env steps (EnvSource.on_gpu, trainer_batch): on MuJoCo Warp only when both the trainer and
train.env_device are "cuda"; the CUDA trainer with env_device=cpu, and the CPU trainer whatever env_device says,
step libmujoco's C batch on the host."""

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
