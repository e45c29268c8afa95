"""The Gymnasium faces of fastvec's MuJoCo tasks (native/mujoco): `fastvec/Ant-v5` and the other v5 ids as a
VectorEnv (NEXT_STEP autoreset, Gymnasium's vector infos with `_key` masks) and as a single Env."""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from fastvec import native
from fastvec.native.mujoco import TASKS, MujocoBatch
from fastvec.native.mujoco.warp_batch import mujoco_batch


RENDER_MODES = ["rgb_array", "depth_array"]
# Gymnasium's MujocoEnv keywords that only drawing uses
RENDER_KEYWORDS = ("width", "height", "camera_id", "camera_name", "default_camera_config", "max_geom", "visual_options")


class Frames:
    """Draws envs of a batch with Gymnasium's MujocoRenderer, its camera and size keywords and the task's default
    camera: an env's qpos and qvel go into a Python MjData of the same model, whose kinematics mj_forward computes
    (Gymnasium's frame after a step draws the kinematics of the last physics step's start: a hair apart)."""

    def __init__(self, task: str, batch: MujocoBatch, render_mode: str | None, options: dict):
        if render_mode not in (None, *RENDER_MODES):
            raise ValueError(f"render_mode must be None or one of {RENDER_MODES} for fastvec/{task}-v5 "
                             f"(a window, 'human', is Gymnasium's own {task}-v5's), got {render_mode!r}")
        self.render_mode, self.batch, self.options, self.renderer = render_mode, batch, options, None
        self.task = task

    def _start(self):
        import inspect

        from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

        from fastvec.native.mujoco import mujoco_package

        mujoco = mujoco_package()
        camera = None  # a task of the user's own: MuJoCo's free camera
        if self.task in TASKS:  # Gymnasium's default camera for the task
            cls = gymnasium.envs.registration.load_env_creator(gymnasium.spec(f"{self.task}-v5").entry_point)
            camera = inspect.signature(cls.__init__).parameters["default_camera_config"].default
        o = {"width": 480, "height": 480, "camera_id": None, "camera_name": None, "default_camera_config": camera,
             "max_geom": 1000, "visual_options": None, **self.options}
        self.model = mujoco.MjModel.from_xml_path(self.batch.xml_path)
        self.model.vis.global_.offwidth = max(self.model.vis.global_.offwidth, o["width"])
        self.model.vis.global_.offheight = max(self.model.vis.global_.offheight, o["height"])
        self.data = mujoco.MjData(self.model)
        self.renderer = MujocoRenderer(self.model, self.data, o["default_camera_config"], o["width"], o["height"],
                                       o["max_geom"], o["camera_id"], o["camera_name"], o["visual_options"])
        self.mj_forward = mujoco.mj_forward

    def frame(self, i: int):
        """Env i's frame in the render mode (None without one)."""
        if self.render_mode is None:
            return None
        if self.renderer is None:
            self._start()
        state = self.batch.get_state([i])[0]
        self.data.qpos[:], self.data.qvel[:] = state[:self.batch.nq], state[self.batch.nq:]
        self.mj_forward(self.model, self.data)
        return self.renderer.render(self.render_mode)

    def close(self):
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None


def _split_render_options(kwargs: dict) -> dict:
    return {k: kwargs.pop(k) for k in RENDER_KEYWORDS if k in kwargs}


def _spaces(batch: MujocoBatch) -> tuple[spaces.Box, spaces.Box]:
    obs = spaces.Box(-np.inf, np.inf, (batch.obs_size,), np.float64)
    action = spaces.Box(batch.ctrl_low.astype(np.float32), batch.ctrl_high.astype(np.float32), dtype=np.float32)
    return obs, action


