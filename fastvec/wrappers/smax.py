"""The SMAX scenarios (jaxmarl's StarCraft micro-battles, fastvec/native/smax.h) as PettingZoo envs:
`parallel_env(scenario, ...)` (each agent's observation PettingZoo's dict of its unit_list features and its action
mask; `state()` jaxmarl's world state), `env(scenario, ...)` (the same as an AEC env) and `vector_env(scenario,
num_games, ...)` (many games in SuperSuit's layout, the masks by row in infos["action_mask"])."""

from __future__ import annotations

import dataclasses
import threading

import gymnasium
import numpy as np
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from fastvec.native import NATIVE_DIR
from fastvec.native.batches import load_batch
from fastvec.native.smax import (SCENARIOS, TIME_LIMIT, check_attack_mode, check_enemy, scenario_defines, scenario_key,
                                 step_limit)
from fastvec.wrappers.pettingzoo import MultiAgentVectorEnv, NativeAECEnv, NativeParallelEnv, check_agent_action
from fastvec.wrappers.render import HumanWindow
from fastvec.wrappers.spaces import gym_spaces

RENDER_FPS = 2  # real time: one step is 8 world steps of 1/16 s
MAX_STEPS = TIME_LIMIT - 1  # jaxmarl's default max_steps


def env_name(key: str) -> str:
    """The metadata name and the PettingZoo id's stem of scenario `key`."""
    return f"smax_{key}_v0"


class SmaxParallelEnv(NativeParallelEnv):
    """One SMAX battle as a PettingZoo ParallelEnv, jaxmarl's scenario of the same name (docs/environments.md).

    Args:
        scenario: "3m", "2s3z", "3s5z", "5m_vs_6m", "3s5z_vs_3s6z", "3s_vs_5z", "6h_vs_8z", "8m", "25m",
            "10m_vs_11m", "27m_vs_30m", or "smacv2_5_units", "smacv2_10_units", "smacv2_20_units" (each battle's
            units drawn at its reset) (also "smax_3m", "fastvec/smax_3m-v0").
        enemy: "heuristic" (jaxmarl's HeuristicEnemySMAX: scripted enemies, the agents are the allies) or
            "agents" (jaxmarl's SMAX: every unit an agent, allies then enemies).
        attack_mode: the heuristic's new target in attack range: "closest" (jaxmarl's default) or "random".
        max_steps: jaxmarl's max_steps (default 100): the battle is truncated after max_steps + 1 steps.
        render_mode: None, "human" or "rgb_array" (a top-down frame).

    Each agent's observation is {"observation": its unit_list features (float32), "action_mask": int8, 1 for each
    action of its own Discrete space it may take now (jaxmarl's get_avail_actions)}; an action the mask rules
    out is taken as jaxmarl takes it (a dead unit stays put, an attack out of range does nothing). A dead unit
    stays an agent until the battle ends, its only available action stop (4). `state()` is jaxmarl's world state.
    """

    def __init__(self, scenario: str = "3m", *, enemy: str = "heuristic", attack_mode: str = "closest",
                 max_steps: int = MAX_STEPS, render_mode: str | None = None):
        key = scenario_key(scenario)
        if render_mode not in (None, "human", "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None, 'human' or 'rgb_array'")
        self.max_cycles = step_limit(max_steps)
        self.batch, names = _open(key, 1, check_enemy(enemy), attack_mode, self.max_cycles, autoreset="Disabled")
        build = self.batch.env
        self._init_args = (scenario, {"enemy": enemy, "attack_mode": attack_mode, "max_steps": max_steps,
                                      "render_mode": render_mode})
        self.metadata = {"name": env_name(key), "render_modes": ["human", "rgb_array"], "render_fps": RENDER_FPS,
                         "is_parallelizable": True}
        self.window = HumanWindow(RENDER_FPS) if render_mode == "human" else None
        self.render_mode = render_mode
        self.possible_agents = names
        self.agents: list[str] = []
        sp = build.spaces
        obs_space = gym_spaces(build)[0]
        sizes = [build.lib.fv_agent_action_size(i) for i in range(len(names))]
        self._action_spaces = {a: gymnasium.spaces.Discrete(n) for a, n in zip(names, sizes)}
        self._observation_spaces = {a: gymnasium.spaces.Dict({"observation": obs_space, "action_mask": (
            gymnasium.spaces.Box(0, 1, (n,), np.int8))}) for a, n in zip(names, sizes)}
        self._agent_spaces = {a: dataclasses.replace(sp, nvec=np.array([n], np.int64)) for a, n in zip(names, sizes)}
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (build.world_state_size,), np.float32)
        self._spaces = sp
        self._stat_names = build.stat_names
        self._actions = np.zeros((1, len(names), sp.action_dims), sp.action_dtype)
        self._seeded = False
        self.lock = threading.Lock()  # held by the thread inside reset/step

    def check_action(self, agent: str, action):
        """`action` in `agent`'s own Discrete space, or a TypeError / ValueError naming the agent and the action."""
        return check_agent_action(action, self._agent_spaces[self._check_agent(agent)], f"agent {agent!r}")

    def state(self) -> np.ndarray:
        """jaxmarl's world state (float32): every unit's health fraction, position, cooldown and type one-hot
        (zeros when dead), then every unit's team and type."""
        self._check_open()
        return self.batch.world_state[0].copy()


