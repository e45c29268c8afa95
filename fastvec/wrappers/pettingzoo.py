"""The PettingZoo face: one native game as a `pettingzoo.ParallelEnv` (and as an AEC env through
`parallel_to_aec`), and many games as one Gymnasium `VectorEnv` in SuperSuit's layout (row
`game * num_agents + agent`, same-step autoreset) for self-play trainers."""

from __future__ import annotations

import re
import threading
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import OrderEnforcingWrapper

from fastvec import native
from fastvec.native.batches import load_batch
from fastvec.wrappers.inputs import SEED_LIMIT, check_bool, check_keywords, check_options, one_thread, pong_params
from fastvec.wrappers.render import FrameSequence, HumanWindow
from fastvec.wrappers.spaces import clip_beyond_float32, gym_spaces, single_action

# Seat names by game; games not listed name their agents agent_0, agent_1, ...
AGENT_NAMES = {"pong": ("left", "right")}


def _env_key(name: str) -> str:
    """The registry key of a game name: "Pong", "pong", "fastvec/Pong" and its PettingZoo id "fastvec/pong-v0" all
    give "pong"."""
    key = re.sub(r"-v\d+$", "", str(name).split("/")[-1].lower())
    native.env_info(key)  # KeyError naming the choices
    return key


def _load(key: str, num_games: int, params: dict, caller: str, **batch_args):
    """A batch of num_games games `key` (a registry key) with the game's keywords (a keyword the game does not take
    is Python's own `TypeError: caller() got an unexpected keyword argument ...`) and its agent names;
    batch_args go to native.batches.load_batch (device, autoreset, max_episode_steps, host_arrays)."""
    check_keywords(caller, key, params, ("opponent", "difficulty") if key == "pong" else ())
    params = dict(params)
    if key == "pong":  # two players unless opponent="bot"
        opponent, difficulty = params.pop("opponent", None), params.pop("difficulty", None)
        if difficulty is not None and opponent != "bot":
            raise ValueError(f"difficulty={difficulty!r} sets the scripted bot's level: pass opponent='bot' with it")
        params = pong_params(opponent, 2 if difficulty is None else difficulty, params)
    batch = load_batch(key, num_games, params, **batch_args)
    agents = batch.env.num_agents
    names = AGENT_NAMES.get(key, ())[:agents]
    if len(names) != agents:
        names = tuple(f"agent_{i}" for i in range(agents))
    return batch, list(names)


def _step_limit(key: str, max_cycles) -> int | None:
    """max_cycles (PettingZoo's name for the step limit): None means the game's registered default."""
    if max_cycles is None:
        return native.ENVS[key].max_episode_steps
    return native.check_step_limit(max_cycles, "max_cycles")


def _episode_info(batch, game: int, agent: int, stat_names: list[str]) -> dict[str, Any]:
    info = {"episode_return": float(batch.episode_return[game, agent]),
            "episode_length": int(batch.episode_length[game])}
    for k, stat in enumerate(stat_names):
        info[stat] = float(batch.episode_stats[game, k])
    return info


# What a copy of a one-game batch must carry: all simulator state and the last outputs.
_BATCH_STATE = ("slots", "obs", "rewards", "terminated", "truncated", "final_obs", "episode_return",
                "episode_length", "episode_stats")


