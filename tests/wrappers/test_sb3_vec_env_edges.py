"""The SB3 adapter's VecEnv methods at their edges: episode statistics in a done env's info as DummyVecEnv over
Gymnasium's single env gives them, env indices (negative ones included) checked as SB3's own VecEnvs check them,
calls out of order or on the wrong kind of env refused, frames only with rgb_array."""

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import fastvec  # noqa: E402,F401  (registers the ids)
from fastvec.wrappers.sb3 import FastvecVecEnv  # noqa: E402


def test_a_done_envs_info_has_its_statistics_as_dummy_vec_env_over_the_single_env():
    """Pong's three episode statistics (score, opponent_score, paddle_hits) and its return and length reach a done
    env's info as DummyVecEnv over Monitor(gym.make(...)) reports them (games of one point; the single env has no
    statistics where its TimeLimit truncates, the batch has them there too)."""
    n, limit = 2, 130
    ours = FastvecVecEnv("fastvec/Pong", n, max_episode_steps=limit, points=1)
    oracle = DummyVecEnv([lambda: Monitor(gym.make("fastvec/Pong", max_episode_steps=limit, points=1))] * n)
    assert ours.venv.stat_names == ["score", "opponent_score", "paddle_hits"]
    ours.seed(3)
    oracle.seed(3)
    np.testing.assert_array_equal(ours.reset(), oracle.reset())
    rng = np.random.default_rng(1)
    ended = truncated = 0
    for _ in range(3 * limit):
        actions = rng.integers(0, 3, n)
        obs, rewards, dones, infos = ours.step(actions)
        want_obs, want_rewards, want_dones, want_infos = oracle.step(actions)
        np.testing.assert_array_equal(obs, want_obs)
        np.testing.assert_array_equal(dones, want_dones)
        for i in range(n):
            assert infos[i]["TimeLimit.truncated"] == want_infos[i]["TimeLimit.truncated"]
            if dones[i]:
                ended += 1
                truncated += infos[i]["TimeLimit.truncated"]
                for key in ours.venv.stat_names:
                    assert infos[i][key] == want_infos[i].get(key, infos[i][key]), key
                assert (infos[i]["episode"]["r"], infos[i]["episode"]["l"]) == \
                    (want_infos[i]["episode"]["r"], want_infos[i]["episode"]["l"])
                assert isinstance(infos[i]["episode"]["t"], float) and infos[i]["episode"]["t"] >= 0
            else:
                assert set(infos[i]) == {"TimeLimit.truncated"}
    assert ended > truncated > 0


def test_env_indices_are_checked_as_sb3s_vec_envs_check_them():
    """get_attr/env_method/env_is_wrapped answer once per index asked for; a negative index counts from the end;
    an index past either end is an IndexError; set_attr on every env (in any spelling) is taken."""
    envs = FastvecVecEnv("fastvec/CartPole", 3)
    assert envs.get_attr("num_envs", indices=[-1, -3, 2]) == [3, 3, 3]
    assert envs.get_attr("num_envs", indices=1) == [3]
    assert envs.env_is_wrapped(Monitor, indices=[0, -2]) == [False, False]
    assert envs.env_method("get_state", [0], indices=[2, 0])[0].shape == (1, 4)
    for bad in ([3], [-4], [0, 5]):
        with pytest.raises(IndexError, match="out of range for 3 envs"):
            envs.get_attr("num_envs", indices=bad)
    envs.set_attr("max_episode_steps", 7, indices=[-1, 0, 1])
    assert envs.venv.max_episode_steps == 7
    with pytest.raises(ValueError, match=r"on envs \[0, 2\] only"):
        envs.set_attr("max_episode_steps", 9, indices=[0, -1])
    assert envs.venv.max_episode_steps == 7
    envs.close()


def test_steps_out_of_order_and_foreign_envs_are_refused():
    """A step before reset() is refused and its actions dropped (never stepped by a later step_wait); step_wait
    without actions, options that differ per env and keywords beside an env instance are refused."""
    envs = FastvecVecEnv("fastvec/CartPole", 2)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        envs.step(np.zeros(2, np.int64))
    envs.reset()
    with pytest.raises(RuntimeError, match=r"step_wait\(\) called without step_async"):
        envs.step_wait()
    obs, *_ = envs.step(np.zeros((2, 1), np.int64))  # Discrete actions as SB3 hands them, (N, 1)
    assert obs.shape == (2, 4)
    envs.set_options([{"reset_mask": np.array([True, False])}, {}])
    with pytest.raises(ValueError, match="one options dict for all envs"):
        envs.reset()
    with pytest.raises(TypeError, match=r"keyword arguments \['max_episode_steps'\] only apply when env is an id"):
        FastvecVecEnv(envs.venv, max_episode_steps=5)
    envs.close()
    with pytest.raises(RuntimeError, match="closed"):
        envs.reset()
    with pytest.raises(RuntimeError, match="closed"):
        envs.get_images()


def test_frames_need_rgb_array():
    """Without render_mode='rgb_array' get_images warns and gives None per env, and render via env_method None."""
    envs = FastvecVecEnv("fastvec/CartPole", 2)
    with pytest.warns(UserWarning, match="needs render_mode='rgb_array'"):
        assert envs.get_images() == [None, None]
    assert envs.env_method("render", indices=[1]) == [None]
    envs.close()


@pytest.mark.parametrize("env_id", ["fastvec/CartPole", "fastvec/InvertedPendulum-v5"])
def test_an_episodes_time_is_the_seconds_since_construction_rounded_as_monitor_rounds_it(env_id, monkeypatch):
    """info["episode"]["t"]: seconds since the adapter was made, rounded to 6 decimals as SB3's Monitor writes it,
    for a native batch and for a MuJoCo task's vector env alike (a stand-in clock here)."""
    import types

    from fastvec.wrappers import sb3

    if "v5" in env_id:
        pytest.importorskip("mujoco")
    clock = iter([1000.0, 1000.1234567, 1001.00000049])
    monkeypatch.setattr(sb3, "time", types.SimpleNamespace(time=lambda: next(clock)))
    envs = FastvecVecEnv(env_id, 2, max_episode_steps=1)
    envs.reset()
    action = np.zeros((2, *envs.action_space.shape), envs.action_space.dtype)
    for now in (1000.1234567, 1001.00000049):
        _, _, dones, infos = envs.step(action)
        assert dones.all()
        assert [info["episode"]["t"] for info in infos] == [round(now - 1000.0, 6)] * 2
    envs.close()
