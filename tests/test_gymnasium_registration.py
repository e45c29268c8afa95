"""What `import fastvec` registers with Gymnasium, against Gymnasium's own specs: every built-in env's id with
its step limit and reward threshold (the Gymnasium env it reproduces where there is one), every MuJoCo task's
fastvec/<Task>-v5 with Gymnasium's limit and threshold; make_vec's short names."""

import gymnasium as gym
import pytest

import fastvec
from fastvec import native
from fastvec.native.mujoco import TASKS

TWINS = {"fastvec/CartPole": "CartPole-v1", "fastvec/Acrobot": "Acrobot-v1", "fastvec/MountainCar": "MountainCar-v0",
         "fastvec/MountainCarContinuous": "MountainCarContinuous-v0", "fastvec/Pendulum": "Pendulum-v1"}


@pytest.mark.parametrize("key", list(native.ENVS))
def test_each_built_in_env_is_registered_with_its_limit_and_threshold(key):
    info = native.ENVS[key]
    spec = gym.spec(info.gym_id)
    assert spec.max_episode_steps == info.max_episode_steps
    cls = info.gym_id.split("/")[1]
    assert spec.entry_point == f"fastvec.wrappers.gymnasium:{cls}Env"
    assert spec.vector_entry_point == f"fastvec.wrappers.gymnasium:{cls}VectorEnv"
    if info.gym_id in TWINS:
        twin = gym.spec(TWINS[info.gym_id])
        assert (spec.max_episode_steps, spec.reward_threshold) == (twin.max_episode_steps, twin.reward_threshold)
    else:
        assert spec.reward_threshold is None


@pytest.mark.parametrize("task", list(TASKS))
def test_each_mujoco_task_is_registered_as_gymnasiums_v5(task):
    spec, twin = gym.spec(f"fastvec/{task}-v5"), gym.spec(f"{task}-v5")
    assert (spec.max_episode_steps, spec.reward_threshold) == (twin.max_episode_steps, twin.reward_threshold)
    assert spec.kwargs == {"task": task} and spec.entry_point == "fastvec.wrappers.mujoco:MujocoEnv"


def test_make_vec_takes_the_short_name_or_the_id():
    envs = fastvec.make_vec("CartPole", 3)
    assert envs.num_envs == 3 and envs.spec.id == "fastvec/CartPole"
    assert fastvec.make_vec("fastvec/Acrobot").num_envs == 1


def test_an_env_file_makes_one_env_unless_told(tmp_path):
    from pathlib import Path

    counting = Path(__file__).resolve().parent / "envs" / "counting.h"
    assert fastvec.make_vec_from_source(counting).num_envs == 1
    assert fastvec.make_vec_from_source(counting, 4).num_envs == 4