class NativeParallelEnv(ParallelEnv):
    """One native game as a PettingZoo `ParallelEnv`. All agents act every step and all end on
    the same step (the game's end or `max_cycles`); then `agents` is empty until `reset()`.

    Args:
        name: a built-in game, e.g. "Pong" (agents "left" and "right"), "CartPole" ("agent_0").
        max_cycles: truncate after this many steps (None: the game's default step limit).
        render_mode: None, "human" (each reset and step drawn in a pygame window at the game's render_fps, as
            PettingZoo's own games do; `pip install 'fastvec[render]'`; render() then returns None) or "rgb_array".
        **params: the game's keywords, e.g. Pong's `points`, `return_bonus_milli`,
            `opponent="bot"` (then the one agent "left" plays the scripted bot) and `difficulty`.

    The info of every agent at the game's end holds `episode_return`, `episode_length` and the
    game's statistics (Pong: `left_score`, `right_score`, `paddle_hits`).

    Seeds are ints in [0, 2**64-1], checked (with the actions) before anything changes. One env
    object is used by one thread at a time: a reset/step while another thread is inside one raises
    RuntimeError.
    """

    def __init__(self, name: str, *, max_cycles: int | None = None, render_mode: str | None = None, **params):
        key = _env_key(name)
        if render_mode not in (None, "human", "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None, 'human' or 'rgb_array'")
        self.max_cycles = _step_limit(key, max_cycles)
        self.batch, names = _load(key, 1, params, f"{type(self).__name__}.__init__", autoreset="Disabled",
                                  max_episode_steps=self.max_cycles)
        compiled = self.batch.env
        self._init_args = (name, {"max_cycles": max_cycles, "render_mode": render_mode, **params})
        self.metadata = {"name": f"fastvec_{key}_v0", "render_modes": ["human", "rgb_array"],
                         "render_fps": native.ENVS[key].render_fps, "is_parallelizable": True}
        self.window = HumanWindow(self.metadata["render_fps"]) if render_mode == "human" else None
        self.render_mode = render_mode
        self.possible_agents = names
        self.agents: list[str] = []
        obs_space, act_space = gym_spaces(compiled)
        if compiled.action_mask:  # _observations' dicts
            obs_space = gymnasium.spaces.Dict({"observation": obs_space, "action_mask": gymnasium.spaces.Box(
                0, 1, (act_space.n,), np.int8)})
        self._observation_spaces = {a: obs_space for a in names}
        self._action_spaces = {a: act_space for a in names}
        self._spaces = compiled.spaces
        self._stat_names = compiled.stat_names
        self._actions = np.zeros((1, len(names), compiled.spaces.action_dims), compiled.spaces.action_dtype)
        self._seeded = False
        self.lock = threading.Lock()  # held by the thread inside reset/step

    def __getstate__(self) -> dict:
        # The batch holds a ctypes library, so a copy (SuperSuit's cloudpickle, multiprocessing)
        # rebuilds the env from its arguments and carries over the game in progress.
        b = self.batch
        return {"init": self._init_args, "agents": list(self.agents), "seeded": self._seeded,
                "buffers": None if b is None else {k: getattr(b, k).copy() for k in _BATCH_STATE}}

    def __setstate__(self, state: dict) -> None:
        name, kwargs = state["init"]
        self.__init__(name, **kwargs)
        if state["buffers"] is None:
            self.batch = None
        else:
            for k, value in state["buffers"].items():
                getattr(self.batch, k)[...] = value
        self.agents, self._seeded = state["agents"], state["seeded"]

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self._action_spaces[self._check_agent(agent)]

    def check_action(self, agent: str, action):
        """`action` as the batch takes it for `agent`, or a TypeError / ValueError naming the agent and the action."""
        return check_agent_action(action, self._spaces, f"agent {self._check_agent(agent)!r}")

    def _check_agent(self, agent: str) -> str:
        if agent not in self._observation_spaces:
            raise KeyError(f"unknown agent {agent!r}; this game's agents are {self.possible_agents}")
        return agent

    @one_thread
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start a new game; `seed` reseeds it, None continues this env's random stream."""
        self._check_open()
        seed = None if seed is None else native.check_seed(seed)
        check_options(options)
        if seed is not None or not self._seeded:
            if seed is None:
                seed = int(gymnasium.utils.seeding.np_random()[0].integers(0, SEED_LIMIT))
            self.batch.reset(np.array([seed], np.uint64), None)
            self._seeded = True
        else:
            self.batch.reset(None, None)
        self.agents = list(self.possible_agents)
        if self.window is not None:
            self.window.show(self.batch.render(0))
        return self._observations(), {a: {} for a in self.agents}

    def _agent_obs(self) -> np.ndarray:
        """(agents, *OBS_SHAPE) view of the game's observations."""
        return self.batch.obs[0].reshape(len(self.possible_agents), *self._spaces.obs_shape)

    def _observations(self) -> dict:
        """Each live agent's observation, a copy; where the game has action masks (fastvec.h's ACTION_MASK),
        PettingZoo's dict of it and the agent's mask: {"observation": ..., "action_mask": int8 (its actions,)}."""
        agent_obs = self._agent_obs()
        obs = {a: agent_obs[i].copy() for i, a in enumerate(self.agents)}
        if self.batch.action_mask is None:
            return obs
        index = {a: i for i, a in enumerate(self.possible_agents)}
        return {a: {"observation": o, "action_mask": self.batch.action_mask[0, index[a], :self.action_space(a).n]
                    .astype(np.int8)} for a, o in obs.items()}

    @one_thread
    def step(self, actions: dict):
        """Step with one action per live agent; returns (obs, rewards, terminations, truncations,
        infos), each a dict over the agents that were live at the start of the step."""
        self._check_open()
        if not self.agents:
            raise ResetNeeded("the game is over (or was never started): call reset() before step()")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict {{agent: action}} for agents {self.agents}, got {type(actions).__name__}")
        _check_agent_keys(actions, self.agents, "the live agents are",
                          f"every live agent acts every step ({self.agents})", "no action")
        for i, agent in enumerate(self.possible_agents):
            self._actions[0, i] = self.check_action(agent, actions[agent])
        self.batch.step(self._actions)  # range, NaN and infinity are checked here, before anything is stepped
        b = self.batch
        done = bool(b.terminated[0] or b.truncated[0])
        obs = self._observations()
        rewards = {a: float(b.rewards[0, i]) for i, a in enumerate(self.agents)}
        terminations = dict.fromkeys(self.agents, bool(b.terminated[0]))
        truncations = dict.fromkeys(self.agents, bool(b.truncated[0]))
        if done:
            infos = {a: _episode_info(b, 0, i, self._stat_names) for i, a in enumerate(self.agents)}
            self.agents = []
        else:
            infos = {a: {} for a in self.agents}
        if self.window is not None:
            self.window.show(b.render(0))
        return obs, rewards, terminations, truncations, infos

    def render(self):
        """An (H, W, 3) uint8 frame of the game when render_mode is "rgb_array"; "human" draws it and returns None."""
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        frame = self.batch.render(0)
        return frame if self.window is None else self.window.show(frame)

    def _check_open(self) -> None:
        if self.batch is None:
            raise ClosedEnvironmentError("this env is closed; make a new one")

    def close(self):
        if self.window is not None:
            self.window.close()
        if self.batch is not None:
            self.batch.close()
        self.batch = None


