"""Rules and batch contracts asserted one situation at a time: Breakout's last ball and seams, Pong's ball-speed
cap and serve directions, CartPole's termination thresholds and spaces (against Gymnasium's CartPole-v1),
DISABLED-mode partial resets and reset with a list of seeds (against Gymnasium's SyncVectorEnv over fastvec's
single env). Situations are written into the raw state bytes and played by the
real step, as in test_breakout.py and test_pong.py."""

import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastvec  # noqa: F401  (registers fastvec/...)
from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_env

# breakout.h's State and pong.h's State: the first bytes of every slot (their layouts are checked against the
# observations in test_breakout.py::test_state_mirror and test_pong.py::test_state_layout_matches_the_header).
BREAKOUT = np.dtype([("paddle_x", "f4"), ("paddle_w", "f4"), ("ball_x", "f4"), ("ball_y", "f4"),
                     ("ball_vx", "f4"), ("ball_vy", "f4"), ("ball_speed", "f4"), ("score", "i4"),
                     ("balls_left", "i4"), ("paddle_hits", "i4"), ("bricks_left", "i4"),
                     ("wall_respawned", "i4"), ("destroyed", "u4", (6,))])
PONG = np.dtype([("ball", "<f4", 4), ("ball_speed", "<f4"), ("paddle_y", "<f4", 2), ("bot_aim", "<f4"),
                 ("score", "<i4", 2), ("paddle_hits", "<i4")])


def batch(env, n, autoreset="Disabled", max_steps=None, **params):
    return cpu.CpuBatch(load_env(env, params), n, native.AUTORESET_CODES[autoreset], max_steps)


def states(b, dtype):
    return b.slots[:, :dtype.itemsize].view(dtype)[:, 0]


# ------------------------------------------------------------------------------------------------ Breakout


def falling_past_the_paddle(balls_left):
    """A ball under the paddle's top, falling, the paddle far away: lost within one 4-tick step."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["balls_left"], s["paddle_x"], s["score"] = balls_left, 500.0, 12
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 100.0, 300.0, 0.0, 6.0
    b.step(np.zeros((1, 1), np.int64))
    return b, s


def test_breakout_losing_the_last_ball_ends_the_game_where_the_ball_fell():
    b, s = falling_past_the_paddle(balls_left=1)
    assert b.terminated[0] and not b.truncated[0]
    assert b.terminated.view(np.uint8)[0] == 1  # a NumPy bool's own byte (env_step returns 1 when terminated)
    assert s["balls_left"][0] == 0 and b.obs[0, 0, 8] == 0.0  # balls left / 5
    assert s["ball_y"][0] >= 320.0 and b.obs[0, 0, 3] * 330 >= 320.0  # no new ball after the last one
    assert s["ball_x"][0] == 100.0 and s["paddle_x"][0] == 500.0
    assert b.rewards[0, 0] == 0.0 and b.obs[0, 0, 7] == np.float32(12 / 864)


@pytest.mark.parametrize("balls_left", [2, 5])
def test_breakout_losing_another_ball_launches_the_next_from_the_start(balls_left):
    b, s = falling_past_the_paddle(balls_left)
    assert not b.terminated[0] and s["balls_left"][0] == balls_left - 1
    assert b.obs[0, 0, 8] == np.float32((balls_left - 1) / 5)
    assert s["paddle_w"][0] == 62.0 and s["paddle_x"][0] == (576 - 62) / 2 and s["ball_speed"][0] == 256.0
    speed = 256 / 60  # px per tick, launched pi / 3.25 from vertical, downward
    assert abs(s["ball_vx"][0]) == pytest.approx(speed * math.sin(math.pi / 3.25), rel=1e-6)
    assert s["ball_vy"][0] == pytest.approx(speed * math.cos(math.pi / 3.25), rel=1e-6)
    ticks_since_launch = (s["ball_y"][0] - 135.0) / s["ball_vy"][0]  # lost on one of the 4 ticks
    assert 0 <= ticks_since_launch <= 4 and ticks_since_launch == pytest.approx(round(ticks_since_launch), abs=1e-3)
    assert s["ball_x"][0] == pytest.approx(272.0 + s["ball_vx"][0] * ticks_since_launch, abs=1e-3)


# ------------------------------------------------------------------------------------------------ Pong


def pong_hit(speed, seed=5):
    """The left paddle returns a ball that arrives at `speed`, hitting the paddle's centre."""
    b = batch("pong", 1)
    b.reset(np.array([seed], np.uint64), None)
    s = states(b, PONG)
    s["paddle_y"][0] = [0.0, 0.0]
    s["ball"][0] = [-0.85, 0.0, -speed, 0.0]
    s["ball_speed"][0] = speed
    b.step(np.zeros((1, 2), np.int64))
    assert s["paddle_hits"][0] == 1 and s["ball"][0, 2] > 0
    assert b.rewards[0].tolist() == [0.0, 0.0]  # no return bonus by default
    return float(np.hypot(s["ball"][0, 2], s["ball"][0, 3])), float(s["ball_speed"][0])