class MujocoVectorEnv(VectorEnv):
    """num_envs envs of one MuJoCo task in one C batch, autoreset NEXT_STEP (Gymnasium's default) or SAME_STEP
    (autoreset_mode). Keywords are those of Gymnasium's `<Task>Env` v5 constructor (xml_file, frame_skip,
    ctrl_cost_weight, reset_noise_scale, ...). A task of your own: `MujocoVectorEnv(source="my_task.c",
    num_envs=N, xml_file="./my_model.xml")`, its keywords those its file declares. Infos hold the task's keys as
    Gymnasium's SyncVectorEnv gathers them; `unstable` (with its mask; under SAME_STEP in final_info) appears for
    an env whose simulation MuJoCo found unstable, which ends that env's episode (terminated).

    device="cuda" (or "cuda:N") steps the envs on the GPU with MuJoCo Warp (float32 physics, docs/mujoco-gpu.md).
    array_type="device" then returns fastvec DeviceArrays (`__cuda_array_interface__`, DLPack) that each step
    overwrites, without waiting for the GPU, and takes CUDA arrays as actions; its infos hold `was_reset`, and
    under SAME_STEP `final_obs` (N, O) with the mask `_final_obs`; the task's info values are the device array
    `batch.info` (columns as `batch.info_layout`)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": RENDER_MODES}

    def __init__(self, task: str | None = None, num_envs: int = 1, max_episode_steps: int | None = None,
                 render_mode=None, autoreset_mode=AutoresetMode.NEXT_STEP, device: str = "cpu",
                 array_type: str = "numpy", **kwargs):
        options = _split_render_options(kwargs)
        modes = {AutoresetMode.NEXT_STEP: False, AutoresetMode.SAME_STEP: True}
        try:
            same_step = modes[AutoresetMode(autoreset_mode)]
        except (ValueError, KeyError):
            raise ValueError(f"autoreset_mode must be AutoresetMode.NEXT_STEP or SAME_STEP, got {autoreset_mode!r}") from None
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.batch = mujoco_batch(task, num_envs, device=device, array_type=array_type,
                                  max_episode_steps=max_episode_steps or 0, same_step=same_step, **kwargs)
        self.device_arrays = array_type == "device"
        self.frames = Frames(self.batch.spec.name, self.batch, render_mode, options)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode,
                         "render_fps": int(np.round(1.0 / self.batch.dt))}  # as Gymnasium's
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.single_observation_space, self.single_action_space = _spaces(self.batch)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._reset_keys = set(self.batch.spec.reset_info)
        self._ones = np.ones(num_envs, np.bool_)
        self._seeded = False

    def _gather(self, values: np.ndarray, masks: dict) -> dict:
        """{key: values, _key: mask} of the info keys whose mask (masks[key in reset info]) is given and not all
        False; values 0 where the mask is False."""
        b, infos = self.batch, {}
        for key, dtype, cols, width in b.info_layout:
            mask = masks[key in self._reset_keys]
            if mask is None or not mask.any():  # no env gave this key
                continue
            column = values[:, cols].astype(b.info_dtype(dtype))
            column[~mask] = 0
            infos[key], infos[f"_{key}"] = (column if width is not None else column[:, 0]), mask.copy()
        return infos

    def _infos(self, reset_mask: np.ndarray | None) -> dict:
        """Gymnasium's vector infos: after reset() (reset_mask: the envs reset), its reset keys for those envs;
        after a step, every key for the envs that stepped on and the reset keys for those that were reset, and
        under SAME_STEP the ended episodes' final_obs and final_info."""
        b = self.batch
        if reset_mask is not None:
            return self._gather(b.info, {True: reset_mask, False: None})
        infos = self._gather(b.info, {True: self._ones, False: ~b.was_reset})
        if not b.same_step:
            if b.unstable.any():
                infos["unstable"], infos["_unstable"] = b.unstable.copy(), b.unstable.copy()
            return infos
        ended = b.was_reset
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(ended):
                final_obs[i] = b.final_obs[i].copy()
            final_info = self._gather(b.final_info, {True: ended, False: ended})
            if b.unstable.any():
                final_info["unstable"], final_info["_unstable"] = b.unstable.copy(), b.unstable.copy()
            infos.update(final_obs=final_obs, _final_obs=ended.copy(), final_info=final_info, _final_info=ended.copy())
        return infos

    def reset(self, *, seed=None, options=None):
        # As the native faces (native.check_seeds, checked before anything changes): an int seeds env i with
        # seed + i, a list one int or None per env (None: that env's stream continues).
        base, seeds, given = native.check_seeds(seed, self.num_envs)
        super().reset(seed=base)
        mask = None if options is None or options.get("reset_mask") is None else \
            np.asarray(options["reset_mask"], np.bool_).reshape(self.num_envs)
        if not self._seeded:  # unseeded: each env's stream from fresh entropy, as Gymnasium's
            seeds[~given] = self.np_random.integers(2**63, size=int((~given).sum())).astype(np.uint64)
            given[:] = True
        self._seeded = True
        native.reset_seeded(self.batch, seeds, given, mask)
        if self.device_arrays:
            return self.batch.obs, {}
        return self.batch.obs.copy(), self._infos(self._ones if mask is None else mask)

    def step(self, actions):
        self.batch.step(actions)
        b = self.batch
        if self.device_arrays:  # the batch's own device arrays, overwritten by the next step
            infos = {"was_reset": b.was_reset}
            if b.same_step:
                infos.update(final_obs=b.final_obs, _final_obs=b.was_reset)
            return b.obs, b.rewards, b.terminated, b.truncated, infos
        return b.obs.copy(), b.rewards.copy(), b.terminated.copy(), b.truncated.copy(), self._infos(None)

    def get_state(self, indices=None) -> np.ndarray:
        """qpos then qvel of envs `indices` (None: all), (len, nq + nv) float64."""
        return self.batch.get_state(indices)

    def set_state(self, indices, values) -> None:
        """Set envs `indices` to qpos, qvel as Gymnasium's reset leaves them after its noise (MujocoBatch.set_state)."""
        self.batch.set_state(indices, values)

    def render(self):
        """A frame of each env (a tuple, as Gymnasium's vector envs give), or None without a render mode."""
        return None if self.render_mode is None else tuple(self.frames.frame(i) for i in range(self.num_envs))

    def close_extras(self, **kwargs):
        self.frames.close()
        self.batch.close()


