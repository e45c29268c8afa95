"""Every space through the faces: the Gymnasium vector and single envs (spaces as Gymnasium builds them,
check_env, the three autoreset modes against Gymnasium's own SyncVectorEnv, unwrapped.state and the vector
env's get_state/set_state, bad actions), the SB3 adapter with a Box env (against SB3's DummyVecEnv), the
torch wrapper, and make_vec_from_source with the user's continuous env of examples/."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

import fastvec
from fastvec.native.spaces import ActionError
from fastvec.wrappers.gymnasium import NativeEnv, NativeVectorEnv

ROOT = Path(__file__).resolve().parents[2]
ENVS_DIR = ROOT / "tests" / "envs"
BOX, MULTI, IMAGE = (str(ENVS_DIR / f"{name}.h") for name in ("box_point", "multi_discrete", "image_obs"))
EXAMPLE = ROOT / "examples" / "continuous_env.h"

# What Gymnasium constructs for the spaces each test env's file declares.
SPACES = {
    BOX: (gym.spaces.Box(np.array([-10, -np.inf, 0], np.float32), np.array([10, np.inf, 1], np.float32),
                         dtype=np.float32),
          gym.spaces.Box(np.array([-2, 0], np.float32), np.array([2, 1], np.float32), dtype=np.float32)),
    MULTI: (gym.spaces.Box(0.0, 4.0, (2,), np.float32), gym.spaces.MultiDiscrete([3, 5])),
    IMAGE: (gym.spaces.Box(0, 1, (4, 5, 2), np.uint8), gym.spaces.Discrete(4)),
    str(EXAMPLE): (gym.spaces.Box(-2.0, 2.0, (6,), np.float32), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)),
}


def assert_space_equal(ours, theirs):
    assert type(ours) is type(theirs) and ours == theirs, (ours, theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape


@pytest.mark.parametrize("source", list(SPACES))
def test_spaces_are_what_gymnasium_builds(source):
    obs_space, action_space = SPACES[source]
    vec = fastvec.make_vec_from_source(source, 3)
    assert_space_equal(vec.single_observation_space, obs_space)
    assert_space_equal(vec.single_action_space, action_space)
    # the batched spaces: Gymnasium's batch_space, and what Gymnasium's SyncVectorEnv makes of our single envs
    sync = gym.vector.SyncVectorEnv([lambda: NativeEnv(source=source)] * 3)
    for ours, single, theirs in [(vec.observation_space, obs_space, sync.observation_space),
                                 (vec.action_space, action_space, sync.action_space)]:
        assert_space_equal(ours, batch_space(single, 3))
        assert_space_equal(ours, theirs)
    single = NativeEnv(source=source)
    assert_space_equal(single.observation_space, obs_space)
    assert_space_equal(single.action_space, action_space)
    obs, _ = vec.reset(seed=0)
    assert obs in vec.observation_space
    obs, *_ = vec.step(vec.action_space.sample())
    assert obs.shape == vec.observation_space.shape and obs.dtype == obs_space.dtype


@pytest.mark.parametrize("ours,theirs", [("CartPole", "CartPole-v1"), ("Acrobot", "Acrobot-v1"),
                                         ("MountainCar", "MountainCar-v0"),
                                         ("MountainCarContinuous", "MountainCarContinuous-v0"),
                                         ("Pendulum", "Pendulum-v1")])
def test_builtin_spaces_are_gymnasiums(ours, theirs):
    """Single spaces against Gymnasium's env, batched ones against its SyncVectorEnv of that env."""
    if f"fastvec/{ours}" not in gym.registry:
        pytest.skip(f"fastvec/{ours} is not registered")
    single, their_single = gym.make(f"fastvec/{ours}"), gym.make(theirs)
    assert_space_equal(single.observation_space, their_single.observation_space)
    assert_space_equal(single.action_space, their_single.action_space)
    vec, their_vec = gym.make_vec(f"fastvec/{ours}", 3), gym.make_vec(theirs, 3, vectorization_mode="sync")
    for name in ("single_observation_space", "single_action_space", "observation_space", "action_space"):
        assert_space_equal(getattr(vec, name), getattr(their_vec, name))


