"""fastvec-train over the MuJoCo tasks: the names it takes, the settings it picks (configs/mujoco.toml), the host
batch it steps (against Gymnasium's own env with CleanRL's ClipAction), InvertedPendulum learned by the CPU
trainer in a few seconds, and (GPU) the CUDA trainer over the host batch."""

import numpy as np
import pytest

from fastvec.trainer import cli
from fastvec.trainer.config import load_config

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

from fastvec.native.mujoco.host_batch import MujocoHostBatch  # noqa: E402
from fastvec.trainer.resolve import make_batch  # noqa: E402


@pytest.mark.parametrize("env, name, gym_id", [
    ("hopper", "hopper", "fastvec/Hopper-v5"), ("Hopper", "hopper", "fastvec/Hopper-v5"),
    ("half-cheetah", "halfcheetah", "fastvec/HalfCheetah-v5"), ("halfcheetah", "halfcheetah", "fastvec/HalfCheetah-v5"),
    ("fastvec/Walker2d-v5", "walker2d", "fastvec/Walker2d-v5"),
    ("inverted_double_pendulum", "inverteddoublependulum", "fastvec/InvertedDoublePendulum-v5")])
def test_task_names_pick_the_mujoco_settings(env, name, gym_id):
    config = load_config(env)
    assert (config["env"]["name"], config["env"]["gym_id"]) == (name, gym_id)
    train = config["train"]
    assert (config["env"]["num_envs"] * train["horizon"], train["minibatch_size"], train["update_epochs"]) == \
        (2048, 64, 10)  # CleanRL's rollout of 2048 samples in 32 minibatches, 10 epochs
    assert (train["learning_rate"], train["norm_obs"], train["norm_reward"], train["ent_coef"]) == (3e-4, True, True, 0)
    assert config["policy"]["critic"] == "separate"


def test_a_command_line_key_overrides_the_mujoco_settings():
    config = load_config("hopper", {"train": {"horizon": 128}, "env": {"ctrl_cost_weight": 0.01}})
    assert config["train"]["horizon"] == 128
    assert make_batch(config, 2).mj.params["ctrl_cost_weight"] == 0.01


def test_a_keyword_the_task_does_not_take_is_a_config_error():
    from fastvec.trainer.config import ConfigError
    with pytest.raises(ConfigError, match="takes no keyword 'grid_size'"):
        make_batch(load_config("invertedpendulum", {"env": {"grid_size": 3}}), 2)


def test_host_batch_steps_as_gymnasium_with_clipped_actions():
    """Each env of the trainer's batch is Gymnasium's env with ClipAction, seeded alike, in float32; where an
    episode ends (truncated at a short limit here) its return, length and last obs are recorded and obs is the
    next episode's first."""
    n, limit, seeds = 3, 40, np.array([5, 6, 7], np.uint64)
    batch = MujocoHostBatch("Hopper", n, max_episode_steps=limit)
    batch.reset(seeds, None)
    oracles = [gym.wrappers.ClipAction(gym.make("Hopper-v5", max_episode_steps=limit)) for _ in range(n)]
    for i, oracle in enumerate(oracles):  # fastvec's reset noise is its own: the oracles take its reset states
        oracle.reset(seed=int(seeds[i]))
        take_state(oracle, batch, i)
    rng = np.random.default_rng(0)
    returns, lengths, ended = np.zeros(n), np.zeros(n, int), 0
    for _ in range(2 * limit + 5):
        actions = rng.normal(0, 2, (n, 3)).astype(np.float32)  # outside [-1, 1] often: clipped
        batch.step(actions)
        for i, oracle in enumerate(oracles):
            o, r, term, trunc, _ = oracle.step(actions[i])
            returns[i] += r
            lengths[i] += 1
            assert (batch.terminated[i], batch.truncated[i]) == (term, trunc)
            assert batch.rewards[i, 0] == np.float32(r)
            if term or trunc:
                ended += 1
                np.testing.assert_array_equal(batch.final_obs[i, 0], np.float32(o))
                assert batch.episode_length[i] == lengths[i]
                assert batch.episode_return[i, 0] == pytest.approx(returns[i], rel=1e-6)
                oracle.reset()
                take_state(oracle, batch, i)  # obs: the next episode's first
                returns[i], lengths[i] = 0, 0
                continue
            np.testing.assert_array_equal(batch.obs[i, 0], np.float32(o))
    assert ended >= n  # every env was truncated at least once


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_host_batch_refuses_a_non_finite_action_with_nothing_stepped(bad):
    """A finite action past the control range is clipped; a NaN or infinite one (in any env) raises ActionError
    naming it, nothing is stepped, and the batch steps on afterwards."""
    from fastvec.native.spaces import ActionError

    batch = MujocoHostBatch("InvertedPendulum", 3)
    batch.reset(np.array([1, 2, 3], np.uint64), None)
    before = batch.mj.get_state()
    actions = np.array([[5.0], [-0.5], [bad]])
    with pytest.raises(ActionError, match=r"\(env 2, dimension 0\) of InvertedPendulum is not finite") as err:
        batch.step(actions)
    assert repr(bad) in str(err.value)  # the value as given, not as clipped
    np.testing.assert_array_equal(batch.mj.get_state(), before)
    batch.step(np.array([[5.0], [-0.5], [0.0]]))
    clipped = MujocoHostBatch("InvertedPendulum", 3)
    clipped.reset(np.array([1, 2, 3], np.uint64), None)
    clipped.step(np.array([[3.0], [-0.5], [0.0]]))  # InvertedPendulum's control range: [-3, 3]
    np.testing.assert_array_equal(batch.obs, clipped.obs)
    batch.close()
    clipped.close()


