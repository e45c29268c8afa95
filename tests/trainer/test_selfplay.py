"""Self-play (fastvec/trainer/selfplay.py): the learner's seat in the vector layout, opponents that never
change mid-game and really are the pool's policies, only learner rows in the trainer's buffers, Elo ratings
against known outcome tables and a rigged match, config errors, and the end-to-end run and --eval.opponent."""

import json

import numpy as np
import pytest

from fastvec.trainer import cli, run
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.selfplay import (EloTable, OpponentPool, Policy, SelfPlayBatch, game_scores, play_bot,
                                      play_match)

MLP = ref.PolicySpec(obs_size=8, num_actions=3, kind="mlp", hidden=4, layers=1, highway=False)


class RecordingBatch:
    """Delegates to a CpuBatch and keeps the (N, A) actions of every step()."""

    def __init__(self, inner):
        self.inner, self.steps = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def step(self, actions):
        self.steps.append(np.array(actions))
        return self.inner.step(actions)


def pong_config(**env):
    return load_config("pong", {"env": {"pong_bot": 0, "points": 1, **env}})


def random_policy(seed, label, spec=MLP, scale=1.0):
    params = ref.init_params(spec, np.random.default_rng(seed), np.float32)
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    views["dec.w"][...] = np.random.default_rng(seed + 1).normal(0, scale, views["dec.w"].shape)
    return Policy(spec, params, label)


def opponent_logits(policy, obs):
    logits, _, _, _ = ref.policy_forward(policy.spec, policy.views, obs[None], np.ones((1, len(obs)), np.float32),
                                         np.zeros((0, len(obs), policy.spec.hidden), np.float32))
    return logits[0]


def test_seats_in_the_vector_layout():
    """Game g's learner plays seat g % 2: its obs/reward/return are that seat's, its action lands there,
    and the opponent policy's actions fill the other seat."""
    games = 7
    inner = RecordingBatch(run.make_batch(pong_config(points=3), games))
    pool = OpponentPool(1, 1.0)
    pool.add(random_policy(3, "opp", scale=3.0))
    batch = SelfPlayBatch(inner, pool, (11, 12), deterministic_opponents=True)
    np.testing.assert_array_equal(batch.seat, np.arange(games) % 2)
    batch.reset(np.arange(games, dtype=np.uint64), None)
    opponent = pool.policies[pool.members[0]]
    learner_y = []
    for _ in range(30):
        before = inner.obs.copy()
        actions = np.ones((games, 1), np.int64)  # "up" for every learner
        batch.step(actions)
        sent = inner.steps[-1]
        seats = np.arange(games) % 2
        np.testing.assert_array_equal(sent[np.arange(games), seats], 1)
        other = before[np.arange(games), 1 - seats].astype(np.float32)
        np.testing.assert_array_equal(sent[np.arange(games), 1 - seats], opponent_logits(opponent, other).argmax(-1))
        np.testing.assert_array_equal(batch.obs[:, 0], inner.obs[np.arange(games), seats])
        np.testing.assert_array_equal(batch.rewards[:, 0], inner.rewards[np.arange(games), seats])
        learner_y.append(batch.obs[:, 0, 0].copy())
    # the env agrees: every learner's own (egocentric) paddle went up, whichever side it plays
    assert (learner_y[-1] > learner_y[0]).all()


def test_the_pool_never_swaps_an_opponent_mid_game():
    """Snapshots arrive every step and leave a pool of 2 at once; games still end with the opponent they
    started with, and the evicted policies they play are still the ones acting (checked action by action)."""
    games = 12
    inner = RecordingBatch(run.make_batch(pong_config(points=1), games))
    pool = OpponentPool(2, 0.5)
    pool.add(random_policy(100, "s0", scale=3.0))
    batch = SelfPlayBatch(inner, pool, (21, 22), seat_offset=1, deterministic_opponents=True)
    batch.reset(np.arange(games, dtype=np.uint64) + 50, None)
    swaps = evicted_in_use = 0
    for step in range(600):
        pool.add(random_policy(101 + step, f"s{step + 1}", scale=3.0))
        before_ids = batch.opponent.copy()
        assert set(before_ids.tolist()) <= set(pool.policies)
        evicted_in_use += len(set(before_ids.tolist()) - set(pool.members))
        obs = inner.obs.copy()
        batch.step(np.random.default_rng(step).integers(0, 3, (games, 1)))
        sent = inner.steps[-1]
        seats = (np.arange(games) + 1) % 2
        for g in range(games):  # the opponent that acted is the game's recorded opponent
            policy = pool.policies.get(int(before_ids[g]))
            if policy is None:  # pruned after this step's end: recompute from a fresh copy
                policy = random_policy(100 + int(before_ids[g]), "", scale=3.0)
            expected = opponent_logits(policy, obs[g, 1 - seats[g]][None].astype(np.float32)).argmax(-1)[0]
            assert sent[g, 1 - seats[g]] == expected
        done = inner.terminated | inner.truncated
        changed = batch.opponent != before_ids
        assert not (changed & ~done).any(), "an opponent changed in a game that did not end"
        swaps += int(changed.sum())
    assert swaps > 10 and evicted_in_use > 0  # the test exercised swaps and evictions


