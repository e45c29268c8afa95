"""Edges of the MuJoCo tasks and their batches that the oracle comparisons leave open: the trainer's host batch
against the Backend protocol it declares, and rule edges checked against hand computations."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

from fastvec.native.mujoco.host_batch import MujocoHostBatch  # noqa: E402


def test_host_batch_declares_the_numpy_arrays_it_hands_out():
    """backend.Backend's host_arrays tells a consumer whether the outputs are NumPy arrays (True) or device
    arrays: the host batch's are NumPy arrays, on the CPU, and it says so."""
    batch = MujocoHostBatch("InvertedPendulum", 2, max_episode_steps=3)
    batch.reset(np.array([1, 2], np.uint64), None)
    batch.step(np.zeros((2, 1), np.float32))
    assert batch.host_arrays is True and batch.device == "cpu"
    for name in ("obs", "rewards", "terminated", "truncated", "final_obs", "episode_return", "episode_length",
                 "episode_stats"):
        assert type(getattr(batch, name)) is np.ndarray, name
    assert batch.action_mask is None and batch.world_state is None
    batch.close()


THREAD_COUNTS = r"""
import os
import numpy as np
from fastvec.native.mujoco import MujocoBatch

def threads():
    return len(os.listdir("/proc/self/task"))

batch = MujocoBatch("Hopper", 8)  # 8 envs: 512 pool indices, past the pool's least (its first calls pool)
lib, actions = batch.lib, np.zeros((8, 3))
base = threads()
counts = []
for asked in (0, -3, 1):  # the caller alone: no worker started by the reset (its kind's first call)
    lib.fv_mj_set_threads(asked)
    batch.reset()
    counts.append(threads() - base)
lib.fv_mj_set_threads(3)  # the caller and two workers, started by the step (its kind's first call)
batch.step(actions)
counts.append(threads() - base)
print(counts)
"""


def test_mujoco_threads_below_one_step_on_the_caller_alone():
    """fv_mj_set_threads takes a count below 1 as 1 (the caller alone: no worker thread started) and a count above
    1 as that many threads, the caller included, in a fresh process where the pool has started none."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", THREAD_COUNTS], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[-2] == "[0, 0, 0, 2]"


# task, keyword, the qpos entry it bounds, its default range: Gymnasium's health checks (Ant's inclusive, the
# others' strict), each end tested at one step's own value, one ulp inside it and one ulp outside it.
HEALTH_EDGES = [("Ant", "healthy_z_range", 2, (0.2, 1.0)), ("Humanoid", "healthy_z_range", 2, (1.0, 2.0)),
                ("Walker2d", "healthy_z_range", 1, (0.8, 2.0)), ("Walker2d", "healthy_angle_range", 2, (-1.0, 1.0)),
                ("Hopper", "healthy_z_range", 1, (0.7, float("inf"))),
                ("Hopper", "healthy_angle_range", 2, (-0.2, 0.2))]


@pytest.mark.parametrize("task,keyword,entry,default", HEALTH_EDGES,
                         ids=[f"{t}-{k}" for t, k, _, _ in HEALTH_EDGES])
def test_a_health_range_end_at_exactly_the_steps_value_ends_the_episode_as_gymnasiums(task, keyword, entry, default):
    """A health range whose low or high end is exactly the bounded value after one step (or one ulp inside or
    outside it) terminates, and pays the healthy reward, as Gymnasium's env given the same range."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/<Task>-v5)

    probe = gym.make(f"{task}-v5").unwrapped
    probe.reset(seed=3)
    start = np.concatenate([probe.data.qpos, probe.data.qvel])
    action = np.random.default_rng(77201).uniform(-0.4, 0.4, probe.action_space.shape).astype(np.float32)
    probe.step(action)
    value = float(probe.data.qpos[entry])
    assert default[0] < value < default[1]
    ranges = []
    for nudge in (-np.inf, None, np.inf):
        at = value if nudge is None else float(np.nextafter(value, nudge))
        ranges += [(at, default[1]), (default[0], at)]
    ends = []
    for health_range in ranges:
        oracle = gym.make(f"{task}-v5", **{keyword: health_range}).unwrapped
        oracle.reset(seed=3)
        oracle.set_state(start[:oracle.model.nq], start[oracle.model.nq:])
        want = oracle.step(action)
        ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1, **{keyword: health_range})
        ours.reset(seed=3)
        ours.set_state([0], start[None])
        got = ours.step(action[None])
        assert (bool(got[2][0]), got[1][0]) == (bool(want[2]), want[1]), health_range
        ends.append(bool(want[2]))
        ours.close()
        oracle.close()
    strict = task != "Ant"  # an end's own value is unhealthy in a strict range, healthy in Ant's
    assert ends == [False, True, strict, strict, True, False]


