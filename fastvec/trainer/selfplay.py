"""Self-play for multi-agent games: the learner plays one seat per game against frozen snapshots of itself
(an opponent pool), with evaluations against the env's scripted bot and past selves rated by Elo.
Nothing here knows a particular game: seats, outcomes and the bot switch come from the env and config."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from fastvec.native import ENVS
from fastvec.trainer import checkpoint
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError
from fastvec.trainer.resolve import make_batch
from fastvec.trainer.reference import policy_act
from fastvec.trainer.settings import Config

# Legend: N = games, A = agents (seats) per game, O = obs size, P = parameters.


class Policy:
    """A frozen policy: its architecture, flat parameters (a private copy) and named views of them."""

    def __init__(self, spec: ref.PolicySpec, params: np.ndarray, label: str):
        self.spec, self.label = spec, label
        self.params = np.array(params, np.float32, copy=True)
        self.views = ref.FlatLayout(ref.param_table(spec)).views(self.params)


def load_policy(path) -> Policy:
    meta, state = checkpoint.load(Path(path))
    return Policy(checkpoint.spec_of(meta), state["params"], Path(path).name)


def _update_of(label: str) -> int:
    """The update of a pool snapshot's label (u120 -> 120); 0 for other players (the bots)."""
    return int(label[1:]) if label[:1] == "u" and label[1:].isdigit() else 0


def game_scores(returns: np.ndarray, seats: np.ndarray) -> np.ndarray:
    """The score of the player at `seats` (n,) in each finished game, from the episode returns (n, A):
    1 when its return beats every other seat's, 0.5 when it ties the best, 0 otherwise."""
    mine = returns[np.arange(len(seats)), seats]
    others = returns.copy()
    others[np.arange(len(seats)), seats] = -np.inf
    best_other = others.max(1)
    return np.where(mine > best_other, 1.0, np.where(mine == best_other, 0.5, 0.0))


# selfplay.cu's second pool-draw stream (the index of a uniform draw from the pool).
POOL_SECOND_STREAM = 0x706F6F6C2D75


def selfplay_keys(seed_key: int) -> tuple[int, int]:
    """(opponents' sampling key, pool-draw key) of a learner sampling with seed_key (reference.sampling_key)."""
    return ref.splitmix64(seed_key ^ 0x4F50504F4E454E54), ref.splitmix64(seed_key ^ 0x504F4F4C)


def draw_opponents(pool_key: int, games: np.ndarray, num_games: int, step: int, members, latest_prob: float):
    """The next opponents of `games` (indices among num_games) at rollout step `step` (-1 at a reset): the
    newest of `members` (oldest first) with probability latest_prob, else one drawn uniformly; counter-based,
    selfplay.cu's draw_opponent bit for bit (float32 comparisons and products as the kernel's)."""
    u = ref.policy_uniforms(pool_key, num_games, step)[games]
    v = ref.policy_uniforms(pool_key ^ POOL_SECOND_STREAM, num_games, step)[games]
    index = np.minimum((v * np.float32(len(members))).astype(np.int64), len(members) - 1)
    return np.where(u < np.float32(latest_prob), members[-1], np.asarray(members)[index])


class OpponentPool:
    """Frozen snapshots of the learner. `members` (oldest first, at most `size`) are the ones new games
    draw from: the newest with probability latest_prob, else one uniformly (draw_opponents). A snapshot that
    leaves the pool stays alive (in `policies`) while a game still plays it, so no game changes opponent mid-game."""

    def __init__(self, size: int, latest_prob: float):
        self.size, self.latest_prob = size, latest_prob
        self.policies: dict[int, Policy] = {}
        self.members: list[int] = []
        self.next_id = 0

    def add(self, policy: Policy) -> int:
        if self.policies and policy.spec != self.policies[self.members[-1]].spec:
            raise ValueError("every policy in an opponent pool must have the same architecture")
        pid = self.next_id
        self.next_id += 1
        self.policies[pid] = policy
        self.members.append(pid)
        del self.members[:-self.size]
        return pid

    def forget(self, pid: int) -> None:
        """Take snapshot `pid` out of the pool (one no game plays yet)."""
        self.members.remove(pid)
        del self.policies[pid]

    def prune(self, in_use) -> None:
        """Forget the snapshots that left the pool and that no game plays any more."""
        keep = set(self.members) | {int(i) for i in in_use}
        for pid in [p for p in self.policies if p not in keep]:
            del self.policies[pid]

    @property
    def spec(self) -> ref.PolicySpec:
        return self.policies[self.members[-1]].spec


