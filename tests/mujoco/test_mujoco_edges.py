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
