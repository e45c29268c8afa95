"""Stable-Baselines3 adapter: a fastvec vector env (a native batch, or a MuJoCo task's) as an SB3 `VecEnv`
(same-step autoreset, `terminal_observation` and `TimeLimit.truncated` in infos, episode statistics without
VecMonitor).

    from fastvec.wrappers.sb3 import FastvecVecEnv
    model = stable_baselines3.PPO("MlpPolicy", FastvecVecEnv("fastvec/CartPole", num_envs=8))
    model = stable_baselines3.PPO("MlpPolicy", FastvecVecEnv("fastvec/Hopper-v5", num_envs=8))
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

import fastvec
from fastvec.wrappers.gymnasium import NativeVectorEnv
from fastvec.wrappers.inputs import one_thread
from fastvec.wrappers.spaces import batch_actions


class ClosedVecEnvError(ClosedEnvironmentError, RuntimeError):
    """A closed FastvecVecEnv was used: Gymnasium's ClosedEnvironmentError, and a RuntimeError as before."""


def _mujoco_vector_env() -> tuple[type, ...]:
    """The MuJoCo tasks' vector env class, if its module is loaded (an env made from it has loaded it)."""
    module = sys.modules.get("fastvec.wrappers.mujoco")
    return (module.MujocoVectorEnv,) if module is not None else ()


