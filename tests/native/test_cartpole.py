"""fastvec CartPole against Gymnasium's own CartPole-v1 (the oracle), plus seeding, checkers,
Gymnasium's vector wrappers, rendering and bad input on the Gymnasium face."""

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv as GymCartPole
from gymnasium.utils.env_checker import check_env

import fastvec  # noqa: F401  (registers fastvec/...)


def native_state(envs) -> np.ndarray:
    """The (N, 4) float64 CartPole states inside the batch: State is the first member of each slot."""
    return envs.unwrapped.batch.slots[:, :32].view(np.float64)


def test_step_matches_gymnasium_on_random_states():
    """Thousands of transitions from random states (terminal ones included), same state same action."""
    n, rounds = 512, 8
    envs = gym.make_vec("fastvec/CartPole", num_envs=n, autoreset_mode=gym.vector.AutoresetMode.DISABLED)
    ref = GymCartPole()
    ref.reset(seed=0)
    rng = np.random.default_rng(1)
    checked = terminal = 0
    for _ in range(rounds):
        envs.reset(seed=int(rng.integers(1 << 30)))
        states = rng.uniform(-1, 1, (n, 4)) * [2.5, 2.0, 0.22, 2.0]  # spans both thresholds
        native_state(envs)[:] = states
        actions = rng.integers(0, 2, n)
        obs, rew, term, trunc, _ = envs.step(actions)
        for i in range(n):
            ref.state = states[i].copy()
            ref.steps_beyond_terminated = None
            r_obs, r_rew, r_term, r_trunc, _ = ref.step(int(actions[i]))
            np.testing.assert_array_equal(obs[i], r_obs)  # float64 physics cast to float32 in both
            assert rew[i] == r_rew and term[i] == r_term and trunc[i] == r_trunc
            checked += 1
            terminal += r_term
    assert checked == n * rounds and 0 < terminal < checked


def test_whole_episodes_match_gymnasium():
    envs = gym.make_vec("fastvec/CartPole", num_envs=1)
    ref = gym.make("CartPole-v1")
    rng = np.random.default_rng(2)
    for episode in range(20):
        obs, _ = envs.reset(seed=episode)
        ref.reset(seed=0)
        ref.unwrapped.state = native_state(envs)[0].copy()
        length = 0
        while True:
            a = int(rng.integers(0, 2)) if episode % 2 else 1 - int(obs[0, 2] < 0)  # random and a controller
            obs, rew, term, trunc, info = envs.step(np.array([a]))
            r_obs, r_rew, r_term, r_trunc, _ = ref.step(a)
            length += 1
            np.testing.assert_array_equal(obs[0], r_obs)
            assert (rew[0], term[0], trunc[0]) == (r_rew, r_term, r_trunc)
            if term[0] or trunc[0]:
                assert info["episode_length"][0] == length and info["episode_return"][0] == length
                break


def test_spaces_match_gymnasium():
    envs = gym.make_vec("fastvec/CartPole", num_envs=3)
    ref = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="vector_entry_point")
    assert envs.single_observation_space == ref.single_observation_space
    assert envs.single_action_space == ref.single_action_space
    assert envs.observation_space == ref.observation_space
    assert envs.action_space == ref.action_space
    assert gym.spec("fastvec/CartPole").max_episode_steps == 500


def test_truncates_at_500_steps():
    envs = gym.make_vec("fastvec/CartPole", num_envs=1)
    envs.reset(seed=3)
    for t in range(1, 501):
        native_state(envs)[0] = 0.0  # pin the pole upright so only the time limit can end it
        obs, rew, term, trunc, info = envs.step(np.array([t % 2]))
        if t < 500:
            assert not trunc[0] and not term[0]
    assert trunc[0] and info["episode_length"][0] == 500


def test_seeding_same_seed_same_trajectory_and_independent_of_num_envs():
    def rollout(num_envs, seed, steps=200):
        envs = gym.make_vec("fastvec/CartPole", num_envs=num_envs)
        out = [envs.reset(seed=seed)[0]]
        rng = np.random.default_rng(0)
        for _ in range(steps):
            actions = rng.integers(0, 2, 64)[:num_envs]
            out.append(envs.step(actions)[0])
        return np.stack(out)

    a, b = rollout(8, 11), rollout(8, 11)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, rollout(8, 12))
    wide = rollout(64, 11)
    np.testing.assert_array_equal(a, wide[:, :8])  # env i depends on seed + i only
    shifted = rollout(8, 14)
    np.testing.assert_array_equal(shifted[0, :5], wide[0, 3:8])  # env 0 of seed 14 == env 3 of seed 11