class SelfPlayBatch:
    """The learner's face of a multi-agent batch: looks like a one-agent batch (obs (N, 1, O), actions
    (N, 1)) to the trainer, so only the learner's rows enter its rollout buffers. Game g's learner seat is
    (g + seat_offset) % A; every other seat is played by the game's opponent from the pool, which changes
    only on the step the game ends (the batch autoresets on that step, SAME_STEP). The opponents sample and
    the games draw their opponents with counter-based uniforms (keys: selfplay_keys), so this is the host twin
    of the GPU's self-play rollout (selfplay.cu): the same learner actions give the same games."""

    def __init__(self, inner, pool: OpponentPool, keys: tuple[int, int], seat_offset: int = 0,
                 deterministic_opponents: bool = False):
        n, agents, obs_size = inner.obs.shape
        if agents < 2:
            raise ConfigError(f"self-play needs a multi-agent env; this one has {agents} agent per game")
        self.inner, self.pool = inner, pool
        self.opponent_key, self.pool_key = keys
        self.steps = 0  # env steps so far: the counter of the step's uniforms
        self.env, self.num_envs, self.agents = inner.env, n, agents
        self.deterministic_opponents = deterministic_opponents
        self.seat = (np.arange(n) + seat_offset) % agents  # (N,) the learner's seat in each game
        self.learner_mask = np.zeros((n, agents), bool)  # (N, A)
        self.learner_mask[np.arange(n), self.seat] = True
        self.opponent_mask = ~self.learner_mask  # (N, A); rows in game-major, seat order
        self.opponent = np.full(n, -1, np.int64)  # (N,) pool id playing the other seats of each game
        self.obs = np.zeros((n, 1, obs_size), inner.obs.dtype)
        self.rewards = np.zeros((n, 1), np.float32)
        self.episode_return = np.zeros((n, 1), np.float32)
        self.terminated, self.truncated = inner.terminated, inner.truncated
        self.episode_length, self.episode_stats = inner.episode_length, inner.episode_stats
        self.full_actions = np.zeros((n, agents), np.int64)
        self.opp_rows = n * (agents - 1)
        self.opp_state = None  # (Ls, N * (A - 1), H), sized by the pool's architecture at reset
        self.opp_starts = np.ones(self.opp_rows, np.float32)
        self.outcomes: list[tuple[np.ndarray, np.ndarray]] = []  # per step with ends: (scores, opponent ids)

    def gather(self) -> None:
        self.obs[:, 0] = self.inner.obs[self.learner_mask]
        self.rewards[:, 0] = self.inner.rewards[self.learner_mask]
        self.episode_return[:, 0] = self.inner.episode_return[self.learner_mask]

    def reset(self, seeds, mask) -> None:
        self.inner.reset(seeds, mask)
        games = np.ones(self.num_envs, bool) if mask is None else np.asarray(mask, bool)
        spec = self.pool.spec
        if self.opp_state is None:
            self.opp_state = np.zeros((spec.state_layers, self.opp_rows, spec.hidden), np.float32)
        self.opponent[games] = self.draw(np.flatnonzero(games), -1)
        self.opp_starts[np.repeat(games, self.agents - 1)] = 1
        self.gather()

    def draw(self, games: np.ndarray, step: int) -> np.ndarray:
        return draw_opponents(self.pool_key, games, self.num_envs, step, self.pool.members, self.pool.latest_prob)

    def step(self, actions) -> None:
        """actions (N, 1): the learner's; the opponents' come from their policies on their own obs."""
        n, agents = self.num_envs, self.agents
        self.full_actions[self.learner_mask] = np.asarray(actions).reshape(n)
        opp_obs = self.inner.obs[self.opponent_mask].astype(np.float32)  # (N * (A - 1), O)
        opp_actions = np.zeros(self.opp_rows, np.int64)
        uniforms = ref.policy_uniforms(self.opponent_key, self.opp_rows, self.steps)  # (N * (A - 1),)
        for pid in np.unique(self.opponent):
            policy = self.pool.policies[int(pid)]
            rows = np.repeat(self.opponent == pid, agents - 1)
            acts, _, _, state = policy_act(policy.spec, policy.views, opp_obs[rows], self.opp_starts[rows],
                                           self.opp_state[:, rows], None, self.deterministic_opponents, uniforms[rows])
            opp_actions[rows] = acts
            self.opp_state[:, rows] = state
        self.full_actions[self.opponent_mask] = opp_actions
        self.inner.step(self.full_actions)
        self.gather()
        done = self.inner.terminated | self.inner.truncated
        self.opp_starts[:] = np.repeat(done, agents - 1)
        if done.any():
            scores = game_scores(self.inner.episode_return[done], self.seat[done])
            self.outcomes.append((scores, self.opponent[done].copy()))
            self.opponent[done] = self.draw(np.flatnonzero(done), self.steps)  # the next game's opponent
            self.pool.prune(self.opponent)
        self.steps += 1

    def render(self, i: int):
        return self.inner.render(i)

    def sync_pool(self, pool: OpponentPool) -> None:
        """The pool changed (the GPU's games copy it to the device; these read it directly)."""

    def pop_score_sums(self) -> tuple[int, float]:
        """(games finished, sum of the learner's scores) since the last call."""
        scores, _ = self.pop_outcomes()
        return len(scores), float(scores.sum())

    def pop_outcomes(self) -> tuple[np.ndarray, np.ndarray]:
        """Scores (1 win, 0.5 tie, 0 loss) and opponent ids of the games finished since the last call."""
        scores = np.concatenate([o[0] for o in self.outcomes]) if self.outcomes else np.zeros(0)
        ids = np.concatenate([o[1] for o in self.outcomes]) if self.outcomes else np.zeros(0, np.int64)
        self.outcomes.clear()
        return scores, ids