@pytest.mark.parametrize("before,after", [(0.03, 0.032), (0.066, 0.068), (0.069, 0.07), (0.0695, 0.07), (0.07, 0.07)])
def test_pong_returns_speed_the_ball_up_by_0_002_to_at_most_0_07(before, after):
    velocity, speed = pong_hit(before)
    assert speed == pytest.approx(after, abs=1e-7)
    assert velocity == pytest.approx(after, rel=1e-6)


def test_pong_speed_never_exceeds_the_cap_over_long_rallies():
    b = batch("pong", 1)
    b.reset(np.array([9], np.uint64), None)
    s = states(b, PONG)
    for _ in range(1200):  # a rally of 20+ returns: both paddles always under the ball
        s["paddle_y"][0] = [s["ball"][0, 1]] * 2
        b.step(np.zeros((1, 2), np.int64))
        assert s["ball_speed"][0] <= np.float32(0.07)
    assert s["paddle_hits"][0] >= 22 and s["ball_speed"][0] == np.float32(0.07) and s["score"].sum() == 0


@pytest.mark.parametrize("scorer", [0, 1])
def test_pong_a_point_serves_from_the_centre_toward_the_player_who_conceded(scorer):
    b = batch("pong", 1)
    b.reset(np.array([7], np.uint64), None)
    s = states(b, PONG)
    direction = 1.0 if scorer == 0 else -1.0  # the ball flies toward the conceding player's goal
    s["ball"][0] = [0.99 * direction, 0.5, 0.03 * direction, 0.0]
    s["paddle_y"][0] = [-0.6, -0.6]  # neither paddle near the ball
    b.step(np.zeros((1, 2), np.int64))
    assert b.rewards[0, scorer] == 1.0 and b.rewards[0, 1 - scorer] == -1.0
    x, y, vx, vy = s["ball"][0]
    assert x == 0.0 and np.sign(vx) == direction
    assert s["ball_speed"][0] == np.float32(0.03) and math.hypot(vx, vy) == pytest.approx(0.03, rel=1e-6)
    assert abs(vy) <= 0.5 * 0.03 + 1e-9 and abs(y) < 0.4


def test_pong_reset_serves_to_either_side_at_the_serve_speed_and_angle():
    n = 400
    b = batch("pong", n)
    b.reset(np.arange(n, dtype=np.uint64) + 1000, None)
    s = states(b, PONG)
    x, y, vx, vy = s["ball"].T
    toward_left = float((vx < 0).mean())
    assert 0.4 < toward_left < 0.6  # a fair coin (binomial sd 0.025)
    assert (x == 0).all() and (np.abs(y) < 0.4).all() and np.abs(y).max() > 0.3
    assert (np.abs(vy) <= 0.015 + 1e-9).all() and np.abs(vy).max() > 0.012
    np.testing.assert_allclose(np.hypot(vx, vy), 0.03, rtol=1e-6)
    assert (s["score"] == 0).all() and (s["paddle_y"] == 0).all() and (s["paddle_hits"] == 0).all()


# ------------------------------------------------------------------------------------------------ resets


