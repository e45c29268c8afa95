"""fastvec Breakout: the game rules users rely on (rewards, score, lives, wall respawn, speeds,
paddle), observation layout, frameskip, determinism, rendering, Gymnasium's checker and the
CUDA build. Scripted situations are written into the raw state bytes and played by the real step."""

import math
import shutil
import subprocess

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastvec  # noqa: F401  (registers fastvec/...)
from fastvec import native

# Mirrors `fv_slot` of batch.h around breakout.h's `State`; test_state_mirror checks it.
SLOT_DTYPE = np.dtype([
    ("paddle_x", "f4"), ("paddle_w", "f4"),
    ("ball_x", "f4"), ("ball_y", "f4"), ("ball_vx", "f4"), ("ball_vy", "f4"), ("ball_speed", "f4"),
    ("score", "i4"), ("balls_left", "i4"), ("paddle_hits", "i4"), ("bricks_left", "i4"),
    ("wall_respawned", "i4"), ("destroyed", "u4", (6,)),
    ("rng_key", "u8"), ("rng_counter", "u8"),
    ("ep_return", "f4"), ("ep_length", "i4"), ("needs_reset", "i4"), ("pad", "i4"),
])

# The spec (design.md 3.3), written out independently of breakout.h.
WIDTH, HEIGHT = 576, 330
ROWS, COLS = 6, 18
ROW_VALUES = np.array([7, 7, 4, 4, 1, 1])
BRICK_VALUES = np.repeat(ROW_VALUES, COLS)  # (108,), row-major like the observation
TICK = 1 / 60
PADDLE_Y, PADDLE_W, PADDLE_SPEED = 312, 62, 620
LAUNCH_ANGLE = math.pi / 3.25  # from vertical, as PufferLib
SPEEDS = (256, 320, 384, 448)  # px/s: the start, +64 every 4 paddle hits, the max
MAX_SCORE = 864
ALL_DESTROYED = (1 << COLS) - 1


def make(num_envs, **kwargs):
    return gym.make_vec("fastvec/Breakout", num_envs=num_envs, **kwargs)


def raw_state(envs) -> np.ndarray:
    """(N,) structured view of the slot bytes: writes go straight into the simulator."""
    return envs.unwrapped.batch.slots.view(SLOT_DTYPE)[:, 0]


def tracking_actions(obs, rng, noise=12.0):
    """A paddle that follows the ball's centre, with noise so that bounce angles vary."""
    paddle_centre = obs[:, 0] * WIDTH + obs[:, 9] * PADDLE_W / 2
    ball_centre = obs[:, 2] * WIDTH + 16 + rng.normal(0, noise, len(obs))
    return np.where(ball_centre < paddle_centre - 4, 1, np.where(ball_centre > paddle_centre + 4, 2, 0))


def test_state_mirror():
    envs = make(3)
    obs, _ = envs.reset(seed=11)
    assert SLOT_DTYPE.itemsize == envs.unwrapped.batch.slots.shape[1]
    s = raw_state(envs)
    np.testing.assert_allclose(obs[:, 0], s["paddle_x"] / WIDTH, rtol=1e-6)
    np.testing.assert_allclose(obs[:, 2], s["ball_x"] / WIDTH, rtol=1e-6)
    np.testing.assert_allclose(obs[:, 5], s["ball_vy"] / 512, rtol=1e-6)
    assert (s["balls_left"] == 5).all() and (s["bricks_left"] == 108).all() and (s["destroyed"] == 0).all()


