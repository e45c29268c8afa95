"""The Gymnasium face: a native batch of environments as a `gymnasium.vector.VectorEnv`, and
one environment as a `gymnasium.Env` (so `gymnasium.make`, `check_env` and SyncVectorEnv work)."""

from __future__ import annotations

import threading
from typing import Any

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError, ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_batch
from fastvec.wrappers.inputs import SEED_LIMIT, check_bool, check_keywords, check_options, one_thread, pong_params
from fastvec.wrappers.render import FrameSequence, HumanWindow
from fastvec.wrappers.spaces import batch_actions, gym_spaces, single_action


def _parse_autoreset_mode(mode) -> AutoresetMode:
    try:
        return AutoresetMode(mode.value if isinstance(mode, AutoresetMode) else mode)
    except ValueError:
        choices = ", ".join(f"AutoresetMode.{m.name}" for m in AutoresetMode)
        raise ValueError(f"autoreset_mode={mode!r} is not one of {choices}") from None


class NativeVectorEnv(VectorEnv):
    """A batch of `num_envs` native environments stepped by one C call (OpenMP over envs).

    Subclasses name a built-in env (`env_name`); `fastvec.make_vec_from_source` builds one from a
    user's env file. It follows `SyncVectorEnv`'s contract: NEXT_STEP (default), SAME_STEP and
    DISABLED autoreset, `reset(seed=int | list)` seeding sub-env i with seed + i, partial resets
    through `options={"reset_mask": ...}`, and episode info at episode end.

    Args:
        num_envs: number of environments.
        autoreset_mode: an `AutoresetMode` (or its value string).
        max_episode_steps: truncate episodes after this many steps (None: never).
        render_mode: None or "rgb_array"; `render()` then returns a lazy sequence of frames.
        copy: return fresh arrays from reset/step (True, like SyncVectorEnv) or views of the env's buffers that the
            next call overwrites (False, zero-copy). Default: True for NumPy arrays, False for device arrays.
        device: "cpu" (default), "cuda" or "cuda:N": where the envs run (the GPU needs
            `pip install 'fastvec[cuda]'`).
        array_type: for a GPU env, "numpy" (default, Gymnasium-compatible: one copy through pinned memory and
            one synchronisation per step) or "device": reset/step return `fastvec.native.cuda.DeviceArray`s
            (`__cuda_array_interface__`, `__dlpack__`; wrap them with `fastvec.wrappers.torch` or
            `jax.numpy.from_dlpack`) without waiting for the GPU, and step() takes any CUDA array's actions in place.
        validate: device arrays only. Actions are always range-checked on the GPU; a bad one is reported
            (ActionError) at the next synchronisation (reset, `synchronize()`) or within 64 steps. True:
            synchronise every step and raise at once (for debugging; slow).
        **params: the env's parameters, e.g. Breakout's `frameskip`; unknown names are errors.

    Info keys at episode end (with Gymnasium's `_key` masks): `episode_return`, `episode_length`
    and the env's own statistics (Breakout: `score`). Under SAME_STEP they are in `final_info`.
    With array_type="device" every step's infos hold these keys as device arrays of the last
    episode end, valid where the mask (the device array `done`) is True; `final_obs` is (N, O).

    Inputs are checked before anything changes (a refused call leaves the env as it was): seeds
    are ints in [0, 2**64-1] (NumPy integers too; bools, floats and strings are refused, as
    Gymnasium's `np_random` refuses them), and an int seed needs seed + num_envs - 1 <= 2**64-1;
    `max_episode_steps` is None or in [1, 2**31-1] (batch.h's C int); actions are of the action space's
    kind and shape (integers for Discrete and MultiDiscrete, numbers for Box), in range for the discrete
    kinds and finite for Box (a finite Box action outside the bounds is clipped by the env, as Gymnasium's).

    Spaces are the env file's (fastvec.h): `single_action_space` Discrete, MultiDiscrete or Box,
    `single_observation_space` a float32 or uint8 Box of the declared shape and bounds; the batched ones
    are `gymnasium.vector.utils.batch_space` of those. Envs that declare state access (classic control,
    CartPole) read and set chosen sub-envs' states with `get_state(indices)` and `set_state(values, indices)`.

    Threads: one env object is used by one thread at a time (the batch is stepped in place). A
    reset/step while another thread is inside one raises RuntimeError; use one env per thread.
    """

    env_name: str | None = None
    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, autoreset_mode=AutoresetMode.NEXT_STEP,
                 max_episode_steps: int | None = None, render_mode: str | None = None, copy: bool | None = None,
                 source=None, device: str = "cpu", array_type: str = "numpy", validate: bool = False, **params):
        if not native.is_int(num_envs) or not 1 <= num_envs <= native.C_INT_MAX:
            raise ValueError(f"num_envs must be a positive int (at most 2**31-1), got {num_envs!r}")
        max_episode_steps = native.check_step_limit(max_episode_steps)
        copy, validate = check_bool("copy", copy, default_ok=True), check_bool("validate", validate)
        # Held by the thread inside reset/step (see the class docstring); re-entrant because the single-env face
        # and the SB3 adapter step through this object while holding it.
        self.lock = threading.RLock()
        self.batch = None
        self.device = str(device)
        if array_type not in ("numpy", "device"):
            raise ValueError(f"array_type={array_type!r} is not one of 'numpy', 'device'")
        if array_type == "device" and self.device == "cpu":
            raise ValueError("array_type='device' needs a GPU env: pass device='cuda'")
        self.array_type = array_type
        check_keywords(f"{type(self).__name__}.__init__", self.env_name, params)
        if render_mode not in (None, "rgb_array"):  # "human" shows one env: gym.make(id, render_mode="human")
            raise ValueError(f"render_mode={render_mode!r} is not supported by a vector env; use None or 'rgb_array'")
        self.autoreset_mode = _parse_autoreset_mode(autoreset_mode)
        batch = load_batch(source if self.env_name is None else self.env_name, num_envs, params, device=self.device,
                           autoreset=self.autoreset_mode.value, max_episode_steps=max_episode_steps,
                           host_arrays=array_type == "numpy", validate=validate)
        compiled = batch.env
        if compiled.num_agents != 1:
            batch.close()
            raise ValueError(
                f"{compiled.name} has {compiled.num_agents} agents; use fastvec.pettingzoo.vector_env for multi-agent games"
            )
        self.batch = batch
        name = self.env_name or compiled.name
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": getattr(native.ENVS.get(name), "render_fps", 30),
                         "autoreset_mode": self.autoreset_mode}
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.copy = batch.host_arrays if copy is None else copy
        self._max_episode_steps = max_episode_steps
        self.params = dict(params)
        self.single_observation_space, self.single_action_space = gym_spaces(compiled)
        self.spaces = compiled.spaces
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.stat_names = compiled.stat_names
        self._obs = batch.obs.reshape(self.num_envs, *self.spaces.obs_shape)  # a view of the (N, 1, O) buffer
        # The batch hands out host arrays (step() returns the arrays of a fresh block a step, batch.gym_step) or
        # device arrays (step() returns views of the GPU buffers, built here once, and only launches).
        self._device_arrays = not batch.host_arrays
        if batch.host_arrays:  # where _step_block finds its arrays in the block
            self._out_fields = cpu.gym_out_layout(self.num_envs, len(compiled.stat_names))[1]
            self._flags_offset = self._out_fields["flags"][2]
        else:
            self._device_rewards = batch.rewards.reshape(self.num_envs)
            self._device_infos = self._device_episode_info()
        self._needs_reset = np.zeros(self.num_envs, np.bool_)  # DISABLED: envs done and not yet reset
        # (dtype, shape) of the actions step() passes on unchecked here (the batch checks their values):
        # an (N,) array of the batch's own dtype, where an env takes one discrete value; None: always checked.
        single = batch.host_arrays and self.spaces.action_dims == 1 and self.spaces.action_kind != "box"
        self._unchecked_actions = (np.dtype(compiled.action_dtype), (self.num_envs,)) if single else None
        self._has_reset = False

    # ------------------------------------------------------------------ reset
    @one_thread
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset all envs (or those in `options["reset_mask"]`); returns (obs, infos)."""
        self._check_open()
        # Like SyncVectorEnv: an int seeds env i with seed + i; None keeps each env's RNG stream
        # (only the very first reset draws fresh seeds); a list may mix ints and Nones. Everything
        # is checked before anything (np_random included) changes.
        base, seeds, given = native.check_seeds(seed, self.num_envs)
        check_options(options)
        mask = None
        if options is not None and "reset_mask" in options:  # read, never pop: wrappers look at options too
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not mask.any():
                raise ValueError("`options['reset_mask']` must contain at least one True value")
            if not self._has_reset:
                raise ResetNeeded("the first reset() must reset every env; call reset() without reset_mask first")
        if base is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(base)
        if not self._has_reset:  # the first reset seeds every env, drawing the missing seeds
            seeds[~given] = self.np_random.integers(0, SEED_LIMIT, int((~given).sum()), dtype=np.uint64)
            given[:] = True
        native.reset_seeded(self.batch, seeds, given, mask)
        self._needs_reset[slice(None) if mask is None else mask] = False  # (a full reset clears the batch's own flags: Backend.reset)
        self._has_reset = True
        return (self._obs.copy() if self.copy else self._obs), {}

    # ------------------------------------------------------------------ step
    @one_thread
    def step(self, actions):
        """Step every env; returns (obs, rewards, terminations, truncations, infos)."""
        self._check_open()
        if not self._has_reset:
            raise ResetNeeded("call reset() before step()")
        if self._device_arrays:  # GPU-resident: one launch, no wait, views of the env's buffers
            b = self.batch
            b.step(actions)  # any integer array, host or device; checked on the GPU
            if self.copy:
                return (self._obs.copy(), self._device_rewards.copy(), b.terminated.copy(), b.truncated.copy(),
                        dict(self._device_infos))
            return self._obs, self._device_rewards, b.terminated, b.truncated, dict(self._device_infos)
        if self._unchecked_actions is None or type(actions) is not np.ndarray or \
                (actions.dtype, actions.shape) != self._unchecked_actions:
            actions = batch_actions(actions, self.spaces, self.num_envs)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._needs_reset.any():
            envs = np.flatnonzero(self._needs_reset)[:10].tolist()
            raise RuntimeError(f"envs {envs} ended and autoreset_mode is DISABLED: call reset(options="
                               "{'reset_mask': ...}) for them before stepping again")
        return self._step_block(actions)

    def _step_block(self, actions: np.ndarray):
        """step() with host arrays. The batch writes the arrays returned here, fresh ones each step, into one
        block (`cpu.gym_out_layout`, then with copy=True an obs copy; on the CPU the threads that step the envs
        write it): these are only cut out here, because copying, casting and or-ing them one by one in NumPy
        would cost more than the C step itself for a fast env."""
        n = self.num_envs
        ended, out = self.batch.gym_step(actions, self.copy)  # checks the values in C; raises before stepping
        flags = np.ndarray((4, n), np.bool_, out, self._flags_offset)  # terminated, truncated, done, done
        obs = np.ndarray(self._obs.shape, self._obs.dtype, out, self.batch.gym_obs_offset) if self.copy else self._obs
        infos: dict[str, Any] = {}
        if ended:
            fields = self._out_fields
            done = flags[2]
            info = {"episode_return": np.frombuffer(out, *fields["episode_return"]), "_episode_return": done,
                    "episode_length": np.frombuffer(out, *fields["episode_length"]), "_episode_length": flags[3]}
            if self.stat_names:
                stats = np.frombuffer(out, *fields["stats"]).reshape(-1, n)
                for k, name in enumerate(self.stat_names):
                    info[name], info["_" + name] = stats[k], done.copy()
            infos = self._end_infos(done, info)
        return obs, np.frombuffer(out, *self._out_fields["rewards"]), flags[0], flags[1], infos

    def _end_infos(self, done: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
        """A step's infos where envs `done` ended with episode `info` (SAME_STEP: as `final_info`, with `final_obs`)."""
        if self.autoreset_mode == AutoresetMode.DISABLED:
            self._needs_reset |= done
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            return info
        final_obs = np.empty(self.num_envs, dtype=object)
        ended = np.flatnonzero(done)
        rows = self.batch.final_obs[ended, 0].reshape(len(ended), *self.spaces.obs_shape)  # one copy of them all
        for i, row in zip(ended.tolist(), rows):  # each env's its own row of that copy
            final_obs[i] = row
        return {"final_obs": final_obs, "_final_obs": done.copy(), "final_info": info, "_final_info": done.copy()}

    def _device_episode_info(self) -> dict[str, Any]:
        b, n = self.batch, self.num_envs
        info = {"episode_return": b.episode_return.reshape(n), "_episode_return": b.done,
                "episode_length": b.episode_length, "_episode_length": b.done}
        for k, name in enumerate(self.stat_names):
            info[name], info["_" + name] = b.episode_stats.column(k), b.done
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            return {"final_obs": b.final_obs.reshape(n, *self.spaces.obs_shape), "_final_obs": b.done,
                    "final_info": info, "_final_info": b.done}
        return info

    # ------------------------------------------------------------------ state access
    @one_thread
    def get_state(self, indices=None) -> np.ndarray:
        """The states of sub-envs `indices` (an int, a list of ints, or None for all) as a (len, STATE_SIZE)
        float64 array, each in the layout of the Gymnasium env's `unwrapped.state` (envs whose file declares
        state access: CartPole and the classic-control envs); an AttributeError for other envs."""
        self._check_open()
        return self.batch.get_state(None if indices is None else np.atleast_1d(indices))

    @one_thread
    def set_state(self, values, indices=None) -> None:
        """Set the states of sub-envs `indices` (None: all) to `values` (len, STATE_SIZE), as assigning each
        Gymnasium env's `unwrapped.state`: the next step starts from them. Their observations in the env's
        buffers are updated; their episodes' step counts and returns carry on."""
        self._check_open()
        self.batch.set_state(None if indices is None else np.atleast_1d(indices), values)

    # ------------------------------------------------------------------ GPU only
    @one_thread
    def rollout(self, policy="random", steps: int = 1, *, graph: bool = True) -> None:
        """Run `steps` steps on the GPU without returning to Python in between; afterwards the
        env's buffers hold the last step, as after step() (NumPy mode copies them back once).

        policy="random": one fused kernel launch, uniform actions from a per-env stream.
        policy=callable: `policy(t, batch)` must enqueue on `batch.stream` the work that writes
        `batch.dev.actions` (N, 1) int64 from `batch.dev.obs`; with graph=True the loop is captured
        once as a CUDA graph and replayed with one launch. See `CudaBatch.rollout`."""
        self._check_open()
        if not self._has_reset:
            raise ResetNeeded("call reset() before rollout()")
        self.batch.rollout(policy, steps, graph=graph)  # the CPU batch's raises NotImplementedError

    def synchronize(self) -> None:
        """GPU envs: wait for the enqueued steps and raise ActionError if one had a bad action."""
        self._check_open()
        self.batch.synchronize()

    # ------------------------------------------------------------------ the rest
    def render(self) -> FrameSequence | None:
        """A lazy sequence of num_envs (H, W, 3) uint8 frames when render_mode is "rgb_array"."""
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode; pass render_mode='rgb_array' to make_vec")
            return None
        return FrameSequence(self.batch.render, self.num_envs)

    def call(self, name: str, *args, **kwargs) -> tuple:
        """Like SyncVectorEnv.call: call (or read) attribute `name`, one result per env."""
        attr = getattr(self, name)
        value = attr(*args, **kwargs) if callable(attr) else attr
        return tuple(value for _ in range(self.num_envs))

    def get_attr(self, name: str) -> tuple:
        """Like SyncVectorEnv.get_attr: attribute `name`, one entry per env."""
        return self.call(name)

    def set_attr(self, name: str, values) -> None:
        """Like SyncVectorEnv.set_attr; the batch shares one value, so per-env values must agree."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(f"values must be a list or tuple of length num_envs={self.num_envs}, got {len(values)}")
        if any(v is not values[0] and v != values[0] for v in values):
            raise ValueError(f"{name}: a native batch shares attributes, so every env must get the same value")
        setattr(self, name, values[0])

    @property
    def max_episode_steps(self) -> int | None:
        """The step limit (None: none); setting it (or set_attr) checks it and applies it to the batch."""
        return self._max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value) -> None:
        value = native.check_step_limit(value)
        if value != self._max_episode_steps and self.batch is not None:
            self.batch.max_episode_steps = value or 0  # a GPU batch refuses a change (its graphs hold the limit)
        self._max_episode_steps = value

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvironmentError(f"{type(self).__name__} is closed; make a new one with gymnasium.make_vec")

    def close_extras(self, **kwargs) -> None:
        if self.batch is not None:
            self.batch.close()
        self.batch = None


class NativeEnv(gymnasium.Env):
    """One native environment as a `gymnasium.Env` (no internal time limit: `gymnasium.make` adds TimeLimit).
    Mostly for checkers and single-env code; use the vector env for speed. render_mode="human" shows each reset
    and step in a pygame window at the env's render_fps (`pip install 'fastvec[render]'`); render() returns None.

    Seeds and actions are checked before anything changes, as in `NativeVectorEnv` (a seed is an int in
    [0, 2**64-1]). One env object is used by one thread at a time: a reset/step while another thread is inside
    one raises RuntimeError."""

    vector_class: type[NativeVectorEnv] = NativeVectorEnv
    vector_keywords: tuple[str, ...] = ()  # keywords the vector class takes besides the env's parameters
    metadata = {"render_modes": ["human", "rgb_array"]}  # read by gymnasium.make before construction

    def __init__(self, render_mode: str | None = None, source=None, **params):
        check_keywords(f"{type(self).__name__}.__init__", self.vector_class.env_name, params, self.vector_keywords)
        if render_mode not in (None, "human", "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None, 'human' or 'rgb_array'")
        self.vec = self.vector_class(1, autoreset_mode=AutoresetMode.DISABLED, render_mode=render_mode and "rgb_array",
                                     source=source, **params)
        self.metadata = {**{k: v for k, v in self.vec.metadata.items() if k != "autoreset_mode"},
                         "render_modes": ["human", "rgb_array"]}
        self.window = HumanWindow(self.metadata["render_fps"]) if render_mode == "human" else None
        self.render_mode = render_mode
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space
        self._seeded = False

    @one_thread
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._check_open()
        seed = None if seed is None else native.check_seed(seed)  # before super().reset reseeds np_random
        check_options(options)
        super().reset(seed=seed)
        if seed is not None or not self._seeded:  # later resets continue this env's RNG stream
            native_seed = seed if seed is not None else int(self.np_random.integers(0, SEED_LIMIT))
            obs, _ = self.vec.reset(seed=[native_seed])
            self._seeded = True
        else:
            obs, _ = self.vec.reset()
        if self.window is not None:
            self.window.show(self.vec.batch.render(0))
        return obs[0], {}

    @property
    def lock(self):
        return self.vec.lock  # one env object: the single env and the vector env it steps through

    @one_thread
    def step(self, action):
        if self.vec.closed:
            self._check_open()
        if not self._seeded:
            raise ResetNeeded("call reset() before step()")
        # Stepped on the batch, not through the vector env, whose DISABLED autoreset refuses an env stepped past
        # its end; a single env may be, as Gymnasium's may.
        batch, names = self.vec.batch, self.vec.stat_names
        batch.step(single_action(action, self.vec.spaces))  # checks the values; raises before stepping
        term, trunc = bool(batch.terminated[0]), bool(batch.truncated[0])
        step_info = {name: batch.episode_stats[0, k].item() for k, name in enumerate(names)} if term or trunc else {}
        if self.window is not None:
            self.window.show(batch.render(0))
        return batch.obs[0, 0].reshape(self.vec.spaces.obs_shape).copy(), float(batch.rewards[0, 0]), term, trunc, \
            step_info

    @property
    def state(self) -> np.ndarray | None:
        """The env's state as Gymnasium's classic-control envs' `unwrapped.state`: a float64 array in the same
        order and meaning (None before the first reset, as there). A read is a copy; assigning sets the state
        (and the observation the env holds), and the next step starts from it. Envs whose file declares no
        state access raise AttributeError."""
        self._check_open()
        values = self.vec.get_state([0])[0]
        return values if self._seeded else None

    @state.setter
    def state(self, values) -> None:
        self._check_open()
        self.vec.set_state(np.asarray(values, np.float64).reshape(1, -1), [0])

    def _check_open(self) -> None:
        if self.vec.closed:
            raise ClosedEnvironmentError(f"{type(self).__name__} is closed; make a new one with gymnasium.make")

    def render(self):
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        frame = self.vec.batch.render(0)
        return frame if self.window is None else self.window.show(frame)  # human: draws, returns None (as Gymnasium)

    def close(self):
        if getattr(self, "window", None) is not None:
            self.window.close()
        self.vec.close()
        super().close()


def __getattr__(name: str):
    """The Gymnasium entry points `{Id}VectorEnv` and `{Id}Env` of a registered env (fastvec/__init__.py registers
    them for every `native.ENVS` entry, e.g. `CartPoleEnv`, `Breakout-MinAtarVectorEnv`), made on first use as
    subclasses that name the env; Pong's, which differ, are written out below."""
    for key, info in native.ENVS.items():
        base = info.gym_id.split("/")[1]
        if name in (f"{base}VectorEnv", f"{base}Env"):
            vector = type(f"{base}VectorEnv", (NativeVectorEnv,), {"env_name": key, "__module__": __name__})
            single = type(f"{base}Env", (NativeEnv,), {"vector_class": vector, "__module__": __name__})
            globals().update({vector.__name__: vector, single.__name__: single})
            return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PongVectorEnv(NativeVectorEnv):
    """Pong against the scripted bot: the agent is the left paddle. `difficulty` 0 (easy) to 4
    (hard), `points` to win (21). Two learning players: fastvec.pettingzoo.vector_env("Pong", ...)."""

    env_name = "pong"

    def __init__(self, num_envs: int = 1, *, opponent: str | None = "bot", difficulty: int = 2, **kwargs):
        if opponent != "bot":
            raise ValueError(
                f"fastvec/Pong (Gymnasium) is single-agent and plays the scripted bot, so opponent must be 'bot', "
                f"got {opponent!r}; for two players use fastvec.pettingzoo.parallel_env('Pong') or vector_env('Pong', num_games)"
            )
        super().__init__(num_envs, **pong_params(opponent, difficulty, kwargs))


class PongEnv(NativeEnv):
    vector_class = PongVectorEnv
    vector_keywords = ("opponent", "difficulty")
