"""The env contract's spaces on the CPU backend (fastvec.h, spaces.h): what a build declares is what the host
reads back; Box and MultiDiscrete actions reach env_step in their layout and type; a bad action (out of range,
NaN, infinity) raises naming the env and the value, with nothing stepped and the batch usable afterwards; a
finite Box action outside the bounds reaches the env, which clips it; state access reads and sets states."""

import ctypes
from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu
from fastvec.native.spaces import ActionError

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
BOX, MULTI, IMAGE = ENVS_DIR / "box_point.h", ENVS_DIR / "multi_discrete.h", ENVS_DIR / "image_obs.h"
NEXT_STEP = native.AUTORESET_CODES["NextStep"]


def batch(path: Path, n: int = 8, defines: tuple = (), mode: int = NEXT_STEP, limit=None, seed: int = 3):
    b = cpu.CpuBatch(cpu.load(path, defines), n, mode, limit)
    b.reset(np.arange(n, dtype=np.uint64) + seed, None)
    return b


def snapshot(b: cpu.CpuBatch) -> dict:
    return {name: getattr(b, name).copy() for name in ("slots", "obs", "rewards", "terminated", "truncated",
                                                        "episode_return", "episode_length")}


def test_a_build_declares_its_spaces():
    box = cpu.load(BOX, ()).spaces
    assert (box.action_kind, box.action_dims, box.action_dtype) == ("box", 2, np.float32)
    np.testing.assert_array_equal(box.action_low, [-2, 0])
    np.testing.assert_array_equal(box.action_high, [2, 1])
    np.testing.assert_array_equal(box.obs_low, [-10, -np.inf, 0])
    np.testing.assert_array_equal(box.obs_high, [10, np.inf, 1])
    assert box.state_size == 2 and box.obs_shape == (3,)
    np.testing.assert_array_equal(box.nvec, [0, 0])  # a Box has no counts
    image = cpu.load(IMAGE, ()).spaces  # Discrete(4): its values 0 to 3
    assert (image.action_kind, image.nvec.tolist(), image.action_low.tolist(), image.action_high.tolist()) == \
        ("discrete", [4], [0.0], [3.0])
    multi = cpu.load(MULTI, (("AGENTS", 2),)).spaces
    assert (multi.action_kind, multi.nvec.tolist(), multi.action_dtype, multi.state_size) == \
        ("multi_discrete", [3, 5], np.int64, -1)
    np.testing.assert_array_equal(multi.obs_low, [0, 0])
    np.testing.assert_array_equal(multi.obs_high, [4, 4])
    image = cpu.load(IMAGE, ()).spaces
    assert (image.obs_shape, image.obs_dtype, image.num_actions) == ((4, 5, 2), np.uint8, 4)
    assert (image.obs_low == 0).all() and (image.obs_high == 1).all()
    unbounded = cpu.load(ENVS_DIR / "counting.h", ()).spaces  # no bounds declared
    assert (unbounded.obs_low == -np.inf).all() and (unbounded.obs_high == np.inf).all()
    random_walk = cpu.load(ENVS_DIR / "random_walk.h", ()).spaces  # bytes, no bounds declared
    assert (random_walk.obs_low == 0).all() and (random_walk.obs_high == 255).all()


def test_a_box_whose_low_is_above_its_high_is_refused_naming_both_and_equal_bounds_are_taken(tmp_path):
    """An env file's Box bounds as Gymnasium's Box takes them: low <= high per dimension, a dimension of one
    value (low == high) included; a low above its high is a ValueError naming both bound arrays."""
    text = BOX.read_text()
    (tmp_path / "inverted.h").write_text(text.replace("#define ACTION_LOW {-2.0f, 0.0f}", "#define ACTION_LOW {-2.0f, 1.5f}"))
    with pytest.raises(ValueError, match=r"inverted: ACTION_LOW \[-2\.0, 1\.5\] is above ACTION_HIGH \[2\.0, 1\.0\]"):
        cpu.load(tmp_path / "inverted.h", ())
    (tmp_path / "one_value.h").write_text(text.replace("#define ACTION_LOW {-2.0f, 0.0f}", "#define ACTION_LOW {-2.0f, 1.0f}"))
    spaces = cpu.load(tmp_path / "one_value.h", ()).spaces
    np.testing.assert_array_equal(spaces.action_low, [-2, 1])
    np.testing.assert_array_equal(spaces.action_high, [2, 1])