class FastvecVecEnv(VecEnv):
    """A fastvec vector env seen by Stable-Baselines3: one C call per `step`, no per-env workers.

    Args:
        env: a fastvec id (`"fastvec/CartPole"`, or the short `"CartPole"`; `"fastvec/Hopper-v5"`), or a
            fastvec vector env made with `autoreset_mode=AutoresetMode.SAME_STEP` (SB3 expects the reset
            observation on the step that ends an episode). A native batch's env (`NativeVectorEnv`) is stepped
            through its batch; a MuJoCo task's (`MujocoVectorEnv`) through its public `reset`/`step`, its
            returns and lengths counted here.
        num_envs: number of environments when `env` is an id.
        **kwargs: passed to `gymnasium.make_vec` when `env` is an id (`max_episode_steps`,
            `render_mode`, env parameters such as Breakout's `frameskip`).

    Infos follow `DummyVecEnv`: every info has `TimeLimit.truncated` (truncated and not
    terminated); an env that is done also has `terminal_observation` and `episode`
    ({"r": return, "l": length, "t": seconds since construction}, the keys `Monitor` writes, so
    SB3 logs `rollout/ep_rew_mean` without wrappers) and the env's own statistics (Breakout:
    `score`). The envs of one batch share attributes: `get_attr`/`env_method` answer once for
    all, and `set_attr` must target every env.

    One env object is used by one thread at a time: a reset/step while another thread is inside
    one (of this adapter or of its vector env) raises RuntimeError. A closed one raises
    `ClosedVecEnvError` (a `gymnasium.error.ClosedEnvironmentError` and a RuntimeError).
    """

    def __init__(self, env: str | NativeVectorEnv, num_envs: int = 1, **kwargs):
        if isinstance(env, str):
            kwargs.setdefault("autoreset_mode", AutoresetMode.SAME_STEP)
            env = fastvec.make_vec(env, num_envs, **kwargs)
        elif kwargs:
            raise TypeError(f"keyword arguments {sorted(kwargs)} only apply when env is an id; got an env instance")
        if not isinstance(env, (NativeVectorEnv, *_mujoco_vector_env())):
            raise TypeError(
                f"FastvecVecEnv needs a fastvec vector env (from gymnasium.make_vec('fastvec/...')), got {type(env).__name__}; "
                "if it is wrapped, pass the unwrapped env and use SB3's VecEnvWrappers (VecNormalize, ...) instead"
            )
        if AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)) != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3 needs same-step autoreset, but this env uses {env.metadata.get('autoreset_mode')}; make it with "
                "gymnasium.make_vec(..., autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)"
            )
        device = getattr(getattr(env, "batch", None), "device", "cpu")
        if device != "cpu":
            raise ValueError(
                f"SB3 works on NumPy arrays, but this env lives on {device}; make it with device='cpu' "
                "(SB3 moves observations to its own torch device)"
            )
        self.venv = env
        self.native = isinstance(env, NativeVectorEnv)  # else a MuJoCo task's: stepped through its own step
        self.batch = env.batch if self.native else None
        self._lock = env.lock if self.native else threading.Lock()
        self._return = np.zeros(env.num_envs, np.float64)  # the running episodes of an env stepped generically
        self._length = np.zeros(env.num_envs, np.int64)
        self._obs_shape = (env.num_envs, *env.single_observation_space.shape)
        self._actions: np.ndarray | None = None
        self._has_reset = False
        self._start_time = time.time()
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    # ------------------------------------------------------------------ reset and step
    def reset(self) -> np.ndarray:
        """Reset every env with the seeds and options set by `seed()`/`set_options()` (used once)."""
        self._check_open()
        options = self._options[0]
        if any(o != options for o in self._options):
            raise ValueError("a native batch takes one options dict for all envs; set_options() got different ones")
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, _ = self.venv.reset(seed=seeds, options=options or None)
        self._return[:], self._length[:] = 0, 0
        self._actions = None  # actions of a step refused before this reset are not the next step's
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        self._has_reset = True
        return obs.reshape(self._obs_shape)

    def step_async(self, actions: np.ndarray) -> None:
        """Take the actions of every env: (N,) for Discrete, (N, D) for MultiDiscrete and Box (SB3 clips Box
        actions to the bounds itself); checked as the vector env checks them (spaces.batch_actions)."""
        actions = np.asarray(actions)
        if not self.native:  # the vector env checks them in its step
            self._actions = actions.reshape(self.venv.action_space.shape)
            return
        if self.venv.spaces.action_kind == "discrete" and actions.size == self.num_envs:
            actions = actions.reshape(self.num_envs)  # SB3 hands Discrete actions as (N,) or (N, 1)
        self._actions = batch_actions(actions, self.venv.spaces, self.num_envs)

    @property
    def lock(self):
        return self._lock  # a native env's own: its reset goes through it

    def _check_open(self) -> None:
        if self.venv.closed:
            raise ClosedVecEnvError("this FastvecVecEnv is closed; make a new one")

    @one_thread
    def step_wait(self) -> VecEnvStepReturn:
        self._check_open()
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async(actions)")
        if not self.native:
            return self._step_generic()
        b = self.batch
        ended = b.step(self._actions)  # validates action ranges in C; SAME_STEP: obs are reset obs
        self._actions = None
        done = b.terminated | b.truncated
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": False} for _ in range(self.num_envs)]
        if ended:  # only the envs that ended get Python-level work
            elapsed = round(time.time() - self._start_time, 6)
            for i in np.flatnonzero(done):
                info = infos[i]
                info["TimeLimit.truncated"] = bool(b.truncated[i] and not b.terminated[i])
                info["terminal_observation"] = b.final_obs[i, 0].reshape(self._obs_shape[1:]).copy()
                info["episode"] = {"r": float(b.episode_return[i, 0]), "l": int(b.episode_length[i]), "t": elapsed}
                for k, name in enumerate(self.venv.stat_names):
                    info[name] = float(b.episode_stats[i, k])
        obs = b.obs.reshape(self._obs_shape).copy()
        return obs, b.rewards[:, 0].copy(), done, infos

    def _step_generic(self) -> VecEnvStepReturn:
        """step_wait through the vector env's public step (SAME_STEP: a done env's last obs in final_obs)."""
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, info = self.venv.step(actions)
        self._return += rewards
        self._length += 1
        done = np.asarray(terminated) | np.asarray(truncated)
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": False} for _ in range(self.num_envs)]
        if done.any():
            elapsed = round(time.time() - self._start_time, 6)
            for i in np.flatnonzero(done):
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                infos[i]["terminal_observation"] = np.array(info["final_obs"][i]).reshape(self._obs_shape[1:])
                infos[i]["episode"] = {"r": float(self._return[i]), "l": int(self._length[i]), "t": elapsed}
            self._return[done], self._length[done] = 0, 0
        return np.array(obs).reshape(self._obs_shape), np.array(rewards), done, infos

    # ------------------------------------------------------------------ attributes and methods
    def _indices(self, indices: VecEnvIndices) -> list[int]:
        found = list(self._get_indices(indices))
        bad = [i for i in found if not -self.num_envs <= i < self.num_envs]
        if bad:
            raise IndexError(f"env indices {bad} out of range for {self.num_envs} envs")
        return found

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute, once per requested env (the batch shares attributes)."""
        value = getattr(self.venv, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the vector env; the envs of a batch share it, so target all of them."""
        targets = set(i % self.num_envs for i in self._indices(indices))
        if len(targets) != self.num_envs:
            raise ValueError(
                f"set_attr({attr_name!r}) on envs {sorted(targets)} only: the {self.num_envs} envs of a native batch "
                "share attributes, so set it for all of them (indices=None)"
            )
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        """Call a method of the vector env once and return its result for every requested env;
        `render` is per env: it returns each requested env's frame."""
        targets = self._indices(indices)
        if method_name == "render":
            return [self._frame(i) for i in targets]
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in targets]

    def env_is_wrapped(self, wrapper_class: type[gymnasium.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Always False: a native batch has no per-env Gymnasium wrappers (episode stats are built in)."""
        return [False for _ in self._indices(indices)]

    def get_images(self) -> list[np.ndarray | None]:
        """One (H, W, 3) uint8 frame per env when the env was made with render_mode="rgb_array"."""
        self._check_open()
        if self.render_mode != "rgb_array":
            warnings.warn(f"get_images() needs render_mode='rgb_array' (this env has {self.render_mode!r}); "
                          "make it with FastvecVecEnv(..., render_mode='rgb_array')")
            return [None for _ in range(self.num_envs)]
        return [self._frame(i) for i in range(self.num_envs)]

    def _frame(self, i: int) -> np.ndarray | None:
        self._check_open()
        if self.render_mode != "rgb_array":
            return None
        return self.batch.render(i % self.num_envs) if self.native else self.venv.render()[i % self.num_envs]

    def close(self) -> None:
        self.venv.close()