def vector_pair(n, seeds):
    ours = gym.make_vec("fastvec/CartPole", num_envs=n, autoreset_mode=AutoresetMode.DISABLED)
    sync = SyncVectorEnv([lambda: gym.make("fastvec/CartPole")] * n, autoreset_mode=AutoresetMode.DISABLED)
    a, _ = ours.reset(seed=seeds)
    b, _ = sync.reset(seed=seeds)
    np.testing.assert_array_equal(a, b)
    return ours, sync


def test_reset_with_a_list_of_seeds_seeds_env_i_with_seed_i_like_sync_vector_env():
    seeds = [11, 5, 11, 2**40]
    ours, _ = vector_pair(4, seeds)
    obs, _ = ours.reset(seed=seeds)
    assert (obs[0] == obs[2]).all() and not (obs[0] == obs[1]).all()  # equal seeds, equal envs
    by_int, _ = ours.reset(seed=30)
    by_list, _ = ours.reset(seed=[30, 31, 32, 33])
    np.testing.assert_array_equal(by_int, by_list)


def test_disabled_partial_resets_with_seeds_match_sync_vector_env_over_whole_episodes():
    """Every episode end is followed by a reset of just the envs that ended, alternately with a list of seeds
    (None for some: they go on with their own RNG streams) and without; the other envs must not notice."""
    n = 6
    ours, sync = vector_pair(n, [1, 2, 3, 4, 5, 6])
    rng = np.random.default_rng(0)
    resets = 0
    for step in range(400):
        actions = rng.integers(0, 2, n)
        a, b = ours.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, y)
        done = a[2] | a[3]
        if done.any():
            with pytest.raises(RuntimeError, match="autoreset_mode is DISABLED"):
                ours.step(actions)  # refused until the ended envs are reset
            seeds = [int(s) if rng.random() < 0.5 else None for s in rng.integers(0, 2**31, n)]
            kwargs = {"seed": seeds} if resets % 2 else {}
            untouched = ours.unwrapped.batch.slots[~done].copy()
            obs_a, _ = ours.reset(options={"reset_mask": done}, **kwargs)
            obs_b, _ = sync.reset(options={"reset_mask": done.copy()}, **kwargs)
            np.testing.assert_array_equal(obs_a, obs_b)
            np.testing.assert_array_equal(ours.unwrapped.batch.slots[~done], untouched)
            resets += 1
    assert resets > 15


def test_batch_reset_mask_and_seeds_touch_only_the_masked_envs():
    b = batch("cartpole", 5)
    b.reset(np.arange(5, dtype=np.uint64), None)
    for _ in range(3):
        b.step(np.ones((5, 1), np.int64))
    before, obs_before = b.slots.copy(), b.obs.copy()
    mask = np.array([0, 1, 0, 1, 1], np.uint8)
    b.reset(np.array([0, 7, 0, 8, 7], np.uint64), mask)
    keep = mask == 0
    np.testing.assert_array_equal(b.slots[keep], before[keep])
    np.testing.assert_array_equal(b.obs[keep], obs_before[keep])
    np.testing.assert_array_equal(b.obs[1], b.obs[4])  # same seed, same start
    fresh = batch("cartpole", 1)
    fresh.reset(np.array([8], np.uint64), None)
    np.testing.assert_array_equal(b.obs[3], fresh.obs[0])
    np.testing.assert_array_equal(b.slots[3], fresh.slots[0])  # episode counters zeroed too


# ------------------------------------------------------------------------------------------------ Breakout seams


