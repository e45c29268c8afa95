"""What a native batch offers every face (Gymnasium, PettingZoo, SB3, torch) and the trainers: the `Backend`
protocol that the CPU batch (cpu.CpuBatch) and the GPU batch (cuda.CudaBatch) both satisfy, and `EnvBuild`, the
sizes and spaces of the env build behind it. batches.py's `load_batch` makes one from an env source."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from fastvec.native.spaces import EnvSpaces


@runtime_checkable
class EnvBuild(Protocol):
    """An env compiled for one backend (cpu.CompiledEnv, cuda.CudaCompiledEnv): what its file declares."""

    name: str  # the env file's stem ("cartpole", "my_env")
    spaces: EnvSpaces  # observation shape and bounds, action kind, bounds and dtype, state access
    num_agents: int  # agents per env (A)
    obs_size: int  # values in one agent's observation (O)
    num_actions: int
    obs_dtype: np.dtype  # float32 or uint8
    action_kind: str  # "discrete", "multi_discrete" or "box"
    action_dims: int  # values in one agent's action (D)
    action_dtype: np.dtype  # int64 for the discrete kinds, float32 for Box
    stat_names: list[str]  # the env's own episode statistics (S), in episode_stats' column order
    action_mask: bool  # the env file defines ACTION_MASK (fastvec.h): per-agent available-action masks
    world_state_size: int  # its WORLD_STATE_SIZE (a global state for centralised critics), 0 without one

    @property
    def render_shape(self) -> tuple[int, int, int]:
        """(H, W, 3): the shape of a rendered frame."""


@runtime_checkable
class Backend(Protocol):
    """num_envs copies of one env stepped in place, as every face and trainer sees them.

    The outputs are attributes that keep their identity from step to step, each step overwriting them (A =
    agents, O = obs size, S = stats): obs (N, A, O), rewards (N, A) float32, terminated / truncated (N,) bool,
    final_obs (N, A, O) (the terminal obs where an env ended under SAME_STEP autoreset), and where an env is done:
    episode_return (N, A) float32, episode_length (N,) int32, episode_stats (N, S) float32. Where the env file defines
    fastvec.h's optional hooks, else None: action_mask (N, A, NUM_ACTIONS) uint8 (1: the agent may take the
    action) and world_state (N, WORLD_STATE_SIZE) float32, both of the state whose observation obs holds (after
    an autoreset, the new episode's), refreshed by every reset, step and set_state.

    Which kind of array they are is the backend's choice, told by `host_arrays`: NumPy arrays (the CPU batch, and
    the GPU batch with numpy=True: pinned mirrors refreshed once a step) or DeviceArrays on the GPU
    (`__cuda_array_interface__`, DLPack; the GPU batch with numpy=False). Every method is implemented by every
    backend: what one cannot do raises NotImplementedError naming the backend that can (the CPU batch's
    `rollout`), and what has nothing to do returns at once (the CPU batch's `synchronize` and `close`), so a face
    asks no `hasattr`.
    """

    device: str  # "cpu" or "cuda:N"
    host_arrays: bool  # True: the outputs are NumPy arrays; False: DeviceArrays on `device`
    num_envs: int
    env: EnvBuild
    gym_obs_offset: int  # where gym_step's block holds its obs copy
    obs: Any
    rewards: Any
    terminated: Any
    truncated: Any
    final_obs: Any
    episode_return: Any
    episode_length: Any
    episode_stats: Any
    action_mask: Any
    world_state: Any

    @property
    def max_episode_steps(self) -> int:
        """The step limit (0: never truncate). The CPU batch takes a new one for its next step; the GPU batch's
        is fixed at construction (captured graphs hold it): setting another raises ValueError."""

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask ((N,) bool; None: all) and write their first obs; reseed env i with seeds[i]
        ((N,) non-negative ints) where seeds are given, else continue each env's random stream. Resetting every
        env (None or an all-True mask) also clears terminated and truncated."""

    def step(self, actions) -> int | None:
        """Step every env with actions (N, A, D) (axes of size 1 after N may be left out; integers for the
        discrete kinds, numbers for Box) and autoreset per the batch's mode. Returns how many envs ended, or
        None where the outputs are DeviceArrays (the GPU is not waited for). A bad action raises ActionError
        with nothing stepped (host arrays), or at the next synchronisation (device arrays)."""

    def gym_step(self, actions, copy_obs: bool) -> tuple[int, np.ndarray]:
        """`step` for the Gymnasium face with host arrays: (envs ended, a fresh uint8 block of agent 0's outputs
        as cpu.gym_out_layout lays them out, then with copy_obs an obs copy at byte `gym_obs_offset`). The CPU
        batch's C step writes it; the GPU batch cuts it from its pinned mirrors; with device arrays it raises
        NotImplementedError (step() and the arrays themselves serve them)."""

    def get_state(self, indices=None) -> np.ndarray:
        """The states (len(indices), STATE_SIZE) float64 of envs `indices` (None: all), in the layout of the
        Gymnasium env's `unwrapped.state`; AttributeError for an env file that declares no state access."""

    def set_state(self, indices, values) -> None:
        """Set envs `indices` (None: all) to states `values` (len, STATE_SIZE) and write their obs; their
        episodes' lengths and returns carry on."""

    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i, on the host."""

    def synchronize(self) -> None:
        """Wait for every step enqueued so far and raise ActionError if one had a bad action (the CPU batch
        steps synchronously: nothing to wait for)."""

    def rollout(self, policy, steps: int, *, graph: bool = True) -> int | None:
        """Run `steps` steps without returning to Python in between (the GPU batch: a fused random policy or
        a captured CUDA graph); the CPU batch raises NotImplementedError."""

    def close(self) -> None:
        """Release what the batch holds beyond its memory (the GPU batch: waits for its stream, drops its
        graphs); the batch is not used afterwards."""
