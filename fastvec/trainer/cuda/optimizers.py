"""The optimizer step of the CUDA trainer, enqueued inside the update graph after the backward: gradient-norm
clipping (applied as a scale inside the step kernels), then reference.adam_step (`Adam`) or reference.muon_step
(`Muon`: Newton-Schulz on the 2-D weights, Adam on the rest)."""

from __future__ import annotations

import math

import numpy as np

from fastvec.native.graphs import Event
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.cublas import Cublas
from fastvec.trainer.cuda.kernel_args import MuonSmallArgs, pack
from fastvec.trainer.cuda.plan import NORM_BLOCKS

NS_CUBLAS_WORKSPACE = 4 << 20  # each Muon branch's cuBLAS workspace (its GEMMs are at most hidden x 3 hidden)
# optimizers.cu's MuonMatrix, field for field: one row of muon_small_kernel's table.
MUON_SMALL_DTYPE = np.dtype([("offset", "i8"), ("bias_offset", "i8"), ("rows", "i4"), ("cols", "i4"),
                             ("bias_count", "i4"), ("pad", "i4"), ("scale", "f8")])
MUON_SMALL_THREADS = 512  # optimizers.cu's MUON_SMALL_THREADS: muon_small_kernel's block


def muon_stride(n: int) -> int:
    """newton_schulz.cu's muon_stride: a row stride of at least n floats, a multiple of 4, 4 more than a multiple
    of 32."""
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


