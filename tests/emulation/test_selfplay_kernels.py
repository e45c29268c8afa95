"""selfplay.cu's evaluation kernel without a GPU: match_play_kernel (a block per few games, many steps a launch,
the policies staged in shared memory) built for the CPU by selfplay_on_cpu.cpp. Its policy step equals the
thread forward (pool_forward_kernel) bit for bit, its scores equal the CPU's play_bot / play_match game for game,
and they depend on neither the grid, the steps a launch, nor where the weights are read from. The GPU tests
(tests/trainer/test_selfplay_gpu.py) confirm the same on the device."""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.settings import Config
from fastvec.trainer.cuda.matches import play_layout
from fastvec.trainer.cuda.plan import SCALARS_DTYPE, policy_defines, pool_row_floats
from fastvec.trainer.selfplay import (Policy, draw_opponents, game_scores, games_batch, play_bot, play_match,
                                      selfplay_keys)

HARNESS = Path(__file__).resolve().parent / "selfplay_on_cpu.cpp"
CUDA_DIR = Path(__file__).resolve().parents[2] / "fastvec" / "trainer" / "cuda"
SPEC = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=48, layers=2, highway=True)
AGENTS, MAX_STEPS = 2, 20_000


def build(tmp_path_factory, spec, flags=(), load=True):
    """selfplay_on_cpu.cpp built for `spec`'s policy (plan.policy_defines: the trainer's -D sizes) and Pong, with
    extra compiler `flags` (a sanitizer's); the library loaded, or (load=False) its path."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    cuda_include = next((p / "include" for p in (Path("/usr/local/cuda"), Path("/usr/cuda"))
                         if (p / "include" / "cuda_bf16.h").is_file()), None)
    if cuda_include is None:
        pytest.skip("no CUDA headers (cuda_bf16.h)")
    tmp = tmp_path_factory.mktemp("selfplay_on_cpu")
    parts = tmp / "match_parts.cu"  # selfplay.cu (with rollout_common.cu's thread forward) with static shared memory
    parts.write_text(re.sub(r"extern __shared__ float4 (\w+)\[\];", r"static float4 \1[1 << 17];",
                            (CUDA_DIR / "selfplay.cu").read_text()))
    defines = {"BOT_LEVEL": -1, "PONG_BOT": 0, "POINTS": 1, **policy_defines(spec), "POLICY_HEAD_SIZE": 3}
    out = tmp / "selfplay_on_cpu.so"
    cmd = [cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-ffp-contract=off", *flags, f"-I{CUDA_DIR}",
           f"-I{native.NATIVE_DIR}", f"-I{cuda_include}", f"-I{HARNESS.parent}", f'-DENV="{native.source_path("pong")}"',
           f'-DMATCH_PARTS="{parts}"', *[f"-D{k}={v}" for k, v in defines.items()], str(HARNESS), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode and "barrier" in proc.stderr:
        pytest.skip(f"{cxx} has no C++20 <barrier>")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ctypes.CDLL(str(out)) if load else out


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(tmp_path_factory, SPEC)


def _p(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def random_policy(seed, label, scale=2.0, spec=SPEC):
    params = ref.init_params(spec, np.random.default_rng(seed), np.float32)
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    rng = np.random.default_rng(seed + 1)
    views["dec.w"][...] = rng.normal(0, scale, views["dec.w"].shape)
    for name, view in views.items():  # every bias away from init's zeros, so that a layer's bias term shows
        if name.endswith(".b"):
            view[...] = rng.normal(0, 0.5, view.shape)
    return Policy(spec, params, label)


class EmulatedMatches:
    """MatchBatch's buffers and launches (cuda/matches.py) on the CPU: matches of `games` games, levels[m] >= 0 the
    bot, else the policy in weights row rows[m]."""

    def __init__(self, lib, policies, levels, rows, games, seed):
        self.lib, self.games, n = lib, games, games * len(levels)
        self.n, spec = n, policies[0].spec
        stride = pool_row_floats(ref.FlatLayout(ref.param_table(spec)))
        self.weights = np.zeros((len(policies), stride), np.float32)
        for i, policy in enumerate(policies):
            self.weights[i, :policy.params.size] = policy.params
        self.staged = np.zeros((len(policies), lib.emu_staged_floats()), np.float32)
        lib.emu_match_stage(len(policies), _p(self.weights), ctypes.c_int64(stride), _p(self.staged))
        self.slots = np.zeros((n, lib.emu_slot_size()), np.uint8)
        self.levels = np.repeat(np.asarray(levels, np.int32), games)
        self.game_weights = np.repeat(np.asarray(rows, np.int32), games)
        self.game_obs = np.zeros((n, AGENTS, 8), np.float32)
        self.starts = np.ones(n * AGENTS, np.float32)
        self.state = np.zeros((spec.layers, n * AGENTS, spec.hidden), np.float32)
        self.actions = np.zeros(n * AGENTS, np.int32)
        self.scores = np.full(n, np.nan, np.float32)
        self.game_steps = np.zeros(n, np.int32)
        self.remaining = np.array([n], np.int32)
        self.key = ref.sampling_key(seed)
        seeds = (np.uint64(seed) << np.uint64(32)) + np.tile(np.arange(games, dtype=np.uint64), len(levels))
        lib.emu_match_reset(n, _p(self.slots), _p(seeds), _p(self.levels), _p(self.game_obs))

    def play(self, first_step, steps, deterministic, games_per_block, shared_policies):
        threads = 32 * AGENTS * -(-games_per_block // self.lib.emu_rows_per_warp()) * self.lib.emu_slices()
        blocks = (self.n // self.games) * -(-self.games // games_per_block)
        self.lib.emu_match_play(
            blocks, threads, self.n, self.games, games_per_block, shared_policies, _p(self.slots), _p(self.weights),
            ctypes.c_int64(self.weights.shape[1]), _p(self.staged), _p(self.game_weights), _p(self.levels),
            _p(self.game_obs), _p(self.starts), _p(self.state), _p(self.actions), _p(self.scores),
            _p(self.game_steps), _p(self.remaining), ctypes.c_uint64(self.key),
            ctypes.c_int64(first_step), steps, int(deterministic), MAX_STEPS)

    def play_out(self, deterministic, games_per_block, shared_policies, steps):
        first = 0
        while self.remaining[0] > 0:
            self.play(first, steps, deterministic, games_per_block, shared_policies)
            first += steps
            assert first < 5000, "games that never end"
        return self.scores.astype(np.float64).reshape(-1, self.games)


@pytest.mark.parametrize("latest_prob", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("count", [1, 5])
def test_the_kernels_opponent_draws_are_draw_opponents(lib, latest_prob, count):
    """selfplay.cu's draw_opponent reads the pool table the trainer writes (members, latest_prob's bits, the
    members' pool slots oldest first, free slots after) and draws selfplay.draw_opponents' slots game for game, at a
    reset (step -1) and later steps: the newest member with probability latest_prob, else one of all uniformly."""
    games, slots = 3000, 8
    members = [6, 2, 7, 0, 4][:count]
    table = np.full(2 + slots, 99, np.int32)  # slots after the members hold no member
    table[0], table[1] = count, np.float32(latest_prob).view(np.int32)
    table[2:2 + count] = members
    _, pool_key = selfplay_keys(ref.sampling_key(8))
    for step in (-1, 0, 37):
        got = np.zeros(games, np.int32)
        lib.emu_draw_opponents(games, _p(table), ctypes.c_uint64(pool_key), ctypes.c_int64(step), _p(got))
        want = draw_opponents(pool_key, np.arange(games), games, step, members, latest_prob)
        assert np.array_equal(got, want)
        share = np.mean(got == members[-1])
        assert abs(share - (latest_prob + (1 - latest_prob) / count)) < 0.04
        assert set(got) == ({members[-1]} if latest_prob == 1.0 else set(members))


def test_the_self_play_step_plays_the_learners_seat_as_the_cpu_games(lib):
    """selfplay_step_kernel against a CPU batch of the same Pong games fed the same actions: the learner's action
    is the counter-uniform draw from its decoder row (plus bias) at its seat (g + seat_offset) % A, the opponents'
    actions fill the other seats; the rollout gets the learner seat's obs, reward (train.reward_clamp on), done and
    start flags, the games' obs every seat's; at a game's end the opponent rows start, the episode (its return,
    length and stats) and the learner's score are counted and the game draws its next opponent (draw_opponent at that step)."""
    n, a_count, seat_offset, reward_clamp = 10, 3, 1, 1
    batch = games_batch(Config.of(load_config("pong", {"env": {"points": 1}})), n, pong_bot=0)
    try:
        seeds = (np.uint64(5) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
        batch.reset(seeds, None)
        slots = np.zeros((n, lib.emu_slot_size()), np.uint8)
        game_obs = np.zeros((n, AGENTS, 8), np.float32)
        lib.emu_match_reset(n, _p(slots), _p(seeds), _p(np.full(n, -1, np.int32)), _p(game_obs))
        assert np.array_equal(game_obs, batch.obs)
        key, (_, pool_key) = ref.sampling_key(3), selfplay_keys(ref.sampling_key(3))
        members = [4, 1, 6]
        table = np.array([3, np.float32(0.25).view(np.int32), *members, 99], np.int32)
        learner = (np.arange(n) + seat_offset) % AGENTS
        scalars = np.zeros((), SCALARS_DTYPE)
        final_obs, terminated, truncated = np.zeros((n, AGENTS, 8), np.float32), *np.zeros((2, n), np.uint8)
        ep_return, ep_length = np.zeros((n, AGENTS), np.float32), np.zeros(n, np.int32)
        ep_stats = np.zeros((n, 8), np.float32)
        episode_acc, selfplay_acc = np.zeros(3 + 8 + AGENTS), np.zeros(2)
        obs, starts = np.zeros((2, n, 8), np.float32), np.zeros((2, n), np.float32)
        actions, logp, values, rewards, dones = (np.zeros(n, t) for t in (np.int32, *[np.float32] * 4))
        opp_starts, game_weights = np.full(n, 5.0, np.float32), np.full(n, -1, np.int32)
        rng, games, score_sum, episodes = np.random.default_rng(21), 0, 0.0, []
        lengths, stats = 0, np.zeros(len(batch.env.stat_names))
        for step in range(400):
            scalars["rollout_steps"] = step
            y = (rng.standard_normal((n, a_count + 1)) * 2).astype(np.float32)
            bias = rng.standard_normal(a_count + 1).astype(np.float32)
            opp = rng.integers(0, a_count, n).astype(np.int32)
            lib.emu_selfplay_step(
                n, _p(y), _p(bias), _p(slots), _p(final_obs), _p(terminated), _p(truncated), _p(ep_return),
                _p(ep_length), _p(ep_stats), _p(episode_acc), _p(np.frombuffer(scalars.tobytes(), np.uint8).copy()),
                ctypes.c_uint64(key), reward_clamp, _p(obs), _p(starts), _p(actions), _p(logp), _p(values),
                _p(rewards), _p(dones), _p(game_obs), _p(opp), _p(opp_starts), _p(game_weights), _p(table),
                _p(selfplay_acc), ctypes.c_uint64(pool_key), seat_offset)
            want, want_logp = ref.sample_actions(y[:, :a_count] + bias[:a_count], ref.policy_uniforms(key, n, step))
            assert np.array_equal(actions, want) and np.abs(logp - want_logp).max() < 1e-5
            assert np.array_equal(values, y[:, a_count] + bias[a_count])
            full = np.where(np.arange(AGENTS)[None] == learner[:, None], want[:, None], opp[:, None])
            batch.step(full.astype(np.int64))
            assert np.array_equal(game_obs, batch.obs), step
            assert np.array_equal(obs[1], batch.obs[np.arange(n), learner])
            seat_rewards = batch.rewards[np.arange(n), learner]
            assert np.array_equal(rewards, np.clip(seat_rewards, -1, 1))
            done = batch.terminated | batch.truncated
            assert np.array_equal(dones, done.astype(np.float32)) and np.array_equal(starts[1], dones)
            assert np.array_equal(opp_starts, dones)
            if done.any():
                games += int(done.sum())
                score_sum += game_scores(batch.episode_return[done], learner[done]).sum()
                episodes += list(batch.episode_return[done, learner[done]])
                lengths += int(batch.episode_length[done].sum())
                stats += batch.episode_stats[done].sum(0)
                ends = np.flatnonzero(done)
                assert np.array_equal(game_weights[ends], draw_opponents(pool_key, ends, n, step, members, 0.25))
        assert games >= n and selfplay_acc[0] == games and selfplay_acc[1] == score_sum
        assert episode_acc[0] == games and episode_acc[1] == pytest.approx(sum(episodes))
        assert episode_acc[2] == lengths and np.array_equal(episode_acc[3:3 + len(stats)], stats)  # lengths, stats
        assert stats.min() > 0 and not episode_acc[3 + len(stats):].any()
        assert 0 < score_sum < games and (game_weights >= 0).all()
    finally:
        batch.close()


def test_one_step_equals_the_thread_forward(lib):
    """From fresh games with random MinGRU states and start flags: match_play_kernel's actions (sampled) and new
    states equal pool_forward_kernel's, bit for bit (hidden 48: a warp of 32 units and one of 16, a partial
    32-row block of the staged matrices; a partial block of games)."""
    a, b = random_policy(1, "a"), random_policy(2, "b", scale=1.5)
    rng = np.random.default_rng(0)
    fused = EmulatedMatches(lib, [a, b], [-1], [1], 13, seed=3)
    fused.starts[:] = (rng.random(fused.starts.size) < 0.4).astype(np.float32)
    fused.state[:] = rng.normal(0, 1, fused.state.shape).astype(np.float32)
    starts, state0 = fused.starts.copy(), fused.state.copy()
    thread_state, thread_actions = state0.copy(), np.zeros_like(fused.actions)
    lib.emu_pool_forward(fused.n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                         _p(fused.game_weights), _p(fused.game_obs), _p(starts), _p(thread_state),
                         _p(thread_actions), ctypes.c_uint64(fused.key), ctypes.c_int64(7))
    fused.play(7, 1, False, 4, 2)
    np.testing.assert_array_equal(fused.actions, thread_actions)
    np.testing.assert_array_equal(fused.state, thread_state)
    assert len(np.unique(thread_actions)) == 3 and not np.array_equal(thread_state, state0)


def test_scores_equal_the_cpu_games(lib):
    """Deterministic play of three bot levels and two past selves in one batch (6 games each, 4 a block: partial
    blocks; 16 steps a launch: the states carried between launches) gives play_bot's and play_match's scores."""
    config = load_config("pong", {"env": {"points": 1}, "policy": {"kind": "mingru", "hidden": 48, "layers": 2}})
    a, b, c = random_policy(1, "a"), random_policy(2, "b", scale=1.0), random_policy(3, "c")
    levels = [0, 2, 4]
    fused = EmulatedMatches(lib, [a, b, c], levels + [-1, -1], [0, 0, 0, 1, 2], 6, seed=9)
    scores = fused.play_out(True, 4, 2, 16)
    for i, level in enumerate(levels):
        np.testing.assert_array_equal(scores[i], play_bot(config, a, level, 6, seed=9, deterministic=True))
    for i, opponent in enumerate([b, c]):
        np.testing.assert_array_equal(scores[3 + i], play_match(config, a, opponent, 6, seed=9, deterministic=True))
    assert fused.game_steps.min() > 0 and len(set(scores.ravel().tolist())) > 1


MLP_SPEC = ref.PolicySpec(obs_size=8, num_actions=3, kind="mlp", hidden=48, layers=2)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    return build(tmp_path_factory, MLP_SPEC)


def test_an_mlp_policys_step_equals_the_thread_forward(mlp):
    """With an MLP policy (ReLU layers, no state): match_play_kernel's sampled actions of one step from games some
    steps in equal pool_forward_kernel's, row for row."""
    a, b = random_policy(8, "a", spec=MLP_SPEC), random_policy(9, "b", scale=1.5, spec=MLP_SPEC)
    fused = EmulatedMatches(mlp, [a, b], [-1], [1], 24, seed=5)
    fused.play(0, 30, False, 4, 2)  # games some steps in: varied observations
    starts, thread_actions = fused.starts.copy(), np.zeros_like(fused.actions)
    mlp.emu_pool_forward(fused.n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                         _p(fused.game_weights), _p(fused.game_obs), _p(starts), _p(fused.state.copy()),
                         _p(thread_actions), ctypes.c_uint64(fused.key), ctypes.c_int64(30))
    fused.play(30, 1, False, 4, 2)
    np.testing.assert_array_equal(fused.actions, thread_actions)
    assert len(np.unique(thread_actions)) == 3


def test_an_mlp_policys_scores_equal_the_cpu_games(mlp):
    """The same for an MLP policy (policy.kind="mlp": no recurrent state, one weight block a layer): deterministic
    play against a bot and a past self gives play_bot's and play_match's scores."""
    spec = MLP_SPEC
    config = load_config("pong", {"env": {"points": 1}, "policy": {"kind": "mlp", "hidden": 48, "layers": 2}})
    a, b = random_policy(6, "a", spec=spec), random_policy(7, "b", scale=1.0, spec=spec)
    fused = EmulatedMatches(mlp, [a, b], [2, -1], [0, 1], 3, seed=4)
    scores = fused.play_out(True, 2, 2, 64)
    np.testing.assert_array_equal(scores[0], play_bot(config, a, 2, 3, seed=4, deterministic=True))
    np.testing.assert_array_equal(scores[1], play_match(config, a, b, 3, seed=4, deterministic=True))
    assert fused.game_steps.min() > 0 and len(set(scores.ravel().tolist())) > 1


def test_sampled_scores_depend_on_neither_grid_nor_launches(lib):
    """Sampled play: the same scores and step counts with 1, 3 or 5 games a block (5: two groups of rows a seat
    role), the weights in shared or global memory, 5, 7 or 1000 steps a launch; a match's scores are the same
    alone as beside other matches."""
    a, b = random_policy(4, "a"), random_policy(5, "b", scale=1.0)
    runs = []
    for games_per_block, shared, steps in [(3, 2, 1000), (1, 0, 5), (5, 2, 7)]:
        fused = EmulatedMatches(lib, [a, b], [1, -1], [0, 1], 5, seed=2)
        runs.append((fused.play_out(False, games_per_block, shared, steps), fused.game_steps.copy()))
    for scores, steps in runs[1:]:
        np.testing.assert_array_equal(scores, runs[0][0])
        np.testing.assert_array_equal(steps, runs[0][1])
    alone = EmulatedMatches(lib, [a, b], [-1], [1], 5, seed=2)
    np.testing.assert_array_equal(alone.play_out(False, 2, 2, 1000)[0], runs[0][0][1])


def test_play_layout_fills_the_sms_with_every_block_resident():
    """H200-like limits: 8 matches of 64 games with two 99 KB policies a block take 4 games a block (128 blocks,
    one an SM); bot matches only (one policy) fit two blocks an SM; policies too large for shared memory are read
    from global memory."""
    h200 = dict(sm_count=132, shared_per_block=232448, shared_per_sm=233472)
    hidden64 = dict(group_floats=4 * (2 * 64 + 3), game_floats=2 * 8 + 2 + 1, agents=2, rows_per_warp=4, slices=2)
    assert play_layout(8, 64, True, 24768, **hidden64, **h200)[:3] == (4, 2, 128)
    assert play_layout(5, 256, False, 24768, **hidden64, **h200)[:2] == (5, 1)
    hidden128 = {**hidden64, "group_floats": 4 * (2 * 128 + 3), "slices": 4}
    assert play_layout(8, 64, True, 98688, **hidden128, **h200)[1] == 0


def test_against_a_bot_the_learners_seat_steps_as_the_thread_forward(lib):
    """Bot matches (levels 1 and 3, 5 games each, 2 a block), deterministic play some steps in: the learner's seat
    (seat 0 in a bot game) takes the thread forward's argmax action and carries its MinGRU state, row for row; the
    bot's seat is the env's, so its rows are neither written nor read."""
    a = random_policy(11, "a")
    fused = EmulatedMatches(lib, [a], [1, 3], [0, 0], 5, seed=6)
    fused.play(0, 25, True, 2, 1)
    assert fused.remaining[0] == fused.n  # every game still on: the next step is each game's
    starts, state = fused.starts.copy(), fused.state.copy()
    thread_actions = np.zeros_like(fused.actions)
    lib.emu_pool_forward_mode(fused.n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                              _p(fused.game_weights), _p(fused.game_obs), _p(starts), _p(state), _p(thread_actions),
                              ctypes.c_uint64(fused.key), ctypes.c_int64(25), 1)
    before = fused.state.copy()
    fused.play(25, 1, True, 2, 1)
    np.testing.assert_array_equal(fused.actions[0::AGENTS], thread_actions[0::AGENTS])
    np.testing.assert_array_equal(fused.state[:, 0::AGENTS], state[:, 0::AGENTS])
    np.testing.assert_array_equal(fused.state[:, 1::AGENTS], before[:, 1::AGENTS])  # the bot's rows: untouched
    assert len(np.unique(thread_actions[0::AGENTS])) > 1 and not np.array_equal(fused.state, before)


def test_each_launch_leaves_the_games_obs_and_slots_where_the_cpu_games_are(lib):
    """match_play_kernel a step a launch (partial blocks of 4 games): after each launch game_obs holds every
    seat's obs of a CPU batch of the same Pong games fed the actions it played, so the next launch carries on
    from the games' real positions (the obs and slots written back at a launch's end)."""
    config = Config.of(load_config("pong", {"env": {"points": 1}}))
    a, b = random_policy(1, "a"), random_policy(2, "b", scale=1.5)
    games, seed = 7, 4
    fused = EmulatedMatches(lib, [a, b], [-1], [1], games, seed=seed)
    batch = games_batch(config, games, pong_bot=0)
    try:
        batch.reset((np.uint64(seed) << np.uint64(32)) + np.arange(games, dtype=np.uint64), None)
        assert np.array_equal(fused.game_obs, batch.obs)
        start = fused.game_obs.copy()
        for step in range(6):
            fused.play(step, 1, False, 4, 2)
            batch.step(fused.actions.reshape(games, AGENTS).astype(np.int64))
            assert not (batch.terminated | batch.truncated).any()
            assert np.array_equal(fused.game_obs, batch.obs), step
        assert not np.array_equal(fused.game_obs, start) and len(np.unique(fused.actions)) > 1
    finally:
        batch.close()


@pytest.mark.parametrize("rows,horizon,t", [(5, 4, 0), (5, 4, 1), (5, 4, 3), (5, 4, 4), (1, 1, 0), (1, 1, 1)])
def test_step_slices_are_step_ts_rows_of_the_rollout_slots_buffers(lib, rows, horizon, t):
    """rollout_common.cu's step_slices (the self-play step's and the fused rollouts' slices): step t's obs at float
    t * R * O of the (T + 1, R, O) obs buffer and its start flags at t * R of (T + 1, R); the env step's next obs
    and start flags a step later; actions, logp, values, rewards and dones at t * R of their (T, R) buffers; the
    state written to the live state, except at the bootstrap step t = T (last_state); no masks."""
    out = np.zeros(11, np.int64)
    lib.emu_step_slices(rows, horizon, t, _p(out))
    o = SPEC.obs_size
    assert out.tolist() == [t * rows * o, t * rows, int(t == horizon), (t + 1) * rows * o, t * rows, t * rows,
                            t * rows, t * rows, t * rows, (t + 1) * rows, -1]


def test_the_thread_kernels_cover_every_block_of_games(lib):
    """Over more games than one block of each launch holds (match_reset_kernel and selfplay_step_kernel 256
    threads a block, pool_forward_kernel 128 rows): every game is reset as the CPU batch's, every row's thread
    forward equals match_play_kernel's step and every game is stepped as the CPU batch fed the same actions."""
    n, a_count = 300, 3
    a, b = random_policy(1, "a"), random_policy(2, "b", scale=1.5)
    fused = EmulatedMatches(lib, [a, b], [-1], [1], n, seed=6)  # match_reset_kernel over n games
    batch = games_batch(Config.of(load_config("pong", {"env": {"points": 1}})), n, pong_bot=0)
    try:
        seeds = (np.uint64(6) << np.uint64(32)) + np.arange(n, dtype=np.uint64)
        batch.reset(seeds, None)
        assert np.array_equal(fused.game_obs, batch.obs) and len({o.tobytes() for o in batch.obs}) > n // 2
        thread_state, thread_actions = fused.state.copy(), np.zeros_like(fused.actions)
        lib.emu_pool_forward(n * AGENTS, AGENTS, _p(fused.weights), ctypes.c_int64(fused.weights.shape[1]),
                             _p(fused.game_weights), _p(fused.game_obs), _p(fused.starts.copy()), _p(thread_state),
                             _p(thread_actions), ctypes.c_uint64(fused.key), ctypes.c_int64(0))
        fused.play(0, 1, False, 4, 2)
        np.testing.assert_array_equal(thread_actions, fused.actions)
        np.testing.assert_array_equal(thread_state, fused.state)

        # selfplay_step_kernel: the learner's seat (g + 1) % 2 draws from random decoder rows, the other seat
        # plays the given opponent action
        rng, key, (_, pool_key) = np.random.default_rng(8), ref.sampling_key(2), selfplay_keys(ref.sampling_key(2))
        slots, game_obs = np.zeros((n, lib.emu_slot_size()), np.uint8), np.zeros((n, AGENTS, 8), np.float32)
        lib.emu_match_reset(n, _p(slots), _p(seeds), _p(np.full(n, -1, np.int32)), _p(game_obs))
        batch.reset(seeds, None)
        learner = (np.arange(n) + 1) % AGENTS
        scalars = np.zeros((), SCALARS_DTYPE)
        final_obs, terminated, truncated = np.zeros((n, AGENTS, 8), np.float32), *np.zeros((2, n), np.uint8)
        ep_return, ep_length = np.zeros((n, AGENTS), np.float32), np.zeros(n, np.int32)
        ep_stats = np.zeros((n, 8), np.float32)
        episode_acc, selfplay_acc = np.zeros(3 + 8 + AGENTS), np.zeros(2)
        obs, starts = np.zeros((2, n, 8), np.float32), np.zeros((2, n), np.float32)
        actions, logp, values, rewards, dones = (np.zeros(n, t) for t in (np.int32, *[np.float32] * 4))
        opp_starts, game_weights = np.zeros(n, np.float32), np.full(n, -1, np.int32)
        table = np.array([1, np.float32(0.5).view(np.int32), 0, 99], np.int32)
        for step in range(3):
            scalars["rollout_steps"] = step
            y = (rng.standard_normal((n, a_count + 1)) * 2).astype(np.float32)
            opp = rng.integers(0, a_count, n).astype(np.int32)
            lib.emu_selfplay_step(
                n, _p(y), None, _p(slots), _p(final_obs), _p(terminated), _p(truncated), _p(ep_return),
                _p(ep_length), _p(ep_stats), _p(episode_acc), _p(np.frombuffer(scalars.tobytes(), np.uint8).copy()),
                ctypes.c_uint64(key), 0, _p(obs), _p(starts), _p(actions), _p(logp), _p(values),
                _p(rewards), _p(dones), _p(game_obs), _p(opp), _p(opp_starts), _p(game_weights), _p(table),
                _p(selfplay_acc), ctypes.c_uint64(pool_key), 1)
            want, _ = ref.sample_actions(y[:, :a_count], ref.policy_uniforms(key, n, step))
            assert np.array_equal(actions, want), step
            batch.step(np.where(np.arange(AGENTS)[None] == learner[:, None], want[:, None], opp[:, None]))
            assert np.array_equal(game_obs, batch.obs), step
            assert np.array_equal(obs[1], batch.obs[np.arange(n), learner]), step
    finally:
        batch.close()