class SmaxVectorEnv(MultiAgentVectorEnv):
    """num_games SMAX battles as one Gymnasium VectorEnv in SuperSuit's layout (row game * agents + agent; see
    MultiAgentVectorEnv, device="cuda" included): every row's action space the largest agent's Discrete(n) (with
    enemy="agents" and teams of different sizes, the smaller team's actions past its own space do nothing), and
    infos["action_mask"] (num_envs, n) uint8 by row after every reset and step, for the obs returned (after an
    autoreset, the next battle's). Keywords as SmaxParallelEnv's."""

    def __init__(self, scenario: str, num_games: int, *, enemy: str = "heuristic", attack_mode: str = "closest",
                 max_steps: int = MAX_STEPS, **kwargs):
        self.enemy = check_enemy(enemy)
        self.attack_mode = check_attack_mode(attack_mode, self.enemy)
        super().__init__(scenario, num_games, max_cycles=step_limit(max_steps), **kwargs)

    def _open(self, name: str, num_games: int, max_cycles, params: dict, **batch_args):
        key = scenario_key(name)
        if params:
            raise TypeError(f"SmaxVectorEnv got unexpected keyword arguments {sorted(params)} (it takes enemy, "
                            "attack_mode, max_steps, device, array_type, render_mode, copy)")
        batch, names = _open(key, num_games, self.enemy, self.attack_mode, max_cycles, **batch_args)
        return batch, names, max_cycles, env_name(key), RENDER_FPS


def _open(key: str, num_games: int, enemy: str, attack_mode: str, limit: int, **batch_args):
    """(batch of num_games battles of scenario `key` with `enemy` playing the enemies (the heuristic's targets by
    `attack_mode`), its agents' names)."""
    batch = load_batch(NATIVE_DIR / "smax.h", num_games, scenario_defines(key, enemy, attack_mode),
                       max_episode_steps=limit, **batch_args)
    names = SCENARIOS[key].agent_names(enemy)
    if len(names) != batch.env.num_agents:
        raise RuntimeError(f"{key}: the registry names {len(names)} agents, smax.h {batch.env.num_agents}")
    return batch, names


def vector_env(scenario: str, num_games: int, device: str = "cpu", **kwargs) -> SmaxVectorEnv:
    """num_games battles of SMAX scenario `scenario` as a Gymnasium VectorEnv in SuperSuit's layout (SmaxVectorEnv)."""
    return SmaxVectorEnv(scenario, num_games, device=device, **kwargs)


def parallel_env(scenario: str = "3m", **kwargs) -> SmaxParallelEnv:
    """One battle of SMAX scenario `scenario` as a PettingZoo ParallelEnv (see SmaxParallelEnv for the keywords)."""
    return SmaxParallelEnv(scenario, **kwargs)


def env(scenario: str = "3m", **kwargs):
    """One battle of SMAX scenario `scenario` as a PettingZoo AEC env (parallel_env as AEC, in
    OrderEnforcingWrapper)."""
    return OrderEnforcingWrapper(NativeAECEnv(parallel_env(scenario, **kwargs)))