@pytest.mark.parametrize("task", ["InvertedDoublePendulum"])
def test_the_tip_at_exactly_height_one_ends_the_episode_as_gymnasiums(task, tmp_path):
    """Gymnasium's InvertedDoublePendulum terminates when its first site's height y <= 1: Gymnasium's model with a
    site fixed on the world at exactly z = 1 ends every episode at its first step (no survival bonus), one ulp
    higher none."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/<Task>-v5)
    from fastvec.native.mujoco import model_path

    source = open(model_path("inverted_double_pendulum.xml")).read()
    ends, rewards = [], []
    for z in (1.0, float(np.nextafter(1.0, 2.0))):
        path = tmp_path / f"edge_{len(ends)}.xml"
        path.write_text(source.replace("<worldbody>", f'<worldbody><site name="edge" pos="0 0 {z!r}"/>', 1))
        oracle = gym.make(f"{task}-v5", xml_file=str(path)).unwrapped
        ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1, xml_file=str(path))
        oracle.reset(seed=0)
        ours.reset(seed=0)
        ours.set_state([0], np.concatenate([oracle.data.qpos, oracle.data.qvel])[None])
        action = np.array([0.3], np.float32)
        want = oracle.step(action)
        got = ours.step(action[None])
        assert (bool(got[2][0]), got[1][0]) == (bool(want[2]), want[1]), z
        ends.append(bool(want[2]))
        rewards.append(got[4]["reward_survive"][0])
        oracle.close()
        ours.close()
    assert ends == [True, False] and rewards == [0.0, 10.0]


def test_only_the_ended_envs_own_actions_are_exempt_from_the_finite_check():
    """Next-step autoreset over a task of two actuators: env 1, whose episode ended last step, is reset instead of
    stepped, so both of its actions (flat indices 2 and 3) may be NaN; a NaN of any other env is refused with its env
    and dimension, nothing stepped."""
    from fastvec.native.mujoco import ActionError, MujocoBatch

    n, limit = 8, 3
    batch = MujocoBatch("Reacher", n, max_episode_steps=limit)
    batch.reset(np.arange(n, dtype=np.uint64))
    zeros = np.zeros((n, 2))
    batch.step(zeros)
    batch.step(zeros)
    batch.reset(np.arange(n, dtype=np.uint64), np.arange(n) != 1)  # env 1 alone two steps into its episode
    batch.step(zeros)
    assert batch.truncated.tolist() == [i == 1 for i in range(n)]
    before = batch.get_state()
    for env, dim in ((2, 1), (4, 0), (0, 1)):
        bad = zeros.copy()
        bad[1] = np.nan
        bad[env, dim] = np.nan
        with pytest.raises(ActionError, match=rf"env {env}, dimension {dim}"):
            batch.step(bad)
        np.testing.assert_array_equal(batch.get_state(), before)
    bad = zeros.copy()
    bad[1] = np.nan
    batch.step(bad)
    assert batch.was_reset.tolist() == [i == 1 for i in range(n)]
    assert np.isfinite(batch.obs).all()
    batch.close()


RK4_SPRING = ('<mujoco><option integrator="RK4" timestep="0.01" gravity="0 0 0"/><worldbody><body>'
              '<joint name="j" type="slide" axis="1 0 0" stiffness="1e300"/>'
              '<geom type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body></worldbody>'
              '<actuator><motor joint="j"/></actuator></mujoco>')


def test_a_velocity_that_overflows_without_a_mujoco_warning_is_unstable(tmp_path):
    """MuJoCo checks qpos, qvel and qacc before the physics, not RK4's inner stages: a slide on a spring of stiffness
    1e300 started at 0 with velocity 1e9 passes the checks, and its last stage's acceleration overflows, so the step
    leaves qvel infinite and qpos finite with no warning raised (libmujoco's own step shows it). The batch still ends
    the episode as unstable: its qvel is not finite."""
    import mujoco

    from fastvec.native.mujoco import MujocoBatch

    path = tmp_path / "rk4_spring.xml"
    path.write_text(RK4_SPRING)
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    data.qvel[0] = 1e9
    mujoco.mj_step(model, data)
    assert np.isfinite(data.qpos).all() and np.isinf(data.qvel).all()
    assert [w.number for w in data.warning] == [0] * len(data.warning)
    batch = MujocoBatch("InvertedPendulum", 2, xml_file=str(path), frame_skip=1)
    batch.reset(np.array([0, 1], np.uint64))
    batch.set_state([0, 1], np.array([[0.0, 1e9], [0.0, 0.0]]))
    batch.step(np.zeros((2, 1)))
    state = batch.get_state()
    np.testing.assert_array_equal(state[0], [data.qpos[0], data.qvel[0]])
    assert batch.unstable.tolist() == [True, False] and batch.terminated.tolist() == [True, False]
    batch.close()


@pytest.mark.parametrize("task", ["Reacher"])
def test_the_arms_reset_noise_is_centred_on_the_models_reference_positions_as_gymnasiums(task, tmp_path):
    """Gymnasium's Reacher resets qpos to init_qpos (the model's qpos0) + U(-0.1, 0.1): in a user's model whose arm
    joints start at reference positions 0.5 and -0.7, every env's arm angles lie within 0.1 of them (Gymnasium's
    own reset too), and the goal is drawn in the disc of radius 0.2 whatever the target joints' references."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/<Task>-v5)
    from fastvec.native.mujoco import model_path

    text = open(model_path("reacher.xml")).read()
    for joint, ref in (("joint0", 0.5), ("joint1", -0.7)):
        assert text.count(f'name="{joint}"') == 1
        text = text.replace(f'name="{joint}"', f'name="{joint}" ref="{ref}"')
    path = tmp_path / "reacher_ref.xml"
    path.write_text(text)
    ref = gym.make(f"{task}-v5", xml_file=str(path)).unwrapped
    ref.reset(seed=1)
    assert ref.model.qpos0[:2].tolist() == [0.5, -0.7] and np.abs(ref.data.qpos[:2] - [0.5, -0.7]).max() <= 0.1
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=64, xml_file=str(path))
    ours.reset(seed=1)
    arm = ours.get_state()[:, :2] - [0.5, -0.7]
    assert np.abs(arm).max() <= 0.1 and arm.std(axis=0).min() > 0.03
    goal = ours.get_state()[:, 2:4]
    assert (np.hypot(goal[:, 0], goal[:, 1]) < 0.2).all()
    ours.close()
    ref.close()


