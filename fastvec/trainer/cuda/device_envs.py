"""The rollout path with a MuJoCo task on MuJoCo Warp (train.env_device = "cuda" for a MuJoCo task): the env's
step, captured by MuJoCo Warp as one CUDA graph, replays on the actor's stream between the policy's graphs, so a
rollout runs on the GPU without the host waiting at any step. HostEnvs' buffers, policy steps and results."""

from __future__ import annotations

import numpy as np

from fastvec.trainer.cuda.host_envs import HostEnvs


class DeviceEnvs(HostEnvs):
    """HostEnvs with one env group whose batch (native/mujoco/device_batch.py's MujocoDeviceBatch) steps on the
    GPU: at each step the policy's actions are clipped into the env's action buffer (device_env_actions_kernel),
    the env's captured step runs, and its outputs become host_record_kernel's inputs where they are
    (device_env_outputs_kernel), in place of the host's batch.step and the uploads.

    Why not one graph for the whole rollout: MuJoCo Warp captures its step itself (its solver loop becomes a
    conditional node of that capture), and a graph cannot be launched into a stream being captured, so the step's
    graph is replayed between the policy's (two graph launches a step from the host, none waited for)."""

    name = "device"

    def __init__(self, plan, spec, layout, arena, policy, slot, train: dict, seed_key: int, batch, timing: dict):
        super().__init__(plan, spec, layout, arena, policy, slot, train, seed_key, batch, [batch], timing)
        self.step_graph = None

    def describe(self) -> str:
        return "device envs: MuJoCo Warp's captured step between the GEMM-path policy's graphs"

    def add_tensors(self, arena) -> None:
        super().add_tensors(arena)
        n, dims = self.plan.num_envs, self.action_shape[0]
        arena.add("env_return", (n,), np.float64, "(N,) each env's running episode return")
        arena.add("env_length", (n,), np.int32, "(N,) each env's running episode length")
        arena.add("env_low", (dims,), np.float32, "(D,) the control range's low ends")
        arena.add("env_high", (dims,), np.float32, "(D,) ... and high ends")

    def start(self, cuda, actor, seeds: np.ndarray, make_batch) -> None:
        """HostEnvs.start (the batch reset with the trainer's seeds, the first obs uploaded), then the control
        range and the env's step captured to replay on the actor's stream."""
        super().start(cuda, actor, seeds, make_batch)
        spaces = self.batch.env.spaces
        self.arena.set(cuda, "env_low", np.asarray(spaces.action_low, np.float32))
        self.arena.set(cuda, "env_high", np.asarray(spaces.action_high, np.float32))
        self.step_graph = self.batch.warp.capture_step(stream=self.k.stream.handle)

    def record(self, slot: int) -> None:
        """Collect into `slot`: each step's policy, env step and record enqueued on the actor's stream (the policy
        pieces as CUDA graphs from the second rollout on); nothing here waits for the GPU."""
        g = self.groups[0]

        def start():
            self.carry_in(slot)
            self.infer(g, 0, slot)

        self.segment((slot, "start", 0), start)
        for t in range(self.plan.horizon):
            self.step_graph.launch()
            self.segment((slot, 0, t), lambda t=t: self.record_step(g, t, slot))
        self.finish(slot)

    def hand_actions(self, g: dict, actions: int) -> None:
        """Clip the policy's actions into the env's action buffer (as MujocoHostBatch.step clips them)."""
        a, n, dims = self.arena, g["envs"], self.action_shape[0]
        self.k.launch("device_env_actions_kernel", n * dims, np.int64(n), np.int32(dims), actions, a.ptr("env_low"),
                      a.ptr("env_high"), self.batch.warp.dev.actions.ptr)

    def upload(self, g: dict) -> None:
        """The env's step outputs into the group's staging rows (host_in), as MujocoHostBatch.step writes them."""
        warp, dev, a, n = self.batch.warp, g["dev"], self.arena, g["envs"]
        o = self.spec.obs_size
        self.k.launch("device_env_outputs_kernel", max(n * o, n), warp.obs.ptr, warp.rewards.ptr,
                      warp.terminated.ptr, warp.truncated.ptr, a.ptr("env_return"), a.ptr("env_length"), dev["obs"],
                      dev["rewards"], dev["ep_return"], dev["ep_length"], dev["terminated"], dev["truncated"],
                      np.int32(n), np.int32(o))

    def close(self) -> None:
        super().close()
        self.step_graph = None
