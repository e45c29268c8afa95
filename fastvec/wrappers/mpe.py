"""The MPE scenarios as PettingZoo envs with mpe2's keywords, agent names and spaces: `parallel_env(name, ...)`
(a NativeParallelEnv whose agents each have their own observation and action space, as mpe2's do),
`env(name, ...)` (the same as an AEC env) and `vector_env(name, num_games, ...)` (many games in SuperSuit's
layout, every agent's spaces padded to the largest, as SuperSuit's pad_observations and pad_action_space do)."""

from __future__ import annotations

import dataclasses
import threading

import gymnasium
import numpy as np
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from fastvec.native import NATIVE_DIR, check_step_limit
from fastvec.native.batches import load_batch
from fastvec.native.mpe import MAX_CYCLES, SCENARIOS, scenario_defines, scenario_key
from fastvec.wrappers.pettingzoo import MultiAgentVectorEnv, NativeAECEnv, NativeParallelEnv, check_agent_action
from fastvec.wrappers.render import HumanWindow

RENDER_FPS = 10  # mpe2's


class MpeParallelEnv(NativeParallelEnv):
    """One MPE game as a PettingZoo ParallelEnv, mpe2's scenario of the same name bit for bit (docs/environments.md).

    Args:
        name: a scenario, e.g. "simple_spread" (also "simple_spread_v3", "fastvec/simple_spread-v3").
        max_cycles: steps before truncation (mpe2's default, 25).
        continuous_actions: Box(0, 1) actions as mpe2's (values outside are clipped); else Discrete.
        render_mode: None, "human" or "rgb_array" (a top-down frame).
        **params: the scenario's mpe2 keywords: N, local_ratio, num_good, num_adversaries, ... (the partial
            observability, curriculum and terminate_on_success options are not built).

    Agents' observations and actions are their own sizes (observation_space(agent), action_space(agent));
    `state()` is mpe2's: every agent's observation, concatenated.
    """

    def __init__(self, name: str, *, max_cycles: int = MAX_CYCLES, continuous_actions: bool = False,
                 render_mode: str | None = None, **params):
        key = scenario_key(name)
        if render_mode not in (None, "human", "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None, 'human' or 'rgb_array'")
        self.batch, names, self.max_cycles = _open(key, 1, continuous_actions, max_cycles, params, autoreset="Disabled")
        build = self.batch.env
        self._init_args = (name, {"max_cycles": max_cycles, "continuous_actions": continuous_actions,
                                  "render_mode": render_mode, **params})
        self.metadata = {"name": f"{key}_v{SCENARIOS[key].version}", "render_modes": ["human", "rgb_array"],
                         "render_fps": RENDER_FPS, "is_parallelizable": True}
        self.window = HumanWindow(RENDER_FPS) if render_mode == "human" else None
        self.render_mode = render_mode
        self.continuous_actions = bool(continuous_actions)
        self.possible_agents = names
        self.agents: list[str] = []
        sp = build.spaces
        self._obs_sizes = [build.lib.fv_agent_obs_size(i) for i in range(len(names))]
        action_sizes = [build.lib.fv_agent_action_size(i) for i in range(len(names))]
        self._observation_spaces = {a: gymnasium.spaces.Box(-np.inf, np.inf, (n,), np.float32)
                                    for a, n in zip(names, self._obs_sizes)}
        if sp.action_kind == "box":  # each agent's space, and the same as spaces.EnvSpaces for the checks
            self._action_spaces = {a: gymnasium.spaces.Box(0.0, 1.0, (n,), np.float32)
                                   for a, n in zip(names, action_sizes)}
            self._agent_spaces = {a: dataclasses.replace(sp, nvec=np.zeros(n, np.int64),
                                                         action_high=np.ones(n, np.float32),
                                                         action_low=np.zeros(n, np.float32))
                                  for a, n in zip(names, action_sizes)}
        else:
            self._action_spaces = {a: gymnasium.spaces.Discrete(n) for a, n in zip(names, action_sizes)}
            self._agent_spaces = {a: dataclasses.replace(sp, nvec=np.array([n], np.int64))
                                  for a, n in zip(names, action_sizes)}
        self.state_space = gymnasium.spaces.Box(-np.inf, np.inf, (sum(self._obs_sizes),), np.float32)
        self._spaces = sp
        self._stat_names = build.stat_names
        self._actions = np.zeros((1, len(names), sp.action_dims), sp.action_dtype)
        self._seeded = False
        self.lock = threading.Lock()  # held by the thread inside reset/step

    def check_action(self, agent: str, action):
        """`action` in `agent`'s own space, as the batch's row of ACTION_DIMS values (the rest 0), or a TypeError /
        ValueError naming the agent and the action."""
        a = check_agent_action(action, self._agent_spaces[self._check_agent(agent)], f"agent {agent!r}")
        if self._spaces.action_kind != "box":
            return a
        row = np.zeros(self._spaces.action_dims, np.float32)
        row[: len(a)] = a
        return row

    def _agent_obs(self) -> list[np.ndarray]:
        """Each agent's own observation: the first of its row's values."""
        return [self.batch.obs[0, i, :n] for i, n in enumerate(self._obs_sizes)]

    def state(self) -> np.ndarray:
        """mpe2's global state: every agent's observation, concatenated."""
        self._check_open()
        return np.concatenate(self._agent_obs())


