"""Self-play's evaluation games on the GPU: every bot level and past self of one evaluation in one batch of
games, its steps (policy, then game) captured K at a time in a CUDA graph that the host replays until every game
has a score (selfplay.cu's match kernels). selfplay.play_match and play_bot are the CPU versions, with the same
seats, seeds and scores."""

from __future__ import annotations

import numpy as np

from fastvec.native.graphs import CudaGraph
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.device import module_int
from fastvec.trainer.cuda.plan import policy_defines, pool_row_floats
from fastvec.trainer.env_batch import env_build

GRAPH_STEPS = 256  # game steps in one graph replay: the host looks at the scores between replays
MATCH_WARPS = 4  # selfplay.cu's MATCH_WARPS: match_forward_kernel's rows (a warp each) per block


class MatchBatch:
    """One module's games: matches of `games` games each, game g = match g // games; levels[m] >= 0: the bot at
    that level, else the policy in weights row rows[m] (1 + its index among the opponents)."""

    def __init__(self, owner: "GpuMatches", module, env_config: dict, levels: list[int], rows: list[int],
                 weights: np.ndarray, games: int, seed: int, deterministic: bool):
        cuda, spec = owner.cuda, owner.spec
        self.cuda, self.stream = cuda, owner.stream
        k = device.Launcher(module, owner.stream)
        agents, o = module_int(cuda, module, "fv_num_agents"), spec.obs_size
        n = games * len(levels)
        self.num_games, num_stats = n, module_int(cuda, module, "fv_num_stats")
        _, _, max_steps = env_build(env_config, None)
        self.max_steps = max_steps
        a = self.arena = Arena()  # (N,) games, (N * A,) seats
        a.add("slots", (n, module_int(cuda, module, "fv_slot_size")), np.uint8, "(N, sizeof(fv_slot))")
        a.add("seeds", (n,), np.uint64, "(N,) reset seeds")
        a.add("bot_levels", (n,), np.int32, "(N,) the bot's level, -1: a policy opponent")
        a.add("weights", weights.shape, np.float32, "(1 + opponents, P4) the player's, the opponents'")
        a.add("game_weights", (n,), np.int32, "(N,) the opponent's row of weights")
        a.add("game_obs", (n, agents, o), np.float32, "(N, A, O) OBS_T elements")
        a.add("final_obs", (n, agents, o), np.float32, "(N, A, O) batch-layer scratch")
        a.add("starts", (n * agents,), np.float32, "(N * A,)")
        a.add("state", (max(spec.state_layers, 1), n * agents, spec.hidden), np.float32, "(Ls, N * A, H)")
        a.add("actions", (n * agents,), np.int32, "(N * A,)")
        a.add("terminated", (n,), np.uint8, "(N,)")
        a.add("truncated", (n,), np.uint8, "(N,)")
        a.add("ep_return", (n * agents,), np.float32, "(N * A,)")
        a.add("ep_length", (n,), np.int32, "(N,)")
        a.add("ep_stats", (n, max(num_stats, 1)), np.float32, "(N, S)")
        a.add("scores", (n,), np.float32, "(N,) the player's score at the game's first end, NaN before")
        a.add("remaining", (1,), np.int32, "games without a score")
        a.add("step0", (1,), np.int64, "steps played before this replay")
        a.allocate(cuda)
        self.graph = None
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
            stride, key, rows_n = weights.shape[1], ref.sampling_key(seed), n * agents
            blocks = (rows_n + MATCH_WARPS - 1) // MATCH_WARPS
            self.graph = CudaGraph(owner.stream.handle)
            with self.graph.capture():
                for step in range(GRAPH_STEPS):
                    k.launch_grid("match_forward_kernel", blocks, 32 * MATCH_WARPS, np.int32(rows_n), np.int32(games),
                                  a.ptr("weights"), np.int64(stride), a.ptr("game_weights"), a.ptr("bot_levels"),
                                  a.ptr("scores"), a.ptr("game_obs"), a.ptr("starts"), a.ptr("state"),
                                  a.ptr("actions"), np.uint64(key), a.ptr("step0"), np.int32(step),
                                  np.int32(deterministic))
                    k.launch("match_step_kernel", n, np.int32(n), np.int32(games), a.ptr("slots"), a.ptr("bot_levels"),
                             a.ptr("actions"), a.ptr("game_obs"), a.ptr("final_obs"), a.ptr("starts"),
                             a.ptr("terminated"), a.ptr("truncated"), a.ptr("ep_return"), a.ptr("ep_length"),
                             a.ptr("ep_stats"), a.ptr("scores"), a.ptr("remaining"), a.ptr("step0"),
                             np.int32(GRAPH_STEPS if step == GRAPH_STEPS - 1 else 0), np.int32(max_steps))
        except BaseException:
            self.close()
            raise

    def remaining(self) -> int:
        return int(self.arena.get(self.cuda, "remaining")[0])

    def steps(self) -> int:
        return int(self.arena.get(self.cuda, "step0")[0])

    def scores(self) -> np.ndarray:
        return self.arena.get(self.cuda, "scores").astype(np.float64)

    def close(self) -> None:
        self.stream.synchronize()
        if self.graph is not None:
            self.graph.close()
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
        self.last_steps = 0  # game steps the last evaluate() took (its longest game's first end, rounded up)

    def module(self, env_config: dict, defines: dict | None = None):
        key = (tuple(sorted(env_config["env"].items())), tuple(sorted((defines or {}).items())))
        if key not in self.modules:
            source, env_defines, _ = env_build(env_config, None)
            env_defines.update(policy_defines(self.spec), **(defines or {}))
            self.modules[key] = device.load_module(source, tuple(sorted(env_defines.items())))
        return self.modules[key]

    def prepare(self, config: dict) -> None:
        """Compile (or load) the builds evaluate() plays the bot's games in, ahead of the first evaluation."""
        sp = config["selfplay"]
        if sp["bot_switch_param"] and sp["bot_level_param"]:
            self.module({**config, "env": {**config["env"], sp["bot_switch_param"]: 0}},
                        {sp["bot_level_param"].upper(): -1})

    def play_match(self, config: dict, player, opponent, games: int, seed: int, deterministic: bool = False):
        """`player` on seat g % A of game g, `opponent` on the others; the player's score at each game's first end."""
        return self.evaluate(config, player, [], [opponent], games, seed, deterministic)[1][0]

    def play_bot(self, config: dict, player, level: int, games: int, seed: int, deterministic: bool = False):
        """`player` against the env's scripted bot at `level` (a positive return wins)."""
        return self.evaluate(config, player, [level], [], games, seed, deterministic)[0][level]

    def evaluate(self, config: dict, player, levels: list[int], opponents: list, games: int, seed: int,
                 deterministic: bool = False) -> tuple[dict, list]:
        """`games` games of `player` against each bot level and each opponent policy, all at once: ({level:
        scores}, [scores per opponent]), each as play_bot / play_match would return them."""
        sp = config["selfplay"]
        switch = {sp["bot_switch_param"]: 0} if sp["bot_switch_param"] else {}
        two_seats = {**config, "env": {**config["env"], **switch}}
        weights = np.zeros((1 + len(opponents), self.stride), np.float32)
        weights[0, :self.layout.size] = player.params
        for i, opponent in enumerate(opponents):
            weights[1 + i, :self.layout.size] = opponent.params
        past = ([-1] * len(opponents), list(range(1, 1 + len(opponents))))
        plan = []  # (module, env config, levels, weight rows) of each batch
        mixed = None
        if levels:  # the bot level a per-game value: the bot's games and the past selves' in one batch
            mixed = self.module(two_seats, {sp["bot_level_param"].upper(): -1})
            if not module_int(self.cuda, mixed, "match_bot_levels"):
                mixed = None
        if mixed is not None:
            plan.append((mixed, two_seats, list(levels) + past[0], [0] * len(levels) + past[1]))
        else:
            for level in levels:
                bot = {**config, "env": {**config["env"], sp["bot_switch_param"]: 1, sp["bot_level_param"]: level}}
                module = self.module(bot)
                if module_int(self.cuda, module, "fv_num_agents") != 1:
                    raise ConfigError(f"{sp['bot_switch_param']}=1 should leave one agent per game, not "
                                      f"{module_int(self.cuda, module, 'fv_num_agents')}")
                plan.append((module, bot, [level], [0]))
            if opponents:
                plan.append((self.module(two_seats), two_seats, *past))
        batches = []
        try:
            for module, env_config, match_levels, rows in plan:
                batches.append(MatchBatch(self, module, env_config, match_levels, rows, weights, games, seed,
                                          deterministic))
            playing, replays = list(batches), 0
            while playing:
                for batch in playing:
                    batch.graph.launch()
                self.stream.synchronize()
                replays += 1
                playing = [batch for batch in playing if batch.remaining() > 0]
                stuck = [b for b in playing if b.max_steps and replays * GRAPH_STEPS > b.max_steps + GRAPH_STEPS]
                if stuck:
                    raise RuntimeError(f"{stuck[0].remaining()} evaluation games have no score after "
                                       f"{replays * GRAPH_STEPS} steps, past the env's step limit "
                                       f"{stuck[0].max_steps}: a bug in selfplay.cu's match kernels")
            scores = np.concatenate([batch.scores() for batch in batches]) if batches else np.zeros(0)
            self.last_steps = max((batch.steps() for batch in batches), default=0)
        finally:
            for batch in batches:
                batch.close()
        by_match = scores.reshape(-1, games) if len(scores) else scores.reshape(0, games)
        return ({level: by_match[i] for i, level in enumerate(levels)},
                [by_match[len(levels) + i] for i in range(len(opponents))])
