"""fastvec's MuJoCo tasks against Gymnasium's own v5 envs (SyncVectorEnv of them): from the same states, the
same actions give the same observations, rewards, flags and infos, bit for bit, over whole episodes; the health
bounds hit exactly; a batch cut into chunks for several threads."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401  (registers fastvec/<Task>-v5)
from fastvec.native.mujoco import TASKS  # noqa: E402

NUM_ENVS = 3
STEPS = 300  # vector steps per case: every task ends several episodes (or truncates) in them


def gym_state(env) -> np.ndarray:
    data = env.unwrapped.data
    return np.concatenate([data.qpos, data.qvel])


def perturb(oracle, ours, rng, scale, velocity_scale=None):
    """Move every env to a state off the reset distribution (Gymnasium's set_state right after its reset)."""
    vscale = velocity_scale or scale
    for i, env in enumerate(oracle.envs):
        u = env.unwrapped
        u.set_state(u.data.qpos + rng.uniform(-scale, scale, u.model.nq), u.data.qvel + rng.uniform(-vscale, vscale, u.model.nv))
        ours.set_state([i], gym_state(env)[None])


def compare_info(task, t, info, want_info, compared):
    """Keys, masks and dtypes equal; values equal where `compared` (an env's own reset noise differs)."""
    assert set(info) == set(want_info), f"{task} info keys, step {t}"
    for key in want_info:
        if key.startswith("_"):
            np.testing.assert_array_equal(info[key], want_info[key], err_msg=f"{task} info[{key!r}], step {t}")
        elif key == "final_info":
            compare_info(task, t, info[key], want_info[key], want_info["_final_info"])
        elif key == "final_obs":
            for i in np.flatnonzero(want_info["_final_obs"]):
                np.testing.assert_array_equal(info[key][i], want_info[key][i], err_msg=f"{task} final_obs, step {t}")
        else:
            np.testing.assert_array_equal(np.asarray(info[key])[compared], np.asarray(want_info[key])[compared],
                                          err_msg=f"{task} info[{key!r}], step {t}")
            assert np.asarray(info[key]).dtype == np.asarray(want_info[key]).dtype, f"{task} info[{key!r}] dtype"


def compare_steps(task, kwargs=None, steps=STEPS, perturb_scale=0.0, scripted=False, dtype=np.float32,
                  autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP, velocity_scale=None):
    kwargs = kwargs or {}
    oracle = gym.make_vec(f"{task}-v5", num_envs=NUM_ENVS, vectorization_mode="sync",
                          vector_kwargs={"autoreset_mode": autoreset_mode}, **kwargs)
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=NUM_ENVS, autoreset_mode=autoreset_mode, **kwargs)
    rng = np.random.default_rng(len(task))
    want_obs, want_info = oracle.reset(seed=7)
    ours.reset(seed=7)
    for i, env in enumerate(oracle.envs):
        ours.set_state([i], gym_state(env)[None])
    if perturb_scale:
        perturb(oracle, ours, rng, perturb_scale, velocity_scale)
        want_obs = np.stack([env.unwrapped._get_obs() for env in oracle.envs])
    np.testing.assert_array_equal(ours.batch.obs, want_obs)
    assert ours.single_observation_space == oracle.single_observation_space
    assert ours.single_action_space == oracle.single_action_space
    ended = 0
    for t in range(steps):
        if scripted:  # a smooth periodic action per dimension, to the bounds and past them
            phase = np.arange(ours.batch.nu) + np.arange(NUM_ENVS)[:, None]
            actions = (1.3 * np.sin(0.07 * t + phase) * oracle.single_action_space.high).astype(np.float32)
        else:
            actions = oracle.action_space.sample().astype(dtype)
        want = oracle.step(actions)
        got = ours.step(actions)
        reset = ours.batch.was_reset
        for i in np.flatnonzero(reset):  # our reset noise is our own: take Gymnasium's reset state
            ours.set_state([i], gym_state(oracle.envs[i])[None])
        np.testing.assert_array_equal(ours.batch.obs, want[0], err_msg=f"{task} obs, step {t}")
        for name, k in (("reward", 1), ("terminated", 2), ("truncated", 3)):
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{task} {name}, step {t}")
        compare_info(task, t, got[4], want[4], ~reset)
        ended += int(np.sum(want[2] | want[3]))
    oracle.close()
    ours.close()
    return ended


@pytest.mark.parametrize("task", list(TASKS))
def test_random_actions_match_gymnasium(task):
    compare_steps(task)


@pytest.mark.parametrize("task", ["Hopper", "Ant", "Reacher", "Humanoid", "InvertedDoublePendulum"])
def test_scripted_actions_from_set_states_match_gymnasium(task):
    compare_steps(task, steps=150, perturb_scale=0.05, scripted=True)


@pytest.mark.parametrize("task, kwargs", [
    ("Ant", {"ctrl_cost_weight": 0.1, "exclude_current_positions_from_observation": False,
             "include_cfrc_ext_in_observation": False, "healthy_z_range": (0.3, 0.9), "frame_skip": 3}),
    ("Hopper", {"healthy_angle_range": (-0.5, 0.5), "terminate_when_unhealthy": False, "forward_reward_weight": 2.0}),
    ("Humanoid", {"include_cinert_in_observation": False, "contact_cost_range": (-1.0, 1e-3)}),
    ("Reacher", {"reward_dist_weight": 0.5, "reward_control_weight": 3.0}),
    ("Walker2d", {"xml_file": "walker2d.xml"}),
])
def test_constructor_keywords_match_gymnasium(task, kwargs):
    compare_steps(task, kwargs=kwargs, steps=120)


