"""The Gymnasium faces of the MuJoCo tasks: the single env against Gymnasium's, bad inputs refused with one
line and nothing stepped, an unstable simulation ending its episode with a flag, a closed env refusing every call."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402
from gymnasium.error import ClosedEnvironmentError  # noqa: E402

import fastvec  # noqa: E402,F401
from fastvec.native.spaces import ActionError  # noqa: E402


@pytest.mark.parametrize("task", ["InvertedPendulum", "Hopper", "Humanoid"])
def test_single_env_matches_gymnasium(task):
    oracle, ours = gym.make(f"{task}-v5"), gym.make(f"fastvec/{task}-v5")
    assert ours.spec.max_episode_steps == oracle.spec.max_episode_steps
    _, want_info = oracle.reset(seed=3)
    _, info = ours.reset(seed=3)
    assert set(info) == set(want_info)
    data = oracle.unwrapped.data
    ours.unwrapped.set_state(data.qpos, data.qvel)
    np.testing.assert_array_equal(ours.unwrapped.state, np.concatenate([data.qpos, data.qvel]))
    for _ in range(60):
        action = oracle.action_space.sample()
        want = oracle.step(action)
        got = ours.step(action)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is type(want[1])
        assert got[2:4] == want[2:4]
        assert set(got[4]) == set(want[4])
        for key in want[4]:
            np.testing.assert_array_equal(got[4][key], want[4][key])
            assert np.asarray(got[4][key]).dtype == np.asarray(want[4][key]).dtype, key
        if want[2] or want[3]:
            break


def test_reset_noise_has_gymnasiums_spread():
    """Reset states are our own draws from Gymnasium's distribution: qpos0 + U(-s, s), qvel + s * N(0, 1) (Ant)."""
    env = gym.make_vec("fastvec/Ant-v5", num_envs=512, reset_noise_scale=0.2)
    env.reset(seed=0)
    state = env.unwrapped.get_state()
    qpos0 = gym.make("Ant-v5").unwrapped.init_qpos
    noise = state[:, :15] - qpos0
    assert np.abs(noise).max() <= 0.2 and np.abs(noise).max() > 0.19
    assert abs(noise.std() - 0.2 / np.sqrt(3)) < 0.01
    assert abs(state[:, 15:].std() - 0.2) < 0.01
    again = gym.make_vec("fastvec/Ant-v5", num_envs=512, reset_noise_scale=0.2)
    again.reset(seed=0)
    np.testing.assert_array_equal(again.unwrapped.get_state(), state)  # seeded: the same draws


def test_unknown_keyword_is_refused():
    with pytest.raises(TypeError, match="no keyword 'ctrl_cost'"):
        gym.make_vec("fastvec/Ant-v5", num_envs=2, ctrl_cost=0.1)


def test_missing_model_file_is_refused():
    with pytest.raises(FileNotFoundError, match="no_such_model.xml"):
        gym.make_vec("fastvec/Hopper-v5", num_envs=2, xml_file="no_such_model.xml")


def test_model_that_does_not_fit_the_task_is_refused():
    with pytest.raises(ValueError, match="does not fit Reacher: it needs bodies named fingertip and target"):
        gym.make_vec("fastvec/Reacher-v5", num_envs=2, xml_file="ant.xml")


@pytest.mark.parametrize("where, value", [((2, 3), np.nan), ((3, 5), np.inf), ((0, 0), -np.inf)])
def test_nan_action_is_refused_and_nothing_stepped(where, value):
    env = gym.make_vec("fastvec/HalfCheetah-v5", num_envs=4)
    env.reset(seed=1)
    before = env.unwrapped.get_state()
    actions = np.zeros((4, 6), np.float32)
    actions[where] = value
    with pytest.raises(ActionError, match=rf"env {where[0]}, dimension {where[1]}"):
        env.step(actions)
    np.testing.assert_array_equal(env.unwrapped.get_state(), before)