def test_observation_layout_and_bounds():
    n = 32
    envs = make(n)
    assert envs.single_observation_space.shape == (118,) and envs.single_observation_space.dtype == np.float32
    assert envs.single_action_space == gym.spaces.Discrete(3)
    obs, _ = envs.reset(seed=3)
    rng = np.random.default_rng(3)
    seen_balls_left = set()
    for _ in range(600):
        assert obs.dtype == np.float32 and obs.shape == (n, 118)
        assert np.all(obs >= -1) and np.all(obs <= 1)
        assert np.all((obs[:, 0] >= 0) & (obs[:, 0] * WIDTH <= WIDTH - obs[:, 9] * PADDLE_W + 1e-3))
        np.testing.assert_allclose(obs[:, 1], PADDLE_Y / HEIGHT)
        assert np.all((obs[:, 2] >= 0) & (obs[:, 2] * WIDTH <= WIDTH - 32 + 1e-3))
        speed = np.hypot(obs[:, 4], obs[:, 5]) * 512 / TICK
        assert np.all(np.min(np.abs(speed[:, None] - np.array(SPEEDS)), axis=1) < 0.01)
        assert np.all(obs[:, 6] == 1)
        assert np.all(np.isin(np.round(obs[:, 8] * 5, 4), [0, 1, 2, 3, 4, 5]))
        assert np.all(np.isin(obs[:, 9], [0.5, 1.0]))
        assert np.all(np.isin(obs[:, 10:], [0.0, 1.0]))
        seen_balls_left.update(np.round(obs[:, 8] * 5).astype(int).tolist())
        # Half the envs track the ball (long rallies, bricks, top wall), half play at random.
        actions = np.where(np.arange(n) % 2, rng.integers(0, 3, n), tracking_actions(obs, rng))
        obs, *_ = envs.step(actions)
    assert seen_balls_left >= {1, 2, 3, 4, 5}


def test_rewards_come_only_from_bricks_and_sum_to_the_score():
    """Played by a noisy ball-tracking paddle long enough to clear walls: every reward is the
    value of the bricks that went from intact to destroyed, the score observation is the running
    sum of rewards, a cleared wall comes back exactly once, and bounce angles stay within 45 deg."""
    n, steps = 32, 2500
    envs = make(n)
    obs, _ = envs.reset(seed=5)
    rng = np.random.default_rng(5)
    running = np.zeros(n)
    respawns = np.zeros(n, int)
    fresh = np.zeros(n, bool)  # NEXT_STEP: the step after an episode's end is a reset
    brick_rewards = top_row_hits = half_paddles = 0
    for _ in range(steps):
        prev = obs
        obs, rew, term, trunc, info = envs.step(tracking_actions(prev, rng))
        newly = (obs[:, 10:] == 1) & (prev[:, 10:] == 0)
        respawned = (prev[:, 10:].sum(1) == 108) & (obs[:, 10:].sum(1) == 0) & ~fresh
        expected = np.where(respawned, 0, (newly * BRICK_VALUES).sum(1))
        expected[fresh] = 0
        np.testing.assert_array_equal(rew, expected)
        running = np.where(fresh, 0, running + rew)
        np.testing.assert_allclose(obs[:, 7] * MAX_SCORE, running, atol=1e-3)
        np.testing.assert_allclose(rew[~fresh], (obs[~fresh, 7] - prev[~fresh, 7]) * MAX_SCORE, atol=1e-3)
        if "score" in info:
            done = info["_score"]
            np.testing.assert_array_equal(info["score"][done], running[done])
            np.testing.assert_array_equal(info["episode_return"][done], running[done])
        respawns = np.where(fresh, 0, respawns + respawned)
        assert np.all(respawns <= 1)
        assert np.all(running[respawns == 1] >= 432)
        # The step a ball left the paddle (vy turned negative near the paddle): angle <= 45 deg.
        bounced = (prev[:, 5] > 0) & (obs[:, 5] < 0) & (obs[:, 3] * HEIGHT > 200) & ~fresh
        assert np.all(np.abs(obs[bounced, 4]) <= np.abs(obs[bounced, 5]) * (1 + 1e-5))
        assert np.all(np.isin(obs[:, 9], [0.5, 1.0]))  # the top wall halves the paddle once
        half_paddles += int((obs[:, 9] == 0.5).sum())
        brick_rewards += int((rew > 0).sum())
        top_row_hits += int(newly[:, : 3 * COLS].sum())
        fresh = term | trunc
    assert brick_rewards > 1000 and top_row_hits > 100 and half_paddles > 1000  # the policy really played
    assert np.any(running > 432), "no env cleared a wall; the test did not exercise the respawn"


