"""MountainCarContinuous after its first step, when Gymnasium's state is float32 and NumPy computes in float32 wherever
it meets a Python float: the goal reached exactly (with and without the speed clamp) and the clamped velocity's
position update, each from a start found with Gymnasium's own steps and played against it bit for bit."""

import gymnasium as gym
import numpy as np
import pytest
from test_classic_control_oracle import play
from test_glibc_math import needs_glibc_fma

f32 = np.float32


def gym_steps(ref, start, action, n=2):
    """Gymnasium's first n steps from a set state: [(state after the step, terminated)]."""
    ref.unwrapped.state = np.array(start, np.float64)
    out = []
    for _ in range(n):
        _, _, terminated, _, _ = ref.step(np.array([action], np.float32))
        out.append((np.array(ref.unwrapped.state), terminated))
    return out


def second_step_on_the_goal(ref, velocity, action):
    """The start from which the second step (the first in float32) ends exactly on float32(0.45), by bisection."""
    low, high = 0.45 - 2 * velocity - 0.03, 0.45 - 2 * velocity + 0.03
    assert not gym_steps(ref, [low, velocity], action)[1][1] and gym_steps(ref, [high, velocity], action)[1][1]
    while np.nextafter(low, high) < high:
        mid = low + (high - low) / 2
        low, high = (low, mid) if gym_steps(ref, [mid, velocity], action)[1][1] else (mid, high)
    return high


@needs_glibc_fma
@pytest.mark.parametrize("velocity,action", [(0.02, 0.0), (0.07, 1.0)])
def test_mountaincar_continuous_reaches_the_goal_exactly_in_float32_as_gymnasium(velocity, action):
    """Gymnasium's goal test, position >= 0.45, compares the float32 position with 0.45 rounded to float32 from the
    second step on: a car that lands exactly on float32(0.45) (0.44999998...) has arrived, though it is short of the
    double 0.45. At full speed (0.07) the clamped velocity is a Python float, and the float32 position plus it still
    lands there, where the double sum falls short."""
    ref = gym.make("MountainCarContinuous-v0")
    ref.reset(seed=0)
    start = second_step_on_the_goal(ref, velocity, action)
    (first, ended_first), (second, ended) = gym_steps(ref, [start, velocity], action)
    assert not ended_first and ended and second[0] == f32(0.45) and float(second[0]) < 0.45
    if velocity == 0.07:
        assert first[1] == f32(0.07) and second[1] == f32(0.07)  # clamped on both steps
        assert np.float64(first[0]) + 0.07 < 0.45  # in double the car would still be short of the goal
    counts = play("MountainCarContinuous", [[start, velocity]], lambda s, r: np.array([action], np.float32))
    assert counts == {"transitions": 2, "terminated": 1, "truncated": 0}


@needs_glibc_fma
def test_mountaincar_continuous_position_after_the_negative_speed_clamp_is_a_float32_sum():
    """Clamped to -0.07 (a Python float) after a float32 step, the velocity joins the float32 position as
    float32(-0.07) in float32 arithmetic: where that sum is a tie that rounds otherwise than the double sum, the car
    moves as Gymnasium's does."""
    p1 = f32(0.2)
    while f32(p1 + f32(-0.07)) == f32(np.float64(p1) - 0.07):  # a position where the two sums part
        p1 = np.nextafter(p1, f32(1))
    start = [np.float64(p1) + 0.07, -0.07]
    ref = gym.make("MountainCarContinuous-v0")
    ref.reset(seed=0)
    (first, _), (second, _) = gym_steps(ref, start, -1.0)
    assert first[0] == p1 and first[1] == f32(-0.07) and second[1] == f32(-0.07)
    assert second[0] == f32(p1 + f32(-0.07)) != f32(np.float64(p1) - 0.07)
    counts = play("MountainCarContinuous", [start], lambda s, r: np.array([-1.0], np.float32))
    assert counts["transitions"] == 999 and counts["truncated"] == 1
