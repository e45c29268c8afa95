"""The CUDA trainer over a MuJoCo task on MuJoCo Warp (train.env_device=cuda, marked gpu): the rollout's
observations, rewards and dones are those of a WarpBatch fed the recorded actions, clipped; InvertedPendulum learns;
and the refusals that keep a run off this path say what to do."""

import numpy as np
import pytest

from fastvec.trainer.config import ConfigError, load_config

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")


def test_the_mujoco_settings_step_the_task_on_the_host_unless_asked():
    """mujoco.toml keeps the C batch on the host; --train.env_device=cuda asks for MuJoCo Warp on the GPU."""
    from fastvec.trainer.resolve import EnvSource, on_device
    from fastvec.trainer.settings import Config

    config = Config.of(load_config("hopper"))
    assert on_device(config, "cuda").train.env_device == "cpu"
    gpu = on_device(config.replace("train", env_device="cuda"), "cuda")
    assert gpu.train.env_device == "cuda" and EnvSource(gpu).on_gpu
    assert not EnvSource(on_device(config.replace("train", env_device="cuda"), "cpu")).on_gpu
    gym_env = Config.of(load_config("gym:CartPole-v1")).replace("train", env_device="cuda")
    assert on_device(gym_env, "cuda").train.env_device == "cpu"  # Gymnasium's own envs have no GPU step


def test_several_gpus_with_the_task_on_mujoco_warp_are_refused_with_the_way_out():
    from fastvec.trainer.resolve import cuda_unsupported, make_policy_spec
    from fastvec.trainer.settings import Config

    config = Config.of(load_config("hopper", {"train": {"env_device": "cuda", "device": "cuda", "gpus": 2}}))
    from fastvec.native.mujoco.host_batch import MujocoHostBatch

    batch = MujocoHostBatch("Hopper", 1)
    try:
        spec = make_policy_spec(config, batch.env.obs_size, 0, batch.env.spaces)
    finally:
        batch.close()
    why = cuda_unsupported(spec, config)
    assert why is not None and "--train.gpus=1" in why and "--train.env_device=cpu" in why
    assert cuda_unsupported(spec, config.replace("train", gpus=1)) is None


def test_without_mujoco_warp_the_gpu_batch_is_a_config_error_naming_the_cpu_path(monkeypatch):
    import builtins

    from fastvec.trainer.resolve import EnvSource, on_device
    from fastvec.trainer.settings import Config

    real_import = builtins.__import__

    def no_warp(name, *args, **kwargs):
        if name in ("mujoco_warp", "warp"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_warp)
    config = on_device(Config.of(load_config("hopper", {"train": {"env_device": "cuda"}})), "cuda")
    with pytest.raises(ConfigError, match=r"fastvec/Hopper-v5 on the GPU: .*mujoco-gpu.*--train.env_device=cpu"):
        EnvSource(config).trainer_batch()


@pytest.mark.gpu
def test_the_cuda_trainer_steps_the_task_on_mujoco_warp_as_a_warp_batch_fed_its_actions():
    """A rollout of 16 steps of 8 InvertedPendulum envs (episodes end every few steps under random actions): the
    trainer's obs, rewards and dones against a WarpBatch with host arrays reset with the trainer's seeds and fed
    its recorded actions clipped to the control range (MJWarp's float32 physics: within test_cuda.py's tolerance,
    the dones equal), over two rollouts with an update between."""
    pytest.importorskip("mujoco_warp", reason="MuJoCo Warp is not installed: pip install 'fastvec[mujoco-gpu]'")
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    from fastvec.native.mujoco.device_batch import MujocoDeviceBatch
    from fastvec.native.mujoco.warp_batch import WarpBatch
    from fastvec.trainer import run
    from fastvec.trainer.cuda.device_envs import DeviceEnvs

    config = load_config("invertedpendulum", {"env": {"num_envs": 8}, "train": {
        "horizon": 16, "device": "cuda", "env_device": "cuda", "minibatch_size": 64, "norm_reward": False,
        "async": False}})
    trainer = run.make_trainer(config)
    oracle = WarpBatch("InvertedPendulum", 8, same_step=True, device="cuda")
    try:
        assert isinstance(trainer.rollout_path, DeviceEnvs) and isinstance(trainer.batch, MujocoDeviceBatch)
        oracle.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(8, dtype=np.uint64))
        low, high = oracle.ctrl_low.astype(np.float32), oracle.ctrl_high.astype(np.float32)
        ended = 0
        for k in range(2):
            trainer.rollout()
            a, cuda = trainer.arena, trainer.cuda
            obs, actions = a.get(cuda, "obs"), a.get(cuda, "actions")
            rewards, dones = a.get(cuda, "rewards"), a.get(cuda, "dones")
            assert actions.shape == (16, 8, 1) and np.isfinite(actions).all()
            for t in range(16):
                np.testing.assert_allclose(obs[t], oracle.obs.astype(np.float32), rtol=5e-4, atol=5e-4,
                                           err_msg=f"rollout {k} step {t}")
                oracle.step(np.clip(actions[t].reshape(8, 1), low, high))
                np.testing.assert_array_equal(rewards[t], oracle.rewards.astype(np.float32))
                np.testing.assert_array_equal(dones[t], (oracle.terminated | oracle.truncated).astype(np.float32))
                ended += int((oracle.terminated | oracle.truncated).sum())
            trainer.update(num_updates=10)
        assert ended >= 8
    finally:
        oracle.close()
        trainer.close()
        run.close_batches(trainer.env_batches)


@pytest.mark.gpu
def test_inverted_pendulum_learns_on_mujoco_warp_and_plays_as_well_on_libmujoco(tmp_path, capsys):
    """100K steps of mujoco.toml with the task on MuJoCo Warp, then --eval on the host's libmujoco batch: a policy
    learned on MJWarp's physics balances the pole on MuJoCo's C one (a random policy's mean return: about 5-10)."""
    pytest.importorskip("mujoco_warp", reason="MuJoCo Warp is not installed: pip install 'fastvec[mujoco-gpu]'")
    from fastvec.trainer import cli
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    run_dir = tmp_path / "ip"
    assert cli.main(["invertedpendulum", "--train.device=cuda", "--train.env_device=cuda",
                     "--train.total_timesteps=100_000", f"--run-dir={run_dir}"]) == 0
    capsys.readouterr()
    assert cli.main(["invertedpendulum", f"--eval={run_dir}", "--eval.episodes=100"]) == 0
    out = capsys.readouterr().out
    mean_return = float(out.split("mean return ")[1].split()[0])
    assert mean_return >= 100, out
