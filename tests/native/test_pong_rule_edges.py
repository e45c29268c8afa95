"""Pong's rules at their exact edges (pong.h): a ball that ends its step exactly on a paddle's face, goal line or
wall has not crossed it yet; a hit off the paddle's very end is a return; the bot's aim is drawn exactly when the
ball turns toward it, within its level's spread, and its paddle moves at its level's speed."""

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_env

STATE = np.dtype([("ball", "<f4", 4), ("ball_speed", "<f4"), ("paddle_y", "<f4", 2), ("bot_aim", "<f4"),
                  ("score", "<i4", 2), ("paddle_hits", "<i4"), ("bot_level", "<i4")])
f32 = np.float32
REACH = f32(0.12) + f32(0.02)  # paddle half height + ball radius, as pong.h adds them in float32
CONTACT = -(f32(0.9) - f32(0.02)) + f32(0.02)  # the left face's line for the ball's centre (egocentric x)
TOP = f32(0.75) - f32(0.02)  # the highest a ball's centre goes
STEP = f32(2.0 ** -5)  # a ball speed whose sums with the values above are exact in float32
NOISE = [1.8, 1.5, 1.3, 1.15, 1.05]  # the bot's aim spread by level, in reaches
SPEED = [0.4, 0.55, 0.7, 0.85, 1.0]  # the bot's top speed by level, as a share of the agent's 0.035


def pong_batch(n=1, **params):
    b = cpu.CpuBatch(load_env("pong", params), n, native.AUTORESET_CODES["Disabled"], None)
    b.reset(np.arange(n, dtype=np.uint64) + 11, None)
    return b


def states(batch):
    return batch.slots[:, :STATE.itemsize].view(STATE)[:, 0]


def put_ball(s, x, y, vx, vy):
    s["ball"][0] = [x, y, vx, vy]
    s["ball_speed"][0] = np.hypot(f32(vx), f32(vy), dtype=np.float32)


@pytest.mark.parametrize("seat", [0, 1])
def test_a_ball_that_ends_its_step_exactly_on_the_face_is_returned_on_the_next_step(seat):
    """The swept test returns a ball whose centre crosses the face during the step: one that only reaches the face at
    the step's end is still coming in (no return yet, no hit counted); the next step starts on the face and returns
    it, judged against the paddle as it stands then."""
    side = 1 if seat == 0 else -1
    b = pong_batch()
    s = states(b)
    x0 = f32(side * (CONTACT + STEP))
    assert f32(side * x0) - STEP == CONTACT  # the step ends exactly on the face
    s["paddle_y"][0] = [0.1, 0.1]
    put_ball(s, x0, 0.1, -side * STEP, 0.0)
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 0] == side * CONTACT and s["paddle_hits"][0] == 0
    assert b.obs[0, seat, 4] < 0  # egocentric vx: still toward this seat
    b.step(np.zeros((1, 2), np.int64))
    assert s["paddle_hits"][0] == 1 and b.obs[0, seat, 4] > 0
    assert s["ball_speed"][0] == STEP + f32(0.002)


def test_the_return_of_a_ball_resting_on_the_face_is_judged_where_the_paddle_then_is():
    """A ball that ended its step on the face, its paddle in reach at that moment, is missed if the agent moves the
    paddle out of reach on the next step: the return happens on that step, not the one before."""
    b = pong_batch()
    s = states(b)
    s["paddle_y"][0] = [0.1 + 0.13, 0.0]  # 0.13 above the ball: in reach (0.14); one move up puts it at 0.165
    put_ball(s, CONTACT + STEP, 0.1, -STEP, 0.0)
    b.step(np.zeros((1, 2), np.int64))
    assert s["paddle_hits"][0] == 0 and s["ball"][0, 0] == CONTACT
    b.step(np.array([[1, 0]], np.int64))
    assert s["paddle_hits"][0] == 0 and s["ball"][0, 2] < 0  # passes behind the paddle


@pytest.mark.parametrize("end", [1.0, -1.0])
@pytest.mark.parametrize("seat", [0, 1])
def test_a_ball_off_the_paddles_very_end_is_returned_at_the_steepest_slope(seat, end):
    """offset = (ball y - paddle y) / reach of exactly +-1: still a return (the reach is inclusive), at |vy| = 0.8 of
    the new speed; one float beyond, a miss."""
    side = 1 if seat == 0 else -1
    b = pong_batch()
    s = states(b)
    s["paddle_y"][0] = [0.0, 0.0]
    put_ball(s, side * f32(-0.85), f32(end) * REACH, -side * f32(0.03), 0.0)
    b.step(np.zeros((1, 2), np.int64))
    assert s["paddle_hits"][0] == 1 and np.sign(s["ball"][0, 2]) == side
    speed = s["ball_speed"][0]
    assert speed == f32(0.03) + f32(0.002)
    np.testing.assert_allclose(s["ball"][0, 3], end * 0.8 * speed, rtol=1e-6)

    b = pong_batch()
    s = states(b)
    s["paddle_y"][0] = [0.0, 0.0]
    put_ball(s, side * f32(-0.85), np.nextafter(f32(end) * REACH, f32(2 * end)), -side * f32(0.03), 0.0)
    b.step(np.zeros((1, 2), np.int64))
    assert s["paddle_hits"][0] == 0 and np.sign(s["ball"][0, 2]) == -side