def test_only_learner_rows_enter_the_rollout():
    config = load_config("pong", {"env": {"num_envs": 6, "points": 1}, "selfplay": {"enabled": True},
                                  "policy": {"hidden": 8, "layers": 1},
                                  "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 32}})
    assert config["env"]["pong_bot"] == 0  # the bot switch is turned off for self-play training
    trainer = run.make_trainer(config)
    assert trainer.rows == 6 and trainer.obs.shape == (16, 6, 8)
    inner = trainer.batch.inner
    trainer.rollout()
    seats = np.arange(6) % 2
    np.testing.assert_array_equal(trainer.batch.obs[:, 0], inner.obs[np.arange(6), seats])


def test_game_scores():
    returns = np.array([[3, -3], [3, -3], [0, 0], [-1, 2]], np.float32)
    np.testing.assert_array_equal(game_scores(returns, np.array([0, 1, 1, 1])), [1, 0, 0.5, 1])


def test_elo_matches_the_logistic_formula_on_a_fixed_table():
    table = EloTable()
    table.record("a", "b", 750, 1000)  # a scores 75% against b: 400 log10(3) = 190.8 Elo apart
    table.record("b", "c", 250, 1000)  # and b 25% against c
    ratings = table.ratings()
    assert ratings["a"] - ratings["b"] == pytest.approx(400 * np.log10(3), abs=3)
    assert ratings["c"] - ratings["b"] == pytest.approx(400 * np.log10(3), abs=3)
    assert abs(ratings["a"] - ratings["c"]) < 3
    # order-independent: the same results recorded differently give the same ratings
    other = EloTable()
    for _ in range(4):
        other.record("c", "b", 187.5, 250)
        other.record("b", "a", 62.5, 250)
    for name, value in other.ratings().items():
        assert value == pytest.approx(ratings[name], abs=1e-6)


def test_elo_rises_with_wins_and_stays_finite_on_a_perfect_record():
    table = EloTable()
    table.record("learner", "bot", 5, 10)
    first = table.ratings()
    table.record("learner", "bot", 10, 10)  # then it wins everything
    second = table.ratings()
    assert second["learner"] - second["bot"] > first["learner"] - first["bot"] > -1
    table.record("learner", "bot", 100, 100)
    third = table.ratings()
    assert np.isfinite(third["learner"]) and third["learner"] > second["learner"]


def tracker_policy() -> Policy:
    """A hand-built MLP that moves its paddle toward the ball's height (obs[3] - obs[0])."""
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mlp", hidden=2, layers=1, highway=False)
    params = np.zeros(ref.FlatLayout(ref.param_table(spec)).size, np.float32)
    v = ref.FlatLayout(ref.param_table(spec)).views(params)
    v["enc.w"][0, [0, 3]] = [-1, 1]
    v["enc.w"][1, [0, 3]] = [1, -1]
    v["layer0.w"][...] = np.eye(2)
    v["dec.w"][1, 0] = v["dec.w"][2, 1] = 200  # up when the ball is above, down when below
    v["dec.b"][0] = 2
    return Policy(spec, params, "tracker")


def test_rigged_match_tracker_beats_a_random_policy_and_out_rates_it():
    config = pong_config(points=3)
    tracker = tracker_policy()
    noise = random_policy(7, "random", spec=tracker.spec, scale=0.01)
    scores = play_match(config, tracker, noise, games=24, seed=3)
    assert scores.mean() > 0.8
    reverse = play_match(config, noise, tracker, games=24, seed=4)  # from the other side
    assert reverse.mean() < 0.2
    table = EloTable()
    table.record("tracker", "random", scores.sum(), len(scores))
    table.record("random", "tracker", reverse.sum(), len(reverse))
    ratings = table.ratings()
    assert ratings["tracker"] > ratings["random"] + 200
    # against the scripted bot the tracker scores better than noise
    assert play_bot(config, tracker, 0, 16, seed=5).mean() > play_bot(config, noise, 0, 16, seed=5).mean()


def test_match_and_bot_games_start_from_the_seeds_the_gpus_match_kernel_gives_them(monkeypatch):
    """Game g of a match or a bot evaluation with seed s is reset with seed (s << 32) + g, as the GPU's
    match_reset_kernel resets it (trainer/cuda/matches.py), so both evaluators play the same games; a seed past
    2^31 is shifted in 64 bits."""
    from fastvec.trainer import selfplay

    made, make_games = [], selfplay.games_batch

    def recording_batch(*args, **kwargs):
        batch = make_games(*args, **kwargs)
        reset = batch.reset
        batch.reset = lambda seeds, mask: (made.append(np.array(seeds, np.uint64)), reset(seeds, mask))
        return batch

    monkeypatch.setattr(selfplay, "games_batch", recording_batch)
    pong = random_policy(1, "pong player")
    play_match(pong_config(points=1), pong, pong, games=5, seed=3)
    play_bot(pong_config(points=1), pong, 2, games=4, seed=2**31 + 1)
    np.testing.assert_array_equal(made[0], (np.uint64(3) << np.uint64(32)) + np.arange(5, dtype=np.uint64))
    np.testing.assert_array_equal(made[1], (np.uint64(2**31 + 1) << np.uint64(32)) + np.arange(4, dtype=np.uint64))


def test_selfplay_on_a_single_agent_env_is_a_config_error():
    config = load_config("cartpole", {"selfplay": {"enabled": True}, "env": {"num_envs": 4}})
    with pytest.raises(ConfigError, match="multi-agent"):
        run.make_trainer(config)
    with pytest.raises(ConfigError, match="bot_switch_param"):
        load_config("pong", {"selfplay": {"bot_switch_param": "no_such_param"}})
    with pytest.raises(ConfigError, match="latest_prob"):
        load_config("pong", {"selfplay": {"latest_prob": 1.5}})


def test_selfplay_run_logs_ratings_and_eval_opponent(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = cli.main(["pong", "--selfplay.enabled=true", "--train.device=cpu", "--env.num_envs=16",
                     "--env.points=1", "--policy.hidden=8", "--policy.layers=1", "--train.horizon=16",
                     "--train.bptt_horizon=16", "--train.minibatch_size=128", "--train.total_timesteps=1280",
                     "--selfplay.eval_interval=2", "--selfplay.refresh_interval=2", "--selfplay.eval_games=4",
                     "--train.checkpoint_interval=2", f"--run-dir={run_dir}"])
    assert code == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert " s of training (" in summary and " s of evaluations, " in summary and " s wall (" in summary
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = lines[-1]  # training SPS leaves the evaluations out of the seconds; the wall-clock SPS does not
    assert 0 < last["eval_time"] < last["time"] and last["sps"] > 0
    # time and eval_time are logged to the millisecond: the training seconds carry up to 1 ms of rounding, which
    # is a large share where evaluations take nearly all of a short run (a loaded machine)
    training = last["time"] - last["eval_time"]
    np.testing.assert_allclose(last["sps"], last["global_step"] / last["time"], rtol=1e-3 / last["time"] + 1e-3)
    np.testing.assert_allclose(last["train_sps"], last["global_step"] / training, rtol=1e-3 / training + 1e-3)
    rated = [m for m in lines if "selfplay/elo" in m]
    assert rated and all(f"selfplay/score_bot{level}" in rated[-1] for level in range(5))
    data = json.loads((run_dir / "ratings.json").read_text())
    assert "bot4" in data["ratings"]
    # 1,280 steps of 16 envs x 16: five updates, evaluated at every second one and at the last
    assert [h["update"] for h in data["history"]] == [2, 4, 5]
    # the last evaluation's ratings (ratings.json) are logged to one decimal
    assert rated[-1]["selfplay/elo"] == round(data["history"][-1]["elo"], 1)
    assert [rated[-1][f"selfplay/elo_bot{level}"] for level in range(5)] == \
        [round(data["ratings"][f"bot{level}"], 1) for level in range(5)]
    assert any(value != round(value) for value in data["ratings"].values())  # the decimal shows
    checkpoints = sorted((run_dir / "checkpoints").glob("*.npz"))
    capsys.readouterr()
    assert cli.main(["pong", f"--eval={checkpoints[-1]}", f"--eval.opponent={checkpoints[0]}",
                     "--eval.episodes=6"]) == 0
    out = capsys.readouterr().out
    assert "over 6 games" in out and "Elo" in out and "6 games played on the CPU in " in out


def test_the_progress_line_shows_training_sps_wall_time_and_evaluations_apart():
    from fastvec.trainer.dashboard import Dashboard
    board = Dashboard("t", 10_000_000, enabled=False)
    board._remember({"global_step": 5_000_000, "time": 12.0, "sps": 416_666.0, "update": 5, "train_sps": 2_500_000.0,
                     "eval_time": 10.0, "episode_return": 1.0}, [])
    line = board.progress_line()
    assert "2.5M SPS training" in line and "wall 0:12" in line and "eval 10.0 s" in line and "417K" not in line
    board._remember({"global_step": 5_000_000, "time": 12.0, "sps": 416_666.0, "update": 5}, [])
    assert "417K SPS" in board.progress_line() and "elapsed 0:12" in board.progress_line()


THREE_SEATS = r"""
/* three_seats.h: a 3-player test game from the env source contract: each player's reward is its action,
 * the game ends after 3 steps, and player i observes (i, step). */
#include "fastvec.h"
#define OBS_SIZE 2
#define NUM_ACTIONS 3
#define NUM_AGENTS 3
#define NUM_STATS 1
#define STAT_NAMES "steps"
#define RENDER_W 2
#define RENDER_H 2
typedef struct { int count; } State;
FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {
    (void)rng;
    s->count = 0;
    for (int i = 0; i < NUM_AGENTS; i++) { obs[2 * i] = (float)i; obs[2 * i + 1] = 0.0f; }
}
FV_FN int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, float* rewards, float* stats) {
    (void)rng;
    s->count += 1;
    for (int i = 0; i < NUM_AGENTS; i++) {
        obs[2 * i] = (float)i; obs[2 * i + 1] = (float)s->count; rewards[i] = (float)actions[i];
    }
    stats[0] = (float)s->count;
    return s->count >= 3;
}
FV_FN void env_render(const State* s, unsigned char* rgb) { (void)s; (void)rgb; }
"""


def test_any_multi_agent_env_three_seats(tmp_path):
    """Nothing in the self-play batch is Pong's: a 3-player user env gets learner seat g % 3, two opponent
    seats per game, and game scores from the returns (the learner always plays 2 vs an opponent playing 0)."""
    from fastvec.native import AUTORESET_CODES, cpu

    source = tmp_path / "three_seats.h"
    source.write_text(THREE_SEATS)
    games = 5
    inner = RecordingBatch(cpu.CpuBatch(cpu.load(source, ()), games, AUTORESET_CODES["SameStep"], None))
    spec = ref.PolicySpec(obs_size=2, num_actions=3, kind="mlp", hidden=2, layers=1, highway=False)
    stay = Policy(spec, np.zeros(ref.FlatLayout(ref.param_table(spec)).size, np.float32), "zero")
    stay.views["dec.b"][0] = 50  # always action 0
    pool = OpponentPool(3, 0.5)
    pool.add(stay)
    batch = SelfPlayBatch(inner, pool, (31, 32))
    batch.reset(np.arange(games, dtype=np.uint64), None)
    np.testing.assert_array_equal(batch.obs[:, 0, 0], np.arange(games) % 3)  # the learner's own seat index
    for _ in range(3):
        batch.step(np.full((games, 1), 2))
    seats = np.arange(games) % 3
    for sent in inner.steps:
        expected = np.zeros((games, 3), np.int64)
        expected[np.arange(games), seats] = 2
        np.testing.assert_array_equal(sent, expected)
    np.testing.assert_array_equal(batch.episode_return[:, 0], 6)
    scores, ids = batch.pop_outcomes()
    np.testing.assert_array_equal(scores, np.ones(games))


def test_finished_games_report_their_scores_and_opponents_once(tmp_path):
    """pop_outcomes gives each finished game's learner score and the pool id of the opponent it played, then
    nothing until more games end; pop_score_sums counts the games and sums their scores the same way."""
    from fastvec.native import AUTORESET_CODES, cpu

    source = tmp_path / "three_seats.h"
    source.write_text(THREE_SEATS)
    games = 8
    inner = cpu.CpuBatch(cpu.load(source, ()), games, AUTORESET_CODES["SameStep"], None)
    spec = ref.PolicySpec(obs_size=2, num_actions=3, kind="mlp", hidden=2, layers=1, highway=False)
    pool = OpponentPool(2, 0.5)
    for label in ("u1", "u2"):
        stay = Policy(spec, np.zeros(ref.FlatLayout(ref.param_table(spec)).size, np.float32), label)
        stay.views["dec.b"][0] = 50  # always action 0
        pool.add(stay)
    batch = SelfPlayBatch(inner, pool, (41, 42))
    batch.reset(np.arange(games, dtype=np.uint64), None)
    learner = np.where(np.arange(games) % 2 == 0, 2, 0)[:, None]  # even games win, odd games tie
    scores, ids = batch.pop_outcomes()
    assert scores.shape == (0,) and ids.shape == (0,) and ids.dtype.kind == "i"
    for _ in range(2):
        batch.step(learner)
    assert batch.pop_score_sums() == (0, 0.0)
    playing = batch.opponent.copy()
    assert set(playing) == {0, 1}  # both snapshots play some game
    batch.step(learner)
    scores, ids = batch.pop_outcomes()
    np.testing.assert_array_equal(scores, np.where(np.arange(games) % 2 == 0, 1.0, 0.5))
    np.testing.assert_array_equal(ids, playing)
    scores, ids = batch.pop_outcomes()
    assert scores.shape == (0,) and ids.shape == (0,)
    for _ in range(3):
        batch.step(learner)
    assert batch.pop_score_sums() == (games, games * 0.75)


def test_fastvec_train_self_plays_a_users_multi_agent_env_file(tmp_path):
    """fastvec-train PATH.h --selfplay.enabled=true: a user's 3-seat env file trains by self-play (the CPU
    trainer here; the GPU path: tests/trainer/test_selfplay_gpu.py), its training games scored from the returns."""
    source = tmp_path / "three_seats.h"
    source.write_text(THREE_SEATS)
    config = load_config(str(source), {"env": {"num_envs": 6}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                       "selfplay": {"enabled": True, "refresh_interval": 1, "eval_interval": 0},
                                       "train": {"device": "cpu", "total_timesteps": 6 * 12 * 3, "horizon": 12,
                                                 "bptt_horizon": 12, "minibatch_size": 72, "log_interval": 0.0}})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    trainer = summary["trainer"]
    assert trainer.rows == 6 and trainer.batch.agents == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sum(row["selfplay/train_games"] for row in rows) == 6 * 12 * 3 // 3  # every game lasts 3 steps
    assert [trainer.selfplay.pool.policies[p].label for p in trainer.selfplay.pool.members][-1] == "u3"


def test_an_evaluation_logs_each_score_as_the_mean_of_its_games_to_four_decimals(monkeypatch):
    """An evaluation's selfplay/score_botL is the mean score of its games against bot level L and
    selfplay/score_past the mean over the past snapshots of each one's mean, both to four decimals; the Elo table
    records every match's score sum and game count."""
    from types import SimpleNamespace

    from fastvec.trainer import selfplay
    from fastvec.trainer.settings import Config

    config = Config.of(load_config("pong", {"selfplay": {"enabled": True, "eval_past": 2}}))
    league = selfplay.SelfPlay(config)
    spec = ref.PolicySpec(obs_size=4, num_actions=3, kind="mlp", hidden=4, layers=1)
    for label in ("u0", "u2", "u4"):
        league.pool.add(Policy(spec, ref.init_params(spec, np.random.default_rng(0)), label))
    levels = selfplay.bot_levels(config)
    bot = {level: np.array([1.0, 0.0, 0.0]) if level % 2 else np.array([1.0, 0.5, 0.5]) for level in levels}
    past = [np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])]  # u4 then u2: means 1/3 and 1
    monkeypatch.setattr(selfplay, "play_all", lambda *args, **kw: (bot, past))
    trainer = SimpleNamespace(update_index=6, global_step=600, timing={})
    out = league.evaluate(trainer, Policy(spec, ref.init_params(spec, np.random.default_rng(1)), "u6"))
    assert {level: out[f"selfplay/score_bot{level}"] for level in levels} == \
        {level: 0.3333 if level % 2 else 0.6667 for level in levels}
    assert out["selfplay/score_past"] == 0.6667
    results = {(a, b): (score, games) for a, b, score, games in league.table.as_list()}
    assert results[("u6", "u4")] == (1.0, 3) and results[("u6", "u2")] == (3.0, 3)


def test_each_evaluation_plays_its_own_seed_against_the_newest_other_snapshots(monkeypatch):
    """Evaluation k (from 0) plays with seed train.seed * 1000 + k, eval_games games a match, eval.deterministic,
    every bot level and the newest selfplay.eval_past pool snapshots other than the learner itself (newest first);
    it logs the learner's and each bot's fitted Elo to one decimal. metrics() hands that evaluation out once, with
    the training games' mean score (None without games) and the pool's size."""
    from types import SimpleNamespace

    from fastvec.trainer import selfplay
    from fastvec.trainer.settings import Config

    config = Config.of(load_config("pong", {"selfplay": {"enabled": True, "eval_past": 2, "eval_games": 3},
                                            "train": {"seed": 7}, "eval": {"deterministic": True}}))
    league = selfplay.SelfPlay(config)
    spec = ref.PolicySpec(obs_size=4, num_actions=3, kind="mlp", hidden=4, layers=1)
    for label in ("u0", "u2", "u4", "u6"):
        league.pool.add(Policy(spec, ref.init_params(spec, np.random.default_rng(0)), label))
    calls = []

    def play_all(config, player, levels, opponents, games, seed, deterministic, matches):
        calls.append((player.label, [o.label for o in opponents], games, seed, deterministic))
        return ({level: np.array([1.0, 0.5, 0.0 + level / 7]) for level in levels},
                [np.array([1.0, 1.0, 0.0])] * len(opponents))

    monkeypatch.setattr(selfplay, "play_all", play_all)
    trainer = SimpleNamespace(update_index=6, global_step=600, timing={})
    out = league.evaluate(trainer, Policy(spec, ref.init_params(spec, np.random.default_rng(1)), "u6"))
    league.evaluate(trainer, Policy(spec, ref.init_params(spec, np.random.default_rng(1)), "u8"))
    assert calls == [("u6", ["u4", "u2"], 3, 7000, True), ("u8", ["u6", "u4"], 3, 7001, True)]
    ratings = EloTable()
    for a, b, score, games in league.table.as_list()[:len(selfplay.bot_levels(config)) + 2]:
        ratings.record(a, b, score, games)
    fitted = ratings.ratings()
    assert out["selfplay/elo"] == round(fitted["u6"], 1) != fitted["u6"]
    assert all(out[f"selfplay/elo_bot{level}"] == round(fitted[f"bot{level}"], 1) != round(fitted[f"bot{level}"])
               for level in selfplay.bot_levels(config))
    league.pending = out
    scores = iter([(3, 2.0), (0, 0.0)])
    league.games = SimpleNamespace(pop_score_sums=lambda: next(scores))
    first = league.metrics()
    assert first["selfplay/elo"] == out["selfplay/elo"] and first["selfplay/train_games"] == 3
    assert first["selfplay/train_score"] == 0.6667 and first["selfplay/pool"] == 4
    assert league.metrics() == {"selfplay/train_games": 0, "selfplay/train_score": None, "selfplay/pool": 4}


def test_the_ratings_plot_draws_the_history_and_the_final_fit(tmp_path, monkeypatch):
    """ratings.png (1100 x 400 pixels): the learner's Elo at each evaluation and its snapshots' final ratings over
    global steps, a line per bot rating (bots of the same rating, to one decimal, share it and one label), and each
    score series on a 0-1 axis; legends and labels in small type."""
    import matplotlib.pyplot as plt
    from PIL import Image

    from fastvec.trainer.selfplay import plot_ratings

    history = [{"update": 2, "global_step": 200, "player": "u2", "elo": 990.0, "selfplay/score_bot0": 0.25,
                "selfplay/score_bot1": 0.0},
               {"update": 4, "global_step": 400, "player": "u4", "elo": 1040.0, "selfplay/score_bot0": 0.75,
                "selfplay/score_bot1": 0.5, "selfplay/score_past": 0.5}]
    ratings = {"u2": 1000.0, "u4": 1100.0, "bot0": 950.02, "bot1": 949.98, "bot2": 1200.0}
    (tmp_path / "ratings.json").write_text(json.dumps({"ratings": ratings, "history": history, "results": []}))
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)
    path = plot_ratings(tmp_path)
    assert path == tmp_path / "ratings.png" and Image.open(path).size == (1100, 400)
    ax1, ax2 = kept[0].axes
    lines = [(list(line.get_xdata()), list(line.get_ydata())) for line in ax1.lines]
    assert lines[:2] == [([200, 400], [990.0, 1040.0]), ([200, 400], [1000.0, 1100.0])]
    assert sorted(y[0] for _, y in lines[2:]) == [950.0, 1200.0]
    assert sorted(text.get_text() for text in ax1.texts) == [" bot0,bot1", " bot2"]
    series = {line.get_label(): list(line.get_ydata()) for line in ax2.lines}
    assert series == {"vs bot0": [0.25, 0.75], "vs bot1": [0.0, 0.5], "vs past": [None, 0.5]}
    assert ax2.get_ylim() == (-0.02, 1.02)
    small = [*ax1.texts, *ax1.get_legend().get_texts(), *ax2.get_legend().get_texts()]
    assert {text.get_fontsize() for text in small} == {8}  # legends and bot labels in 8-point type


