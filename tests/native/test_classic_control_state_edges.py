"""Classic-control states set by hand against Gymnasium's envs (the oracle): the observation an env holds
right after its state is set is Gymnasium's observation of that state, and Acrobot's angles wrap exactly as
Gymnasium's wrap() at the boundary itself (-pi stays -pi, pi becomes -pi). Also: each header compiled bare
plays as the registry's defaults."""

import gymnasium as gym
import numpy as np
import pytest
from test_classic_control_oracle import bits, play
from test_glibc_math import needs_glibc_fma

import fastvec  # noqa: F401  (registers fastvec/...)
from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_env

GYM = {"CartPole": "CartPole-v1", "Acrobot": "Acrobot-v1", "MountainCar": "MountainCar-v0",
       "MountainCarContinuous": "MountainCarContinuous-v0", "Pendulum": "Pendulum-v1"}


def gym_observation(ref, state):
    env = ref.unwrapped
    env.state = np.array(state, np.float64)
    if hasattr(env, "_get_ob"):
        return env._get_ob()
    if hasattr(env, "_get_obs"):
        return env._get_obs()
    return np.array(env.state, np.float32)


@pytest.mark.parametrize("name", list(GYM))
def test_the_observation_after_a_set_state_is_gymnasiums_of_that_state(name):
    rng = np.random.default_rng(11)
    envs = gym.make_vec(f"fastvec/{name}", num_envs=4)
    envs.reset(seed=0)
    size = envs.unwrapped.get_state().shape[1]
    states = rng.uniform(-1.0, 1.0, (4, size)) * np.array([2.0, 1.5, 0.2, 1.0][:size])
    envs.unwrapped.set_state(states)
    np.testing.assert_array_equal(envs.unwrapped.get_state(), states)
    ref = gym.make(GYM[name])
    ref.reset(seed=0)
    held = envs.unwrapped.batch.obs[:, 0]
    for i, state in enumerate(states):
        np.testing.assert_array_equal(bits(held[i]), bits(gym_observation(ref, state)), err_msg=f"{name} env {i}")
    envs.unwrapped.set_state(states[2:3] * 0.5, indices=[1])
    np.testing.assert_array_equal(bits(envs.unwrapped.batch.obs[1, 0]), bits(gym_observation(ref, states[2] * 0.5)))
    np.testing.assert_array_equal(bits(envs.unwrapped.batch.obs[3, 0]), bits(gym_observation(ref, states[3])))


@needs_glibc_fma
def test_acrobot_angles_exactly_on_the_wrap_boundary_wrap_as_gymnasiums():
    starts = [[-np.pi, 0.0, 0.0, 0.0], [np.pi, -np.pi, 0.0, 0.0], [0.0, -np.pi, 0.0, 0.0], [np.pi, np.pi, 0.0, 0.0]]
    counts = play("Acrobot", starts, lambda s, r: 1)  # no torque: the links stay on the boundary for a while
    assert counts["transitions"] >= 4


@pytest.mark.parametrize("name", ["MountainCar", "MountainCarContinuous"])
def test_mountaincar_frames_draw_gymnasiums_hill(name):
    from gymnasium.envs.classic_control.mountain_car import MountainCarEnv

    env = gym.make(f"fastvec/{name}", render_mode="rgb_array")
    env.reset(seed=0)
    env.unwrapped.state = np.array([-1.1, 0.0])  # the car far left, clear of the columns looked at
    frame = env.render()
    height, width = frame.shape[:2]
    ref = MountainCarEnv()
    scale = width / (ref.max_position - ref.min_position)
    for x in range(240, 540, 23):
        y = height - 1 - int(ref._height(ref.min_position + x / scale) * scale)
        black = np.flatnonzero((frame[:, x] == 0).all(axis=1))
        assert black.tolist() == [y - 1, y], (name, x)


def test_acrobot_frames_use_gymnasiums_colours_and_no_others():
    frame = gym.make("fastvec/Acrobot", render_mode="rgb_array")
    frame.reset(seed=0)
    ours = {tuple(c) for c in np.unique(frame.render().reshape(-1, 3), axis=0)}
    ref = gym.make("Acrobot-v1", render_mode="rgb_array")
    ref.reset(seed=0)
    colours, counts = np.unique(ref.render().reshape(-1, 3), axis=0, return_counts=True)
    main = {tuple(c) for c, k in zip(colours, counts) if k > 200}  # Gymnasium's colours, not its anti-aliasing
    assert ours == main == {(0, 0, 0), (0, 204, 204), (204, 204, 0), (255, 255, 255)}


@pytest.mark.parametrize("name", list(GYM))
def test_the_frame_rate_is_gymnasiums(name):
    assert gym.make(f"fastvec/{name}").metadata["render_fps"] == gym.make(GYM[name]).metadata["render_fps"]


