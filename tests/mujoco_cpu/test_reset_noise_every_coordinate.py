"""Each locomotion task's reset noise reaches every position and every velocity coordinate Gymnasium's v5 reset
does (none left at the initial state), and uniform noise stays within Gymnasium's init +- reset_noise_scale."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401  (registers fastvec/<Task>-v5)

# the tasks whose reset is qpos + U(-s, s) and qvel + U(-s, s) (uniform) or qvel + s * N(0, 1) (normal)
NOISE = {"Ant": "normal", "HalfCheetah": "normal", "InvertedDoublePendulum": "normal", "Hopper": "uniform",
         "Humanoid": "uniform", "HumanoidStandup": "uniform", "InvertedPendulum": "uniform", "Swimmer": "uniform",
         "Walker2d": "uniform"}


@pytest.mark.parametrize("task", list(NOISE))
def test_reset_noise_moves_every_coordinate_gymnasium_moves(task):
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=12)
    ours.reset(seed=73001)
    mine = ours.get_state()
    ours.close()
    ref = gym.make(f"{task}-v5").unwrapped
    theirs = []
    for seed in range(12):
        ref.reset(seed=73001 + seed)
        theirs.append(np.concatenate([ref.data.qpos, ref.data.qvel]))
    theirs = np.array(theirs)
    init = np.concatenate([ref.init_qpos, ref.init_qvel])
    nq, scale = ref.model.nq, ref._reset_noise_scale
    assert mine.shape == theirs.shape, task
    moved_theirs = (theirs != init).all(0)
    assert moved_theirs.all(), task  # Gymnasium's noise moves every coordinate, positions and velocities
    assert ((mine != init).all(0) == moved_theirs).all(), (task, np.flatnonzero((mine == init).any(0)))
    assert (np.ptp(mine, axis=0) > 0).all(), task  # each env its own noise in every coordinate
    bounded = slice(None) if NOISE[task] == "uniform" else slice(0, nq)  # normal velocities are unbounded
    assert (np.abs(mine - init)[:, bounded] <= scale).all(), task
    assert (np.abs(theirs - init)[:, bounded] <= scale).all(), task  # the bound is Gymnasium's own