@pytest.mark.parametrize("x0,winner", [(176.0, 6), (172.0, 5)])
def test_breakout_a_ball_meeting_two_bricks_at_once_breaks_the_one_it_covers_most(x0, winner):
    """The ball rises under the seam of bricks 5 and 6 of the bottom row (x = 192) and meets both bottom faces
    at t = 0.5 tick; at that moment its left edge is at x0 + 1, so it covers brick 6 more for x0 = 176
    (15 px of brick 5, 17 of brick 6) and brick 5 more for x0 = 172 (19 and 13)."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = x0, 123.5, 2.0, -3.0  # bottom row ends at y = 122
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == 1 << winner and s["destroyed"][0, :5].sum() == 0
    assert b.rewards[0, 0] == 1.0 and s["bricks_left"][0] == 107
    assert s["ball_vy"][0] == 3.0 and s["ball_vx"][0] == 2.0  # bounced off a bottom face


# ------------------------------------------------------------------------------------------------ CartPole


THETA = 12 * 2 * math.pi / 360


@pytest.mark.parametrize("state", [
    [2.4, 0, 0, 0], [-2.4, 0, 0, 0], [0, 0, THETA, 0], [0, 0, -THETA, 0],
    [np.nextafter(2.4, 3), 0, 0, 0], [np.nextafter(-2.4, -3), 0, 0, 0],
    [0, 0, np.nextafter(THETA, 1), 0], [0, 0, np.nextafter(-THETA, -1), 0],
])
def test_cartpole_ends_exactly_where_gymnasiums_does(state):
    """At the thresholds (|x| = 2.4, |theta| = 12 degrees: still alive) and a hair beyond (terminated), from
    states set through `unwrapped.state` in both envs; velocities 0 so the step keeps x and theta."""
    ours, theirs = gym.make("fastvec/CartPole"), gym.make("CartPole-v1")
    ours.reset(seed=0)
    theirs.reset(seed=0)
    ours.unwrapped.state = np.array(state, np.float64)
    theirs.unwrapped.state = np.array(state, np.float64)
    a, b = ours.step(1), theirs.step(1)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[2] == b[2] and a[1] == b[1]


def test_cartpole_spaces_are_gymnasiums():
    ours, theirs = gym.make("fastvec/CartPole"), gym.make("CartPole-v1")
    assert ours.observation_space == theirs.observation_space and ours.action_space == theirs.action_space
    np.testing.assert_array_equal(ours.observation_space.high, theirs.observation_space.high)


# ------------------------------------------------------------------------------------------------ Pong's bot

BOT_SPEED = (0.4, 0.55, 0.7, 0.85, 1.0)  # of the agent's 0.035 per step, by level
BOT_NOISE = (1.8, 1.5, 1.3, 1.15, 1.05)  # the aim's spread, in paddle reaches (0.12 + 0.02)


@pytest.mark.parametrize("level", range(5))
def test_pong_bot_chases_the_ball_at_its_levels_speed(level):
    b = batch("pong", 1, pong_bot=1, bot_level=level)
    b.reset(np.array([2], np.uint64), None)
    s = states(b, PONG)
    s["ball"][0] = [0.0, 0.6, 0.01, 0.0]  # coming toward the bot, high up
    s["paddle_y"][0] = [0.0, -0.2]
    s["bot_aim"][0] = 0.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_y"][0, 1] == pytest.approx(-0.2 + 0.035 * BOT_SPEED[level], abs=1e-6)
    s["ball"][0] = [0.0, 0.6, -0.01, 0.0]  # going away: the bot drifts back toward the centre
    s["paddle_y"][0, 1] = 0.5
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_y"][0, 1] == pytest.approx(0.5 - 0.035 * BOT_SPEED[level], abs=1e-6)


@pytest.mark.parametrize("level", range(5))
def test_pong_bot_aims_within_its_levels_spread(level):
    """A serve toward the bot draws its aim uniformly in +-noise * reach (reach 0.14)."""
    n = 2000
    b = batch("pong", n, pong_bot=1, bot_level=level)
    b.reset(np.arange(n, dtype=np.uint64), None)
    s = states(b, PONG)
    toward_bot = s["ball"][:, 2] > 0
    aims = s["bot_aim"][toward_bot]
    bound = BOT_NOISE[level] * 0.14
    assert toward_bot.sum() > 800 and (s["bot_aim"][~toward_bot] == 0).all()
    assert np.abs(aims).max() <= bound * (1 + 1e-6) and np.abs(aims).max() > 0.99 * bound
    assert abs(aims.mean()) < 0.05 * bound


def test_pong_reset_centres_both_paddles_and_clears_the_score():
    b = batch("pong", 2)
    b.reset(np.array([1, 2], np.uint64), None)
    s = states(b, PONG)
    s["paddle_y"] = [[0.3, -0.4], [-0.5, 0.6]]
    s["score"] = [[3, 4], [5, 6]]
    s["paddle_hits"] = [7, 8]
    b.reset(np.array([3, 4], np.uint64), None)
    assert (s["paddle_y"] == 0).all() and (s["score"] == 0).all() and (s["paddle_hits"] == 0).all()


def test_pong_a_returned_ball_travels_the_rest_of_the_step():
    """Contact happens a fraction t into the step; the ball leaves the paddle's face for the remaining 1 - t."""
    b = batch("pong", 1)
    b.reset(np.array([5], np.uint64), None)
    s = states(b, PONG)
    s["paddle_y"][0] = [0.0, 0.0]
    s["ball"][0] = [-0.85, 0.0, -0.03, 0.0]
    s["ball_speed"][0] = 0.03
    b.step(np.zeros((1, 2), np.int64))
    face = -(0.9 - 0.02) + 0.02  # the ball's centre at contact
    t = (-0.85 - face) / 0.03
    assert s["ball"][0, 0] == pytest.approx(face + (1 - t) * 0.032, abs=1e-6)


