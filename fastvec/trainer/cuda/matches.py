"""Self-play's evaluation games on the GPU: a player against a frozen opponent or the env's scripted bot, many
games at once in the env compiled with the policy kernels (selfplay.cu's pool_forward_kernel acts for every
seat, match_step_kernel steps the games and scores each game's first end). selfplay.play_match and play_bot are
the CPU versions, with the same seats, seeds and scores."""

from __future__ import annotations

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError
from fastvec.trainer.env_batch import env_build
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.device import module_int
from fastvec.trainer.cuda.plan import policy_defines, pool_row_floats

POOL_BLOCK = 128  # pool_forward_kernel's threads per block
CHECK_EVERY = 32  # steps between the host's looks at whether every game has finished


class GpuMatches:
    """play_match / play_bot with the signatures of selfplay.py's, on the GPU. `module` is the self-play
    trainer's (the games' env with the policy kernels); the bot's env build (the bot switch on, a level) is
    compiled on first use and kept."""

    def __init__(self, config: dict, spec: ref.PolicySpec, module):
        self.spec = spec
        self.layout = ref.FlatLayout(ref.param_table(spec))
        self.stride = pool_row_floats(self.layout)
        self.modules = {(): module}
        self.cuda = device.init()
        self.stream = self.cuda.Stream()

    def module(self, config: dict, overrides: dict):
        key = tuple(sorted(overrides.items()))
        if key not in self.modules:
            env_config = {**config, "env": {**config["env"], **overrides}}
            source, defines, _ = env_build(env_config, None)
            defines.update(policy_defines(self.spec))
            self.modules[key] = device.load_module(source, tuple(sorted(defines.items())))
        return self.modules[key]

    def play_match(self, config: dict, player, opponent, games: int, seed: int, deterministic: bool = False):
        """`player` on seat g % A of game g, `opponent` on the others; the player's score at each game's first end."""
        return self._play(config, {}, player, opponent, games, seed, deterministic, vs_bot=False)

    def play_bot(self, config: dict, player, level: int, games: int, seed: int, deterministic: bool = False):
        """`player` against the env's scripted bot at `level` (a positive return wins)."""
        sp = config["selfplay"]
        overrides = {sp["bot_switch_param"]: 1, sp["bot_level_param"]: level}
        return self._play(config, overrides, player, None, games, seed, deterministic, vs_bot=True)

    def _play(self, config, overrides, player, opponent, games, seed, deterministic, vs_bot) -> np.ndarray:
        cuda, spec = self.cuda, self.spec
        module = self.module(config, overrides)
        k = device.Launcher(module, self.stream)
        agents, o = module_int(cuda, module, "fv_num_agents"), spec.obs_size
        if vs_bot and agents != 1:
            raise ConfigError(f"{config['selfplay']['bot_switch_param']}=1 should leave one agent per game, not {agents}")
        rows, num_stats = games * agents, module_int(cuda, module, "fv_num_stats")
        a = Arena()  # every tensor of the games: (N,) games, (N * A,) seats
        a.add("slots", (games, module_int(cuda, module, "fv_slot_size")), np.uint8, "(N, sizeof(fv_slot))")
        a.add("seeds", (games,), np.uint64, "(N,) reset seeds")
        a.add("weights", (2, self.stride), np.float32, "(2, P4) the player's, the opponent's")
        a.add("game_weights", (games,), np.int32, "(N,) 1: the opponent's row of weights")
        a.add("game_obs", (games, agents, o), np.float32, "(N, A, O) OBS_T elements")
        a.add("final_obs", (games, agents, o), np.float32, "(N, A, O) batch-layer scratch")
        a.add("starts", (rows,), np.float32, "(N * A,)")
        a.add("state", (max(spec.state_layers, 1), rows, spec.hidden), np.float32, "(Ls, N * A, H)")
        a.add("actions", (rows,), np.int32, "(N * A,)")
        a.add("terminated", (games,), np.uint8, "(N,)")
        a.add("truncated", (games,), np.uint8, "(N,)")
        a.add("ep_return", (rows,), np.float32, "(N * A,)")
        a.add("ep_length", (games,), np.int32, "(N,)")
        a.add("ep_stats", (games, max(num_stats, 1)), np.float32, "(N, S)")
        a.add("scores", (games,), np.float32, "(N,) the player's score at the game's first end, NaN before")
        a.allocate(cuda)
        try:
            a.set(cuda, "seeds", (np.uint64(seed) << np.uint64(32)) + np.arange(games, dtype=np.uint64))
            weights = np.zeros((2, self.stride), np.float32)
            weights[0, :self.layout.size] = player.params
            if opponent is not None:
                weights[1, :self.layout.size] = opponent.params
            a.set(cuda, "weights", weights)
            a.set(cuda, "game_weights", np.ones(games, np.int32))
            a.set(cuda, "starts", np.ones(rows, np.float32))
            a.set(cuda, "scores", np.full(games, np.nan, np.float32))
            shared = 4 * spec.hidden * POOL_BLOCK
            k.function("pool_forward_kernel").set_attribute(
                cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
            k.launch("fv_reset_kernel", games, np.int32(games), a.ptr("slots"), a.ptr("seeds"), 0, a.ptr("game_obs"))
            key = ref.sampling_key(seed)
            _, _, max_steps = env_build({**config, "env": {**config["env"], **overrides}}, None)
            step = 0
            while True:
                for _ in range(CHECK_EVERY):
                    k.launch_shared("pool_forward_kernel", rows, POOL_BLOCK, shared, np.int32(rows), np.int32(agents),
                                    np.int32(0), np.int32(0), a.ptr("weights"), np.int64(self.stride),
                                    a.ptr("game_weights"), a.ptr("game_obs"), a.ptr("starts"), a.ptr("state"),
                                    a.ptr("actions"), np.uint64(key), 0, np.int64(step), np.int32(deterministic))
                    k.launch("match_step_kernel", games, np.int32(games), np.int32(0), np.int32(vs_bot),
                             a.ptr("slots"), a.ptr("actions"), a.ptr("game_obs"), a.ptr("final_obs"), a.ptr("starts"),
                             a.ptr("terminated"), a.ptr("truncated"), a.ptr("ep_return"), a.ptr("ep_length"),
                             a.ptr("ep_stats"), a.ptr("scores"), np.int32(max_steps))
                    step += 1
                self.stream.synchronize()
                scores = a.get(cuda, "scores")
                if not np.isnan(scores).any():
                    return scores.astype(np.float64)
        finally:
            self.stream.synchronize()
            a.allocation.free()
