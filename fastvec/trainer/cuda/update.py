"""The CUDA trainer's update: NumpyTrainer.update with every minibatch_step (GAE, each epoch's shuffle, the
minibatches' gather, forward, loss, backward and optimizer step, then the observation statistics, explained
variance and the next update's schedule), enqueued on the learner's stream by `GpuUpdate`, eagerly or as one CUDA
graph per rollout slot (`enqueue`)."""

from __future__ import annotations

import math

import numpy as np

from fastvec.native.graphs import CudaGraph
from fastvec.trainer.cuda.kernel_args import GaeArgs, GatherArgs, pack
from fastvec.trainer.cuda.plan import NORM_BLOCKS, action_words, gather_threads, slot_addresses
from fastvec.trainer.priority import PRIO_CHUNKS as PRIO_THREADS  # prio.cu's block: a thread a chunk of the sums

# Legend as plan.py's: T = horizon, R = rows, I = the policy's input, A = actions, C = a world-state critic's input,
# K = bptt, Bm = sequences per minibatch, n = K * Bm rows per minibatch, P = parameters.


class GpuUpdate:
    """Enqueues whole updates of a rollout slot over the arena's tensors with the learner's launcher k, cuBLAS
    handle blas and stream; heads (heads.HeadOps) the head's loss and the normalisation, reduction
    (data_parallel.py) what is shared across GPUs. `slot` is the rollout slot the update being recorded trains on."""

    def __init__(self, plan, spec, layout, arena, train, learner: tuple, cuda, policy, optimizer, heads,
                 reduction, shuffle_key: int):
        self.plan, self.spec, self.layout, self.arena, self.train = plan, spec, layout, arena, train
        self.k, self.blas, self.stream = learner
        self.cuda, self.policy, self.optimizer, self.heads, self.reduction = cuda, policy, optimizer, heads, reduction
        self.shuffle_key = shuffle_key
        self.addresses = slot_addresses(arena)
        self.slot = 0
        self.graphs = [None] * plan.slot_count  # graphs bake pointers: one per rollout slot
        self.captured_for = None  # the num_updates the graphs' schedule kernel was recorded with

    def buf(self, name: str, offset_elements: int = 0) -> int:
        """Device address of rollout buffer `name` (plan.SLOT_BUFFERS) of the slot being trained on."""
        return self.addresses(name, self.slot, offset_elements)

    def new_schedule(self, num_updates: int) -> bool:
        """Whether the next enqueue() starts a schedule (the first update, or a new num_updates): the caller writes
        its learning rate and entropy coefficient into the scalars first, which the schedule kernel keeps after."""
        return self.captured_for != num_updates

    def enqueue(self, num_updates: int, slot: int, stale: bool) -> None:
        """One update of `slot`: eagerly at a new schedule (then captured from the next on), without graphs, and for
        async's fresh slots (the slots' graphs hold the stale update); else the slot's graph, captured once."""
        starts_schedule = self.new_schedule(num_updates)
        if starts_schedule:  # the graphs hold the old schedule's num_updates
            self.close()
            self.captured_for = num_updates
        if starts_schedule or not self.plan.choices.graphs or (self.plan.async_rollouts and not stale):
            self.record(num_updates, slot, stale)
            return
        if self.graphs[slot] is None:
            self.graphs[slot] = CudaGraph(self.stream.handle)
            with self.graphs[slot].capture():
                self.record(num_updates, slot, stale)
        self.graphs[slot].launch()

    def close(self) -> None:
        for i, graph in enumerate(self.graphs):
            if graph is not None:
                graph.close()
            self.graphs[i] = None

    # UPDATE
    def record(self, num_updates: int, slot: int, stale: bool = False) -> None:
        """Enqueue one whole update of `slot`: NumpyTrainer.update with every minibatch_step. stale: the slot was
        collected with older weights (async), so V-trace corrects from the first epoch."""
        tc, a, k, plan = self.train, self.arena, self.k, self.plan
        self.slot = slot
        k.launch_grid("begin_update_kernel", 1, 1, a.ptr("scalars"))
        if tc.vtrace:
            self.cuda.memset_d32_async(a.ptr("new_logp"), 0, plan.horizon * plan.rows, self.stream)
        half_bits = max(1, math.ceil(math.ceil(math.log2(max(plan.sequences, 2))) / 2))
        if tc.vtrace and stale:
            self.current_logp(half_bits)
        self.gae(tc.vtrace and stale)
        for epoch in range(tc.update_epochs):
            if tc.vtrace and epoch > 0:
                self.gae(True)
            self.epoch_order(half_bits, epoch, num_updates)
            for mb in range(plan.minibatches):
                self.minibatch_step(mb * plan.seqs_per_mb)
        self.optimizer.join(self.stream)  # before the schedule changes the learning rate the branches read
        self.heads.update_obs_norm(k, self.buf("obs"))  # after the epochs, as NumpyTrainer.update
        count = plan.horizon * plan.rows
        k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(count), np.int32(2), a.ptr("adv_returns"),
                      a.ptr("sums_partial"))
        k.launch_grid("explained_variance_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), a.ptr("sums_partial"),
                      np.int64(count), a.ptr("scalars"))
        k.launch_grid("schedule_kernel", 1, 1, a.ptr("scalars"), np.float64(tc.learning_rate), np.int32(num_updates),
                      np.int32(tc.anneal_lr), np.float64(tc.ent_coef), np.int32(tc.anneal_ent))

    # GAE
    def gae(self, vtrace: bool) -> None:
        """NumpyTrainer.advantages over the slot (V-trace: with new_logp's ratios) into adv_returns."""
        tc, a, plan = self.train, self.arena, self.plan
        ny = self.spec.head_size + 1
        last, stride = (self.buf("last_value"), 1) if plan.fused_block else (self.buf("r_y", ny - 1), ny)
        self.k.launch("gae_kernel", plan.rows, pack(GaeArgs(
            values=self.buf("values"), last_value=last, rewards=self.buf("rewards"), dones=self.buf("dones"),
            new_logp=a.ptr("new_logp"), old_logp=self.buf("logp"), adv=a.ptr("adv_returns"),
            returns=a.ptr("adv_returns", plan.horizon * plan.rows), gamma=tc.gamma, lam=tc.gae_lambda,
            gamma_lambda=tc.gamma * tc.gae_lambda, rho_clip=tc.vtrace_rho_clip, c_clip=tc.vtrace_c_clip,
            T=plan.horizon, R=plan.rows, last_value_stride=stride, vtrace=vtrace)))

    def shuffle(self, half_bits: int, epoch: int) -> None:
        """perm: epoch `epoch`'s sequence order (a keyed bijection, as reference.sequence_order)."""
        q = self.plan.sequences
        self.k.launch("shuffle_kernel", q, np.int32(q), np.int32(half_bits), np.uint64(self.shuffle_key),
                      np.int32(epoch), self.arena.ptr("scalars"), self.arena.ptr("perm"))

    def epoch_order(self, half_bits: int, epoch: int, num_updates: int) -> None:
        """perm: the epoch's sequences in minibatch order, NumpyTrainer.epoch_order's: a shuffle, or with
        train.prio_alpha > 0 prio_kernel's draws from adv_returns' advantages, their weights in prio_weight."""
        tc, a, plan = self.train, self.arena, self.plan
        if tc.prio_alpha == 0:
            self.shuffle(half_bits, epoch)
            return
        self.k.launch_grid("prio_kernel", 1, PRIO_THREADS, a.ptr("adv_returns"), np.int32(plan.bptt),
                           np.int32(plan.rows), np.int32(plan.sequences), np.float64(tc.prio_alpha),
                           np.float64(tc.prio_beta0), np.int32(num_updates), np.uint64(self.shuffle_key),
                           np.int32(epoch), a.ptr("scalars"), a.ptr("prio_scratch"), a.ptr("perm"),
                           a.ptr("prio_weight"))

    def current_logp(self, half_bits: int) -> None:
        """new_logp = log pi(a|s) of every rollout step under the weights the update starts from (stale data:
        NumpyTrainer's forward pass before the first epoch), a minibatch forward at a time in epoch 0's order (any
        covering order would do). The loss kernel scatters the log-probs; its other outputs are scratch."""
        self.shuffle(half_bits, 0)
        for mb in range(self.plan.minibatches):
            self.minibatch_forward(mb * self.plan.seqs_per_mb)
            self.heads.loss(self.k, norm_adv=False, stats=False, scatter=True)

    # MINIBATCH STEP
    def minibatch_forward(self, first: int, adv_moments: bool = False):
        """Gather sequences perm[first : first + Bm] of the slot (with adv_moments, also their advantages' mean and
        std into adv_moments) and run the policy over them (y). Returns the activation pointers the backward
        reads: (states, acts, acts_bf16, pres, hs, widths)."""
        spec, a, k, plan = self.spec, self.arena, self.k, self.plan
        kk, bm, n, r = plan.bptt, plan.seqs_per_mb, plan.mb_rows, plan.rows
        h, o, ls, layers = spec.hidden, spec.input_size, spec.state_layers, spec.layers
        rollout = ("obs", "starts", "actions", "logp", "values")  # the slot's, then the update's advantages, returns
        k.launch("gather_minibatch_kernel", gather_threads(n, o), pack(GatherArgs(
            perm=a.ptr("perm"), **{name: self.buf(name) for name in rollout}, adv=a.ptr("adv_returns"),
            returns=a.ptr("adv_returns", plan.horizon * r),
            **{f"mb_{name}": a.ptr(f"mb_{name}") for name in (*rollout, "adv", "returns", "src")},
            partial=a.ptr("block_partial"), counter=a.ptr("reduce_counter"),
            adv_moments=a.ptr("adv_moments") if adv_moments else 0, K=kk, Bm=bm, R=r, O=o, first=first,
            action_words=action_words(spec), obs_bytes=plan.obs_bytes)))
        self.gather_team_inputs()
        if ls:
            k.launch("gather_state_kernel", ls * bm * h, np.int32(ls), np.int32(bm), np.int32(r), np.int32(h),
                     np.int32(first), a.ptr("perm"), self.buf("segment_state"), a.ptr("mb_state"))
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
                            a.ptr("y"), acts_bf16=acts_bf16, critic_acts=self.policy.update_critic_acts(),
                            world=a.ptr("mb_world") if spec.world_size else 0)
        if plan.masked:  # the masked categorical the actions were sampled from
            self.mask(k, "mask_logits_kernel", a.ptr("y"))
        return states, acts, acts_bf16, pres, hs, widths

    def gather_team_inputs(self) -> None:
        """The minibatch's rows of a team's per-row inputs, by gather_minibatch_kernel's mb_src: the action masks
        (K, Bm, A) and the world-state critic's input (K, Bm, C)."""
        spec, a, n = self.spec, self.arena, self.plan.mb_rows
        for name, width in (("masks", spec.num_actions if self.plan.masked else 0),
                            ("world", 4 * spec.critic_input_size if spec.world_size else 0)):
            if width:
                self.k.launch("gather_rows_kernel", n * width, np.int64(n), np.int32(width), a.ptr("mb_src"),
                              self.buf(name), a.ptr(f"mb_{name}"))

    def mask(self, k, kernel: str, y: int) -> None:
        """reference.mask_logits (or its gradient, mask_logits_grad) in place over y's (n, Y) logits by mb_masks."""
        n, spec = self.plan.mb_rows, self.spec
        k.launch(kernel, n * spec.num_actions, np.int64(n), np.int32(spec.num_actions), np.int32(spec.head_size + 1),
                 self.arena.ptr("mb_masks"), y)

    def minibatch_step(self, first: int) -> None:
        """NumpyTrainer.minibatch_step for sequences perm[first : first + Bm]: forward, loss, backward, step."""
        norm_adv, reduction, n = self.train.norm_adv, self.reduction, self.plan.mb_rows
        # FORWARD (the gather also computes the advantages' moments, except across GPUs: every rank's rows count)
        states, acts, acts_bf16, pres, hs, widths = self.minibatch_forward(first,
                                                                           norm_adv and reduction.moments_in_gather)
        # LOSS
        if norm_adv:
            reduction.record_adv_moments(self.k, self.arena, n, self.stream)
        self.heads.loss(self.k, norm_adv=norm_adv, stats=True, scatter=self.train.vtrace,
                        weights=self.arena.ptr("prio_weight", first) if self.train.prio_alpha > 0 else 0)
        if self.plan.masked:
            self.mask(self.k, "mask_logits_grad_kernel", self.arena.ptr("dy"))
        # BACKWARD
        self.policy.backward(self.k, self.blas, states, acts, acts_bf16, pres, hs, widths)
        # OPTIMIZER (data parallel: clip and step on the ranks' mean gradient)
        reduction.record_grad_average(self.arena, self.layout.size, self.stream)
        self.optimizer.record_step(self.k)