def _check_agent_keys(actions: dict, agents: list[str], known: str, rule: str, missing_label: str) -> None:
    """Refuse an actions dict naming an agent outside `agents`, or leaving one of them out."""
    unknown = [a for a in actions if a not in agents]
    if unknown:
        raise KeyError(f"unknown agent(s) {unknown} in actions; {known} {agents}")
    missing = [a for a in agents if a not in actions]
    if missing:
        raise ValueError(f"{missing_label} for agent(s) {missing}: {rule}")


def check_agent_action(action, sp, where: str):
    """One agent's action: an int for Discrete(n) (checked here, the error naming the agent), an array of
    ACTION_DIMS values for MultiDiscrete or Box (kind and shape checked here, values by the batch)."""
    if sp.action_kind != "discrete":
        try:
            a = single_action(action, sp)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{err} (for {where})") from None
        flat = sp.first_bad(a)
        if flat is not None:
            raise sp.action_error(flat, a.ravel()[flat], 1, f" (for {where})")
        return a[0]
    n = sp.num_actions
    if isinstance(action, np.ndarray) and action.shape == ():
        action = action[()]
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise TypeError(f"action {action!r} for {where} must be an int in [0, {n})")
    if not 0 <= action < n:
        raise ValueError(f"action {action} out of range for Discrete({n}) for {where}")
    return int(action)