def test_the_action_of_an_env_whose_episode_ended_is_not_read():
    """Next-step autoreset: an env whose episode ended last step is reset in this step, its action unused, so any
    value there (NaN included) is taken, as Gymnasium's vector env takes it."""
    env = gym.make_vec("fastvec/InvertedPendulum-v5", num_envs=2)
    env.reset(seed=0)
    for _ in range(200):
        _, _, terminated, _, _ = env.step(np.array([[3.0], [0.0]], np.float32))
        if terminated[0]:
            break
    assert terminated[0] and not terminated[1]
    env.step(np.array([[np.nan], [0.0]], np.float32))
    assert env.unwrapped.batch.was_reset.tolist() == [True, False]
    with pytest.raises(ActionError, match=r"env 0, dimension 0"):
        env.step(np.array([[np.nan], [0.0]], np.float32))


def test_unstable_simulation_ends_the_episode_with_a_flag(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning also goes to MUJOCO_LOG.TXT in the working directory
    env = gym.make_vec("fastvec/Hopper-v5", num_envs=2)
    env.reset(seed=0)
    state = env.unwrapped.get_state()
    state[1, 6:] = 1e300  # velocities MuJoCo cannot integrate
    env.unwrapped.set_state(None, state)
    _, _, terminated, _, info = env.step(np.zeros((2, 3), np.float32))
    assert terminated.tolist() == [False, True]
    assert info["unstable"].tolist() == [False, True] and info["_unstable"].tolist() == [False, True]
    obs, reward, terminated, _, info = env.step(np.zeros((2, 3), np.float32))  # the next step resets it
    assert np.isfinite(obs).all() and reward[1] == 0 and "unstable" not in info


def test_partial_reset_resets_only_the_masked_envs():
    env = gym.make_vec("fastvec/Swimmer-v5", num_envs=3)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    before = env.unwrapped.get_state()
    obs, info = env.reset(options={"reset_mask": np.array([False, True, False])})
    after = env.unwrapped.get_state()
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])
    assert not np.array_equal(after[1], before[1])
    assert info["_x_position"].tolist() == [False, True, False] and info["x_position"][1] == after[1, 0]


def test_registered_ids_carry_gymnasiums_step_limits_and_thresholds():
    from fastvec.native.mujoco import TASKS

    for task in TASKS:
        ours, theirs = gym.spec(f"fastvec/{task}-v5"), gym.spec(f"{task}-v5")
        assert (ours.max_episode_steps, ours.reward_threshold) == (theirs.max_episode_steps, theirs.reward_threshold)


