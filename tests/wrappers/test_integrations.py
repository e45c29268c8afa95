"""fastvec inside the libraries people train with: Stable-Baselines3 (adapter checked against
DummyVecEnv, PPO learns CartPole), the CleanRL examples (CleanRL's own ppo.py plus the documented diff, and the
benchmark's extended script), TorchRL's GymWrapper, RLlib's env construction path and its PPO (single-agent, and
multi-agent over MPE games), and Gymnasium's vector RecordVideo. Each skips when its library is missing."""

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastvec

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def one_torch_thread():
    """Tiny networks train fastest on one thread; two threads on a busy 2-core CI box thrash."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------------------------- SB3
def test_sb3_adapter_matches_dummy_vec_env():
    """Same seeds and actions: FastvecVecEnv and SB3's own DummyVecEnv over single fastvec envs
    (each in SB3's Monitor) give the same obs, rewards, dones and infos, truncations included."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from fastvec.wrappers.sb3 import FastvecVecEnv

    n, limit = 5, 25  # a short time limit, so that truncations happen too
    ours = FastvecVecEnv("fastvec/CartPole", n, max_episode_steps=limit)
    oracle = DummyVecEnv([lambda: Monitor(gym.make("fastvec/CartPole", max_episode_steps=limit))] * n)
    ours.seed(123)
    oracle.seed(123)
    np.testing.assert_array_equal(ours.reset(), oracle.reset())
    assert ours.reset_infos == [{}] * n
    rng = np.random.default_rng(0)
    terminated = truncated = 0
    for _ in range(300):
        actions = rng.integers(0, 2, n)
        obs, rew, done, infos = ours.step(actions)
        o_obs, o_rew, o_done, o_infos = oracle.step(actions)
        np.testing.assert_array_equal(obs, o_obs)
        assert rew.dtype == np.float32 and done.dtype == np.bool_
        np.testing.assert_array_equal(rew, o_rew)
        np.testing.assert_array_equal(done, o_done)
        for info, o_info in zip(infos, o_infos):
            assert info["TimeLimit.truncated"] == o_info["TimeLimit.truncated"]
            assert ("terminal_observation" in info) == ("terminal_observation" in o_info)
            if "terminal_observation" in info:
                np.testing.assert_array_equal(info["terminal_observation"], o_info["terminal_observation"])
                assert info["episode"]["r"] == o_info["episode"]["r"]
                assert info["episode"]["l"] == o_info["episode"]["l"]
                truncated += info["TimeLimit.truncated"]
                terminated += not info["TimeLimit.truncated"]
    assert terminated > 10 and truncated > 10


def test_sb3_adapter_vec_env_methods():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.monitor import Monitor

    from fastvec.wrappers.sb3 import FastvecVecEnv

    envs = FastvecVecEnv("fastvec/CartPole", 4, render_mode="rgb_array")
    assert envs.num_envs == 4 and envs.observation_space == envs.venv.single_observation_space
    assert envs.get_attr("max_episode_steps") == [500] * 4
    assert envs.get_attr("render_mode", indices=[1, 2]) == ["rgb_array"] * 2
    envs.set_attr("max_episode_steps", 500)
    with pytest.raises(ValueError, match="share attributes"):
        envs.set_attr("max_episode_steps", 7, indices=[0])
    assert envs.env_is_wrapped(Monitor) == [False] * 4
    assert envs.has_attr("stat_names") and not envs.has_attr("no_such_attribute")

    # seed() applies at the next reset only, env i getting seed + i, like DummyVecEnv.
    assert envs.seed(5) == [5, 6, 7, 8]
    first = envs.reset()
    again = envs.reset()  # no seed this time: each env continues its RNG stream
    assert not np.array_equal(first, again)
    envs.seed(5)
    np.testing.assert_array_equal(envs.reset(), first)
    single = gym.make("fastvec/CartPole")
    np.testing.assert_array_equal(single.reset(seed=7)[0], first[2])

    frames = envs.get_images()
    assert len(frames) == 4 and frames[0].shape == envs.batch.env.render_shape and frames[0].dtype == np.uint8
    np.testing.assert_array_equal(envs.env_method("render", indices=[3])[0], frames[3])
    tiled = envs.render(mode="rgb_array")
    h, w, _ = frames[0].shape
    assert tiled.shape == (2 * h, 2 * w, 3)
    np.testing.assert_array_equal(tiled[:h, w:], frames[1])

    with pytest.raises(Exception, match="out of range"):
        envs.step(np.array([0, 1, 2, 0]))
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros(3, np.int64))
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.step(np.zeros(4, np.int64))


