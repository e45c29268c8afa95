"""The rollout path with the env on the CPU (train.env_device = "cpu": host environments, also self-play's):
CPU env batches stepped on the host in env groups, pipelined with the policy on the GPU, so the CPU steps one
group while the GPU runs the policy for the other. Same buffers and results as the GPU-env paths."""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from fastvec.native.graphs import CudaDriverError, CudaGraph
from fastvec.trainer.agent_inputs import AgentInputs
from fastvec.trainer.cuda.heads import record_reward_scaling
from fastvec.trainer.cuda.kernel_args import HostRecordArgs, pack
from fastvec.trainer.cuda.plan import Plan, policy_inputs, transforms_obs


def env_ranges(num_envs: int, groups: int, host_batches: list | None) -> list[tuple[int, int]]:
    """Consecutive env ranges [lo, hi) of the groups: the given batches' sizes, or np.array_split's split."""
    counts = [b.num_envs for b in host_batches] if host_batches else \
        [len(r) for r in np.array_split(np.arange(num_envs), min(max(groups, 1), num_envs))]
    if sum(counts) != num_envs:
        raise ValueError(f"host_batches hold {sum(counts)} envs, the trainer's batch {num_envs}")
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


class HostEnvs:
    """NumpyTrainer.collect with the policy on the GPU (the actor's stream and weights) and the env on the CPU,
    over env groups (consecutive env ranges, each its own CPU batch, pinned buffers and event)."""

    name = "host"

    def __init__(self, plan: Plan, spec, layout, arena, policy, slot, train: dict, seed_key: int,
                 batch, host_batches: list | None, timing: dict):
        self.plan, self.spec, self.layout, self.arena, self.policy, self.slot = plan, spec, layout, arena, policy, slot
        self.seed_key, self.reward_clamp, self.timing, self.train = seed_key, train.reward_clamp, timing, train
        self.batch, self.host_batches = batch, host_batches
        self.num_stats = len(batch.env.stat_names)
        # a row's action as the rollout buffer holds it: an int32 (Discrete), or D values of the env's action type
        discrete = spec.action_kind == "discrete"
        self.action_shape = () if discrete else tuple(spec.action_shape)
        self.action_dtype = np.dtype(np.int32 if discrete else spec.action_dtype)
        self.ranges = env_ranges(plan.num_envs, train.env_groups, host_batches)
        self.groups = []
        self.graphs = {}  # (slot, group, step) -> the graph of that piece of the rollout (segment)
        self.rollouts_run = 0
        timing.update(env=0.0, wait=0.0)  # of the rollout: the CPU stepping the env, and waiting for actions

    def describe(self) -> str:
        return f"host envs: CPU batches in {len(self.ranges)} group(s) beside the GEMM-path policy"

    def staging_layout(self, envs: int) -> tuple[dict, int]:
        """The pinned upload buffer of a group of `envs` envs: {name: (byte offset, shape, dtype)} of the
        batch's step outputs host_record_kernel reads (the obs with any agent id: AgentInputs.obs), then a team's
        action masks and world-state critic input (copied into the slot's rows), each 16-byte aligned, and the
        total bytes."""
        spec, rows = self.spec, envs * self.plan.num_agents
        fields = [("obs", (rows, spec.input_size), np.float32), ("rewards", (rows,), np.float32),
                  ("ep_return", (rows,), np.float32), ("ep_stats", (envs, self.num_stats), np.float32),
                  ("ep_length", (envs,), np.int32), ("terminated", (envs,), np.uint8), ("truncated", (envs,), np.uint8)]
        if self.plan.masked:
            fields.append(("masks", (rows, spec.num_actions), np.uint8))
        if spec.world_size:
            fields.append(("world", (rows, spec.critic_input_size), np.float32))
        layout, offset = {}, 0
        for name, shape, dtype in fields:
            layout[name] = (offset, shape, np.dtype(dtype))
            offset += (math.prod(shape) * np.dtype(dtype).itemsize + 15) // 16 * 16
        return layout, offset

    def add_tensors(self, arena) -> None:
        total = sum(self.staging_layout(hi - lo)[1] for lo, hi in self.ranges)
        arena.add("host_in", (total,), np.uint8, "host envs' step outputs, per group as staging_layout")

    def start(self, cuda, actor, seeds: np.ndarray, make_batch) -> None:
        """With the actor's launcher, cuBLAS and weights (arena name): make (make_batch(num_envs)) or take one
        host batch per group, reset group g's env i with env lo_g + i's
        seed (so the envs are the same however they are grouped), upload the first obs to obs[T] of the last
        slot, and set up each group's pinned buffers (step outputs up, actions down) and its event."""
        self.cuda = cuda
        self.k, self.blas, self.params = actor
        a, plan = self.arena, self.plan
        batches = self.host_batches
        if batches is None:
            batches = [self.batch] if len(self.ranges) == 1 else [make_batch(hi - lo) for lo, hi in self.ranges]
        staging_offset = 0
        for (lo, hi), batch in zip(self.ranges, batches):
            if batch.obs.shape[1:] != (plan.num_agents, self.spec.obs_size):
                raise ValueError(f"host batch obs {batch.obs.shape[1:]} do not match "
                                 f"({plan.num_agents}, {self.spec.obs_size})")
            batch.reset(seeds[lo:hi], None)
            layout, nbytes = self.staging_layout(hi - lo)
            pinned = cuda.pagelocked_empty(nbytes, np.uint8)
            views = {name: pinned[off:off + math.prod(shape) * dtype.itemsize].view(dtype).reshape(shape)
                     for name, (off, shape, dtype) in layout.items()}
            dev = {name: a.ptr("host_in", staging_offset + off) for name, (off, _, _) in layout.items()}
            rows = (hi - lo) * plan.num_agents
            self.groups.append({"batch": batch, "inputs": AgentInputs(self.spec, batch), "envs": hi - lo,
                                "row0": lo * plan.num_agents, "rows": rows, "pinned": pinned, "views": views,
                                "dev": dev, "dev_in": a.ptr("host_in", staging_offset),
                                "actions": cuda.pagelocked_empty((rows, *self.action_shape), self.action_dtype),
                                "event": cuda.Event(cuda.event_flags.DISABLE_TIMING)})
            staging_offset += nbytes
            first_row = plan.horizon * plan.rows + lo * plan.num_agents  # obs[T] of the last slot, this group's rows
            for name, width, value in self.inputs(self.groups[-1]):
                dtype = np.uint8 if name == "masks" else np.float32
                cuda.memcpy_htod(self.slot(name, plan.slot_count - 1, first_row * width),
                                 np.ascontiguousarray(value, dtype))

    def inputs(self, g: dict) -> list[tuple[str, int, np.ndarray]]:
        """plan.policy_inputs' (name, width) with group g's rows now (AgentInputs, as NumpyTrainer.collect reads
        them), in the batch's dtypes: where they go converts them."""
        read = {"obs": g["inputs"].obs, "masks": g["inputs"].mask, "world": g["inputs"].world}
        return [(name, width, read[name]()) for name, width, _ in policy_inputs(self.spec, self.plan)]

    def record(self, slot: int) -> None:
        """Collect into `slot`, pipelined over the env groups: the CPU waits for group g's actions at step t
        (its event), steps g's batch, copies the outputs into g's pinned buffer, and enqueues their upload,
        host_record_kernel and g's policy step t + 1; meanwhile the GPU works through the other group's step.
        Each enqueued piece is a CUDA graph from the second rollout on (one per slot, group and step: the
        pointers differ), so the CPU spends its time on the env rather than on launches. Nothing here waits
        for the whole stream: the trainer's rollout() (sync) or the next update's event (async) does."""
        plan, stream, t_len = self.plan, self.k.stream, self.plan.horizon

        def start(g):
            if g is self.groups[0]:
                self.carry_in(slot)
            self.infer(g, 0, slot)

        for i, g in enumerate(self.groups):
            self.segment((slot, "start", i), lambda g=g: start(g))
            g["event"].record(stream)
        for t in range(t_len):
            for i, g in enumerate(self.groups):
                t0 = time.perf_counter()
                g["event"].synchronize()
                t1 = time.perf_counter()
                batch, views, rows = g["batch"], g["views"], g["rows"]
                batch.step(g["actions"].reshape(g["envs"], plan.num_agents, *self.action_shape))
                for name, _, value in self.inputs(g):
                    views[name][...] = value
                views["rewards"][...] = batch.rewards.reshape(rows)
                views["ep_return"][...] = batch.episode_return.reshape(rows)
                views["ep_stats"][...] = batch.episode_stats
                views["ep_length"][...] = batch.episode_length
                views["terminated"][...] = batch.terminated
                views["truncated"][...] = batch.truncated
                self.timing["wait"] += t1 - t0
                self.timing["env"] += time.perf_counter() - t1
                self.segment((slot, i, t), lambda g=g, t=t: self.record_step(g, t, slot))
                if t + 1 < t_len:
                    g["event"].record(stream)
        self.finish(slot)

    def carry_in(self, slot: int) -> None:
        """Enqueue the copy of obs[0], starts[0] (masks[0], world[0]) of `slot`: those at T of the previous rollout."""
        plan, r = self.plan, self.plan.rows
        previous = (slot + 1) % plan.slot_count
        for name, width, item in [("starts", 1, 4), *policy_inputs(self.spec, plan)]:
            self.cuda.memcpy_dtod_async(self.slot(name, slot), self.slot(name, previous, plan.horizon * r * width),
                                        r * width * item, self.k.stream)

    def finish(self, slot: int) -> None:
        """Enqueue the rollout's bootstrap and reward scaling; count the rollout."""
        self.segment((slot, "bootstrap"), lambda: self.bootstrap(slot))
        record_reward_scaling(self.k, self.arena, self.plan, self.train, self.slot("rewards", slot),
                              self.slot("dones", slot))
        self.rollouts_run += 1

    def infer(self, g: dict, t: int, slot: int) -> None:
        """Enqueue group g's policy step t into `slot`: (the segment's state,) the forward over its rows of
        obs[t], the sampling into actions/logp/values[t], and the actions' copy to g's pinned buffer."""
        spec, a, k, plan = self.spec, self.arena, self.k, self.plan
        r, o, h, row0, rows = plan.rows, spec.input_size, spec.hidden, g["row0"], g["rows"]
        ls, w, ny = spec.state_layers, self.layout.offsets["layer0.w"][1][0], spec.head_size + 1
        buf = lambda name, offset=0: self.slot(name, slot, offset)  # noqa: E731
        if t % plan.bptt == 0 and ls:
            for layer in range(ls):
                segment = ((t // plan.bptt) * ls + layer) * r * h
                self.cuda.memcpy_dtod_async(buf("segment_state", segment + row0 * h),
                                            a.ptr("state", layer * r * h + row0 * h), rows * h * 4, k.stream)
        state = [a.ptr("state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
        acts = [a.ptr("r_act", (i % 2) * r * h + row0 * h) for i in range(spec.layers + 1)]
        y = buf("r_y", row0 * ny)
        self.policy.forward(k, self.blas, rows, 1, buf("obs", (t * r + row0) * o), buf("starts", t * r + row0),
                            state, state, acts, [a.ptr("r_pre", row0 * w)] * spec.layers, [0] * spec.layers, y,
                            self.params, x0=self.x0(row0), world=self.world(slot, t, row0))
        actions = buf("actions", (t * r + row0) * math.prod(self.action_shape))
        logstd = a.ptr(self.params, self.layout.offsets["dec.logstd"][0]) if spec.action_kind == "box" else 0
        mask = buf("masks", (t * r + row0) * spec.num_actions) if plan.masked else 0
        k.launch("host_sample_kernel", rows, np.int32(rows), np.int32(row0), y, logstd, mask, actions,
                 buf("logp", t * r + row0), buf("values", t * r + row0), a.ptr("scalars"), np.int32(t),
                 np.uint64(self.seed_key))
        self.hand_actions(g, actions)

    def hand_actions(self, g: dict, actions: int) -> None:
        """Enqueue the copy of group g's actions (device address `actions`) to its pinned buffer, for its batch."""
        self.cuda.memcpy_dtoh_async(g["actions"], actions, self.k.stream)

    def record_step(self, g: dict, t: int, slot: int) -> None:
        """Enqueue group g's step t outcome (upload, host_record_kernel), then its policy step t + 1."""
        a, plan, o, dev, row0, k = self.arena, self.plan, self.spec.input_size, g["dev"], g["row0"], self.k
        r = plan.rows
        buf = lambda name, offset=0: self.slot(name, slot, offset)  # noqa: E731
        self.upload(g)
        args = HostRecordArgs(dev["obs"], dev["rewards"], dev["ep_return"], dev["ep_stats"], dev["ep_length"],
                              dev["terminated"], dev["truncated"], buf("obs", ((t + 1) * r + row0) * o),
                              buf("rewards", t * r + row0), buf("dones", t * r + row0),
                              buf("starts", (t + 1) * r + row0), a.ptr("episode_acc"), n=g["envs"],
                              agents=plan.num_agents, obs_size=o, num_stats=g["views"]["ep_stats"].shape[1],
                              reward_clamp=int(self.reward_clamp))
        k.launch("host_record_kernel", max(g["rows"] * o, g["envs"]), pack(args))
        for name, width, item in policy_inputs(self.spec, plan)[1:]:  # a team's masks and world state, as they are
            self.cuda.memcpy_dtod_async(buf(name, ((t + 1) * r + row0) * width), dev[name], g["rows"] * width * item,
                                        k.stream)
        if t + 1 < plan.horizon:
            self.infer(g, t + 1, slot)

    def upload(self, g: dict) -> None:
        """Enqueue the copy of group g's step outputs from its pinned buffer to its staging rows (host_in)."""
        self.cuda.memcpy_htod_async(g["dev_in"], g["pinned"], self.k.stream)

    def bootstrap(self, slot: int) -> None:
        """V(obs[T]) into the slot's r_y with the live state, which stays as it is (last_state is scratch)."""
        spec, a, plan = self.spec, self.arena, self.plan
        t_len, r, o, h, ls = plan.horizon, plan.rows, spec.input_size, spec.hidden, spec.state_layers
        ny, w = spec.head_size + 1, self.layout.offsets["layer0.w"][1][0]
        for g in self.groups:
            row0, rows = g["row0"], g["rows"]
            state = [a.ptr("state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
            last = [a.ptr("last_state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
            acts = [a.ptr("r_act", (i % 2) * r * h + row0 * h) for i in range(spec.layers + 1)]
            self.policy.forward(self.k, self.blas, rows, 1, self.slot("obs", slot, (t_len * r + row0) * o),
                                self.slot("starts", slot, t_len * r + row0), state, last, acts,
                                [a.ptr("r_pre", row0 * w)] * spec.layers, [0] * spec.layers,
                                self.slot("r_y", slot, row0 * ny), self.params, x0=self.x0(row0),
                                world=self.world(slot, t_len, row0))
        self.k.launch_grid("advance_rollout_kernel", 1, 1, a.ptr("scalars"), np.int32(t_len))

    def x0(self, row0: int) -> int:
        """Where a group's encoder input goes (its rows of r_x0) when the policy transforms observations, else 0."""
        return self.arena.ptr("r_x0", row0 * self.spec.input_size) if transforms_obs(self.spec) else 0

    def world(self, slot: int, t: int, row0: int) -> int:
        """Where step t's world-state critic input of a group's rows is in `slot`, or 0 without that critic."""
        c = self.spec.critic_input_size
        return self.slot("world", slot, (t * self.plan.rows + row0) * c) if self.spec.world_size else 0

    def segment(self, key, record) -> None:
        """Run `record` (which enqueues GPU work on the actor's stream): eagerly in the first rollout (so
        cuBLAS and the driver load their kernels outside any capture), then as the graph captured for `key`
        from the second on. If a capture fails, say so once and stay eager (same work, more launch time)."""
        if not self.plan.choices.graphs or self.rollouts_run == 0 or self.graphs is None:
            record()
            return
        graph = self.graphs.get(key)
        if graph is None:
            graph = CudaGraph(self.k.stream.handle)
            try:
                with graph.capture():
                    record()
            except CudaDriverError as err:
                print(f"fastvec-train: host-env rollout steps run without CUDA graphs ({err})", file=sys.stderr)
                self.close()
                record()
                return
            self.graphs[key] = graph
        graph.launch()

    def close(self) -> None:
        for graph in (self.graphs or {}).values():
            graph.close()
        self.graphs = None