def test_cleared_wall_respawns_exactly_once():
    """One brick left in front of a rising ball, paddle centred under its return path."""
    envs = make(2)
    envs.reset(seed=7)
    s = raw_state(envs)
    s["destroyed"] = ALL_DESTROYED
    s["destroyed"][:, 5] = ALL_DESTROYED & ~(1 << 8)  # brick (5, 8), worth 1, is the last one
    s["bricks_left"] = 1
    s["score"] = 431
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 8 * 32, 200.0, 0.0, -4.0
    s["paddle_x"] = 8 * 32 + 16 - PADDLE_W / 2
    s["ball_speed"] = 256.0
    noop = np.zeros(2, int)

    def step_until_reward(limit=40):
        for _ in range(limit):
            obs, rew, term, trunc, info = envs.step(noop)
            if rew.any():
                return obs, rew, term, info
        raise AssertionError("the ball never reached the brick")

    obs, rew, term, _ = step_until_reward()
    np.testing.assert_array_equal(rew, [1, 1])
    np.testing.assert_allclose(obs[:, 7] * MAX_SCORE, 432)
    assert np.all(obs[:, 10:] == 1) and not term.any()
    # Back down to the paddle: the wall respawns at the paddle hit.
    for _ in range(40):
        obs, *_ = envs.step(noop)
        if obs[0, 5] < 0:
            break
    assert np.all(obs[:, 10:] == 0), "the cleared wall did not respawn at the paddle hit"
    np.testing.assert_allclose(obs[:, 5] * 512 / TICK, -256, rtol=1e-5)  # straight up from mid-paddle
    obs, rew, term, _ = step_until_reward()
    np.testing.assert_array_equal(rew, [1, 1])  # the respawned brick (5, 8)
    # Clear the second wall: env 0 reaches 864 and ends; env 1 (score lowered) keeps playing but
    # gets no third wall.
    s["destroyed"] = ALL_DESTROYED
    s["destroyed"][:, 4] = ALL_DESTROYED & ~(1 << 8)  # brick (4, 8) is next in the ball's path
    s["bricks_left"] = 1
    s["score"] = [863, 600]
    obs, rew, term, info = step_until_reward()
    np.testing.assert_array_equal(rew, [1, 1])
    np.testing.assert_array_equal(term.view(np.uint8), [1, 0])  # NumPy bools' own bytes
    assert info["_score"].tolist() == [True, False] and info["score"][0] == MAX_SCORE
    assert np.all(obs[:, 10:] == 1)
    paddle_hits = 0
    for _ in range(60):  # env 1: down to the paddle and up again, the wall stays cleared
        prev = obs
        obs, rew, *_ = envs.step(noop)
        assert rew[1] == 0 and np.all(obs[1, 10:] == 1)
        paddle_hits += bool(prev[1, 5] > 0 and obs[1, 5] < 0 and obs[1, 3] * HEIGHT > 200)
    assert paddle_hits >= 1