class MpeVectorEnv(MultiAgentVectorEnv):
    """num_games games of an MPE scenario as one Gymnasium VectorEnv in SuperSuit's layout (row game * agents +
    agent; see MultiAgentVectorEnv, device="cuda" included): every row's observation is its agent's padded with
    zeros to the largest agent's, and its action space the largest agent's (Discrete(n) or Box(0, 1, (k,))), an
    agent's actions past its own space doing nothing. Keywords as MpeParallelEnv's."""

    def __init__(self, name: str, num_games: int, *, continuous_actions: bool = False, max_cycles: int = MAX_CYCLES,
                 **kwargs):
        self.continuous_actions = bool(continuous_actions)
        super().__init__(name, num_games, max_cycles=max_cycles, **kwargs)

    def _open(self, name: str, num_games: int, max_cycles, params: dict, **batch_args):
        key = scenario_key(name)
        batch, names, limit = _open(key, num_games, self.continuous_actions, max_cycles, params, **batch_args)
        return batch, names, limit, f"{key}_v{SCENARIOS[key].version}", RENDER_FPS


def _open(key: str, num_games: int, continuous_actions: bool, max_cycles, params: dict, **batch_args):
    """(batch of num_games games of scenario `key`, its agents' names, the step limit) for mpe2's keywords."""
    defines, values = scenario_defines(key, continuous_actions, params)
    limit = check_step_limit(max_cycles, "max_cycles")
    batch = load_batch(NATIVE_DIR / SCENARIOS[key].source, num_games, defines, max_episode_steps=limit, **batch_args)
    names = SCENARIOS[key].names(values)
    if len(names) != batch.env.num_agents:
        raise RuntimeError(f"{key}: the registry names {len(names)} agents, its env file {batch.env.num_agents}")
    return batch, names, limit


def vector_env(name: str, num_games: int, device: str = "cpu", **kwargs) -> MpeVectorEnv:
    """num_games games of MPE scenario `name` as a Gymnasium VectorEnv in SuperSuit's layout (see MpeVectorEnv)."""
    return MpeVectorEnv(name, num_games, device=device, **kwargs)


def parallel_env(name: str, **kwargs) -> MpeParallelEnv:
    """One game of MPE scenario `name` as a PettingZoo ParallelEnv (see MpeParallelEnv for the keywords)."""
    return MpeParallelEnv(name, **kwargs)


def env(name: str, **kwargs):
    """One game of MPE scenario `name` as a PettingZoo AEC env (parallel_env as AEC, in OrderEnforcingWrapper)."""
    return OrderEnforcingWrapper(NativeAECEnv(parallel_env(name, **kwargs)))
