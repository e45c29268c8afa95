"""PyTorch face of a fastvec env: observations, rewards, dones and infos as torch tensors that
alias the env's own buffers (no copies on a GPU env), and torch action tensors taken in place.

    envs = TorchVectorEnv(fastvec.make_vec("CartPole", 1 << 20, device="cuda", array_type="device"))
    obs, info = envs.reset(seed=0)                 # torch.float32 (N, 4) on cuda, a view
    obs, rew, term, trunc, info = envs.step(policy(obs).argmax(-1))

JAX users need no wrapper: `jax.numpy.from_dlpack(obs)` takes a DeviceArray without a copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium.vector import VectorWrapper

from fastvec.native import graphs


def as_tensor(x):
    """A torch tensor sharing x's memory: a DeviceArray (via __cuda_array_interface__, on its
    GPU) or a NumPy array (on the CPU); dicts are converted value by value."""
    if isinstance(x, dict):
        return {k: as_tensor(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return torch.from_numpy(x) if x.dtype != object else x
    if hasattr(x, "__cuda_array_interface__"):
        return torch.as_tensor(x, device=getattr(x, "device", "cuda"))
    return x


class TorchVectorEnv(VectorWrapper):
    """A fastvec VectorEnv whose reset/step return torch tensors. On a GPU env made with
    array_type="device" they are views of the env's buffers, made once and overwritten by every
    step (clone() what you keep); on a CPU env they share the NumPy arrays' memory.

    Like the env it wraps, it is used by one thread at a time: a reset/step while another thread
    is inside one raises RuntimeError; a closed one raises `gymnasium.error.ClosedEnvironmentError`."""

    def __init__(self, env):
        super().__init__(env)
        base = env.unwrapped
        self._batch = base.batch
        self._on_gpu = not self._batch.host_arrays  # device arrays: views on the GPU
        self._cache: dict[tuple, Any] = {}  # views of the env's persistent buffers
        self._fresh = bool(getattr(base, "copy", False))  # copy=True: new buffers every step, no cache

    def _tensor(self, x):
        if isinstance(x, dict):
            return {k: self._tensor(v) for k, v in x.items()}
        if not self._on_gpu or self._fresh or not hasattr(x, "__cuda_array_interface__"):
            return as_tensor(x)
        key = (x.ptr, x.shape, x.dtype.str, x.strides)
        if key not in self._cache:
            self._cache[key] = as_tensor(x)
        return self._cache[key]

    def _order_after_env(self) -> None:
        # Our stream is a blocking one, so torch's default (legacy) stream is ordered after it
        # already; a user's side stream must wait explicitly.
        if self._on_gpu:
            current = torch.cuda.current_stream().cuda_stream
            if current not in (0, self._batch.stream_handle):
                graphs.Event().make_wait(waiter=current, producer=self._batch.stream_handle)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._order_after_env()
        return self._tensor(obs), self._tensor(info)

    def step(self, actions):
        if not self._on_gpu and isinstance(actions, torch.Tensor):
            actions = actions.detach().cpu().numpy()
        obs, rew, term, trunc, info = self.env.step(actions)
        self._order_after_env()
        return self._tensor(obs), self._tensor(rew), self._tensor(term), self._tensor(trunc), self._tensor(info)