def test_breakout_a_slow_sideways_ball_still_meets_the_brick_beside_it():
    """vx = 0.5 px per tick: the ball's right edge, 0.3 px short of brick 6 of the bottom row, reaches it
    0.6 into the first tick (bricks 4 and 5 of that row are gone, so the ball sits in their gap)."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["destroyed"][0, 5] = (1 << 4) | (1 << 5)
    s["bricks_left"] = 106
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 159.7, 115.0, 0.5, 3.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == (1 << 4) | (1 << 5) | (1 << 6) and b.rewards[0, 0] == 1.0
    assert s["ball_vx"][0] == -0.5 and s["ball_x"][0] == pytest.approx(160.0 - 0.5 * 3.4, abs=1e-4)


def test_breakout_the_nearest_surface_of_a_tick_comes_first():
    """Up and to the left near the left wall: the wall at t = 0.2 tick, then brick 0 of the bottom row at 0.8;
    four ticks end at x = 11.4, y = 131.6 (hand-computed), the brick broken once."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["destroyed"][0, 5] = 1 << 1  # brick 1 gone: brick 0 is the only one in reach
    s["bricks_left"] = 107
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 0.6, 124.4, -3.0, -3.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == 0b11 and b.rewards[0, 0] == 1.0
    assert (s["ball_vx"][0], s["ball_vy"][0]) == (3.0, 3.0)
    assert s["ball_x"][0] == pytest.approx(11.4, abs=1e-4) and s["ball_y"][0] == pytest.approx(131.6, abs=1e-4)


def test_cartpole_resets_uniformly_in_plus_minus_0_05():
    n = 2000
    b = batch("cartpole", n)
    b.reset(np.arange(n, dtype=np.uint64), None)
    state = b.get_state(None)
    assert state.shape == (n, 4) and (np.abs(state) < 0.05).all()
    assert (state.min(0) < -0.048).all() and (state.max(0) > 0.048).all()
    assert (np.abs(state.mean(0)) < 0.003).all()


def test_cartpole_state_access_round_trips_and_steps_as_gymnasiums():
    ours, theirs = gym.make("fastvec/CartPole"), gym.make("CartPole-v1")
    ours.reset(seed=0)
    theirs.reset(seed=0)
    state = np.array([0.1, -0.2, 0.03, 0.4])
    ours.unwrapped.state = state
    theirs.unwrapped.state = state.copy()
    np.testing.assert_array_equal(ours.unwrapped.state, state)
    for action in (1, 0, 0, 1, 1):
        a, b = ours.step(action), theirs.step(action)
        np.testing.assert_array_equal(ours.unwrapped.state, np.asarray(theirs.unwrapped.state, np.float64))
        np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("theta", [1.0, -2.5, 3.0, 40.0])
def test_cartpole_float32_steps_a_fallen_pole_like_float64(theta):
    """Stepped on past its end (DISABLED), a pole reaches any angle: the float32 build's own sin/cos, with its
    reduction to [-pi/4, pi/4], stays within float32 rounding of the float64 build."""
    results = []
    for params in ({}, {"float32": 1}):
        b = batch("cartpole", 1, **params)
        b.reset(np.array([1], np.uint64), None)
        b.set_state(None, np.array([[0.0, 0.0, theta, 0.5]]))
        for _ in range(3):
            b.step(np.ones((1, 1), np.int64))
        results.append(b.get_state(None)[0])
    np.testing.assert_allclose(results[1], results[0], rtol=2e-5, atol=2e-5)


