"""Pong's rules (pong.h): the left/right mirror symmetry that self-play relies on, scoring,
returns, game end, observation bounds, the bot's difficulty ladder, rendering, the Gymnasium face
against the bot, and the file's validity as CUDA."""

import shutil
import subprocess

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fastvec  # noqa: F401  (registers fastvec/Pong)
from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_env

# pong.h's State, the first member of every slot (48 bytes).
STATE = np.dtype([("ball", "<f4", 4), ("ball_speed", "<f4"), ("paddle_y", "<f4", 2), ("bot_aim", "<f4"),
                  ("score", "<i4", 2), ("paddle_hits", "<i4"), ("bot_level", "<i4")])


def pong_batch(n, autoreset="Disabled", max_steps=None, **params):
    return cpu.CpuBatch(load_env("pong", params), n, native.AUTORESET_CODES[autoreset], max_steps)


def states(batch):
    """Writable structured view of every game's State inside the batch's slots."""
    return batch.slots[:, :STATE.itemsize].view(STATE)[:, 0]


def tracker(obs, rng, noise=0.3):
    """Follow the ball's height from egocentric obs (..., 8), with some random actions mixed in."""
    d = obs[..., 3] - obs[..., 0]
    a = np.where(d > 0.05, 1, np.where(d < -0.05, 2, 0))
    return np.where(rng.random(a.shape) < noise, rng.integers(0, 3, a.shape), a)


def test_state_layout_matches_the_header():
    b = pong_batch(4)
    b.reset(np.arange(4, dtype=np.uint64), None)
    s = states(b)
    # obs [3] = ball y / 0.75, [4] = ball vx / 0.07 for the left seat, [5] = ball vy / 0.07
    np.testing.assert_array_equal(b.obs[:, 0, 3], s["ball"][:, 1] / np.float32(0.75))
    np.testing.assert_array_equal(b.obs[:, 0, 4], s["ball"][:, 2] / np.float32(0.07))
    np.testing.assert_allclose(np.hypot(s["ball"][:, 2], s["ball"][:, 3]), s["ball_speed"], rtol=1e-6)


def test_mirrored_game_with_swapped_seats_is_the_same_game():
    """Mirror x and swap the seats: every later observation, reward and ending is the seat-swap of
    the original's, bit for bit (so one policy can play either side)."""
    n, rng = 128, np.random.default_rng(0)
    a = pong_batch(n, points=3)
    a.reset(np.arange(n, dtype=np.uint64) + 100, None)
    for _ in range(300):  # reach varied mid-game states first
        a.step(tracker(a.obs, rng, noise=0.6))
    b = pong_batch(n, points=3)
    b.slots[:] = a.slots  # same RNG streams too
    sa, sb = states(a), states(b)
    sb["ball"][:, 0] = -sa["ball"][:, 0]
    sb["ball"][:, 2] = -sa["ball"][:, 2]
    sb["paddle_y"] = sa["paddle_y"][:, ::-1]
    sb["score"] = sa["score"][:, ::-1]
    points = 0
    hits_before = int(sa["paddle_hits"].sum())
    ended = np.zeros(n, bool)
    for _ in range(1500):
        actions = tracker(a.obs, rng, noise=0.6)
        a.step(actions)
        b.step(np.ascontiguousarray(actions[:, ::-1]))
        np.testing.assert_array_equal(b.obs, a.obs[:, ::-1])
        np.testing.assert_array_equal(b.rewards, a.rewards[:, ::-1])
        np.testing.assert_array_equal(b.terminated, a.terminated)
        points += int((a.rewards[:, 0] != 0).sum())
        ended |= a.terminated
    assert points > 300 and sa["paddle_hits"].sum() - hits_before > 300 and ended.sum() > 10  # not a vacuous run


def test_a_ball_past_the_goal_line_scores_and_is_served_to_the_loser():
    b = pong_batch(1, points=21)
    b.reset(np.array([5], np.uint64), None)
    s = states(b)
    s["ball"][0] = [-0.99, -0.5, -0.03, 0.0]
    s["paddle_y"][0] = [0.6, 0.0]  # far from the ball: a miss
    b.step(np.zeros((1, 2), np.int64))
    np.testing.assert_array_equal(b.rewards[0], [-1.0, 1.0])
    assert list(s["score"][0]) == [0, 1] and not b.terminated[0]
    assert s["ball"][0, 0] == 0.0 and s["ball"][0, 2] < 0  # served from the centre, toward the left
    assert b.obs[0, 0, 7] == np.float32(1 / 21) and b.obs[0, 1, 6] == np.float32(1 / 21)  # egocentric scores


