"""The MuJoCo vector env under the SB3 and torch faces: seeds given per env (as SB3 gives them), FastvecVecEnv's
episodes against the vector env's own steps, a few PPO steps, and torch tensors of the env's outputs."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401

SAME_STEP = gym.vector.AutoresetMode.SAME_STEP


def test_a_list_of_seeds_seeds_each_env():
    by_list = gym.make_vec("fastvec/Hopper-v5", num_envs=2)
    by_int = gym.make_vec("fastvec/Hopper-v5", num_envs=2)
    np.testing.assert_array_equal(by_list.reset(seed=[3, 4])[0], by_int.reset(seed=3)[0])
    assert not np.array_equal(by_list.reset(seed=[3, 3])[0][1], by_int.reset(seed=3)[0][1])


def test_sb3_vec_env_reports_the_vector_envs_episodes():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv
    with pytest.raises(ValueError, match="SAME_STEP"):
        FastvecVecEnv(gym.make_vec("fastvec/Hopper-v5", num_envs=2))  # NEXT_STEP: SB3 wants the reset obs now
    n, limit = 3, 30
    ours = FastvecVecEnv("fastvec/Hopper-v5", n, max_episode_steps=limit)
    oracle = gym.make_vec("fastvec/Hopper-v5", num_envs=n, max_episode_steps=limit, autoreset_mode=SAME_STEP)
    ours.seed(5)
    np.testing.assert_array_equal(ours.reset(), oracle.reset(seed=5)[0])
    rng, returns, lengths, ended = np.random.default_rng(0), np.zeros(n), np.zeros(n, int), 0
    for _ in range(2 * limit + 3):
        actions = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
        obs, rewards, dones, infos = ours.step(actions)
        want = oracle.step(actions)
        np.testing.assert_array_equal(obs, want[0])
        np.testing.assert_array_equal(rewards, want[1])
        returns += want[1]
        lengths += 1
        for i in np.flatnonzero(want[2] | want[3]):
            ended += 1
            assert dones[i] and infos[i]["TimeLimit.truncated"] == bool(want[3][i] and not want[2][i])
            np.testing.assert_array_equal(infos[i]["terminal_observation"], want[4]["final_obs"][i])
            assert infos[i]["episode"]["r"] == pytest.approx(returns[i]) and infos[i]["episode"]["l"] == lengths[i]
            returns[i], lengths[i] = 0, 0
    assert ended >= n


def test_sb3_ppo_runs_a_few_steps_on_a_mujoco_task():
    sb3 = pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv
    model = sb3.PPO("MlpPolicy", FastvecVecEnv("fastvec/InvertedPendulum-v5", 4), n_steps=32, batch_size=64,
                    n_epochs=1, seed=0)
    model.learn(total_timesteps=256)
    assert model.num_timesteps >= 256


def test_torch_face_of_a_mujoco_task():
    torch = pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv
    envs = TorchVectorEnv(gym.make_vec("fastvec/Hopper-v5", num_envs=2))
    obs, _ = envs.reset(seed=1)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float64 and obs.shape == (2, 11)
    obs, rewards, terminated, truncated, _ = envs.step(torch.zeros(2, 3))
    assert rewards.shape == (2,) and terminated.dtype == torch.bool
