"""A MuJoCo task on MuJoCo Warp as the CUDA trainer's env batch (train.env_device = "cuda"): a GPU WarpBatch in
SAME_STEP whose outputs stay on the device, stepped by the trainer's rollout (trainer/cuda/device_envs.py) through
the step's CUDA graph; the host sees the sizes and spaces, and the observations a reset leaves."""

from __future__ import annotations

import numpy as np

from fastvec.native.mujoco.host_batch import MujocoEnvInfo, gym_id


class MujocoDeviceBatch:
    """num_envs envs of MuJoCo task `task` (Gymnasium's v5 keywords as `params`) on GPU 0 through MuJoCo Warp, as
    a trainer env batch: MujocoHostBatch's sizes, spaces and step limit, `warp` the WarpBatch (SAME_STEP, device
    arrays) that the trainer steps on its own stream (capture_step), and `obs` (N, 1, O) float32, the observations
    after the last reset(). Actions are clipped to the control range on the device as MujocoHostBatch clips them
    on the host. Its physics is MJWarp's float32 solver: close to the CPU batch's, not equal (docs/mujoco-gpu.md)."""

    device = "cuda"
    action_mask = world_state = None  # no available-action masks, no world state (backend.Backend's)
    host_arrays = False

    def __init__(self, task: str, num_envs: int, max_episode_steps: int | None = None, **params):
        from fastvec.native.mujoco.warp_batch import WarpBatch

        self.warp = WarpBatch(task, num_envs, max_episode_steps=max_episode_steps, same_step=True, device="cuda:0",
                              host_arrays=False, **params)
        n = self.num_envs = self.warp.num_envs
        self.env = MujocoEnvInfo(self.warp)
        self.obs = np.zeros((n, 1, self.warp.obs_size), np.float32)
        self.episode_stats = np.zeros((n, 0), np.float32)

    @property
    def max_episode_steps(self) -> int:
        return self.warp.max_episode_steps

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None), reseeding env i with seeds[i] if seeds are given; waits for the
        GPU and copies the observations to `obs`."""
        self.warp.reset(seeds, mask)
        self.obs[:, 0] = self.warp.obs.get()

    def step(self, actions) -> int:
        raise TypeError(f"a {gym_id(self.warp.spec.name)} batch on MuJoCo Warp steps inside the CUDA trainer's "
                        "rollout; step it through gymnasium.make_vec(..., device='cuda') instead")

    def close(self) -> None:
        self.warp.close()