def test_speed_and_paddle_rules():
    """Env 0's ball breaks brick (2, 8) (top three rows: max speed at the next paddle hit); env 1's
    breaks (5, 8) (no change); env 2's ball rises through an empty column to the top wall (paddle
    halves) and, its paddle moved away, is lost (the next ball gets a full paddle)."""
    envs = make(3)
    envs.reset(seed=8)
    s = raw_state(envs)
    s["destroyed"][0, 3:] = 1 << 8
    s["bricks_left"][0] = 105
    s["destroyed"][2] = 1 << 8
    s["bricks_left"][2] = 102
    s["ball_x"], s["ball_y"], s["ball_vx"], s["ball_vy"] = 8 * 32, 200.0, 0.0, -4.0
    s["paddle_x"] = 8 * 32 + 16 - PADDLE_W / 2
    actions = np.array([0, 0, 1])
    rewards = np.zeros(3)
    for _ in range(40):
        obs, rew, *_ = envs.step(actions)
        rewards += rew
        if obs[0, 5] < 0 and obs[0, 3] * HEIGHT > 200:
            break
    np.testing.assert_array_equal(rewards, [4, 1, 0])
    np.testing.assert_allclose(obs[:2, 5] * 512 / TICK, [-448, -256], rtol=1e-5)
    np.testing.assert_array_equal(obs[:, 9], [1, 1, 0.5])
    for _ in range(40):
        obs, *_ = envs.step(actions)
        if obs[2, 8] < 1:
            break
    np.testing.assert_allclose(obs[2, [8, 9]], [4 / 5, 1.0])  # a new ball: full paddle again


def test_paddle_moves_620_px_per_second_and_stops_at_walls():
    fs = 3
    envs = make(4, frameskip=fs)
    obs, _ = envs.reset(seed=9)
    x0 = obs[:, 0] * WIDTH
    obs, *_ = envs.step(np.array([0, 1, 2, 1]))
    np.testing.assert_allclose(obs[:, 0] * WIDTH - x0, np.array([0, -1, 1, -1]) * fs * PADDLE_SPEED * TICK, atol=1e-3)
    for _ in range(12):  # 9 steps reach a wall; the first ball is lost only after 25
        obs, *_ = envs.step(np.array([0, 1, 2, 1]))
    np.testing.assert_allclose(obs[1:, 0] * WIDTH, [0, WIDTH - PADDLE_W, 0], atol=1e-4)


def test_episode_ends_after_the_fifth_lost_ball():
    """No-op play: balls left goes 5, 4, ..., and the episode ends with the 5th loss."""
    n = 6
    envs = make(n)
    obs, _ = envs.reset(seed=21)
    history = [obs[:, 8] * 5]
    for step in range(1, 400):
        obs, rew, term, trunc, info = envs.step(np.zeros(n, int))
        assert not trunc.any()
        if term.any():
            break
        history.append(obs[:, 8] * 5)
    assert term.all(), "no-op play should lose every ball within a few hundred steps"
    np.testing.assert_allclose(obs[:, 8], 0)
    lives = np.round(np.array(history)).astype(int)
    for i in range(n):
        assert np.unique(lives[:, i]).tolist() == [1, 2, 3, 4, 5]
        assert np.all(np.diff(lives[:, i]) <= 0)
    np.testing.assert_array_equal(info["episode_length"], step)
    np.testing.assert_array_equal(info["score"], obs[:, 7] * MAX_SCORE)
    np.testing.assert_array_equal(info["score"], info["episode_return"])


def test_info_score_is_the_final_score_under_random_play():
    n = 64
    envs = make(n, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=10)
    rng = np.random.default_rng(10)
    ended, scores = 0, []
    for _ in range(800):
        obs, rew, term, trunc, info = envs.step(rng.integers(0, 3, n))
        if term.any():
            final = info["final_info"]
            for i in np.flatnonzero(term):
                assert info["final_obs"][i][8] == 0  # no balls left
                assert final["score"][i] == info["final_obs"][i][7] * MAX_SCORE == final["episode_return"][i]
                ended += 1
                scores.append(final["score"][i])
    assert ended > n and max(scores) > 0


