"""How a rollout reaches the GPU. `Actor`: the stream, launcher, cuBLAS handle and weights a rollout runs with (the
learner's without train.async; `AsyncActor`'s own, handed the learner's weights at every rollout). The collectors
enqueue one rollout into a slot through a rollout path (rollouts.py, host_envs.py): `GraphCollector` (the env on
the GPU, self-play's games too: the first rollout eagerly, then one CUDA graph per slot) and `HostCollector` (host
envs, whose path graphs its own pieces: with train.async the CPU steps the rollout that overlaps an update while
that update runs)."""

from __future__ import annotations

import time

from fastvec.native.graphs import CudaGraph, Event
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.cublas import Cublas
from fastvec.trainer.cuda.plan import CUBLAS_WORKSPACE


class Actor:
    """Without train.async the actor is the learner: its launcher k, cuBLAS handle and stream, the live weights."""

    params = "params"  # the arena tensor the rollout's policy reads

    def __init__(self, k, blas, stream):
        self.k, self.blas, self.stream = k, blas, stream

    def hand_over(self) -> None:
        """Before a rollout: the weights it collects with are the learner's own, in stream order."""

    def close(self) -> None:
        """The learner's handle is the trainer's to close."""


class AsyncActor(Actor):
    """train.async: a stream, launcher, cuBLAS handle and workspace, and a copy of the weights (actor_params) of its
    own, so a rollout overlaps the learner's update."""

    params = "actor_params"

    def __init__(self, cuda, module, arena, precision: str, learner_stream, param_count: int):
        stream = cuda.Stream()
        super().__init__(device.Launcher(module, stream),
                         Cublas(stream, arena.ptr("actor_cublas_workspace"), CUBLAS_WORKSPACE, precision), stream)
        self.cuda, self.arena, self.learner_stream, self.param_bytes = cuda, arena, learner_stream, param_count * 4
        self.learner_done, self.weights_taken = Event(), Event()

    def hand_over(self) -> None:
        """The actor waits for the learner (done with the slot's last update, so the slot and the weights are free),
        copies the weights, and the learner's next update waits for the copy (and so for every earlier rollout, the
        one it trains on)."""
        self.learner_done.make_wait(self.stream.handle, self.learner_stream.handle)
        self.cuda.memcpy_dtod_async(self.arena.ptr("actor_params"), self.arena.ptr("params"), self.param_bytes,
                                    self.stream)
        self.weights_taken.make_wait(self.learner_stream.handle, self.stream.handle)

    def close(self) -> None:
        self.blas.close()


class GraphCollector:
    """A GPU-env rollout path's rollouts: the first eagerly (so that cuBLAS and the driver load their kernels outside
    any capture), later ones as one graph per slot (graphs bake pointers); always eagerly without graphs."""

    def __init__(self, path, graphs: bool, slot_count: int):
        self.path, self.use_graphs = path, graphs
        self.graphs = [None] * slot_count
        self.rollouts_run = 0

    def collect(self, slot: int, overlaps: bool = False) -> None:
        """Enqueue a rollout into `slot` on the actor's stream (overlapping an update or not: the same work)."""
        if not self.use_graphs or self.rollouts_run == 0:
            self.path.record(slot)
        else:
            if self.graphs[slot] is None:
                self.graphs[slot] = CudaGraph(self.path.k.stream.handle)
                with self.graphs[slot].capture():
                    self.path.record(slot)
            self.graphs[slot].launch()
        self.rollouts_run += 1

    def finish_deferred(self) -> float:
        """Nothing is left for the host: the GPU steps the env."""
        return 0.0

    def close(self) -> None:
        for i, graph in enumerate(self.graphs):
            if graph is not None:
                graph.close()
            self.graphs[i] = None
        self.path.close()


class HostCollector:
    """The host-env path's rollouts (host_envs.HostEnvs, which graphs its own pieces). The CPU steps the env, so a
    rollout that overlaps an update cannot be launched and left to run: collect() only notes its slot, and
    finish_deferred() (the next update(), after launching its own work) steps it while the GPU learns."""

    rollouts_run = 0  # the warm-up, which this path skips, asks

    def __init__(self, path):
        self.path, self.pending = path, None

    def collect(self, slot: int, overlaps: bool = False) -> None:
        if overlaps:
            self.pending = slot
        else:
            self.path.record(slot)

    def finish_deferred(self) -> float:
        """Step the host envs for the rollout collect() deferred; returns the seconds spent (0: none was)."""
        if self.pending is None:
            return 0.0
        t0 = time.perf_counter()
        slot, self.pending = self.pending, None
        self.path.record(slot)
        return time.perf_counter() - t0

    def close(self) -> None:
        self.path.close()