@pytest.mark.parametrize("part", ["qpos", "qvel", "qvel-ends"])
def test_Hopper_healthy_state_range_ends_at_exactly_the_steps_extreme_as_gymnasiums(part):
    """Hopper's healthy_state_range bounds every entry of qpos[2:] and qvel strictly: a low (high) end at exactly
    the smallest (largest) of them after one step terminates, one ulp outside it does not, as Gymnasium's env
    given the same range; the start makes those extremes entries of qpos (a bent thigh, a leaning torso), of qvel
    (fast thigh and leg), or qvel's first and last (a fast slide back, a fast foot)."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/Hopper-v5)

    probe = gym.make("Hopper-v5").unwrapped
    probe.reset(seed=5)
    qpos, qvel = probe.data.qpos.copy(), probe.data.qvel.copy()
    if part == "qpos":
        qpos[3], qpos[2] = -0.4, 0.15  # the thigh bent past every velocity's size, the torso leaning the other way
    elif part == "qvel":
        qvel[3], qvel[4] = -2.0, 2.0
    else:
        qvel[0], qvel[-1] = -2.0, 2.0
    start = np.concatenate([qpos, qvel])
    action = np.zeros(probe.action_space.shape, np.float32)
    probe.set_state(qpos, qvel)
    probe.step(action)
    state = np.concatenate([probe.data.qpos[2:], probe.data.qvel])
    split = probe.model.nq - 2
    low, high = float(state.min()), float(state.max())
    assert (state.argmin() < split, state.argmax() < split) == ((part == "qpos",) * 2)
    if part == "qvel-ends":
        assert (state.argmin(), state.argmax()) == (split, len(state) - 1)
    ranges, wants = [], []
    for nudge in (-np.inf, None, np.inf):
        ranges += [(low if nudge is None else float(np.nextafter(low, nudge)), 100.0),
                   (-100.0, high if nudge is None else float(np.nextafter(high, -nudge)))]
    for health_range in ranges:
        oracle = gym.make("Hopper-v5", healthy_state_range=health_range).unwrapped
        oracle.reset(seed=5)
        oracle.set_state(qpos, qvel)
        want = oracle.step(action)
        ours = gym.make_vec("fastvec/Hopper-v5", num_envs=1, healthy_state_range=health_range)
        ours.reset(seed=5)
        ours.set_state([0], start[None])
        got = ours.step(action[None])
        assert (bool(got[2][0]), got[1][0]) == (bool(want[2]), want[1]), health_range
        wants.append(bool(want[2]))
        ours.close()
        oracle.close()
    probe.close()
    assert wants == [False, False, True, True, True, True]


@pytest.mark.parametrize("high", [-0.05, -0.5])
def test_Hopper_healthy_state_range_of_negatives_bounds_only_qpos_and_qvels_entries(high):
    """A healthy_state_range wholly below zero, (-100, high): a hopper in the air with every joint bent back and
    every velocity -1 stays healthy where each entry of qpos[2:] and qvel lies below high (-0.05), and is unhealthy
    where one lies above it (-0.5), as Gymnasium's env: the check reads those entries and nothing past either."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/Hopper-v5)

    oracle = gym.make("Hopper-v5", healthy_state_range=(-100.0, high)).unwrapped
    oracle.reset(seed=5)
    qpos, qvel = oracle.data.qpos.copy(), np.full(oracle.model.nv, -1.0)
    qpos[1], qpos[2:] = 1.4, [-0.1, -0.3, -0.3, -0.3]
    oracle.set_state(qpos, qvel)
    action = np.zeros(oracle.action_space.shape, np.float32)
    want = oracle.step(action)
    state = np.concatenate([oracle.data.qpos[2:], oracle.data.qvel])
    assert state.max() < -0.05 and (state.max() < high) == (high == -0.05)
    ours = gym.make_vec("fastvec/Hopper-v5", num_envs=1, healthy_state_range=(-100.0, high))
    ours.reset(seed=5)
    ours.set_state([0], np.concatenate([qpos, qvel])[None])
    got = ours.step(action[None])
    assert (bool(got[2][0]), got[1][0], got[4]["reward_survive"][0]) == (bool(want[2]), want[1],
                                                                         want[4]["reward_survive"])
    assert bool(want[2]) == (high == -0.5)
    ours.close()
    oracle.close()


