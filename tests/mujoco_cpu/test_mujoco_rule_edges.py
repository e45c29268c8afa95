"""MuJoCo tasks at the edges of their rules against Gymnasium's v5 envs: Ant's main_body at the world body (0),
InvertedPendulum's end on a non-finite observation entry other than the pole angle, and MujocoBatch.step's count
of ended episodes (0 on a step where none ends)."""

import warnings

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401  (registers fastvec/<Task>-v5)
from fastvec.native.mujoco import MujocoBatch  # noqa: E402


@pytest.mark.parametrize("task,main_body", [("Ant", 0), ("Ant", "world")])
def test_ants_main_body_may_be_the_world_body_as_in_gymnasium(task, main_body):
    """Gymnasium's Ant-v5 takes main_body=0 (the world body, by index or by its name): its xpos never moves, so
    the forward reward and velocities are 0; fastvec takes it too and steps as Gymnasium does."""
    from test_exactness import compare_steps

    compare_steps(task, kwargs={"main_body": main_body, "healthy_z_range": (0.3, 0.9)}, steps=10)


# A cart and a pole whose centre of mass is on the hinge, no gravity, no damping, Euler steps of 1e300 s: the
# cart's velocity (set, or given by the motor) carries its position (and, with the motor, its velocity) past
# float64's range in one step while the pole's angle stays 0.
CART = """<mujoco><option gravity="0 0 0" integrator="Euler" timestep="{timestep}"/>
<worldbody><body name="cart"><joint name="slider" type="slide" axis="1 0 0"/>
<geom type="capsule" size="0.1 0.1" quat="0.707 0 0.707 0"/>
<body name="pole"><joint name="hinge" type="hinge" axis="0 1 0"/><geom type="sphere" size="0.05"/></body></body>
</worldbody><actuator><motor joint="slider" gear="{gear}" ctrlrange="-3 3"/></actuator></mujoco>"""


@pytest.mark.parametrize("task,timestep,gear,qvel,action", [
    ("InvertedPendulum", "1e300", 100, [1e9, 0.0], 0.0),   # the cart's position overflows
    ("InvertedPendulum", "1e305", 1e4, [0.0, 0.0], 3.0),   # its velocity and position overflow
])
def test_inverted_pendulum_ends_on_any_non_finite_obs_entry_as_gymnasium(task, timestep, gear, qvel, action,
                                                                         tmp_path):
    """Gymnasium's InvertedPendulum-v5: terminated = not isfinite(obs).all() or |obs[1]| > 0.2, reward (and
    reward_survive) 0 then. An infinite cart position or velocity with the pole upright ends the episode with
    reward 0, not 1."""
    path = tmp_path / "cart.xml"
    path.write_text(CART.format(timestep=timestep, gear=gear))
    kwargs = {"xml_file": str(path), "frame_skip": 1, "reset_noise_scale": 0.0}
    ref = gym.make(f"{task}-v5", **kwargs)
    ref.reset(seed=0)
    ref.unwrapped.set_state(np.zeros(2), np.array(qvel))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_obs, want_reward, want_term, want_trunc, want_info = ref.step(np.array([action], np.float32))
    assert not np.isfinite(want_obs).all() and want_obs[1] == 0 and (want_term, want_reward) == (True, 0)
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1, **kwargs)
    ours.reset(seed=0)
    ours.set_state([0], np.array([[0.0, 0.0, *qvel]]))
    obs, reward, terminated, truncated, info = ours.step(np.array([[action]], np.float32))
    np.testing.assert_array_equal(obs[0], want_obs)
    assert (reward[0], terminated[0], truncated[0]) == (want_reward, want_term, want_trunc)
    assert info["reward_survive"][0] == want_info["reward_survive"] == 0
    ref.close()
    ours.close()


@pytest.mark.parametrize("same_step", [False, True], ids=["next_step", "same_step"])
def test_batch_step_returns_how_many_episodes_ended(same_step):
    """MujocoBatch.step's return value is the number of episodes the step ended (terminated or truncated): 0 on
    every step where none ends (the first steps of healthy Hoppers, the autoreset step under NEXT_STEP), all of
    them at the time limit, and the count of Gymnasium's ends of the same states under random actions."""
    n, limit = 5, 3
    batch = MujocoBatch("Hopper", n, max_episode_steps=limit, same_step=same_step)
    batch.reset(seeds=np.arange(n))
    zeros = np.zeros((n, 3), np.float32)
    for t in range(1, limit):
        assert batch.step(zeros) == 0, t
        assert not (batch.terminated | batch.truncated).any()
    assert batch.step(zeros) == n and batch.truncated.all()
    if not same_step:
        assert batch.step(zeros) == 0 and batch.was_reset.all()
    # One step of random actions from each of Gymnasium's reset states: the count is Gymnasium's envs' ends.
    oracle = gym.make_vec("Hopper-v5", num_envs=n, vectorization_mode="sync", healthy_state_range=(-1.0, 1.0))
    tight = MujocoBatch("Hopper", n, same_step=same_step, healthy_state_range=(-1.0, 1.0))
    rng = np.random.default_rng(4)
    counts = []
    for seed in range(3):
        oracle.reset(seed=seed)
        tight.reset(seeds=np.arange(n))
        tight.set_state(None, np.stack([np.concatenate([env.unwrapped.data.qpos, env.unwrapped.data.qvel])
                                        for env in oracle.envs]))
        actions = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
        _, _, term, trunc, _ = oracle.step(actions)
        got = tight.step(actions)
        np.testing.assert_array_equal(tight.terminated, term)
        assert got == int(np.sum(term | trunc))
        counts.append(got)
    assert 0 < min(counts) < n  # some envs end and some do not
    batch.close(), tight.close(), oracle.close()


@pytest.mark.parametrize("task", ["InvertedPendulum"])
def test_inverted_pendulums_angle_limit_is_strict_as_gymnasiums(task, tmp_path):
    """|obs[1]| > 0.2 ends the episode: a pole held still at exactly +-0.2 (no gravity, no damping: the step leaves
    the angle as it was) stays up with reward 1, one ulp past it or at 0.25 ends it with reward 0, as Gymnasium's."""
    path = tmp_path / "still.xml"
    path.write_text(CART.format(timestep="0.02", gear=100))
    kwargs = {"xml_file": str(path), "frame_skip": 1, "reset_noise_scale": 0.0}
    ref = gym.make(f"{task}-v5", **kwargs)
    ref.reset(seed=0)
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1, **kwargs)
    ours.reset(seed=0)
    ended = []
    for angle in (0.2, -0.2, np.nextafter(0.2, 1.0), -np.nextafter(0.2, 1.0), 0.25, 0.1):
        ref.unwrapped.set_state(np.array([0.0, angle]), np.zeros(2))
        want_obs, want_reward, want_term, _, _ = ref.step(np.zeros(1, np.float32))
        assert want_obs[1] == angle
        ours.set_state([0], np.array([[0.0, angle, 0.0, 0.0]]))
        obs, reward, terminated, _, _ = ours.step(np.zeros((1, 1), np.float32))
        np.testing.assert_array_equal(obs[0], want_obs)
        assert (reward[0], terminated[0]) == (want_reward, want_term), angle
        ended.append(bool(want_term))
        ours.reset(seed=0)
    assert ended == [False, False, True, True, True, False]
    ref.close()
    ours.close()