# ----------------------------------------------------------------------------------------------
# MATCHES


def games_batch(config: Config, num_games: int, **env_overrides):
    """A CPU batch of `num_games` games of the configured env (built-in or a user's env file) with some env
    parameters overridden."""
    return make_batch(config.replace("env", **env_overrides), num_games)


def play_match(config: Config | dict, player: Policy, opponent: Policy, games: int, seed: int,
               deterministic: bool = False) -> np.ndarray:
    """`games` games at once of `player` against `opponent` (player takes seat g % A in game g, the
    opponent every other seat); returns the player's score in each game's first finish (1/0.5/0)."""
    config = Config.of(config)
    sp = config.selfplay
    overrides = {sp.bot_switch_param: 0} if sp.bot_switch_param else {}
    rng = np.random.default_rng(seed)
    pool = OpponentPool(1, 1.0)
    pool.add(opponent)
    keys = selfplay_keys(ref.sampling_key(seed))
    batch = SelfPlayBatch(games_batch(config, games, **overrides), pool, keys, 0, deterministic)
    batch.reset((np.uint64(seed) << np.uint64(32)) + np.arange(games, dtype=np.uint64), None)
    return _play(batch, player, rng, deterministic, lambda b, done: game_scores(b.inner.episode_return[done],
                                                                               b.seat[done]))


def play_bot(config: Config | dict, player: Policy, level: int, games: int, seed: int,
             deterministic: bool = False) -> np.ndarray:
    """`games` games of `player` against the env's scripted bot at `level`; the bot is the other side of
    a zero-sum game, so a positive return is a win (score 1), zero a tie (0.5), negative a loss (0)."""
    config = Config.of(config)
    sp = config.selfplay
    batch = games_batch(config, games, **{sp.bot_switch_param: 1, sp.bot_level_param: level})
    if batch.obs.shape[1] != 1:
        raise ConfigError(f"{sp.bot_switch_param}=1 should leave one agent per game, not {batch.obs.shape[1]}")
    rng = np.random.default_rng(seed)
    batch.reset((np.uint64(seed) << np.uint64(32)) + np.arange(games, dtype=np.uint64), None)
    return _play(batch, player, rng, deterministic, lambda b, done: (np.sign(b.episode_return[done, 0]) + 1) / 2)


def _play(batch, player: Policy, rng, deterministic: bool, score_fn) -> np.ndarray:
    """Step until every game has finished once; the player acts on obs[:, 0]."""
    n, spec = batch.num_envs, player.spec
    scores = np.full(n, np.nan)
    state = np.zeros((spec.state_layers, n, spec.hidden), np.float32)
    starts = np.ones(n, np.float32)
    while np.isnan(scores).any():
        actions, _, _, state = policy_act(spec, player.views, batch.obs[:, 0].astype(np.float32), starts, state,
                                          rng, deterministic)
        batch.step(actions.reshape(n, 1))
        done = batch.terminated | batch.truncated
        first = done & np.isnan(scores)
        if first.any():
            scores[first] = score_fn(batch, done)[first[done]]
        starts = done.astype(np.float32)
    return scores