def test_elo_ratings_are_the_maximum_of_the_likelihood_times_the_prior():
    """Few games, so the N(1000, prior_sd^2) prior weighs: the fit must be the posterior mode, found here by
    scipy's optimizer on the likelihood written in Elo points directly."""
    from scipy.optimize import minimize
    results = [("a", "b", 3.0, 4), ("b", "c", 1.5, 3), ("a", "c", 2.0, 2), ("c", "a", 0.5, 2)]
    table = EloTable(prior_sd=150.0)
    for a, b, score, games in results:
        table.record(a, b, score, games)
    names = ["a", "b", "c"]

    def negative_log_posterior(r):
        total = np.sum((r - 1000.0) ** 2) / (2 * 150.0 ** 2)
        for a, b, score, games in results:
            p = 1 / (1 + 10 ** ((r[names.index(b)] - r[names.index(a)]) / 400))
            total -= score * np.log(p) + (games - score) * np.log(1 - p)
        return total

    best = minimize(negative_log_posterior, np.full(3, 1000.0), method="Nelder-Mead",
                    options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 20000}).x
    ratings = table.ratings()
    for name, value in zip(names, best):
        assert ratings[name] == pytest.approx(value, abs=1e-2)
    assert sum(ratings.values()) == pytest.approx(3000.0, abs=1e-6)  # the prior's centre holds the mean