@pytest.mark.parametrize("frameskip", [1, 2, 4, 8])
def test_frameskip_sets_ball_ticks_per_step(frameskip):
    n = 16
    envs = make(n, frameskip=frameskip)
    obs, _ = envs.reset(seed=12)
    step_speed = 256 * TICK  # px per tick at launch
    np.testing.assert_allclose(np.abs(obs[:, 4]) * 512, step_speed * math.sin(LAUNCH_ANGLE), rtol=1e-5)
    np.testing.assert_allclose(obs[:, 5] * 512, step_speed * math.cos(LAUNCH_ANGLE), rtol=1e-5)
    sides = np.sign(obs[:, 4])
    assert 0 < (sides > 0).sum() < n, "launch side should be random"
    new, *_ = envs.step(np.zeros(n, int))
    dx, dy = (new[:, 2] - obs[:, 2]) * WIDTH, (new[:, 3] - obs[:, 3]) * HEIGHT
    np.testing.assert_allclose(dx, sides * frameskip * step_speed * math.sin(LAUNCH_ANGLE), rtol=1e-4)
    np.testing.assert_allclose(dy, frameskip * step_speed * math.cos(LAUNCH_ANGLE), rtol=1e-4)


def rollout(num_envs, seed, actions):
    envs = make(num_envs)
    obs, _ = envs.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, rew, term, trunc, _ = envs.step(a[:num_envs])
        out.append(np.concatenate([obs, rew[:, None], term[:, None]], axis=1))
    return out


def test_determinism_and_independence_from_num_envs():
    rng = np.random.default_rng(13)
    n, steps, seed = 6, 500, int(rng.integers(1 << 30))
    actions = rng.integers(0, 3, (steps, n))  # random play: several episodes and autoresets
    a = rollout(n, seed, actions)
    b = rollout(n, seed, actions)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    for i in (0, 4):
        single = rollout(1, seed + i, actions[:, i : i + 1])
        for x, y in zip(a, single):
            np.testing.assert_array_equal(x[i], y[0])
    other = rollout(n, seed + 100, actions)
    assert any(not np.array_equal(x, y) for x, y in zip(a, other))
    ends = sum(int(x[:, -1].sum()) for x in a[1:])
    assert ends >= n  # autoresets happened inside the compared stretch


def test_render_frames():
    envs = make(2, render_mode="rgb_array")
    obs, _ = envs.reset(seed=14)
    frame = envs.render()[0]
    assert frame.shape == (HEIGHT, WIDTH, 3) and frame.dtype == np.uint8
    px, bx, by = int(round(obs[0, 0] * WIDTH)), int(round(obs[0, 2] * WIDTH)), int(round(obs[0, 3] * HEIGHT))
    assert frame[PADDLE_Y + 4, px + 30].tolist() != frame[5, 5].tolist()  # paddle
    assert frame[by + 16, bx + 16].tolist() != frame[5, 5].tolist()  # ball
    assert frame[50 + 6, 16].tolist() != frame[50 + 12 * 5 + 6, 16].tolist()  # rows differ in colour
    assert frame[200, 5].tolist() == frame[5, 5].tolist()  # background
    for _ in range(3):
        envs.step(np.array([1, 2]))
    later = envs.render()[0]
    assert not np.array_equal(frame, later)
    s = raw_state(envs)
    s["destroyed"][0, 0] = 1
    envs.step(np.array([0, 0]))
    no_brick = envs.render()[0]
    assert no_brick[56, 16].tolist() == no_brick[5, 5].tolist()


def test_gymnasium_env_checker():
    env = gym.make("fastvec/Breakout").unwrapped
    check_env(env)
    env.close()


def test_frameskip_range_is_checked():
    with pytest.raises(ValueError, match="frameskip"):
        make(2, frameskip=9)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_compiles_for_the_gpu(tmp_path):
    driver = tmp_path / "breakout_driver.cu"
    driver.write_text('#include "breakout.h"\n#include "batch.h"\n')
    cmd = ["nvcc", "-arch=sm_90", "-c", f"-I{native.NATIVE_DIR}", "-DFRAMESKIP=4", str(driver), "-o",
           str(tmp_path / "breakout.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
