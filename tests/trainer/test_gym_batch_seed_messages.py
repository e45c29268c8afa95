"""GymBatch.reset's refusal of seeds that are not non-negative integers: the exact message a user reads (the dtype
and the first four seeds given), with nothing reset; unsigned seeds up to 2^64 - 1 are taken as Gymnasium's."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from fastvec.native.gym_batch import GymBatch


@pytest.fixture
def gym_batch_of_six():
    batch = GymBatch("CartPole-v1", 6, {})
    yield batch
    batch.close()


@pytest.mark.parametrize("seeds,shown", [
    (np.array([-1, 2, 3, 4, 5, 6]), "int64 [-1, 2, 3, 4]..."),
    (np.array([1, 2, 3, 4, 5, -6]), "int64 [1, 2, 3, 4]..."),  # the first four, whichever is negative
    (np.array([0.5, 1, 2, 3, 4, 5]), "float64 [0.5, 1.0, 2.0, 3.0]..."),
    (np.array([7, -8], np.int32), "int32 [7, -8]..."),  # fewer than four: all of them
    (np.array([[1, 2, 3], [4, 5, -6]], np.int16), "int16 [1, 2, 3, 4]..."),  # of the flattened seeds
])
def test_gym_batch_seeds_refused_name_their_dtype_and_first_four_values(gym_batch_of_six, seeds, shown):
    batch = gym_batch_of_six
    batch.reset(np.arange(6, dtype=np.uint64), None)
    before = batch.obs.copy()
    with pytest.raises(ValueError) as raised:
        batch.reset(seeds, None)
    assert str(raised.value) == f"seeds must be non-negative integers (uint64), got {shown}"
    np.testing.assert_array_equal(batch.obs, before)  # nothing reset


def test_gym_batch_takes_unsigned_seeds_up_to_2_to_the_64_as_gymnasiums_own_env():
    """uint64 seeds past int64's range, uint8 ones and signed ones from 0 up are taken and reach each env as Gymnasium's reset(seed=)."""
    seeds = np.array([2 ** 64 - 1, 2 ** 63, 0], np.uint64)
    batch = GymBatch("CartPole-v1", 3, {})
    try:
        batch.reset(seeds, None)
        want = [gymnasium.make("CartPole-v1").reset(seed=int(s))[0] for s in seeds]
        np.testing.assert_array_equal(batch.obs[:, 0], np.float32(want))
        for taken in (np.array([5, 6, 7], np.uint8), np.array([0, 9, 2 ** 40])):  # signed: 0 is non-negative
            batch.reset(taken, None)
            want = [gymnasium.make("CartPole-v1").reset(seed=int(s))[0] for s in taken]
            np.testing.assert_array_equal(batch.obs[:, 0], np.float32(want))
    finally:
        batch.close()