def test_check_env_on_single_env():
    check_env(gym.make("fastvec/CartPole").unwrapped)


def test_gym_make_adds_time_limit_and_steps():
    env = gym.make("fastvec/CartPole")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4,) and obs.dtype == np.float32
    obs, rew, term, trunc, info = env.step(env.action_space.sample())
    assert isinstance(rew, float) and isinstance(term, bool)


def test_make_vec_without_prior_import():
    code = ("import gymnasium, sys; e = gymnasium.make_vec('fastvec:fastvec/CartPole', num_envs=2); "
            "o, _ = e.reset(seed=0); print(type(e).__name__, o.shape); assert 'fastvec' in sys.modules")
    out = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CartPoleVectorEnv", "(2,", "4)"]


def test_no_version_warning(recwarn):
    gym.make_vec("fastvec/CartPole", num_envs=2)
    assert not [w for w in recwarn if "version" in str(w.message).lower()]


def test_gymnasium_vector_wrappers_on_top(tmp_path):
    envs = gym.make_vec("fastvec/CartPole", num_envs=4, render_mode="rgb_array")
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    envs = gym.wrappers.vector.NormalizeReward(envs)
    envs.reset(seed=0)
    finished = 0
    for _ in range(200):
        obs, rew, term, trunc, info = envs.step(envs.action_space.sample())
        if "episode" in info:
            finished += info["_episode"].sum()
            lengths = info["episode"]["l"][info["_episode"]]
            np.testing.assert_array_equal(lengths, info["episode_length"][info["_episode"]])
    assert finished > 0


def test_record_video_on_vector_env(tmp_path):
    pytest.importorskip("moviepy")
    envs = gym.make_vec("fastvec/CartPole", num_envs=3, render_mode="rgb_array")
    envs = gym.wrappers.vector.RecordVideo(envs, str(tmp_path), episode_trigger=lambda e: e == 0, video_length=10)
    envs.reset(seed=0)
    for _ in range(12):
        envs.step(envs.action_space.sample())
    envs.close()
    assert list(tmp_path.glob("*.mp4"))


def test_render_is_lazy_sequence_of_frames():
    envs = gym.make_vec("fastvec/CartPole", num_envs=3, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 3
    f0 = frames[0]
    assert f0.shape == (400, 600, 3) and f0.dtype == np.uint8
    assert len(np.unique(f0.reshape(-1, 3), axis=0)) >= 3  # background, cart, pole
    native_state(envs)[0, 2] = 0.2  # tilt the pole: the frame must change
    assert not np.array_equal(envs.render()[0], f0)


def test_bad_input_is_refused_and_env_stays_usable():
    envs = gym.make_vec("fastvec/CartPole", num_envs=4)
    with pytest.raises(gym.error.ResetNeeded):
        envs.step(np.zeros(4, np.int64))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros(5, np.int64))
    with pytest.raises(TypeError, match="dtype float"):
        envs.step(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"action 7 out of range for Discrete\(2\) at env 2"):
        envs.step(np.array([0, 1, 7, 0]))
    with pytest.raises(ValueError, match="action -1"):
        envs.step(np.array([-1, 1, 0, 0]))
    obs, *_ = envs.step(np.array([0, 1, 1, 0], np.int32))  # still usable, any integer dtype
    assert obs.shape == (4, 4)
    envs.close()
    envs.close()  # idempotent
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.step(np.zeros(4, np.int64))


def test_unknown_kwargs_and_options_are_errors():
    with pytest.raises(TypeError, match="frameskip"):
        gym.make_vec("fastvec/CartPole", num_envs=2, frameskip=4)
    with pytest.raises(ValueError, match="autoreset_mode"):
        gym.make_vec("fastvec/CartPole", num_envs=2, autoreset_mode="sometimes")
    with pytest.raises(ValueError, match="render_mode"):
        gym.make_vec("fastvec/CartPole", num_envs=2, render_mode="human")


def test_call_get_attr_set_attr():
    envs = gym.make_vec("fastvec/CartPole", num_envs=3)
    assert envs.get_attr("num_envs") == (3, 3, 3)
    assert envs.call("max_episode_steps") == (500, 500, 500)
    envs.set_attr("copy", False)
    assert envs.copy is False
    with pytest.raises(ValueError):
        envs.set_attr("copy", [True, False])


def test_copy_false_returns_views():
    envs = gym.make_vec("fastvec/CartPole", num_envs=2, copy=False)
    obs, _ = envs.reset(seed=0)
    obs2, *_ = envs.step(np.array([0, 1]))
    assert obs2 is obs or np.shares_memory(obs, obs2)