class MujocoEnv(gymnasium.Env):
    """One env of a MuJoCo task, as Gymnasium's `<Task>Env` v5 (gymnasium.make adds its TimeLimit)."""

    metadata = {"render_modes": RENDER_MODES}

    def __init__(self, task: str | None = None, render_mode=None, **kwargs):
        options = _split_render_options(kwargs)
        self.batch = MujocoBatch(task, 1, max_episode_steps=0, **kwargs)
        self.frames = Frames(self.batch.spec.name, self.batch, render_mode, options)
        self.metadata = {**self.metadata, "render_fps": int(np.round(1.0 / self.batch.dt))}  # as Gymnasium's
        self.observation_space, self.action_space = _spaces(self.batch)
        self.render_mode = render_mode
        self._int_reward = task == "InvertedPendulum" and "source" not in kwargs  # Gymnasium's reward is an int there
        self._seeded = False

    def _info(self, keys) -> dict:
        b = self.batch
        out = {}
        for key, dtype, cols, width in b.info_layout:
            if key in keys:
                values = b.info[0, cols].astype(b.info_dtype(dtype))
                out[key] = values if width is not None else (int(values[0]) if dtype is np.int64 else values[0])
        return out

    def reset(self, *, seed=None, options=None):
        seed = None if seed is None else native.check_seed(seed)  # as the native faces: an int in [0, 2**64-1]
        super().reset(seed=seed)
        if seed is None and not self._seeded:  # unseeded: a stream from fresh entropy, as Gymnasium's
            seed = int(self.np_random.integers(2**63))
        self._seeded = True
        self.batch.reset(None if seed is None else np.array([seed], np.uint64))
        return self.batch.obs[0].copy(), self._info(self.batch.spec.reset_info)

    def step(self, action):
        b = self.batch
        b.step(np.asarray(action)[None])
        info = self._info([key for key, *_ in b.info_layout])
        if b.unstable[0]:
            info["unstable"] = True
        reward = int(b.rewards[0]) if self._int_reward else b.rewards[0]
        return b.obs[0].copy(), reward, bool(b.terminated[0]), False, info

    @property
    def state(self) -> np.ndarray:
        """qpos then qvel (nq + nv) float64."""
        return self.batch.get_state([0])[0]

    def set_state(self, qpos, qvel) -> None:
        """As Gymnasium's `set_state(qpos, qvel)` right after its reset (MujocoBatch.set_state)."""
        self.batch.set_state([0], np.concatenate([np.ravel(qpos), np.ravel(qvel)])[None])

    def render(self):
        """The env's frame in its render mode (None without one)."""
        return self.frames.frame(0)

    def close(self):
        self.frames.close()
        self.batch.close()