def test_box_actions_reach_the_env_as_float32_and_out_of_bound_ones_are_clipped_by_it():
    b = batch(BOX, 4)
    v0 = b.get_state()[:, 1]
    actions = np.array([[0.5, 0.25], [100.0, 7.0], [-3.0, -1.0], [1e30, 0.5]])  # float64: cast to float32
    b.step(actions)
    np.testing.assert_array_equal(b.obs[:, 0, 2], [0.25, 1.0, 0.0, 0.5])  # the gain as the env clipped it
    np.testing.assert_allclose(b.get_state()[:, 1] - v0, [0.05, 0.2, -0.2, 0.2])  # force clipped to [-2, 2]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [(0, 0), (5, 1), (7, 0)])
def test_a_box_action_that_is_not_finite_raises_and_steps_nothing(bad, where):
    b, twin = batch(BOX), batch(BOX)
    actions = np.full((8, 2), 0.5, np.float32)
    before = snapshot(b)
    wrong = actions.copy()
    wrong[where] = bad
    with pytest.raises(ActionError, match=rf"action -?{bad} at env {where[0]}, dimension {where[1]} is not a finite "
                                          r"number.*box_point.*Box\(\[-2\.\s+0\.\], \[2\.\s+1\.\]"):
        b.step(wrong)
    for name, kept in before.items():
        np.testing.assert_array_equal(getattr(b, name), kept, err_msg=f"{name} changed by a refused step")
    b.step(actions)  # still usable, and as if the bad step never happened
    twin.step(actions)
    np.testing.assert_array_equal(b.slots, twin.slots)
    np.testing.assert_array_equal(b.obs, twin.obs)


@pytest.mark.parametrize("flat,value,message", [
    (0, 3, "action 3 out of range for MultiDiscrete\\(\\[3 5\\]\\) at env 0, agent 0, dimension 0 .*0 to 2"),
    (3, 5, "action 5 out of range for MultiDiscrete\\(\\[3 5\\]\\) at env 0, agent 1, dimension 1 .*0 to 4"),
    (6, -1, "action -1 out of range for .* at env 1, agent 1, dimension 0"),
    (15, 2**40, "action 1099511627776 out of range for .* at env 3, agent 1, dimension 1"),
])
def test_a_multi_discrete_action_out_of_range_raises_naming_env_agent_and_dimension(flat, value, message):
    b = batch(MULTI, 4, (("AGENTS", 2),))
    actions = np.zeros((4, 2, 2), np.int64)
    before = snapshot(b)
    wrong = actions.copy()
    wrong.ravel()[flat] = value
    with pytest.raises(ActionError, match=message):
        b.step(wrong)
    for name, kept in before.items():
        np.testing.assert_array_equal(getattr(b, name), kept, err_msg=f"{name} changed by a refused step")
    b.step(actions)
    assert b.episode_length.tolist() == [0] * 4 and b.rewards.tolist() == [[0, 0]] * 4


def test_multi_discrete_actions_reach_each_agent_in_their_layout():
    b = batch(MULTI, 3, (("AGENTS", 2),))
    actions = np.array([[[2, 4], [0, 1]], [[1, 3], [2, 0]], [[0, 0], [1, 4]]], np.int32)  # int32: cast
    b.step(actions)
    np.testing.assert_array_equal(b.obs, actions.astype(np.float32))
    np.testing.assert_array_equal(b.rewards, 10 * actions[..., 0] + actions[..., 1])


def test_state_access_reads_sets_and_steps_from_the_set_state():
    b = batch(BOX, 5)
    state = b.get_state()
    assert state.shape == (5, 2) and state.dtype == np.float64
    np.testing.assert_array_equal(b.obs[:, 0, 0], state[:, 0].astype(np.float32))
    b.set_state([1, -1], [[0.25, 0.5], [-4.0, -1.0]])  # -1: the last env
    np.testing.assert_array_equal(b.get_state([1, 4]), [[0.25, 0.5], [-4.0, -1.0]])
    np.testing.assert_array_equal(b.obs[[1, 4], 0, :2], [[0.25, 0.5], [-4.0, -1.0]])
    np.testing.assert_array_equal(b.get_state([0, 2, 3]), state[[0, 2, 3]])  # the others untouched
    b.step(np.zeros((5, 2), np.float32))
    np.testing.assert_allclose(b.get_state([1, 4]), [[0.25 + 0.05, 0.5], [-4.0 - 0.1, -1.0]])
    push = np.array([[0, 0]] * 4 + [[-2, 1]], np.float32)  # v: -1.2, -1.4, ...; x passes -5 on the 6th push
    for k in range(6):
        b.step(push)
        assert b.terminated.tolist() == [False] * 4 + [k == 5], k


