"""The CUDA trainer's Muon step as the host enqueues it, against stand-ins for the launcher, cuBLAS and events:
muon_small_kernel's table rows, which matrices take it and which a GEMM chain on a stream of their own, every
parameter stepped once after the clip, and the chain's Newton-Schulz carried out in NumPy against the reference."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import optimizers
from fastvec.trainer.cuda.kernel_args import MuonSmallArgs
from fastvec.trainer.cuda.optimizers import (MUON_SMALL_DTYPE, MUON_SMALL_THREADS, Adam, Muon, make_optimizer,
                                             muon_small_shared_bytes)
from fastvec.trainer.cuda.plan import NORM_BLOCKS

BASES = {"params": 0x1000000, "grads": 0x2000000, "opt_state": 0x3000000, "scalars": 0x4000000,
         "norm_partial": 0x5000000, "reduce_counter": 0x6000000, "muon_small_table": 0x7000000,
         "ns_scratch": 0x8000000, "ns_cublas_workspace": 0x9000000}
SPECS = {
    "mlp-separate-box": ref.PolicySpec(obs_size=5, num_actions=0, kind="mlp", hidden=16, layers=2, critic="separate",
                                       action_kind="box", action_dims=3, norm_obs=True),
    "mingru": ref.PolicySpec(obs_size=7, num_actions=4, kind="mingru", hidden=8, layers=2),
}
TRAIN = SimpleNamespace(adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-8, max_grad_norm=0.5, muon_momentum=0.95)


class _Arena:
    def __init__(self):
        self.added, self.written = {}, {}

    def ptr(self, name, offset_elements=0):
        itemsize = 1 if name in ("muon_small_table", "ns_cublas_workspace", "scalars") else 4
        return BASES[name] + itemsize * int(offset_elements)

    def add(self, name, shape, dtype, doc):
        self.added[name] = (tuple(shape), np.dtype(dtype))

    def set(self, cuda, name, value):
        self.written[name] = np.array(value)


class _Launcher:
    """k, a branch's launcher and a cuBLAS handle in one: every call, in order, into a shared log."""

    def __init__(self, log, stream):
        self.log, self.stream, self.module = log, SimpleNamespace(handle=stream), object()
        self.attributes = {}

    def function(self, name):
        return SimpleNamespace(set_attribute=lambda attribute, value: self.attributes.__setitem__((name, attribute),
                                                                                                  value))

    def launch(self, name, threads, *args):
        self.log.append((self.stream.handle, "launch", name, threads, args))

    def launch_grid(self, name, blocks, threads, *args):
        self.log.append((self.stream.handle, "grid", name, blocks, args, threads))

    def launch_block(self, name, *args):
        self.log.append((self.stream.handle, "block", name, args))

    def launch_shared(self, name, threads, block, shared, args):
        self.log.append((self.stream.handle, "shared", name, (threads, block, shared), args))

    def matmul(self, *args, **kwargs):
        self.log.append((self.stream.handle, "gemm", args))

    def close(self):
        self.log.append((self.stream.handle, "close"))


