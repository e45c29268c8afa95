"""A Gymnasium env id as a trainer env batch: `gymnasium.make_vec(id, num_envs, vectorization_mode="sync" or
"async")` in SAME_STEP autoreset, behind the interface the trainers take from a `CpuBatch` (cpu.py): num_envs,
obs (N, A, O) float32, rewards (N, A), terminated / truncated (N,), and where an env is done: episode_return
(N, A), episode_length (N,), episode_stats (N, S); env.obs_size / num_actions / num_agents / stat_names;
reset(seeds, mask); step(actions (N, A)). Where an episode ended, obs is already the next episode's first
(Gymnasium's own SAME_STEP autoreset: the step's reward and flags are the ended episode's, its last obs is in
final_obs). The trainers take Discrete actions and flat Box observations; any other space is refused
(`SpaceError`) with what is supported."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from fastvec.native.cpu import ActionError

SUPPORTED = "the bundled trainer trains Discrete actions and flat Box observations (shape (n,))"


class SpaceError(ValueError):
    """A Gymnasium env whose observation or action space the trainer cannot train."""


def space_problem(env_id: str, obs_space, action_space) -> str | None:
    """Why the trainer cannot train spaces (obs_space, action_space) of env_id (a message), or None."""
    from gymnasium import spaces

    if not isinstance(action_space, spaces.Discrete):
        hint = " (continuous control needs a Gaussian policy, which it does not have)" \
            if isinstance(action_space, spaces.Box) else ""
        return f"gym:{env_id} has {action_space} actions{hint}; {SUPPORTED}"
    if not isinstance(obs_space, spaces.Box) or len(obs_space.shape) != 1 \
            or obs_space.dtype.kind not in "fiub":
        kind = " (images need a convolutional policy, which it does not have)" \
            if isinstance(obs_space, spaces.Box) and len(obs_space.shape) >= 2 else ""
        return f"gym:{env_id} has {obs_space} observations{kind}; {SUPPORTED}"
    return None


class GymEnvInfo:
    """The sizes a trainer reads from `batch.env` (as cpu.CompiledEnv's): one agent, no episode stats."""

    num_agents = 1
    obs_dtype = np.dtype(np.float32)
    spaces = None  # a Discrete action space and float observations: the policy's defaults (resolve.make_policy_spec)

    def __init__(self, env_id: str, obs_size: int, num_actions: int, render_fps: int):
        self.name, self.obs_size, self.num_actions, self.render_fps = f"gym:{env_id}", obs_size, num_actions, render_fps
        self.stat_names: list[str] = []


class GymBatch:
    """num_envs copies of Gymnasium env `env_id` (its keyword arguments: `kwargs`) as a trainer env batch (see the
    module docstring). vectorization: "sync" (SyncVectorEnv, one process) or "async" (AsyncVectorEnv, a
    subprocess per env). render=True makes the envs with render_mode="rgb_array" (render(i)). close() when done
    (async: stops the subprocesses)."""

    device = "cpu"
    action_mask = world_state = None  # no available-action masks, no world state (backend.Backend's)

    def __init__(self, env_id: str, num_envs: int, kwargs: dict | None = None, vectorization: str = "sync",
                 render: bool = False):
        import gymnasium
        from gymnasium.vector import AutoresetMode

        self.env_id, self.num_envs = env_id, int(num_envs)
        extra = dict(kwargs or {})
        if render:
            extra["render_mode"] = "rgb_array"
        self.vec = gymnasium.make_vec(env_id, num_envs=self.num_envs, vectorization_mode=vectorization,
                                      vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **extra)
        try:
            obs_space, action_space = self.vec.single_observation_space, self.vec.single_action_space
            problem = space_problem(env_id, obs_space, action_space)
            if problem:
                raise SpaceError(problem)
            mode = self.vec.metadata.get("autoreset_mode")
            if mode is not None and AutoresetMode(mode) != AutoresetMode.SAME_STEP:
                raise ValueError(f"gym:{env_id}'s vector env steps in {mode} autoreset mode, not the SAME_STEP "
                                 f"mode the trainers need")
        except BaseException:
            self.vec.close()
            raise
        n, o = self.num_envs, int(obs_space.shape[0])
        self.action_start = int(action_space.start)
        fps = self.vec.metadata.get("render_fps") or 30
        self.env = GymEnvInfo(env_id, o, int(action_space.n), int(fps))
        self.obs = np.zeros((n, 1, o), np.float32)
        self.final_obs = np.zeros((n, 1, o), np.float32)
        self.rewards = np.zeros((n, 1), np.float32)
        self.terminated = np.zeros(n, np.bool_)
        self.truncated = np.zeros(n, np.bool_)
        self.episode_return = np.zeros((n, 1), np.float32)
        self.episode_length = np.zeros(n, np.int32)
        self.episode_stats = np.zeros((n, 0), np.float32)
        self._return = np.zeros(n, np.float64)  # the running episode's return and length, per env
        self._length = np.zeros(n, np.int64)

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None); reseed env i with seeds[i] if seeds is given (non-negative ints,
        as CpuBatch.reset)."""
        seed_list = None
        if seeds is not None:
            given = np.asarray(seeds)
            if given.dtype.kind not in "iu" or (given.dtype.kind == "i" and (given < 0).any()):
                raise ValueError(f"seeds must be non-negative integers (uint64), got {given.dtype} "
                                 f"{given.ravel()[:4].tolist()}...")
            seed_list = [int(s) for s in given.ravel()]
        if mask is None:
            obs, _ = self.vec.reset(seed=seed_list)
            reset = np.ones(self.num_envs, np.bool_)
        else:
            reset = np.asarray(mask, np.bool_).reshape(self.num_envs)
            if not reset.any():
                return
            obs, _ = self.vec.reset(seed=seed_list, options={"reset_mask": reset.copy()})
        self.obs[reset, 0] = np.asarray(obs, np.float32).reshape(self.num_envs, -1)[reset]
        self._return[reset] = 0
        self._length[reset] = 0

    def step(self, actions: np.ndarray) -> int:
        """Step every env with integer actions (N, A=1); where an episode ended, record its return and length and
        leave the next episode's first obs in obs (SAME_STEP). Returns how many envs ended; an action out of
        range raises ActionError before anything is stepped."""
        a = np.asarray(actions).reshape(self.num_envs)
        if a.dtype.kind not in "iu":
            raise ActionError(f"actions must be integers, got {a.dtype}")
        bad = (a < 0) | (a >= self.env.num_actions)
        if bad.any():
            k = int(np.argmax(bad))
            raise ActionError(f"action {a[k]} out of range for Discrete({self.env.num_actions}) at env {k}")
        obs, rewards, terminated, truncated, info = self.vec.step(a.astype(np.int64) + self.action_start)
        self.obs[:, 0] = np.asarray(obs, np.float32).reshape(self.num_envs, -1)
        self.rewards[:, 0] = rewards
        self.terminated[:] = terminated
        self.truncated[:] = truncated
        self._return += np.asarray(rewards, np.float64)
        self._length += 1
        done = self.terminated | self.truncated
        if done.any():
            self.episode_return[done, 0] = self._return[done]
            self.episode_length[done] = self._length[done]
            self._return[done] = 0
            self._length[done] = 0
            if "final_obs" in info:
                for i in np.flatnonzero(done):
                    self.final_obs[i, 0] = np.asarray(info["final_obs"][i], np.float32).reshape(-1)
        return int(done.sum())

    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i (the batch must have been made with render=True)."""
        if self.vec.render_mode != "rgb_array":  # (its envs would each draw None)
            raise ValueError(f"gym:{self.env_id} was made without render_mode='rgb_array'")
        return np.asarray(self.vec.render()[i], np.uint8)

    def close(self) -> None:
        self.vec.close()


