"""The CUDA trainer: NumpyTrainer's algorithm and interface on the GPU, method for method. Every tensor lives in
one arena (plan.py); a whole rollout (rollouts.py, or host_envs.py with the env on the CPU) is one CUDA graph
replay, and a whole update (GAE, every epoch and minibatch: policy.py's forward and backward, the PPO loss,
optimizers.py's step) another. Checkpoints are interchangeable with the CPU trainer's."""

from __future__ import annotations

import functools
import math
import time

import numpy as np

from fastvec.native.batches import load_batch
from fastvec.native.graphs import CudaGraph, Event
from fastvec.trainer import reference as ref
from fastvec.trainer.env_batch import env_build
from fastvec.trainer.cuda import device, nccl
from fastvec.trainer.cuda.cublas import Cublas
from fastvec.trainer.cuda.heads import HeadOps
from fastvec.trainer.cuda.host_envs import HostEnvs
from fastvec.trainer.cuda.kernel_args import GaeArgs, GatherArgs, pack
from fastvec.trainer.cuda.optimizers import make_optimizer
from fastvec.trainer.cuda.plan import (CUBLAS_WORKSPACE, NORM_BLOCKS, SCALARS_DTYPE, STAT_NAMES, Choices, Plan,
                                       action_words, gather_threads, plan_arena, slot_addresses)
from fastvec.trainer.cuda.policy import GpuPolicy
from fastvec.trainer.cuda.rollouts import GPU_ENV_ROLLOUTS
from fastvec.trainer.settings import Config

# Legend as plan.py's: T = horizon, N = envs, R = rows, O = obs size, K = bptt, Bm = sequences per minibatch,
# n = K * Bm rows per minibatch, P = parameters.