def take_state(oracle, batch, i):
    """Set Gymnasium's env to env i's state and check env i's obs is its obs in float32."""
    oracle.unwrapped.set_state(*np.split(batch.mj.get_state([i])[0], [batch.mj.nq]))
    np.testing.assert_array_equal(batch.obs[i, 0], np.float32(oracle.unwrapped._get_obs()))


def test_a_host_batch_sets_the_processs_mujoco_threads_only_when_asked(monkeypatch):
    """The MuJoCo tasks' thread count is the process's (every MuJoCo batch steps on one pool): a host batch made
    without threads leaves it as it is (the pool's default, or what the user set); threads=N sets N."""
    from fastvec.native.mujoco import library
    calls = []
    monkeypatch.setattr(library(), "fv_mj_set_threads", calls.append)
    MujocoHostBatch("Hopper", 2)
    assert calls == []
    MujocoHostBatch("Hopper", 2, threads=3)
    assert calls == [3]


def test_a_host_batch_runs_checkpoint_is_evaluated_in_its_task(tmp_path, capsys):
    """A few updates of InvertedPendulum on the CPU trainer, then --eval of its run: the checkpoint's sizes (the
    Box head: no Discrete action count) match the task's host batch, and its episodes are played and reported."""
    run_dir = tmp_path / "ip"
    assert cli.main(["invertedpendulum", "--train.device=cpu", "--env.num_envs=2", "--train.horizon=16",
                     "--train.bptt_horizon=16", "--train.minibatch_size=32", "--train.total_timesteps=64",
                     "--policy.hidden=8", f"--run-dir={run_dir}"]) == 0
    capsys.readouterr()
    assert cli.main(["invertedpendulum", f"--eval={run_dir}", "--eval.episodes=3"]) == 0
    out = capsys.readouterr().out
    assert "invertedpendulum: mean return" in out and "over 3 episodes" in out, out


def test_inverted_pendulum_learns_on_the_cpu_trainer(tmp_path, capsys):
    """50K steps of configs/mujoco.toml (about 5 s on 2 cores) balance the pole far longer than a random
    policy (a mean return of about 5-10): measured 256 to 1000 over seeds 1-3 on 100 fresh episodes."""
    run_dir = tmp_path / "ip"
    assert cli.main(["invertedpendulum", "--train.device=cpu", "--train.total_timesteps=50_000",
                     f"--run-dir={run_dir}"]) == 0
    capsys.readouterr()
    assert cli.main(["invertedpendulum", f"--eval={run_dir}", "--eval.episodes=100"]) == 0
    out = capsys.readouterr().out
    mean_return = float(out.split("mean return ")[1].split()[0])
    assert mean_return >= 100, out


