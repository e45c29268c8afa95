"""Small contracts of the Gymnasium faces that whole-episode comparisons do not reach: stepping before the first
reset, a partial reset before any full one, uint64 actions beyond int64 reported as given, and unseeded single
envs drawing their own seeds."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode

import fastvec  # noqa: F401  (registers fastvec/...)
from fastvec.native.cpu import ActionError


def test_the_vector_env_refuses_to_step_before_its_first_reset():
    envs = gym.make_vec("fastvec/CartPole", num_envs=2)
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
        envs.step(np.zeros(2, np.int64))
    envs = gym.make_vec("fastvec/CartPole", num_envs=2, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ResetNeeded, match="the first reset"):
        envs.reset(options={"reset_mask": np.array([True, False])})
    envs.reset(seed=0)
    envs.step(np.zeros(2, np.int64))


def test_the_single_env_refuses_to_step_before_its_first_reset():
    """Gymnasium's order check, and the env's own under it (unwrapped: no OrderEnforcing), whose state is None
    before a reset as Gymnasium's CartPole's."""
    env = gym.make("fastvec/CartPole")
    with pytest.raises(ResetNeeded):
        env.step(0)
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
        env.unwrapped.step(0)
    assert env.unwrapped.state is None and gym.make("CartPole-v1").unwrapped.state is None
    env.reset(seed=1)
    assert env.unwrapped.state.shape == (4,)
    env.step(0)


@pytest.mark.parametrize("value", [2**64 - 1, 2**63 + 5, 2])
def test_big_unsigned_actions_are_reported_as_given(value):
    envs = gym.make_vec("fastvec/CartPole", num_envs=3)
    envs.reset(seed=0)
    actions = np.array([1, 0, value], np.uint64)
    with pytest.raises(ActionError, match=rf"action {value} out of range for Discrete\(2\) at env 2"):
        envs.step(actions)
    obs, *_ = envs.step(np.array([1, 0, 1], np.uint64))  # valid unsigned actions step
    assert obs.shape == (3, 4)


def test_unseeded_single_envs_draw_their_own_seeds():
    starts = {tuple(gym.make("fastvec/CartPole").reset()[0]) for _ in range(4)}
    assert len(starts) == 4
    env = gym.make("fastvec/CartPole")
    first, _ = env.reset(seed=3)
    again, _ = env.reset()  # continues the seeded stream: a new episode, not a repeat
    assert not np.array_equal(first, again)
    np.testing.assert_array_equal(gym.make("fastvec/CartPole").reset(seed=3)[0], first)


def pong_trajectory(make, steps=200):
    """Observations of a Pong face under fixed actions from seed 4 (the bot's paddle is obs[1])."""
    env = make()
    obs, _ = env.reset(seed=4)
    rng, seen = np.random.default_rng(0), [np.asarray(obs).copy()]
    for _ in range(steps):
        obs = env.step(rng.integers(0, 3, np.shape(obs)[:-1]) if np.ndim(obs) > 1 else int(rng.integers(0, 3)))[0]
        seen.append(np.asarray(obs).copy())
    return np.array(seen)


def test_pongs_gymnasium_faces_default_to_one_env_and_bot_level_2():
    from fastvec.wrappers.gymnasium import PongVectorEnv

    default = PongVectorEnv()
    assert default.num_envs == 1
    level2 = pong_trajectory(lambda: PongVectorEnv(difficulty=2))
    np.testing.assert_array_equal(pong_trajectory(PongVectorEnv), level2)
    assert not np.array_equal(pong_trajectory(lambda: PongVectorEnv(difficulty=3)), level2)


def test_pettingzoos_pong_bot_defaults_to_level_2():
    from fastvec import pettingzoo as fpz

    def trajectory(**kw):
        env = fpz.parallel_env("Pong", **kw)
        obs, _ = env.reset(seed=4)
        rng, seen = np.random.default_rng(0), []
        for _ in range(200):
            obs, *_ = env.step({agent: int(rng.integers(0, 3)) for agent in env.agents})
            seen.append(np.concatenate([obs[agent] for agent in sorted(obs)]))
        return np.array(seen)

    level2 = trajectory(opponent="bot", difficulty=2)
    np.testing.assert_array_equal(trajectory(opponent="bot"), level2)
    assert not np.array_equal(trajectory(opponent="bot", difficulty=0), level2)


def test_unseeded_pettingzoo_games_draw_their_own_seeds():
    from fastvec import pettingzoo as fpz

    starts = set()
    for _ in range(4):
        obs, _ = fpz.parallel_env("Pong").reset()
        starts.add(tuple(np.concatenate(list(obs.values())).tolist()))
    assert len(starts) == 4


def test_the_sb3_adapter_defaults_to_one_env_and_refuses_to_step_before_reset():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    venv = FastvecVecEnv("fastvec/CartPole")
    assert venv.num_envs == 1
    venv.step_async(np.zeros(1, np.int64))
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        venv.step_wait()
    venv.reset()
    obs, *_ = venv.step(np.zeros(1, np.int64))
    assert obs.shape == (1, 4)


def test_the_torch_face_of_a_cpu_env_is_the_numpy_env_as_tensors():
    torch = pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv, as_tensor

    def make():
        return gym.make_vec("fastvec/CartPole", num_envs=3, autoreset_mode=AutoresetMode.SAME_STEP,
                            max_episode_steps=4)

    envs, plain = TorchVectorEnv(make()), make()
    obs, info = envs.reset(seed=1)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32 and info == {}
    np.testing.assert_array_equal(obs.numpy(), plain.reset(seed=1)[0])
    for step in range(4):
        actions = torch.tensor([0, 1, step % 2])
        got, want = envs.step(actions), plain.step(actions.numpy())
        for tensor, array in zip(got[:4], want[:4]):
            assert isinstance(tensor, torch.Tensor)
            np.testing.assert_array_equal(tensor.numpy(), array)
    obs, *_ = envs.step(np.array([1, 1, 1]))  # NumPy actions step too
    np.testing.assert_array_equal(obs.numpy(), plain.step(np.array([1, 1, 1]))[0])
    info = got[4]
    assert bool(info["_final_obs"].all()) and isinstance(info["_final_obs"], torch.Tensor)
    assert info["final_obs"].dtype == object  # object arrays stay NumPy
    np.testing.assert_array_equal(info["final_info"]["episode_length"].numpy(), [4, 4, 4])
    shared = np.zeros(3, np.float32)
    as_tensor(shared)[1] = 5.0  # a view, not a copy
    assert shared[1] == 5.0 and as_tensor(7) == 7


def test_the_sb3_adapters_frames_are_each_envs_own():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    venv = FastvecVecEnv("fastvec/Pong", 3, render_mode="rgb_array")
    venv.seed(5)
    venv.reset()
    for _ in range(30):
        venv.step(np.array([1, 2, 0]))
    frames = venv.get_images()
    assert len(frames) == 3 and frames[0].shape == (240, 320, 3)
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(frame, venv.batch.render(i))
    assert not np.array_equal(frames[0], frames[1])
    np.testing.assert_array_equal(venv.env_method("render", indices=[2])[0], frames[2])


def test_the_sb3_adapters_frames_of_a_mujoco_task_are_each_envs_own(monkeypatch):
    """Over a MuJoCo task's vector env (stepped through its own step, not a native batch), get_images()[i] and
    env_method("render", indices=[i]) are env i's frame of the vector env's render(). Drawing needs OpenGL, which
    this process must not rely on (test_render.py draws in a child), so each env's frame is stood in for by its
    state, as bytes."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("mujoco")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    envs = gym.make_vec("fastvec/Hopper-v5", num_envs=3, render_mode="rgb_array",
                        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    monkeypatch.setattr(envs.frames, "frame", lambda i: envs.get_state([i])[0].view(np.uint8).reshape(1, -1, 8))
    venv = FastvecVecEnv(envs)
    venv.seed(5)
    venv.reset()
    frames, want = venv.get_images(), envs.render()
    assert len(frames) == 3 and not np.array_equal(frames[0], frames[1])
    for i in range(3):
        np.testing.assert_array_equal(frames[i], want[i])
        np.testing.assert_array_equal(venv.env_method("render", indices=[i])[0], want[i])


def test_vector_get_and_set_state_by_index_match_the_single_envs():
    """get_state/set_state with an index, a list or None against each single env's `unwrapped.state`."""
    envs = gym.make_vec("fastvec/CartPole", num_envs=3)
    theirs = [gym.make("fastvec/CartPole") for _ in range(3)]
    envs.reset(seed=[1, 2, 3])
    for env, seed in zip(theirs, [1, 2, 3]):
        env.reset(seed=seed)
    states = np.array([env.unwrapped.state for env in theirs])
    np.testing.assert_array_equal(envs.get_state(), states)
    np.testing.assert_array_equal(envs.get_state([2, 0]), states[[2, 0]])
    np.testing.assert_array_equal(envs.get_state(1), states[[1]])
    new = np.array([[0.1, 0.2, 0.03, -0.4]])
    envs.set_state(new, 1)
    theirs[1].unwrapped.state = new[0].copy()
    np.testing.assert_array_equal(envs.get_state(), np.array([env.unwrapped.state for env in theirs]))
    envs.set_state(np.zeros((3, 4)))
    np.testing.assert_array_equal(envs.get_state(), np.zeros((3, 4)))


def test_the_multi_agent_vector_envs_first_reset_seeds_every_game_and_later_ones_continue():
    from fastvec.wrappers.pettingzoo import vector_env

    envs = vector_env("Pong", 4)
    first, _ = envs.reset()
    assert len({tuple(first[2 * g]) for g in range(4)}) == 4  # every game drew its own seed
    second, _ = envs.reset()
    assert not any(np.array_equal(first[2 * g], second[2 * g]) for g in range(4))  # streams go on
    seeded = vector_env("Pong", 4)
    obs, _ = seeded.reset(seed=[7, None, 7, None])
    np.testing.assert_array_equal(obs[0], obs[4])  # games 0 and 2, both from seed 7
    for _ in range(5):
        seeded.step(np.ones(8, np.int64))
    again, _ = seeded.reset(seed=[None, None, 7, None])
    np.testing.assert_array_equal(again[4], obs[4])  # reseeded: the same start
    assert not np.array_equal(again[0], obs[0])  # continued: a new start


def test_the_sb3_adapters_episode_infos_carry_the_envs_stats():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    venv = FastvecVecEnv("fastvec/Pong", 2, points=1)
    venv.seed(3)
    venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(2000):
        _, rewards, done, infos = venv.step(rng.integers(0, 3, 2))
        if done.any():
            break
    i = int(np.flatnonzero(done)[0])
    info = infos[i]
    assert {"score", "opponent_score", "paddle_hits"} <= set(info)
    assert (info["score"], info["opponent_score"]) in ((1.0, 0.0), (0.0, 1.0))
    assert info["episode"]["r"] == info["score"] - info["opponent_score"] == rewards[i]
    assert info["terminal_observation"].shape == (8,) and not info["TimeLimit.truncated"]


def test_the_single_envs_episode_end_info_holds_its_stats():
    env = gym.make("fastvec/Pong", points=1)
    env.reset(seed=2)
    for step in range(3000):
        _, reward, terminated, _, info = env.step(step % 3)
        if terminated:
            break
    assert terminated and info["score"] + info["opponent_score"] == 1.0 and reward == info["score"] * 2 - 1
    assert set(info) >= {"score", "opponent_score", "paddle_hits"}


@pytest.mark.parametrize("num_envs", [5, 700])  # 700: several chunks for the CPU step's threads
def test_copied_observations_are_the_envs_own_each_step(num_envs):
    """copy=True returns fresh arrays, equal to what copy=False returns (its views of the env's buffers)."""
    a = gym.make_vec("fastvec/Breakout", num_envs=num_envs, copy=True)
    b = gym.make_vec("fastvec/Breakout", num_envs=num_envs, copy=False)
    lib = a.unwrapped.batch.env.lib  # (one library for both envs)
    previous = lib.fv_set_num_threads(2)  # whatever an earlier test left: two threads, so several chunks
    try:
        obs_a, _ = a.reset(seed=4)
        obs_b, _ = b.reset(seed=4)
        rng, kept = np.random.default_rng(0), []
        for _ in range(20):
            actions = rng.integers(0, 3, num_envs)
            obs_a = a.step(actions)[0]
            obs_b = b.step(actions)[0]
            np.testing.assert_array_equal(obs_a, obs_b)
            kept.append(obs_a)
    finally:
        lib.fv_set_num_threads(previous)
    assert not np.shares_memory(kept[-1], kept[-2]) and not np.array_equal(kept[-1], kept[0])


def _held_arrays_keep_their_values(envs, steps: int, hold) -> None:
    """Steps envs with random actions; every third step, hold(step's outputs) returns (array, values) pairs to keep;
    at the end each kept array still has the values it had when returned."""
    rng, held = np.random.default_rng(0), []
    for t in range(steps):
        outputs = envs.step(rng.integers(0, 2, envs.num_envs))
        if t % 3 == 0:
            held += hold(outputs)
    assert held
    for array, values in held:
        np.testing.assert_array_equal(np.asarray(array), values)


def test_arrays_the_caller_holds_are_never_written_again():
    """step()'s arrays (copy=True) are the caller's: one still held, directly, as a view or inside an info dict,
    keeps the values it was returned with while the env steps on (the C step writes a fresh block each step)."""
    envs = gym.make_vec("fastvec/CartPole", num_envs=300)
    envs.reset(seed=1)

    def hold(outputs):
        obs, rewards, terminated, _, infos = outputs
        pairs = [(obs, obs.copy()), (rewards[::2], rewards[::2].copy()), (terminated, terminated.copy())]
        return pairs + [(value, np.array(value)) for value in infos.values() if isinstance(value, np.ndarray)]

    _held_arrays_keep_their_values(envs, 90, hold)


def test_a_torch_tensor_over_a_returned_array_keeps_its_values():
    torch = pytest.importorskip("torch")
    envs = gym.make_vec("fastvec/CartPole", num_envs=300)
    envs.reset(seed=2)
    _held_arrays_keep_their_values(envs, 30, lambda outputs: [(torch.from_numpy(outputs[0]), outputs[0].copy())])


def test_pettingzoo_games_declare_themselves_parallelizable():
    from fastvec import pettingzoo as fpz

    assert fpz.parallel_env("Pong").metadata["is_parallelizable"] is True


def test_pong_difficulty_takes_0_to_4():
    from fastvec.wrappers.gymnasium import PongVectorEnv

    for level in (0, 4):
        assert PongVectorEnv(2, difficulty=level).num_envs == 2
    for bad in (-1, 5, True, 2.0):
        with pytest.raises(ValueError, match="for Pong's bot must be an int from 0"):
            PongVectorEnv(2, difficulty=bad)


def test_set_attr_on_a_one_env_vector():
    envs = gym.make_vec("fastvec/CartPole", num_envs=1, max_episode_steps=50)
    envs.set_attr("max_episode_steps", 3)
    envs.reset(seed=0)
    for _ in range(3):
        *_, truncated, _ = envs.step(np.zeros(1, np.int64))
    assert truncated[0]


def test_the_multi_agent_vector_envs_episode_infos_carry_the_games_stats():
    from fastvec.wrappers.pettingzoo import vector_env

    envs = vector_env("Pong", 2, points=1)  # same-step autoreset: the ended games' infos in final_info
    envs.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        _, _, terminated, _, info = envs.step(rng.integers(0, 3, 4))
        if terminated.any():
            break
    final = info["final_info"]
    rows = np.flatnonzero(terminated)
    for name in ("left_score", "right_score", "paddle_hits"):
        assert final["_" + name][rows].all()
    np.testing.assert_array_equal(final["left_score"][rows] + final["right_score"][rows], 1.0)


def test_the_multi_agent_vector_env_renders_each_rows_game():
    from fastvec.wrappers.pettingzoo import vector_env

    envs = vector_env("Pong", 2, render_mode="rgb_array")
    envs.reset(seed=[1, 2])
    for _ in range(10):
        envs.step(np.array([1, 2, 0, 1]))
    frames = envs.render()
    assert len(frames) == 4
    np.testing.assert_array_equal(frames[1], frames[0])  # both seats of game 0
    np.testing.assert_array_equal(frames[3], envs.batch.render(1))
    assert not np.array_equal(frames[0], frames[2])


def test_the_sb3_adapter_refuses_actions_of_the_wrong_shape():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    venv = FastvecVecEnv("fastvec/CartPole", 3)
    venv.reset()
    with pytest.raises(ValueError, match=r"actions must have shape \(3,\)"):
        venv.step_async(np.zeros((3, 2), np.int64))
    venv.step_async(np.zeros((3, 1), np.int64))  # SB3's (N, 1) Discrete actions
    assert venv.step_wait()[0].shape == (3, 4)


def test_vector_attribute_access_is_sync_vector_envs():
    """call, get_attr and set_attr as SyncVectorEnv's (the oracle): one result per env, a list of equal values or
    one value set, a list of the wrong length refused; a native batch shares attributes, so differing values
    are refused too."""
    from gymnasium.vector import SyncVectorEnv

    ours = gym.make_vec("fastvec/CartPole", num_envs=3, render_mode="rgb_array")
    theirs = SyncVectorEnv([lambda: gym.make("CartPole-v1", render_mode="rgb_array") for _ in range(3)])
    assert ours.get_attr("render_mode") == theirs.get_attr("render_mode") == ("rgb_array",) * 3
    assert ours.call("render_mode") == theirs.call("render_mode")
    ours.reset(seed=0)
    assert [f.shape for f in ours.call("render")[0]] == [(400, 600, 3)] * 3  # the vector env's call: every frame
    ours.set_attr("max_episode_steps", [7, 7, 7])
    assert ours.get_attr("max_episode_steps") == (7, 7, 7)
    ours.set_attr("max_episode_steps", 9)
    assert ours.max_episode_steps == 9
    for env in (ours, theirs):
        with pytest.raises(ValueError, match="length"):
            env.set_attr("max_episode_steps", [5, 5])
    with pytest.raises(ValueError, match="every env must get the same value"):
        ours.set_attr("max_episode_steps", [5, 6, 5])
    assert ours.max_episode_steps == 9
    ours.reset(seed=1)
    for _ in range(9):
        *_, truncated, _ = ours.step(np.zeros(3, np.int64))
    assert truncated.all()  # the limit set through set_attr reaches the batch


def test_a_closed_vector_env_refuses_to_be_used_and_render_without_a_mode_warns():
    from gymnasium.error import ClosedEnvironmentError

    envs = gym.make_vec("fastvec/CartPole", num_envs=2)
    envs.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert envs.render() is None
    envs.close()
    for use in (lambda: envs.reset(), lambda: envs.step(np.zeros(2, np.int64)), envs.render):
        with pytest.raises(ClosedEnvironmentError, match="is closed; make a new one"):
            use()


def test_the_sb3_adapter_over_a_mujoco_task_reports_episode_ends_as_dummy_vec_env():
    """A MuJoCo task's vector env through the adapter (its generic path): where an episode ends, the infos SB3's
    Monitor and DummyVecEnv give (terminal_observation, episode r and l summed from the steps' rewards,
    TimeLimit.truncated only at the step limit); none on the other envs."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("mujoco")
    from gymnasium.vector import AutoresetMode

    from fastvec.wrappers.sb3 import FastvecVecEnv

    venv = FastvecVecEnv(gym.make_vec("fastvec/InvertedPendulum-v5", num_envs=2, max_episode_steps=30,
                                      autoreset_mode=AutoresetMode.SAME_STEP))
    venv.seed(5)
    obs = venv.reset()
    rng = np.random.default_rng(0)
    returns, lengths, ends = np.zeros(2), np.zeros(2, int), 0
    for _ in range(80):
        actions = rng.uniform(-3, 3, (2, 1)).astype(np.float32)
        new_obs, rewards, done, infos = venv.step(actions)
        returns += rewards
        lengths += 1
        for i in np.flatnonzero(done):
            info = infos[i]
            assert info["episode"]["r"] == pytest.approx(returns[i]) and info["episode"]["l"] == lengths[i]
            assert info["terminal_observation"].shape == (4,)
            assert info["TimeLimit.truncated"] == (lengths[i] == 30)
            returns[i], lengths[i] = 0, 0
            ends += 1
        for i in np.flatnonzero(~done):
            assert "episode" not in infos[i] and not infos[i]["TimeLimit.truncated"]
        obs = new_obs
    assert ends >= 4
    venv.close()
