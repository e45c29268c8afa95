"""The faces' inputs: a bad action refused by the AEC face before it is taken, make_vec's keywords, seeds
and Box actions beyond float32's range checked as Gymnasium would, each refusal one line that names the
value and what is accepted."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import fastvec
from fastvec.pettingzoo import env as aec_env


# ------------------------------------------------------------------ the AEC face
@pytest.mark.parametrize("bad", [99, -1, 1.5, "up"])
def test_aec_refuses_a_bad_action_when_given_and_keeps_playing(bad):
    e, twin = aec_env("Pong"), aec_env("Pong")
    e.reset(seed=3)
    twin.reset(seed=3)
    with pytest.raises((ValueError, TypeError), match=r"agent 'left'") as err:
        e.step(bad)
    assert repr(bad) in str(err.value) or str(bad) in str(err.value)
    assert "\n" not in str(err.value)
    assert e.agent_selection == "left"  # the bad action was not taken: still left's turn
    for action in (1, 2, 0, 1):  # later valid steps play on, as the twin that never saw the bad action
        e.step(action)
        twin.step(action)
        assert e.agent_selection == twin.agent_selection
    for agent in e.possible_agents:
        np.testing.assert_array_equal(e.observe(agent), twin.observe(agent))
    assert e.rewards == twin.rewards


def test_aec_after_the_game_ends_still_takes_none():
    e = aec_env("CartPole", max_cycles=2)
    e.reset(seed=0)
    while e.agents:
        e.step(None if e.terminations[e.agent_selection] or e.truncations[e.agent_selection] else 0)
    assert e.agents == []


# ------------------------------------------------------------------ make_vec's keywords and reset's seeds
def one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("keyword, value", [("copy", "no"), ("copy", 1), ("validate", "yes"), ("validate", None)])
def test_make_vec_refuses_a_switch_that_is_not_a_bool(keyword, value):
    with pytest.raises(TypeError) as err:
        gym.make_vec("fastvec/CartPole", num_envs=2, **{keyword: value})
    text = one_line(err)
    assert f"{keyword}={value!r}" in text and "bool" in text


def test_multi_agent_vector_env_refuses_a_copy_that_is_not_a_bool():
    from fastvec.pettingzoo import vector_env

    with pytest.raises(TypeError, match=r"copy='no'.*bool"):
        vector_env("Pong", 2, copy="no")


@pytest.mark.parametrize("value", [True, False, 4.0, "4"])
def test_make_vec_refuses_a_game_parameter_that_is_not_an_int(value):
    with pytest.raises(TypeError) as err:
        gym.make_vec("fastvec/Breakout", num_envs=2, frameskip=value)
    text = one_line(err)
    assert f"frameskip={value!r}" in text and "int" in text and "[1, 8]" in text


def test_a_zero_one_switch_still_takes_a_bool():
    """float32=True is how the GPU guide writes the switch; True means 1 there."""
    a = gym.make_vec("fastvec/CartPole", num_envs=2, float32=True)
    b = gym.make_vec("fastvec/CartPole", num_envs=2, float32=1)
    np.testing.assert_array_equal(a.reset(seed=5)[0], b.reset(seed=5)[0])


@pytest.mark.parametrize("seed", [{1, 2}, frozenset({1, 2}), {1: 0, 2: 0}.keys(), (s for s in (1, 2)), "12"])
def test_reset_refuses_seeds_in_no_order(seed):
    e = gym.make_vec("fastvec/CartPole", num_envs=2)
    with pytest.raises(TypeError) as err:
        e.reset(seed=seed)
    text = one_line(err)
    assert "seed=" in text and "list" in text and "None" in text


@pytest.mark.parametrize("seed", [[1, 2], (1, 2), np.array([1, 2])])
def test_reset_takes_a_list_tuple_or_array_of_seeds(seed):
    e = gym.make_vec("fastvec/CartPole", num_envs=2)
    np.testing.assert_array_equal(e.reset(seed=seed)[0], e.reset(seed=[1, 2])[0])


# ------------------------------------------------------------------ Box actions beyond float32's range
def twins():
    """Gymnasium's Pendulum and fastvec's, reset alike and set to the same state."""
    g, f = gym.make("Pendulum-v1"), gym.make("fastvec/Pendulum")
    g.reset(seed=0)
    f.reset(seed=0)
    f.unwrapped.state = g.unwrapped.state
    return g, f


@pytest.mark.parametrize("value", [1e300, -1e300, 3.5e38, np.finfo(np.float64).max])
def test_a_finite_float64_action_beyond_float32_is_clipped_as_gymnasium_does(value):
    g, f = twins()
    action = np.array([value], np.float64)
    np.testing.assert_allclose(f.step(action)[0], g.step(action)[0], rtol=1e-5, atol=1e-5)


def test_vector_and_parallel_faces_clip_it_too():
    from fastvec.pettingzoo import parallel_env, vector_env

    v = gym.make_vec("fastvec/Pendulum", num_envs=2)
    v.reset(seed=0)
    ref = gym.make_vec("fastvec/Pendulum", num_envs=2)
    ref.reset(seed=0)
    np.testing.assert_array_equal(v.step(np.array([[1e300], [-1e300]]))[0], ref.step(np.array([[2.0], [-2.0]]))[0])
    p = parallel_env("Pendulum")
    p.reset(seed=1)
    p.step({"agent_0": np.array([1e300])})
    m = vector_env("Pendulum", 2)
    m.reset(seed=1)
    m.step(np.array([[1e300], [-1e300]]))


@pytest.mark.parametrize("value", [np.finfo(np.float32).max, -np.finfo(np.float32).max])
def test_a_float64_action_at_float32s_largest_value_is_taken_unclipped_as_gymnasium_takes_it(value):
    """float32's largest value is in float32's range, so it is not clipped: MountainCarContinuous's control cost
    0.1 * action ** 2, from the action as given (Gymnasium's clips only the force), is what Gymnasium's env gives as
    a float32 (-inf), where a clipped action would cost 0.1; the single and the vector faces alike."""
    oracle = gym.make("MountainCarContinuous-v0")
    oracle.reset(seed=0)
    want = np.float32(oracle.step(np.array([value], np.float64))[1])
    assert want == -np.inf
    single = gym.make("fastvec/MountainCarContinuous")
    single.reset(seed=0)
    assert single.step(np.array([value], np.float64))[1] == want
    envs = gym.make_vec("fastvec/MountainCarContinuous", num_envs=2)
    envs.reset(seed=0)
    np.testing.assert_array_equal(envs.step(np.array([[value], [1.0]], np.float64))[1], [want, np.float32(-0.1)])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_and_infinity_stay_refused(value):
    _, f = twins()
    with pytest.raises(ValueError, match="not a finite number"):
        f.step(np.array([value], np.float64))


# ------------------------------------------------------------------ sizes an env file declares
ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"


def env_file_with(tmp_path, base: str, old: str, new: str) -> Path:
    text = (ENVS_DIR / base).read_text()
    assert old in text
    path = tmp_path / "sized.h"
    path.write_text(text.replace(old, new))
    return path


def test_a_state_size_below_one_is_refused_naming_it(tmp_path):
    path = env_file_with(tmp_path, "box_point.h", "#define STATE_SIZE 2", "#define STATE_SIZE -2")
    with pytest.raises(ValueError) as err:
        fastvec.make_vec_from_source(path, 2)
    text = one_line(err)
    assert "STATE_SIZE" in text and "-2" in text and "negative dimensions" not in text


@pytest.mark.parametrize("old, new, constant", [
    ("#define OBS_SIZE 1", "#define OBS_SIZE -5", "OBS_SIZE"),
    ("#define OBS_SIZE 1", "#define OBS_SIZE 3000000000", "OBS_SIZE"),
    ("#define RENDER_W 4", "#define RENDER_W -3", "RENDER_W"),
    ("#define RENDER_H 2", "#define RENDER_H 0", "RENDER_H"),
    ("typedef struct { int count; } State;", "typedef struct { int count; char big[3000000000]; } State;", "State"),
])
def test_an_absurd_declared_size_is_refused_naming_the_constant(tmp_path, old, new, constant):
    path = env_file_with(tmp_path, "counting.h", old, new)
    with pytest.raises(ValueError) as err:
        fastvec.make_vec_from_source(path, 2, render_mode="rgb_array").render()[0]
    text = one_line(err)
    assert constant in text and "negative dimensions" not in text


def test_actions_of_the_wrong_kind_are_refused_naming_the_shape_and_kind_wanted():
    import gymnasium as gym

    import fastvec  # noqa: F401

    for env_id, given, message in (
            ("fastvec/CartPole", np.zeros(3, np.float32),
             "actions (shape (3,)) must be integers for Discrete(2), got dtype float32"),
            ("fastvec/Pendulum", np.zeros((3, 1), np.complex64),
             "actions (shape (3, 1)) must be numbers (float32) for Box(-2.0, 2.0, (1,), float32), got dtype complex64")):
        envs = gym.make_vec(env_id, num_envs=3)
        envs.reset(seed=0)
        with pytest.raises(TypeError) as err:
            envs.step(given)
        assert str(err.value) == message
        envs.close()
