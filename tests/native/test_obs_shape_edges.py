"""EnvSpaces.from_arrays' OBS_SHAPE check: 1 to MAX_OBS_DIMS (8) axes, every axis at least 1 and the product
OBS_SIZE; an axis of 0 (an empty observation, whatever OBS_SIZE says) or a negative axis is refused, naming the
shape."""

import re

import numpy as np
import pytest

from fastvec.native.spaces import EnvSpaces


def spaces(obs_size, shape):
    return EnvSpaces.from_arrays("e", 0, obs_size, np.float32, len(shape), np.array(shape), np.zeros(max(obs_size, 1)),
                                 np.ones(max(obs_size, 1)), np.array([3]), np.zeros(1), np.zeros(1), -1)


@pytest.mark.parametrize("obs_size,shape", [(1, [1]), (6, [2, 3]), (4, [1, 4, 1]), (8, [1, 2, 1, 1, 2, 1, 2, 1])])
def test_every_axis_of_one_or_more_that_holds_obs_size_is_taken(obs_size, shape):
    assert spaces(obs_size, shape).obs_shape == tuple(shape)


@pytest.mark.parametrize("obs_size,shape", [(0, [0]), (0, [3, 0]), (0, [0, 2]), (6, [-2, -3]), (5, [2, 3]),
                                            (7, [2, 3]), (6, [6, 2])])
def test_an_empty_negative_or_wrong_sized_shape_is_refused(obs_size, shape):
    want = f"e: OBS_SHAPE {tuple(shape)} does not hold OBS_SIZE={obs_size} elements"
    with pytest.raises(ValueError, match=re.escape(want)):
        spaces(obs_size, shape)