@pytest.mark.parametrize("source", [BOX, MULTI, IMAGE, *(info.gym_id for info in fastvec.ENVS.values())])
def test_check_env_passes(source):
    env = gym.make(source).unwrapped if source.startswith("fastvec/") else NativeEnv(source=source)
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("source", [BOX, MULTI])
def test_autoreset_modes_match_gymnasiums_sync_vector_env(source, mode):
    """Same seeds and actions: the native batch's autoreset (batch.h) against Gymnasium's SyncVectorEnv over
    single envs in TimeLimit, through terminations, truncations and DISABLED's masked resets."""
    n, limit = 4, 3 if source == MULTI else 7  # the MultiDiscrete env terminates at 4 steps: truncate before
    ours = fastvec.make_vec_from_source(source, n, autoreset_mode=mode, max_episode_steps=limit + (source == BOX))
    oracle = gym.vector.SyncVectorEnv([lambda: gym.wrappers.TimeLimit(NativeEnv(source=source), limit + (source == BOX))]
                                      * n, autoreset_mode=mode)
    ours.action_space.seed(1)
    np.testing.assert_array_equal(ours.reset(seed=5)[0], oracle.reset(seed=5)[0])
    ended = 0
    for _ in range(30):
        actions = ours.action_space.sample()
        if source == BOX:
            actions[:, 0] *= -np.sign(ours._obs[:, 0])  # pushes out of [-5, 5]: terminations
        step, o_step = ours.step(actions), oracle.step(actions)
        for a, b in zip(step[:4], o_step[:4]):
            np.testing.assert_array_equal(a, b)
        done = step[2] | step[3]
        ended += int(done.sum())
        if mode == AutoresetMode.SAME_STEP and done.any():
            for i in np.flatnonzero(done):
                np.testing.assert_array_equal(step[4]["final_obs"][i], o_step[4]["final_obs"][i])
        if mode == AutoresetMode.DISABLED and done.any():
            np.testing.assert_array_equal(ours.reset(options={"reset_mask": done})[0],
                                          oracle.reset(options={"reset_mask": done})[0])
    assert ended >= 4


# ---------------------------------------------------------------------------------- bad actions
@pytest.mark.parametrize("source,bad,error,message", [
    (BOX, [[0.5, 0.5], [np.nan, 0.5], [0.5, 0.5]], ActionError, r"action nan at env 1, dimension 0 is not a finite"),
    (BOX, [[0.5, 0.5], [0.5, 0.5], [0.5, -np.inf]], ActionError, r"action -inf at env 2, dimension 1 is not a finite"),
    (BOX, np.zeros((3, 3)), ValueError, r"shape \(3, 2\) for 3 envs"),
    (BOX, np.zeros(3), ValueError, r"shape \(3, 2\) for 3 envs"),
    (BOX, np.array([["a", "b"]] * 3), TypeError, r"numbers \(float32\) for Box"),
    (BOX, np.zeros((3, 2), np.bool_), TypeError, r"numbers \(float32\)"),
    (MULTI, [[0, 0], [3, 0], [0, 0]], ActionError, r"action 3 out of range for MultiDiscrete\(\[3 5\]\) at env 1, dim"),
    (MULTI, [[0, 0], [0, 0], [0, -1]], ActionError, r"action -1 out of range .* at env 2, dimension 1"),
    (MULTI, np.array([[0, 0], [0, 2**64 - 1], [0, 0]], np.uint64), ActionError, r"action 18446744073709551615 out"),
    (MULTI, np.zeros((3, 2), np.float32), TypeError, r"integers for MultiDiscrete"),
    (MULTI, np.zeros(3, np.int64), ValueError, r"shape \(3, 2\)"),
    (IMAGE, [0, 4, 0], ActionError, r"action 4 out of range for Discrete\(4\) at env 1"),
])
def test_a_bad_action_raises_and_the_env_stays_usable_and_unchanged(source, bad, error, message):
    ours, twin = fastvec.make_vec_from_source(source, 3), fastvec.make_vec_from_source(source, 3)
    ours.reset(seed=1)
    twin.reset(seed=1)
    good = ours.action_space.sample()
    with pytest.raises(error, match=message):
        ours.step(np.asarray(bad) if not isinstance(bad, np.ndarray) else bad)
    for a, b in zip(ours.step(good)[:4], twin.step(good)[:4]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours.batch.slots, twin.batch.slots)


@pytest.mark.parametrize("source,bad,error", [
    (BOX, np.array([np.inf, 0.5], np.float32), ActionError),
    (BOX, np.array([0.5], np.float32), ValueError),
    (BOX, 0.5, ValueError),
    (BOX, "go", TypeError),
    (MULTI, np.array([1, 9]), ActionError),
    (MULTI, np.array([1.0, 2.0]), TypeError),
    (IMAGE, 1.5, TypeError),
])
def test_the_single_env_refuses_bad_actions_too(source, bad, error):
    env, twin = NativeEnv(source=source), NativeEnv(source=source)
    env.reset(seed=2)
    twin.reset(seed=2)
    with pytest.raises(error):
        env.step(bad)
    action = env.action_space.sample()
    for a, b in zip(env.step(action)[:4], twin.step(action)[:4]):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------- state access
def test_unwrapped_state_reads_and_sets_the_state_through_wrappers():
    env = gym.wrappers.TimeLimit(NativeEnv(source=BOX), 50)
    assert env.unwrapped.state is None  # as Gymnasium's classic-control envs before a reset
    obs, _ = env.reset(seed=0)
    state = env.unwrapped.state
    assert isinstance(state, np.ndarray) and state.dtype == np.float64 and state.shape == (2,)
    assert np.float32(state[0]) == obs[0] and state[1] == 0
    env.unwrapped.state = np.array([4.9, 2.0])
    np.testing.assert_array_equal(env.unwrapped.state, [4.9, 2.0])
    obs, _, terminated, truncated, _ = env.step(np.array([2.0, 1.0], np.float32))
    np.testing.assert_allclose(obs[:2], [4.9 + 0.1 * 2.2, 2.2], rtol=1e-6)  # from the set state: past x = 5
    assert terminated and not truncated
    with pytest.raises(AttributeError, match="no state access"):
        NativeEnv(source=MULTI).unwrapped.state  # noqa: B018