def play_all(config: Config, player: Policy, levels: list[int], opponents: list[Policy], games: int, seed: int,
             deterministic: bool, matches=None) -> tuple[dict, list]:
    """`player` against each bot level and each opponent, `games` games each: ({level: scores}, [scores per
    opponent]). With `matches` (cuda/matches.py's GpuMatches) every game plays on the GPU in one batch, else
    play_bot / play_match play them on the CPU one match at a time."""
    if matches is not None:
        return matches.evaluate(config, player, levels, opponents, games, seed, deterministic)
    return ({level: play_bot(config, player, level, games, seed, deterministic) for level in levels},
            [play_match(config, player, opponent, games, seed, deterministic) for opponent in opponents])


def bot_levels(config: Config) -> list[int]:
    """The bot difficulties to evaluate against: the registered range of selfplay.bot_level_param."""
    sp = config.selfplay
    if not (sp.bot_switch_param and sp.bot_level_param):
        return []
    param = ENVS[config.env.name].params[sp.bot_level_param]
    return list(range(param.low, param.high + 1))


# ----------------------------------------------------------------------------------------------
# RATINGS


class EloTable:
    """Match results between named players and their Elo ratings, fitted jointly (Bradley-Terry maximum
    likelihood: P(a beats b) = 1 / (1 + 10^((r_b - r_a) / 400)), ties count half) with a weak prior
    (every rating ~ N(1000, prior_sd^2)) that keeps perfect records finite. Refitting all results at once
    makes the ratings independent of the order the matches were played in."""

    def __init__(self, prior_sd: float = 400.0):
        self.prior_sd = prior_sd
        self.players: list[str] = []
        self.results: dict[tuple[str, str], list[float]] = {}  # (a, b) -> [a's score, games]

    def record(self, a: str, b: str, score: float, games: int) -> None:
        for name in (a, b):
            if name not in self.players:
                self.players.append(name)
        entry = self.results.setdefault((a, b), [0.0, 0])
        entry[0] += float(score)
        entry[1] += int(games)

    def ratings(self) -> dict[str, float]:
        n = len(self.players)
        index = {name: i for i, name in enumerate(self.players)}
        wins, games = np.zeros((n, n)), np.zeros((n, n))
        for (a, b), (score, count) in self.results.items():
            i, j = index[a], index[b]
            wins[i, j] += score
            wins[j, i] += count - score
            games[i, j] += count
            games[j, i] += count
        unit = 400 / np.log(10)  # Elo points per natural log-odds
        precision = (unit / self.prior_sd) ** 2
        s = np.zeros(n)
        for _ in range(100):  # Newton on a strictly concave log-likelihood
            p = 1 / (1 + np.exp(-(s[:, None] - s[None, :])))
            grad = (wins - games * p).sum(1) - precision * s
            curv = games * p * (1 - p)
            hess = curv - np.diag(curv.sum(1) + precision)
            step = np.linalg.solve(hess, grad)
            s -= np.clip(step, -2, 2)
            if np.abs(step).max() < 1e-10:
                break
        return {name: float(1000 + unit * s[i]) for name, i in index.items()}

    def as_list(self) -> list:
        return [[a, b, score, count] for (a, b), (score, count) in self.results.items()]


# ----------------------------------------------------------------------------------------------
# THE TRAINING LOOP'S SIDE


