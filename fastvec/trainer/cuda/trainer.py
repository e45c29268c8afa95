"""The fused CUDA trainer: NumpyTrainer's algorithm (reference.py math, numpy_trainer.py loop) on the GPU
with the env stepped on the GPU too. Every tensor lives in one arena; a whole rollout horizon (policy
forward, sampling, env step, buffer writes) is one CUDA graph replay and a whole update (GAE, every epoch
and minibatch: forward, PPO loss, backward, clipping, Adam or Muon) another. With train.env_device=cpu
the env is CPU batches instead (host environments, also self-play's), stepped beside the GPU's policy.
The interface is NumpyTrainer's, so run.py (fastvec-train) drives either, and checkpoints are
interchangeable."""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from fastvec.native import ENVS, resolve_defines, source_path
from fastvec.native.graphs import CudaDriverError, CudaGraph, Event
from fastvec.trainer import distributed
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, env_params, rollout_sizes
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.cublas import CUDA_R_16BF, Cublas

# Legend as numpy_trainer.py: T = horizon, N = envs, R = rows = N * agents, O = obs size, K = bptt_horizon,
# S = T / K segments, Ls = recurrent layers (0 for an MLP), L = layers, H = hidden, W = layer width
# (3H or 2H MinGRU, H MLP), Y = actions + 1, P = parameters, Q = S * R sequences, Bm = sequences per
# minibatch, n = K * Bm rows per minibatch, G = sum-of-squares partial blocks.

# kernels.cu's TrainScalars, field for field.
SCALARS_DTYPE = np.dtype([("lr", "f8"), ("stat", "f8", (8,)), ("rollout_steps", "i8"), ("ent_coef", "f4"),
                          ("grad_norm", "f4"), ("clip_scale", "f4"), ("bias_correction1", "f4"),
                          ("bias_correction2", "f4"), ("opt_step", "i4"), ("update", "i4"), ("pad", "i4")])
