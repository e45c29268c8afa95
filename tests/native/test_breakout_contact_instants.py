"""Breakout's contacts at the very end of a tick: the ball takes one brick there (the seam rule: the one it covers
most) and stops; a second brick touched at that same instant is the next tick's first contact, at t = 0.
Scripted from the raw state bytes, expected values worked out by hand from the corners."""

import numpy as np
from test_breakout import ALL_DESTROYED, COLS, make, raw_state

ROW_VALUES = [7, 7, 4, 4, 1, 1]


def corner_state(envs, x, y, vx, vy, intact):
    """Every brick destroyed but `intact` ((row, col) pairs); the ball at (x, y) moving (vx, vy) px a tick."""
    s = raw_state(envs)
    destroyed = np.full(6, ALL_DESTROYED, np.uint32)
    for row, col in intact:
        destroyed[row] &= ~np.uint32(1 << col)
    s["destroyed"], s["bricks_left"] = destroyed, len(intact)
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = x, y, vx, vy
    s["paddle_x"], s["paddle_w"], s["score"] = 0.0, 62.0, 0


def intact_bricks(obs):
    flags = obs[0, 10:].reshape(6, COLS)
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(flags == 0))}


def test_two_bricks_touched_at_a_steps_last_instant_are_paid_one_this_step_and_one_the_next():
    """Down-right at 2 px a tick from (152, 70): at the end of the step's 4th tick, (160, 78), the ball's bottom
    meets the top of brick (5, 5) (y = 110, full 32 px overlap) and its right edge the left face of brick (3, 6)
    (x = 192, 12 px overlap) at the same instant. This step pays (5, 5) (1) and bounces up off it, stopping there;
    the next step's first tick meets (3, 6) at t = 0 (4), bounces left, and the ball moves on 4 ticks to (152, 70)."""
    envs = make(1)
    envs.reset(seed=0)
    corner_state(envs, 152.0, 70.0, 2.0, 2.0, [(5, 5), (3, 6)])
    obs, rew, term, trunc, _ = envs.step(np.zeros(1, int))
    assert rew[0] == ROW_VALUES[5] and not term[0] and not trunc[0]
    assert intact_bricks(obs) == {(3, 6)}
    np.testing.assert_array_equal(obs[0, 2:6], np.float32([160 / 576, 78 / 330, 2 / 512, -2 / 512]))
    obs, rew, _, _, _ = envs.step(np.zeros(1, int))
    assert rew[0] == ROW_VALUES[3]
    assert intact_bricks(obs) == set()
    np.testing.assert_array_equal(obs[0, 2:6], np.float32([152 / 576, 70 / 330, -2 / 512, -2 / 512]))
    np.testing.assert_array_equal(obs[0, 7], np.float32(5 / 864))


def test_one_brick_touched_at_a_steps_last_instant_is_paid_that_step():
    """The same approach with brick (5, 5) alone: paid at the step's end, the ball stopped on its top face
    (y = 78) and heading up; the next step moves it 8 px up and right with nothing to pay."""
    envs = make(1)
    envs.reset(seed=0)
    corner_state(envs, 152.0, 70.0, 2.0, 2.0, [(5, 5)])
    obs, rew, _, _, _ = envs.step(np.zeros(1, int))
    assert rew[0] == ROW_VALUES[5] and intact_bricks(obs) == set()
    np.testing.assert_array_equal(obs[0, 2:6], np.float32([160 / 576, 78 / 330, 2 / 512, -2 / 512]))
    obs, rew, _, _, _ = envs.step(np.zeros(1, int))
    assert rew[0] == 0
    np.testing.assert_array_equal(obs[0, 2:6], np.float32([168 / 576, 70 / 330, 2 / 512, -2 / 512]))


def test_a_wall_met_exactly_at_a_steps_end_turns_the_ball_at_the_next_steps_first_tick():
    """Walls are met strictly inside a tick: a ball 8 px (4 ticks at 2 px) from the left, right or top wall ends
    the step touching it, still heading into it (and the paddle still full width at the top); the next step's
    first tick turns it and it moves 8 px back out (the top wall halving the paddle then)."""
    cases = [  # x, y, vx, vy -> after one step, after two (x, y, vx, vy, paddle width)
        ((8.0, 200.0, -2.0, 0.0), (0.0, 200.0, -2.0, 0.0, 62.0), (8.0, 200.0, 2.0, 0.0, 62.0)),
        ((536.0, 200.0, 2.0, 0.0), (544.0, 200.0, 2.0, 0.0, 62.0), (536.0, 200.0, -2.0, 0.0, 62.0)),
        ((272.0, 8.0, 0.0, -2.0), (272.0, 0.0, 0.0, -2.0, 62.0), (272.0, 8.0, 0.0, 2.0, 31.0)),
    ]
    envs = make(len(cases))
    envs.reset(seed=0)
    corner_state(envs, *np.array([c[0] for c in cases]).T, intact=[])
    scale = np.float32([576, 330, 512, 512, 62])
    for step in (1, 2):
        obs, rew, term, _, _ = envs.step(np.zeros(len(cases), int))
        assert not rew.any() and not term.any()
        got = obs[:, [2, 3, 4, 5, 9]]
        np.testing.assert_array_equal(got, np.float32([c[step] for c in cases]) / scale, err_msg=f"step {step}")
