"""A fastvec MuJoCo task's declarations (fastvec/TASK-v5): continuous floats of the mujoco family, and as target
the reward_threshold of Gymnasium's own TASK-v5 registration (the oracle) where it has one, 0 and negatives too."""

import gymnasium
import pytest

from fastvec.native.mujoco.host_batch import TASKS
from fastvec.trainer.env_defaults import declared_by_gym, declared_by_mujoco, layer


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_task_declares_gymnasiums_reward_threshold_or_none(task):
    want = gymnasium.spec(f"{task}-v5").reward_threshold
    declared = declared_by_gym(f"fastvec/{task}-v5", {})
    assert declared == declared_by_mujoco(task)
    assert (declared.actions, declared.observations, declared.family) == ("continuous", "floats", "mujoco")
    assert declared.reward_threshold == want
    target = layer(declared).get("train", {}).get("target_return")
    assert target == want
    assert ("reward_threshold" in declared.where) == (want is not None)


def test_the_thresholds_cover_none_zero_and_negative():
    """The cases above include a task without a threshold, one of exactly 0 (Pusher) and a negative one (Reacher)."""
    got = {task: gymnasium.spec(f"{task}-v5").reward_threshold for task in TASKS}
    assert got["Humanoid"] is None and got["Pusher"] == 0.0 and got["Reacher"] < 0
    assert declared_by_mujoco("Pusher").reward_threshold == 0.0
    assert layer(declared_by_mujoco("Humanoid")).get("train", {}).get("target_return") is None