def _muon(spec, small_shared_max, monkeypatch):
    log, streams = [], iter(range(100, 200))
    layout = ref.FlatLayout(ref.param_table(spec))
    arena = _Arena()

    class Event:
        def make_wait(self, waiter, producer):
            log.append((waiter, "wait", producer))

    from fastvec.trainer.cuda import device
    monkeypatch.setattr(optimizers, "Event", Event)
    monkeypatch.setattr(optimizers, "Cublas", lambda stream, workspace, size, precision: _Launcher(log, stream.handle))
    monkeypatch.setattr(device, "Launcher", lambda module, stream: _Launcher(log, stream.handle))
    cuda = SimpleNamespace(Stream=lambda: SimpleNamespace(handle=next(streams)),
                           function_attribute=SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max dynamic shared"))
    k = _Launcher(log, 7)
    muon = Muon(TRAIN, layout, arena, small_shared_max)
    muon.add_tensors(arena)
    muon.start(cuda, k, "fp32")
    return muon, layout, arena, k, log


@pytest.mark.parametrize("name", sorted(SPECS))
def test_matrices_up_to_the_shared_limit_take_muon_small_kernel_the_rest_a_gemm_chain(name, monkeypatch):
    """A matrix whose Newton-Schulz fits small_shared_max exactly still takes muon_small_kernel; its table row
    holds where the matrix and its bias lie in the flat buffer, its shape and its update scale; the kernel gets
    the most shared memory a row needs; each other matrix gets a stream (and scratch) of its own."""
    spec = SPECS[name]
    layout = ref.FlatLayout(ref.param_table(spec))
    sizes = sorted({muon_small_shared_bytes(shape) for _, shape in layout.table if len(shape) == 2})
    limit = sizes[0]  # the smallest matrices fit exactly; anything larger takes a chain
    muon, layout, arena, k, _ = _muon(spec, limit, monkeypatch)
    small = [n for n, shape in layout.table if len(shape) == 2 and muon_small_shared_bytes(shape) <= limit]
    chains = [n for n, shape in layout.table if len(shape) == 2 and muon_small_shared_bytes(shape) > limit]
    assert small and [n for n, _ in muon.small] == small and [n for n, _ in muon.chains] == chains
    table = np.frombuffer(arena.written["muon_small_table"].tobytes(), MUON_SMALL_DTYPE)
    assert arena.added["muon_small_table"] == ((len(small) * MUON_SMALL_DTYPE.itemsize,), np.dtype(np.uint8))
    for row, matrix in zip(table, small, strict=True):
        offset, shape = layout.offsets[matrix]
        bias = matrix[:-2] + ".b"
        assert (row["offset"], row["rows"], row["cols"]) == (offset, *shape)
        if bias in layout.offsets:
            assert (row["bias_offset"], row["bias_count"]) == (layout.offsets[bias][0], layout.offsets[bias][1][0])
        else:
            assert (row["bias_offset"], row["bias_count"]) == (-1, 0)
        assert row["scale"] == 0.2 * math.sqrt(max(shape))
    assert k.attributes == {("muon_small_kernel", "max dynamic shared"): limit}
    if chains:
        scratch = sum(optimizers.ns_scratch_offsets(layout.offsets[n][1])[-1] for n in chains)
        assert arena.added["ns_scratch"] == ((scratch,), np.dtype(np.float32))
        assert arena.added["ns_cublas_workspace"] == ((len(chains), optimizers.NS_CUBLAS_WORKSPACE),
                                                       np.dtype(np.uint8))
        streams = [branch[2].stream.handle for branch in muon.branches]
        assert len(set(streams)) == len(chains) and 7 not in streams
        starts = np.cumsum([0] + [optimizers.ns_scratch_offsets(layout.offsets[n][1])[-1] for n in chains])
        assert [branch[4] for branch in muon.branches] == [BASES["ns_scratch"] + 4 * int(f) for f in starts[:-1]]
    else:
        assert "ns_scratch" not in arena.added and not muon.branches


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("split", ["all small", "mixed", "all chains"])
def test_every_parameter_takes_exactly_one_step_after_the_clip_and_the_learner_waits_for_every_branch(
        name, split, monkeypatch):
    """Each element of the flat buffer is stepped once: a 2-D weight by Muon (its table row or its chain's
    apply), its bias by Adam beside it, every other vector by adam_kernel on the learner's stream; the clip
    (grad_norm_kernel) comes first, each branch forks from the learner after it, and the learner waits for every
    branch before it next reads the weights."""
    spec = SPECS[name]
    layout = ref.FlatLayout(ref.param_table(spec))
    sizes = sorted({muon_small_shared_bytes(shape) for _, shape in layout.table if len(shape) == 2})
    limit = {"all small": sizes[-1], "mixed": sizes[0], "all chains": sizes[0] - 1}[split]
    muon, layout, arena, k, log = _muon(spec, limit, monkeypatch)
    del log[:]
    muon.record_step(k)
    p = layout.size
    assert log[0][:3] == (7, "grid", "grad_norm_kernel") and log[0][4][0] == np.int64(p)
    grid, block = log[0][3], log[0][5]
    assert type(grid) is int and 1 <= grid <= NORM_BLOCKS  # the reduction's partials hold NORM_BLOCKS blocks
    assert block % 32 == 0 and 32 <= block <= 1024  # common.cu's block_sum: whole warps
    adam_tail = (BASES["scalars"], np.float32(0.9), np.float32(0.999), np.float32(1 - 0.9), np.float32(1 - 0.999),
                 np.float32(1e-8))
    scratch = {branch[2].stream.handle: (branch[4], branch[1]) for branch in muon.branches}
    steps = np.zeros(p, int)
    ns_steps = {}
    by_muon = np.zeros(p, bool)
    branch_streams = {branch[2].stream.handle for branch in muon.branches}
    forked = set()
    for entry in log[1:]:
        stream, kind = entry[:2]
        if kind == "wait":
            assert entry[2] == 7 and stream in branch_streams  # a fork: the branch after the clip
            forked.add(stream)
            continue
        assert stream == 7 or stream in forked, entry
        if kind == "launch" and entry[2] == "adam_kernel":
            count, params = entry[3], entry[4][1]
            start = (params - BASES["params"]) // 4
            assert entry[4][0] == count and entry[4][2] == BASES["grads"] + 4 * start
            assert entry[4][3:5] == (BASES["opt_state"] + 4 * start, BASES["opt_state"] + 4 * (p + start))  # m, v
            assert entry[4][5:] == adam_tail
            steps[start:start + count] += 1
        elif kind == "block" and entry[2] == "frobenius_normalize_kernel":  # u -> the first iterate
            base, shape = scratch[stream]
            offsets = optimizers.ns_scratch_offsets(shape)
            assert entry[3][1:] == (base, base + 4 * offsets[1])
        elif kind == "launch" and entry[2] == "ns_poly_init_kernel":
            ns_steps[stream] = ns_steps.get(stream, 0) + 1
        elif kind == "launch" and entry[2] == "muon_apply_kernel":
            count, params = entry[3], entry[4][1]
            base, shape = scratch[stream]
            assert entry[4][2] == base + 4 * optimizers.ns_scratch_offsets(shape)[2]  # 5 steps: the second iterate
            start = (params - BASES["params"]) // 4
            steps[start:start + count] += 1
            by_muon[start:start + count] = True
        elif kind == "shared":
            assert entry[2] == "muon_small_kernel" and entry[3] == (len(muon.small) * MUON_SMALL_THREADS,
                                                                   MUON_SMALL_THREADS, muon.small_shared)
            args = MuonSmallArgs.from_buffer_copy(entry[4])
            assert (args.table, args.params, args.grads, args.m, args.v, args.scalars) == (
                BASES["muon_small_table"], BASES["params"], BASES["grads"], BASES["opt_state"],
                BASES["opt_state"] + 4 * p, BASES["scalars"])
            floats = (args.momentum, args.ns_a, args.ns_b, args.ns_c, args.beta1, args.beta2, args.one_minus_beta1,
                      args.one_minus_beta2, args.eps)
            assert floats == tuple(np.float32(x) for x in (0.95, *ref.NS_COEFFS, *adam_tail[1:]))
            assert args.steps == 5  # reference.muon_step's Newton-Schulz steps
            for row in np.frombuffer(arena.written["muon_small_table"].tobytes(), MUON_SMALL_DTYPE):
                steps[row["offset"]:row["offset"] + row["rows"] * row["cols"]] += 1
                by_muon[row["offset"]:row["offset"] + row["rows"] * row["cols"]] = True
                if row["bias_count"]:
                    steps[row["bias_offset"]:row["bias_offset"] + row["bias_count"]] += 1
    assert forked == branch_streams
    assert ns_steps == {stream: 5 for stream in branch_streams}  # reference.muon_step's Newton-Schulz steps
    assert (steps == 1).all(), [(n, steps[o:o + math.prod(s)].tolist()) for n, (o, s) in layout.offsets.items()
                                if (steps[o:o + math.prod(s)] != 1).any()]
    for n, (offset, shape) in layout.offsets.items():
        assert by_muon[offset:offset + math.prod(shape)].all() == (len(shape) == 2), n
    del log[:]
    muon.join(SimpleNamespace(handle=7))
    assert sorted(e[2] for e in log if e[1] == "wait" and e[0] == 7) == sorted(branch_streams)


def test_train_optimizer_names_the_step_and_closing_muon_closes_each_chains_cublas(monkeypatch):
    layout = ref.FlatLayout(ref.param_table(SPECS["mingru"]))
    adam = make_optimizer(SimpleNamespace(optimizer="adam"), layout, _Arena(), 0)
    muon = make_optimizer(SimpleNamespace(optimizer="muon"), layout, _Arena(), 0)
    assert type(adam) is Adam and type(muon) is Muon and (adam.name, muon.name) == ("adam", "muon")
    muon, _, _, _, log = _muon(SPECS["mingru"], 0, monkeypatch)  # every matrix a chain
    del log[:]
    muon.close()
    assert sorted(log) == sorted((branch[3].stream.handle, "close") for branch in muon.branches) and log


class _NumpyDevice:
    """record_newton_schulz's launches and GEMMs carried out in NumPy (float64) on a flat heap addressed in bytes,
    per the kernels' and Cublas.matmul's documented meaning."""

    def __init__(self, floats):
        self.heap = np.zeros(floats)
        self.regions = []  # (byte address, floats): what each access must stay inside

    def view(self, ptr, count):
        assert any(start <= ptr and ptr + 4 * count <= start + 4 * size for start, size in self.regions), (ptr, count)
        return self.heap[ptr // 4:ptr // 4 + count]

    def launch_block(self, name, n, u, x):
        assert name == "frobenius_normalize_kernel"
        src = self.view(u, int(n)).copy()
        self.view(x, int(n))[:] = src / (np.sqrt(np.dot(src, src)) + 1e-7)

    def launch(self, name, threads, r, gram, poly, a, b):
        assert name == "ns_poly_init_kernel" and threads == r * r
        r = int(r)
        self.view(poly, r * r)[:] = (float(b) * self.view(gram, r * r).reshape(r, r) + float(a) * np.eye(r)).ravel()

    def matmul(self, out, a, b, m, n, k, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, **kwargs):
        assert not kwargs
        op_a = self.view(a, m * k).reshape(k, m).T if trans_a else self.view(a, m * k).reshape(m, k)
        op_b = self.view(b, k * n).reshape(n, k).T if trans_b else self.view(b, k * n).reshape(k, n)
        c = self.view(out, m * n)
        product = alpha * (op_a @ op_b)
        c[:] = (product if beta == 0 else product + beta * c.reshape(m, n)).ravel()  # beta 0: C is not read


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (1, 6), (6, 1), (2, 7), (3, 20), (20, 3)])
def test_the_gemm_chains_newton_schulz_is_the_references(shape):
    """record_newton_schulz's launches and GEMMs, carried out exactly as documented, give
    reference.newton_schulz of the matrix (a tall one through its transpose), stored (rows, cols), in whichever
    of the two iterate buffers it names (to float32's rounding of the coefficients a and b the kernel takes),
    never touching more than an (r, r) Gram matrix, r = min(rows, cols)."""
    rows, cols = shape
    r = min(shape)
    g = np.random.default_rng(rows * 10 + cols).normal(size=shape)
    dev = _NumpyDevice(4096)
    offsets = [f * 4 for f in optimizers.ns_scratch_offsets(shape)]
    u, x0, x1, gram, poly = (256 + f for f in offsets[:5])
    dev.regions = [(u, g.size), (x0, g.size), (x1, g.size), (gram, r * r), (poly, r * r)]  # gram, poly: (r, r)
    dev.view(u, g.size)[:] = g.ravel()
    dev.view(x1, g.size)[:] = np.nan  # nothing may read an iterate before writing it
    dev.view(poly, r * r)[:] = np.nan
    result = optimizers.record_newton_schulz(dev, dev, u, [x0, x1], gram, poly, shape)
    assert result in (x0, x1)
    np.testing.assert_allclose(dev.view(result, g.size).reshape(shape), ref.newton_schulz(g), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(dev.view(u, g.size), g.ravel())  # the momentum's u is left as it was