# A free body without gravity or contacts: from z = -0.0 and a z velocity too small for one timestep to move it
# (dt * qvel rounds to -0.0), MuJoCo's Euler step keeps z at -0.0.
STILL_BODY_XML = """<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="torso"><freejoint/><geom type="sphere" size="0.1" contype="0" conaffinity="0"/>
      <body name="arm"><joint name="h" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05" contype="0" conaffinity="0"/></body>
    </body>
  </worldbody>
  <actuator><motor joint="h"/></actuator>
</mujoco>"""


def test_HumanoidStandup_infos_keep_the_sign_of_a_zero_height_as_gymnasium(tmp_path):
    """HumanoidStandup's uph_cost (pos_after - 0) / timestep and z_distance_from_origin keep a height of -0.0 as
    -0.0 (Gymnasium's arithmetic: -0.0 - 0 is -0.0, -0.0 + 0 would be +0.0): every info value and the reward
    equal Gymnasium's bit for bit, the sign of each zero included."""
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/<Task>-v5)

    path = tmp_path / "still.xml"
    path.write_text(STILL_BODY_XML)
    oracle = gym.make("HumanoidStandup-v5", xml_file=str(path)).unwrapped
    oracle.reset(seed=0)
    qpos, qvel = np.zeros(oracle.model.nq), np.zeros(oracle.model.nv)
    qpos[2], qpos[3], qvel[2] = -0.0, 1.0, -5e-324
    oracle.set_state(qpos, qvel)
    _, want_reward, _, _, want = oracle.step(np.zeros(oracle.model.nu))
    assert np.signbit(want["reward_linup"]) and np.signbit(want["z_distance_from_origin"])
    ours = gym.make_vec("fastvec/HumanoidStandup-v5", num_envs=1, xml_file=str(path))
    ours.reset(seed=0)
    ours.set_state([0], np.concatenate([qpos, qvel])[None])
    _, reward, _, _, got = ours.step(np.zeros((1, oracle.model.nu), np.float32))
    assert reward[0] == want_reward
    for name in ("x_position", "y_position", "z_distance_from_origin", "reward_linup", "reward_quadctrl",
                 "reward_impact"):
        value = np.float64(got[name][0])
        assert (value, np.signbit(value)) == (want[name], np.signbit(want[name])), name
    ours.close()