@pytest.mark.parametrize("task", ["Reacher", "Ant", "Humanoid"])
def test_float64_actions_match_gymnasium(task):
    """Gymnasium's NumPy computes the control cost of float64 actions in float64 (float32 ones in float32)."""
    compare_steps(task, steps=100, dtype=np.float64)


@pytest.mark.parametrize("task", ["Reacher", "Hopper", "InvertedPendulum"])
def test_same_step_autoreset_matches_gymnasium(task):
    """SAME_STEP: the ended episode's final_obs and final_info, the next one's first obs and reset info."""
    assert compare_steps(task, steps=120, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP) > 0


def test_truncation_and_episodes_are_covered():
    """Reacher truncates at Gymnasium's 50 steps; the oracle comparison covers those ends and their autoresets."""
    assert compare_steps("Reacher", steps=120) == 2 * NUM_ENVS


# Gymnasium's strict health bounds: Hopper is healthy while -0.2 < angle < 0.2 (qpos[2]); InvertedPendulum ends
# once |angle| > 0.2 (qpos[1]).
# The heights' bounds too (Hopper's z > 0.7, Walker2d's 0.8 < z < 2 and -1 < angle < 1, Humanoid's 1 < z < 2, Ant's
# z <= 1, inclusive): below a standing height the feet are in the floor, whose push needs a fast fall to land on the
# bound (the velocities' bracket, last; Ant's floor push jumps over its 0.2).
BOUNDS = [("Hopper", 2, 0.2), ("Hopper", 2, -0.2), ("InvertedPendulum", 1, 0.2), ("InvertedPendulum", 1, -0.2),
          ("Hopper", 1, 0.7, -30), ("Walker2d", 1, 0.8, -30), ("Walker2d", 1, 2.0), ("Walker2d", 2, 1.0),
          ("Walker2d", 2, -1.0), ("Humanoid", 2, 1.0, -30), ("Humanoid", 2, 2.0),
          ("Ant", 2, 1.0)]


@pytest.mark.parametrize("task, joint, bound, slowest", [b if len(b) == 4 else (*b, -1.0) for b in BOUNDS])
def test_a_step_that_lands_exactly_on_a_health_bound_ends_as_gymnasiums(task, joint, bound, slowest):
    """From the bound itself, the joint's velocity bisected in Gymnasium's env until one step lands the angle on the
    bound to the last bit (and its neighbour just past it): fastvec's step from each of those states ends the
    episode, or not, as Gymnasium's does, with the same observation."""
    oracle = gym.make(f"{task}-v5").unwrapped
    oracle.reset(seed=0)
    qpos, qvel = oracle.data.qpos.copy(), oracle.data.qvel.copy()
    qpos[joint] = bound
    action = np.zeros(oracle.action_space.shape, np.float32)

    def step_from(velocity):
        v = qvel.copy()
        v[joint] = velocity
        oracle.reset(seed=0)  # the solver's warm start as after a reset, as fastvec's below
        oracle.set_state(qpos, v)
        obs, _, terminated, _, _ = oracle.step(action)
        return np.concatenate([qpos, v]), oracle.data.qpos[joint], obs, terminated

    lo, hi = slowest, 1.0  # the landing value grows with the velocity: below the bound at lo, above it at hi
    while lo < (mid := (lo + hi) / 2) < hi:
        lo, hi = (mid, hi) if step_from(mid)[1] <= bound else (lo, mid)
    on, past = step_from(lo), step_from(hi)
    assert on[1] == bound and past[1] > bound
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=2)
    ours.reset(seed=0)
    ours.set_state([0, 1], np.stack([on[0], past[0]]))
    obs, _, terminated, _, _ = ours.step(np.zeros((2, *action.shape), np.float32))
    np.testing.assert_array_equal(obs, np.stack([on[2], past[2]]))
    assert terminated.tolist() == [on[3], past[3]]
    ours.close()


def test_a_batch_stepped_by_several_threads_matches_gymnasium_env_by_env():
    """16 envs (enough for the thread pool to cut them into chunks) on 4 threads: each env is stepped once per
    step, by whichever thread, as Gymnasium's own env would be."""
    n, rng = 16, np.random.default_rng(5)
    oracle = gym.make_vec("InvertedPendulum-v5", num_envs=n, vectorization_mode="sync")
    ours = gym.make_vec("fastvec/InvertedPendulum-v5", num_envs=n)
    ours.batch.lib.fv_mj_set_threads(4)
    try:
        oracle.reset(seed=1)
        ours.reset(seed=1)
        ours.set_state(None, np.stack([gym_state(env) for env in oracle.envs]))
        for t in range(3):
            actions = rng.uniform(-3, 3, (n, 1)).astype(np.float32)
            want, got = oracle.step(actions), ours.step(actions)
            np.testing.assert_array_equal(got[0], want[0], err_msg=f"obs, step {t}")
            np.testing.assert_array_equal(got[2], want[2], err_msg=f"terminated, step {t}")
    finally:
        ours.batch.lib.fv_mj_set_threads(fastvec.native.cpu.default_threads())
        oracle.close()
        ours.close()


@pytest.mark.parametrize("task", ["InvertedDoublePendulum", "Hopper", "Walker2d", "HalfCheetah"])
def test_fast_states_observe_clipped_velocities_as_gymnasiums(task):
    """States of fast joints (velocities up to 15 off the reset's, past the +-10 that InvertedDoublePendulum's,
    Hopper's and Walker2d's observations clip them to): observations, rewards and ends as Gymnasium's from there."""
    compare_steps(task, steps=20, perturb_scale=0.05, velocity_scale=15.0)