@pytest.mark.parametrize("seat", [0, 1])
def test_a_ball_centre_exactly_on_the_goal_line_has_not_scored_yet(seat):
    """A point is scored when the ball's centre passes the goal line (|x| > 1): exactly on it, play goes on, and the
    next step scores for the other player."""
    side = 1 if seat == 0 else -1
    b = pong_batch()
    s = states(b)
    s["paddle_y"][0] = [0.6, 0.6]  # far from the ball
    put_ball(s, side * (f32(-1.0) + STEP), -0.3, -side * STEP, 0.0)
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 0] == -side and b.rewards[0].tolist() == [0.0, 0.0] and s["score"][0].tolist() == [0, 0]
    b.step(np.zeros((1, 2), np.int64))
    assert b.rewards[0, seat] == -1.0 and b.rewards[0, 1 - seat] == 1.0 and s["score"][0, 1 - seat] == 1


@pytest.mark.parametrize("wall", [1, -1])
def test_a_ball_that_ends_its_step_exactly_touching_a_wall_bounces_on_the_next_step(wall):
    """The top and bottom walls reflect a ball whose centre goes past y = +-0.73: one that lands exactly there keeps
    its vertical direction for that step, then folds back."""
    b = pong_batch()
    s = states(b)
    y0 = f32(wall * (TOP - STEP))
    assert y0 + f32(wall * STEP) == wall * TOP
    put_ball(s, 0.0, y0, 0.01, wall * STEP)
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 1] == wall * TOP and np.sign(s["ball"][0, 3]) == wall and np.sign(b.obs[0, 0, 5]) == wall
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 1] == f32(wall * (TOP - STEP)) and np.sign(s["ball"][0, 3]) == -wall


@pytest.mark.parametrize("level", range(5))
def test_the_bot_draws_a_new_aim_when_the_agent_returns_the_ball_and_keeps_it_on_its_own_return(level):
    """pong_bot_new_aim runs whenever the ball turns toward the bot: after the agent's return (a fresh aim within
    the level's spread, which the bot's paddle then follows), never after the bot's own return (the ball then goes
    away and the aim it used stays)."""
    b = pong_batch(pong_bot=1, bot_level=level)
    s = states(b)
    bound = NOISE[level] * REACH
    s["bot_aim"][0] = 0.5  # beyond every level's spread (at most 1.8 x 0.14)
    s["paddle_y"][0] = [0.2, 0.0]
    put_ball(s, -0.85, 0.2, -0.03, 0.0)
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_hits"][0] == 1 and s["ball"][0, 2] > 0
    aim = float(s["bot_aim"][0])
    assert aim != 0.5 and abs(aim) <= bound * (1 + 1e-6)
    before, target = float(s["paddle_y"][0, 1]), float(s["ball"][0, 1]) + aim
    b.step(np.zeros((1, 1), np.int64))  # the bot heads for the ball's height plus the new aim
    moved = float(s["paddle_y"][0, 1]) - before
    v = 0.035 * SPEED[level]
    np.testing.assert_allclose(moved, np.clip(target - before, -v, v), atol=1e-6)

    b = pong_batch(pong_bot=1, bot_level=level)
    s = states(b)
    s["bot_aim"][0] = 0.01
    s["paddle_y"][0] = [0.0, 0.2 + 0.01]  # the bot already where it aims
    put_ball(s, 0.85, 0.2, 0.03, 0.0)
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_hits"][0] == 1 and s["ball"][0, 2] < 0
    assert s["bot_aim"][0] == f32(0.01)


@pytest.mark.parametrize("level", range(5))
def test_a_serve_toward_the_bot_draws_its_aim_across_its_level_spread(level):
    """At a reset the ball is served to a random side: toward the bot the aim is drawn uniformly within +-noise
    reaches (1.8, 1.5, 1.3, 1.15, 1.05 by level), toward the agent the aim stays 0."""
    n = 1200
    b = pong_batch(n, pong_bot=1, bot_level=level)
    s = states(b)
    toward_bot = s["ball"][:, 2] > 0
    assert 400 < toward_bot.sum() < 800
    assert (s["bot_aim"][~toward_bot] == 0).all()
    aims = s["bot_aim"][toward_bot] / (NOISE[level] * REACH)
    assert np.abs(aims).max() <= 1 + 1e-6 and np.abs(aims).max() > 0.98
    assert (aims > 0.5).sum() > 80 and (aims < -0.5).sum() > 80  # both ways


@pytest.mark.parametrize("level", range(5))
def test_the_bot_paddle_moves_at_its_level_speed_toward_the_ball_and_back_to_the_centre(level):
    v = f32(0.035) * f32(SPEED[level])
    b = pong_batch(pong_bot=1, bot_level=level)
    s = states(b)
    s["bot_aim"][0] = 0.0
    s["paddle_y"][0] = [0.0, -0.5]
    put_ball(s, 0.0, 0.5, 0.03, 0.0)  # coming toward the bot, far above its paddle
    b.step(np.zeros((1, 1), np.int64))
    np.testing.assert_allclose(s["paddle_y"][0, 1], -0.5 + v, rtol=1e-6)
    s["paddle_y"][0, 1] = 0.5
    put_ball(s, 0.0, -0.5, -0.03, 0.0)  # going away: the bot drifts back to the centre
    b.step(np.zeros((1, 1), np.int64))
    np.testing.assert_allclose(s["paddle_y"][0, 1], 0.5 - v, rtol=1e-6)
    s["paddle_y"][0, 1] = v / 2
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_y"][0, 1] == 0.0  # within one move of its target: it stops there