def test_elo_fits_a_long_chain_of_lopsided_records_to_the_posterior_mode():
    """Fifty snapshots, each beating the one before in all of 10,000 games: ratings ~18,000 Elo apart at the
    ends, which the fit must still reach. Checked against the posterior's own conditions, written in Elo
    points: every rating's gradient of the log-posterior is zero, the chain's mirror image (p_k against
    p_{49-k}) is symmetric about 1000, and each snapshot out-rates the one it beat."""
    n, games, prior_sd = 50, 10_000, 400.0
    table = EloTable(prior_sd)
    for k in range(1, n):
        table.record(f"p{k}", f"p{k - 1}", games, games)
    ratings = table.ratings()
    r = np.array([ratings[f"p{k}"] for k in range(n)])
    assert np.all(np.diff(r) > 0)
    np.testing.assert_allclose(r + r[::-1], 2000.0, atol=1e-6)
    gradient = -(r - 1000.0) / prior_sd ** 2
    for k in range(1, n):  # p_k won all `games` against p_{k-1}
        p_win = 1 / (1 + 10 ** ((r[k - 1] - r[k]) / 400))
        d = np.log(10) / 400 * games * (1 - p_win)
        gradient[k] += d
        gradient[k - 1] -= d
    np.testing.assert_allclose(gradient, 0.0, atol=1e-9)


def test_a_match_on_a_one_agent_env_is_refused_before_any_game():
    """play_match seats a player and an opponent in each game: a one-agent env (CartPole) has no seat for the
    opponent, a ConfigError that names the agent count; two seats (Pong) are enough."""
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=4, layers=1, highway=False)
    player = random_policy(0, "player", spec)
    with pytest.raises(ConfigError, match="self-play needs a multi-agent env; this one has 1 agent per game"):
        play_match(load_config("cartpole"), player, player, games=2, seed=0)
    pong = random_policy(1, "pong player")
    assert play_match(pong_config(), pong, pong, games=2, seed=0).shape == (2,)