class SelfPlay:
    """What fastvec-train adds for selfplay.enabled: wraps the env batch, snapshots the learner into the
    pool every refresh_interval updates, evaluates every eval_interval updates, and writes
    RUN_DIR/ratings.json (results, fitted ratings, and the rating history)."""

    def __init__(self, config: Config):
        self.config, self.cfg = config, config.selfplay
        self.pool = OpponentPool(self.cfg.pool_size, self.cfg.latest_prob)
        self.table = EloTable()
        self.history: list[dict] = []
        self.pending: dict = {}
        self.evaluations = 0
        self.run_dir: Path | None = None
        self.games = None  # the games' side: a SelfPlayBatch, or the GPU's self-play rollout (sync_pool, pop_score_sums)
        self.matches = None  # evaluation games on the GPU (cuda/matches.py), else play_bot/play_match on the CPU

    def wrap(self, batch, spec: ref.PolicySpec, on_gpu: bool = False):
        """The learner's batch: a SelfPlayBatch around a CPU batch, or with on_gpu the multi-agent batch itself
        (its games step in the CUDA trainer's rollout). The pool starts with the learner's own initial weights
        (the same init and seed as the trainer's) so the first games are against an untrained copy of itself."""
        init = ref.init_params(spec, np.random.default_rng(self.config.train.seed), np.float32)
        self.pool.add(Policy(spec, init, "u0"))
        if on_gpu:
            return batch
        keys = selfplay_keys(ref.sampling_key(self.config.train.seed))
        self.games = SelfPlayBatch(batch, self.pool, keys)
        return self.games

    def start(self, trainer, run_dir: Path) -> None:
        """After the trainer exists (and resumed): a resumed learner joins the pool; old results reload. With
        the games on the GPU, the pool goes to the device and the evaluations play there too."""
        self.run_dir = Path(run_dir)
        if trainer.gpu_games is not None:
            self.games = trainer.gpu_games
            self.matches = self.games.matches(self.config)
            if self.cfg.eval_interval or bot_levels(self.config):
                self.matches.prepare(self.config)  # compiled at start-up, not in the first evaluation
        if trainer.update_index > 0:
            self.pool.add(Policy(trainer.spec, trainer.params, f"u{trainer.update_index}"))
            saved = self.run_dir / "ratings.json"
            if saved.is_file():
                try:
                    data = json.loads(saved.read_text())
                    resumed = trainer.update_index  # results of updates past the checkpoint are played again
                    for a, b, score, games in data.get("results", []):
                        if all(_update_of(label) <= resumed for label in (a, b)):
                            self.table.record(a, b, score, games)
                    self.history = [h for h in data.get("history", []) if h["update"] <= resumed]
                except (OSError, ValueError, TypeError, KeyError) as err:
                    self.table, self.history = EloTable(), []
                    print(f"fastvec-train: warning: {saved} is unreadable ({type(err).__name__}); the ratings "
                          f"start over", file=sys.stderr)
        if self.games is not None:
            self.games.sync_pool(self.pool)

    def after_update(self, trainer, final: bool) -> None:
        k = trainer.update_index
        interval = self.cfg.eval_interval
        if final or (interval and k % interval == 0):
            self.pending.update(self.evaluate(trainer, Policy(trainer.spec, trainer.params, f"u{k}")))
        if k % self.cfg.refresh_interval == 0:
            self.pool.add(Policy(trainer.spec, trainer.params, f"u{k}"))
            self.games.sync_pool(self.pool)

    def evaluate(self, trainer, learner: Policy) -> dict:
        t0 = time.perf_counter()
        games, seed = self.cfg.eval_games, self.config.train.seed * 1000 + self.evaluations
        deterministic = self.config.eval.deterministic
        self.evaluations += 1
        out: dict = {}
        levels = bot_levels(self.config)
        past = [self.pool.policies[pid] for pid in reversed(self.pool.members)
                if self.pool.policies[pid].label != learner.label][:self.cfg.eval_past]
        bot_scores, match_scores = play_all(self.config, learner, levels, past, games, seed, deterministic,
                                            self.matches)
        for level in levels:
            scores = bot_scores[level]
            self.table.record(learner.label, f"bot{level}", scores.sum(), len(scores))
            out[f"selfplay/score_bot{level}"] = round(float(scores.mean()), 4)
        past_scores = []
        for opponent, scores in zip(past, match_scores):
            self.table.record(learner.label, opponent.label, scores.sum(), len(scores))
            past_scores.append(scores.mean())
        if past_scores:
            out["selfplay/score_past"] = round(float(np.mean(past_scores)), 4)
        if self.table.players:
            ratings = self.table.ratings()
            out["selfplay/elo"] = round(ratings[learner.label], 1)
            for level in bot_levels(self.config):
                out[f"selfplay/elo_bot{level}"] = round(ratings[f"bot{level}"], 1)
            self.history.append({"update": trainer.update_index, "global_step": trainer.global_step,
                                 "player": learner.label, "elo": ratings[learner.label],
                                 **{k: v for k, v in out.items() if k.startswith("selfplay/score")}})
            if self.run_dir is not None:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                checkpoint.atomic_write_text(self.run_dir / "ratings.json", json.dumps(
                    {"ratings": ratings, "history": self.history, "results": self.table.as_list()}, indent=1))
        trainer.timing["selfplay_eval"] = trainer.timing.get("selfplay_eval", 0.0) + time.perf_counter() - t0
        return out

    def metrics(self) -> dict:
        """For the next metrics.jsonl line: the latest evaluation (if new) and the learner's score in its
        training games against the pool since the last line."""
        out, self.pending = self.pending, {}
        games, total = self.games.pop_score_sums()
        out["selfplay/train_games"] = games
        out["selfplay/train_score"] = round(total / games, 4) if games else None
        out["selfplay/pool"] = len(self.pool.members)
        return out