@pytest.mark.gpu
def test_the_cuda_trainer_steps_a_mujoco_task_on_the_host_with_its_box_head():
    """On a GPU machine a MuJoCo task trains on the CUDA trainer over host batches (train.env_device=cpu, two env
    groups): host_sample_kernel draws the Box actions on the GPU, the CPU steps them; the rollout's observations,
    rewards and dones equal one CPU batch fed the recorded actions, bit for bit (the same libmujoco code)."""
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    from fastvec.trainer import run
    from fastvec.trainer.cuda.trainer import CudaTrainer
    config = load_config("hopper", {"env": {"num_envs": 8}, "train": {
        "horizon": 16, "device": "cuda", "env_groups": 2, "minibatch_size": 64, "norm_reward": False, "async": False}})
    trainer = run.make_trainer(config)
    try:
        assert isinstance(trainer, CudaTrainer) and trainer.host_env
        assert all(isinstance(g["batch"], MujocoHostBatch) for g in trainer.rollout_path.groups)
        env = make_batch(config, 8)
        env.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(8, dtype=np.uint64), None)
        for k in range(2):
            trainer.rollout()
            a, cuda = trainer.arena, trainer.cuda
            obs, actions = a.get(cuda, "obs"), a.get(cuda, "actions")
            rewards, dones = a.get(cuda, "rewards"), a.get(cuda, "dones")
            assert actions.shape == (16, 8, 3) and np.isfinite(actions).all()
            for t in range(16):
                assert np.array_equal(obs[t], env.obs.reshape(8, -1).astype(np.float32)), (k, t)
                env.step(actions[t].reshape(8, 1, 3))
                assert np.array_equal(rewards[t], env.rewards.reshape(8)), (k, t)
                assert np.array_equal(dones[t], (env.terminated | env.truncated).astype(np.float32)), (k, t)
            trainer.update(num_updates=10)
    finally:
        trainer.close()
        run.close_batches(trainer.env_batches)


TRAINER_FRAMES = """
import sys
import numpy as np
import gymnasium as gym
from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import render_batch
try:
    probe = gym.make("Hopper-v5", render_mode="rgb_array", width=32, height=32)
    probe.reset(seed=0)
    probe.render()
except Exception as err:
    print(f"{type(err).__name__}: {err}")
    sys.exit(77)
print("can draw", flush=True)
batch = render_batch(load_config("hopper"))
batch.reset(np.array([0], np.uint64), None)
for _ in range(5):
    batch.step(np.full((1, 3), 0.5, np.float32))
oracle = gym.make("Hopper-v5", render_mode="rgb_array")
oracle.reset(seed=0)
oracle.unwrapped.set_state(*np.split(batch.mj.get_state([0])[0], [batch.mj.nq]))
np.testing.assert_array_equal(batch.render(0), oracle.render())
print("drawn", batch.env.render_fps)
"""


