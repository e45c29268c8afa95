"""A MuJoCo task as a trainer env batch: `MujocoBatch` in SAME_STEP autoreset behind the host-batch interface the
trainers take from a CpuBatch or a GymBatch (obs (N, 1, O) float32, rewards (N, 1) float32, the episode's return
and length where one ended, Box actions clipped to the task's control range), plus the CLI's names of the tasks."""

from __future__ import annotations

import numpy as np

from fastvec.native.mujoco import TASKS, MujocoBatch
from fastvec.native.spaces import EnvSpaces

GYM_IDS = {f"fastvec/{task}-v5".lower(): task for task in TASKS}


def train_name(task: str) -> str:
    """The name fastvec-train knows a task by: its Gymnasium name in lower case (hopper, halfcheetah, walker2d),
    as the built-in envs are named after theirs (cartpole, mountaincarcontinuous)."""
    return task.lower()


def task_of(env: str) -> str | None:
    """The task fastvec-train's ENV names, or None: its name in any case, with or without dashes or underscores
    between words (hopper, HalfCheetah, half-cheetah, inverted_pendulum), or its registered id
    (fastvec/Hopper-v5, any case)."""
    if not isinstance(env, str):
        return None
    key = env.lower()
    if key in GYM_IDS:
        return GYM_IDS[key]
    key = key.replace("-", "").replace("_", "")
    return next((task for task in TASKS if train_name(task) == key), None)


def gym_id(task: str) -> str:
    """The task's registered Gymnasium id (fastvec/Hopper-v5), which a training config records as env.gym_id."""
    return f"fastvec/{task}-v5"


class MujocoEnvInfo:
    """The sizes and spaces a trainer reads from `batch.env` (as cpu.CompiledEnv's): one agent, a Box of the
    task's controls, float32 observations (the policy's dtype), no episode statistics."""

    num_agents = 1
    num_actions = 0  # no Discrete action space: the trainers read the Box head from `spaces`
    obs_dtype = np.dtype(np.float32)
    action_kind = "box"
    action_dtype = np.dtype(np.float32)

    def __init__(self, batch: MujocoBatch):
        self.name = train_name(batch.spec.name)
        self.render_fps = int(np.round(1.0 / batch.dt))  # as Gymnasium's task's
        self.obs_size, self.action_dims = batch.obs_size, batch.nu
        self.stat_names: list[str] = []
        low, high = batch.ctrl_low.astype(np.float32), batch.ctrl_high.astype(np.float32)
        self.spaces = EnvSpaces(self.name, "box", np.zeros(batch.nu, np.int64), low, high, (batch.obs_size,),
                                np.dtype(np.float32), np.full(batch.obs_size, -np.inf, np.float32),
                                np.full(batch.obs_size, np.inf, np.float32), batch.nq + batch.nv)


class MujocoHostBatch:
    """num_envs envs of MuJoCo task `task` (Gymnasium's v5 keywords as `params`) as a trainer env batch: every
    step writes obs (N, 1, O) float32 (the float64 observations converted once), rewards (N, 1) float32,
    terminated / truncated (N,) (truncated after max_episode_steps; None: Gymnasium's limit for the task), and,
    where an episode ended, its return and length and its last obs in final_obs; obs is then the next episode's
    first (SAME_STEP). Actions (N, D) are clipped to the task's control range, as CleanRL's ClipAction does
    (the policy's Gaussian samples are unbounded; Gymnasium's tasks charge their control cost on the action as
    given). threads > 0 sets the threads stepping the tasks (shared by every MuJoCo batch of this process).
    render(i) draws env i through `frames` (an object with frame(i) and close(), e.g. wrappers.mujoco.Frames)."""

    device = "cpu"
    action_mask = world_state = None  # no available-action masks, no world state (backend.Backend's)
    host_arrays = True

    def __init__(self, task: str, num_envs: int, max_episode_steps: int | None = None, threads: int = 0, **params):
        self.mj = mj = MujocoBatch(task, num_envs, max_episode_steps=max_episode_steps, same_step=True, **params)
        if threads > 0:
            mj.lib.fv_mj_set_threads(int(threads))
        self.num_envs, n, o = mj.num_envs, mj.num_envs, mj.obs_size
        self.env = MujocoEnvInfo(mj)
        self.low, self.high = self.env.spaces.action_low, self.env.spaces.action_high
        self.obs = np.zeros((n, 1, o), np.float32)
        self.final_obs = np.zeros((n, 1, o), np.float32)
        self.rewards = np.zeros((n, 1), np.float32)
        self.terminated, self.truncated = mj.terminated, mj.truncated  # (N,) bool, written by each step
        self.episode_return = np.zeros((n, 1), np.float32)
        self.episode_length = np.zeros(n, np.int32)
        self.episode_stats = np.zeros((n, 0), np.float32)
        self._actions = np.zeros((n, mj.nu), np.float32)
        self._return = np.zeros(n, np.float64)  # the running episode's return and length, per env
        self._length = np.zeros(n, np.int64)
        self.frames = None

    @property
    def max_episode_steps(self) -> int:
        return self.mj.max_episode_steps

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None), reseeding env i with seeds[i] if seeds are given."""
        self.mj.reset(seeds, mask)
        reset = slice(None) if mask is None else np.asarray(mask, np.bool_).reshape(self.num_envs)
        self.obs[reset, 0] = self.mj.obs[reset]
        self._return[reset] = 0
        self._length[reset] = 0

    def step(self, actions) -> int:
        """Step every env with actions (N, D) (or (N, 1, D)), clipped to the control range; returns how many
        episodes ended. A NaN or infinite action raises ActionError with nothing stepped."""
        mj = self.mj
        given = np.asarray(actions)
        if given.size != self._actions.size:
            raise ValueError(f"actions for {self.num_envs} envs of {mj.spec.name} must hold {self.num_envs} x "
                             f"{mj.nu} values, got shape {given.shape}")
        np.clip(given.reshape(self._actions.shape), self.low, self.high, out=self._actions, casting="unsafe")
        # np.clip keeps NaN and takes infinity to a bound: MujocoBatch refuses both, by index, given as they came
        bad = ~np.isfinite(given.reshape(self._actions.shape))
        ended = mj.step(np.where(bad, given.reshape(self._actions.shape), self._actions) if bad.any() else
                        self._actions)
        self.obs[:, 0] = mj.obs
        self.rewards[:, 0] = mj.rewards
        self._return += mj.rewards
        self._length += 1
        if ended:
            done = mj.terminated | mj.truncated
            self.episode_return[done, 0] = self._return[done]
            self.episode_length[done] = self._length[done]
            self.final_obs[done, 0] = mj.final_obs[done]
            self._return[done] = 0
            self._length[done] = 0
        return ended

    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i (the batch must have been given its `frames`)."""
        if self.frames is None:
            raise ValueError(f"this batch of {gym_id(self.mj.spec.name)} was made without frames to draw with "
                             "(make_batch(config, n, render=True) gives it them)")
        return self.frames.frame(i)

    def close(self) -> None:
        if self.frames is not None:
            self.frames.close()
        self.mj.close()