def test_envs_without_state_access_say_so():
    envs = gym.make_vec("fastvec/Breakout", num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(AttributeError):
        envs.get_state()


@pytest.mark.parametrize("env,defines", [("pong", {}), ("pong", {"PONG_BOT": 1}), ("breakout", {}), ("cartpole", {})])
def test_a_headers_own_defaults_are_the_registrys(env, defines):
    """Compiled without -D (as a user's nvcc or make_vec_from_source would), an env header plays exactly as the
    registry's build with default parameters."""
    n, rng = 8, np.random.default_rng(0)
    bare = cpu.CpuBatch(cpu.load(native.source_path(env), tuple(sorted(defines.items()))), n,
                        native.AUTORESET_CODES["SameStep"], None)
    registry = batch(env, n, "SameStep", **{k.lower(): v for k, v in defines.items()})
    for b in (bare, registry):
        b.reset(np.arange(n, dtype=np.uint64), None)
    assert bare.obs.shape == registry.obs.shape
    for _ in range(800):
        actions = rng.integers(0, registry.env.num_actions, registry.obs.shape[:2])
        bare.step(actions)
        registry.step(actions)
        np.testing.assert_array_equal(bare.obs, registry.obs)
        np.testing.assert_array_equal(bare.rewards, registry.rewards)
        np.testing.assert_array_equal(bare.terminated, registry.terminated)


def test_breakout_a_brick_the_ball_leaves_behind_is_not_hit():
    """Up and to the left, the ball's right edge 1 px into brick 6's column: it leaves that column (t = 1/3)
    before its top reaches the bottom row (t = 0.5), so brick 6 stays; bricks 3 to 5 are gone, so nothing else
    is in reach, and four ticks end at (149, 111.5)."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["destroyed"][0, 5] = 0b111 << 3
    s["bricks_left"] = 105
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 161.0, 123.5, -3.0, -3.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == 0b111 << 3 and b.rewards[0, 0] == 0.0
    assert (s["ball_x"][0], s["ball_y"][0], s["ball_vx"][0], s["ball_vy"][0]) == (149.0, 111.5, -3.0, -3.0)


def test_pong_observations_are_each_seats_egocentric_view():
    b = batch("pong", 1, points=7)
    b.reset(np.array([1], np.uint64), None)
    s = states(b, PONG)
    b.step(np.zeros((1, 2), np.int64))
    s["paddle_y"][0] = [0.3, -0.45]
    s["score"][0] = [2, 5]
    s["ball"][0] = [0.25, -0.3, 0.02, 0.01]
    s["ball_speed"][0] = np.hypot(0.02, 0.01)
    b.step(np.zeros((1, 2), np.int64))  # the ball moves on: x 0.27, y -0.29
    f = np.float32
    left = [f(0.3) / f(0.75), f(-0.45) / f(0.75), f(0.27), f(-0.29) / f(0.75), f(0.02) / f(0.07),
            f(0.01) / f(0.07), f(2) / f(7), f(5) / f(7)]
    right = [left[1], left[0], -left[2], left[3], -left[4], left[5], left[7], left[6]]
    np.testing.assert_allclose(b.obs[0, 0], left, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.obs[0, 1], right, rtol=1e-6, atol=1e-7)


def test_breakout_a_brick_the_ball_leaves_behind_to_the_right_is_not_hit():
    """The mirror of the passed-by test: up and to the right, the ball's left edge 1 px into brick 2's column."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["destroyed"][0, 5] = 0b111 << 3
    s["bricks_left"] = 105
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 95.0, 123.5, 3.0, -3.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == 0b111 << 3 and b.rewards[0, 0] == 0.0
    assert (s["ball_x"][0], s["ball_y"][0], s["ball_vx"][0], s["ball_vy"][0]) == (107.0, 111.5, 3.0, -3.0)


def test_breakout_a_brick_at_the_left_wall_met_before_the_wall():
    """2 px from the left wall, up and to the left: brick 0's bottom at t = 0.5 tick, then the wall at 2/3;
    four ticks end at (10, 132.5)."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    s["destroyed"][0, 5] = 1 << 1
    s["bricks_left"] = 107
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 2.0, 123.5, -3.0, -3.0
    b.step(np.zeros((1, 1), np.int64))
    assert s["destroyed"][0, 5] == 0b11 and b.rewards[0, 0] == 1.0
    assert (s["ball_vx"][0], s["ball_vy"][0]) == (3.0, 3.0)
    assert s["ball_x"][0] == pytest.approx(10.0, abs=1e-4) and s["ball_y"][0] == pytest.approx(132.5, abs=1e-4)


@pytest.mark.parametrize("top,winner", [(101.0, 5), (85.0, 4)])
def test_breakout_a_ball_meeting_two_stacked_bricks_breaks_the_one_it_covers_most(top, winner):
    """Moving right into the left faces of brick 6 in rows 4 and 5 (the seam at y = 110) at t = 0.5 tick, the
    ball's top then at `top`: it covers row 5 more at 101 (9 px of row 4, 12 of row 5), row 4 more at 85
    (12 and 7; row 3's brick is gone). Bricks 4 and 5 of rows 2 to 5 are gone: the ball sits in their gap."""
    b = batch("breakout", 1)
    b.reset(np.array([3], np.uint64), None)
    s = states(b, BREAKOUT)
    gap = (1 << 4) | (1 << 5)
    s["destroyed"][0, 2:6] = [gap, gap | (1 << 6), gap, gap]
    s["bricks_left"] = 99
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 158.5, top - 1.5, 3.0, 3.0
    b.step(np.zeros((1, 1), np.int64))
    other = 9 - winner
    assert s["destroyed"][0, winner] & (1 << 6) and not s["destroyed"][0, other] & (1 << 6)
    assert b.rewards[0, 0] == 1.0 and s["ball_vx"][0] == -3.0 and s["destroyed"][0, 2] == gap


@pytest.mark.parametrize("state", [[0.0, 0.0, 0.2, 0.5], [2.3, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
def test_cartpole_sutton_barto_reward_is_gymnasiums(state):
    ours = gym.make("fastvec/CartPole", sutton_barto_reward=1)
    theirs = gym.make("CartPole-v1", sutton_barto_reward=True)
    ours.reset(seed=0)
    theirs.reset(seed=0)
    ours.unwrapped.state = np.array(state)
    theirs.unwrapped.state = np.array(state)
    for _ in range(6):
        a, b = ours.step(1), theirs.step(1)
        assert a[1] == b[1] and a[2] == b[2]
        if b[2]:
            assert a[1] == -1.0
            break


def test_pong_bot_mode_pays_the_return_bonus_to_the_agent():
    b = batch("pong", 1, pong_bot=1, return_bonus_milli=250)
    b.reset(np.array([5], np.uint64), None)
    s = states(b, PONG)
    s["paddle_y"][0] = [0.0, 0.0]
    s["ball"][0] = [-0.85, 0.0, -0.03, 0.0]
    s["ball_speed"][0] = 0.03
    b.step(np.zeros((1, 1), np.int64))
    assert s["paddle_hits"][0] == 1 and b.rewards[0, 0] == np.float32(0.25)


def test_cartpole_float32_pays_the_sutton_barto_reward_too():
    b = batch("cartpole", 2, float32=1, sutton_barto_reward=1)
    b.reset(np.array([1, 2], np.uint64), None)
    b.set_state(None, np.array([[0.0, 0.0, 0.0, 0.0], [2.39, 3.0, 0.0, 0.0]]))
    b.step(np.ones((2, 1), np.int64))
    assert b.terminated.tolist() == [False, True] and b.rewards[:, 0].tolist() == [0.0, -1.0]


@pytest.mark.parametrize("key,params", [("cartpole", {}), ("cartpole", {"float32": 1}), ("breakout", {}),
                                        ("pong", {})])
def test_each_arcade_and_cartpole_build_compiles_without_warnings(key, params, env_warnings):
    """The registry builds compile without a warning (-Wall at -O3): no brick, paddle or state indexed past its end,
    no value used uninitialised."""
    assert env_warnings(native.source_path(key), native.resolve_defines(key, params)) == ""