def test_unstable_simulation_under_same_step_autoreset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = gym.make_vec("fastvec/Hopper-v5", num_envs=2, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    env.reset(seed=0)
    state = env.unwrapped.get_state()
    state[0, 6:] = 1e300
    env.unwrapped.set_state(None, state)
    obs, _, terminated, _, info = env.step(np.zeros((2, 3), np.float32))
    assert terminated.tolist() == [True, False] and np.isfinite(obs).all()  # obs[0]: the next episode's first
    assert info["_final_obs"].tolist() == [True, False] and info["final_info"]["unstable"].tolist() == [True, False]


@pytest.mark.parametrize("vector", [False, True])
def test_a_closed_env_refuses_every_call_and_closes_again_quietly(vector):
    """As Gymnasium's envs and fastvec's other faces: after close(), reset, step, render and the state raise
    ClosedEnvironmentError (the C batch is gone; nothing may reach it) and a second close() does nothing."""
    env = (gym.make_vec("fastvec/Hopper-v5", num_envs=2, render_mode="rgb_array") if vector
           else gym.make("fastvec/Hopper-v5", render_mode="rgb_array"))
    env.reset(seed=0)
    action = env.action_space.sample()
    env.close()
    state = env.get_state if vector else (lambda: env.unwrapped.state)
    for call in (lambda: env.reset(seed=1), lambda: env.reset(), lambda: env.step(action), env.render, state,
                 lambda: env.unwrapped.set_state(*([[0], np.zeros((1, 12))] if vector else [np.zeros(6), np.zeros(6)]))):
        with pytest.raises(ClosedEnvironmentError, match="closed"):
            call()
    env.close()


@pytest.mark.parametrize("limit", [1, 2])
def test_the_shortest_step_limits_truncate_as_gymnasiums_time_limit(limit):
    """max_episode_steps of 1 and 2 truncate every episode after that many steps, as Gymnasium's TimeLimit does
    (InvertedPendulum with no force stays up that long, so no episode terminates first)."""
    n = 3
    envs = gym.make_vec("fastvec/InvertedPendulum-v5", num_envs=n, max_episode_steps=limit,
                        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    oracle = gym.make("InvertedPendulum-v5", max_episode_steps=limit)
    envs.reset(seed=0)
    oracle.reset(seed=0)
    for step in range(1, 2 * limit + 1):
        _, _, terminated, truncated, _ = envs.step(np.zeros((n, 1), np.float32))
        _, _, want_terminated, want_truncated, _ = oracle.step(np.zeros(1, np.float32))
        assert not want_terminated and not terminated.any()
        assert want_truncated == (step % limit == 0) and (truncated == want_truncated).all(), step
        if want_truncated:
            oracle.reset()
    envs.close()


def test_seeds_are_checked_and_a_seed_list_may_leave_envs_unseeded():
    """The vector env takes seeds as the native faces and SyncVectorEnv do: an int seeds env i with seed + i, a list
    one int or None per env (None: that env's stream continues, as a reset without a seed continues it); a negative
    seed, one that would wrap past 2**64 - 1 for a later env, a bool or a float is refused with nothing reset."""
    ours, twin = (gym.make_vec("fastvec/Hopper-v5", num_envs=2) for _ in range(2))
    by_int, _ = ours.reset(seed=7)
    np.testing.assert_array_equal(twin.reset(seed=[7, 8])[0], by_int)
    for _ in range(3):
        ours.step(np.zeros((2, 3), np.float32))
        twin.step(np.zeros((2, 3), np.float32))
    before = ours.unwrapped.get_state()
    for bad, error, message in (([-1, 2], ValueError, r"seed\[0\]=-1 is out of range"),
                                (2**64 - 1, ValueError, "with 2 envs seed must be at most 2\\*\\*64 - 2"),
                                (-3, ValueError, "out of range"), ([True, 1], TypeError, "is not an integer"),
                                (1.5, TypeError, "is not an integer"), ([1, 2, 3], ValueError, "length")):
        with pytest.raises(error, match=message):
            ours.reset(seed=bad)
    np.testing.assert_array_equal(ours.unwrapped.get_state(), before)
    obs, _ = ours.reset(seed=[None, 8])
    np.testing.assert_array_equal(obs[1], by_int[1])  # env 1 seeded with 8, as by seed=7
    np.testing.assert_array_equal(obs[0], twin.reset()[0][0])  # env 0's stream continued, as by an unseeded reset
    assert not np.array_equal(obs[0], by_int[0])
    ours.close()
    twin.close()


def test_the_single_envs_seed_is_checked_as_the_native_faces_check_it():
    """An int in [0, 2**64-1] (NumPy's too); a bool, a float or a seed past either end is refused naming it (a bool
    was taken as 0 or 1, a seed past 2**64-1 failed deep in NumPy), nothing reset."""
    env = gym.make("fastvec/InvertedPendulum-v5").unwrapped
    obs, _ = env.reset(seed=np.uint64(2**64 - 1))
    again, _ = env.reset(seed=2**64 - 1)
    np.testing.assert_array_equal(obs, again)
    env.step(np.zeros(1, np.float32))
    before = env.state
    for bad, error in ((True, TypeError), (1.0, TypeError), (2**64, ValueError), (-1, ValueError)):
        with pytest.raises(error, match=rf"seed={bad!r} is (not an integer|out of range \[0, 2\*\*64-1\])"):
            env.reset(seed=bad)
    np.testing.assert_array_equal(env.state, before)
    env.close()


def test_a_reset_zeroes_the_info_values_that_are_not_reset_info():
    """MujocoBatch.reset writes the reset info's values and 0 for the other keys (the step's rewards and
    velocities): nothing of the episode that ended stays in info, in a full reset, a masked one and an autoreset."""
    from fastvec.native.mujoco import MujocoBatch

    batch = MujocoBatch("Ant", 3, max_episode_steps=2)
    reset_cols = [layout[2] for layout in batch.info_layout if layout[0] in batch.spec.reset_info]
    step_cols = np.ones(batch.info.shape[1], bool)
    for cols in reset_cols:
        step_cols[cols] = False
    assert step_cols.any() and not step_cols.all()
    batch.reset(np.arange(3, dtype=np.uint64), None)
    assert (batch.info[:, step_cols] == 0).all()
    rng = np.random.default_rng(0)
    batch.step(rng.uniform(-1, 1, (3, batch.nu)))
    assert (batch.info[:, step_cols] != 0).any(axis=1).all()
    batch.reset(None, np.array([True, False, True]))
    assert (batch.info[[0, 2]][:, step_cols] == 0).all() and (batch.info[1, step_cols] != 0).any()
    batch.step(rng.uniform(-1, 1, (3, batch.nu)))  # env 1 truncates at its second step
    batch.step(rng.uniform(-1, 1, (3, batch.nu)))  # and is reset by this one (NEXT_STEP)
    assert batch.was_reset.tolist() == [False, True, False]
    assert (batch.info[1, step_cols] == 0).all() and (batch.info[[0, 2]][:, step_cols] != 0).any(axis=1).all()
    batch.close()


def test_resets_on_several_threads_draw_what_one_thread_draws():
    """A batch reset on 4 threads (16 envs: the pool cuts them into chunks) resets each env exactly once: its
    seeded, unseeded (the env's stream continued) and masked resets give one thread's states bit for bit."""
    from fastvec.native.cpu import default_threads

    states = []
    for threads in (1, 4):
        envs = gym.make_vec("fastvec/Hopper-v5", num_envs=16)
        envs.batch.lib.fv_mj_set_threads(threads)
        try:
            envs.reset(seed=4)
            got = [envs.get_state()]
            envs.reset()
            got.append(envs.get_state())
            envs.reset(options={"reset_mask": np.arange(16) % 3 == 0})
            got.append(envs.get_state())
            states.append(got)
        finally:
            envs.batch.lib.fv_mj_set_threads(default_threads())
            envs.close()
    for one, four in zip(*states):
        np.testing.assert_array_equal(four, one)
    mask = np.arange(16) % 3 == 0
    assert (states[0][2][mask] != states[0][1][mask]).any(axis=1).all()
    np.testing.assert_array_equal(states[0][2][~mask], states[0][1][~mask])
    assert (states[0][1] != states[0][0]).any(axis=1).all()


def test_a_task_name_that_the_task_file_does_not_define_is_refused_naming_both():
    """MujocoBatch(task, source=file) with a name that neither the user's file nor fastvec defines is refused
    with the name and the file's own task (not an error about a keyword the user never gave)."""
    from pathlib import Path

    from fastvec.native.mujoco import MujocoBatch

    source = Path(__file__).parent / "forward_task.c"
    with pytest.raises(ValueError, match=r"no MuJoCo task 'Wrong' in .*forward_task\.c.*defines 'ForwardCheetah'"):
        MujocoBatch("Wrong", 1, source=source)
    MujocoBatch("Hopper", 1, source=source).close()  # fastvec's own tasks are built in beside it


def test_a_user_task_may_take_exactly_the_most_parameters_and_no_more(tmp_path):
    """mj_task.h's FV_MJ_MAX_PARAMS (48) values: a task file declaring 48 keywords builds and its last keyword's
    value reaches C (the reward is p[47] + p[1]); one declaring 49 is refused, naming the count."""
    from pathlib import Path

    from fastvec.wrappers.mujoco import MujocoVectorEnv

    source = (Path(__file__).parent / "forward_task.c").read_text()

    def task_file(count):
        keys = " ".join(f"w{k}={k}" for k in range(1, count))
        text = source.replace('"reset_noise_scale=0.1"', f'"reset_noise_scale=0.1 {keys}"').replace(
            "c->reward = x_velocity;", f"c->reward = c->p[{count - 1}] + c->p[1];")
        assert f"w{count - 1}={count - 1}" in text and f"c->p[{count - 1}]" in text
        path = tmp_path / f"params_{count}.c"
        path.write_text(text)
        return path

    envs = MujocoVectorEnv(source=task_file(48), num_envs=2, w47=2.5)
    envs.reset(seed=0)
    np.testing.assert_array_equal(envs.step(np.zeros((2, 6), np.float32))[1], [3.5, 3.5])
    envs.close()
    with pytest.raises(ValueError, match=r"too many parameters \(49\)"):
        MujocoVectorEnv(source=task_file(49), num_envs=2)


def _without_tendons(task: str, path) -> str:
    """The task's Gymnasium model with its <tendon> section taken out (a user's Humanoid of no tendons)."""
    import re
    from pathlib import Path

    from gymnasium.envs.mujoco import humanoid_v5

    name = "humanoidstandup.xml" if task == "HumanoidStandup" else "humanoid.xml"
    text = (Path(humanoid_v5.__file__).parent / "assets" / name).read_text()
    stripped = re.sub(r"<tendon>.*?</tendon>", "", text, flags=re.DOTALL)
    assert stripped != text
    path.write_text(stripped)
    return str(path)


@pytest.mark.parametrize("task", ["Humanoid", "HumanoidStandup"])
def test_a_model_without_tendons_gives_empty_tendon_infos_as_gymnasium(task, tmp_path):
    """The tendon infos (one value per tendon of the model) of a model with no tendon are empty arrays, as
    Gymnasium's: the single env's (0,) after reset and step, the vector env's (N, 0) with its mask, not a scalar
    taken from no value; every other key as Gymnasium's too."""
    xml = _without_tendons(task, tmp_path / "no_tendons.xml")
    oracle, ours = gym.make(f"{task}-v5", xml_file=xml), gym.make(f"fastvec/{task}-v5", xml_file=xml)
    assert oracle.unwrapped.model.ntendon == 0
    _, want_info = oracle.reset(seed=3)
    _, info = ours.reset(seed=3)
    assert set(info) == set(want_info)
    for key in want_info:
        assert np.shape(info[key]) == np.shape(want_info[key]), key
    data = oracle.unwrapped.data
    ours.unwrapped.set_state(data.qpos, data.qvel)
    for _ in range(3):
        action = oracle.action_space.sample()
        want, got = oracle.step(action), ours.step(action)
        np.testing.assert_array_equal(got[0], want[0])
        assert set(got[4]) == set(want[4])
        for key in want[4]:
            np.testing.assert_array_equal(got[4][key], want[4][key])
            assert np.asarray(got[4][key]).dtype == np.asarray(want[4][key]).dtype, key
    ref = gym.vector.SyncVectorEnv([lambda: gym.make(f"{task}-v5", xml_file=xml)] * 2)
    envs = gym.make_vec(f"fastvec/{task}-v5", num_envs=2, xml_file=xml)
    for want_infos, infos in ((ref.reset(seed=1)[1], envs.reset(seed=1)[1]),
                              (ref.step(ref.action_space.sample())[4], envs.step(envs.action_space.sample())[4])):
        assert set(infos) == set(want_infos)
        for key in ("tendon_length", "tendon_velocity"):
            assert infos[key].shape == want_infos[key].shape == (2, 0), key
            assert infos[key].dtype == want_infos[key].dtype and infos[f"_{key}"].tolist() == [True, True]
    envs.close(), ref.close(), ours.close(), oracle.close()


POOLED_FIRST_CALLS = r"""
import numpy as np
from fastvec.native.mujoco import MujocoBatch

actions = np.random.default_rng(0).uniform(-1, 1, (16, 3))
four = MujocoBatch("Hopper", 16)
four.lib.fv_mj_set_threads(4)
four.reset()  # unseeded: each env's own stream from its start; the pool's first reset in this process
reset_four = four.get_state()
four.step(actions)  # the pool's first step in this process
four.lib.fv_mj_set_threads(1)
one = MujocoBatch("Hopper", 16)
one.reset()
assert (one.get_state() == reset_four).all(), np.flatnonzero((one.get_state() != reset_four).any(axis=1))
one.step(actions)
assert (one.get_state() == four.get_state()).all(), np.flatnonzero((one.get_state() != four.get_state()).any(axis=1))
assert (one.obs == four.obs).all() and (one.rewards == four.rewards).all()
print("same")
"""


def test_the_pools_first_reset_and_step_in_a_process_touch_each_env_once():
    """In a fresh process, where the pool takes the first reset and the first step of the MuJoCo library (pool.h
    tries the pool first) on 4 threads, chunks of 16 envs: every env is reset once (an unseeded reset continues its
    stream: a second reset would draw again) and stepped once, as one thread does."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", POOLED_FIRST_CALLS], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "same", proc.stderr[-3000:]


def test_an_unseeded_reset_after_a_seeded_one_continues_the_envs_stream():
    """reset(seed=5) and then reset(): the second reset continues the env's own random stream (as Gymnasium's
    np_random goes on), so the single env's states are the batch's reset with seed 5 and then without one, and the
    vector env of one env's; a seed is drawn from fresh entropy only at an env's first, unseeded reset."""
    from fastvec.native.mujoco import MujocoBatch

    single = gym.make("fastvec/Hopper-v5")
    vector = gym.make_vec("fastvec/Hopper-v5", num_envs=1)
    batch = MujocoBatch("Hopper", 1)
    single.reset(seed=5), vector.reset(seed=5), batch.reset(np.array([5], np.uint64))
    seeded = batch.get_state()[0]
    for _ in range(2):
        single.reset(), vector.reset(), batch.reset()
        np.testing.assert_array_equal(single.unwrapped.state, batch.get_state()[0])
        np.testing.assert_array_equal(vector.get_state()[0], batch.get_state()[0])
        assert not np.array_equal(batch.get_state()[0], seeded)
    single.close(), vector.close(), batch.close()


def _assert_same_masks(got: dict, want: dict, where: str) -> None:
    """The same keys and `_key` masks as Gymnasium's infos, and 0 wherever a key's mask is False."""
    assert set(got) == set(want), (where, sorted(set(got) ^ set(want)))
    for key, value in want.items():
        if isinstance(value, dict):
            _assert_same_masks(got[key], value, f"{where}/{key}")
        elif key.startswith("_"):
            assert got[key].tolist() == value.tolist(), (where, key)
        elif f"_{key}" in want and got[key].dtype != object:
            off = ~want[f"_{key}"]
            assert (got[key][off] == 0).all() and (value[off] == 0).all(), (where, key)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_the_vector_envs_info_masks_around_episode_ends_are_gymnasiums(mode):
    """Hopper truncated every second step in each autoreset mode: every step's info keys, their masks (a key a reset
    env does not give is masked off for it, under SAME_STEP too, where the ended episode's keys go to final_info)
    and the zeros under a False mask are SyncVectorEnv's of Gymnasium's Hopper; the batch's was_reset counts the envs
    reset in each step."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    m = AutoresetMode(mode)
    ours = gym.make_vec("fastvec/Hopper-v5", num_envs=3, autoreset_mode=m, max_episode_steps=2)
    ref = SyncVectorEnv([lambda: gym.make("Hopper-v5", max_episode_steps=2)] * 3, autoreset_mode=m)
    _assert_same_masks(ours.reset(seed=0)[1], ref.reset(seed=0)[1], "reset")
    actions = np.full((3, 3), 0.1)
    ours.step(actions), ref.step(actions)
    first = {"reset_mask": np.array([True, False, False])}  # env 0 a step behind: the envs end apart
    _assert_same_masks(ours.reset(options=first)[1], ref.reset(options=first)[1], "reset env 0")
    ended, done = 0, np.zeros(3, np.bool_)
    for step in range(6):
        got, want = ours.step(actions), ref.step(actions)
        assert got[3].tolist() == want[3].tolist()
        ended += got[3].any() and not got[3].all()
        _assert_same_masks(got[4], want[4], f"step {step}")
        # the batch's was_reset counts the envs reset in this step (the ended ones, or last step's under NEXT_STEP)
        reset_now = got[2] | got[3] if m == AutoresetMode.SAME_STEP else done
        assert int(ours.batch.was_reset.sum()) == int(reset_now.sum()), step
        done = got[2] | got[3]
    assert ended >= 2
    ours.close(), ref.close()