def evaluate_checkpoints(config: Config | dict, path_a, opponent: str, on_gpu: bool = False) -> dict:
    """`fastvec-train ENV --eval=A --eval.opponent=B|bot`: A against checkpoint B (A on seat g % A of game
    g, so it plays every side), or against the scripted bot at every level; on_gpu: every game in one batch
    on the GPU (cuda/matches.py), else on the CPU. Returns scores, Elo, where the games played and the seconds
    they took (compiling included)."""
    config, a = Config.of(config), load_policy(path_a)
    games, seed = config.eval.episodes, config.train.seed + 7
    deterministic = config.eval.deterministic
    table = EloTable()
    result: dict = {"env": config.env.name, "player": str(path_a), "games": games, "matches": [],
                    "device": "cuda" if on_gpu else "cpu"}
    levels, opponents = [], []
    if opponent == "bot":
        levels = bot_levels(config)  # validate refuses eval.opponent=bot for an env without a bot
    else:
        b = load_policy(opponent)
        if (b.spec.obs_size, b.spec.num_actions) != (a.spec.obs_size, a.spec.num_actions):
            raise ConfigError(f"{opponent} plays obs {b.spec.obs_size} / {b.spec.num_actions} actions, "
                              f"{path_a} obs {a.spec.obs_size} / {a.spec.num_actions}: not the same game")
        opponents = [b]
    t0 = time.perf_counter()
    matches = None
    if on_gpu:
        from fastvec.trainer.cuda.matches import GpuMatches
        matches = GpuMatches(a.spec)
    bot_scores, match_scores = play_all(config, a, levels, opponents, games, seed, deterministic, matches)
    result["seconds"] = time.perf_counter() - t0
    named = [(f"bot{level}", f"bot level {level}", bot_scores[level]) for level in levels]
    named += [("B", str(opponent), scores) for scores in match_scores]
    for name, label, scores in named:
        table.record("A", name, scores.sum(), games)
        result["matches"].append({"opponent": label, "score": float(scores.mean()),
                                  "wins": int((scores == 1).sum()), "ties": int((scores == 0.5).sum()),
                                  "losses": int((scores == 0).sum())})
    result["elo"] = table.ratings()
    return result


def plot_ratings(run_dir, path=None) -> Path:
    """RUN_DIR/ratings.png: the learner's Elo over training steps, and its score against each bot level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    data = json.loads((run_dir / "ratings.json").read_text())
    history = data["history"]
    steps = [h["global_step"] for h in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot(steps, [h["elo"] for h in history], "o-", label="learner (at the time)")
    final = data["ratings"]
    ax1.plot(steps, [final[h["player"]] for h in history], "s--", label="learner snapshots (final fit)")
    bots: dict[float, list[str]] = {}  # bots with the same rating (e.g. all never won) share one label
    for name, rating in sorted(final.items()):
        if name.startswith("bot"):
            bots.setdefault(round(rating, 1), []).append(name)
    for rating, names in bots.items():
        ax1.axhline(rating, color="grey", lw=0.8, ls=":")
        ax1.text(steps[-1] if steps else 0, rating, " " + ",".join(names), va="bottom", fontsize=8)
    ax1.set_xlabel("global step")
    ax1.set_ylabel("Elo")
    ax1.set_title(f"self-play rating ({run_dir.name})")
    ax1.legend(fontsize=8)
    keys = sorted({k for h in history for k in h if k.startswith("selfplay/score")})
    for key in keys:
        ax2.plot(steps, [h.get(key) for h in history], label=key.split("/")[-1].replace("score_", "vs "))
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_xlabel("global step")
    ax2.set_ylabel("score (win 1, tie 0.5)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path) if path else run_dir / "ratings.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