@pytest.mark.parametrize("offset", [-0.1, 0.0, 0.12])
def test_a_paddle_returns_the_ball_faster_at_an_angle_set_by_where_it_hit(offset):
    b = pong_batch(1, return_bonus_milli=100)
    b.reset(np.array([5], np.uint64), None)
    s = states(b)
    s["paddle_y"][0] = [0.2, 0.0]
    s["ball"][0] = [-0.85, 0.2 + offset, -0.03, 0.0]
    s["ball_speed"][0] = 0.03
    b.step(np.zeros((1, 2), np.int64))
    vx, vy = s["ball"][0, 2], s["ball"][0, 3]
    assert vx > 0 and s["paddle_hits"][0] == 1
    np.testing.assert_allclose(np.hypot(vx, vy), 0.032, rtol=1e-6)
    np.testing.assert_allclose(vy, offset / 0.14 * 0.8 * 0.032, atol=1e-7)  # reach 0.14, slope 0.8
    np.testing.assert_allclose(b.rewards[0], [0.1, 0.0])


def test_a_ball_beyond_reach_passes_the_paddle():
    b = pong_batch(1)
    b.reset(np.array([5], np.uint64), None)
    s = states(b)
    s["paddle_y"][0] = [0.2, 0.0]
    s["ball"][0] = [-0.85, 0.2 + 0.15, -0.03, 0.0]  # reach is 0.12 + 0.02
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 2] < 0 and s["paddle_hits"][0] == 0


def test_game_ends_at_points_zero_sum_and_in_bounds():
    n, rng = 64, np.random.default_rng(1)
    b = pong_batch(n, autoreset="SameStep", points=3)
    b.reset(np.arange(n, dtype=np.uint64), None)
    space = gym.spaces.Box(-1, 1, (8,), np.float32)
    games = 0
    for _ in range(4000):
        b.step(tracker(b.obs, rng, noise=0.5))
        assert np.abs(b.obs).max() <= 1.0 and np.abs(b.final_obs).max() <= 1.0
        assert set(np.unique(b.terminated.view(np.uint8))) <= {0, 1}  # NumPy bools' own bytes
        for i in np.flatnonzero(b.terminated):
            left, right, hits = b.episode_stats[i]
            assert max(left, right) == 3 and min(left, right) < 3
            np.testing.assert_allclose(b.episode_return[i], [left - right, right - left])
            assert space.contains(b.final_obs[i, 0]) and space.contains(b.final_obs[i, 1])
            games += 1
    assert games > 50


def test_the_bot_gets_harder_with_its_level():
    """A noisy tracker's share of the points falls as the bot's level rises; random play loses."""
    n, steps = 128, 1500
    shares = []
    for level in range(5):
        rng = np.random.default_rng(level)
        b = pong_batch(n, pong_bot=1, bot_level=level)
        b.reset(np.arange(n, dtype=np.uint64), None)
        won = lost = 0
        for _ in range(steps):
            b.step(tracker(b.obs, rng, noise=0.2))
            won += int((b.rewards > 0).sum())
            lost += int((b.rewards < 0).sum())
        shares.append(won / (won + lost))
    assert all(x > y for x, y in zip(shares, shares[1:])), shares
    assert shares[0] > 0.5 > shares[4], shares


def test_per_game_bot_levels_play_as_the_one_agent_builds():
    """The two-agent build with BOT_LEVEL=-1 (self-play's evaluations: every level in one batch): a game whose
    State.bot_level is k plays its left seat exactly as the one-agent bot build at level k (obs, rewards, ends,
    over resets, which keep the level), whatever agent 1 sends; -1 plays as the plain two-agent build."""
    n, points, rng = 60, 2, np.random.default_rng(7)
    levels = np.arange(n) % 6 - 1  # -1 (no bot), 0 .. 4
    seeds = np.arange(n, dtype=np.uint64) + 500
    mixed = cpu.CpuBatch(cpu.load(native.source_path("pong"), tuple(sorted(
        {**native.resolve_defines("pong", {"points": points}), "BOT_LEVEL": -1}.items()))), n, 1, None)
    states(mixed)["bot_level"] = levels
    mixed.reset(seeds, None)
    assert (states(mixed)["bot_level"] == levels).all()
    oracles = {k: pong_batch(n, "SameStep", points=points, pong_bot=int(k >= 0), bot_level=max(k, 0))
               for k in range(-1, 5)}
    for batch in oracles.values():
        batch.reset(seeds, None)
    ends = np.zeros(n, int)
    for _ in range(2500):
        actions = tracker(mixed.obs, rng, noise=0.3)  # (N, 2): agent 1's are ignored where the bot plays
        mixed.step(actions)
        ends += mixed.terminated
        for k, batch in oracles.items():
            games = levels == k
            batch.step(actions if k < 0 else actions[:, :1])
            seats = slice(None) if k < 0 else slice(0, 1)
            np.testing.assert_array_equal(mixed.obs[games][:, seats], batch.obs[games], err_msg=f"level {k}")
            np.testing.assert_array_equal(mixed.rewards[games][:, seats], batch.rewards[games])
            np.testing.assert_array_equal(mixed.terminated[games], batch.terminated[games])
    assert (states(mixed)["bot_level"] == levels).all()
    assert (ends >= 1).all(), ends  # every game played on past a reset