class Adam:
    """clip_grad_norm, then Adam on the whole flat parameter buffer in one launch."""

    name = "adam"

    def __init__(self, train: dict, layout: ref.FlatLayout, arena):
        self.train, self.layout, self.arena = train, layout, arena

    def add_tensors(self, arena) -> None:
        """Adam needs nothing beyond the shared optimizer state."""

    def start(self, cuda, k, precision: str) -> None:
        """Nothing to set up once the arena exists."""

    def describe(self) -> str:
        return "Adam"

    def adam_args(self) -> tuple:
        tc, a = self.train, self.arena
        return (a.ptr("scalars"), np.float32(tc.adam_beta1), np.float32(tc.adam_beta2),
                np.float32(1 - tc.adam_beta1), np.float32(1 - tc.adam_beta2), np.float32(tc.adam_eps))

    def record_clip(self, k) -> None:
        """The gradient's global norm and the clip scale the step kernels apply (grad_norm_kernel)."""
        tc, a, p = self.train, self.arena, self.layout.size
        k.launch_grid("grad_norm_kernel", min(NORM_BLOCKS, -(-p // 1024)), 256, np.int64(p), a.ptr("grads"),
                      a.ptr("norm_partial"), a.ptr("reduce_counter"), np.float32(tc.max_grad_norm),
                      np.float64(tc.adam_beta1), np.float64(tc.adam_beta2), a.ptr("scalars"))

    def record_step(self, k) -> None:
        a, p = self.arena, self.layout.size
        self.record_clip(k)
        k.launch("adam_kernel", p, np.int64(p), a.ptr("params"), a.ptr("grads"), a.ptr("opt_state"),
                 a.ptr("opt_state", p), *self.adam_args())

    def join(self, stream) -> None:
        """Adam runs on the learner's stream: nothing to wait for."""

    def close(self) -> None:
        pass


class Muon(Adam):
    """clip_grad_norm, then Muon on every 2-D weight and Adam on the rest. The small matrices (and their biases)
    take the whole step in one muon_small_kernel launch (each matrix's Newton-Schulz in one block's shared
    memory, from a table of MuonMatrix rows). Each larger matrix's chain of ~25 small, latency-bound launches
    (momentum, Newton-Schulz GEMMs, apply, its bias's Adam) runs on a stream of its own: a branch of the update
    graph. The learner joins the branches only where it next reads the weights (join), so the next
    minibatch's gather overlaps them."""

    name = "muon"

    def __init__(self, train: dict, layout: ref.FlatLayout, arena, small_shared_max: int):
        super().__init__(train, layout, arena)
        self.matrix_names = set(layout.matrix_names())
        matrices = [(name, shape) for name, shape in layout.table if name in self.matrix_names]
        self.small = [(name, shape) for name, shape in matrices if muon_small_shared_bytes(shape) <= small_shared_max]
        self.chains = [(name, shape) for name, shape in matrices if (name, shape) not in self.small]
        self.branches = []  # per chain matrix: (name, shape, launcher, cuBLAS, scratch, fork event, join event)
        self.join_pending = False

    def add_tensors(self, arena) -> None:
        if self.small:
            arena.add("muon_small_table", (len(self.small) * MUON_SMALL_DTYPE.itemsize,), np.uint8,
                      "(matrices,) MuonMatrix rows of muon_small_kernel")
        if self.chains:  # Newton-Schulz scratch and a cuBLAS workspace per GEMM-chain matrix
            arena.add("ns_scratch", (sum(ns_scratch_offsets(shape)[-1] for _, shape in self.chains),), np.float32,
                      "per matrix: u, the two ping-pong iterates (rows*cols each), gram and poly (r*r each)")
            arena.add("ns_cublas_workspace", (len(self.chains), NS_CUBLAS_WORKSPACE), np.uint8,
                      "(matrices, bytes) branch workspaces")

    def start(self, cuda, k, precision: str) -> None:
        """Write muon_small_kernel's table, size its shared memory, and make each chain's stream and cuBLAS."""
        from fastvec.trainer.cuda.device import Launcher

        layout, a = self.layout, self.arena
        if self.small:
            table = np.zeros(len(self.small), MUON_SMALL_DTYPE)
            for row, (name, shape) in zip(table, self.small):
                bias = name[:-2] + ".b"
                has_bias = bias in layout.offsets and bias not in self.matrix_names
                row["offset"], (row["rows"], row["cols"]) = layout.offsets[name][0], shape
                row["bias_offset"] = layout.offsets[bias][0] if has_bias else -1
                row["bias_count"] = math.prod(layout.offsets[bias][1]) if has_bias else 0
                row["scale"] = ref.muon_update_scale(shape)
            a.set(cuda, "muon_small_table", np.frombuffer(table.tobytes(), np.uint8))
            self.small_shared = max(muon_small_shared_bytes(shape) for _, shape in self.small)
            k.function("muon_small_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                         self.small_shared)
        offset = 0
        for i, (name, shape) in enumerate(self.chains):
            stream = cuda.Stream()
            blas = Cublas(stream, a.ptr("ns_cublas_workspace", i * NS_CUBLAS_WORKSPACE), NS_CUBLAS_WORKSPACE,
                          precision)
            self.branches.append((name, shape, Launcher(k.module, stream), blas, a.ptr("ns_scratch", offset),
                                  Event(), Event()))
            offset += ns_scratch_offsets(shape)[-1]

    def describe(self) -> str:
        return (f"Muon ({len(self.small)} matrices in muon_small_kernel, {len(self.chains)} as GEMM chains on "
                f"streams of their own)")

    def record_step(self, k) -> None:
        tc, a, layout = self.train, self.arena, self.layout
        p = layout.size
        self.record_clip(k)
        adam_args = self.adam_args()
        for name, shape, bk, bblas, scratch, fork, _ in self.branches:  # fork: each matrix on its branch
            fork.make_wait(bk.stream.handle, k.stream.handle)
            off, count = layout.offsets[name][0], math.prod(shape)
            u, x0, x1, gram, poly = (scratch + 4 * f for f in ns_scratch_offsets(shape)[:5])
            bk.launch("muon_momentum_kernel", count, np.int64(count), a.ptr("grads", off), a.ptr("opt_state", off),
                      u, a.ptr("scalars"), np.float32(tc.muon_momentum))
            update = record_newton_schulz(bk, bblas, u, [x0, x1], gram, poly, shape)
            bk.launch("muon_apply_kernel", count, np.int64(count), a.ptr("params", off), update, a.ptr("scalars"),
                      np.float64(ref.muon_update_scale(shape)))
            bias = name[:-2] + ".b"  # the matrix's bias takes its Adam step on the same branch
            if bias in layout.offsets and bias not in self.matrix_names:
                self._record_adam(bk, bias, adam_args)
        if self.small:  # the small matrices (and their biases) in one launch, beside the chains
            ns_a, ns_b, ns_c = ref.NS_COEFFS
            args = MuonSmallArgs(a.ptr("muon_small_table"), a.ptr("params"), a.ptr("grads"), a.ptr("opt_state"),
                                 a.ptr("opt_state", p), a.ptr("scalars"), tc.muon_momentum, ns_a, ns_b, ns_c,
                                 *adam_args[1:], steps=5)
            k.launch_shared("muon_small_kernel", len(self.small) * MUON_SMALL_THREADS, MUON_SMALL_THREADS,
                            self.small_shared, pack(args))
        for name, _ in layout.table:  # any other vector, on the learner's stream
            if name not in self.matrix_names and name[:-2] + ".w" not in self.matrix_names:
                self._record_adam(k, name, adam_args)
        self.join_pending = bool(self.branches)

    def join(self, stream) -> None:
        """Make `stream` (the learner's) wait for every branch of the last step, if it has not yet."""
        if self.join_pending:
            for *_, bk, _, _, _, join in self.branches:
                join.make_wait(stream.handle, bk.stream.handle)
            self.join_pending = False

    def _record_adam(self, k, name: str, adam_args: tuple) -> None:
        """Adam on the parameter `name` alone (Muon's non-matrix parameters), on k's stream."""
        a, p = self.arena, self.layout.size
        off, count = self.layout.offsets[name][0], math.prod(self.layout.offsets[name][1])
        k.launch("adam_kernel", count, np.int64(count), a.ptr("params", off), a.ptr("grads", off),
                 a.ptr("opt_state", off), a.ptr("opt_state", p + off), *adam_args)

    def close(self) -> None:
        for branch in self.branches:
            branch[3].close()


def make_optimizer(train: dict, layout: ref.FlatLayout, arena, small_shared_max: int) -> Adam:
    """train.optimizer's step: Adam or Muon."""
    if train.optimizer == "muon":
        return Muon(train, layout, arena, small_shared_max)
    return Adam(train, layout, arena)
