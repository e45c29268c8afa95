"""Breakout's paddle catches a falling ball exactly when the two overlap (open intervals: a ball edge on a paddle edge
misses), at full and half width; a missed ball is lost. Hand-computed from the ball's and paddle's corners."""

import numpy as np
import pytest
from test_breakout import PADDLE_W, make, raw_state

BALL = 32
PADDLE_X = 200.0  # the paddle's left edge, well inside the field


@pytest.mark.parametrize("width", [PADDLE_W, PADDLE_W / 2])
def test_a_falling_ball_bounces_off_the_paddle_only_where_they_overlap(width):
    """Straight down (vx = 0) onto a still paddle: a ball whose right edge is the paddle's left edge, or whose left
    edge is the paddle's right edge, only touches it and is lost; a quarter pixel further in, it bounces (upwards,
    a ball still in play)."""
    right = PADDLE_X + width
    ball_x = np.array([PADDLE_X - BALL, PADDLE_X - BALL + 0.25, right - 0.25, right, right + 0.25, PADDLE_X + 8])
    bounces = [False, True, True, False, False, True]
    envs = make(len(ball_x))
    envs.reset(seed=3)
    s = raw_state(envs)
    s["paddle_x"], s["paddle_w"] = PADDLE_X, width
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = ball_x, 250.0, 0.0, 4.0
    rose, lost = np.zeros(len(ball_x), bool), np.zeros(len(ball_x), bool)
    for _ in range(6):  # 16 px a step: the paddle's top (y = 280 for the ball's top) in 2 steps, y >= 320 in 5
        obs, rew, term, trunc, _ = envs.step(np.zeros(len(ball_x), int))  # no-op: the paddle stays
        rose |= (obs[:, 5] < 0) & ~lost
        lost |= obs[:, 8] < 1
        assert not rew.any() and not term.any() and not trunc.any()
    np.testing.assert_array_equal(rose, bounces)
    np.testing.assert_array_equal(lost, np.logical_not(bounces))
    np.testing.assert_allclose(envs.unwrapped.batch.slots.view(s.dtype)[:, 0]["balls_left"], np.where(bounces, 5, 4))