class MultiAgentVectorEnv(VectorEnv):
    """`num_games` native games as one Gymnasium `VectorEnv` with a row per (game, agent):
    `num_envs = num_games * num_agents`, row `game * num_agents + agent` (SuperSuit's
    `concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(...))` layout that CleanRL's self-play PPO
    expects), stepped by one C call (OpenMP over games).

    Autoreset is SAME_STEP: when a game ends, the obs returned for its rows is the next game's
    first, and infos carry the last one as `final_obs` (Gymnasium) and `terminal_observation`
    (SuperSuit's name; `gymnasium.wrappers.vector.DictInfoToList` turns these dict infos into
    SuperSuit's list of dicts), with `final_info` holding `episode_return`, `episode_length` and
    the game's statistics per row. All of a game's rows end on the same step.

    Self-play: `possible_agents` names the seats, `agent_rows(agent)` gives a seat's rows,
    `by_agent(array)` splits any per-row array into per-seat views, and `step` accepts
    `{agent: actions (num_games,)}`, so each seat's actions can come from a different policy.

    Args:
        name: a built-in game, e.g. "Pong".
        num_games: number of games.
        device: "cpu", or "cuda" / "cuda:N": the games run on the GPU (fastvec/native/cuda.py).
        array_type: for GPU games, "numpy" (default: reset/step take and return NumPy arrays, one pinned copy
            per step) or "device": they return `fastvec.native.cuda.DeviceArray`s in the same row layout
            (zero-copy to PyTorch with `torch.as_tensor(a, device="cuda")`, to JAX with `jax.numpy.from_dlpack`)
            without waiting for the GPU, and step() takes any CUDA array of integer actions in place: (num_envs,)
            by row, (num_games, num_agents), or {agent: (num_games,)} per seat. Bad actions are checked on the
            GPU and raised at the next synchronisation (as the Gymnasium face's). Infos then hold, every step,
            the per-row device arrays of the last game ends (final_obs, episode_return, episode_length, stats),
            valid where the mask (the device array `done` by row) is True.
        max_cycles: steps per game before truncation (None: the game's default).
        render_mode: None or "rgb_array" (`render()`: a lazy sequence, one frame per row).
        copy: return fresh arrays (True) or views of the env's buffers (False, zero-copy).
        **params: the game's keywords (see `NativeParallelEnv`).

    `reset(seed=int)` seeds game g with seed + g, like `concat_vec_envs_v1` (so seed + num_games - 1
    must be at most 2**64-1); a list gives one seed (or None) per game; None continues every game's
    random stream. Inputs are checked before anything changes. One env object is used by one thread
    at a time: a reset/step while another thread is inside one raises RuntimeError.
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, name: str, num_games: int, *, device: str = "cpu", array_type: str = "numpy",
                 max_cycles: int | None = None, render_mode: str | None = None, copy: bool | None = None, **params):
        if not native.is_int(num_games) or not 1 <= num_games <= native.C_INT_MAX:
            raise ValueError(f"num_games must be a positive int (at most 2**31-1), got {num_games!r}")
        self.lock = threading.Lock()  # held by the thread inside reset/step
        copy = check_bool("copy", copy, default_ok=True)
        if render_mode not in (None, "rgb_array"):  # "human" shows one game: parallel_env(name, render_mode="human")
            raise ValueError(f"render_mode={render_mode!r} is not supported by a vector env; use None or 'rgb_array'")
        self.device = str(device)
        if self.device != "cpu" and not self.device.startswith("cuda"):
            raise ValueError(f"device={device!r} is not supported; use 'cpu', 'cuda' or 'cuda:N'")
        if array_type not in ("numpy", "device"):
            raise ValueError(f"array_type={array_type!r} is not one of 'numpy', 'device'")
        if array_type == "device" and self.device == "cpu":
            raise ValueError("array_type='device' needs GPU games: pass device='cuda'")
        self.array_type = array_type
        # The GPU steps every game in one launch; with NumPy arrays, their mirrors come back once per step.
        self.batch, names, self.max_cycles, env_name, fps = self._open(
            name, num_games, max_cycles, params, device=self.device, autoreset="SameStep",
            host_arrays=array_type == "numpy")
        compiled = self.batch.env
        self.metadata = {**self.metadata, "name": env_name, "render_fps": fps}
        self.possible_agents = names
        self.num_games, self.num_agents = int(num_games), len(names)
        self.num_envs = self.num_games * self.num_agents
        self.autoreset_mode = AutoresetMode.SAME_STEP
        self.render_mode = render_mode
        self.copy = self.batch.host_arrays if copy is None else copy
        self.single_observation_space, self.single_action_space = gym_spaces(compiled)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.stat_names = compiled.stat_names
        self.agent_of_row = np.tile(np.arange(self.num_agents), self.num_games)  # (num_envs,) seat index
        self._sp = compiled.spaces
        self._obs = self.batch.obs.reshape(self.num_envs, *self._sp.obs_shape)  # (G*A, *OBS_SHAPE) view of (G, A, O)
        self._actions = np.zeros((self.num_games, self.num_agents, self._sp.action_dims), self._sp.action_dtype)
        if not self.batch.host_arrays:  # per-row views of the per-game device arrays, refreshed by each step
            from fastvec.native.game_rows import GameRows

            self._rows = GameRows(self.batch, self.num_agents)
            self._device_infos = self._device_episode_info()
        self._has_reset = False

    def _open(self, name: str, num_games: int, max_cycles, params: dict, **batch_args):
        """(batch, agent names, step limit, metadata name, render fps) of num_games games `name`; the MPE
        scenarios' face (wrappers/mpe.py) opens its own."""
        key = _env_key(name)
        limit = _step_limit(key, max_cycles)
        batch, names = _load(key, num_games, params, f"{type(self).__name__}.__init__", max_episode_steps=limit,
                             **batch_args)
        return batch, names, limit, f"fastvec_{key}_v0", native.ENVS[key].render_fps

    # ------------------------------------------------------------------ self-play hooks
    def agent_rows(self, agent: str) -> np.ndarray:
        """The rows (num_games,) that seat `agent` plays, i.e. game * num_agents + its index."""
        return np.arange(self._agent_index(agent), self.num_envs, self.num_agents)

    def by_agent(self, array) -> dict[str, Any]:
        """Split a per-row array (obs, rewards, actions, ...) into {agent: (num_games, ...) view}."""
        if len(array) != self.num_envs:
            raise ValueError(f"expected an array with num_envs={self.num_envs} rows, got {len(array)}")
        return {a: array[i::self.num_agents] for i, a in enumerate(self.possible_agents)}

    def _agent_index(self, agent: str) -> int:
        try:
            return self.possible_agents.index(agent)
        except ValueError:
            raise KeyError(f"unknown agent {agent!r}; this game's agents are {self.possible_agents}") from None

    # ------------------------------------------------------------------ the VectorEnv API
    @one_thread
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        """Start every game; returns (obs (num_envs, O), infos)."""
        self._check_open()
        base, seeds, given = native.check_seeds(seed, self.num_games, "game")
        check_options(options)
        if base is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(base)
        if not self._has_reset:  # the first reset seeds every game, drawing the missing seeds
            seeds[~given] = self.np_random.integers(0, SEED_LIMIT, int((~given).sum()), dtype=np.uint64)
            given[:] = True
        native.reset_seeded(self.batch, seeds, given)
        self._has_reset = True
        if not self.batch.host_arrays:
            self._rows.expand()
        return (self._obs.copy() if self.copy else self._obs), self._mask_info({})

    def _mask_info(self, infos: dict) -> dict:
        """infos with "action_mask" (num_envs, NUM_ACTIONS) uint8 by row (1: available; a row's actions beyond its
        agent's own space 0) where the game has action masks (fastvec.h's ACTION_MASK), for the obs returned."""
        mask = self.batch.action_mask  # device arrays: a view, as the other device infos
        if mask is None:
            return infos
        rows = mask.reshape(self.num_envs, mask.shape[-1])
        return {**infos, "action_mask": rows.copy() if self.copy and self.batch.host_arrays else rows}

    @one_thread
    def step(self, actions):
        """Step every game: actions (num_envs,) ints by row, or {agent: (num_games,) ints}."""
        self._check_open()
        if not self._has_reset:
            raise ResetNeeded("call reset() before step()")
        if not self.batch.host_arrays:
            return self._step_device(actions)
        self.batch.step(self._check_actions(actions))
        b, a = self.batch, self.num_agents
        done = b.terminated | b.truncated
        infos: dict[str, Any] = {}
        if done.any():
            rows = np.repeat(done, a)
            final_obs = np.empty(self.num_envs, dtype=object)
            for r in np.flatnonzero(rows):
                final_obs[r] = b.final_obs[r // a, r % a].reshape(self._sp.obs_shape).copy()
            final_info = {"episode_return": b.episode_return.reshape(-1).astype(np.float64),
                          "_episode_return": rows,
                          "episode_length": np.repeat(b.episode_length, a).astype(np.int64),
                          "_episode_length": rows}
            for k, stat in enumerate(self.stat_names):
                final_info[stat] = np.repeat(b.episode_stats[:, k], a).astype(np.float64)
                final_info["_" + stat] = rows
            infos = {"final_obs": final_obs, "_final_obs": rows, "final_info": final_info, "_final_info": rows,
                     "terminal_observation": final_obs, "_terminal_observation": rows}
        obs = self._obs.copy() if self.copy else self._obs
        return (obs, b.rewards.reshape(-1).astype(np.float64), np.repeat(b.terminated, a),
                np.repeat(b.truncated, a), self._mask_info(infos))

    def _step_device(self, actions):
        """step() with device arrays: one launch for the games and one for the rows, no wait."""
        b, rows = self.batch, self._rows
        if isinstance(actions, dict):
            _check_agent_keys(actions, self.possible_agents, "the agents are",
                              "step() needs (num_games,) actions for every agent", "no actions")
            for i, agent in enumerate(self.possible_agents):
                rows.seat_actions(i, actions[agent], f"actions[{agent!r}]")
            b.step(b.dev.actions)
        else:
            if tuple(getattr(actions, "shape", ())) == (self.num_envs,) and hasattr(actions, "reshape"):
                actions = actions.reshape(self.num_games, self.num_agents)  # rows are (game, agent) in order
            b.step(actions)
        rows.expand()
        out = (self._obs, self._device_rewards, rows.terminated, rows.truncated)
        if self.copy:
            out = tuple(a.copy() for a in out)
        return (*out, dict(self._device_infos))

    def _device_episode_info(self) -> dict[str, Any]:
        b, rows, n = self.batch, self._rows, self.num_envs
        self._device_rewards = b.dev.rewards.reshape(n)
        info = {"episode_return": b.dev.episode_return.reshape(n), "_episode_return": rows.done,
                "episode_length": rows.episode_length, "_episode_length": rows.done}
        for k, stat in enumerate(self.stat_names):
            info[stat], info["_" + stat] = rows.episode_stats[k], rows.done
        final_obs = b.dev.final_obs.reshape(n, -1)
        infos = {"final_obs": final_obs, "_final_obs": rows.done, "final_info": info, "_final_info": rows.done,
                 "terminal_observation": final_obs, "_terminal_observation": rows.done}
        return self._mask_info(infos)

    def _check_actions(self, actions) -> np.ndarray:
        """(games, agents, ACTION_DIMS) actions from (num_envs,) [or (num_envs, ACTION_DIMS)] by row or
        {agent: (num_games,) [or (num_games, ACTION_DIMS)]}; kinds, shapes and values checked (Box values
        finite), naming the row, game and agent of a bad one."""
        sp, d = self._sp, self._sp.action_dims
        if isinstance(actions, dict):
            _check_agent_keys(actions, self.possible_agents, "the agents are",
                              "step() needs (num_games,) actions for every agent", "no actions")
            for i, agent in enumerate(self.possible_agents):
                a = np.asarray(actions[agent])
                if a.shape not in ((self.num_games,), (self.num_games, d)) or (a.ndim == 1 and d > 1):
                    want = (self.num_games,) if sp.action_kind == "discrete" else (self.num_games, d)
                    raise ValueError(f"actions[{agent!r}] must have shape {want} (one per game), got {a.shape}")
                self._actions[:, i] = self._check_values(a, f" (agent {agent!r})").reshape(self.num_games, d)
            return self._actions
        a = np.asarray(actions)
        if a.shape not in ((self.num_envs,), (self.num_envs, d)) or (a.ndim == 1 and d > 1):
            rows = f"({self.num_envs},)" if sp.action_kind == "discrete" else f"({self.num_envs}, {d})"
            raise ValueError(f"actions must have shape {rows} (num_games * num_agents rows) or be a dict "
                             f"{{agent: (num_games,)}}, got {a.shape}")
        return self._check_values(a, "").reshape(self.num_games, self.num_agents, d)

    def _check_values(self, a: np.ndarray, where: str) -> np.ndarray:
        sp = self._sp
        if not sp.accepts_dtype(a.dtype):
            need = "numbers" if sp.action_kind == "box" else "integers"
            raise TypeError(f"actions must be {need} for {sp.describe()}, got dtype {a.dtype}")
        a = clip_beyond_float32(a, sp)
        flat = sp.first_bad(a)
        if flat is not None:
            k = flat // sp.action_dims
            value = a.reshape(-1)[flat]
            what = "not finite" if sp.action_kind == "box" else "out of range"
            raise ValueError(f"action {value} {what} for {sp.describe()} at index {k}{where}"
                             + self._describe_row(k, a))
        return a

    def _describe_row(self, k: int, a: np.ndarray) -> str:
        if len(a) != self.num_envs:
            return ""
        return f" (row {k}: game {k // self.num_agents}, agent {self.possible_agents[k % self.num_agents]!r})"

    def render(self) -> FrameSequence | None:
        """A lazy sequence of num_envs frames (both rows of a game show the same frame)."""
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        return FrameSequence(lambda r: self.batch.render(r // self.num_agents), self.num_envs)

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError("this vector env is closed; make a new one with fastvec.pettingzoo.vector_env")

    def close_extras(self, **kwargs) -> None:
        if self.batch is not None:  # the GPU batch waits for its stream and drops its graphs
            self.batch.close()
        self.batch = None


def parallel_env(name: str, **kwargs) -> NativeParallelEnv:
    """One game of `name` as a PettingZoo ParallelEnv (see NativeParallelEnv for the keywords)."""
    return NativeParallelEnv(name, **kwargs)


class NativeAECEnv(parallel_to_aec_wrapper):
    """parallel_to_aec's AEC env that checks each action as it is given: the wrapper keeps the actions until the
    last agent acts, so a bad one kept would make every later step raise; refused here, it is never kept."""

    def step(self, action):
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):  # a dead agent's None is PettingZoo's
            self.env.check_action(agent, action)
        super().step(action)


def env(name: str, **kwargs):
    """One game of `name` as a PettingZoo AEC env (parallel_env as AEC, in PettingZoo's OrderEnforcingWrapper)."""
    return OrderEnforcingWrapper(NativeAECEnv(parallel_env(name, **kwargs)))


def vector_env(name: str, num_games: int, device: str = "cpu", **kwargs) -> MultiAgentVectorEnv:
    """`num_games` games of `name` as a Gymnasium VectorEnv in SuperSuit's layout (see
    MultiAgentVectorEnv): `num_envs = num_games * num_agents`, row `game * num_agents + agent`."""
    return MultiAgentVectorEnv(name, num_games, device=device, **kwargs)