def test_gymnasium_face_plays_the_bot():
    envs = gym.make_vec("fastvec/Pong", num_envs=8, difficulty=0, points=2)
    assert envs.single_observation_space == gym.spaces.Box(-1, 1, (8,), np.float32)
    assert envs.single_action_space == gym.spaces.Discrete(3)
    obs, _ = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(3000):
        obs, rew, term, trunc, info = envs.step(rng.integers(0, 3, 8))
        if term.any():
            assert set(info) >= {"score", "opponent_score", "paddle_hits"}
            assert (np.maximum(info["score"], info["opponent_score"])[term] == 2).all()
            finished += int(term.sum())
    assert finished > 0
    check_env(gym.make("fastvec/Pong", difficulty=3).unwrapped)


def test_gymnasium_face_refuses_bad_keywords():
    with pytest.raises(ValueError, match="opponent must be 'bot'.*pettingzoo"):
        gym.make_vec("fastvec/Pong", num_envs=2, opponent=None)
    with pytest.raises(ValueError, match="difficulty=9 .* 0 \\(easy\\) to 4 \\(hard\\)"):
        gym.make_vec("fastvec/Pong", num_envs=2, difficulty=9)
    with pytest.raises(TypeError, match="pong_bot= is internal"):
        gym.make_vec("fastvec/Pong", num_envs=2, pong_bot=0)
    with pytest.raises(ValueError, match="points=0 .* out of range"):
        gym.make_vec("fastvec/Pong", num_envs=2, points=0)
    envs = gym.make_vec("fastvec/Pong", num_envs=2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="action 3 out of range for Discrete\\(3\\) at env 1"):
        envs.step(np.array([0, 3]))


def test_render_draws_both_paddles_ball_and_score():
    b = pong_batch(1)
    b.reset(np.array([0], np.uint64), None)
    s = states(b)
    s["paddle_y"][0] = [0.5, -0.5]
    s["ball"][0, :2] = [0.25, 0.0]
    s["score"][0] = [7, 12]
    frame = b.render(0)
    assert frame.shape == (240, 320, 3) and frame.dtype == np.uint8
    orange = (frame == [235, 120, 60]).all(-1)
    blue = (frame == [80, 160, 240]).all(-1)
    white = (frame == [245, 245, 245]).all(-1)
    # 160 px per unit: left paddle centred at row (0.75 - 0.5) * 160 = 40, right at row 200.
    paddle_rows = lambda mask, cols: np.flatnonzero(mask[:, cols].any(1))  # noqa: E731
    assert abs(paddle_rows(orange, slice(0, 40)).mean() - 40) < 2
    assert abs(paddle_rows(blue, slice(280, 320)).mean() - 200) < 2
    ys, xs = np.nonzero(white)
    assert abs(xs.mean() - 200) < 2 and abs(ys.mean() - 120) < 2
    assert orange[:40, 100:160].any() and blue[:40, 160:240].any()  # the two scores
    s["score"][0] = [8, 12]
    assert not np.array_equal(b.render(0), frame)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("defines", [[], ["-DPONG_BOT=1", "-DBOT_LEVEL=4"]])
def test_compiles_for_the_gpu(tmp_path, defines):
    driver = tmp_path / "pong_driver.cu"
    driver.write_text('#include "pong.h"\n#include "batch.h"\n')
    cmd = ["nvcc", "-arch=sm_90", "-c", f"-I{native.NATIVE_DIR}", *defines, str(driver), "-o", str(tmp_path / "p.o")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_ball_that_starts_its_step_touching_the_paddle_face_is_returned():
    """The face is part of the paddle: a ball whose centre starts the step exactly on it (t = 0 of the step) and
    moves in is returned, like one that crosses it during the step."""
    b = pong_batch(1)
    b.reset(np.array([5], np.uint64), None)
    s = states(b)
    f32 = np.float32
    contact = -(f32(0.9) - f32(0.02)) + f32(0.02)  # pong.h's ball centre on the left face, in float32
    s["paddle_y"][0] = [0.2, 0.0]
    s["ball"][0] = [contact, 0.2, -0.03, 0.0]
    s["ball_speed"][0] = 0.03
    b.step(np.zeros((1, 2), np.int64))
    assert s["ball"][0, 2] > 0 and s["paddle_hits"][0] == 1
    assert s["ball"][0, 0] > contact  # back out the full step's worth