def test_sb3_adapter_refuses_next_step_envs():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    with pytest.raises(ValueError, match="SAME_STEP"):
        FastvecVecEnv(gym.make_vec("fastvec/CartPole", 2))
    with pytest.raises(TypeError, match="fastvec vector env"):
        FastvecVecEnv(gym.make_vec("CartPole-v1", 2, vectorization_mode="sync"))


def test_sb3_ppo_learns_cartpole(one_torch_thread):
    """SB3's PPO with rl-zoo's CartPole settings, cut to 30k steps (about 10 s on 2 cores)."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from fastvec.wrappers.sb3 import FastvecVecEnv

    envs = FastvecVecEnv("fastvec/CartPole", 8)
    envs.seed(1)
    model = PPO("MlpPolicy", envs, n_steps=32, batch_size=256, n_epochs=20, learning_rate=1e-3, gamma=0.98,
                gae_lambda=0.8, ent_coef=0.0, seed=1, device="cpu")
    model.learn(30_000)
    evaluation = FastvecVecEnv("fastvec/CartPole", 16)
    evaluation.seed(999)
    obs, returns = evaluation.reset(), []
    while len(returns) < 32:
        actions, _ = model.predict(obs, deterministic=True)
        obs, _, _, infos = evaluation.step(actions)
        returns += [info["episode"]["r"] for info in infos if "episode" in info]
    assert np.mean(returns) >= 400, f"mean return {np.mean(returns):.1f} over {len(returns)} episodes"


# ---------------------------------------------------------------------------------- CleanRL
def test_cleanrl_example_cpu_runs():
    pytest.importorskip("torch")
    cmd = [sys.executable, str(ROOT / "examples" / "cleanrl_ppo.py"), "--env-id", "fastvec/CartPole",
           "--total-timesteps", "1024", "--num-envs", "4", "--num-steps", "128", "--tensorboard", "false"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "episodic_return=" in proc.stdout  # RecordEpisodeStatistics reported episodes
    summary = [line for line in proc.stdout.splitlines() if line.startswith("SUMMARY ")]
    assert summary and '"global_step": 1024' in summary[0]


# CleanRL's cleanrl/ppo.py at commit fe8d8a03c41a7ef5b523e2e354bd01c363e786bb (April 2026, the current one).
CLEANRL_PPO_SHA256 = "d8dfbb7ac0b21e747b77d6e6673e566db4d6cdacc83bcebcd19cf87ad0e459ae"


def reverse_unified_diff(new_text: str, diff: str) -> str:
    """The old file of a unified diff, from its new file: each hunk's new side is checked and replaced by its old side."""
    lines = new_text.split("\n")
    hunks = []
    for line in diff.splitlines():
        if line.startswith("@@"):
            start = int(re.match(r"@@ -\d+(?:,\d+)? \+(\d+)", line).group(1))
            hunks.append((start, [], []))
        elif hunks and line[:1] in (" ", "-", "+", ""):
            text = line[1:]
            if line[:1] != "+":
                hunks[-1][1].append(text)
            if line[:1] != "-":
                hunks[-1][2].append(text)
    for start, old, new in reversed(hunks):
        assert lines[start - 1:start - 1 + len(new)] == new, f"hunk at line {start} does not match the example"
        lines[start - 1:start - 1 + len(new)] = old
    return "\n".join(lines)


def test_cleanrl_ppo_example_is_cleanrl_plus_the_documented_diff():
    """examples/cleanrl/ppo.py is CleanRL's current ppo.py with exactly the diff docs/migration.md prints: undoing
    that diff gives CleanRL's file byte for byte."""
    doc = (ROOT / "docs" / "migration.md").read_text()
    diff = next(block for block in re.findall(r"```diff\n(.*?)```", doc, re.S) if "+++ b/examples/cleanrl/ppo.py" in block)
    original = reverse_unified_diff((ROOT / "examples" / "cleanrl" / "ppo.py").read_text(), diff)
    assert hashlib.sha256(original.encode()).hexdigest() == CLEANRL_PPO_SHA256