def host_stub_source(env, folder: Path) -> Path:
    """A native env file with the sizes and action space of an env stepped on the host (a Gymnasium env, a MuJoCo
    task: `env` is its batch's env, with obs_size, num_actions and, for a Box or MultiDiscrete action, spaces) and
    no rules, for the CUDA trainer's host-env kernels, which are compiled around an env's sizes and action type
    but never step it (the host does). Written once per content under folder (the build cache)."""
    spaces = getattr(env, "spaces", None)
    kind = spaces.action_kind if spaces is not None else "discrete"
    if kind == "box":
        bound = lambda x: "FV_INF" if x == np.inf else "-FV_INF" if x == -np.inf else f"{float(x)!r}f"  # noqa: E731
        action = (f"#define ACTION_SPACE FV_BOX\n#define ACTION_DIMS {len(spaces.action_low)}\n"
                  f"#define ACTION_LOW {{{', '.join(map(bound, spaces.action_low))}}}\n"
                  f"#define ACTION_HIGH {{{', '.join(map(bound, spaces.action_high))}}}\n")
    elif kind == "multi_discrete":
        action = (f"#define ACTION_SPACE FV_MULTI_DISCRETE\n#define ACTION_DIMS {len(spaces.nvec)}\n"
                  f"#define ACTION_NVEC {{{', '.join(str(int(n)) for n in spaces.nvec)}}}\n")
    else:
        action = f"#define NUM_ACTIONS {int(env.num_actions)}\n"
    text = (f"/* fastvec: sizes of an env stepped on the host; never stepped on the GPU */\n"
            f'#include "fastvec.h"\n#define OBS_SIZE {int(env.obs_size)}\n{action}'
            f'#define NUM_AGENTS 1\n#define NUM_STATS 0\n#define STAT_NAMES ""\n#define RENDER_W 1\n'
            f"#define RENDER_H 1\ntypedef struct {{ int unused; }} State;\n"
            f"FV_FN void env_reset(State* s, fv_rng* rng, float* obs) {{\n"
            f"    (void)s; (void)rng; for (int i = 0; i < OBS_SIZE; i++) obs[i] = 0.0f;\n}}\n"
            f"FV_FN int env_step(State* s, fv_rng* rng, const ACT_T* actions, float* obs, float* rewards, "
            f"float* stats) {{\n    (void)s; (void)rng; (void)actions; (void)stats;\n"
            f"    for (int i = 0; i < OBS_SIZE; i++) obs[i] = 0.0f;\n    rewards[0] = 0.0f;\n    return 1;\n}}\n"
            f"FV_FN void env_render(const State* s, unsigned char* rgb) {{ (void)s; rgb[0] = rgb[1] = rgb[2] = 0; }}\n")
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = Path(folder) / f"host_stub_{int(env.obs_size)}_{kind}_{digest}.h"
    if not path.is_file() or path.read_text() != text:
        from fastvec.native.cpu import write_atomic
        write_atomic(path, text.encode())
    return path
