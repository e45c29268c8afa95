"""A Box env's action space is named in its error messages exactly as Gymnasium prints the space the env declares
(`env.action_space`): bounds of one value shown as that value, signed zeros included, others as the array."""

import types
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import fastvec
from fastvec.native.spaces import ActionError, EnvSpaces
from fastvec.wrappers.spaces import gym_spaces

BOX_POINT = Path(__file__).resolve().parents[1] / "envs" / "box_point.h"  # ACTION_LOW {-2, 0}, ACTION_HIGH {2, 1}


def box(low, high) -> EnvSpaces:
    low, high = np.array(low, np.float32), np.array(high, np.float32)
    return EnvSpaces(name="e", action_kind="box", nvec=np.zeros(len(low), np.int64), action_low=low,
                     action_high=high, obs_shape=(1,), obs_dtype=np.dtype(np.float32),
                     obs_low=np.zeros(1, np.float32), obs_high=np.ones(1, np.float32), state_size=-1)


@pytest.mark.parametrize("low,high", [
    ([0.0, -0.0], [1.0, 1.0]), ([-0.0, 0.0], [0.0, -0.0]), ([0.0] * 16 + [-0.0], [-0.0] + [0.0] * 16),
    ([-1.0, -1.0, -1.0], [1.0, 1.0, 2.0]), ([-np.inf] * 4, [np.inf] * 4), ([-0.5], [0.5]),
    ([-2.0, -2.0, -1.0], [3.0, 3.0, 3.0]),
])
def test_a_box_is_described_as_gymnasium_prints_the_declared_action_space(low, high):
    sp = box(low, high)
    declared = gym_spaces(types.SimpleNamespace(spaces=sp))[1]
    assert sp.describe() == repr(declared)


def test_an_env_files_signed_zero_bounds_are_named_as_its_action_space_prints_them(tmp_path):
    source = tmp_path / "signed_zero.h"
    text = BOX_POINT.read_text().replace("ACTION_LOW {-2.0f, 0.0f}", "ACTION_LOW {0.0f, -0.0f}")
    source.write_text(text.replace("ACTION_HIGH {2.0f, 1.0f}", "ACTION_HIGH {-0.0f, 0.0f}"))
    envs = fastvec.make_vec_from_source(source, 2)
    declared = repr(envs.single_action_space)
    assert declared == repr(gymnasium.spaces.Box(np.float32(0.0), np.float32(-0.0), (2,), np.float32))
    envs.reset(seed=0)
    with pytest.raises(ActionError, match=r"actions of signed_zero's (.*) must be finite") as caught:
        envs.step(np.array([[0.0, 0.0], [0.0, np.nan]], np.float32))
    assert f"signed_zero's {declared} must be finite" in str(caught.value)
    with pytest.raises(TypeError, match="integers|numbers") as caught:
        envs.step(np.array([["a", "b"], ["c", "d"]]))
    assert f"for {declared}, got dtype" in str(caught.value)
    envs.close()