def test_vector_get_state_and_set_state_of_chosen_envs():
    vec = fastvec.make_vec_from_source(BOX, 4)
    vec.reset(seed=3)
    before = vec.get_state()
    vec.set_state([[1.0, 0.0], [-1.0, 0.5]], indices=[3, 0])
    after = vec.get_state()
    np.testing.assert_array_equal(after[[3, 0]], [[1.0, 0.0], [-1.0, 0.5]])
    np.testing.assert_array_equal(after[[1, 2]], before[[1, 2]])
    np.testing.assert_array_equal(vec.get_state(2), before[[2]])
    obs, *_ = vec.step(np.zeros((4, 2), np.float32))
    np.testing.assert_allclose(obs[[3, 0], :2], [[1.0, 0.0], [-1.0 + 0.05, 0.5]], rtol=1e-6)


# ---------------------------------------------------------------------------------- SB3, torch, examples
def test_sb3_adapter_with_a_box_env_matches_dummy_vec_env():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from fastvec.wrappers.sb3 import FastvecVecEnv

    n, limit = 4, 12
    ours = FastvecVecEnv(fastvec.make_vec_from_source(BOX, n, max_episode_steps=limit,
                                                      autoreset_mode=AutoresetMode.SAME_STEP))
    oracle = DummyVecEnv([lambda: Monitor(gym.wrappers.TimeLimit(NativeEnv(source=BOX), limit))] * n)
    assert ours.action_space == oracle.action_space and ours.observation_space == oracle.observation_space
    ours.seed(7)
    oracle.seed(7)
    np.testing.assert_array_equal(ours.reset(), oracle.reset())
    rng, ended = np.random.default_rng(0), 0
    for _ in range(40):
        actions = rng.uniform(-3, 3, (n, 2)).astype(np.float32)  # beyond the bounds too: the env clips
        obs, rew, done, infos = ours.step(actions)
        o_obs, o_rew, o_done, o_infos = oracle.step(actions)
        np.testing.assert_array_equal(obs, o_obs)
        np.testing.assert_array_equal(rew, o_rew)
        np.testing.assert_array_equal(done, o_done)
        for info, o_info in zip(infos, o_infos):
            assert info["TimeLimit.truncated"] == o_info["TimeLimit.truncated"]
            if "terminal_observation" in o_info:
                np.testing.assert_array_equal(info["terminal_observation"], o_info["terminal_observation"])
                assert info["episode"]["l"] == o_info["episode"]["l"]
                ended += 1
    assert ended >= n
    with pytest.raises(ActionError, match="not a finite number"):
        ours.step(np.full((n, 2), np.nan, np.float32))


def test_sb3_ppo_trains_a_box_env():
    pytest.importorskip("stable_baselines3")
    torch = pytest.importorskip("torch")
    from stable_baselines3 import PPO

    from fastvec.wrappers.sb3 import FastvecVecEnv

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        envs = FastvecVecEnv(fastvec.make_vec_from_source(EXAMPLE, 4, max_episode_steps=50,
                                                          autoreset_mode=AutoresetMode.SAME_STEP))
        PPO("MlpPolicy", envs, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu").learn(256)
    finally:
        torch.set_num_threads(threads)


def test_torch_wrapper_steps_box_actions():
    torch = pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv

    envs = TorchVectorEnv(fastvec.make_vec_from_source(BOX, 3))
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (3, 3)
    obs, *_ = envs.step(torch.tensor([[0.5, 0.25]] * 3))
    assert torch.equal(obs[:, 2], torch.full((3,), 0.25))
    with pytest.raises(ActionError):
        envs.step(torch.tensor([[float("nan"), 0.25]] * 3))


def test_make_vec_from_source_runs_the_users_continuous_env():
    """examples/continuous_env.h, with a -D parameter: a controller that pushes each puck to its target
    reaches it (terminations counted by the env's own statistic); random forces mostly do not."""
    envs = fastvec.make_vec_from_source(EXAMPLE, 8, max_episode_steps=60, tolerance_milli=100)
    assert isinstance(envs, NativeVectorEnv)
    obs, _ = envs.reset(seed=0)
    reached = 0
    for _ in range(60):
        force = np.clip(3 * (obs[:, 4:6] - obs[:, :2]) - obs[:, 2:4], -1, 1).astype(np.float32)
        obs, rew, terminated, _, info = envs.step(force)
        assert np.isfinite(rew).all()
        if terminated.any():
            assert (info["reached_target"][terminated] == 1).all()
            reached += int(terminated.sum())
    assert reached >= 8
