"""A task of the user's own: a C file of mj_task.h's contract, built with fastvec's tasks and stepped the same way."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401
from fastvec.wrappers.mujoco import MujocoVectorEnv  # noqa: E402

TASK_FILE = Path(__file__).parent / "forward_task.c"


def test_user_task_steps_as_the_builtin_task_it_restates():
    """forward_task.c is HalfCheetah without a control cost: from the same states the same actions give the same
    observations and rewards as fastvec/HalfCheetah-v5 with ctrl_cost_weight=0."""
    ours = MujocoVectorEnv(source=TASK_FILE, num_envs=3, max_episode_steps=1000)
    builtin = gym.make_vec("fastvec/HalfCheetah-v5", num_envs=3, ctrl_cost_weight=0.0)
    assert ours.batch.spec.name == "ForwardCheetah" and ours.single_observation_space == builtin.single_observation_space
    ours.reset(seed=0)
    builtin.reset(seed=1)
    ours.set_state(None, builtin.unwrapped.get_state())
    rng = np.random.default_rng(0)
    for _ in range(100):
        actions = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
        obs, reward, _, _, info = ours.step(actions)
        want = builtin.step(actions)
        np.testing.assert_array_equal(obs, want[0])
        np.testing.assert_array_equal(reward, want[1])
        np.testing.assert_array_equal(info["x_velocity"], want[4]["x_velocity"])


def test_user_task_file_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="fv_mj_user_task"):
        MujocoVectorEnv(source=tmp_path / "missing.c", num_envs=2)
    broken = tmp_path / "broken.c"
    broken.write_text('#include "mj_task.h"\nconst fv_mj_task fv_mj_user_task = {"Broken", oops};\n')
    from fastvec.native.cpu import CompileError
    with pytest.raises(CompileError, match="oops"):
        MujocoVectorEnv(source=broken, num_envs=2)


ORDERED_TASK = TASK_FILE.read_text().replace('"x_velocity", ""', '"x_velocity,x_position", "x_position"').replace(
    "    c->info[0] = x_velocity;\n}", "    c->info[0] = x_velocity;\n    c->info[1] = c->d->qpos[0];\n}").replace(
    "static void reset_values(fv_mj_ctx* c) { (void)c; }", "static void reset_values(fv_mj_ctx* c) { c->info[1] = c->d->qpos[0]; }")


def test_a_user_tasks_reset_info_keys_may_follow_its_step_keys(tmp_path):
    """A task whose reset info key (x_position) comes after a step-only key (x_velocity) in its info string: reset
    infos hold the reset key alone, for every env reset (Gymnasium's `_key` mask), step infos both; the single env
    likewise. x_position is the x slide's qpos, read back with get_state."""
    from fastvec.wrappers.mujoco import MujocoEnv

    task = tmp_path / "ordered_task.c"
    task.write_text(ORDERED_TASK)
    assert "c->info[1] = c->d->qpos[0]; }" in ORDERED_TASK and '"x_position"' in ORDERED_TASK
    envs = MujocoVectorEnv(source=task, num_envs=2)
    _, info = envs.reset(seed=0)
    assert sorted(info) == ["_x_position", "x_position"] and info["_x_position"].all()
    np.testing.assert_array_equal(info["x_position"], envs.get_state()[:, 0])
    _, info = envs.reset(options={"reset_mask": np.array([False, True])})
    assert info["_x_position"].tolist() == [False, True] and info["x_position"][1] == envs.get_state()[1, 0]
    _, _, _, _, info = envs.step(np.zeros((2, 6), np.float32))
    assert sorted(info) == ["_x_position", "_x_velocity", "x_position", "x_velocity"]
    np.testing.assert_array_equal(info["x_position"], envs.get_state()[:, 0])
    envs.close()
    single = MujocoEnv(source=task)
    _, info = single.reset(seed=0)
    assert info == {"x_position": single.state[0]}
    _, _, _, _, info = single.step(np.zeros(6, np.float32))
    assert sorted(info) == ["x_position", "x_velocity"] and info["x_position"] == single.state[0]
    single.close()


KEEP_ALL_TASK = TASK_FILE.read_text().replace(
    "static void before(fv_mj_ctx* c) { c->keep[0] = c->d->qpos[0]; }",
    "static void before(fv_mj_ctx* c) { for (int k = 0; k < 8; k++) c->keep[k] = c->d->qpos[k]; }").replace(
    "    c->info[0] = x_velocity;\n}",
    "    c->info[0] = x_velocity;\n    double moved = 0.0;\n"
    "    for (int k = 0; k < 8; k++) moved += (k + 1) * (c->d->qpos[k] - c->keep[k]);\n    c->reward = moved;\n}")


def test_a_user_task_may_keep_eight_values_for_after(tmp_path):
    """mj_task.h's contract (docs/environments.md): `before` may keep 8 values in c->keep for `after`. This task
    keeps the cheetah's first 8 qpos entries and is rewarded sum_k (k + 1) (qpos_k after - qpos_k before)."""
    assert "k < 8; k++) c->keep[k]" in KEEP_ALL_TASK and "c->reward = moved;" in KEEP_ALL_TASK
    task = tmp_path / "keep_all_task.c"
    task.write_text(KEEP_ALL_TASK)
    envs = MujocoVectorEnv(source=task, num_envs=3)
    envs.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(20):
        before = envs.get_state()[:, :8].copy()
        _, reward, _, _, _ = envs.step(rng.uniform(-1, 1, (3, 6)).astype(np.float32))
        after = envs.get_state()[:, :8]
        want = np.zeros(3)
        for k in range(8):
            want += (k + 1) * (after[:, k] - before[:, k])
        np.testing.assert_array_equal(reward, want)
    envs.close()