def test_state_access_refuses_bad_indices_values_and_envs_without_it():
    b = batch(BOX, 3)
    with pytest.raises(IndexError, match="env index 3 out of range for 3 envs"):
        b.get_state([3])
    with pytest.raises(TypeError, match="indices"):
        b.get_state([0.5])
    with pytest.raises(ValueError, match=r"must have shape \(2, 2\), got \(2, 3\)"):
        b.set_state([0, 1], np.zeros((2, 3)))
    with pytest.raises(AttributeError, match="multi_discrete has no state access.*STATE_SIZE"):
        batch(MULTI, 2).get_state()


def test_image_observations_keep_their_bytes():
    b = batch(IMAGE, 4)
    assert b.obs.shape == (4, 1, 40) and b.obs.dtype == np.uint8
    image = b.obs.reshape(4, 4, 5, 2)
    assert (image[..., 0].sum(axis=(1, 2)) == 1).all() and (image[:, 3, 4, 1] == 1).all()
    with pytest.raises(ActionError, match=r"action 4 out of range for Discrete\(4\) at env 2"):
        b.step(np.array([0, 1, 4, 3]))


def test_a_frame_drawn_with_fv_fill_rect_shows_the_envs_cell():
    """image_obs.h draws its position as one white pixel on a black 4 x 5 frame with fastvec.h's fv_fill_rect:
    each env's frame is its observation's position channel, on any row."""
    b = batch(IMAGE, 4)
    rows = set()
    for _ in range(4):
        for i in range(4):
            cell = b.obs[i, 0].reshape(4, 5, 2)[..., 0]
            np.testing.assert_array_equal(b.render(i), np.repeat(cell[..., None] * 255, 3, axis=2))
            rows.add(int(np.argmax(cell.any(axis=1))))
        b.step(np.array([1, 1, 3, 1]))  # down, down, right, down
    assert len(rows) >= 3


def test_first_bad_names_the_first_value_that_may_not_reach_the_env():
    """The flat index (env-major, then the action's values) of the first action value outside its space: the one
    every face's error names; None when all are fine."""
    multi = cpu.load(MULTI, ()).spaces  # MultiDiscrete
    d = multi.action_dims
    good = np.zeros((4, d), np.int64)
    assert multi.first_bad(good) is None
    bad = good.copy()
    bad[1, d - 1] = multi.nvec[d - 1]  # one past the last value's count
    bad[3, 0] = -1
    assert multi.first_bad(bad) == d + d - 1
    assert multi.first_bad(bad[2:]) == d  # row 3 of the whole is row 1 here
    box = cpu.load(BOX, ()).spaces
    actions = np.zeros((3, box.action_dims), np.float32)
    assert box.first_bad(actions) is None
    actions[2, 0], actions[1, box.action_dims - 1] = np.inf, np.nan
    assert box.first_bad(actions) == 2 * box.action_dims - 1
    assert box.first_bad(np.full((2, box.action_dims), 10**9, np.int64)) is None  # integers are finite


NINE_AXES = "#define OBS_SIZE 1\n#define OBS_SHAPE 1, 1, 1, 1, 1, 1, 1, 1, 1\n"
NINE_AXES_SHIM = NINE_AXES + r"""
#define NUM_ACTIONS 2
#include "spaces.h"
int fill(int* shape, float* low, float* high) { return fv_fill_obs_space(shape, low, high); }
"""


def test_an_observation_of_more_axes_than_fastvec_takes_is_refused_without_writing_past_the_shape(c_shim, tmp_path):
    """An OBS_SHAPE of 9 axes: fv_fill_obs_space reports 9 and writes only FV_MAX_OBS_DIMS (8) entries of the host's
    shape buffer, and the build is refused naming the limit."""
    lib = c_shim(NINE_AXES_SHIM)
    shape, low, high = np.full(16, -7, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    assert lib.fill(*(a.ctypes.data_as(ctypes.c_void_p) for a in (shape, low, high))) == 9
    assert shape[:8].tolist() == [1] * 8 and shape[8:].tolist() == [-7] * 8
    text = (ENVS_DIR / "counting.h").read_text().replace("#define OBS_SIZE 1\n", NINE_AXES)
    (tmp_path / "nine_axes.h").write_text(text)
    with pytest.raises(ValueError, match="OBS_SHAPE has 9 axes; fastvec takes 1 to 8"):
        cpu.load(tmp_path / "nine_axes.h", ())


def test_a_multi_discrete_builds_action_bounds_are_0_and_each_count_minus_1():
    """The discrete kinds' action bounds per dimension, as the header documents them (and Gymnasium's MultiDiscrete
    holds them): 0 and n - 1 for each count n."""
    multi = cpu.load(MULTI, (("AGENTS", 2),)).spaces
    assert multi.nvec.tolist() == [3, 5]
    assert (multi.action_low.tolist(), multi.action_high.tolist()) == ([0.0, 0.0], [2.0, 4.0])