def test_cleanrl_ppo_example_trains_on_cpu(tmp_path):
    """CleanRL's own script (tyro, TensorBoard) on fastvec/CartPole: a few thousand steps on the CPU, with the
    Gymnasium 1.x logging block reporting episodes (CleanRL's 0.29 block logs none under Gymnasium 1.x)."""
    pytest.importorskip("torch")
    pytest.importorskip("tyro")
    pytest.importorskip("tensorboard")
    cmd = [sys.executable, str(ROOT / "examples" / "cleanrl" / "ppo.py"), "--env-id", "fastvec/CartPole",
           "--total-timesteps", "4096", "--no-cuda", "--seed", "2"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    returns = [float(line.rsplit("=", 1)[1]) for line in proc.stdout.splitlines() if "episodic_return=" in line]
    assert len(returns) >= 20 and all(r >= 1 for r in returns)
    assert proc.stdout.count("SPS:") == 4096 // (4 * 128)  # every iteration ran
    assert list((tmp_path / "runs").iterdir())  # TensorBoard events, as CleanRL writes them


@pytest.mark.gpu
def test_cleanrl_example_gpu_env_runs():
    """The --device cuda path: env on the GPU, zero-copy torch tensors, episodes logged."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("pycuda.driver")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    cmd = [sys.executable, str(ROOT / "examples" / "cleanrl_ppo.py"), "--env-id", "fastvec/CartPole", "--device", "cuda",
           "--total-timesteps", "1024", "--tensorboard", "false"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "episodic_return=" in proc.stdout and '"global_step": 1024' in proc.stdout


# ---------------------------------------------------------------------------------- TorchRL
@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_torchrl_gym_wrapper_rollout_matches_raw_env(mode):
    """A 100-step TorchRL rollout equals stepping the same fastvec env by hand (same seed and
    actions), episode ends included: TorchRL's `next` obs is the terminal obs, the following
    root obs the reset obs (partial resets through reset_mask under DISABLED)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper

    n, steps, seed = 4, 100, 11

    def make():
        return gym.make_vec("fastvec/CartPole", n, autoreset_mode=mode, max_episode_steps=30)

    wrapped = GymWrapper(make(), categorical_action_encoding=True)
    actions = torch.as_tensor(np.random.default_rng(0).integers(0, 2, (steps, n)))
    replay = iter(actions)

    def policy(td):
        td["action"] = next(replay)
        return td

    rollout = wrapped.rollout(steps, policy, auto_reset=False, tensordict=wrapped.reset(seed=seed),
                              break_when_any_done=False)
    assert rollout.batch_size == (n, steps)

    raw = make()
    obs, _ = raw.reset(seed=seed)
    ends = 0
    for t in range(steps):
        np.testing.assert_array_equal(rollout["observation"][:, t].numpy(), obs)
        obs, rew, term, trunc, info = raw.step(actions[t].numpy())
        done = term | trunc
        final = obs.copy()
        if mode == AutoresetMode.SAME_STEP:
            for i in np.flatnonzero(done):
                final[i] = info["final_obs"][i]
        elif done.any():
            obs, _ = raw.reset(options={"reset_mask": done})
        np.testing.assert_array_equal(rollout["next", "observation"][:, t].numpy(), final)
        np.testing.assert_array_equal(rollout["next", "reward"][:, t, 0].numpy(), rew.astype(np.float32))
        np.testing.assert_array_equal(rollout["next", "terminated"][:, t, 0].numpy(), term)
        np.testing.assert_array_equal(rollout["next", "truncated"][:, t, 0].numpy(), trunc)
        ends += done.sum()
    assert ends >= 5


# ---------------------------------------------------------------------------------- RLlib
def test_rllib_env_construction_path():
    """What RLlib's SingleAgentEnvRunner does (without Ray): `DictInfoToList(make_vec(id,
    vectorization_mode="vector_entry_point"))`, in a fresh interpreter where the "fastvec:" id
    prefix alone must make the import (Ray workers do not share the driver's imports)."""
    script = r"""
import sys
import gymnasium as gym, numpy as np
from gymnasium.wrappers.vector import DictInfoToList
assert "fastvec" not in sys.modules
env = DictInfoToList(gym.make_vec("fastvec:fastvec/CartPole", num_envs=3,
                                  vectorization_mode=gym.VectorizeMode("vector_entry_point")))
assert env.num_envs == 3 and env.single_action_space == gym.spaces.Discrete(2)
obs, infos = env.reset(seed=0)
assert obs.shape == (3, 4) and infos == [{}, {}, {}]
rng = np.random.default_rng(0)
returns, lengths, done_before, episodes = np.zeros(3), np.zeros(3), np.zeros(3, bool), 0
for _ in range(400):
    obs, rew, term, trunc, infos = env.step(rng.integers(0, 2, 3))
    assert isinstance(infos, list) and len(infos) == 3
    # NEXT_STEP, as RLlib expects: the step after an episode's end is the reset step
    returns = np.where(done_before, 0.0, returns + rew)
    lengths = np.where(done_before, 0, lengths + 1)
    done = term | trunc
    for i in range(3):
        assert ("episode_return" in infos[i]) == bool(done[i])
        if done[i]:
            assert infos[i]["episode_return"] == returns[i] and infos[i]["episode_length"] == lengths[i]
            episodes += 1
    done_before = done
assert episodes >= 20, episodes
print("ok", episodes)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok")


def test_rllib_ppo_trains_on_a_fastvec_batch():
    """RLlib's own PPO (new API stack, local env runner) configured as docs/migration.md says: its env
    runner holds one fastvec vector env (not a SyncVectorEnv of single envs), samples it, and a
    training iteration completes with finished CartPole episodes. Skipped where Ray is not installed
    (Ray pins gymnasium 1.2.2, so CI's environment does not have it; see docs/migration.md)."""
    pytest.importorskip("ray.rllib")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    from fastvec.wrappers.gymnasium import NativeVectorEnv

    config = (PPOConfig()
              .environment("fastvec:fastvec/CartPole")
              .env_runners(num_env_runners=0, num_envs_per_env_runner=16, gym_env_vectorize_mode="vector_entry_point")
              .training(train_batch_size_per_learner=512, minibatch_size=128, num_epochs=2)
              .debugging(seed=0))
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        algo = config.build_algo()
        assert isinstance(algo.env_runner.env.unwrapped, NativeVectorEnv)
        assert algo.env_runner.env.num_envs == 16
        result = algo.train()
        runners = result["env_runners"]
        assert runners["num_env_steps_sampled_lifetime"] >= 512
        assert runners["num_episodes"] > 0
        # a random-ish CartPole policy lasts ~10-60 steps; a broken env (no resets, NaN obs) would not
        assert 8 <= runners["episode_return_mean"] <= 500
        algo.stop()
    finally:
        ray.shutdown()



def _rllib_example():
    """examples/rllib_multi_agent.py as a module (its make_env, policy_setup, log_win)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rllib_multi_agent", ROOT / "examples" / "rllib_multi_agent.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def test_rllib_multi_agent_ppo_on_mpe_games():
    """RLlib's multi-agent path as examples/rllib_multi_agent.py takes it: RLlib's ParallelPettingZooEnv over one
    fastvec simple_spread game passes RLlib's multi-agent env checker; registered with register_env, PPO with one
    shared policy, then with a policy per agent, samples fastvec's games (4 per env runner) and completes a training
    iteration whose episodes all last simple_spread's 25 steps (every agent truncated together: RLlib's "__all__")
    with simple_spread's negative returns, and every policy's weights move. Skipped where Ray is not installed."""
    pytest.importorskip("ray.rllib")
    torch = pytest.importorskip("torch")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments
    from ray.tune.registry import register_env

    from fastvec.wrappers.mpe import MpeParallelEnv

    example = _rllib_example()
    env_config = {"name": "simple_spread", "max_cycles": 25}
    env = example.make_env(env_config)
    check_multiagent_environments(env)
    agents = env.par_env.possible_agents
    assert isinstance(env.par_env, MpeParallelEnv) and agents == ["agent_0", "agent_1", "agent_2"]
    env.close()

    register_env(example.ENV_NAME, example.make_env)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        for kind in ("shared", "per-agent"):
            policies, policy_mapping_fn = example.policy_setup(kind, agents)
            config = (PPOConfig()
                      .environment(example.ENV_NAME, env_config=env_config)
                      .multi_agent(policies=policies, policy_mapping_fn=policy_mapping_fn)
                      .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
                      .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
                      .rl_module(model_config={"fcnet_hiddens": [16]})
                      .debugging(seed=0))
            algo = config.build_algo()
            games = [e.unwrapped.par_env for e in algo.env_runner.env.envs]
            assert len(games) == 4 and all(isinstance(g, MpeParallelEnv) for g in games)
            before = {p: algo.get_module(p).get_state() for p in policies}
            result = algo.train()
            runners = result["env_runners"]
            assert runners["num_env_steps_sampled_lifetime"] >= 400
            assert runners["num_episodes"] >= 12, kind  # 400 steps of 4 games: at least 12 whole 25-step episodes
            assert runners["episode_len_mean"] == 25
            assert set(runners["module_episode_returns_mean"]) == policies
            assert runners["episode_return_mean"] < 0  # simple_spread pays minus the distances to the landmarks
            for p in policies:
                after = algo.get_module(p).get_state()
                assert any(not np.array_equal(before[p][k], after[k]) for k in after), f"{kind}: {p} did not train"
            algo.stop()
    finally:
        ray.shutdown()
        torch.set_num_threads(threads)



def test_rllib_multi_agent_ppo_on_a_smax_battle():
    """The example's SMAX path: RLlib's ParallelPettingZooEnv over one fastvec smax:3m battle (the three allies the
    agents, jaxmarl's heuristic enemy scripted) passes RLlib's multi-agent env checker with PettingZoo's
    {"observation", "action_mask"} observations; PPO with one shared policy over RLlib's FlattenObservations
    completes a training iteration whose battles end within jaxmarl's 101 steps, with SMAX's non-negative returns
    and the example's allies_won callback logging a rate in [0, 1]. Skipped where Ray is not installed."""
    pytest.importorskip("ray.rllib")
    torch = pytest.importorskip("torch")
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments
    from ray.tune.registry import register_env

    from fastvec.wrappers.smax import SmaxParallelEnv

    example = _rllib_example()
    env_config = {"name": "smax:3m"}
    env = example.make_env(env_config)
    check_multiagent_environments(env)
    assert isinstance(env.par_env, SmaxParallelEnv) and env.par_env.possible_agents == ["ally_0", "ally_1", "ally_2"]
    env.close()

    register_env(example.ENV_NAME, example.make_env)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        policies, policy_mapping_fn = example.policy_setup("shared", [])
        config = (PPOConfig()
                  .environment(example.ENV_NAME, env_config=env_config)
                  .multi_agent(policies=policies, policy_mapping_fn=policy_mapping_fn)
                  .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                               env_to_module_connector=lambda env, spaces, device: FlattenObservations(
                                   multi_agent=True))
                  .callbacks(on_episode_end=example.log_win)
                  .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
                  .rl_module(model_config={"fcnet_hiddens": [16]})
                  .debugging(seed=0))
        algo = config.build_algo()
        assert all(isinstance(e.unwrapped.par_env, SmaxParallelEnv) for e in algo.env_runner.env.envs)
        runners = algo.train()["env_runners"]
        assert runners["num_episodes"] >= 4  # a random 3m battle against the heuristic lasts ~15-30 steps
        assert 1 <= runners["episode_len_mean"] <= 101
        assert runners["episode_return_mean"] >= 0  # SMAX pays damage dealt and the win bonus, never less than 0
        assert 0 <= runners["allies_won"] <= 1
        algo.stop()
    finally:
        ray.shutdown()
        torch.set_num_threads(threads)

# ---------------------------------------------------------------------------------- video
def test_vector_record_video_breakout_episode(tmp_path):
    """Gymnasium's vector RecordVideo writes one video of env 0's first Breakout episode: one
    frame per step plus the reset frame, and the first frame is what the env renders."""
    pytest.importorskip("moviepy")
    if "breakout" not in fastvec.ENVS:
        pytest.skip("fastvec/Breakout is not built yet")
    import imageio_ffmpeg
    from gymnasium.wrappers.vector import RecordVideo
    from moviepy import VideoFileClip

    envs = gym.make_vec("fastvec/Breakout", 2, render_mode="rgb_array")
    envs = RecordVideo(envs, str(tmp_path), record_first_only=True, episode_trigger=lambda episode: episode == 0,
                       fps=30)
    envs.reset(seed=3)
    rng = np.random.default_rng(3)
    length = 0
    while True:
        _, _, term, trunc, _ = envs.step(rng.integers(0, 3, 2))
        length += 1
        if term[0] or trunc[0]:
            break
    envs.step(rng.integers(0, 3, 2))  # NEXT_STEP: the reset step closes the recording
    assert not envs.recording
    envs.close()
    videos = sorted(tmp_path.glob("*.mp4"))
    assert [v.name for v in videos] == ["rl-video-episode-0.mp4"]
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(videos[0]))
    # RecordVideo hands moviepy length + 1 frames (reset + every step); moviepy 2 may drop the last.
    assert length <= frames <= length + 1, (frames, length)
    with VideoFileClip(str(videos[0])) as clip:
        first = clip.get_frame(0).astype(np.float32)
    fresh = gym.make_vec("fastvec/Breakout", 2, render_mode="rgb_array")
    fresh.reset(seed=3)
    expected = fresh.render()[0].astype(np.float32)  # env 0 right after the same seeded reset
    assert first.shape == expected.shape
    assert np.abs(first - expected).mean() < 0.25 * np.abs(expected - expected.mean()).mean()  # lossy codec