class CudaTrainer:
    """Owns the arena, the graphs and the env; `rollout()` replays the rollout graph, `update()` the update graph.
    `batch` describes the env (num_envs, env.obs_size/num_actions/num_agents/stat_names); with the env on the GPU
    it is compiled from the same source. With train.env_device = "cpu" the env is `batch` itself (a CpuBatch, or
    self-play's SelfPlayBatch) when there is one env group, else host_batches, or CpuBatches made here.
    `choices` forces a path where tests and benchmarks need one (plan.Choices)."""

    device = "cuda"
    active_slot = 0  # the rollout slot the next update trains on (always 0 without train.async)
    obs_bytes = False  # the GPU env's observations are bytes (OBS_T unsigned char), which the gather converts

    def __init__(self, config: Config | dict, batch, spec: ref.PolicySpec, host_batches: list | None = None,
                 choices: Choices = Choices()):
        self.config = config = Config.of(config)  # run.make_trainer adds selfplay and env_batches (protocol.Trainer)
        self.spec, self.batch, train, env, name = spec, batch, config.train, batch.env, config.env.name
        self.host_env = train.env_device == "cpu"
        # A host batch's agents per env are its obs' (self-play's SelfPlayBatch shows the learner's seat only).
        num_agents = batch.obs.shape[1] if self.host_env else env.num_agents
        selfplay_seats = env.num_agents if config.selfplay.enabled and not self.host_env else 0
        self.layout = ref.FlatLayout(ref.param_table(spec))
        plan = self.plan = Plan.make(train, spec, self.layout, batch.num_envs, num_agents, self.host_env, choices,
                                     selfplay_seats, config.selfplay.pool_size)
        self.num_envs, self.num_agents, self.rows, self.horizon, self.bptt = (
            plan.num_envs, plan.num_agents, plan.rows, plan.horizon, plan.bptt)
        self.segments, self.sequences, self.async_rollouts = plan.segments, plan.sequences, plan.async_rollouts
        self.rng = np.random.default_rng(train.seed)  # only for the initial weights, as NumpyTrainer's
        self.seed_key = ref.sampling_key(train.seed)
        # DATA PARALLEL (distributed.py, nccl.py): this process is one rank of several when a group is active.
        # Each rank samples with its own key and steps its own envs; the flat gradient is averaged over the
        # ranks inside the update graph, between backward and clipping.
        self.group = nccl.active_group()
        self.rank, self.world_size = (self.group.rank, self.group.world_size) if self.group else (0, 1)
        if self.rank:
            self.seed_key = ref.splitmix64(self.seed_key ^ ((self.rank * 0xD1B54A32D192ED03) & ref.MASK64))
        self.shuffle_key = ref.splitmix64(self.seed_key ^ 0x53485546464C45)
        self.slot_version = [-1] * plan.slot_count  # update_index of the weights that collected each slot
        self.fill_slot = 0  # async: the slot the next rollout goes into
        self.ready_slot = None  # async: a collected slot no update has trained on yet
        self.pending_host_slot = None  # async host envs: the slot the next update() collects while it runs
        self.timing = {"rollout": 0.0, "update": 0.0}

        t0 = time.perf_counter()
        cuda = self.cuda = device.init()
        self.stream = cuda.Stream()  # the learner's (and, without train.async, the actor's too)
        self.actor_stream = cuda.Stream() if plan.async_rollouts else self.stream
        env_source, defines, self.max_episode_steps = env_build(config, batch)  # a user's env file, a gym stub
        defines.update(plan.policy_defines(spec))  # the policy kernels' -D sizes (head width, fused step, self-play)
        self.k = device.Launcher(device.load_module(env_source, tuple(sorted(defines.items()))), self.stream)
        self.actor_k = device.Launcher(self.k.module, self.actor_stream) if plan.async_rollouts else self.k
        obs_item = device.module_int(cuda, self.k.module, "fv_obs_bytes")  # sizeof(OBS_T); host envs upload floats
        plan.obs_bytes = self.obs_bytes = obs_item == 1 and not self.host_env

        # ARENA: the shared tensors, then the optimizer's and the rollout path's own.
        self.arena = plan_arena(plan, spec, self.layout, device.module_int(cuda, self.k.module, "fv_slot_size"),
                                len(env.stat_names))
        self.policy = GpuPolicy(spec, self.layout, self.arena, plan)
        self.optimizer = make_optimizer(train, self.layout, self.arena, choices.muon_small_shared_max)
        args = (plan, spec, self.layout, self.arena, self.policy, slot_addresses(self.arena), train, self.seed_key)
        if self.host_env:
            self.rollout_path = HostEnvs(*args, batch, host_batches, self.timing)
        else:
            self.rollout_path = GPU_ENV_ROLLOUTS[plan.rollout](*args, self.max_episode_steps)
        self.gpu_games = self.rollout_path if plan.rollout == "selfplay" else None  # self-play's games on the GPU
        self.optimizer.add_tensors(self.arena)
        self.rollout_path.add_tensors(self.arena)
        self.arena.allocate(cuda)
        self.heads.start(cuda)
        self.blas = Cublas(self.stream, self.arena.ptr("cublas_workspace"), CUBLAS_WORKSPACE, plan.precision)
        self.actor_blas, self.actor_params = self.blas, "params"
        if plan.async_rollouts:  # the actor's own cuBLAS handle and workspace, and its copy of the weights
            self.actor_blas = Cublas(self.actor_stream, self.arena.ptr("actor_cublas_workspace"), CUBLAS_WORKSPACE,
                                     plan.precision)
            self.actor_params = "actor_params"
            self.learner_done, self.weights_taken = Event(), Event()
        self.optimizer.start(cuda, self.k, plan.precision)
        actor = (self.actor_k, self.actor_blas, self.actor_params)
        self.scalars_host = cuda.pagelocked_empty(SCALARS_DTYPE.itemsize, np.uint8)  # pinned: read back per update
        self.episode_acc_host = cuda.pagelocked_empty(self.arena.entries["episode_acc"][1], np.float64)

        # MODEL AND OPTIMIZER: the reference's initial weights for this seed (same as the CPU trainer).
        self.arena.set(cuda, "params", ref.init_params(spec, self.rng, np.float32))
        if self.group:  # every rank starts from rank 0's weights (init rounding may differ across machines)
            self.group.broadcast(self.arena.ptr("params"), self.layout.size, self.stream.handle)
        scalars = np.zeros((), SCALARS_DTYPE)
        scalars["lr"], scalars["ent_coef"], scalars["clip_scale"] = train.learning_rate, train.ent_coef, 1.0
        self.arena.set(cuda, "scalars", np.frombuffer(scalars.tobytes(), np.uint8))
        self.k.launch("fill_kernel", plan.mb_rows, self.arena.ptr("ones"), np.int64(plan.mb_rows), np.float32(1.0))
        # ENV: reset every env with seeds (seed << 32) + i, as NumpyTrainer (rank r's envs continue the
        # numbering at r * N, so ranks never replay each other's episodes); obs go to step T of the last
        # rollout slot, which the first rollout copies to its step 0, and starts[T] = 1 (every env begins an
        # episode). Rollouts alternate between the slots, each starting where the other one ended.
        n_env, rows, last = plan.num_envs, plan.rows, plan.slot_count - 1
        seeds = (np.uint64(train.seed) << np.uint64(32)) + np.uint64(self.rank * n_env) \
            + np.arange(n_env, dtype=np.uint64)
        self.arena.set(cuda, "seeds", seeds)
        if self.host_env:
            self.rollout_path.start(cuda, actor, seeds, lambda count: load_batch(
                name, count, dict(config.env.params), max_episode_steps=self.max_episode_steps, threads=train.env_threads))
        else:
            self.rollout_path.start(cuda, actor)
            self.rollout_path.reset_envs(self.k)
        self.k.launch("fill_kernel", rows, self._slot("starts", last, plan.horizon * rows), np.int64(rows),
                      np.float32(1.0))
        self.stream.synchronize()
        self.startup_time = time.perf_counter() - t0

        self.global_step = 0
        self.update_index = 0
        self.opt_step = 0
        self.num_updates_captured = None
        self.rollout_graphs = [None] * plan.slot_count  # graphs bake pointers: one per rollout slot
        self.update_graphs = [None] * plan.slot_count
        self.rollouts_run = 0

    def describe(self) -> str:
        """The paths chosen at construction, for the start-up log."""
        plan = self.plan
        extras = [("bf16 MinGRU activations", plan.bf16_acts), ("async rollouts", plan.async_rollouts),
                  (f"{self.world_size} GPUs", self.group), ("no CUDA graphs", not plan.choices.graphs)]
        return "; ".join([f"CUDA trainer: {self.rollout_path.describe()}", self.optimizer.describe(), plan.precision]
                         + [text for text, on in extras if on])

    @functools.cached_property
    def heads(self) -> HeadOps:  # the action head's loss and the running normalisation (cuda/heads.py)
        return HeadOps(self.spec, self.layout, self.arena, self.plan, self.config.train, self.group)

    @property
    def behaviour_version(self) -> int:
        """update_index of the weights that collected the slot the next update trains on (as NumpyTrainer's)."""
        return self.slot_version[self.active_slot]

    # ROLLOUT
    def rollout(self) -> None:
        """Fill the rollout buffers the next update trains on, as NumpyTrainer.rollout.

        Sync: collect with the current weights and wait for it. Async: the first call collects two
        rollouts (update 0 trains on the first); every call launches the rollout that runs while the next
        update does, with the weights that update starts from, and returns without waiting: update()
        waits on the GPU (an event) for the slot it trains on. The first rollout runs eagerly (so that
        cuBLAS and the driver load their kernels outside any capture); later ones replay one graph per slot.

        Async with host envs: the CPU steps the env, so collecting cannot be launched and left to run; the
        overlapping rollout is prepared here (its weights copied) and collected by the next update() after it
        has launched its own graph, so the CPU steps envs while the GPU learns."""
        t0 = time.perf_counter()
        self._collect_pending_host_rollout()  # a rollout() without an update() in between
        if not self.async_rollouts:
            self.collect(0)
            self.stream.synchronize()
        else:
            if self.ready_slot is None:
                self.collect(self.fill_slot)
                self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
            # overlaps update `update_index`, with the weights it starts from
            self.collect(self.fill_slot, defer_host=True)
            self.active_slot = self.ready_slot
            self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
        self.timing["rollout"] += time.perf_counter() - t0  # async: launching only; the GPU time overlaps

    def collect(self, slot: int, defer_host: bool = False) -> None:
        """Enqueue one rollout into `slot` on the actor's stream. Async: first the actor waits for the learner
        (done with this slot's last update, so the slot and the weights are free), copies the weights, and the
        learner's next update waits for the copy (and so for every earlier rollout, the one it trains on).
        defer_host: host envs only; leave the env stepping to the next update() (see rollout())."""
        self.slot_version[slot] = self.update_index
        if self.async_rollouts:
            self.learner_done.make_wait(self.actor_stream.handle, self.stream.handle)
            self.cuda.memcpy_dtod_async(self.arena.ptr("actor_params"), self.arena.ptr("params"),
                                        self.layout.size * 4, self.actor_stream)
            self.weights_taken.make_wait(self.stream.handle, self.actor_stream.handle)
        self.global_step += self.horizon * self.num_envs * self.world_size  # all ranks step in lockstep
        if self.host_env:
            if defer_host:
                self.pending_host_slot = slot
            else:
                self.rollout_path.record(slot)
            return
        if not self.plan.choices.graphs or self.rollouts_run == 0:
            self.rollout_path.record(slot)
        else:
            if self.rollout_graphs[slot] is None:
                self.rollout_graphs[slot] = CudaGraph(self.actor_stream.handle)
                with self.rollout_graphs[slot].capture():
                    self.rollout_path.record(slot)
            self.rollout_graphs[slot].launch()
        self.rollouts_run += 1

    def _collect_pending_host_rollout(self) -> float:
        """Step the host envs for the rollout rollout() prepared (async host envs); returns the seconds spent."""
        if self.pending_host_slot is None:
            return 0.0
        t0 = time.perf_counter()
        slot, self.pending_host_slot = self.pending_host_slot, None
        self.rollout_path.record(slot)
        return time.perf_counter() - t0

    # GAE
    def _record_gae(self, vtrace: bool) -> None:
        tc, a = self.config.train, self.arena
        ny = self.spec.head_size + 1
        last, stride = (self._slot("last_value"), 1) if self.plan.fused_block else (self._slot("r_y", None, ny - 1), ny)
        self.k.launch("gae_kernel", self.rows, pack(GaeArgs(
            values=self._slot("values"), last_value=last, rewards=self._slot("rewards"), dones=self._slot("dones"),
            new_logp=a.ptr("new_logp"), old_logp=self._slot("logp"), adv=a.ptr("adv_returns"),
            returns=a.ptr("adv_returns", self.horizon * self.rows), gamma=tc.gamma, lam=tc.gae_lambda,
            gamma_lambda=tc.gamma * tc.gae_lambda, rho_clip=tc.vtrace_rho_clip, c_clip=tc.vtrace_c_clip,
            T=self.horizon, R=self.rows, last_value_stride=stride, vtrace=vtrace)))

    # UPDATE
    def update(self, num_updates: int) -> dict:
        """PPO epochs over the active rollout slot (one graph replay on the learner's stream); returns the
        update's mean stats. Async: it runs on the GPU while the actor collects the next rollout, and only
        the learner is waited for."""
        t0 = time.perf_counter()
        tc = self.config.train
        lr = ref.annealed(tc.learning_rate, self.update_index, num_updates, tc.anneal_lr)
        ent_coef = ref.ent_coef_at(tc.ent_coef, self.update_index, num_updates, tc.anneal_ent)
        slot = self.active_slot
        stale = self.async_rollouts and self.slot_version[slot] < self.update_index  # as NumpyTrainer's
        if self.num_updates_captured != num_updates:  # first update, or a new schedule: eager, then capture
            scalars = self.scalars().copy()
            scalars["lr"], scalars["ent_coef"] = lr, ent_coef  # the schedule kernel keeps them from here on
            self._write_scalars(scalars)
            self._close_graphs(self.update_graphs)
            self.num_updates_captured = num_updates
            self._record_update(num_updates, stale)
        elif not self.plan.choices.graphs or (self.async_rollouts and not stale):  # async: graphs hold the stale update
            self._record_update(num_updates, stale)
        else:
            if self.update_graphs[slot] is None:
                self.update_graphs[slot] = CudaGraph(self.stream.handle)
                with self.update_graphs[slot].capture():
                    self._record_update(num_updates, stale)
            self.update_graphs[slot].launch()
        collecting = self._collect_pending_host_rollout()  # async host envs: the CPU steps while the GPU learns
        self.timing["rollout"] += collecting
        t0 += collecting
        # Read the stats back behind the update only (async: not behind the actor's rollout), into pinned memory.
        self.cuda.memcpy_dtoh_async(self.scalars_host, self.arena.ptr("scalars"), self.stream)
        self.stream.synchronize()
        scalars = np.frombuffer(self.scalars_host.tobytes(), SCALARS_DTYPE)[0]
        self.update_index += 1
        self.opt_step = int(scalars["opt_step"])
        count = max(float(scalars["stat"][6]), 1.0)
        out = {name: float(scalars["stat"][i]) / count for i, name in enumerate(STAT_NAMES)}
        out["loss"] = out["policy_loss"] + tc.vf_coef * out["value_loss"] - ent_coef * out["entropy"]
        out.update(learning_rate=lr, ent_coef=ent_coef, explained_variance=float(scalars["stat"][7]))
        self.timing["update"] += time.perf_counter() - t0
        return out

    def _record_update(self, num_updates: int, stale: bool = False) -> None:
        """Enqueue one whole update of the active rollout slot: NumpyTrainer.update with every minibatch_step.
        stale: the slot was collected with older weights (async), so V-trace corrects from the first epoch."""
        tc, a, k, plan = self.config.train, self.arena, self.k, self.plan
        k.launch_grid("begin_update_kernel", 1, 1, a.ptr("scalars"))
        if tc.vtrace:
            self.cuda.memset_d32_async(a.ptr("new_logp"), 0, self.horizon * self.rows, self.stream)
        half_bits = max(1, math.ceil(math.ceil(math.log2(max(self.sequences, 2))) / 2))
        if tc.vtrace and stale:
            self._record_current_logp(half_bits)
            self._record_gae(True)
        else:
            self._record_gae(False)
        for epoch in range(tc.update_epochs):
            if tc.vtrace and epoch > 0:
                self._record_gae(True)
            k.launch("shuffle_kernel", self.sequences, np.int32(self.sequences), np.int32(half_bits),
                     np.uint64(self.shuffle_key), np.int32(epoch), a.ptr("scalars"), a.ptr("perm"))
            for mb in range(plan.minibatches):
                self._record_minibatch_step(mb * plan.seqs_per_mb)
        self.optimizer.join(self.stream)  # before the schedule changes the learning rate the branches read
        self.heads.update_obs_norm(k, self._slot("obs"))  # after the epochs, as NumpyTrainer.update
        count = self.horizon * self.rows
        k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(count), np.int32(2), a.ptr("adv_returns"),
                      a.ptr("sums_partial"))
        k.launch_grid("explained_variance_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), a.ptr("sums_partial"),
                      np.int64(count), a.ptr("scalars"))
        k.launch_grid("schedule_kernel", 1, 1, a.ptr("scalars"), np.float64(tc.learning_rate), np.int32(num_updates),
                      np.int32(tc.anneal_lr), np.float64(tc.ent_coef), np.int32(tc.anneal_ent))

    def _record_current_logp(self, half_bits: int) -> None:
        """new_logp = log pi(a|s) of every rollout step under the weights the update starts from (stale data:
        NumpyTrainer's forward pass before the first epoch), a minibatch forward at a time in epoch 0's order (any
        covering order would do). The loss kernel scatters the log-probs; its other outputs are scratch."""
        a, k = self.arena, self.k
        k.launch("shuffle_kernel", self.sequences, np.int32(self.sequences), np.int32(half_bits),
                 np.uint64(self.shuffle_key), np.int32(0), a.ptr("scalars"), a.ptr("perm"))
        for mb in range(self.plan.minibatches):
            self._record_minibatch_forward(mb * self.plan.seqs_per_mb)
            self.heads.loss(k, norm_adv=False, stats=False, scatter=True)

    def _record_minibatch_forward(self, first: int, adv_moments: bool = False):
        """Gather sequences perm[first : first + Bm] of the active slot (with adv_moments, also their advantages'
        mean and std into adv_moments) and run the policy over them (y). Returns the activation pointers the
        backward reads: (states, acts, acts_bf16, pres, hs, widths)."""
        spec, a, k, plan = self.spec, self.arena, self.k, self.plan
        kk, bm, n, r = plan.bptt, plan.seqs_per_mb, plan.mb_rows, plan.rows
        h, o, ls, layers = spec.hidden, spec.obs_size, spec.state_layers, spec.layers
        rollout = ("obs", "starts", "actions", "logp", "values")  # the slot's, then the update's advantages, returns
        k.launch("gather_minibatch_kernel", gather_threads(n, o), pack(GatherArgs(
            perm=a.ptr("perm"), **{name: self._slot(name) for name in rollout}, adv=a.ptr("adv_returns"),
            returns=a.ptr("adv_returns", self.horizon * self.rows),
            **{f"mb_{name}": a.ptr(f"mb_{name}") for name in (*rollout, "adv", "returns", "src")},
            partial=a.ptr("block_partial"), counter=a.ptr("reduce_counter"),
            adv_moments=a.ptr("adv_moments") if adv_moments else 0, K=kk, Bm=bm, R=r, O=o, first=first,
            action_words=action_words(spec), obs_bytes=self.obs_bytes)))
        if ls:
            k.launch("gather_state_kernel", ls * bm * h, np.int32(ls), np.int32(bm), np.int32(r), np.int32(h),
                     np.int32(first), a.ptr("perm"), self._slot("segment_state"), a.ptr("mb_state"))
        self.optimizer.join(self.stream)  # the weights are read from here on
        self.heads.encode_minibatch(k, self.policy)  # norm_obs: with the statistics in the weights
        widths = [self.layout.offsets[f"layer{layer}.w"][1][0] for layer in range(layers)]
        acts = [a.ptr("act", i * n * h) for i in range(layers + 1)]
        pres = [a.ptr("pre", i * n * widths[0]) for i in range(layers)]
        hs = [a.ptr("hseq", min(i, max(ls - 1, 0)) * n * h) for i in range(layers)]
        states = [a.ptr("mb_state", min(i, max(ls - 1, 0)) * bm * h) for i in range(layers)]
        outs = [a.ptr("mb_state_out")] * layers
        acts_bf16 = None
        if plan.bf16_acts:  # this minibatch's weights in bfloat16, for the layer GEMMs forward and backward
            p = self.layout.size
            k.launch("to_bf16_kernel", p, np.int64(p), a.ptr("params"), a.ptr("params_bf16"))
            acts_bf16 = [a.ptr("act_bf16", i * n * h) for i in range(layers)]
        self.policy.forward(k, self.blas, bm, kk, a.ptr("mb_obs"), a.ptr("mb_starts"), states, outs, acts, pres, hs,
                            a.ptr("y"), acts_bf16=acts_bf16, critic_acts=self.policy.update_critic_acts())
        return states, acts, acts_bf16, pres, hs, widths

    def _record_minibatch_step(self, first: int) -> None:
        """NumpyTrainer.minibatch_step for sequences perm[first : first + Bm]: forward, loss, backward, step."""
        tc, a, k, n = self.config.train, self.arena, self.k, self.plan.mb_rows
        # FORWARD (the gather also computes the advantages' moments, except across GPUs: see below)
        states, acts, acts_bf16, pres, hs, widths = self._record_minibatch_forward(
            first, tc.norm_adv and not self.group)
        # LOSS
        if tc.norm_adv and self.group:  # normalise with the global minibatch's mean and std: every rank's
            k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(n), np.int32(1), a.ptr("mb_adv"),
                          a.ptr("sums_partial"))  # partial sums, summed over the ranks, then finished
            self.group.sum(a.ptr("sums_partial"), NORM_BLOCKS * 2, self.stream.handle)
            k.launch_grid("moments_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), a.ptr("sums_partial"),
                          np.int64(n * self.world_size), a.ptr("adv_moments"))
        self.heads.loss(k, norm_adv=tc.norm_adv, stats=True, scatter=tc.vtrace)
        # BACKWARD
        self.policy.backward(k, self.blas, states, acts, acts_bf16, pres, hs, widths)
        # OPTIMIZER (data parallel: clip and step on the ranks' mean gradient)
        if self.group:
            self.group.average(a.ptr("grads"), self.layout.size, self.stream.handle)
        self.optimizer.record_step(k)

    # LOG
    def pop_episodes(self) -> dict | None:
        """Mean return, length and env stats of the episodes finished since the last call (None if none).
        Async: includes the episodes of the rollout collected during the last update."""
        self._synchronize()
        self.cuda.memcpy_dtoh_async(self.episode_acc_host, self.arena.ptr("episode_acc"), self.stream)
        self.stream.synchronize()
        acc = self.episode_acc_host.copy()
        if acc[0] == 0:
            return None
        # Zeroed on the learner's stream: ahead of every later rollout (async: the actor waits for it, collect).
        self.cuda.memset_d8_async(self.arena.ptr("episode_acc"), 0, self.arena.nbytes("episode_acc"), self.stream)
        names = ("episode_return", "episode_length", *self.batch.env.stat_names)  # acc[1], acc[2], acc[3:]
        return {"episodes": int(acc[0]), **{name: float(acc[1 + i] / acc[0]) for i, name in enumerate(names)}}

    # CHECKPOINT STATE (checkpoint.py's format: the CPU trainer loads it, and vice versa)
    def state_dict(self) -> dict:
        self._synchronize()
        scalars = self.scalars()
        return {"params": self.arena.get(self.cuda, "params"), "optimizer": self.arena.get(self.cuda, "opt_state"),
                "counters": {"opt_step": int(scalars["opt_step"]), "update": self.update_index,
                             "global_step": self.global_step, "rollout_steps": int(scalars["rollout_steps"])},
                "rng": None, "reward_norm": self.heads.reward_norm()}

    def load_state_dict(self, state: dict) -> None:
        self._synchronize()  # async: the actor may still be collecting (with its own copy of the weights)
        self.arena.set(self.cuda, "params", state["params"])
        if state.get("optimizer") is not None:
            self.arena.set(self.cuda, "opt_state", state["optimizer"])
        self.heads.load_reward_norm(state.get("reward_norm"))
        counters = state.get("counters", {})
        self.update_index = counters.get("update", 0)
        self.global_step = counters.get("global_step", 0)
        scalars = self.scalars().copy()
        scalars["opt_step"] = counters.get("opt_step", 0)
        scalars["update"] = self.update_index
        scalars["rollout_steps"] = counters.get("rollout_steps",
                                                self.global_step // max(self.num_envs * self.world_size, 1))
        self._write_scalars(scalars)
        self.num_updates_captured = None  # the next update() re-reads the learning rate

    # START-UP AND SHUT-DOWN
    def warm_up(self, num_updates: int) -> float:
        """The first iterations' one-off work at start-up (returns its seconds): a rollout and an update eagerly (cuBLAS
        and the driver load their kernels), then captured as graphs and replayed (uploaded); three with train.async
        (both slots' graphs). Then every arena byte and counter is put back: training starts exactly where it would
        have (bitwise: the tests check). A no-op with host envs, several GPUs, without graphs, or once begun."""
        t0 = time.perf_counter()
        if self.host_env or self.group or not self.plan.choices.graphs or self.rollouts_run:
            return 0.0
        cuda, arena = self.cuda, self.arena
        self._synchronize()
        saved = cuda.mem_alloc(arena.size)
        cuda.memcpy_dtod(saved, arena.base, arena.size)
        counters = (self.global_step, self.update_index, self.opt_step, dict(self.timing), list(self.slot_version),
                    self.active_slot, self.fill_slot, self.ready_slot)  # the async slots' roles too
        for _ in range(3 if self.async_rollouts else 2):
            self.rollout()
            self.update(num_updates)
        self._synchronize()
        cuda.memcpy_dtod(arena.base, saved, arena.size)
        cuda.Context.synchronize()
        saved.free()
        (self.global_step, self.update_index, self.opt_step, self.timing, self.slot_version,
         self.active_slot, self.fill_slot, self.ready_slot) = counters
        return time.perf_counter() - t0

    def close(self) -> None:
        """Free graphs, cuBLAS and the arena now (also done at garbage collection)."""
        self._synchronize()
        self._close_graphs(self.rollout_graphs)
        self._close_graphs(self.update_graphs)
        self.rollout_path.close()
        self.blas.close()
        self.actor_blas.close()
        self.optimizer.close()
        if self.arena.allocation is not None:
            self.arena.allocation.free()
            self.arena.allocation = None

    # DEVICE STATE
    @property
    def params(self) -> np.ndarray:
        """A host copy of the flat float32 parameters (P,), as NumpyTrainer.params (self-play snapshots it)."""
        self._synchronize()
        return self.arena.get(self.cuda, "params")

    def last_values(self) -> np.ndarray:
        """V(obs after the last step) (R,) of the rollout the next update trains on, the GAE's bootstrap."""
        self._synchronize()
        if self.plan.fused_block:
            return self.arena.get(self.cuda, "last_value" if self.active_slot == 0 else "last_value@1")
        return self.arena.get(self.cuda, "r_y" if self.active_slot == 0 else "r_y@1")[:, self.spec.head_size].copy()

    def scalars(self) -> np.ndarray:
        """The device scalars (synchronous read, after the learner and the actor)."""
        self._synchronize()
        raw = self.arena.get(self.cuda, "scalars")
        return np.frombuffer(raw.tobytes(), SCALARS_DTYPE)[0]

    def _write_scalars(self, scalars) -> None:
        self._synchronize()
        self.arena.set(self.cuda, "scalars", np.frombuffer(np.asarray(scalars, SCALARS_DTYPE).tobytes(), np.uint8))

    def _slot(self, name: str, slot: int | None = None, offset_elements: int = 0) -> int:
        """Device address of rollout buffer `name` (plan.SLOT_BUFFERS) of rollout slot `slot` (default: the one
        the next update trains on)."""
        return slot_addresses(self.arena)(name, self.active_slot if slot is None else slot, offset_elements)

    def _synchronize(self) -> None:
        """Wait for the learner and the actor (one stream without train.async)."""
        self.stream.synchronize()
        if self.actor_stream is not self.stream:
            self.actor_stream.synchronize()

    def _close_graphs(self, graphs: list) -> None:
        for i, graph in enumerate(graphs):
            if graph is not None:
                graph.close()
            graphs[i] = None

