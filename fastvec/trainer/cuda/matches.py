"""Self-play's evaluation games on the GPU: every bot level and past self of one evaluation in one batch of
games, played by selfplay.cu's match_play_kernel (a block per few games of one match, the policies in its
shared memory, many steps a launch) until every game has a score. selfplay.play_match and play_bot are the CPU
versions, with the same seats, seeds and scores."""

from __future__ import annotations

import time

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.device import module_int
from fastvec.trainer.cuda.kernel_args import MatchPlayArgs, pack
from fastvec.trainer.cuda.plan import policy_defines, pool_row_floats
from fastvec.trainer.resolve import env_build
from fastvec.trainer.settings import Config

# The arena arrays match_play_kernel reads and writes, in MatchPlayArgs' order.
MATCH_PLAY_ARRAYS = ("slots", "weights", "staged", "game_weights", "bot_levels", "game_obs", "starts", "state",
                     "actions", "scores", "game_steps", "remaining")
PLAY_STEPS = 1024  # game steps a match_play_kernel launch plays at most: the host looks at the scores between launches
BLOCK_SHARED_RESERVED = 1024  # bytes of shared memory the driver keeps per block (sm_80 and later)


def play_layout(matches: int, games: int, opponent: bool, staged_floats: int, group_floats: int, game_floats: int,
                agents: int, rows_per_warp: int, slices: int, sm_count: int, shared_per_block: int, shared_per_sm: int,
                threads_per_sm: int = 2048, blocks_per_sm: int = 32) -> tuple[int, int, int, int]:
    """match_play_kernel's grid for `matches` matches of `games` games: (games a block, policies a block keeps
    in shared memory (0: it reads them from global memory), threads a block, dynamic shared bytes). A block has
    a group of `slices` warps for each seat role of every `rows_per_warp` games. The fewest games a block (the
    most SMs at work, each step's time set by the busiest SM) for which every block is resident at once: a
    block that waits for another's SM would play its games after that block's."""
    policies = 2 if opponent else 1
    layout = None
    for per_block in range(1, games + 1):
        groups = agents * -(-per_block // rows_per_warp)
        if 32 * groups * slices > 1024:
            break
        scratch = 4 * (groups * group_floats + per_block * game_floats + 1)
        in_shared = policies if 4 * policies * staged_floats + scratch <= shared_per_block else 0
        shared = 4 * in_shared * staged_floats + scratch
        layout = (per_block, in_shared, 32 * groups * slices, shared)
        resident = min(shared_per_sm // (shared + BLOCK_SHARED_RESERVED), threads_per_sm // (32 * groups * slices),
                       blocks_per_sm)
        if matches * -(-games // per_block) <= sm_count * resident:
            break
    return layout


class MatchBatch:
    """One module's games: matches of `games` games each, game g = match g // games; levels[m] >= 0: the bot at
    that level, else the policy in weights row rows[m] (1 + its index among the opponents)."""

    def __init__(self, owner: "GpuMatches", module, env_config: Config, levels: list[int], rows: list[int],
                 weights: np.ndarray, games: int, seed: int, deterministic: bool):
        cuda, spec = owner.cuda, owner.spec
        self.cuda, self.stream = cuda, owner.stream
        self.k = k = device.Launcher(module, owner.stream)
        agents, o = module_int(cuda, module, "fv_num_agents"), spec.obs_size
        n = games * len(levels)
        self.num_games, self.games = n, games
        _, _, max_steps = env_build(env_config, None)
        self.max_steps = max_steps
        staged = module_int(cuda, module, "match_staged_floats")
        a = self.arena = Arena()  # (N,) games, (N * A,) seats
        a.add("slots", (n, module_int(cuda, module, "fv_slot_size")), np.uint8, "(N, sizeof(fv_slot))")
        a.add("seeds", (n,), np.uint64, "(N,) reset seeds")
        a.add("bot_levels", (n,), np.int32, "(N,) the bot's level, -1: a policy opponent")
        a.add("weights", weights.shape, np.float32, "(1 + opponents, P4) the player's, the opponents'")
        a.add("staged", (weights.shape[0], staged), np.float32, "(1 + opponents, MATCH_STAGED) as match_play reads")
        a.add("game_weights", (n,), np.int32, "(N,) the opponent's row of weights")
        a.add("game_obs", (n, agents, o), np.float32, "(N, A, O) OBS_T elements")
        a.add("starts", (n * agents,), np.float32, "(N * A,)")
        a.add("state", (max(spec.state_layers, 1), n * agents, spec.hidden), np.float32, "(Ls, N * A, H)")
        a.add("actions", (n * agents,), np.int32, "(N * A,) the last step's actions")
        a.add("scores", (n,), np.float32, "(N,) the player's score at the game's first end, NaN before")
        a.add("game_steps", (n,), np.int32, "(N,) the steps to the game's first end")
        a.add("remaining", (1,), np.int32, "games without a score")
        a.allocate(cuda)
        try:
            local = np.tile(np.arange(games, dtype=np.uint64), len(levels))
            a.set(cuda, "seeds", (np.uint64(seed) << np.uint64(32)) + local)
            a.set(cuda, "bot_levels", np.repeat(np.asarray(levels, np.int32), games))
            a.set(cuda, "weights", weights)
            a.set(cuda, "game_weights", np.repeat(np.asarray(rows, np.int32), games))
            a.set(cuda, "starts", np.ones(n * agents, np.float32))
            a.set(cuda, "scores", np.full(n, np.nan, np.float32))
            a.set(cuda, "remaining", np.array([n], np.int32))
            k.launch("match_reset_kernel", n, np.int32(n), a.ptr("slots"), a.ptr("seeds"), a.ptr("bot_levels"),
                     a.ptr("game_obs"))
            k.launch("match_stage_kernel", weights.shape[0] * staged, np.int32(weights.shape[0]), a.ptr("weights"),
                     np.int64(weights.shape[1]), a.ptr("staged"))
            dev = cuda.Context.get_device()
            attribute = cuda.device_attribute
            self.layout = play_layout(len(levels), games, any(level < 0 for level in levels), staged,
                                      module_int(cuda, module, "match_group_floats"),
                                      module_int(cuda, module, "match_game_floats"), agents,
                                      module_int(cuda, module, "match_rows_per_warp"),
                                      module_int(cuda, module, "match_slices"),
                                      dev.get_attribute(attribute.MULTIPROCESSOR_COUNT),
                                      dev.get_attribute(attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                                      dev.get_attribute(attribute.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR))
            self.blocks = len(levels) * -(-games // self.layout[0])
            k.function("match_play_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                          self.layout[3])
            self.key, self.deterministic, self.stride = ref.sampling_key(seed), deterministic, weights.shape[1]
        except BaseException:
            self.close()
            raise

    def play(self, first_step: int, steps: int = PLAY_STEPS) -> None:
        """Queue steps first_step .. first_step + steps - 1 of the games without a score."""
        a, (per_block, in_shared, threads, shared) = self.arena, self.layout
        args = MatchPlayArgs(*(a.ptr(name) for name in MATCH_PLAY_ARRAYS), stride=self.stride, key=self.key,
                             first_step=first_step, num_games=self.num_games, games_per_match=self.games,
                             games_per_block=per_block, shared_policies=in_shared, steps=steps,
                             deterministic=int(self.deterministic), max_episode_steps=self.max_steps)
        self.k.launch_shared("match_play_kernel", self.blocks * threads, threads, shared, pack(args))

    def remaining(self) -> int:
        return int(self.arena.get(self.cuda, "remaining")[0])

    def steps(self) -> int:
        """The steps of the longest scored game."""
        return int(self.arena.get(self.cuda, "game_steps").max(initial=0))

    def scores(self) -> np.ndarray:
        return self.arena.get(self.cuda, "scores").astype(np.float64)

    def close(self) -> None:
        self.stream.synchronize()
        if self.arena.allocation is not None:
            self.arena.allocation.free()


class GpuMatches:
    """Evaluation games on the GPU for policies of architecture `spec`: evaluate() plays a player against every
    given bot level and opponent at once; play_match / play_bot (selfplay.py's signatures) play one. The env's
    builds (the bot level a per-game value where the env allows it, else one build a level) are compiled on
    first use and kept."""

    def __init__(self, spec: ref.PolicySpec):
        self.spec = spec
        self.layout = ref.FlatLayout(ref.param_table(spec))
        self.stride = pool_row_floats(self.layout)
        self.modules: dict = {}
        self.cuda = device.init()
        self.stream = self.cuda.Stream()
        self.last_steps = 0  # game steps the last evaluate() took: its longest game's, to its first end
        self.history: list[dict] = []  # per evaluate(): its steps, launches, seconds, games and grid

    def module(self, env_config: Config | dict, defines: dict | None = None):
        env_config = Config.of(env_config)
        key = (tuple(sorted(env_config.to_dict()["env"].items())), tuple(sorted((defines or {}).items())))
        if key not in self.modules:
            source, env_defines, _ = env_build(env_config, None)
            env_defines.update(policy_defines(self.spec), **(defines or {}))
            self.modules[key] = device.load_module(source, tuple(sorted(env_defines.items())))
        return self.modules[key]

    def prepare(self, config: Config) -> None:
        """Compile (or load) the builds evaluate() plays the bot's games in, ahead of the first evaluation."""
        sp = config.selfplay
        if sp.bot_switch_param and sp.bot_level_param:
            self.module(config.replace("env", **{sp.bot_switch_param: 0}), {sp.bot_level_param.upper(): -1})

    def play_match(self, config: Config | dict, player, opponent, games: int, seed: int, deterministic: bool = False):
        """`player` on seat g % A of game g, `opponent` on the others; the player's score at each game's first end."""
        return self.evaluate(config, player, [], [opponent], games, seed, deterministic)[1][0]

    def play_bot(self, config: Config | dict, player, level: int, games: int, seed: int, deterministic: bool = False):
        """`player` against the env's scripted bot at `level` (a positive return wins)."""
        return self.evaluate(config, player, [level], [], games, seed, deterministic)[0][level]

    def evaluate(self, config: Config | dict, player, levels: list[int], opponents: list, games: int, seed: int,
                 deterministic: bool = False) -> tuple[dict, list]:
        """`games` games of `player` against each bot level and each opponent policy, all at once: ({level:
        scores}, [scores per opponent]), each as play_bot / play_match would return them."""
        t0, config = time.perf_counter(), Config.of(config)
        sp = config.selfplay
        two_seats = config.replace("env", **{sp.bot_switch_param: 0}) if sp.bot_switch_param else config
        weights = np.zeros((1 + len(opponents), self.stride), np.float32)
        weights[0, :self.layout.size] = player.params
        for i, opponent in enumerate(opponents):
            weights[1 + i, :self.layout.size] = opponent.params
        past = ([-1] * len(opponents), list(range(1, 1 + len(opponents))))
        plan = []  # (module, env config, levels, weight rows) of each batch
        mixed = None
        if levels:  # the bot level a per-game value: the bot's games and the past selves' in one batch
            mixed = self.module(two_seats, {sp.bot_level_param.upper(): -1})
            if not module_int(self.cuda, mixed, "match_bot_levels"):
                mixed = None
        if mixed is not None:
            plan.append((mixed, two_seats, list(levels) + past[0], [0] * len(levels) + past[1]))
        else:
            for level in levels:
                bot = config.replace("env", **{sp.bot_switch_param: 1, sp.bot_level_param: level})
                module = self.module(bot)
                if module_int(self.cuda, module, "fv_num_agents") != 1:
                    raise ConfigError(f"{sp.bot_switch_param}=1 should leave one agent per game, not "
                                      f"{module_int(self.cuda, module, 'fv_num_agents')}")
                plan.append((module, bot, [level], [0]))
            if opponents:
                plan.append((self.module(two_seats), two_seats, *past))
        batches = []
        try:
            for module, env_config, match_levels, rows in plan:
                batches.append(MatchBatch(self, module, env_config, match_levels, rows, weights, games, seed,
                                          deterministic))
            playing, launches = list(batches), 0
            while playing:
                for batch in playing:
                    batch.play(launches * PLAY_STEPS)
                self.stream.synchronize()
                launches += 1
                playing = [batch for batch in playing if batch.remaining() > 0]
                stuck = [b for b in playing if b.max_steps and launches * PLAY_STEPS > b.max_steps + PLAY_STEPS]
                if stuck:
                    raise RuntimeError(f"{stuck[0].remaining()} evaluation games have no score after "
                                       f"{launches * PLAY_STEPS} steps, past the env's step limit "
                                       f"{stuck[0].max_steps}: a bug in selfplay.cu's match_play_kernel")
            scores = np.concatenate([batch.scores() for batch in batches]) if batches else np.zeros(0)
            self.last_steps = max((batch.steps() for batch in batches), default=0)
            self.history.append({"steps": self.last_steps, "launches": launches,
                                 "seconds": round(time.perf_counter() - t0, 4), "games": int(len(scores)),
                                 "games_per_block": [batch.layout[0] for batch in batches],
                                 "policies_in_shared": [batch.layout[1] for batch in batches]})
        finally:
            for batch in batches:
                batch.close()
        by_match = scores.reshape(-1, games) if len(scores) else scores.reshape(0, games)
        return ({level: by_match[i] for i, level in enumerate(levels)},
                [by_match[len(levels) + i] for i in range(len(opponents))])
