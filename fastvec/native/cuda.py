"""The GPU env backend: CudaBatch, which steps N copies of an env compiled for a GPU (cuda_build.py) with one kernel
launch and no host synchronisation and hands out zero-copy DeviceArrays."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np

from fastvec.native import check_step_limit, graphs
from fastvec.native.cpu import gym_block, gym_obs_offset, require_state_access, state_indices, state_values
from fastvec.native.cuda_build import (ROLLOUT_KERNELS, STEP_KERNEL_NAMES, THREADS_PER_BLOCK, CudaCompiledEnv,
                                       env_source, load, parse_device, resident_blocks)
from fastvec.native.device_array import STREAMS, DeviceArray, device_view
from fastvec.native.gpu import INSTALL_HINT, NVCC_FLAGS, CudaUnavailableError, driver, primary_context

__all__ = ["CudaBatch", "CudaCompiledEnv", "CudaUnavailableError", "DeviceArray", "INSTALL_HINT", "NVCC_FLAGS",
           "ROLLOUT_KERNELS", "STEP_KERNEL_NAMES", "env_source", "load", "parse_device", "primary_context",
           "rollout_kernel_name", "step_kernel_name"]

ERROR_POLL_STEPS = 64  # device mode looks (without waiting) for bad actions every this many steps
NO_ERROR = 0xFFFF_FFFF_FFFF_FFFF


# ---------------------------------------------------------------------- the batch
def step_kernel_name(env, num_envs: int, name: str = "auto") -> str:
    """The step kernel (batch_gpu.h) for num_envs envs of env: `name` unless "auto", where a staged one
    falls back to env.wide_kernel_name if a block's slots and obs do not fit in shared memory.

    auto: "staged_wide" where an env's state and obs exceed 64 bytes and a block of them fits in
    shared memory (a large obs leaves each block in contiguous runs, not strided per thread), else
    env.wide_kernel_name ("wide_occ" or "wide", whichever keeps more threads per SM without
    spilling). num_envs is an argument so that a choice by size has its place; none differs yet."""
    if name not in ("auto",) + STEP_KERNEL_NAMES:
        raise ValueError(f"step kernel {name!r} is not one of auto, {', '.join(STEP_KERNEL_NAMES)}")
    obs_bytes = env.num_agents * env.obs_size * env.obs_dtype.itemsize
    if name == "auto":
        name = "staged_wide" if env.state_size + obs_bytes > 64 else env.wide_kernel_name
    if name.startswith("staged") and env.stage_threads == 0:
        return env.wide_kernel_name
    return name


def rollout_kernel_name(env, name: str = "auto") -> str:
    """The fused random rollout's kernel (random_gpu.h) for env: `name` unless "auto"; "staged" only where a block
    of the env's slots and obs fits in shared memory.

    auto: "staged" where the obs are bytes and outweigh the slot (MinAtar: a thread's byte obs in local memory
    cost the other kernels 1.5-3x); else "occ" where the 128-register cap fits more blocks an SM than "plain"
    does (1.03-1.41x plain's rate for the MPE and SMAX envs, whose steps need 160-255 registers), else "plain".
    benchmarks/lab/rollout_kernels.py measures all three on each env."""
    if name not in ("auto",) + tuple(ROLLOUT_KERNELS):
        raise ValueError(f"rollout kernel {name!r} is not one of auto, {', '.join(ROLLOUT_KERNELS)}")
    if name == "auto":
        obs_bytes = env.num_agents * env.obs_size * env.obs_dtype.itemsize
        plain, occ = env.rollout_kernels["plain"], env.rollout_kernels["occ"]
        if env.stage_threads > 0 and env.obs_dtype.itemsize == 1 and obs_bytes > env.slot_size:
            name = "staged"
        else:
            name = "occ" if resident_blocks(occ.num_regs) > resident_blocks(plain.num_regs) else "plain"
    if name == "staged" and env.stage_threads == 0:
        return "plain"
    return name


class CudaBatch:
    """num_envs copies of one env on a GPU, stepped by one kernel launch per step(). Buffers have
    cpu.CpuBatch's names and shapes (A = agents, O = obs size, S = stats): obs (N, A, O), rewards
    (N, A), terminated / truncated (N,), final_obs, episode_return (N, A), episode_length (N,),
    episode_stats (N, S), action_mask (N, A, NUM_ACTIONS) uint8 and world_state (N, WORLD_STATE_SIZE) float32
    (None where the env file defines no such hook), plus done (N,) (terminated | truncated) and actions: (N, A)
    int64 for Discrete, (N, A, D) for MultiDiscrete (int64) and Box (float32), D values per agent (staging for
    host actions; policies of `rollout` write it).

    numpy=False: those names are DeviceArrays, step() returns at once (no host synchronisation),
    and a bad device action is reported at a later synchronisation (reset, synchronize(),
    rollout in NumPy mode) or by a poll every ERROR_POLL_STEPS steps, or at once with validate=True.
    numpy=True: those names are pinned host (NumPy) mirrors refreshed by one copy and one
    synchronisation per step. The device arrays are always in `batch.dev`.
    """

    def __init__(self, env: CudaCompiledEnv, num_envs: int, autoreset_code: int, max_episode_steps: int | None,
                 *, numpy: bool = True, validate: bool = False, step_kernel: str = "auto",
                 rollout_kernel: str = "auto"):
        drv = driver()
        primary_context(env.device_index)
        n, a, o, s = num_envs, env.num_agents, env.obs_size, len(env.stat_names)
        self.env, self.num_envs, self.numpy, self.validate = env, n, numpy, validate
        self.device = f"cuda:{env.device_index}"
        self.autoreset_code = autoreset_code
        self._max_episode_steps = check_step_limit(max_episode_steps or None) or 0  # 0: never truncate
        self.stream = drv.Stream()  # a blocking stream: ordered with the legacy default stream (torch's default)
        self.stream_handle = int(self.stream.handle)
        STREAMS[self.stream_handle] = self.stream
        self._grid, self._block = ((n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, 1), (THREADS_PER_BLOCK, 1, 1)
        self._graphs = {}
        self.use_step_kernel(step_kernel)
        self.use_rollout_kernel(rollout_kernel)

        # One arena for everything the host may read back, so NumPy mode copies it in one go;
        # final_obs goes last so that modes other than SAME_STEP leave it out of the copy.
        fields = [("obs", (n, a, o), env.obs_dtype), ("rewards", (n, a), np.float32), ("terminated", (n,), np.bool_),
                  ("truncated", (n,), np.bool_), ("done", (n,), np.bool_), ("episode_return", (n, a), np.float32),
                  ("episode_length", (n,), np.int32), ("episode_stats", (n, s), np.float32),
                  ("error", (1,), np.uint64), ("final_obs", (n, a, o), env.obs_dtype)]
        if env.world_state_size:  # before final_obs: in the NumPy mode's copy whatever the autoreset mode
            fields.insert(-1, ("world_state", (n, env.world_state_size), np.float32))
        if env.action_mask:
            fields.insert(-1, ("action_mask", (n, a, env.num_actions), np.uint8))
        offsets, size = {}, 0
        for name, shape, dtype in fields:
            offsets[name] = size
            size += -(-int(np.prod(shape)) * np.dtype(dtype).itemsize // 256) * 256
        self._arena = drv.mem_alloc(size)
        self._slots = drv.mem_alloc(max(env.slots_bytes(n), 1))
        action_bytes = n * a * env.action_dims * env.action_dtype.itemsize
        self._actions = drv.mem_alloc(max(action_bytes, 1))
        self._slots_ptr = int(self._slots)
        drv.memset_d8(self._arena, 0, size)
        drv.memset_d8(self._slots, 0, max(env.slots_bytes(n), 1))
        drv.memset_d8(self._actions, 0, max(action_bytes, 1))
        base = int(self._arena)
        view = lambda ptr, shape, dtype, owner: DeviceArray(ptr, shape, dtype, owner, self.stream_handle, env.device_index)
        self.dev = SimpleNamespace(**{name: view(base + offsets[name], shape, dtype, self._arena)
                                      for name, shape, dtype in fields})
        # All simulator state as opaque bytes (states, then books, then RNGs: batch_gpu.h).
        self.dev.slots = view(int(self._slots), (env.slots_bytes(n),), np.uint8, self._slots)
        self._action_axes = (n, a, env.action_dims)  # an array of actions may leave out axes 1 and 2 of size 1
        action_shape = (n, a) if env.action_kind == "discrete" else self._action_axes
        self.dev.actions = view(int(self._actions), action_shape, env.action_dtype, self._actions)
        self._error_ptr = self.dev.error.ptr
        drv.memset_d8(self._error_ptr, 0xFF, 8)
        self._error_host = drv.pagelocked_empty(1, np.uint64)
        self._error_event, self._error_pending, self._steps = drv.Event(), False, 0
        self._copy_bytes = offsets["final_obs"] + (self.dev.final_obs.nbytes if autoreset_code == 1 else 0)
        if numpy:
            self._host_arena = drv.pagelocked_empty(size, np.uint8)
            host = {name: self._host_arena[offsets[name]:offsets[name] + int(np.prod(shape)) * np.dtype(dtype).itemsize]
                    .view(dtype).reshape(shape) for name, shape, dtype in fields}
            host["actions"] = np.zeros(action_shape, env.action_dtype)
            arrays = host
        else:
            arrays = {name: getattr(self.dev, name) for name, _, _ in fields}
            arrays["actions"] = self.dev.actions
        self.action_mask = self.world_state = None
        for name, value in arrays.items():
            if name != "error":
                setattr(self, name, value)
        masks, world = (getattr(self.dev, name, None) for name in ("action_mask", "world_state"))
        self._observe_ptrs = None if masks is None and world is None else \
            (0 if masks is None else masks.ptr, 0 if world is None else world.ptr)
        self._outputs = [self.dev.obs.ptr, self.dev.rewards.ptr, self.dev.terminated.ptr, self.dev.truncated.ptr,
                         self.dev.done.ptr, self.dev.final_obs.ptr, self.dev.episode_return.ptr,
                         self.dev.episode_length.ptr, self.dev.episode_stats.ptr]
        self.random_key, self.random_step = 0x5EED, 0  # the "random" policy's stream (see rollout)
        self.gym_obs_offset = gym_obs_offset(n, s)  # where gym_step's block holds its obs copy

    @property
    def host_arrays(self) -> bool:
        """True: the outputs are pinned NumPy mirrors (numpy=True); False: DeviceArrays."""
        return self.numpy

    @property
    def max_episode_steps(self) -> int:
        """The step limit (0: never truncate), fixed at construction: captured CUDA graphs hold it."""
        return self._max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value: int | None) -> None:
        if (check_step_limit(value or None) or 0) != self._max_episode_steps:
            raise ValueError("a GPU env's max_episode_steps is fixed at construction; make a new env")

    def use_step_kernel(self, name: str = "auto") -> None:
        """Step with kernel `name` ("auto" or one of STEP_KERNEL_NAMES; all give the same bits) from
        now on, with its grid: one env per thread, 256 threads per block (the staged kernel:
        env.stage_threads). Drops the graphs captured with the previous kernel."""
        env, n = self.env, self.num_envs
        name = step_kernel_name(env, n, name)
        threads = env.stage_threads if name.startswith("staged") else THREADS_PER_BLOCK
        self.step_kernel_name, self._step_fn = name, env.step_kernels[name]
        self._step_grid, self._step_block = ((n + threads - 1) // threads, 1), (threads, 1, 1)
        for g in self._graphs.values():
            g.close()
        self._graphs = {}

    def use_rollout_kernel(self, name: str = "auto") -> None:
        """Run rollout("random", T) with kernel `name` ("auto" or one of ROLLOUT_KERNELS) from now on, with its grid:
        env.stage_threads threads a block for "staged", else 256. All give the same bits (each checked against eager
        steps on the GPU: tests/native/test_cuda_backend.py)."""
        env, n = self.env, self.num_envs
        name = rollout_kernel_name(env, name)
        threads = env.stage_threads if name == "staged" else THREADS_PER_BLOCK
        self.rollout_kernel_name, self._rollout_fn = name, env.rollout_kernels[name]
        self._rollout_grid, self._rollout_block = ((n + threads - 1) // threads, 1), (threads, 1, 1)

    # ------------------------------------------------------------------ reset
    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None); reseed env i with seeds[i] if seeds is given.
        A synchronisation point: reports a bad action of an earlier device-mode step."""
        drv = sys.modules["pycuda.driver"]
        self.synchronize()
        n = self.num_envs
        if mask is not None and np.all(mask):
            mask = None  # a full reset (the wrapper passes all-True masks): also clears the flags
        seeds_dev = mask_dev = None
        if seeds is not None:
            seeds = np.ascontiguousarray(seeds, np.uint64)
            seeds_dev = drv.to_device(seeds)  # synchronous, on the legacy stream: ordered with ours
            if mask is None:
                self.random_key, self.random_step = int(seeds[0]) ^ 0x9E3779B97F4A7C15, 0
        if mask is not None:
            mask_dev = drv.to_device(np.ascontiguousarray(mask, np.uint8))
        self.env.reset_kernel.prepared_async_call(self._grid, self._block, self.stream, n, int(self._slots),
                                                  0 if seeds_dev is None else int(seeds_dev),
                                                  0 if mask_dev is None else int(mask_dev), self.dev.obs.ptr)
        if mask is None:
            for flags in (self.dev.terminated, self.dev.truncated, self.dev.done):
                drv.memset_d8_async(flags.ptr, 0, n, self.stream)
        self._observe(0 if mask_dev is None else int(mask_dev))
        self._download()
        self.stream.synchronize()  # seeds_dev and mask_dev are freed when this returns

    # ------------------------------------------------------------------ step
    def step(self, actions) -> int | None:
        """Step every env with actions (N, A, D), where axes of size 1 other than N may be left out ((N,) for
        one agent's Discrete action, (N, D) for one agent's MultiDiscrete or Box action): a NumPy array or any
        CUDA array (PyTorch, JAX, CuPy, DeviceArray; used in place, no copy) of integers for the discrete
        kinds, float32 or float64 for Box; autoreset per the mode. NumPy mode returns how many envs
        ended; device mode returns None without waiting."""
        view = self._action_view(actions)
        self._step_fn.prepared_async_call(
            self._step_grid, self._step_block, self.stream, self.num_envs, self._slots_ptr, *view, *self._outputs,
            self.autoreset_code, self._max_episode_steps, self._error_ptr)
        self._observe()
        return self._after_steps(1)

    def gym_step(self, actions, copy_obs: bool) -> tuple[int, np.ndarray]:
        """`step` for the Gymnasium face (cpu.CpuBatch.gym_step's contract): (envs ended, a fresh block of agent 0's
        outputs as cpu.gym_out_layout lays them out and, if copy_obs, an obs copy), cut from the pinned mirrors
        (cpu.gym_block). NumPy mode only: device arrays are handed out as they are."""
        if not self.numpy:
            raise NotImplementedError("gym_step() returns NumPy arrays: make the batch with numpy=True")
        ended = self.step(actions)
        return ended, gym_block(self, copy_obs)

    def _after_steps(self, steps: int) -> int | None:
        if self.numpy:
            self._download()
            self.stream.synchronize()
            self._raise_if_error(int(self.error_word()))
            return int(np.count_nonzero(self.done))
        if self.validate:
            self.synchronize()
            return None
        self._steps += steps
        if self._steps >= ERROR_POLL_STEPS:
            self._steps = 0
            self._poll_errors()
        return None

    def _action_view(self, actions) -> tuple[int, int, int, int, int, int]:
        """(pointer, env stride, agent stride, dimension stride, item size, signed) of the actions, on the device."""
        view = device_view(actions, self.stream_handle, self.env.device_index)
        if view is None:
            return self._host_action_view(actions)
        ptr, shape, strides, dtype = view
        if dtype is None:
            raise self._dtype_error(f"torch dtype {actions.dtype}")
        if not self._device_dtype_ok(dtype):
            raise self._dtype_error(f"dtype {dtype}")
        kept = self._kept_axes(tuple(shape))
        given = strides or tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * dtype.itemsize for k in range(len(shape)))
        layout = [0, 0, 0]  # the byte strides of (N, A, D); an axis left out has size 1, so its stride is never used
        for axis, k in enumerate(kept):
            layout[k] = given[axis]
        return (ptr, *layout, dtype.itemsize, int(dtype.kind == "i"))

    def _kept_axes(self, shape: tuple) -> list[int]:
        """Which axes of (N, A, D) an array of `shape` has: all, or all but some of size 1 after N."""
        full = self._action_axes
        optional = [k for k in (1, 2) if full[k] == 1]
        accepted = []
        for drop in ([], *[[k] for k in optional], optional):
            kept = [k for k in range(3) if k not in drop]
            if shape == tuple(full[k] for k in kept):
                return kept
            accepted.append(tuple(full[k] for k in kept))
        accepted = sorted(dict.fromkeys(accepted), key=len)  # every shape taken, the space's own among them
        raise ValueError(f"actions must have shape {' or '.join(map(str, accepted))} for {self.num_envs} envs of "
                         f"{self.env.spaces.describe()}, got {shape}")

    def _device_dtype_ok(self, dtype: np.dtype) -> bool:
        """Device actions are read in place: integers for the discrete kinds, float32 or float64 for Box."""
        if self.env.action_kind == "box":
            return dtype.kind == "f" and dtype.itemsize in (4, 8)
        return dtype.kind in "iu"

    def _dtype_error(self, what: str) -> TypeError:
        need = "float32 or float64" if self.env.action_kind == "box" else "integers"
        return TypeError(f"actions must be {need} for {self.env.spaces.describe()}, got {what}")

    def _host_action_view(self, actions) -> tuple[int, int, int, int, int, int]:
        drv = sys.modules["pycuda.driver"]
        spaces, full = self.env.spaces, self.dev.actions.shape
        host = np.asarray(actions)
        if not spaces.accepts_dtype(host.dtype):
            raise self._dtype_error(f"dtype {host.dtype}")
        if host.shape != (self.num_envs * self.env.num_agents,) or self.env.action_dims > 1:
            self._kept_axes(host.shape)  # else a flat (N * A,) array of one value per agent, taken as before
        flat = spaces.first_bad(host)  # host data: check here, so that nothing is stepped
        if flat is not None:
            raise spaces.action_error(flat, host.ravel()[flat], self.env.num_agents)
        # From pageable memory the copy takes the data before returning, so the next step may
        # reuse the host array while this one is still queued (pinned staging would race).
        drv.memcpy_htod_async(self.dev.actions.ptr, np.ascontiguousarray(host.reshape(full), self.env.action_dtype),
                              self.stream)
        return self._staged_action_view()

    def _staged_action_view(self) -> tuple[int, int, int, int, int, int]:
        """The view of dev.actions (N, A, D) of the env's action dtype."""
        size, (_, a, d) = self.env.action_dtype.itemsize, self._action_axes
        return self.dev.actions.ptr, a * d * size, d * size, size, size, int(self.env.action_kind != "box")

    # ------------------------------------------------------------------ errors and synchronisation
    def error_word(self) -> int:
        """The error word as of the last NumPy-mode copy (NO_ERROR if every action was in range)."""
        return int(np.frombuffer(self._host_arena, np.uint64, 1, self.dev.error.ptr - int(self._arena))[0])

    def _raise_if_error(self, word: int) -> None:
        if word == NO_ERROR:
            return
        drv = sys.modules["pycuda.driver"]
        drv.memset_d8(self._error_ptr, 0xFF, 8)
        bits = np.uint32(word & 0xFFFFFFFF)
        value = bits.view(np.float32) if self.env.action_kind == "box" else int(bits.view(np.int32))
        raise self.env.spaces.action_error(word >> 32, value, self.env.num_agents,
                                           " (checked on the GPU; that env was stepped with action 0)")

    def _poll_errors(self) -> None:
        """Look at the error word copied after an earlier step, without waiting for the GPU."""
        drv = sys.modules["pycuda.driver"]
        if self._error_pending:
            if not self._error_event.query():
                return
            self._error_pending = False
            self._raise_if_error(int(self._error_host[0]))
        drv.memcpy_dtoh_async(self._error_host, self._error_ptr, self.stream)
        self._error_event.record(self.stream)
        self._error_pending = True

    def synchronize(self) -> None:
        """Wait for every step enqueued so far; raise ActionError if one of them had a bad action."""
        drv = sys.modules["pycuda.driver"]
        self.stream.synchronize()
        self._error_pending = False
        drv.memcpy_dtoh(self._error_host, self._error_ptr)
        self._raise_if_error(int(self._error_host[0]))

    def _download(self) -> None:
        if self.numpy:
            sys.modules["pycuda.driver"].memcpy_dtoh_async(self._host_arena[:self._copy_bytes], int(self._arena),
                                                           self.stream)

    # ------------------------------------------------------------------ fused rollouts
    def random_actions(self, t: int) -> None:
        """Write the random policy's actions of policy step t into dev.actions (on our stream)."""
        self.env.random_actions_kernel.prepared_async_call(self._grid, self._block, self.stream, self.num_envs,
                                                           np.uint64(self.random_key), int(t), self.dev.actions.ptr)

    def rollout(self, policy, steps: int, *, graph: bool = True) -> int | None:
        """Run `steps` steps without returning to Python in between.

        policy="random": one fused kernel launch; each env draws uniform actions from its own
        stream (keyed by the reset seed, continued across calls).
        policy=callable: called as policy(t, batch) for t in range(steps); it must only enqueue
        work on batch.stream that writes batch.dev.actions (N, A, D) (int64, or float32 for Box) from
        batch.dev.obs. With
        graph=True the whole loop is captured once as a CUDA graph (cached per (policy, steps))
        and replayed with one launch, so the callable runs at capture only.
        Afterwards the buffers hold the last step's results, as after step()."""
        steps = int(steps)
        if steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps}")
        if isinstance(policy, str):
            if policy != "random":
                raise ValueError(f"policy={policy!r}: use 'random' or a callable policy(t, batch)")
            self._rollout_fn.prepared_async_call(
                self._rollout_grid, self._rollout_block, self.stream, self.num_envs, steps, np.uint64(self.random_key),
                self.random_step, self._slots_ptr, *self._outputs, self.autoreset_code, self._max_episode_steps)
            self._observe()
            self.random_step += steps
        elif not callable(policy):
            raise TypeError(f"policy must be 'random' or a callable policy(t, batch), got {type(policy).__name__}")
        elif graph:
            key = (policy, steps)
            if key not in self._graphs:
                g = graphs.CudaGraph(self.stream_handle)
                with g.capture():
                    self._policy_steps(policy, steps)
                self._graphs[key] = g
            self._graphs[key].launch()
        else:
            self._policy_steps(policy, steps)
        return self._after_steps(steps)

    def _policy_steps(self, policy, steps: int) -> None:
        for t in range(steps):
            policy(t, self)
            self._step_fn.prepared_async_call(
                self._step_grid, self._step_block, self.stream, self.num_envs, self._slots_ptr,
                *self._staged_action_view(), *self._outputs, self.autoreset_code, self._max_episode_steps,
                self._error_ptr)
            self._observe()

    def _observe(self, which: int = 0) -> None:
        """Enqueue the refresh of action_mask and world_state (batch_gpu.h's fv_observe_kernel) for every env, or
        for those of the device mask at address `which`; nothing for an env without the hooks."""
        if self._observe_ptrs is not None:
            self.env.observe_kernel.prepared_async_call(self._grid, self._block, self.stream, self.num_envs,
                                                        self._slots_ptr, which, *self._observe_ptrs)

    # ------------------------------------------------------------------ state access
    def get_state(self, indices=None) -> np.ndarray:
        """As cpu.CpuBatch.get_state: (len(indices), STATE_SIZE) float64 (waits for the GPU)."""
        drv = sys.modules["pycuda.driver"]
        require_state_access(self.env.spaces)
        idx = state_indices(indices, self.num_envs)
        out = np.zeros((len(idx), self.env.spaces.state_size), np.float64)
        if len(idx):
            idx_dev, out_dev = drv.to_device(idx), drv.mem_alloc(max(out.nbytes, 1))
            self.env.get_state_kernel.prepared_async_call(self._grid_of(len(idx)), self._block, self.stream,
                                                          self.num_envs, self._slots_ptr, len(idx), int(idx_dev),
                                                          int(out_dev))
            self.stream.synchronize()
            drv.memcpy_dtoh(out, out_dev)
        return out

    def set_state(self, indices, values) -> None:
        """As cpu.CpuBatch.set_state; the observations are written on the GPU (and copied back in NumPy mode)."""
        drv = sys.modules["pycuda.driver"]
        require_state_access(self.env.spaces)
        idx = state_indices(indices, self.num_envs)
        values = state_values(values, len(idx), self.env.spaces)
        if len(idx):
            idx_dev, values_dev = drv.to_device(idx), drv.to_device(values)
            self.env.set_state_kernel.prepared_async_call(self._grid_of(len(idx)), self._block, self.stream,
                                                          self.num_envs, self._slots_ptr, len(idx), int(idx_dev),
                                                          int(values_dev), self.dev.obs.ptr)
            self._observe()
            self._download()
            self.stream.synchronize()  # idx_dev and values_dev are freed when this returns

    def _grid_of(self, count: int) -> tuple[int, int]:
        return (count + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, 1

    # ------------------------------------------------------------------ the rest
    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i (negative: from the end), drawn on the host by the CPU build;
        an IndexError for an env past either end (the copy would read past the slots)."""
        i = int(state_indices([i], self.num_envs)[0])
        drv = sys.modules["pycuda.driver"]
        cpu_env = self.env.cpu
        self.stream.synchronize()
        slot = np.zeros(self.env.slot_size, np.uint8)  # an fv_slot with env i's State (its first member)
        state = np.empty(self.env.state_size, np.uint8)
        drv.memcpy_dtoh(state, int(self._slots) + int(i) * self.env.state_size)
        slot[:self.env.state_size] = state
        frame = np.zeros(cpu_env.render_shape, np.uint8)
        cpu_env.lib.fv_render(slot.ctypes.data, 0, frame.ctypes.data)
        return frame

    def close(self) -> None:
        """Wait for pending work and drop the graphs (memory goes when the last view does)."""
        self.stream.synchronize()
        for g in self._graphs.values():
            g.close()
        self._graphs.clear()