@pytest.mark.parametrize("env", ["acrobot", "mountaincar", "mountaincarcontinuous", "pendulum"])
def test_a_bare_header_plays_as_the_registrys_defaults(env):
    """Compiled without -D (as a user's own nvcc or make_vec_from_source would), a classic-control header plays
    exactly as the registry's build with its default parameters."""
    n, rng, same_step = 16, np.random.default_rng(1), native.AUTORESET_CODES["SameStep"]
    bare = cpu.CpuBatch(cpu.load(native.source_path(env), ()), n, same_step, None)
    registry = cpu.CpuBatch(load_env(env, {}), n, same_step, None)
    spaces = registry.env.spaces
    for b in (bare, registry):
        b.reset(np.arange(n, dtype=np.uint64), None)
    for _ in range(300):
        if spaces.action_kind == "box":
            actions = rng.uniform(spaces.action_low, spaces.action_high, (n, 1, spaces.action_dims)).astype(np.float32)
        else:
            actions = rng.integers(0, spaces.num_actions, (n, 1))
        bare.step(actions)
        registry.step(actions)
        np.testing.assert_array_equal(bare.obs, registry.obs)
        np.testing.assert_array_equal(bare.rewards, registry.rewards)
        np.testing.assert_array_equal(bare.terminated, registry.terminated)


@pytest.mark.parametrize("key,float32", [(k, f) for k in ("acrobot", "mountaincar", "mountaincarcontinuous", "pendulum")
                                         for f in (0, 1)])
def test_each_classic_control_build_compiles_without_warnings(key, float32, env_warnings):
    """Both precisions' builds compile without a warning (-Wall at -O3): no state or table indexed past its end, no
    value used uninitialised."""
    assert env_warnings(native.source_path(key), native.resolve_defines(key, {"float32": float32})) == ""


def _gym_step(ref, state, action):
    """Gymnasium's one step from `state`: (the state after it, terminated)."""
    ref.unwrapped.state = np.array(state, np.float64)
    _, _, terminated, _, _ = ref.step(action)
    return np.array(ref.unwrapped.state, np.float64), terminated


def _car_edges(name, action):
    """Starts one step from each rule's edge, found with Gymnasium's own step: the velocity lands exactly on 0 at
    the goal (terminated, since Gymnasium asks velocity >= goal velocity), the position exactly on the goal
    (terminated) and one value short of it (not), and the car against the left wall with the smallest positive
    velocity (kept, where a negative one is zeroed)."""
    ref = gym.make(GYM[name])
    ref.reset(seed=0)
    goal = ref.unwrapped.goal_position
    push = lambda p: _gym_step(ref, [p, 0.0], action)[0][1]  # the velocity gained from rest at p: exact
    on_goal = [goal + 0.05, -push(goal + 0.05)]
    low, high = goal - 0.1, goal  # bisect the start position whose step ends on the goal, at speed 0.02
    while np.nextafter(low, high) < high:
        mid = low + (high - low) / 2
        low, high = (low, mid) if _gym_step(ref, [mid, 0.02], action)[1] else (mid, high)
    wall = [-1.2, np.nextafter(-push(-1.2), np.inf)]
    starts = [on_goal, [high, 0.02], [low, 0.02], wall]
    ends = [_gym_step(ref, s, action) for s in starts]
    assert [t for _, t in ends] == [True, True, False, False]
    assert ends[0][0][1] == 0.0 and np.float32(ends[1][0][0]) == np.float32(goal)
    assert np.float32(ends[3][0][0]) == np.float32(-1.2)
    assert 0.0 < ends[3][0][1] < 1e-15  # the wall's rule left the tiny velocity alone
    return starts


@needs_glibc_fma
@pytest.mark.parametrize("name,action", [("MountainCar", 1), ("MountainCarContinuous", np.array([0.0], np.float32)),
                                         ("MountainCarContinuous", np.array([0.75], np.float32))])
def test_mountaincar_goal_and_wall_edges_reached_exactly_end_as_gymnasiums(name, action):
    """From states one step short of each rule's edge (the goal's position and velocity met with equality, the left
    wall with a velocity of one ulp), each episode plays as Gymnasium's to its end, bit for bit."""
    counts = play(name, _car_edges(name, action), lambda s, r: action)
    assert counts["terminated"] >= 2


@needs_glibc_fma
@pytest.mark.parametrize("push", [1.0, -1.0])
def test_mountaincar_continuous_actions_exactly_on_the_bounds_play_as_gymnasiums(push):
    """An action of exactly +-1.0 is inside the Box: Gymnasium's min(max(action, -1.0), 1.0) keeps the float32 action
    (not the Python bound), so the force term is float32 arithmetic; from set states over the track the episodes
    agree bit for bit with Gymnasium's, as they do for actions just past the bounds (clipped to Python floats)."""
    starts = [[-0.5, 0.0], [-1.0, -0.02], [0.2, 0.03], [-0.3, 0.011]]
    for action in (push, np.nextafter(np.float32(push), np.float32(2 * push))):
        act = np.array([action], np.float32)
        counts = play("MountainCarContinuous", starts, lambda s, r: act)
        assert counts["transitions"] >= 40