def test_the_trainers_batch_draws_gymnasiums_frame():
    """--eval.render's frames of a MuJoCo task: Gymnasium's own env's picture of the same state (drawn in a child
    process, as tests/mujoco_cpu/test_render.py does)."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    env.setdefault("PYOPENGL_PLATFORM", env["MUJOCO_GL"] if env["MUJOCO_GL"] in ("egl", "osmesa") else "")
    proc = subprocess.run([sys.executable, "-c", TRAINER_FRAMES], capture_output=True, text=True, env=env,
                          timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if proc.returncode == 77 or "can draw" not in proc.stdout:
        pytest.skip(f"MuJoCo cannot draw off-screen here ({(proc.stdout + proc.stderr).strip()[-300:]})")
    assert proc.returncode == 0 and "drawn 125" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("task", ["Hopper", "Reacher", "Ant"])
def test_host_batch_spaces_frame_rate_and_state_size_are_gymnasiums(task):
    """What the trainer reads of the host batch (its heads' action bounds and sizes, the video's frame rate, the
    state's length) against Gymnasium's own task: its action space, observation size, render_fps and
    state_vector() (qpos then qvel)."""
    batch = MujocoHostBatch(task, 1)
    theirs = gym.make(f"{task}-v5").unwrapped
    theirs.reset(seed=0)
    info = batch.env
    assert info.num_agents == 1 and info.stat_names == []  # Gymnasium's tasks: one agent, no episode stats
    assert info.render_fps == theirs.metadata["render_fps"]
    assert (info.obs_size, info.action_dims) == (theirs.observation_space.shape[0], theirs.action_space.shape[0])
    np.testing.assert_array_equal(info.spaces.action_low, theirs.action_space.low)
    np.testing.assert_array_equal(info.spaces.action_high, theirs.action_space.high)
    assert info.spaces.obs_shape == theirs.observation_space.shape
    assert info.spaces.state_size == theirs.state_vector().shape[0]
    assert np.isneginf(info.spaces.obs_low).all() and np.isposinf(info.spaces.obs_high).all()
    obs_size = theirs.observation_space.shape[0]  # the trainer's buffers, as a native batch's: (N, agents, ...)
    assert batch.obs.shape == batch.final_obs.shape == (1, 1, obs_size) and batch.rewards.shape == (1, 1)
    batch.close()


def test_host_batch_partial_reset_restarts_only_the_masked_envs_episode():
    """reset(seeds, mask) resets the masked envs alone: their obs are a fresh batch's with the same seeds, the
    others' obs are left as they were, and a reset env's next episode counts its return and length from the
    reset (the others' from their own start). Actions come as (N, 1, D) too; any other number of values is
    refused with nothing stepped."""
    n, limit = 3, 5
    seeds = np.array([11, 12, 13], np.uint64)
    batch = MujocoHostBatch("InvertedPendulum", n, max_episode_steps=limit)
    batch.reset(seeds, None)
    assert batch.episode_return.shape == (n, 1) and batch.episode_length.shape == (n,)
    assert batch.episode_stats.shape == (n, 0) and batch.final_obs.shape == (n, 1, batch.env.obs_size)
    act = np.full((n, 1, 1), 0.1, np.float32)  # the trainer's (N, agents, D) layout
    rewards = np.zeros(n)
    for _ in range(2):
        batch.step(act)
        rewards += batch.rewards[:, 0]
    before = batch.obs.copy()
    batch.reset(np.array([0, 99, 0], np.uint64), np.array([False, True, False]))
    fresh = MujocoHostBatch("InvertedPendulum", n)
    fresh.reset(np.array([99, 99, 99], np.uint64), None)
    np.testing.assert_array_equal(batch.obs[[0, 2]], before[[0, 2]])
    np.testing.assert_array_equal(batch.obs[1], fresh.obs[0])
    rewards[1] = 0
    with pytest.raises(ValueError, match=r"must hold 3 x 1 values, got shape \(2, 1\)"):
        batch.step(np.zeros((2, 1), np.float32))
    for step in range(3, limit + 3):
        ended = batch.step(act)
        done = batch.truncated.copy()
        assert ended == done.sum()
        for i in np.flatnonzero(done):
            assert batch.episode_length[i] == (limit if i == 1 else step)
            assert batch.episode_return[i, 0] == pytest.approx(rewards[i] + batch.rewards[i, 0], rel=1e-6)
        rewards += batch.rewards[:, 0]
        rewards[done] = 0
    assert batch.episode_length.tolist() == [limit, limit, limit]
    batch.close()
    fresh.close()


def test_host_batch_task_names_as_fastvec_train_takes_them():
    """ENV names a task by its Gymnasium name in any case, with or without dashes or underscores between words, or
    by its registered id (any case); anything else (another env, a near miss, a non-string) is no task. Each task's
    training name is its Gymnasium name in lower case and its id fastvec/<Task>-v5, which Gymnasium has registered."""
    from fastvec.native.mujoco import TASKS
    from fastvec.native.mujoco.host_batch import gym_id, task_of, train_name

    for env, task in [("hopper", "Hopper"), ("HalfCheetah", "HalfCheetah"), ("half-cheetah", "HalfCheetah"),
                      ("inverted_double_pendulum", "InvertedDoublePendulum"), ("FASTVEC/WALKER2D-V5", "Walker2d"),
                      ("fastvec/Humanoid-v5", "Humanoid"), ("humanoid_standup", "HumanoidStandup")]:
        assert task_of(env) == task, env
    for env in ("cartpole", "hopperx", "fastvec/Hopper-v4", "Hopper-v5", "", None, 3):
        assert task_of(env) is None, env
    for task in TASKS:
        assert train_name(task) == task.lower() and task_of(train_name(task)) == task
        assert gym_id(task) == f"fastvec/{task}-v5" and gym.spec(gym_id(task)).max_episode_steps == TASKS[task]