STAT_NAMES = ["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "grad_norm"]
NORM_BLOCKS = 128  # G: fixed grid of the gradient-norm reduction (a fixed grid keeps the sum order fixed)
BIAS_GRAD_BLOCKS = 128  # the most blocks of bias_grad_kernel (fixed per config, so its sum order is too)
# An MLP layer's backward (dpre = dout * (out > 0)) and bias gradient in one bias_grad_kernel launch up to this many
# minibatch elements (n x hidden); above, mlp_backward_kernel and a ones-row GEMM, which use the whole GPU: at
# 262,144 x 64 the one-launch form's 128 blocks are latency-bound (CartPole MLP at 65,536 envs, fp32: 149M SPS
# with it, 174M before it).
MLP_FUSED_BIAS_MAX_ELEMENTS = 1 << 21
CUBLAS_WORKSPACE = 32 << 20
NS_CUBLAS_WORKSPACE = 4 << 20  # each Muon branch's cuBLAS workspace (its GEMMs are at most hidden x 3 hidden)
SHARED_LIMIT = 227 * 1024  # dynamic shared memory per block on Hopper (sm_90)
# Matrices whose Newton-Schulz fits a block's shared memory (hidden 64: up to 192 x 64) take Muon's step in one
# muon_small_kernel launch; larger ones a chain of GEMMs on a stream of their own. Tests set 0 to force the chains.
MUON_SMALL_SHARED_LIMIT = SHARED_LIMIT - 1024
# The GEMM path's env step stages each block's slots and obs in shared memory (rollout_step_staged_kernel) for
# observations larger than this (Breakout's 472 bytes); small ones (CartPole's 16) step in place. Tests set 0.
ROLLOUT_STAGE_MIN_OBS_BYTES = 64
FUSED_MAX_BLOCK = 256  # the fused policy step uses ~170 registers per thread at hidden 64
FUSED_WARP_BLOCK = 256  # the warp-per-env rollout kernel: 8 envs per block
# From here on a thread per env (a launch a step) beats a warp per env (one launch): rollout graph on the H200,
# CartPole MLP 64x2, horizon 32 (update_profile.py): 16384 envs 1.30 ms warp vs 1.84 thread, 65536 5.03 vs 2.14.
FUSED_THREAD_MIN_ENVS = 24576
MASK64 = (1 << 64) - 1
# The rollout buffers an update reads: with train.async there are two copies ("rollout slots"; the second's
# arena names end in "@1"), one filled by the actor while the learner trains on the other. r_y holds the
# GEMM path's bootstrap value, last_value the fused path's.
SLOT_BUFFERS = ("obs", "starts", "actions", "logp", "values", "rewards", "dones", "segment_state", "last_value", "r_y")
# rollout.cu's host-env kernels (train.env_device = "cpu"), in device.py's signature letters.
device.SIGNATURES.update({"host_sample_kernel": "iiPPPPPiQ", "host_record_kernel": "iiii" + "P" * 12 + "i"})


def splitmix64(z: int) -> int:
    """fastvec.h's fv_mix64 on Python ints (keys for the counter-based streams)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def policy_uniforms(seed_key: int, rows: int, step: int) -> np.ndarray:
    """kernels.cu's policy_uniform for rows 0..rows-1 at one policy step, on the host (float32)."""
    with np.errstate(over="ignore"):
        def mix(z):
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))
        keys = mix(np.uint64(seed_key) + np.arange(rows, dtype=np.uint64))
        r = mix(keys + np.uint64(((step + 1) * 0x9E3779B97F4A7C15) & MASK64))
    return (r >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def sequence_order(count: int, shuffle_key: int, update: int, epoch: int) -> np.ndarray:
    """kernels.cu's shuffle_kernel on the host: the order in which an epoch visits the Q sequences."""
    half = max(1, math.ceil(math.ceil(math.log2(max(count, 2))) / 2))
    key = splitmix64(shuffle_key ^ ((update * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9) & MASK64))
    mask = np.uint64((1 << half) - 1)

    def mix(z):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    def feistel(x):
        left, right = x >> np.uint64(half), x & mask
        for rnd in range(4):
            f = mix(np.uint64(key) + np.uint64((rnd * 0xD1B54A32D192ED03) & MASK64) + right) & np.uint64(0xFFFFFFFF) & mask
            left, right = right, left ^ f
        return (left << np.uint64(half)) | right

    with np.errstate(over="ignore"):
        x = feistel(np.arange(count, dtype=np.uint64))
        while (bad := x >= count).any():
            x[bad] = feistel(x[bad])
    return x.astype(np.int64)


def record_newton_schulz(k, blas, u: int, bufs: list[int], gram: int, poly: int, shape, steps: int = 5) -> int:
    """reference.newton_schulz of the (rows, cols) matrix at u, enqueued on k's stream; bufs: two scratch
    (rows * cols) buffers, gram and poly (r, r) with r = min(rows, cols). Returns the buffer holding the
    result, stored (rows, cols). A tall matrix iterates on its transpose implicitly: G = U^T U and
    U <- U P^T, which is the reference's X <- a X + (b G + c G G) X with X = U^T, as X <- P X with
    P = a I + b G + c G G (the same polynomial, without copying X or G for GEMMs that accumulate)."""
    rows, cols = shape
    count = rows * cols
    ca, cb, cc = ref.NS_COEFFS
    k.launch_block("frobenius_normalize_kernel", np.int64(count), u, bufs[0])
    tall = rows > cols
    r = cols if tall else rows
    cur = 0
    for _ in range(steps):
        x, xn = bufs[cur], bufs[1 - cur]
        if tall:
            blas.matmul(gram, x, x, r, r, rows, trans_a=True)
        else:
            blas.matmul(gram, x, x, r, r, cols, trans_b=True)
        k.launch("ns_poly_init_kernel", r * r, np.int32(r), gram, poly, np.float32(ca), np.float32(cb))
        blas.matmul(poly, gram, gram, r, r, r, alpha=cc, beta=1.0)  # P = a I + b G + c G G
        if tall:
            blas.matmul(xn, x, poly, rows, cols, cols, trans_b=True)
        else:
            blas.matmul(xn, poly, x, rows, cols, rows)
        cur = 1 - cur
    return bufs[cur]


# kernels.cu's MuonMatrix, field for field: one row of muon_small_kernel's table.
MUON_SMALL_DTYPE = np.dtype([("offset", "i8"), ("bias_offset", "i8"), ("rows", "i4"), ("cols", "i4"),
                             ("bias_count", "i4"), ("pad", "i4"), ("scale", "f8")])
MUON_SMALL_THREADS = 512  # kernels.cu's MUON_SMALL_THREADS: muon_small_kernel's block


def muon_stride(n: int) -> int:
    """kernels.cu's muon_stride: a row stride of at least n floats, a multiple of 4, 4 more than a multiple of 32."""
    stride = -(-n // 4) * 4
    while stride % 32 != 4:
        stride += 4
    return stride


def muon_small_shared_bytes(shape) -> int:
    """muon_small_kernel's shared memory for a (rows, cols) matrix: two iterates (r4, muon_stride(c)) and gram and
    poly (r4, muon_stride(r)), r = min(rows, cols) rounded up to 4 as r4, c = max(rows, cols)."""
    r, c = min(shape), max(shape)
    r4 = -(-r // 4) * 4
    return 4 * 2 * r4 * (muon_stride(c) + muon_stride(r))


def ns_scratch_offsets(shape) -> list[int]:
    """Float offsets in one matrix's Newton-Schulz scratch of u, the two iterates (rows*cols each), gram and poly
    (r*r each), and the total; every part starts 256-byte aligned, as cuBLAS's fastest kernels want."""
    sizes = [math.prod(shape)] * 3 + [min(shape) ** 2] * 2
    offsets = [0]
    for size in sizes:
        offsets.append(offsets[-1] + -(-size // 64) * 64)
    return offsets


def ns_scratch_floats(shape) -> int:
    return ns_scratch_offsets(shape)[-1]


class CudaTrainer:
    """Owns the arena, the graphs and the GPU env; `rollout()` replays the rollout graph, `update()` the
    update graph. `batch` only describes the env (num_envs, env.obs_size/num_actions/num_agents/stat_names);
    the env itself is compiled for the GPU from the same source.

    With train.env_device = "cpu" (host environments) the env is stepped on the CPU instead: `batch` itself
    (a CpuBatch, or self-play's SelfPlayBatch) when host_batches is None and train.env_groups is 1, else
    host_batches, or env_groups CpuBatches made here, which step consecutive ranges of the N envs; while the
    CPU steps one group the GPU runs the policy for the other (see _host_rollout)."""

    device = "cuda"
    active_slot = 0  # the rollout slot the next update trains on (always 0 without train.async)
    scalars_host = None  # pinned host copies the learner's stream reads back into (made on first use)
    episode_acc_host = None

    def __init__(self, config: dict, batch, spec: ref.PolicySpec, host_batches: list | None = None):
        train = config["train"]
        self.config, self.train_cfg, self.spec, self.batch = config, train, spec, batch
        env = batch.env
        self.host_env = train.get("env_device", "cuda") == "cpu"
        # A host batch's agents per env are its obs' (self-play's SelfPlayBatch shows the learner's seat only).
        self.num_envs, self.num_agents = batch.num_envs, (batch.obs.shape[1] if self.host_env else env.num_agents)
        self.rows, self.horizon, self.bptt, self.segments, self.samples_per_rollout = rollout_sizes(
            train, self.num_envs, self.num_agents)
        n_env, rows, horizon, k = self.num_envs, self.rows, self.horizon, self.bptt
        if spec.num_actions > 64:
            raise ValueError(f"the CUDA trainer samples from at most 64 actions (kernels.cu MAX_ACTIONS), "
                             f"this env has {spec.num_actions}; use --train.device=cpu")
        self.seqs_per_mb = train["minibatch_size"] // k  # Bm
        self.sequences = self.segments * rows  # Q
        self.minibatches = self.sequences // self.seqs_per_mb
        self.mb_rows = k * self.seqs_per_mb  # n
        self.rng = np.random.default_rng(train["seed"])  # only for the initial weights, as NumpyTrainer's
        self.seed_key = splitmix64((train["seed"] * 0x9E3779B97F4A7C15 + 0x5EED) & MASK64)
        # DATA PARALLEL (distributed.py): this process is one rank of several when a group is active. Each
        # rank samples with its own key and steps its own envs; grad_allreduce averages the flat gradient
        # over the ranks inside the update graph, between backward and clipping.
        self.group = distributed.active_group()
        self.rank, self.world_size = (self.group.rank, self.group.world_size) if self.group else (0, 1)
        self.grad_allreduce = None
        if self.group:
            self.grad_allreduce = lambda ptr, count: self.group.average(ptr, count, self.stream.handle)
        if self.rank:
            self.seed_key = splitmix64(self.seed_key ^ ((self.rank * 0xD1B54A32D192ED03) & MASK64))
        self.shuffle_key = splitmix64(self.seed_key ^ 0x53485546464C45)
        self.use_graphs = os.environ.get("FASTVEC_NO_GRAPHS") != "1"
        # "fp32" (bitwise repeatable, matches NumPy), or "tf32" / "bf16": GEMMs on tensor cores.
        self.precision = train.get("precision", "fp32")
        # bf16 MinGRU updates keep the layers' GEMM operands and results (pre, dpre, layer inputs, weights) and the
        # states kept for the backward in bfloat16: every layer of every minibatch moves them several times
        # (forward, backward, two GEMMs).
        self.bf16_acts = self.precision == "bf16" and spec.recurrent
        self.layout = ref.FlatLayout(ref.param_table(spec))
        self.fused_block = 0 if self.host_env else self._fused_block_size(n_env)  # the fused step steps a GPU env
        # The GEMM-path rollout forward in bf16 too (as the update's: the same numbers, half the bytes).
        self.rollout_bf16 = self.bf16_acts and not self.fused_block and not self.host_env
        # ASYNC (train.async): NumpyTrainer's schedule, overlapped. The actor replays the rollout graph of one
        # slot on its own stream, from actor_params (a copy of the weights taken when an update starts), while
        # the learner's update graph trains on the other slot; CUDA events order the two streams.
        self.async_rollouts = bool(train.get("async", False))
        if self.async_rollouts and self.group:
            raise ConfigError("train.async=true with several GPUs is not supported yet; use --train.async=false")
        if self.host_env and self.group:
            raise ConfigError("train.env_device=cpu (host environments) with several GPUs is not supported; "
                              "use --train.gpus=1, or --train.env_device=cuda")
        self.slot_count = 2 if self.async_rollouts else 1
        self.slot_version = [-1] * self.slot_count  # update_index of the weights that collected each slot
        self.fill_slot = 0  # async: the slot the next rollout goes into
        self.ready_slot = None  # async: a collected slot no update has trained on yet
        self.pending_host_slot = None  # async host envs: the slot the next update() collects while it runs

        t0 = time.perf_counter()
        cuda = self.cuda = device.init()
        self.stream = cuda.Stream()  # the learner's (and, without train.async, the actor's too)
        self.actor_stream = cuda.Stream() if self.async_rollouts else self.stream
        name = config["env"]["name"]
        defines = resolve_defines(name, env_params(config))
        if self.fused_block:  # the fused policy step is compiled for this policy's sizes
            defines.update(POLICY_HIDDEN=spec.hidden, POLICY_LAYERS=spec.layers, POLICY_MINGRU=int(spec.recurrent),
                           POLICY_HIGHWAY=int(spec.highway))
        self.k = device.Launcher(device.load_module(source_path(name), tuple(sorted(defines.items()))), self.stream)
        self.actor_k = device.Launcher(self.k.module, self.actor_stream) if self.async_rollouts else self.k
        self.max_episode_steps = int(ENVS[name].max_episode_steps or 0)
        slot_size, obs_item, stage_threads = (self._module_int(name) for name in
                                              ("fv_slot_size", "fv_obs_bytes", "rollout_stage_threads"))
        obs_bytes = spec.obs_size * obs_item * self.num_agents
        # The GEMM path's env step: (kernel, threads per block)
        self.rollout_step = ("rollout_step_staged_kernel", stage_threads) \
            if stage_threads > 0 and obs_bytes > ROLLOUT_STAGE_MIN_OBS_BYTES else ("rollout_step_kernel", device.THREADS)
        self.matrix_names = set(self.layout.matrix_names())
        muon = train["optimizer"] == "muon"
        self.muon_small = [(name, shape) for name, shape in self.layout.table if muon and name in self.matrix_names
                           and muon_small_shared_bytes(shape) <= MUON_SMALL_SHARED_LIMIT]
        self.muon_matrices = [(name, shape) for name, shape in self.layout.table if muon and name in self.matrix_names
                              and (name, shape) not in self.muon_small]  # the GEMM chains
        if self.host_env:  # env groups: consecutive env ranges [lo, hi), the split np.array_split makes
            counts = [b.num_envs for b in host_batches] if host_batches else \
                [len(r) for r in np.array_split(np.arange(n_env), min(max(int(train.get("env_groups", 1)), 1), n_env))]
            if sum(counts) != n_env:
                raise ValueError(f"host_batches hold {sum(counts)} envs, the trainer's batch {n_env}")
            bounds = np.concatenate([[0], np.cumsum(counts)]).astype(int)
            self.env_ranges = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        self.arena = self._plan_arena(slot_size, env)
        self.arena.allocate(cuda)
        self.blas = Cublas(self.stream, self.arena.ptr("cublas_workspace"), CUBLAS_WORKSPACE, self.precision)
        self.actor_blas, self.actor_params = self.blas, "params"
        if self.async_rollouts:  # the actor's own cuBLAS handle and workspace, and its copy of the weights
            self.actor_blas = Cublas(self.actor_stream, self.arena.ptr("actor_cublas_workspace"), CUBLAS_WORKSPACE,
                                     self.precision)
            self.actor_params = "actor_params"
            self.learner_done, self.weights_taken = Event(), Event()
            self.scalars_host = cuda.pagelocked_empty(SCALARS_DTYPE.itemsize, np.uint8)
        # MUON: the small matrices' whole steps in one muon_small_kernel launch (its table of matrices, its shared
        # memory); each larger matrix's chain of ~25 small, latency-bound launches (momentum, Newton-Schulz GEMMs,
        # apply, its bias's Adam) on a stream of its own: a branch of the update graph, as
        # (name, shape, launcher, cuBLAS, scratch, fork event, join event). The learner joins the branches
        # only where it next reads the weights (_join_muon_branches), so the next minibatch's gather overlaps them.
        self.muon_branches, self.muon_join_pending = [], False
        if self.muon_small:  # muon_small_kernel's table and shared memory
            table = np.zeros(len(self.muon_small), MUON_SMALL_DTYPE)
            for row, (name, shape) in zip(table, self.muon_small):
                bias = name[:-2] + ".b"
                has_bias = bias in self.layout.offsets and bias not in self.matrix_names
                row["offset"], (row["rows"], row["cols"]) = self.layout.offsets[name][0], shape
                row["bias_offset"] = self.layout.offsets[bias][0] if has_bias else -1
                row["bias_count"] = math.prod(self.layout.offsets[bias][1]) if has_bias else 0
                row["scale"] = ref.muon_update_scale(shape)
            self.arena.set(cuda, "muon_small_table", np.frombuffer(table.tobytes(), np.uint8))
            self.muon_small_shared = max(muon_small_shared_bytes(shape) for _, shape in self.muon_small)
            self.k.function("muon_small_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                              self.muon_small_shared)
        if self.muon_matrices:
            offset = 0
            for i, (name, shape) in enumerate(self.muon_matrices):
                stream = cuda.Stream()
                blas = Cublas(stream, self.arena.ptr("ns_cublas_workspace", i * NS_CUBLAS_WORKSPACE),
                              NS_CUBLAS_WORKSPACE, self.precision)
                self.muon_branches.append((name, shape, device.Launcher(self.k.module, stream), blas,
                                           self.arena.ptr("ns_scratch", offset), Event(), Event()))
                offset += ns_scratch_floats(shape)

        # MODEL AND OPTIMIZER: the reference's initial weights for this seed (same as the CPU trainer).
        self.arena.set(cuda, "params", ref.init_params(spec, self.rng, np.float32))
        if self.group:  # every rank starts from rank 0's weights (init rounding may differ across machines)
            self.group.broadcast(self.arena.ptr("params"), self.layout.size, self.stream.handle)
        scalars = np.zeros((), SCALARS_DTYPE)
        scalars["lr"] = train["learning_rate"]
        scalars["ent_coef"] = train["ent_coef"]
        scalars["clip_scale"] = 1.0
        self.arena.set(cuda, "scalars", np.frombuffer(scalars.tobytes(), np.uint8))
        self.k.launch("fill_kernel", self.mb_rows, self.arena.ptr("ones"), np.int64(self.mb_rows), np.float32(1.0))
        # ENV: reset every env with seeds (seed << 32) + i, as NumpyTrainer (rank r's envs continue the
        # numbering at r * N, so ranks never replay each other's episodes); obs go to step T of the last
        # rollout slot, which the first rollout copies to its step 0, and starts[T] = 1 (every env begins an
        # episode). Rollouts alternate between the slots, each starting where the other one ended.
        seeds = (np.uint64(train["seed"]) << np.uint64(32)) + np.uint64(self.rank * n_env) + np.arange(n_env, dtype=np.uint64)
        self.arena.set(cuda, "seeds", seeds)
        last = self.slot_count - 1
        if self.host_env:
            self._start_host_env(host_batches, seeds)
        else:
            self.k.launch("fv_reset_kernel", n_env, np.int32(n_env), self.arena.ptr("slots"), self.arena.ptr("seeds"),
                          0, self._slot("obs", last, horizon * rows * spec.obs_size))
        self.k.launch("fill_kernel", rows, self._slot("starts", last, horizon * rows), np.int64(rows), np.float32(1.0))
        self.stream.synchronize()
        self.startup_time = time.perf_counter() - t0

        self.global_step = 0
        self.update_index = 0
        self.opt_step = 0
        self.num_updates_captured = None
        self.rollout_graphs = [None] * self.slot_count  # graphs bake pointers: one per rollout slot
        self.update_graphs = [None] * self.slot_count
        self.rollouts_run = 0
        self.timing = {"rollout": 0.0, "update": 0.0}
        if self.host_env:  # of the rollout: the CPU stepping the env, and the CPU waiting for the GPU's actions
            self.timing.update(env=0.0, wait=0.0)

    def _module_int(self, name: str) -> int:
        """A `__device__ const int` of the compiled module (sizes the host needs)."""
        value = np.empty(1, np.int32)
        self.cuda.memcpy_dtoh(value, self.k.module.get_global(name)[0])
        return int(value[0])

    def _fused_block_size(self, num_envs: int) -> int:
        """Threads per block of the fused policy step (every weight in shared memory), or 0 to use the GEMM
        path (too large a policy for shared memory); _fused_kernel says which of the two fused kernels."""
        return self._fused_kernel(num_envs)[1]

    def _fused_kernel(self, num_envs: int) -> tuple[str, int]:
        """(kernel, threads per block) of the fused policy step: policy_step_kernel (a thread per env, a launch
        a step) from FUSED_THREAD_MIN_ENVS envs on, policy_rollout_warp_kernel (a warp per env, the whole
        horizon in one launch) below, or ("", 0) for the GEMM path (a policy too large for shared memory).
        FASTVEC_FUSED_ROLLOUT=0 forces the GEMM path, =thread / =warp one kernel (tests and benchmarks)."""
        spec, forced = self.spec, os.environ.get("FASTVEC_FUSED_ROLLOUT", "auto")
        if forced == "0" or spec.hidden % 4 or spec.hidden > 128 or spec.num_actions > 64:
            return "", 0
        kind = forced if forced in ("thread", "warp") else "thread" if num_envs >= FUSED_THREAD_MIN_ENVS else "warp"
        if kind == "thread":
            param_bytes = (self.layout.size + 3) // 4 * 16
            block = min(FUSED_MAX_BLOCK, (SHARED_LIMIT - param_bytes) // (4 * spec.hidden) // 32 * 32)
        else:
            block = min(FUSED_WARP_BLOCK, (SHARED_LIMIT - self._warp_weight_floats() * 4)
                        // (4 * self._warp_scratch_floats()) * 32)
        if block < 32:
            return "", 0
        return ("policy_step_kernel" if kind == "thread" else "policy_rollout_warp_kernel"), block

    def _warp_weight_floats(self) -> int:
        """rollout.cu's S_TOTAL rounded up to 4: the flat parameters plus one padding float per matrix column."""
        spec = self.spec
        return (self.layout.size + spec.obs_size + (spec.layers + 1) * spec.hidden + 3) // 4 * 4

    def _warp_scratch_floats(self) -> int:
        """rollout.cu's WARP_SCRATCH: per warp, two (H,) activation buffers and the agents' decoder rows."""
        return 2 * self.spec.hidden + self.num_agents * (self.spec.num_actions + 1)

    # ARENA: every device tensor, with its shape
    def _plan_arena(self, slot_size: int, env) -> Arena:
        spec, a = self.spec, Arena()
        t, r, n_env, k, s = self.horizon, self.rows, self.num_envs, self.bptt, self.segments
        o, h, ls, layers, y = spec.obs_size, spec.hidden, spec.state_layers, spec.layers, spec.num_actions + 1
        w = self.layout.offsets["layer0.w"][1][0]
        p, n, bm, q = self.layout.size, self.mb_rows, self.seqs_per_mb, self.sequences
        stats = len(env.stat_names)
        f32, i32 = np.float32, np.int32
        # model and optimizer: flat, in reference.FlatLayout order
        a.add("params", (p,), f32, "flat parameters")
        a.add("grads", (p,), f32, "flat gradients")
        a.add("opt_state", (2 * p,), f32, "[Adam m or Muon momentum | Adam v]")
        a.add("scalars", (SCALARS_DTYPE.itemsize,), np.uint8, "TrainScalars (lr, counters, stats)")
        a.add("norm_partial", (NORM_BLOCKS,), f32, "(G,) partial sums of squared gradients")
        a.add("cublas_workspace", (CUBLAS_WORKSPACE,), np.uint8, "cuBLAS workspace (fixed, for capture)")
        # env
        a.add("slots", (n_env, slot_size), np.uint8, "(N, sizeof(fv_slot)) simulator state")
        a.add("seeds", (n_env,), np.uint64, "(N,) reset seeds")
        a.add("final_obs", (r, o), f32, "(R, O) batch-layer scratch (terminal obs)")
        a.add("terminated", (n_env,), np.uint8, "(N,)")
        a.add("truncated", (n_env,), np.uint8, "(N,)")
        a.add("ep_return", (r,), f32, "(R,) finished episodes' returns where done")
        a.add("ep_length", (n_env,), i32, "(N,)")
        a.add("ep_stats", (n_env, max(stats, 1)), f32, "(N, stats)")
        a.add("episode_acc", (3 + stats,), np.float64, "episodes, sum return, sum length, sum stats")
        # rollout buffers, as NumpyTrainer's
        a.add("obs", (t + 1, r, o), f32, "(T+1, R, O); slot T: obs after the last step")
        a.add("starts", (t + 1, r), f32, "(T+1, R) 1: obs[t] begins an episode")
        a.add("actions", (t, r), i32, "(T, R)")
        a.add("logp", (t, r), f32, "(T, R) log pi_old(a|s)")
        a.add("values", (t, r), f32, "(T, R) V_old(s)")
        a.add("rewards", (t, r), f32, "(T, R)")
        a.add("dones", (t, r), f32, "(T, R) 1: episode ended at step t")
        a.add("adv_returns", (2, t, r), f32, "(2, T, R) advantages, then returns = advantages + values")
        a.add("last_value", (r,), f32, "(R,) V(obs[T]), the bootstrap (fused path)")
        a.add("new_logp", (t, r), f32, "(T, R) log pi_new(a|s), for V-trace")
        a.add("segment_state", (s, max(ls, 1), r, h), f32, "(S, Ls, R, H) state entering each segment")
        a.add("state", (max(ls, 1), r, h), f32, "(Ls, R, H) live recurrent state")
        a.add("last_state", (max(ls, 1), r, h), f32, "(Ls, R, H) scratch: state after the bootstrap step")
        # rollout activations (one step of R rows)
        a.add("r_act", (2, r, h), f32, "(2, R, H) layer inputs/outputs, ping-pong")
        a.add("r_pre", (r, w), f32, "(R, W) pre-activations (bfloat16 in its first half with rollout_bf16)")
        if self.rollout_bf16:
            a.add("r_act_bf16", (layers, r, h), np.uint16, "(L, R, H) bfloat16 copies of each layer's input")
        a.add("r_y", (r, y), f32, "(R, Y) decoder output; after the rollout, the bootstrap values")
        # update: minibatch inputs (K, Bm, ...) rows
        a.add("perm", (q,), i32, "(Q,) this epoch's sequence order")
        a.add("mb_obs", (n, o), f32, "(K, Bm, O)")
        a.add("mb_starts", (n,), f32, "(K, Bm)")
        a.add("mb_actions", (n,), i32, "(K, Bm)")
        a.add("mb_logp", (n,), f32, "(K, Bm)")
        a.add("mb_values", (n,), f32, "(K, Bm)")
        a.add("mb_adv", (n,), f32, "(K, Bm)")
        a.add("mb_returns", (n,), f32, "(K, Bm)")
        a.add("mb_src", (n,), i32, "(K, Bm) rollout index t * R + r of each row")
        a.add("mb_state", (max(ls, 1), bm, h), f32, "(Ls, Bm, H) state entering each sequence")
        a.add("mb_state_out", (bm, h), f32, "(Bm, H) scratch: state after the sequence")
        a.add("adv_moments", (2,), f32, "minibatch advantage mean, std")
        a.add("sums_partial", (NORM_BLOCKS, 5, 2), np.float64, "(G, k, 2) per-block sums and sums of squares")
        a.add("block_partial", (max(BIAS_GRAD_BLOCKS * max(w, y, h), 5 * -(-n // device.THREADS)),), np.float64,
              "per-block partial sums of the one-launch reductions (kernels.cu last_block)")
        a.add("ones", (n,), f32, "(n,) ones: unmasked bias gradients are ones (1, n) @ dout (n, cols) GEMMs")
        a.add("reduce_counter", (1,), np.uint32, "blocks done in the running one-launch reduction (0 between)")
        # update: activations kept for the backward
        a.add("act", (layers + 1, n, h), f32, "(L+1, n, H) encoder output, then each layer's output")
        act_dtype = np.uint16 if self.bf16_acts else f32  # uint16: bfloat16 bits
        a.add("pre", (layers, n, w), act_dtype, "(L, n, W) pre-activations (without the bias)")
        a.add("hseq", (max(ls, 1), n, h), act_dtype, "(Ls, n, H) MinGRU states")
        a.add("y", (n, y), f32, "(n, Y) decoder output")
        a.add("dy", (n, y), f32, "(n, Y) loss gradient")
        a.add("dact", (2, n, h), f32, "(2, n, H) layer gradients, ping-pong")
        a.add("dpre", (n, w), act_dtype, "(n, W)")
        if self.bf16_acts:
            a.add("act_bf16", (layers, n, h), np.uint16, "(L, n, H) bfloat16 copies of each layer's input")
            a.add("params_bf16", (self.layout.size,), np.uint16, "(P,) bfloat16 copy of the weights (minibatch)")
        a.add("dbias_seq", (bm, w), f32, "(Bm, W) per-sequence sums of a MinGRU layer's dpre")
        if self.muon_small:
            a.add("muon_small_table", (len(self.muon_small) * MUON_SMALL_DTYPE.itemsize,), np.uint8,
                  "(matrices,) MuonMatrix rows of muon_small_kernel")
        if self.muon_matrices:  # Newton-Schulz scratch and a cuBLAS workspace per GEMM-chain matrix
            mats = len(self.muon_matrices)
            a.add("ns_scratch", (sum(ns_scratch_floats(shape) for _, shape in self.muon_matrices),), f32,
                  "per matrix: u, the two ping-pong iterates (rows*cols each), gram and poly (r*r each)")
            a.add("ns_cublas_workspace", (mats, NS_CUBLAS_WORKSPACE), np.uint8, "(matrices, bytes) branch workspaces")
        if self.async_rollouts:  # the second rollout slot, and the actor's own weights and cuBLAS workspace
            for name in SLOT_BUFFERS:
                _, shape, dtype, doc = a.entries[name]
                a.add(f"{name}@1", shape, dtype, "rollout slot 1: " + doc)
            a.add("actor_params", (p,), f32, "the weights the actor collects with (copied when an update starts)")
            if self.rollout_bf16:
                a.add("actor_params_bf16", (p,), np.uint16, "(P,) their bfloat16 copy (each rollout)")
            a.add("actor_cublas_workspace", (CUBLAS_WORKSPACE,), np.uint8, "the actor stream's cuBLAS workspace")
        if self.host_env:  # what the host copies up after each group's step, every group's after the other's
            total = sum(self._staging_layout(hi - lo)[1] for lo, hi in self.env_ranges)
            a.add("host_in", (total,), np.uint8, "host envs' step outputs, per group as _staging_layout")
        return a

    # HOST ENVIRONMENTS (train.env_device = "cpu")
    def _staging_layout(self, envs: int) -> tuple[dict, int]:
        """The pinned upload buffer of a group of `envs` envs: {name: (byte offset, shape, dtype)} of the
        batch's step outputs host_record_kernel reads, each 16-byte aligned, and the total bytes."""
        rows, o, stats = envs * self.num_agents, self.spec.obs_size, len(self.batch.env.stat_names)
        fields = [("obs", (rows, o), np.float32), ("rewards", (rows,), np.float32), ("ep_return", (rows,), np.float32),
                  ("ep_stats", (envs, stats), np.float32), ("ep_length", (envs,), np.int32),
                  ("terminated", (envs,), np.uint8), ("truncated", (envs,), np.uint8)]
        layout, offset = {}, 0
        for name, shape, dtype in fields:
            layout[name] = (offset, shape, np.dtype(dtype))
            offset += (math.prod(shape) * np.dtype(dtype).itemsize + 15) // 16 * 16
        return layout, offset

    def _start_host_env(self, host_batches: list | None, seeds: np.ndarray) -> None:
        """Make (or take) one host batch per env group, reset group g's env i with env lo_g + i's seed (so the
        envs are the same however they are grouped), upload the first obs to obs[T] and set up each group's
        pinned buffers (step outputs up, actions down) and the event that says its actions are on the host."""
        cuda, a, o, t_len = self.cuda, self.arena, self.spec.obs_size, self.horizon
        if host_batches is None:
            if len(self.env_ranges) == 1:
                host_batches = [self.batch]
            else:
                from fastvec.trainer.run import make_batch
                host_batches = [make_batch(self.config, hi - lo) for lo, hi in self.env_ranges]
        self.host_groups = []
        self.host_graphs = {}  # (group, step) -> the graph of that piece of the rollout (_host_segment)
        staging_offset = 0
        for (lo, hi), batch in zip(self.env_ranges, host_batches):
            if batch.obs.shape[1:] != (self.num_agents, o):
                raise ValueError(f"host batch obs {batch.obs.shape[1:]} do not match ({self.num_agents}, {o})")
            batch.reset(seeds[lo:hi], None)
            layout, nbytes = self._staging_layout(hi - lo)
            pinned = cuda.pagelocked_empty(nbytes, np.uint8)
            views = {name: pinned[off:off + math.prod(shape) * dtype.itemsize].view(dtype).reshape(shape)
                     for name, (off, shape, dtype) in layout.items()}
            dev = {name: a.ptr("host_in", staging_offset + off) for name, (off, _, _) in layout.items()}
            rows = (hi - lo) * self.num_agents
            self.host_groups.append({"batch": batch, "envs": hi - lo, "row0": lo * self.num_agents, "rows": rows,
                                     "pinned": pinned, "views": views, "dev": dev,
                                     "dev_in": a.ptr("host_in", staging_offset),
                                     "actions": cuda.pagelocked_empty(rows, np.int32),
                                     "event": cuda.Event(cuda.event_flags.DISABLE_TIMING)})
            staging_offset += nbytes
            first_obs = np.ascontiguousarray(batch.obs.reshape(rows, o), np.float32)
            cuda.memcpy_htod(self._slot("obs", self.slot_count - 1, (t_len * self.rows + lo * self.num_agents) * o),
                             first_obs)

    def _host_infer(self, g: dict, t: int, slot: int) -> None:
        """Enqueue group g's policy step t into `slot` on the actor's stream: (the segment's state,) the
        forward over its rows of obs[t], the sampling into actions/logp/values[t], and the actions' copy to
        g's pinned buffer."""
        spec, a, k, cuda = self.spec, self.arena, self.actor_k, self.cuda
        r, o, h, row0, rows = self.rows, spec.obs_size, spec.hidden, g["row0"], g["rows"]
        ls, w, ny = spec.state_layers, self.layout.offsets["layer0.w"][1][0], spec.num_actions + 1
        buf = lambda name, offset=0: self._slot(name, slot, offset)  # noqa: E731
        if t % self.bptt == 0 and ls:
            for layer in range(ls):
                segment = ((t // self.bptt) * ls + layer) * r * h
                cuda.memcpy_dtod_async(buf("segment_state", segment + row0 * h),
                                       a.ptr("state", layer * r * h + row0 * h), rows * h * 4, k.stream)
        state = [a.ptr("state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
        acts = [a.ptr("r_act", (i % 2) * r * h + row0 * h) for i in range(spec.layers + 1)]
        y = buf("r_y", row0 * ny)
        self._policy_forward(rows, 1, buf("obs", (t * r + row0) * o), buf("starts", t * r + row0), state, state,
                             acts, [a.ptr("r_pre", row0 * w)] * spec.layers, [0] * spec.layers,
                             y, self.actor_params, k, self.actor_blas)
        k.launch("host_sample_kernel", rows, np.int32(rows), np.int32(row0), y, buf("actions", t * r + row0),
                 buf("logp", t * r + row0), buf("values", t * r + row0), a.ptr("scalars"), np.int32(t),
                 np.uint64(self.seed_key))
        cuda.memcpy_dtoh_async(g["actions"], buf("actions", t * r + row0), k.stream)

    def _host_rollout(self, slot: int) -> None:
        """NumpyTrainer.rollout into `slot` with the policy on the GPU (the actor's stream and weights) and the
        env on the CPU, pipelined over the env groups: the CPU waits for group g's actions at step t (its
        event), steps g's batch, copies the outputs into g's pinned buffer, and enqueues their upload,
        host_record_kernel and g's policy step t + 1; meanwhile the GPU works through the other group's step.
        Each enqueued piece is a CUDA graph from the second rollout on (one per slot, group and step: the
        pointers differ), so the CPU spends its time on the env rather than on launches. Nothing here waits
        for the whole stream: rollout() (sync) or the next update's event (async) does."""
        stream, cuda = self.actor_stream, self.cuda
        t_len, r, o = self.horizon, self.rows, self.spec.obs_size
        previous = (slot + 1) % self.slot_count

        def start(g):
            if g is self.host_groups[0]:  # obs[0], starts[0] are obs[T], starts[T] of the previous rollout
                cuda.memcpy_dtod_async(self._slot("obs", slot), self._slot("obs", previous, t_len * r * o),
                                       r * o * 4, stream)
                cuda.memcpy_dtod_async(self._slot("starts", slot), self._slot("starts", previous, t_len * r),
                                       r * 4, stream)
            self._host_infer(g, 0, slot)

        for i, g in enumerate(self.host_groups):
            self._host_segment((slot, "start", i), lambda g=g: start(g))
            g["event"].record(stream)
        for t in range(t_len):
            for i, g in enumerate(self.host_groups):
                t0 = time.perf_counter()
                g["event"].synchronize()
                t1 = time.perf_counter()
                batch, views, rows = g["batch"], g["views"], g["rows"]
                batch.step(g["actions"].reshape(g["envs"], self.num_agents))
                views["obs"][...] = batch.obs.reshape(rows, o)
                views["rewards"][...] = batch.rewards.reshape(rows)
                views["ep_return"][...] = batch.episode_return.reshape(rows)
                views["ep_stats"][...] = batch.episode_stats
                views["ep_length"][...] = batch.episode_length
                views["terminated"][...] = batch.terminated
                views["truncated"][...] = batch.truncated
                self.timing["wait"] += t1 - t0
                self.timing["env"] += time.perf_counter() - t1
                self._host_segment((slot, i, t), lambda g=g, t=t: self._host_record(g, t, slot))
                if t + 1 < t_len:
                    g["event"].record(stream)
        self._host_segment((slot, "bootstrap"), lambda: self._host_bootstrap(slot))
        self.rollouts_run += 1

    def _host_record(self, g: dict, t: int, slot: int) -> None:
        """Enqueue group g's step t outcome (upload, host_record_kernel), then its policy step t + 1."""
        a, r, o, dev, row0, k = self.arena, self.rows, self.spec.obs_size, g["dev"], g["row0"], self.actor_k
        buf = lambda name, offset=0: self._slot(name, slot, offset)  # noqa: E731
        self.cuda.memcpy_htod_async(g["dev_in"], g["pinned"], k.stream)
        k.launch("host_record_kernel", max(g["rows"] * o, g["envs"]), np.int32(g["envs"]), np.int32(self.num_agents),
                 np.int32(o), np.int32(g["views"]["ep_stats"].shape[1]), dev["obs"], dev["rewards"],
                 dev["ep_return"], dev["ep_stats"], dev["ep_length"], dev["terminated"], dev["truncated"],
                 buf("obs", ((t + 1) * r + row0) * o), buf("rewards", t * r + row0), buf("dones", t * r + row0),
                 buf("starts", (t + 1) * r + row0), a.ptr("episode_acc"), np.int32(self.train_cfg["reward_clamp"]))
        if t + 1 < self.horizon:
            self._host_infer(g, t + 1, slot)

    def _host_bootstrap(self, slot: int) -> None:
        """V(obs[T]) into the slot's r_y with the live state, which stays as it is (last_state is scratch)."""
        spec, a = self.spec, self.arena
        t_len, r, o, h, ls = self.horizon, self.rows, spec.obs_size, spec.hidden, spec.state_layers
        ny, w = spec.num_actions + 1, self.layout.offsets["layer0.w"][1][0]
        for g in self.host_groups:
            row0, rows = g["row0"], g["rows"]
            state = [a.ptr("state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
            last = [a.ptr("last_state", layer * r * h + row0 * h) for layer in range(ls)] or [0] * spec.layers
            acts = [a.ptr("r_act", (i % 2) * r * h + row0 * h) for i in range(spec.layers + 1)]
            self._policy_forward(rows, 1, self._slot("obs", slot, (t_len * r + row0) * o),
                                 self._slot("starts", slot, t_len * r + row0), state, last, acts,
                                 [a.ptr("r_pre", row0 * w)] * spec.layers, [0] * spec.layers,
                                 self._slot("r_y", slot, row0 * ny), self.actor_params, self.actor_k, self.actor_blas)
        self.actor_k.launch_grid("advance_rollout_kernel", 1, 1, a.ptr("scalars"), np.int32(t_len))

    def _host_segment(self, key, record) -> None:
        """Run `record` (which enqueues GPU work on the actor's stream): eagerly in the first rollout (so
        cuBLAS and the driver load their kernels outside any capture), then as the graph captured for `key`
        from the second on. If a capture fails, say so once and stay eager (same work, more launch time)."""
        if not self.use_graphs or self.rollouts_run == 0 or self.host_graphs is None:
            record()
            return
        graph = self.host_graphs.get(key)
        if graph is None:
            graph = CudaGraph(self.actor_stream.handle)
            try:
                with graph.capture():
                    record()
            except CudaDriverError as err:
                print(f"fastvec-train: host-env rollout steps run without CUDA graphs ({err})", file=sys.stderr)
                self._close_host_graphs()
                record()
                return
            self.host_graphs[key] = graph
        graph.launch()

    def _close_host_graphs(self) -> None:
        for graph in (self.host_graphs or {}).values():
            graph.close()
        self.host_graphs = None

    @property
    def params(self) -> np.ndarray:
        """A host copy of the flat float32 parameters (P,), as NumpyTrainer.params (self-play snapshots it)."""
        self._synchronize()
        return self.arena.get(self.cuda, "params")

    def _slot(self, name: str, slot: int | None = None, offset_elements: int = 0) -> int:
        """Device address of rollout buffer `name` (SLOT_BUFFERS) of rollout slot `slot` (default: the one
        the next update trains on)."""
        slot = self.active_slot if slot is None else slot
        return self.arena.ptr(name if slot == 0 else f"{name}@{slot}", offset_elements)

    def scalars(self) -> np.ndarray:
        """The device scalars (synchronous read, after the learner and the actor)."""
        self._synchronize()
        raw = self.arena.get(self.cuda, "scalars")
        return np.frombuffer(raw.tobytes(), SCALARS_DTYPE)[0]

    def _write_scalars(self, scalars) -> None:
        self._synchronize()
        self.arena.set(self.cuda, "scalars", np.frombuffer(np.asarray(scalars, SCALARS_DTYPE).tobytes(), np.uint8))

    # POLICY FORWARD (one or many steps): the reference's policy_forward as GEMMs and fused kernels
    def _policy_forward(self, rows_per_step: int, steps: int, obs: int, starts: int, state_in, state_out,
                        acts, pres, hs, y: int, params: str = "params", k=None, blas=None, acts_bf16=None,
                        dec_bias: bool = True) -> None:
        """obs (steps, B, O) -> y (steps, B, Y). acts: L + 1 pointers (encoder output, layer outputs);
        pres, hs: per-layer pre-activation and MinGRU-state buffers; state_in/out: per-layer (B, H).
        params: the arena's weights to use; k, blas: the stream's launcher and cuBLAS (default the learner's).
        acts_bf16 (bf16 MinGRU updates and GEMM-path rollouts): L pointers to bfloat16 copies of the layers'
        inputs; the layer GEMMs then multiply those by the weights' bf16 copy (arena f"{params}_bf16") into
        bfloat16 pres, and the MinGRU forward reads its highway input from them and stores hs in bfloat16.
        dec_bias=False leaves the decoder's bias out of y (the GEMM-path rollout step adds it)."""
        spec, a, k, blas = self.spec, self.arena, k or self.k, blas or self.blas
        rows, h, o = rows_per_step * steps, spec.hidden, spec.obs_size
        off = self.layout.offsets
        pp = lambda name: a.ptr(params, off[name][0])  # noqa: E731
        blas.matmul(acts[0], obs, pp("enc.w"), rows, h, o, trans_b=True)
        k.launch("add_bias_kernel", rows * h, acts[0], pp("enc.b"), np.int64(rows), np.int32(h),
                 acts_bf16[0] if acts_bf16 else 0)
        for layer in range(spec.layers):
            w = off[f"layer{layer}.w"][1][0]
            if acts_bf16:
                blas.matmul(pres[layer], acts_bf16[layer], a.ptr(f"{params}_bf16", off[f"layer{layer}.w"][0]), rows,
                            w, h, trans_b=True, dtype=CUDA_R_16BF, out_dtype=CUDA_R_16BF)
            else:
                blas.matmul(pres[layer], acts[layer], pp(f"layer{layer}.w"), rows, w, h, trans_b=True)
            if spec.recurrent:
                next_bf16 = acts_bf16[layer + 1] if acts_bf16 and layer + 1 < spec.layers else 0
                k.launch("mingru_forward_bf16_kernel" if acts_bf16 else "mingru_forward_kernel", rows_per_step * h,
                         np.int32(steps), np.int32(rows_per_step), np.int32(h), np.int32(spec.highway),
                         (acts_bf16 or acts)[layer], pres[layer], pp(f"layer{layer}.b"), starts, state_in[layer],
                         hs[layer], acts[layer + 1], state_out[layer], next_bf16)
            else:
                k.launch("mlp_forward_kernel", rows * h, np.int64(rows), np.int32(h), pres[layer],
                         pp(f"layer{layer}.b"), acts[layer + 1])
        ny = spec.num_actions + 1
        blas.matmul(y, acts[spec.layers], pp("dec.w"), rows, ny, h, trans_b=True)
        if dec_bias:
            k.launch("add_bias_kernel", rows * ny, y, pp("dec.b"), np.int64(rows), np.int32(ny), 0)

    # ROLLOUT
    def _record_rollout(self, slot: int = 0) -> None:
        """Enqueue one whole horizon into rollout slot `slot` on the actor's stream, with the actor's weights:
        the NumpyTrainer.rollout loop, then the bootstrap value. It starts from the obs after the previous
        rollout (step T of the other slot; of the same one without train.async)."""
        spec, a, k, cuda = self.spec, self.arena, self.actor_k, self.cuda
        t_len, r, o, h, kk = self.horizon, self.rows, spec.obs_size, spec.hidden, self.bptt
        ls = spec.state_layers
        buf = lambda name, offset=0: self._slot(name, slot, offset)  # noqa: E731
        previous = (slot + 1) % self.slot_count
        cuda.memcpy_dtod_async(buf("obs"), self._slot("obs", previous, t_len * r * o), r * o * 4, k.stream)
        cuda.memcpy_dtod_async(buf("starts"), self._slot("starts", previous, t_len * r), r * 4, k.stream)
        state = [a.ptr("state", layer * r * h) for layer in range(ls)] or [0] * spec.layers
        last_state = [a.ptr("last_state", layer * r * h) for layer in range(ls)] or [0] * spec.layers
        acts = [a.ptr("r_act", (i % 2) * r * h) for i in range(spec.layers + 1)]
        pres = [a.ptr("r_pre")] * spec.layers
        hs = [0] * spec.layers  # the rollout keeps no per-step MinGRU states
        if self.fused_block:
            self._record_fused_rollout(slot)
            return
        acts_bf16 = None
        if self.rollout_bf16:  # the weights this rollout collects with, in bfloat16
            p = self.layout.size
            k.launch("to_bf16_kernel", p, np.int64(p), a.ptr(self.actor_params), a.ptr(f"{self.actor_params}_bf16"))
            acts_bf16 = [a.ptr("r_act_bf16", i * r * h) for i in range(spec.layers)]
        for t in range(t_len):
            if t % kk == 0 and ls:
                cuda.memcpy_dtod_async(buf("segment_state", (t // kk) * ls * r * h), a.ptr("state"),
                                       ls * r * h * 4, k.stream)
            self._policy_forward(r, 1, buf("obs", t * r * o), buf("starts", t * r), state, state, acts, pres,
                                 hs, buf("r_y"), self.actor_params, k, self.actor_blas, acts_bf16, dec_bias=False)
            k.launch_shared(self.rollout_step[0], self.num_envs, self.rollout_step[1], 0,
                            np.int32(self.num_envs), a.ptr("slots"), buf("r_y"),
                            a.ptr(self.actor_params, self.layout.offsets["dec.b"][0]), buf("obs", (t + 1) * r * o),
                            a.ptr("final_obs"), buf("actions", t * r), buf("logp", t * r), buf("values", t * r),
                            buf("rewards", t * r), buf("dones", t * r), buf("starts", (t + 1) * r),
                            a.ptr("terminated"), a.ptr("truncated"), a.ptr("ep_return"), a.ptr("ep_length"),
                            a.ptr("ep_stats"), a.ptr("episode_acc"), a.ptr("scalars"), np.int32(t),
                            np.uint64(self.seed_key), np.int32(self.train_cfg["reward_clamp"]),
                            np.int32(self.max_episode_steps))
        # Bootstrap: V(obs[T]) with the live state, which stays as it is (last_state is scratch).
        self._policy_forward(r, 1, buf("obs", t_len * r * o), buf("starts", t_len * r), state, last_state,
                             acts, pres, hs, buf("r_y"), self.actor_params, k, self.actor_blas, acts_bf16)
        k.launch_grid("advance_rollout_kernel", 1, 1, a.ptr("scalars"), np.int32(t_len))

    def _record_fused_rollout(self, slot: int) -> None:
        """The horizon with one fused policy step launch per step (policy, sampling, env step: a thread or a
        warp per env, _fused_kernel), then the bootstrap value."""
        spec, a, k, cuda = self.spec, self.arena, self.actor_k, self.cuda
        t_len, r, o, h, kk, n_env = self.horizon, self.rows, spec.obs_size, spec.hidden, self.bptt, self.num_envs
        ls = spec.state_layers
        buf = lambda name, offset=0: self._slot(name, slot, offset)  # noqa: E731
        name, block = self._fused_kernel(n_env)
        if name == "policy_rollout_warp_kernel":
            self._record_warp_rollout(slot, block)
            return
        shared = (self.layout.size + 3) // 4 * 16 + 4 * h * block
        fn = k.function(name)
        fn.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        common = (a.ptr("episode_acc"), a.ptr("scalars"))
        for t in range(t_len + 1):
            bootstrap = t == t_len
            if t % kk == 0 and ls and not bootstrap:
                cuda.memcpy_dtod_async(buf("segment_state", (t // kk) * ls * r * h), a.ptr("state"),
                                       ls * r * h * 4, k.stream)
            step = min(t, t_len - 1)  # the bootstrap writes no step outputs; any valid pointers do
            k.launch_shared(name, n_env, block, shared, np.int32(n_env), a.ptr(self.actor_params),
                            buf("obs", t * r * o), buf("starts", t * r), a.ptr("state"),
                            a.ptr("last_state" if bootstrap else "state"), np.int32(bootstrap), buf("last_value"),
                            a.ptr("slots"), buf("obs", (step + 1) * r * o), a.ptr("final_obs"),
                            buf("actions", step * r), buf("logp", step * r), buf("values", step * r),
                            buf("rewards", step * r), buf("dones", step * r), buf("starts", (step + 1) * r),
                            a.ptr("terminated"), a.ptr("truncated"), a.ptr("ep_return"), a.ptr("ep_length"),
                            a.ptr("ep_stats"), *common, np.int32(t), np.uint64(self.seed_key),
                            np.int32(self.train_cfg["reward_clamp"]), np.int32(self.max_episode_steps))
        k.launch_grid("advance_rollout_kernel", 1, 1, a.ptr("scalars"), np.int32(t_len))

    def _record_warp_rollout(self, slot: int, block: int) -> None:
        """The horizon and the bootstrap with policy_rollout_warp_kernel (a warp per env): one launch for all
        T + 1 policy steps, or with FASTVEC_ROLLOUT_LAUNCH=step one a step (same kernel, same results)."""
        a, k, cuda = self.arena, self.actor_k, self.cuda
        t_len, n_env = self.horizon, self.num_envs
        buf = lambda name: self._slot(name, slot)  # noqa: E731
        shared = 4 * (self._warp_weight_floats() + block // 32 * self._warp_scratch_floats())
        k.function("policy_rollout_warp_kernel").set_attribute(
            cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        per_step = os.environ.get("FASTVEC_ROLLOUT_LAUNCH", "horizon") == "step"
        for t0, steps in ([(t, 1) for t in range(t_len + 1)] if per_step else [(0, t_len + 1)]):
            k.launch_shared("policy_rollout_warp_kernel", n_env * 32, block, shared, np.int32(n_env), np.int32(t_len),
                            np.int32(self.bptt), np.int32(t0), np.int32(steps), a.ptr(self.actor_params), buf("obs"),
                            buf("starts"), a.ptr("state"), a.ptr("last_state"), buf("last_value"),
                            buf("segment_state"), a.ptr("slots"), a.ptr("final_obs"), buf("actions"), buf("logp"),
                            buf("values"), buf("rewards"), buf("dones"), a.ptr("terminated"), a.ptr("truncated"),
                            a.ptr("ep_return"), a.ptr("ep_length"), a.ptr("ep_stats"), a.ptr("episode_acc"),
                            a.ptr("scalars"), np.uint64(self.seed_key), np.int32(self.train_cfg["reward_clamp"]),
                            np.int32(self.max_episode_steps))
        k.launch_grid("advance_rollout_kernel", 1, 1, a.ptr("scalars"), np.int32(t_len))

    def _synchronize(self) -> None:
        """Wait for the learner and the actor (one stream without train.async)."""
        self.stream.synchronize()
        if self.actor_stream is not self.stream:
            self.actor_stream.synchronize()

    def last_values(self) -> np.ndarray:
        """V(obs after the last step) (R,) of the rollout the next update trains on, the GAE's bootstrap."""
        self._synchronize()
        if self.fused_block:
            return self.arena.get(self.cuda, "last_value" if self.active_slot == 0 else "last_value@1")
        return self.arena.get(self.cuda, "r_y" if self.active_slot == 0 else "r_y@1")[:, self.spec.num_actions].copy()

    @property
    def behaviour_version(self) -> int:
        """update_index of the weights that collected the slot the next update trains on (as NumpyTrainer's)."""
        return self.slot_version[self.active_slot]

    def rollout(self) -> None:
        """Fill the rollout buffers the next update trains on, as NumpyTrainer.rollout.

        Sync: collect with the current weights and wait for it. Async: the first call collects two
        rollouts (update 0 trains on the first); every call launches the rollout that runs while the next
        update does, with the weights that update starts from, and returns without waiting: update()
        waits on the GPU (an event) for the slot it trains on. The first rollout runs eagerly (so that
        cuBLAS and the driver load their kernels outside any capture); later ones replay one graph per slot.

        Async with host envs (train.env_device=cpu): the CPU steps the env, so collecting cannot be launched
        and left to run; the overlapping rollout is prepared here (its weights copied) and collected by the
        next update() after it has launched its own graph, so the CPU steps envs while the GPU learns."""
        t0 = time.perf_counter()
        self._collect_pending_host_rollout()  # a rollout() without an update() in between
        if not self.async_rollouts:
            self._collect(0)
            self.stream.synchronize()
        else:
            if self.ready_slot is None:
                self._collect(self.fill_slot)
                self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
            # overlaps update `update_index`, with the weights it starts from
            self._collect(self.fill_slot, defer_host=True)
            self.active_slot = self.ready_slot
            self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
        self.timing["rollout"] += time.perf_counter() - t0  # async: launching only; the GPU time overlaps

    def _collect(self, slot: int, defer_host: bool = False) -> None:
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
                self._host_rollout(slot)
            return
        if not self.use_graphs or self.rollouts_run == 0:
            self._record_rollout(slot)
        else:
            if self.rollout_graphs[slot] is None:
                self.rollout_graphs[slot] = CudaGraph(self.actor_stream.handle)
                with self.rollout_graphs[slot].capture():
                    self._record_rollout(slot)
            self.rollout_graphs[slot].launch()
        self.rollouts_run += 1

    def _collect_pending_host_rollout(self) -> float:
        """Step the host envs for the rollout rollout() prepared (async host envs); returns the seconds spent."""
        if self.pending_host_slot is None:
            return 0.0
        t0 = time.perf_counter()
        slot, self.pending_host_slot = self.pending_host_slot, None
        self._host_rollout(slot)
        return time.perf_counter() - t0

    # GAE
    def _record_gae(self, vtrace: bool) -> None:
        tc, a = self.train_cfg, self.arena
        ny = self.spec.num_actions + 1
        last, stride = (self._slot("last_value"), 1) if self.fused_block else (self._slot("r_y", None, ny - 1), ny)
        self.k.launch("gae_kernel", self.rows, np.int32(self.horizon), np.int32(self.rows), self._slot("values"),
                      last, np.int32(stride), self._slot("rewards"), self._slot("dones"), np.float32(tc["gamma"]),
                      np.float32(tc["gae_lambda"]), np.float32(tc["gamma"] * tc["gae_lambda"]), np.int32(vtrace),
                      a.ptr("new_logp"), self._slot("logp"), np.float32(tc["vtrace_rho_clip"]),
                      np.float32(tc["vtrace_c_clip"]), a.ptr("adv_returns"), a.ptr("adv_returns", self.horizon * self.rows))

    # UPDATE
    def _record_update(self, num_updates: int, stale: bool = False) -> None:
        """Enqueue one whole update of the active rollout slot: NumpyTrainer.update with every minibatch_step.
        stale: the slot was collected with older weights (async), so V-trace corrects from the first epoch."""
        tc, a, k = self.train_cfg, self.arena, self.k
        k.launch_grid("begin_update_kernel", 1, 1, a.ptr("scalars"))
        if tc["vtrace"]:
            self.cuda.memset_d32_async(a.ptr("new_logp"), 0, self.horizon * self.rows, self.stream)
        half_bits = max(1, math.ceil(math.ceil(math.log2(max(self.sequences, 2))) / 2))
        if tc["vtrace"] and stale:
            self._record_current_logp(half_bits)
            self._record_gae(True)
        else:
            self._record_gae(False)
        for epoch in range(tc["update_epochs"]):
            if tc["vtrace"] and epoch > 0:
                self._record_gae(True)
            k.launch("shuffle_kernel", self.sequences, np.int32(self.sequences), np.int32(half_bits),
                     np.uint64(self.shuffle_key), np.int32(epoch), a.ptr("scalars"), a.ptr("perm"))
            for mb in range(self.minibatches):
                self._record_minibatch_step(mb * self.seqs_per_mb)
        self._join_muon_branches()  # before the schedule changes the learning rate the branches read
        count = self.horizon * self.rows
        k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(count), np.int32(2), a.ptr("adv_returns"),
                      a.ptr("sums_partial"))
        k.launch_grid("explained_variance_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), a.ptr("sums_partial"),
                      np.int64(count), a.ptr("scalars"))
        k.launch_grid("schedule_kernel", 1, 1, a.ptr("scalars"), np.float64(tc["learning_rate"]),
                      np.int32(num_updates), np.int32(tc["anneal_lr"]))

    def _record_current_logp(self, half_bits: int) -> None:
        """new_logp = log pi(a|s) of every rollout step under the weights the update starts from (stale data:
        NumpyTrainer's forward pass before the first epoch), a minibatch forward at a time in epoch 0's order
        (any order covering every sequence once would do). ppo_loss_kernel's scatter writes the log-probs;
        its other outputs are scratch the minibatch steps overwrite, and no statistic is accumulated."""
        tc, spec, a, k = self.train_cfg, self.spec, self.arena, self.k
        k.launch("shuffle_kernel", self.sequences, np.int32(self.sequences), np.int32(half_bits),
                 np.uint64(self.shuffle_key), np.int32(0), a.ptr("scalars"), a.ptr("perm"))
        n = self.mb_rows
        for mb in range(self.minibatches):
            self._record_minibatch_forward(mb * self.seqs_per_mb)
            k.launch("ppo_loss_kernel", n, np.int32(n), np.int32(spec.num_actions), a.ptr("y"), a.ptr("mb_actions"),
                     a.ptr("mb_logp"), a.ptr("mb_values"), a.ptr("mb_adv"), a.ptr("mb_returns"), 0, a.ptr("scalars"),
                     np.float32(tc["clip_coef"]), np.float32(tc["vf_clip_coef"]), np.float32(tc["vf_coef"]),
                     a.ptr("dy"), 0, 0, a.ptr("new_logp"), a.ptr("mb_src"))

    def _record_minibatch_forward(self, first: int, adv_moments: bool = False):
        """Gather sequences perm[first : first + Bm] of the active slot (with adv_moments, also their advantages'
        mean and std into adv_moments) and run the policy over them (y).
        Returns the activation pointers the backward reads: (states, acts, pres, hs, widths)."""
        spec, a, k = self.spec, self.arena, self.k
        kk, bm, n, r = self.bptt, self.seqs_per_mb, self.mb_rows, self.rows
        h, o, ls, layers = spec.hidden, spec.obs_size, spec.state_layers, spec.layers
        off = self.layout.offsets
        k.launch("gather_minibatch_kernel", n, np.int32(kk), np.int32(bm), np.int32(r), np.int32(o), np.int32(first),
                 a.ptr("perm"), self._slot("obs"), self._slot("starts"), self._slot("actions"), self._slot("logp"),
                 self._slot("values"), a.ptr("adv_returns"), a.ptr("adv_returns", self.horizon * self.rows),
                 a.ptr("mb_obs"), a.ptr("mb_starts"), a.ptr("mb_actions"), a.ptr("mb_logp"), a.ptr("mb_values"),
                 a.ptr("mb_adv"), a.ptr("mb_returns"), a.ptr("mb_src"), a.ptr("block_partial"),
                 a.ptr("reduce_counter"), a.ptr("adv_moments") if adv_moments else 0)
        if ls:
            k.launch("gather_state_kernel", ls * bm * h, np.int32(ls), np.int32(bm), np.int32(r), np.int32(h),
                     np.int32(first), a.ptr("perm"), self._slot("segment_state"), a.ptr("mb_state"))
        self._join_muon_branches()  # the weights are read from here on
        widths = [off[f"layer{layer}.w"][1][0] for layer in range(layers)]
        acts = [a.ptr("act", i * n * h) for i in range(layers + 1)]
        pres = [a.ptr("pre", i * n * widths[0]) for i in range(layers)]
        hs = [a.ptr("hseq", min(i, max(ls - 1, 0)) * n * h) for i in range(layers)]
        states = [a.ptr("mb_state", min(i, max(ls - 1, 0)) * bm * h) for i in range(layers)]
        outs = [a.ptr("mb_state_out")] * layers
        acts_bf16 = None
        if self.bf16_acts:  # this minibatch's weights in bfloat16, for the layer GEMMs forward and backward
            p = self.layout.size
            k.launch("to_bf16_kernel", p, np.int64(p), a.ptr("params"), a.ptr("params_bf16"))
            acts_bf16 = [a.ptr("act_bf16", i * n * h) for i in range(layers)]
        self._policy_forward(bm, kk, a.ptr("mb_obs"), a.ptr("mb_starts"), states, outs, acts, pres, hs, a.ptr("y"),
                             acts_bf16=acts_bf16)
        return states, acts, acts_bf16, pres, hs, widths

    def _record_minibatch_step(self, first: int) -> None:
        """NumpyTrainer.minibatch_step for sequences perm[first : first + Bm]."""
        tc, spec, a, k, blas = self.train_cfg, self.spec, self.arena, self.k, self.blas
        kk, bm, n = self.bptt, self.seqs_per_mb, self.mb_rows
        h, o, layers = spec.hidden, spec.obs_size, spec.layers
        ny = spec.num_actions + 1
        off = self.layout.offsets
        # FORWARD (the gather also computes the advantages' moments, except across GPUs: see below)
        states, acts, acts_bf16, pres, hs, widths = self._record_minibatch_forward(first,
                                                                                  tc["norm_adv"] and not self.group)
        # LOSS
        if tc["norm_adv"] and self.group:  # normalise with the global minibatch's mean and std: every rank's
            k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(n), np.int32(1), a.ptr("mb_adv"),
                          a.ptr("sums_partial"))  # partial sums, summed over the ranks, then finished
            self.group.sum(a.ptr("sums_partial"), NORM_BLOCKS * 2, self.stream.handle)
            k.launch_grid("moments_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), a.ptr("sums_partial"),
                          np.int64(n * self.world_size), a.ptr("adv_moments"))
        k.launch("ppo_loss_kernel", n, np.int32(n), np.int32(spec.num_actions), a.ptr("y"), a.ptr("mb_actions"),
                 a.ptr("mb_logp"), a.ptr("mb_values"), a.ptr("mb_adv"), a.ptr("mb_returns"),
                 a.ptr("adv_moments") if tc["norm_adv"] else 0, a.ptr("scalars"), np.float32(tc["clip_coef"]),
                 np.float32(tc["vf_clip_coef"]), np.float32(tc["vf_coef"]), a.ptr("dy"), a.ptr("block_partial"),
                 a.ptr("reduce_counter"), a.ptr("new_logp") if tc["vtrace"] else 0,
                 a.ptr("mb_src") if tc["vtrace"] else 0)
        # BACKWARD: every gradient is written exactly once (beta = 0), so grads need no zeroing.
        gp = lambda name: a.ptr("grads", off[name][0])  # noqa: E731
        pp = lambda name: a.ptr("params", off[name][0])  # noqa: E731
        blas.matmul(gp("dec.w"), a.ptr("dy"), acts[layers], ny, h, n, trans_a=True)
        self._record_bias_grad(gp("dec.b"), a.ptr("dy"), ny)
        cur, other = a.ptr("dact"), a.ptr("dact", n * h)
        blas.matmul(cur, a.ptr("dy"), pp("dec.w"), n, h, ny)
        for layer in reversed(range(layers)):
            w = widths[layer]
            if spec.recurrent:
                k.launch("mingru_backward_bf16_kernel" if acts_bf16 else "mingru_backward_kernel", bm * h,
                         np.int32(kk), np.int32(bm), np.int32(h), np.int32(spec.highway), cur,
                         (acts_bf16 or acts)[layer], pres[layer], pp(f"layer{layer}.b"), a.ptr("mb_starts"),
                         states[layer], hs[layer], a.ptr("dpre"), other, a.ptr("dbias_seq"))
                if acts_bf16:
                    blas.matmul(other, a.ptr("dpre"), a.ptr("params_bf16", off[f"layer{layer}.w"][0]), n, h, w,
                                beta=1.0, dtype=CUDA_R_16BF)
                else:
                    blas.matmul(other, a.ptr("dpre"), pp(f"layer{layer}.w"), n, h, w, beta=1.0)
                self._record_bias_grad(gp(f"layer{layer}.b"), a.ptr("dbias_seq"), w, rows=bm)
            elif n * h <= MLP_FUSED_BIAS_MAX_ELEMENTS:  # mlp_backward and the bias gradient in one launch
                self._record_bias_grad(gp(f"layer{layer}.b"), cur, h, acts[layer + 1], a.ptr("dpre"))
                blas.matmul(other, a.ptr("dpre"), pp(f"layer{layer}.w"), n, h, w)
            else:
                k.launch("mlp_backward_kernel", n * h, np.int64(n * h), cur, acts[layer + 1], a.ptr("dpre"))
                self._record_bias_grad(gp(f"layer{layer}.b"), a.ptr("dpre"), h)
                blas.matmul(other, a.ptr("dpre"), pp(f"layer{layer}.w"), n, h, w)
            if acts_bf16:
                blas.matmul(gp(f"layer{layer}.w"), a.ptr("dpre"), acts_bf16[layer], w, h, n, trans_a=True,
                            dtype=CUDA_R_16BF)
            else:
                blas.matmul(gp(f"layer{layer}.w"), a.ptr("dpre"), acts[layer], w, h, n, trans_a=True)
            cur, other = other, cur
        blas.matmul(gp("enc.w"), cur, a.ptr("mb_obs"), h, o, n, trans_a=True)
        self._record_bias_grad(gp("enc.b"), cur, h)
        # OPTIMIZER
        self._record_optimizer_step()

    def _record_bias_grad(self, db: int, dout: int, cols: int, out: int = 0, dpre: int = 0,
                          rows: int | None = None) -> None:
        """db (cols,) = column sums of dout (rows, cols) (default the minibatch's n rows), a bias gradient; with
        out and dpre (an MLP layer), of dpre = dout * (out > 0) (mlp_backward), which it also writes. Without
        the mask it is a GEMM with a ones row: at Breakout's sizes (65,536 x 384) bias_grad_kernel's 128 blocks
        made the update 17% slower (H200, train_speed.py --scaling, 128 x 2: 33.4M vs 40.2M update SPS)."""
        a, n = self.arena, self.mb_rows if rows is None else rows
        if not out:
            self.blas.matmul(db, a.ptr("ones"), dout, 1, cols, n)
            return
        blocks = min(BIAS_GRAD_BLOCKS, max(1, -(-n * cols // 8192)))  # ~8K elements a block
        self.k.launch_grid("bias_grad_kernel", blocks, 256, np.int64(n), np.int32(cols), dout, out, dpre,
                           a.ptr("block_partial"), a.ptr("reduce_counter"), db)

    def _record_optimizer_step(self) -> None:
        """clip_grad_norm (applied as a scale inside the optimizer kernels), then Adam or Muon."""
        tc, a, k = self.train_cfg, self.arena, self.k
        p = self.layout.size
        if self.grad_allreduce is not None:  # data parallel: clip and step on the ranks' mean gradient
            self.grad_allreduce(a.ptr("grads"), p)
        k.launch_grid("grad_norm_kernel", min(NORM_BLOCKS, -(-p // 1024)), 256, np.int64(p), a.ptr("grads"),
                      a.ptr("norm_partial"), a.ptr("reduce_counter"), np.float32(tc["max_grad_norm"]),
                      np.float64(tc["adam_beta1"]), np.float64(tc["adam_beta2"]), a.ptr("scalars"))
        adam_args = (a.ptr("scalars"), np.float32(tc["adam_beta1"]), np.float32(tc["adam_beta2"]),
                     np.float32(1 - tc["adam_beta1"]), np.float32(1 - tc["adam_beta2"]), np.float32(tc["adam_eps"]))
        if tc["optimizer"] != "muon":
            k.launch("adam_kernel", p, np.int64(p), a.ptr("params"), a.ptr("grads"), a.ptr("opt_state"),
                     a.ptr("opt_state", p), *adam_args)
            return
        for name, shape, bk, bblas, scratch, fork, _ in self.muon_branches:  # fork: each matrix on its branch
            fork.make_wait(bk.stream.handle, self.stream.handle)
            off, count = self.layout.offsets[name][0], math.prod(shape)
            u, x0, x1, gram, poly = (scratch + 4 * f for f in ns_scratch_offsets(shape)[:5])
            bk.launch("muon_momentum_kernel", count, np.int64(count), a.ptr("grads", off), a.ptr("opt_state", off),
                      u, a.ptr("scalars"), np.float32(tc["muon_momentum"]))
            update = record_newton_schulz(bk, bblas, u, [x0, x1], gram, poly, shape)
            bk.launch("muon_apply_kernel", count, np.int64(count), a.ptr("params", off), update, a.ptr("scalars"),
                      np.float64(ref.muon_update_scale(shape)))
            bias = name[:-2] + ".b"  # the matrix's bias takes its Adam step on the same branch
            if bias in self.layout.offsets and bias not in self.matrix_names:
                self._record_adam(bk, bias, adam_args)
        if self.muon_small:  # the small matrices (and their biases) in one launch, beside the chains
            k.launch_shared("muon_small_kernel", len(self.muon_small) * MUON_SMALL_THREADS, MUON_SMALL_THREADS,
                            self.muon_small_shared, a.ptr("muon_small_table"), a.ptr("params"), a.ptr("grads"),
                            a.ptr("opt_state"), a.ptr("opt_state", p), a.ptr("scalars"), np.float32(tc["muon_momentum"]),
                            *(np.float32(c) for c in ref.NS_COEFFS), np.int32(5), *adam_args[1:])
        for name, _ in self.layout.table:  # any other vector, on the learner's stream
            if name not in self.matrix_names and name[:-2] + ".w" not in self.matrix_names:
                self._record_adam(k, name, adam_args)
        self.muon_join_pending = bool(self.muon_branches)

    def _join_muon_branches(self) -> None:
        """Make the learner's stream wait for every Muon branch of the last optimizer step (if not yet)."""
        if self.muon_join_pending:
            for *_, bk, _, _, _, join in self.muon_branches:
                join.make_wait(self.stream.handle, bk.stream.handle)
            self.muon_join_pending = False

    def _record_adam(self, k, name: str, adam_args: tuple) -> None:
        """Adam on the parameter `name` alone (Muon's non-matrix parameters), on k's stream."""
        a, p = self.arena, self.layout.size
        off, count = self.layout.offsets[name][0], math.prod(self.layout.offsets[name][1])
        k.launch("adam_kernel", count, np.int64(count), a.ptr("params", off), a.ptr("grads", off),
                 a.ptr("opt_state", off), a.ptr("opt_state", p + off), *adam_args)

    def update(self, num_updates: int) -> dict:
        """PPO epochs over the active rollout slot (one graph replay on the learner's stream); returns the
        update's mean stats. Async: it runs on the GPU while the actor collects the next rollout, and only
        the learner is waited for."""
        t0 = time.perf_counter()
        tc = self.train_cfg
        lr = ref.learning_rate_at(tc["learning_rate"], self.update_index, num_updates, tc["anneal_lr"])
        slot = self.active_slot
        stale = self.async_rollouts and self.slot_version[slot] < self.update_index  # as NumpyTrainer's
        if self.num_updates_captured != num_updates:  # first update, or a new schedule: eager, then capture
            scalars = self.scalars().copy()
            scalars["lr"] = lr  # the schedule kernel keeps it from here on
            self._write_scalars(scalars)
            for graph in self.update_graphs:
                if graph is not None:
                    graph.close()
            self.update_graphs = [None] * self.slot_count
            self.num_updates_captured = num_updates
            self._record_update(num_updates, stale)
        elif not self.use_graphs or (self.async_rollouts and not stale):  # async: graphs hold the stale update
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
        if self.scalars_host is None:
            self.scalars_host = self.cuda.pagelocked_empty(SCALARS_DTYPE.itemsize, np.uint8)
        self.cuda.memcpy_dtoh_async(self.scalars_host, self.arena.ptr("scalars"), self.stream)
        self.stream.synchronize()
        scalars = np.frombuffer(self.scalars_host.tobytes(), SCALARS_DTYPE)[0]
        self.update_index += 1
        self.opt_step = int(scalars["opt_step"])
        count = max(float(scalars["stat"][6]), 1.0)
        out = {name: float(scalars["stat"][i]) / count for i, name in enumerate(STAT_NAMES)}
        out["loss"] = out["policy_loss"] + tc["vf_coef"] * out["value_loss"] - tc["ent_coef"] * out["entropy"]
        out["learning_rate"] = lr
        out["explained_variance"] = float(scalars["stat"][7])
        self.timing["update"] += time.perf_counter() - t0
        return out

    def warm_up(self, num_updates: int) -> float:
        """Do the first two iterations' one-off work at start-up (returns its seconds): a rollout and an update
        run eagerly (cuBLAS and the driver load their kernels), then again captured as the rollout and update
        graphs and replayed (a graph's first launch uploads it). Then every byte of the arena (weights,
        optimizer, env, rollout buffers, device scalars, episode logs) and every training counter is put back
        as it was, so training starts exactly where it would have without it (bitwise: the tests check), only
        with the graphs ready (rollouts_run, which says they exist, stays). The update graph is captured for
        num_updates' schedule (update() captures again for another). A no-op with host environments,
        train.async, several GPUs, FASTVEC_NO_GRAPHS=1, or once training has begun."""
        t0 = time.perf_counter()
        if self.host_env or self.async_rollouts or self.group or not self.use_graphs or self.rollouts_run:
            return 0.0
        cuda, arena = self.cuda, self.arena
        self._synchronize()
        saved = cuda.mem_alloc(arena.size)
        cuda.memcpy_dtod(saved, arena.base, arena.size)
        counters = (self.global_step, self.update_index, self.opt_step, dict(self.timing), list(self.slot_version))
        for _ in range(2):
            self.rollout()
            self.update(num_updates)
        self._synchronize()
        cuda.memcpy_dtod(arena.base, saved, arena.size)
        cuda.Context.synchronize()
        saved.free()
        self.global_step, self.update_index, self.opt_step, self.timing, self.slot_version = counters
        return time.perf_counter() - t0

    # LOG
    def pop_episodes(self) -> dict | None:
        """Mean return, length and env stats of the episodes finished since the last call (None if none).
        Async: includes the episodes of the rollout collected during the last update."""
        self._synchronize()
        if self.episode_acc_host is None:
            self.episode_acc_host = self.cuda.pagelocked_empty(self.arena.entries["episode_acc"][1], np.float64)
        self.cuda.memcpy_dtoh_async(self.episode_acc_host, self.arena.ptr("episode_acc"), self.stream)
        self.stream.synchronize()
        acc = self.episode_acc_host.copy()
        if acc[0] == 0:
            return None
        # Zeroed on the learner's stream: ahead of every later rollout (async: the actor waits for it, _collect).
        self.cuda.memset_d8_async(self.arena.ptr("episode_acc"), 0, self.arena.nbytes("episode_acc"), self.stream)
        out = {"episodes": int(acc[0]), "episode_return": float(acc[1] / acc[0]), "episode_length": float(acc[2] / acc[0])}
        for i, name in enumerate(self.batch.env.stat_names):
            out[name] = float(acc[3 + i] / acc[0])
        return out

    # CHECKPOINT STATE (checkpoint.py's format: the CPU trainer loads it, and vice versa)
    def state_dict(self) -> dict:
        self._synchronize()
        scalars = self.scalars()
        return {"params": self.arena.get(self.cuda, "params"), "optimizer": self.arena.get(self.cuda, "opt_state"),
                "counters": {"opt_step": int(scalars["opt_step"]), "update": self.update_index,
                             "global_step": self.global_step, "rollout_steps": int(scalars["rollout_steps"])},
                "rng": None}

    def load_state_dict(self, state: dict) -> None:
        self._synchronize()  # async: the actor may still be collecting (with its own copy of the weights)
        self.arena.set(self.cuda, "params", state["params"])
        if state.get("optimizer") is not None:
            self.arena.set(self.cuda, "opt_state", state["optimizer"])
        counters = state.get("counters", {})
        self.update_index = counters.get("update", 0)
        self.global_step = counters.get("global_step", 0)
        scalars = self.scalars().copy()
        scalars["opt_step"] = counters.get("opt_step", 0)
        scalars["update"] = self.update_index
        scalars["rollout_steps"] = counters.get("rollout_steps", self.global_step // max(self.num_envs * self.world_size, 1))
        self._write_scalars(scalars)
        self.num_updates_captured = None  # the next update() re-reads the learning rate

    def close(self) -> None:
        """Free graphs, cuBLAS and the arena now (also done at garbage collection)."""
        self._synchronize()
        for graph in self.rollout_graphs + self.update_graphs:
            if graph is not None:
                graph.close()
        self.rollout_graphs = [None] * self.slot_count
        self.update_graphs = [None] * self.slot_count
        if self.host_env:
            self._close_host_graphs()
        self.blas.close()
        self.actor_blas.close()
        for branch in self.muon_branches:
            branch[3].close()
        if self.arena.allocation is not None:
            self.arena.allocation.free()
            self.arena.allocation = None
