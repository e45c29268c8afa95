"""The fused CUDA trainer against the NumPy reference: every kernel on random inputs (float32 relative error
<= 1e-5, measured as max |cuda - ref| / max |ref|), the rollout against the CPU env and the reference
policy, a whole update against NumpyTrainer on the same batch, bitwise determinism, and GPU-trained
checkpoints evaluated on the CPU. Every test needs a GPU with PyCUDA and is skipped without one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import mingru_layer_case, minibatch_sources

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.kernel_args import GaeArgs, GatherArgs, LossArgs, pack
from fastvec.trainer.cuda.plan import gather_threads

pytestmark = pytest.mark.gpu

F32_TOL = 1e-5


def _cuda_or_skip():
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    from fastvec.trainer.cuda import device
    return device.init()


def kernels_with_test_entry_points():
    """The trainer's kernels (kernels.cu) and tests/trainer/test_kernels.cu's entry points into its device
    functions, as one module built like the product's (device.load_module's flags and include path)."""
    from pathlib import Path

    from fastvec.native import NATIVE_DIR, gpu
    from fastvec.trainer.cuda import device
    device.init()
    here = Path(__file__).resolve().parent
    return gpu.load_module('#include "kernels.cu"\n#include "test_kernels.cu"\n',
                           include_dirs=[device.CUDA_DIR, NATIVE_DIR, here], name="trainer-test-kernels")


@pytest.fixture(scope="module")
def gpu():
    """(pycuda.driver, a Launcher of kernels.cu on a fresh stream, a Cublas on that stream)."""
    cuda = _cuda_or_skip()
    from fastvec.trainer.cuda import device
    from fastvec.trainer.cuda.cublas import Cublas
    stream = cuda.Stream()
    test_signatures = {"sample_actions_kernel": "iiiPPPP", "policy_uniforms_kernel": "iQqP"}
    k = device.Launcher(kernels_with_test_entry_points(), stream, {**device.SIGNATURES, **test_signatures})
    workspace = cuda.mem_alloc(8 << 20)
    blas = Cublas(stream, int(workspace), 8 << 20)
    yield cuda, k, blas
    blas.close()
    workspace.free()


class Dev:
    """Device copies of host arrays for one test; `d(x)` uploads, `get(ptr, like)` downloads."""

    def __init__(self, cuda, stream):
        self.cuda, self.stream, self.keep = cuda, stream, []

    def __call__(self, x) -> int:
        x = np.ascontiguousarray(x)
        mem = self.cuda.mem_alloc(max(x.nbytes, 4))
        self.cuda.memcpy_htod(mem, x)
        self.keep.append(mem)
        return int(mem)

    def empty(self, shape, dtype=np.float32) -> int:
        return self(np.zeros(shape, dtype))

    def get(self, ptr: int, shape, dtype=np.float32) -> np.ndarray:
        self.stream.synchronize()
        out = np.empty(shape, dtype)
        self.cuda.memcpy_dtoh(out, ptr)
        return out


def to_bf16(x) -> np.ndarray:
    """bfloat16 bits (uint16) of x, rounded to nearest even, as __float2bfloat16 does."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


def test_arena_is_one_aligned_allocation():
    cuda = _cuda_or_skip()
    from fastvec.trainer.cuda.arena import ALIGN, Arena
    arena = Arena()
    shapes = {"a": ((3, 5), np.float32), "b": ((7,), np.int32), "c": ((2, 3, 4), np.float64), "d": ((1,), np.uint8)}
    for name, (shape, dtype) in shapes.items():
        arena.add(name, shape, dtype, "test")
    arena.allocate(cuda)
    rng = np.random.default_rng(0)
    end = 0
    for name, (shape, dtype) in shapes.items():
        assert (arena.ptr(name) - arena.base) % ALIGN == 0 and arena.ptr(name) % ALIGN == 0
        assert arena.ptr(name) - arena.base >= end  # no overlap with the previous tensor
        end = arena.ptr(name) - arena.base + arena.nbytes(name)
        value = (rng.standard_normal(shape) * 100).astype(dtype)
        arena.set(cuda, name, value)
        assert np.array_equal(arena.get(cuda, name), value)
    assert arena.size == end
    with pytest.raises(RuntimeError, match="after allocate"):
        arena.add("late", (1,), np.float32)
    arena.allocation.free()


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
def test_a_gemm_multiplies_fp32_operands_at_the_handles_precision_and_bf16_ones_with_fp32_compute(gpu, precision):
    """train.precision reaches the GEMMs: fp32 keeps every input bit (error ~1e-7), tf32 and bf16 round the fp32
    operands (error ~1e-4 and ~1e-3 on this product); bf16 operands are multiplied as they are, accumulating in
    fp32, under every precision."""
    cuda, k, _ = gpu
    from fastvec.trainer.cuda.cublas import CUDA_R_16BF, Cublas
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(11)
    m, n, kk = 64, 48, 256
    a, b = rng.standard_normal((m, kk)).astype(np.float32), rng.standard_normal((kk, n)).astype(np.float32)
    workspace = cuda.mem_alloc(8 << 20)
    blas = Cublas(k.stream, int(workspace), 8 << 20, precision)
    try:
        out = dev.empty((m, n))
        blas.matmul(out, dev(a), dev(b), m, n, kk)
        err = rel_err(dev.get(out, (m, n)), a.astype(np.float64) @ b)
        assert (err < 1e-5) if precision == "fp32" else (1e-5 < err < 3e-2), (precision, err)
        a16, b16 = from_bf16(to_bf16(a)), from_bf16(to_bf16(b))
        blas.matmul(out, dev(to_bf16(a)), dev(to_bf16(b)), m, n, kk, dtype=CUDA_R_16BF)
        assert rel_err(dev.get(out, (m, n)), a16.astype(np.float64) @ b16) < 1e-5
    finally:
        blas.close()
        workspace.free()


@pytest.mark.parametrize("highway", [True, False])
def test_mingru_forward_backward_match_reference(gpu, highway):
    cuda, k, _ = gpu
    dev = Dev(cuda, k.stream)
    c = mingru_layer_case(highway, seed=1)
    steps, b, h, w_rows, x, w, bias, starts, h0, dout, pre = (c.steps, c.b, c.h, c.w_rows, c.x, c.w, c.bias, c.starts,
                                                                c.h0, c.dout, c.pre)
    out_ref, last_ref, dx_ref, dw_ref, db_ref = c.out_ref, c.last_ref, c.dx_ref, c.dw_ref, c.db_ref
    px, ppre, pbias, pstarts, ph0 = dev(x), dev(pre), dev(bias), dev(starts), dev(h0)
    ph, pout, plast = dev.empty((steps, b, h)), dev.empty((steps, b, h)), dev.empty((b, h))
    k.launch("mingru_forward_kernel", b * h, np.int32(steps), np.int32(b), np.int32(h), np.int32(highway), px, ppre,
             pbias, pstarts, ph0, ph, pout, plast, 0)
    assert np.array_equal(dev.get(ppre, (steps, b, w_rows)), pre)  # read only: the backward reads it again
    assert rel_err(dev.get(pout, (steps, b, h)), out_ref) <= F32_TOL
    assert rel_err(dev.get(plast, (b, h)), last_ref) <= F32_TOL

    pdout, pdpre, pdx = dev(dout), dev.empty((steps, b, w_rows)), dev.empty((steps, b, h))
    pdbias_seq = dev.empty((b, w_rows))
    k.launch("mingru_backward_kernel", b * h, np.int32(steps), np.int32(b), np.int32(h), np.int32(highway), pdout,
             px, ppre, pbias, pstarts, ph0, ph, pdpre, pdx, pdbias_seq)
    dpre = dev.get(pdpre, (steps, b, w_rows)).astype(np.float64)
    dx = dev.get(pdx, (steps, b, h)) + dpre @ w  # the trainer adds dpre @ w with a cuBLAS GEMM
    rows = dpre.reshape(-1, w_rows)
    assert rel_err(dx, dx_ref) <= F32_TOL
    assert rel_err(rows.T @ x.reshape(-1, h), dw_ref) <= F32_TOL
    assert rel_err(rows.sum(0), db_ref) <= F32_TOL
    # each sequence's own sums of dpre over its steps: the trainer sums these b rows for the bias gradient
    assert rel_err(dev.get(pdbias_seq, (b, w_rows)), dpre.sum(0)) <= F32_TOL
    assert rel_err(dev.get(pdbias_seq, (b, w_rows)).sum(0), db_ref) <= F32_TOL


@pytest.mark.parametrize("highway", [True, False])
def test_mingru_bf16_kernels_equal_the_fp32_kernels_on_bf16_values(gpu, highway):
    """The bf16 update's layer: pre from a GEMM of bfloat16 operands into bfloat16 (within bf16 rounding of
    x @ w.T), then the _bf16 kernels (x, pre, the kept states h and dpre in bfloat16), which must compute
    exactly what the fp32 kernels (tested against the reference above) compute on the same values: the same
    out, last state and out's bf16 copy, h rounded to bfloat16; and, given those rounded h, the same dx and
    per-sequence bias sums and dpre rounded to bfloat16. (Against the reference directly, bf16 inputs move
    some pre-activations across MinGRU's kink at 0, where g's derivative jumps from 1/4 to 1.)"""
    from fastvec.trainer.cuda.cublas import CUDA_R_16BF
    cuda, k, blas = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(11)
    steps, b, h = 9, 13, 24
    w_rows = (3 if highway else 2) * h
    x_bits = to_bf16(rng.standard_normal((steps, b, h)))
    x = from_bf16(x_bits)
    w = (rng.standard_normal((w_rows, h)) / np.sqrt(h)).astype(np.float32)
    bias = rng.standard_normal(w_rows).astype(np.float32) * 0.3
    starts = (rng.random((steps, b)) < 0.2).astype(np.float32)
    h0 = rng.standard_normal((b, h)).astype(np.float32)
    dout = rng.standard_normal((steps, b, h)).astype(np.float32)
    ppre_bf16 = dev.empty((steps, b, w_rows), np.uint16)
    blas.matmul(ppre_bf16, dev(x_bits), dev(to_bf16(w)), steps * b, w_rows, h, trans_b=True, dtype=CUDA_R_16BF,
                out_dtype=CUDA_R_16BF)
    pre = from_bf16(dev.get(ppre_bf16, (steps, b, w_rows), np.uint16))
    assert rel_err(pre, x @ w.T) <= 2e-2
    pbias, pstarts, ph0 = dev(bias), dev(starts), dev(h0)
    args = lambda px, ppre: (np.int32(steps), np.int32(b), np.int32(h), np.int32(highway), px, ppre)  # noqa: E731
    # forward: fp32 kernels on the bf16 values, then the bf16 kernels
    fwd = {}
    for name, px, ppre, dtype in [("fp32", dev(x), dev(pre), np.float32), ("bf16", dev(x_bits), ppre_bf16, np.uint16)]:
        ph, pout, plast, pout_bf16 = (dev.empty((steps, b, h), dtype), dev.empty((steps, b, h)), dev.empty((b, h)),
                                      dev.empty((steps, b, h), np.uint16))
        k.launch("mingru_forward" + ("_bf16" if name == "bf16" else "") + "_kernel", b * h, *args(px, ppre), pbias,
                 pstarts, ph0, ph, pout, plast, pout_bf16)
        fwd[name] = {"h": dev.get(ph, (steps, b, h), dtype), "out": dev.get(pout, (steps, b, h)),
                     "last": dev.get(plast, (b, h)), "out_bf16": dev.get(pout_bf16, (steps, b, h), np.uint16)}
    for name in ["out", "last", "out_bf16"]:
        assert np.array_equal(fwd["bf16"][name], fwd["fp32"][name]), name
    assert np.array_equal(fwd["fp32"]["out_bf16"], to_bf16(fwd["fp32"]["out"]))
    assert np.array_equal(fwd["bf16"]["h"], to_bf16(fwd["fp32"]["h"]))
    # backward on the kept (rounded) states
    h_bits = fwd["bf16"]["h"]
    bwd = {}
    for name, px, ppre, ph, dtype in [("fp32", dev(x), dev(pre), dev(from_bf16(h_bits)), np.float32),
                                      ("bf16", dev(x_bits), ppre_bf16, dev(h_bits), np.uint16)]:
        pdpre, pdx, pdbias_seq = dev.empty((steps, b, w_rows), dtype), dev.empty((steps, b, h)), dev.empty((b, w_rows))
        k.launch("mingru_backward" + ("_bf16" if name == "bf16" else "") + "_kernel", b * h, np.int32(steps),
                 np.int32(b), np.int32(h), np.int32(highway), dev(dout), px, ppre, pbias, pstarts, ph0, ph, pdpre,
                 pdx, pdbias_seq)
        bwd[name] = {"dpre": dev.get(pdpre, (steps, b, w_rows), dtype), "dx": dev.get(pdx, (steps, b, h)),
                     "dbias_seq": dev.get(pdbias_seq, (b, w_rows))}
    for name in ["dx", "dbias_seq"]:
        assert np.array_equal(bwd["bf16"][name], bwd["fp32"][name]), name
    assert np.array_equal(bwd["bf16"]["dpre"], to_bf16(bwd["fp32"]["dpre"]))
    assert np.abs(bwd["fp32"]["dpre"]).max() > 0


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_mlp_and_linear_layers_match_reference(gpu, activation):
    """The encoder GEMM and an MLP layer (mlp_forward_kernel), then the layer's backward in one launch
    (bias_grad_kernel with the activation's gradient) and in two (mlp_backward_kernel), against the reference."""
    from fastvec.trainer.cuda.policy import MLP_ACTIVATIONS
    act = np.int32(MLP_ACTIVATIONS[activation])
    cuda, k, blas = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(2)
    rows, h, o = 300, 32, 7
    x = rng.standard_normal((rows, o)).astype(np.float32)
    w_enc = rng.standard_normal((h, o)).astype(np.float32)
    b_enc = rng.standard_normal(h).astype(np.float32)
    w = (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float32)
    bias = rng.standard_normal(h).astype(np.float32)
    dout = rng.standard_normal((rows, h)).astype(np.float32)
    enc_ref = x @ w_enc.T + b_enc
    out_ref, cache = ref.mlp_forward(enc_ref, w, bias, activation)
    dx_ref, dw_ref, db_ref = ref.mlp_backward(dout, cache, w, activation)

    px, pwe, pbe, pw, pb = dev(x), dev(w_enc), dev(b_enc), dev(w), dev(bias)
    penc, ppre, pout = dev.empty((rows, h)), dev.empty((rows, h)), dev.empty((rows, h))
    blas.matmul(penc, px, pwe, rows, h, o, trans_b=True)
    penc_bf16 = dev.empty((rows, h), np.uint16)
    k.launch("add_bias_kernel", rows * h, penc, pbe, np.int64(rows), np.int32(h), penc_bf16)
    assert np.array_equal(dev.get(penc_bf16, (rows, h), np.uint16), to_bf16(dev.get(penc, (rows, h))))
    blas.matmul(ppre, penc, pw, rows, h, h, trans_b=True)
    k.launch("mlp_forward_kernel", rows * h, np.int64(rows), np.int32(h), ppre, pb, pout, act)
    assert rel_err(dev.get(penc, (rows, h)), enc_ref) <= F32_TOL
    assert rel_err(dev.get(pout, (rows, h)), out_ref) <= F32_TOL

    pdout, pdpre, pdx, pdw, pdb = (dev(dout), dev.empty((rows, h)), dev.empty((rows, h)), dev.empty((h, h)),
                                   dev.empty(h))
    partial, counter = dev.empty(8 * h, np.float64), dev.empty(1, np.uint32)
    # mlp_backward and the bias gradient (column sums of dpre) in one launch, over 3 blocks of rows
    k.launch_grid("bias_grad_kernel", 3, 256, np.int64(rows), np.int32(h), pdout, pout, pdpre, partial, counter, pdb,
                  act)
    blas.matmul(pdx, pdpre, pw, rows, h, h)
    blas.matmul(pdw, pdpre, penc, h, h, rows, trans_a=True)
    assert rel_err(dev.get(pdx, (rows, h)), dx_ref) <= F32_TOL
    assert rel_err(dev.get(pdw, (h, h)), dw_ref) <= F32_TOL
    assert rel_err(dev.get(pdb, (h,)), db_ref) <= F32_TOL
    out_gpu = dev.get(pout, (rows, h))
    want = ref.activation_grad(dout, out_gpu, activation)  # the same float32 operations, from the GPU's output
    assert np.array_equal(dev.get(pdpre, (rows, h)), want)
    k.launch("mlp_backward_kernel", rows * h, np.int64(rows * h), pdout, pout, pdpre, act)  # the two-launch form
    assert np.array_equal(dev.get(pdpre, (rows, h)), want)


@pytest.mark.parametrize("rows,cols,blocks", [(16384, 64, 128), (1000, 3, 1), (777, 300, 5), (50, 129, 7)])
def test_bias_grad_kernel_sums_columns_in_one_launch(gpu, rows, cols, blocks):
    """Column sums of a random (rows, cols) matrix, as NumPy's, for wide and narrow matrices (a block's threads
    as row lanes x columns, and tiles of 256 columns), the same bits on every launch (the last block to
    finish adds the partials in a fixed order, and leaves the counter at 0 for the next launch)."""
    cuda, k, _ = gpu
    dev = Dev(cuda, k.stream)
    x = np.random.default_rng(rows + cols).standard_normal((rows, cols)).astype(np.float32)
    px, pdb = dev(x), dev.empty(cols)
    partial, counter = dev.empty(blocks * cols, np.float64), dev.empty(1, np.uint32)
    results = []
    for _ in range(3):
        k.launch_grid("bias_grad_kernel", blocks, 256, np.int64(rows), np.int32(cols), px, 0, 0, partial, counter,
                      pdb, np.int32(0))
        results.append(dev.get(pdb, (cols,)))
    assert rel_err(results[0], x.astype(np.float64).sum(0)) <= F32_TOL
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert dev.get(counter, (1,), np.uint32)[0] == 0


def test_sampling_matches_reference_and_counter_rng(gpu):
    cuda, k, _ = gpu
    from fastvec.trainer.reference import policy_uniforms
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(3)
    b, a = 4099, 5
    y = rng.standard_normal((b, a + 1)).astype(np.float32) * 2  # decoder rows: logits then the value
    key, step = 0x1234_5678_9ABC_DEF0, 77
    pu = dev.empty(b)
    k.launch("policy_uniforms_kernel", b, np.int32(b), np.uint64(key), np.int64(step), pu)
    uniforms = dev.get(pu, (b,))
    assert np.array_equal(uniforms, policy_uniforms(key, b, step))  # the host recomputes the device's stream
    assert 0.45 < uniforms.mean() < 0.55 and uniforms.min() >= 0 and uniforms.max() < 1
    pa, plp = dev.empty(b, np.int32), dev.empty(b)
    k.launch("sample_actions_kernel", b, np.int32(b), np.int32(a), np.int32(a + 1), dev(y), pu, pa, plp)
    actions_ref, logp_ref = ref.sample_actions(y[:, :a], uniforms)
    actions = dev.get(pa, (b,), np.int32)
    assert (actions == actions_ref).mean() > 0.999  # a uniform within float rounding of a CDF step may differ
    same = actions == actions_ref
    assert rel_err(dev.get(plp, (b,))[same], logp_ref[same]) <= F32_TOL


@pytest.mark.parametrize("vtrace", [False, True])
def test_gae_matches_reference(gpu, vtrace):
    cuda, k, _ = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(4)
    t, r = 37, 129
    values = rng.standard_normal((t, r)).astype(np.float32)
    last = rng.standard_normal(r).astype(np.float32)
    rewards = rng.standard_normal((t, r)).astype(np.float32)
    dones = (rng.random((t, r)) < 0.1).astype(np.float32)
    old_logp = -rng.random((t, r)).astype(np.float32)
    new_logp = (old_logp + 0.3 * rng.standard_normal((t, r))).astype(np.float32)
    gamma, lam = 0.97, 0.93
    ratios = np.exp(new_logp - old_logp) if vtrace else None
    adv_ref = ref.gae(values, last, rewards, dones, gamma, lam, ratios, 1.1, 0.9)
    padv, pret = dev.empty((t, r)), dev.empty((t, r))
    k.launch("gae_kernel", r, pack(GaeArgs(
        values=dev(values), last_value=dev(last), rewards=dev(rewards), dones=dev(dones), new_logp=dev(new_logp),
        old_logp=dev(old_logp), adv=padv, returns=pret, gamma=gamma, lam=lam, gamma_lambda=gamma * lam, rho_clip=1.1,
        c_clip=0.9, T=t, R=r, last_value_stride=1, vtrace=vtrace)))
    assert rel_err(dev.get(padv, (t, r)), adv_ref) <= F32_TOL
    assert rel_err(dev.get(pret, (t, r)), adv_ref + values) <= F32_TOL


def test_ppo_loss_forward_backward_match_reference(gpu):
    cuda, k, _ = gpu
    from fastvec.trainer.cuda.plan import NORM_BLOCKS, SCALARS_DTYPE
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(5)
    n, a = 2000, 4
    y = rng.standard_normal((n, a + 1)).astype(np.float32)
    actions = rng.integers(0, a, n)
    old_logp = (ref.log_softmax(y[:, :a])[np.arange(n), actions] + 0.4 * rng.standard_normal(n)).astype(np.float32)
    old_values = (y[:, a] + 0.5 * rng.standard_normal(n)).astype(np.float32)
    adv = rng.standard_normal(n).astype(np.float32) * 3 + 0.5
    returns = rng.standard_normal(n).astype(np.float32)
    clip, vclip, vf, ent = 0.2, 0.3, 0.5, 0.01
    adv_norm = (adv - adv.mean()) / (adv.std() + 1e-8)
    loss, dlogits, dvalues, stats = ref.ppo_loss(y[:, :a], y[:, a], actions, old_logp, old_values, adv_norm, returns,
                                                 clip, vclip, vf, ent)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = ent
    pscal = dev(np.frombuffer(scalars.tobytes(), np.uint8))
    # the two-launch moments (data parallel: the ranks' partial sums are added in between)
    padv, pmom, partial = dev(adv), dev.empty(2), dev.empty((NORM_BLOCKS, 5, 2), np.float64)
    k.launch_grid("sums_partial_kernel", NORM_BLOCKS, 256, np.int64(n), np.int32(1), padv, partial)
    k.launch_grid("moments_finish_kernel", 1, 1, np.int32(NORM_BLOCKS), partial, np.int64(n), pmom)
    mom = dev.get(pmom, (2,))
    assert rel_err(mom, [adv.mean(), adv.std()]) <= F32_TOL
    # the loss, its gradient and (summed in the same launch) the minibatch means of its terms, twice: the
    # second launch finds the block counter back at 0 and adds the same means again
    pdy, counter = dev.empty((n, a + 1)), dev.empty(1, np.uint32)
    block_partial = dev.empty(5 * -(-n // 256), np.float64)
    for launch in range(2):
        k.launch("ppo_loss_kernel", n, pack(LossArgs(
            y=dev(y), actions=dev(actions.astype(np.int32)), old_logp=dev(old_logp), old_values=dev(old_values),
            adv=padv, returns=dev(returns), adv_moments=pmom, scalars=pscal, dy=pdy, partial=block_partial,
            counter=counter, clip_coef=clip, vf_clip_coef=vclip, vf_coef=vf, n=n, Y=a + 1)))
        dy = dev.get(pdy, (n, a + 1))
        assert rel_err(dy[:, :a], dlogits) <= F32_TOL
        assert rel_err(dy[:, a], dvalues) <= F32_TOL
        got = np.frombuffer(dev.get(pscal, (SCALARS_DTYPE.itemsize,), np.uint8).tobytes(), SCALARS_DTYPE)[0]["stat"]
        got = got / (launch + 1)
        for i, name in enumerate(["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"]):
            assert abs(got[i] - stats[name]) <= F32_TOL * max(abs(stats[name]), 1e-2), name
        assert abs(got[0] + vf * got[1] - ent * got[2] - loss) <= F32_TOL * abs(loss)


@pytest.mark.parametrize("o", [5, 37])
@pytest.mark.parametrize("threads", ["rows", "planned", "surplus"])
def test_gather_minibatch_copies_sequences_and_computes_advantage_moments(gpu, o, threads):
    """gather_minibatch_kernel against NumPy indexing of the rollout buffers in a random sequence order, and
    (same launch, last block) the mean and population std of the gathered advantages, as NumpyTrainer's; launched
    with a thread a row, with the trainer's count (plan.gather_threads), and with more threads than elements."""
    cuda, k, _ = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(8)
    t_len, r, kk = 16, 300, 8  # S = 2 segments, Q = 600 sequences
    bm, first = 200, 200  # the second minibatch of three: n = 1600 rows over 7 blocks
    q_count, n = (t_len // kk) * r, kk * bm
    perm = rng.permutation(q_count).astype(np.int32)
    buf = {"obs": rng.standard_normal((t_len, r, o)), "starts": rng.integers(0, 2, (t_len, r)),
           "actions": rng.integers(0, 4, (t_len, r)), "logp": rng.standard_normal((t_len, r)),
           "values": rng.standard_normal((t_len, r)), "adv": rng.standard_normal((t_len, r)) * 2 + 0.3,
           "returns": rng.standard_normal((t_len, r))}
    buf = {name: x.astype(np.int32 if name == "actions" else np.float32) for name, x in buf.items()}
    outs = {name: dev.empty((n, o) if name == "obs" else (n,), np.int32 if name in ("actions", "src") else np.float32)
            for name in ["obs", "starts", "actions", "logp", "values", "adv", "returns", "src"]}
    count = {"rows": n, "planned": gather_threads(n, o), "surplus": 3 * n * o}[threads]
    partial, counter, moments = dev.empty(2 * -(-count // 256), np.float64), dev.empty(1, np.uint32), dev.empty(2)
    k.launch("gather_minibatch_kernel", count, pack(GatherArgs(
        perm=dev(perm), **{name: dev(buf[name]) for name in ["obs", "starts", "actions", "logp", "values", "adv",
                                                             "returns"]},
        **{f"mb_{name}": outs[name] for name in ["obs", "starts", "actions", "logp", "values", "adv", "returns",
                                                 "src"]},
        partial=partial, counter=counter, adv_moments=moments, K=kk, Bm=bm, R=r, O=o, first=first, action_words=1,
        obs_bytes=0)))
    src = minibatch_sources(perm, first, bm, r, kk)  # (K, Bm) t * R + r
    for name in ["obs", "starts", "actions", "logp", "values", "adv", "returns"]:
        want = buf[name].reshape(t_len * r, -1)[src.reshape(-1)].reshape((n, o) if name == "obs" else (n,))
        got = dev.get(outs[name], want.shape, want.dtype)
        assert np.array_equal(got, want), name
    assert np.array_equal(dev.get(outs["src"], (n,), np.int32), src.reshape(-1))
    adv = buf["adv"].reshape(-1)[src.reshape(-1)].astype(np.float64)
    assert rel_err(dev.get(moments, (2,)), [adv.mean(), adv.std()]) <= F32_TOL


def test_clip_and_adam_match_reference(gpu):
    cuda, k, _ = gpu
    from fastvec.trainer.cuda.plan import NORM_BLOCKS, SCALARS_DTYPE
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(6)
    p = 10_007
    params = rng.standard_normal(p).astype(np.float32)
    m, v = np.zeros(p, np.float32), np.zeros(p, np.float32)
    b1, b2, eps, lr, max_norm = 0.9, 0.999, 1e-8, 3e-3, 0.5
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["lr"] = lr
    pscal, pp, pm, pv = dev(np.frombuffer(scalars.tobytes(), np.uint8)), dev(params), dev(m), dev(v)
    ppart, counter = dev.empty(NORM_BLOCKS), dev.empty(1, np.uint32)
    for step in range(1, 4):
        grads = (rng.standard_normal(p) * (0.001 if step == 2 else 1.0)).astype(np.float32)  # step 2: no clipping
        pg = dev(grads)
        k.launch_grid("grad_norm_kernel", NORM_BLOCKS if step != 3 else 3, 256, np.int64(p), pg, ppart, counter,
                      np.float32(max_norm), np.float64(b1), np.float64(b2), pscal)
        k.launch("adam_kernel", p, np.int64(p), pp, pg, pm, pv, pscal, np.float32(b1), np.float32(b2),
                 np.float32(1 - b1), np.float32(1 - b2), np.float32(eps))
        norm = ref.clip_grad_norm(grads, max_norm)
        ref.adam_step(params, grads, m, v, step, lr, b1, b2, eps)
        got = np.frombuffer(dev.get(pscal, (SCALARS_DTYPE.itemsize,), np.uint8).tobytes(), SCALARS_DTYPE)[0]
        assert abs(got["grad_norm"] - norm) <= F32_TOL * norm and got["opt_step"] == step
        assert rel_err(dev.get(pm, (p,)), m) <= F32_TOL
        assert rel_err(dev.get(pv, (p,)), v) <= F32_TOL
        assert rel_err(dev.get(pp, (p,)), params) <= F32_TOL


@pytest.mark.parametrize("shape", [(24, 40), (96, 32), (3, 16)])
def test_newton_schulz_and_muon_match_reference(gpu, shape):
    cuda, k, blas = gpu
    from fastvec.trainer.cuda.optimizers import record_newton_schulz
    from fastvec.trainer.cuda.plan import SCALARS_DTYPE
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(7)
    g = rng.standard_normal(shape).astype(np.float32)
    count, r = g.size, min(shape)
    bufs = [dev.empty(count), dev.empty(count)]
    out = record_newton_schulz(k, blas, dev(g), bufs, dev.empty(r * r), dev.empty(r * r), shape)
    assert rel_err(dev.get(out, shape), ref.newton_schulz(g)) <= F32_TOL

    # one Muon step of this matrix: momentum, orthogonalised update, scaled by lr and the shape
    params = rng.standard_normal(shape).astype(np.float32)
    m = rng.standard_normal(shape).astype(np.float32)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["lr"], scalars["clip_scale"] = 0.02, 1.0
    pscal, pp, pm, pu = dev(np.frombuffer(scalars.tobytes(), np.uint8)), dev(params), dev(m), dev.empty(count)
    k.launch("muon_momentum_kernel", count, np.int64(count), dev(g), pm, pu, pscal, np.float32(0.95))
    update = record_newton_schulz(k, blas, pu, bufs, dev.empty(r * r), dev.empty(r * r), shape)
    k.launch("muon_apply_kernel", count, np.int64(count), pp, update, pscal, np.float64(ref.muon_update_scale(shape)))
    names = ["w"]
    ref.muon_step({"w": params}, {"w": g}, {"w": m}, {"w": np.zeros_like(m)}, names, 1, 0.02, 0.95, 0.9, 0.999, 1e-8)
    assert rel_err(dev.get(pm, shape), m) <= F32_TOL
    assert rel_err(dev.get(pp, shape), params) <= F32_TOL


def test_muon_small_kernel_matches_reference(gpu):
    """muon_small_kernel (one block per matrix: momentum, Newton-Schulz in shared memory, the scaled update and
    the matrix's bias's Adam step) against reference.muon_step: wide, tall (Breakout's 192 x 64), tiny and
    bias-less matrices in one launch, with a clip scale."""
    cuda, k, _ = gpu
    from fastvec.trainer.cuda.kernel_args import MuonSmallArgs, pack
    from fastvec.trainer.cuda.optimizers import MUON_SMALL_DTYPE, MUON_SMALL_THREADS, muon_small_shared_bytes
    from fastvec.trainer.cuda.plan import SCALARS_DTYPE
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(11)
    layout = ref.FlatLayout([("a.w", (24, 40)), ("a.b", (24,)), ("b.w", (192, 64)), ("b.b", (192,)),
                             ("c.w", (3, 16)), ("c.b", (3,)), ("d.w", (5, 7))])
    p = layout.size
    params = rng.standard_normal(p).astype(np.float32)
    grads = rng.standard_normal(p).astype(np.float32)
    m = (rng.standard_normal(p) * 0.1).astype(np.float32)
    v = (rng.random(p) * 0.01).astype(np.float32)
    matrices = [name for name, shape in layout.table if len(shape) == 2]
    table = np.zeros(len(matrices), MUON_SMALL_DTYPE)
    for row, name in zip(table, matrices):
        shape, bias = layout.offsets[name][1], name[:-2] + ".b"
        row["offset"], (row["rows"], row["cols"]), row["scale"] = layout.offsets[name][0], shape, \
            ref.muon_update_scale(shape)
        row["bias_offset"], row["bias_count"] = (layout.offsets[bias][0], layout.offsets[bias][1][0]) \
            if bias in layout.offsets else (-1, 0)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["lr"], scalars["clip_scale"] = 0.02, 0.7
    scalars["bias_correction1"], scalars["bias_correction2"] = 1 - 0.9, 1 - 0.999
    pp, pg, pm, pv = dev(params), dev(grads), dev(m), dev(v)
    shared = max(muon_small_shared_bytes(layout.offsets[name][1]) for name in matrices)
    k.function("muon_small_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
    args = MuonSmallArgs(dev(np.frombuffer(table.tobytes(), np.uint8)), pp, pg, pm, pv,
                         dev(np.frombuffer(scalars.tobytes(), np.uint8)), 0.95, *ref.NS_COEFFS, 0.9, 0.999, 0.1,
                         0.001, 1e-8, steps=5)
    k.launch_shared("muon_small_kernel", len(matrices) * MUON_SMALL_THREADS, MUON_SMALL_THREADS, shared, pack(args))
    views = [layout.views(x) for x in (params, grads * np.float32(0.7), m, v)]
    ref.muon_step(*views, set(matrices), 1, 0.02, 0.95, 0.9, 0.999, 1e-8)
    assert rel_err(dev.get(pm, (p,)), m) <= F32_TOL
    assert rel_err(dev.get(pv, (p,)), v) <= F32_TOL
    assert rel_err(dev.get(pp, (p,)), params) <= F32_TOL


# ------------------------------------------------------------------------------------------------
# The whole trainer

def small_config(**train):
    from fastvec.trainer.config import load_config
    overrides = {"env": {"num_envs": 24},
                 "policy": {"kind": "mingru", "hidden": 16, "layers": 2, "highway": True},
                 "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 64, "update_epochs": 2,
                           "optimizer": "muon", "learning_rate": 0.01, "device": "cuda", "seed": 5, **train}}
    return load_config("cartpole", overrides)


def rollout_buffers(trainer) -> dict:
    """Host copies of the rollout slot the next update trains on (slot 0 without train.async). Byte observations
    (an env's OBS_T unsigned char) fill the first R * O bytes of their step's floats (rollout.cu's step_obs)."""
    suffix = "" if trainer.active_slot == 0 else "@1"
    names = ["obs", "starts", "actions", "logp", "values", "rewards", "dones", "segment_state"]
    out = {name: trainer.arena.get(trainer.cuda, name + suffix) for name in names}
    if trainer.obs_bytes:
        steps, rows, size = out["obs"].shape
        out["obs"] = out["obs"].view(np.uint8).reshape(steps, rows * size * 4)[:, :rows * size].reshape(steps, rows, size)
    return out


def load_numpy_trainer(cpu_tr, buf: dict, last_value) -> None:
    """Put a CUDA trainer's rollout (rollout_buffers) and bootstrap values into a NumpyTrainer's buffers, so
    that its next update trains on the same batch."""
    t_len, layers = cpu_tr.obs.shape[0], cpu_tr.segment_state.shape[1]
    cpu_tr.obs[...] = buf["obs"][:t_len]
    cpu_tr.starts[...] = buf["starts"][:t_len]
    cpu_tr.actions[...] = buf["actions"]
    for name in ["logp", "values", "rewards", "dones"]:
        getattr(cpu_tr, name)[...] = buf[name]
    cpu_tr.segment_state[...] = buf["segment_state"][:, :layers]
    cpu_tr.last_value[...] = last_value


def make_pair(config, **choices):
    """A CudaTrainer (with plan.Choices(**choices)) and a NumpyTrainer (on a CPU batch of the same env) built
    from one config."""
    from fastvec.trainer import run
    from fastvec.trainer.cuda.plan import Choices
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    from fastvec.trainer.resolve import make_policy_spec
    batch = run.make_batch(config)
    spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions)
    return CudaTrainer(config, batch, spec, choices=Choices(**choices)), NumpyTrainer(config, run.make_batch(config), spec), spec


class FixedOrders:
    """Stands in for NumpyTrainer's rng: hands out the CUDA trainer's epoch orders."""

    def __init__(self, orders):
        self.orders = list(orders)

    def permutation(self, count):
        order = self.orders.pop(0)
        assert len(order) == count
        return order


def start_async_update(gpu_tr, cpu_tr, update: int, epochs: int):
    """One update of a train.async comparison: both trainers roll out (asserting the same slot and weight version),
    and NumpyTrainer takes the GPU's slot data, starting weights, optimizer state and epoch orders, so that its
    update is the CUDA trainer's on the same inputs. Returns (the slot's buffers, the starting weights, NumpyTrainer's
    own sampling rng, to give back after its update)."""
    from fastvec.trainer.reference import sequence_order
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    gpu_tr.rollout()
    cpu_tr.rollout()  # its own env and sampling: only the schedule is compared, the data is the GPU's
    assert (gpu_tr.active_slot, gpu_tr.behaviour_version) == (cpu_tr.active_slot, cpu_tr.behaviour_version)
    buf = rollout_buffers(gpu_tr)
    load_numpy_trainer(cpu_tr, buf, gpu_tr.last_values())
    start_weights = a.get(cuda, "params")
    cpu_tr.params[...] = start_weights  # the same starting point every update: float32 rounding
    cpu_tr.opt_state[...] = a.get(cuda, "opt_state")  # would otherwise compound over the updates
    sampling_rng = cpu_tr.rng
    cpu_tr.rng = FixedOrders([sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, update, e) for e in range(epochs)])
    return buf, start_weights, sampling_rng


@pytest.mark.parametrize("variant", [
    {"kind": "mingru", "optimizer": "muon", "vtrace": False, "rollout": "gemm"},
    {"kind": "mlp", "optimizer": "adam", "vtrace": True, "rollout": "gemm"},
    {"kind": "mingru", "optimizer": "adam", "vtrace": False, "rollout": "warp"},
    {"kind": "mingru", "optimizer": "adam", "vtrace": False, "rollout": "thread"},
    {"kind": "mlp", "optimizer": "muon", "vtrace": False, "rollout": "warp"},
    {"kind": "mlp", "optimizer": "muon", "vtrace": False, "rollout": "thread"},
    {"kind": "mingru", "optimizer": "muon", "vtrace": False, "rollout": "warp", "precision": "bf16"},
    {"kind": "mlp", "optimizer": "adam", "vtrace": False, "rollout": "gemm", "two_launch_mlp_backward": True},
    {"kind": "mingru", "optimizer": "muon", "vtrace": False, "rollout": "gemm", "muon_gemm_chains": True},
    {"kind": "mingru", "optimizer": "adam", "vtrace": False, "rollout": "gemm", "staged_env_step": True},
    {"kind": "mingru", "optimizer": "muon", "vtrace": True, "rollout": "gemm", "precision": "bf16"},
], ids=["mingru-muon", "mlp-adam-vtrace", "mingru-adam-fused-warp", "mingru-adam-fused-thread", "mlp-muon-fused-warp",
        "mlp-muon-fused-thread", "mingru-muon-bf16", "mlp-adam-two-launch-backward", "mingru-muon-gemm-chains",
        "mingru-adam-staged-env-step", "mingru-muon-vtrace-bf16-gemm-path"])
def test_rollout_and_update_match_reference(variant):
    """fused: the one-kernel policy step (else GEMMs + kernels), at 24 envs a warp per env, or (thread) a thread
    per env as from FUSED_THREAD_MIN_ENVS envs on; bf16: GEMMs on bfloat16 tensor cores, checked with the bf16 tolerance 2e-2
    (the rollout itself stays fp32 in the fused kernel)."""
    _cuda_or_skip()
    from fastvec.trainer.reference import policy_uniforms, sequence_order
    choices = {"rollout": variant["rollout"]}
    if variant.get("two_launch_mlp_backward"):  # the large-minibatch form: mlp_backward_kernel + a ones GEMM
        choices["mlp_bias_fused_max"] = 0
    if variant.get("muon_gemm_chains"):  # Muon as larger matrices take it: GEMM chains on streams of their own
        choices["muon_small_shared_max"] = 0
    if variant.get("staged_env_step"):  # the env step as Breakout's takes it: slots and obs staged in shared memory
        choices["stage_min_obs_bytes"] = 0
    config = small_config(optimizer=variant["optimizer"], vtrace=variant["vtrace"])
    config["policy"]["kind"] = variant["kind"]
    config["train"]["precision"] = variant.get("precision", "fp32")
    update_tol = 2e-2 if variant.get("precision") == "bf16" else 1e-4
    # the fused rollout kernels compute in fp32 whatever the precision; the GEMM path's rollout in bf16
    rollout_tol = 2e-2 if variant.get("precision") == "bf16" and variant["rollout"] == "gemm" else F32_TOL
    gpu_tr, cpu_tr, spec = make_pair(config, **choices)
    assert gpu_tr.plan.rollout == variant["rollout"] and bool(gpu_tr.plan.fused_block) == (variant["rollout"] != "gemm")
    if variant["rollout"] == "gemm":
        staged = "rollout_step_staged_kernel" if variant.get("staged_env_step") else "rollout_step_kernel"
        assert gpu_tr.rollout_path.step_kernel[0] == staged
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    t_len, rows, o = gpu_tr.horizon, gpu_tr.rows, spec.obs_size
    assert np.array_equal(a.get(cuda, "params"), cpu_tr.params)  # same seed, same initial weights

    # ROLLOUT: the env against the CPU env fed the same actions, and the policy against the reference.
    gpu_tr.rollout()
    buf = rollout_buffers(gpu_tr)
    env = cpu_tr.batch
    seeds = (np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(env.num_envs, dtype=np.uint64)
    env.reset(seeds, None)
    for t in range(t_len):
        assert rel_err(buf["obs"][t], env.obs.reshape(rows, o)) <= 1e-6, t
        env.step(buf["actions"][t].astype(np.int64).reshape(env.num_envs, 1))
        assert np.array_equal(buf["dones"][t], (env.terminated | env.truncated).astype(np.float32)), t
        assert np.array_equal(buf["rewards"][t], env.rewards.reshape(rows))
    state0 = buf["segment_state"][0][:spec.state_layers]
    views = cpu_tr.layout.views(cpu_tr.params)
    logits, values, _, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len], state0)
    assert rel_err(buf["values"], values) <= rollout_tol
    logp_all = ref.log_softmax(logits)
    taken = np.take_along_axis(logp_all, buf["actions"][..., None].astype(np.int64), -1)[..., 0]
    assert rel_err(buf["logp"], taken) <= rollout_tol
    for seg in range(1, gpu_tr.segments if spec.state_layers else 1):  # the state entering each later segment
        steps = seg * gpu_tr.bptt
        carried = ref.policy_forward(spec, views, buf["obs"][:steps], buf["starts"][:steps], state0)[2]
        assert rel_err(buf["segment_state"][seg][:spec.state_layers], carried) <= rollout_tol, seg
    agree = np.mean([np.mean(ref.sample_actions(logits[t], policy_uniforms(gpu_tr.seed_key, rows, t))[0]
                             == buf["actions"][t]) for t in range(t_len)])
    assert agree > (0.98 if rollout_tol > F32_TOL else 0.999)  # bf16 logits move a few draws across a boundary

    # UPDATE: NumpyTrainer on the same buffers, visiting sequences in the CUDA trainer's order.
    load_numpy_trainer(cpu_tr, buf, gpu_tr.last_values())
    assert rel_err(cpu_tr.last_value, ref.policy_forward(spec, views, buf["obs"][t_len:], buf["starts"][t_len:],
                                                         a.get(cuda, "state")[:spec.state_layers])[1][0]) <= rollout_tol
    cpu_tr.rng = FixedOrders([sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, 0, e)
                              for e in range(config["train"]["update_epochs"])])
    stats_gpu = gpu_tr.update(num_updates=10)
    stats_cpu = cpu_tr.update(num_updates=10)
    last_epoch = config["train"]["update_epochs"] - 1
    assert np.array_equal(a.get(cuda, "perm"), sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, 0, last_epoch))
    # Several optimizer steps compound float32 rounding; 1e-4 still catches any wrong term.
    assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= update_tol
    assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= update_tol
    for key in ["policy_loss", "value_loss", "entropy", "grad_norm", "learning_rate", "explained_variance"]:
        assert abs(stats_gpu[key] - stats_cpu[key]) <= update_tol * max(abs(stats_cpu[key]), 1e-2), key
    gpu_tr.close()


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_warp_rollout_in_one_launch_equals_one_launch_a_step(kind):
    """policy_rollout_warp_kernel steps every env through the whole horizon in one launch; launched once per
    step instead (Choices(warp_launch="step")) it must give the same bits: rollout buffers, MinGRU segment
    states, live state, bootstrap values, and the update after them (two rollouts: eager, then a graph)."""
    _cuda_or_skip()
    runs = []
    for launch in ["horizon", "step"]:
        config = small_config()
        config["policy"]["kind"] = kind
        trainer, _, _ = make_pair(config, rollout="warp", warp_launch=launch)
        out = []
        for _ in range(2):
            trainer.rollout()
            out.append((rollout_buffers(trainer), trainer.last_values(), trainer.arena.get(trainer.cuda, "state")))
            trainer.update(num_updates=4)
        out.append(trainer.arena.get(trainer.cuda, "params"))
        runs.append(out)
        trainer.close()
    for (buf0, last0, state0), (buf1, last1, state1) in zip(runs[0][:2], runs[1][:2]):
        for name in buf0:
            assert np.array_equal(buf0[name], buf1[name]), name
        assert np.array_equal(last0, last1) and np.array_equal(state0, state1)
    assert np.array_equal(runs[0][2], runs[1][2])


def whole_arena(trainer) -> np.ndarray:
    out = np.empty(trainer.arena.size, np.uint8)
    trainer.cuda.memcpy_dtoh(out, trainer.arena.base)
    return out


@pytest.mark.parametrize("is_async", [False, True])
def test_training_is_bitwise_deterministic_and_checkpoints_load_on_cpu(tmp_path, is_async):
    """Two runs end with the same bits; so does a third warmed up first (CudaTrainer.warm_up: an eager and a
    captured iteration at start-up whose every change to the arena and the counters is undone, so that the
    first update replays a graph): the warm-up changes only when the graphs are made, nothing else. With
    train.async too, whose two rollout slots each have their graphs after the warm-up."""
    _cuda_or_skip()
    from fastvec.trainer import checkpoint, run
    config = small_config(**{"async": is_async})
    runs = []
    for warm in (False, False, True):
        trainer, _, spec = make_pair(config)
        assert trainer.async_rollouts == is_async
        if warm:
            before = whole_arena(trainer)
            assert trainer.warm_up(num_updates=4) > 0
            assert np.array_equal(whole_arena(trainer), before)
            assert (trainer.global_step, trainer.update_index, trainer.opt_step) == (0, 0, 0)
            assert trainer.collector.graphs[0] is not None and trainer.updater.graphs[0] is not None
            if is_async:
                assert trainer.collector.graphs[1] is not None and trainer.updater.graphs[1] is not None
                slots = trainer.counters.slots
                assert (slots.active, slots.fill, slots.ready, slots.version) == (0, 0, None, [-1, -1])
        losses = []
        for _ in range(4):  # update 1 runs eagerly, 2 captures the graphs, 3-4 replay them (warm: all replay)
            trainer.rollout()
            losses.append(trainer.update(num_updates=4)["policy_loss"])
        runs.append((trainer.arena.get(trainer.cuda, "params"), trainer.arena.get(trainer.cuda, "actions"), losses,
                     trainer.state_dict()))
        trainer.close()
    for other in runs[1:]:
        assert np.array_equal(runs[0][0], other[0])
        assert np.array_equal(runs[0][1], other[1])
        assert runs[0][2] == other[2]

    path = checkpoint.save(tmp_path / "ck.npz", spec, "cartpole", 1, runs[0][3], config)
    cpu_config = small_config(device="cpu")
    cpu_config["eval"]["episodes"] = 8
    result = run.evaluate(cpu_config, path)  # trained on the GPU, played by the CPU trainer's policy
    assert result["episodes"] == 8 and result["episode_return"] > 0
    _, state = checkpoint.load(path)
    assert np.array_equal(state["params"], runs[0][0])


def test_a_user_env_file_that_includes_a_header_beside_it_trains_on_cuda(tmp_path):
    """The trainer's kernels compile a user's env with the env's own folder on the include path: counting.h
    reads its episode length from counting_rules.h beside it (a copy of the env is what the kernels include)."""
    _cuda_or_skip()
    import json
    from pathlib import Path

    from fastvec.trainer import cli
    folder = tmp_path / "envs"
    folder.mkdir()
    source = (Path(__file__).resolve().parents[1] / "envs" / "counting.h").read_text()
    (folder / "counting_rules.h").write_text("#define TERMINATE_AT 6\n")
    (folder / "counting.h").write_text(source.replace('#include "fastvec.h"',
                                                      '#include "fastvec.h"\n#include "counting_rules.h"', 1))
    run_dir = tmp_path / "run"
    assert cli.main([str(folder / "counting.h"), "--train.device=cuda", "--env.num_envs=16", "--policy.hidden=16",
                     "--policy.layers=1", "--train.horizon=16", "--train.bptt_horizon=8",
                     "--train.minibatch_size=128", "--train.total_timesteps=2048", "--train.log_interval=0",
                     f"--run-dir={run_dir}"]) == 0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows and all(row["episode_length"] == 6.0 for row in rows if row["episodes"])
    assert any(row["episodes"] for row in rows)


@pytest.mark.parametrize("is_async,env_device", [(False, "cuda"), (True, "cuda"), (True, "cpu")])
def test_fastvec_train_runs_on_cuda(tmp_path, is_async, env_device):
    _cuda_or_skip()
    from fastvec.trainer import run
    config = small_config(total_timesteps=24 * 16 * 3, env_device=env_device, **{"async": is_async})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["trainer"].device == "cuda"
    assert summary["trainer"].async_rollouts == is_async and summary["trainer"].host_env == (env_device == "cpu")
    assert summary["global_step"] == 24 * 16 * (4 if is_async else 3)  # async: one rollout ahead
    assert (tmp_path / "run" / "metrics.jsonl").exists() and summary["checkpoint"].exists()
    assert math.isfinite(summary["metrics"]["losses/policy_loss"])


# ------------------------------------------------------------------------------------------------
# Asynchronous rollouts (train.async): the actor collects the next rollout on its own stream while the
# learner updates, with NumpyTrainer's schedule (update k >= 1 trains on the weights update k - 1 started from)

def replay(spec, params, buf, t_len):
    """The reference policy over a slot from its own initial state: (log-probs of the taken actions, values,
    the state after the last step)."""
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    state0 = buf["segment_state"][0][:spec.state_layers]
    logits, values, state, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len], state0)
    logp = np.take_along_axis(ref.log_softmax(logits), buf["actions"][..., None].astype(np.int64), -1)[..., 0]
    return logp, values, state


@pytest.mark.parametrize("fused", ["0", "1", "thread", "host", "bf16"])
def test_async_trains_on_the_weights_one_update_old_with_each_slots_own_state(fused):
    """Every rollout is replayed by the reference policy with the weights the schedule promises (and not with
    the newer ones); each slot starts from the state and env observations where the previous rollout (in the
    other slot) ended; the env agrees with the CPU env fed the same actions across all rollouts. "host": the
    env is stepped on the CPU in two groups (train.env_device=cpu), during the update that overlaps it.
    "bf16": the GEMM path in bf16 (the actor's weights cast to bfloat16 each rollout), bf16 tolerance."""
    _cuda_or_skip()
    from fastvec.trainer import run
    rollout = {"0": "gemm", "1": "warp", "thread": "thread", "host": "gemm", "bf16": "gemm"}[fused]
    config = small_config(**{"async": True, "vtrace": True}, **({"env_device": "cpu"} if fused == "host" else {}),
                          **({"precision": "bf16"} if fused == "bf16" else {}))
    tol = 2e-2 if fused == "bf16" else F32_TOL
    gpu_tr, _, spec = make_pair(config, rollout=rollout)
    assert gpu_tr.plan.rollout_bf16 == (fused == "bf16")
    cuda, t_len, rows, o = gpu_tr.cuda, gpu_tr.horizon, gpu_tr.rows, spec.obs_size
    env = run.make_batch(config)
    env.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(env.num_envs, dtype=np.uint64), None)
    weights, previous_state, slots_seen = {}, None, []
    for k in range(5):  # update 0 eager, 1 and 2 capture the two slots' graphs, 3 and 4 replay them
        weights[k] = gpu_tr.arena.get(cuda, "params")
        gpu_tr.rollout()
        version = max(k - 1, 0)  # update 0 trains on the priming rollout, collected with w_0 like the next one
        assert gpu_tr.behaviour_version == version
        slots_seen.append(gpu_tr.active_slot)
        buf = rollout_buffers(gpu_tr)
        logp, values, state = replay(spec, weights[version], buf, t_len)
        assert rel_err(buf["logp"], logp) <= tol, k
        assert rel_err(buf["values"], values) <= tol, k
        if k >= 1:  # the weights the update starts from did not collect it (so the check above can fail)
            newer, _, _ = replay(spec, weights[k], buf, t_len)
            assert np.abs(newer - buf["logp"]).max() > 1e-3, k
        if previous_state is not None and spec.state_layers:  # the slot begins with the carried state
            assert rel_err(buf["segment_state"][0][:spec.state_layers], previous_state) <= tol, k
            assert np.abs(previous_state).max() > 0
        previous_state = state
        for t in range(t_len):  # rollouts are trained in the order they were collected: the env continues
            assert rel_err(buf["obs"][t], env.obs.reshape(rows, o)) <= 1e-6, (k, t)
            env.step(buf["actions"][t].astype(np.int64).reshape(env.num_envs, 1))
            assert np.array_equal(buf["dones"][t], (env.terminated | env.truncated).astype(np.float32)), (k, t)
            assert np.array_equal(buf["rewards"][t], env.rewards.reshape(rows)), (k, t)
        gpu_tr.update(num_updates=100)
    assert slots_seen == [0, 1, 0, 1, 0]
    assert gpu_tr.global_step == (5 + 1) * t_len * gpu_tr.num_envs  # the priming call collected two rollouts
    gpu_tr.close()


@pytest.mark.parametrize("variant", [
    {"kind": "mingru", "optimizer": "muon", "vtrace": True, "rollout": "gemm"},
    {"kind": "mlp", "optimizer": "adam", "vtrace": True, "rollout": "warp", "epochs": 1},
    {"kind": "mingru", "optimizer": "adam", "vtrace": False, "rollout": "warp"},
    {"kind": "mingru", "optimizer": "muon", "vtrace": True, "rollout": "gemm", "env_device": "cpu"},
    {"kind": "mlp", "optimizer": "muon", "vtrace": True, "rollout": "gemm", "critic": "separate"},
    {"kind": "mingru", "optimizer": "muon", "vtrace": False, "rollout": "warp", "anneal_ent": True},
], ids=["mingru-muon-vtrace", "mlp-adam-vtrace-fused", "mingru-adam-fused", "mingru-muon-vtrace-host",
        "mlp-muon-vtrace-separate-critic", "mingru-muon-fused-annealed-entropy"])
def test_async_updates_match_numpy_async(variant):
    """CudaTrainer and NumpyTrainer, both with train.async, over several updates: the same slot and weight
    version each update, and on the same slot data, weights and sequence order the same update. With one
    epoch, the advantages are V-trace's with pi / mu from the weights the update starts from (stale data).
    anneal_ent: the graphs' schedule kernel sets each update's entropy bonus as the reference's ent_coef_at."""
    _cuda_or_skip()
    config = small_config(optimizer=variant["optimizer"], vtrace=variant["vtrace"],
                          update_epochs=variant.get("epochs", 2), env_device=variant.get("env_device", "cuda"),
                          **{"async": True})
    config["policy"]["kind"] = variant["kind"]
    config["policy"]["critic"] = variant.get("critic", "shared")
    tc = config["train"]
    if variant.get("anneal_ent"):  # a bonus large enough that a stale coefficient moves the weights past 1e-4
        tc["anneal_ent"], tc["ent_coef"] = True, 0.2
    gpu_tr, cpu_tr, spec = make_pair(config, rollout=variant["rollout"])
    cuda, a, t_len = gpu_tr.cuda, gpu_tr.arena, gpu_tr.horizon
    for k in range(4):
        buf, start_weights, sampling_rng = start_async_update(gpu_tr, cpu_tr, k, tc["update_epochs"])
        stats_gpu = gpu_tr.update(num_updates=10)
        stats_cpu = cpu_tr.update(num_updates=10)
        cpu_tr.rng = sampling_rng
        assert gpu_tr.opt_step == cpu_tr.opt_step
        assert stats_gpu["ent_coef"] == stats_cpu["ent_coef"] == ref.ent_coef_at(tc["ent_coef"], k, 10,
                                                                                  tc["anneal_ent"])
        next_ent = ref.ent_coef_at(tc["ent_coef"], k + 1, 10, tc["anneal_ent"])
        assert float(gpu_tr.scalars()["ent_coef"]) == next_ent, k  # what the next replay will read
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= 1e-4, k
        assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= 1e-4, k
        for key in ["policy_loss", "value_loss", "entropy", "approx_kl", "grad_norm", "learning_rate",
                    "explained_variance"]:
            assert abs(stats_gpu[key] - stats_cpu[key]) <= 1e-4 * max(abs(stats_cpu[key]), 1e-2), (k, key)
        if variant["vtrace"] and tc["update_epochs"] == 1:  # the advantages the only epoch trained on
            current, _, _ = replay(spec, start_weights, buf, t_len)
            ratios = np.exp(current - buf["logp"]) if k >= 1 else None  # update 0's data is fresh: plain GAE
            expected = ref.gae(buf["values"], cpu_tr.last_value, buf["rewards"], buf["dones"], tc["gamma"],
                               tc["gae_lambda"], ratios, tc["vtrace_rho_clip"], tc["vtrace_c_clip"])
            assert rel_err(a.get(cuda, "adv_returns")[0], expected) <= 1e-4, k
            if k >= 1:  # and they differ from plain GAE's, so the check above can fail
                plain = ref.gae(buf["values"], cpu_tr.last_value, buf["rewards"], buf["dones"], tc["gamma"],
                                tc["gae_lambda"])
                assert rel_err(plain, expected) > 1e-3, k
    gpu_tr.close()


@pytest.mark.parametrize("env_device", ["cuda", "cpu"])
def test_async_training_is_bitwise_deterministic(env_device):
    """Two async runs (actor and learner overlapping on two streams) end with identical weights, data and
    losses; the first rollout is the sync trainer's first rollout (same weights, seeds and sampling counter)."""
    _cuda_or_skip()
    runs = []
    for _ in range(2):
        trainer, _, _ = make_pair(small_config(env_device=env_device, **{"async": True, "vtrace": True}))
        losses = []
        for k in range(5):
            trainer.rollout()
            if k == 0:
                first_actions = trainer.arena.get(trainer.cuda, "actions")
            losses.append(trainer.update(num_updates=5)["policy_loss"])
        a = trainer.arena
        runs.append((a.get(trainer.cuda, "params"), a.get(trainer.cuda, "actions"), a.get(trainer.cuda, "actions@1"),
                     losses, first_actions))
        trainer.close()
    for x, y in zip(runs[0], runs[1]):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    sync, _, _ = make_pair(small_config(env_device=env_device))
    sync.rollout()
    assert np.array_equal(sync.arena.get(sync.cuda, "actions"), runs[0][4])
    sync.close()


# ------------------------------------------------------------------------------------------------
# Host environments (train.env_device = "cpu"): CPU env batches stepped beside the CUDA trainer, in env
# groups; the policy, sampling and update on the GPU. The oracles: a CPU batch fed the recorded actions
# (the same C code, so bitwise), the reference policy and sampler, the GPU-env trainer, NumpyTrainer.

def host_config(groups=2, kind="mingru", **train):
    config = small_config(**{"env_device": "cpu", "env_groups": groups, **train})
    config["policy"]["kind"] = kind
    return config


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_host_env_rollouts_match_the_cpu_env_the_reference_and_numpy_updates(kind):
    """Three rollouts and updates (the first eager, the second captures the per-step graphs, the third
    replays them) with two env groups: the env data equals a CPU batch fed the recorded actions, bit for bit;
    log-probs, values and actions are the reference policy's on the weights of that rollout; each update
    equals NumpyTrainer's on the same data, weights and sequence order."""
    _cuda_or_skip()
    from fastvec.trainer import run
    from fastvec.trainer.reference import policy_uniforms, sequence_order
    config = host_config(kind=kind)
    gpu_tr, cpu_tr, spec = make_pair(config)
    assert gpu_tr.host_env and len(gpu_tr.rollout_path.groups) == 2 and not gpu_tr.plan.fused_block
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    t_len, rows, o = gpu_tr.horizon, gpu_tr.rows, spec.obs_size
    env = run.make_batch(config)
    env.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(env.num_envs, dtype=np.uint64), None)
    state = np.zeros((spec.state_layers, rows, spec.hidden), np.float32)
    episodes = 0
    for k in range(3):
        params = a.get(cuda, "params")
        views = ref.FlatLayout(ref.param_table(spec)).views(params)
        gpu_tr.rollout()
        buf = rollout_buffers(gpu_tr)
        for t in range(t_len):
            assert np.array_equal(buf["obs"][t], env.obs.reshape(rows, o)), (k, t)
            env.step(buf["actions"][t].astype(np.int64).reshape(env.num_envs, 1))
            done = env.terminated | env.truncated
            episodes += int(done.sum())
            assert np.array_equal(buf["dones"][t], done.astype(np.float32)), (k, t)
            assert np.array_equal(buf["starts"][t + 1], done.astype(np.float32)), (k, t)
            assert np.array_equal(buf["rewards"][t], env.rewards.reshape(rows)), (k, t)
        assert np.array_equal(buf["obs"][t_len], env.obs.reshape(rows, o))
        state0 = buf["segment_state"][0][:spec.state_layers]
        if k and spec.state_layers:  # the live state carries over from the previous rollout
            assert rel_err(state0, state) <= F32_TOL and np.abs(state).max() > 0
        logits, values, state, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len], state0)
        assert rel_err(buf["values"], values) <= F32_TOL, k
        taken = np.take_along_axis(ref.log_softmax(logits), buf["actions"][..., None].astype(np.int64), -1)[..., 0]
        assert rel_err(buf["logp"], taken) <= F32_TOL, k
        agree = np.mean([np.mean(ref.sample_actions(logits[t], policy_uniforms(gpu_tr.seed_key, rows, k * t_len + t))[0]
                                 == buf["actions"][t]) for t in range(t_len)])
        assert agree > 0.999, k
        bootstrap = ref.policy_forward(spec, views, buf["obs"][t_len:], buf["starts"][t_len:], state)[1][0]
        assert rel_err(gpu_tr.last_values(), bootstrap) <= F32_TOL, k

        load_numpy_trainer(cpu_tr, buf, gpu_tr.last_values())
        cpu_tr.params[...] = params  # each update from the same weights: rounding would compound otherwise
        cpu_tr.opt_state[...] = a.get(cuda, "opt_state")
        cpu_tr.rng = FixedOrders([sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, k, e)
                                  for e in range(config["train"]["update_epochs"])])
        stats_gpu = gpu_tr.update(num_updates=10)
        stats_cpu = cpu_tr.update(num_updates=10)
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= 1e-4, k
        for key in ["policy_loss", "value_loss", "entropy", "grad_norm", "explained_variance"]:
            assert abs(stats_gpu[key] - stats_cpu[key]) <= 1e-4 * max(abs(stats_cpu[key]), 1e-2), (k, key)
    assert gpu_tr.rollout_path.graphs is not None and len(gpu_tr.rollout_path.graphs) == 2 * (t_len + 1) + 1  # captured, replayed
    logged = gpu_tr.pop_episodes()
    assert logged["episodes"] == episodes and logged["episodes"] > 0
    assert gpu_tr.pop_episodes() is None  # the sums were zeroed: nothing finished since the last call
    gpu_tr.close()


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_host_env_trains_like_the_gpu_env(kind):
    """The same config with the env on the CPU (two groups) and on the GPU (GEMM-path rollout): the env is the
    same C code compiled twice, the policy the same kernels, the sampling the same counter-based uniforms; so
    three rollouts and updates agree to float rounding (on the H200: obs bitwise equal, values within 7e-7,
    weights within 1.7e-7 relative). Kept small: with 1024 envs (256 Adam steps per update) the 1e-7
    differences grow to visibly different weights after one update."""
    _cuda_or_skip()
    host, _, _ = make_pair(host_config(kind=kind))
    dev, _, _ = make_pair(host_config(kind=kind, env_device="cuda"), rollout="gemm")
    assert host.host_env and not dev.host_env
    for k in range(3):
        host.rollout()
        dev.rollout()
        bh, bd = rollout_buffers(host), rollout_buffers(dev)
        assert np.mean(bh["actions"] == bd["actions"]) >= 0.999, k
        assert np.array_equal(bh["dones"], bd["dones"]), k
        assert rel_err(bh["obs"], bd["obs"]) <= 1e-4, k
        assert rel_err(bh["values"], bd["values"]) <= 1e-4, k
        host.update(num_updates=10)
        dev.update(num_updates=10)
        assert rel_err(host.arena.get(host.cuda, "params"), dev.arena.get(dev.cuda, "params")) <= 1e-4, k
    assert host.pop_episodes()["episodes"] == dev.pop_episodes()["episodes"]
    host.close()
    dev.close()


def test_host_env_groups_do_not_change_the_results():
    """One, two or three env groups: env i is seeded as env i whatever its group, rows keep their sampling
    counters, each group runs the same kernels on its rows; the results agree (GEMMs on fewer rows may sum
    in another order: the rollouts' floats agree to 1e-6, and after three updates the weights differed by
    2.1e-6 on the H200, so they are compared to 1e-5)."""
    _cuda_or_skip()
    runs = []
    for groups in (1, 2, 3):
        trainer, _, _ = make_pair(host_config(groups=groups))
        assert len(trainer.rollout_path.groups) == groups
        for _ in range(3):
            trainer.rollout()
            trainer.update(num_updates=10)
        runs.append((rollout_buffers(trainer), trainer.arena.get(trainer.cuda, "params")))
        trainer.close()
    for buf, params in runs[1:]:
        for name in ["actions", "dones", "rewards"]:
            assert np.array_equal(buf[name], runs[0][0][name]), name
        for name in ["obs", "logp", "values"]:
            assert rel_err(buf[name], runs[0][0][name]) <= 1e-6, name
        assert rel_err(params, runs[0][1]) <= 1e-5


def test_fastvec_train_with_host_envs(tmp_path):
    _cuda_or_skip()
    from fastvec.trainer import run
    config = host_config(total_timesteps=24 * 16 * 3)
    config["train"]["log_interval"] = 0.0
    summary = run.train(config, tmp_path / "run", dashboard=False)
    trainer = summary["trainer"]
    assert trainer.device == "cuda" and trainer.host_env and summary["global_step"] == 24 * 16 * 3
    assert summary["metrics"]["time_split"]["env"] > 0
    assert math.isfinite(summary["metrics"]["losses/policy_loss"])


@pytest.mark.parametrize("is_async", [False, True])
def test_selfplay_on_cuda_trains_and_snapshots_the_gpu_weights(tmp_path, is_async):
    """fastvec-train pong --selfplay.enabled=true --train.device=cuda --train.env_device=cpu: the learner's seats
    are a SelfPlayBatch stepped on the host (one group), the pool gets the GPU weights as snapshots; also with
    train.async (the host envs are stepped while the update runs)."""
    _cuda_or_skip()
    import json

    from fastvec.trainer import checkpoint, run
    from fastvec.trainer.config import load_config
    config = load_config("pong", {"env": {"num_envs": 16, "points": 1}, "policy": {"hidden": 16, "layers": 1},
                                  "selfplay": {"enabled": True, "refresh_interval": 1, "eval_interval": 0,
                                               "eval_games": 4, "eval_past": 1},
                                  "train": {"device": "cuda", "env_device": "cpu", "total_timesteps": 16 * 32 * 3,
                                            "horizon": 32,
                                            "bptt_horizon": 16, "minibatch_size": 128, "log_interval": 0.0,
                                            "async": is_async}})
    summary = run.train(config, tmp_path / "sp", dashboard=False)
    trainer = summary["trainer"]
    assert trainer.device == "cuda" and trainer.host_env and trainer.num_agents == 1 and len(trainer.rollout_path.groups) == 1
    assert config["train"]["env_device"] == "cpu"
    pool = trainer.selfplay.pool
    assert [pool.policies[p].label for p in pool.members] == ["u0", "u1", "u2", "u3"]
    assert np.array_equal(pool.policies[pool.members[-1]].params, trainer.params)
    _, state = checkpoint.load(summary["checkpoint"])
    assert np.array_equal(state["params"], trainer.params)
    assert "selfplay/score_bot4" in summary["metrics"] and (tmp_path / "sp" / "ratings.json").exists()
    rows = [json.loads(line) for line in (tmp_path / "sp" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all("selfplay/pool" in row for row in rows)


# ------------------------------------------------------------------------------------------------
# The env inside the trainer's rollout is the env backend's: the same C file, compiled with the same no-FMA
# flags, steps bit for bit as the CPU batch fed the same actions (obs, rewards, dones, episode starts).

def env_config(env: str, num_envs: int, horizon: int):
    from fastvec.trainer.config import load_config
    policy = {"kind": "mingru", "hidden": 32, "layers": 2, "critic": "shared", "encoder": "linear"}
    return load_config(env, {"env": {"num_envs": num_envs}, "policy": policy,
                             "train": {"device": "cuda", "horizon": horizon, "bptt_horizon": horizon,
                                       "minibatch_size": num_envs * horizon, "precision": "fp32",
                                       "async": False, "seed": 3}})


@pytest.mark.parametrize("env,rollout", [("cartpole", "gemm"), ("cartpole", "warp"), ("cartpole", "thread"),
                                         ("breakout", "gemm"), ("breakout", "warp"), ("breakout", "thread"),
                                         ("seaquest-minatar", "gemm")])
def test_in_graph_env_transitions_equal_the_cpu_batch_bit_for_bit(env, rollout):
    """Three whole rollouts (eager, captured, replayed) of each rollout path: every obs, reward, done and
    episode start the trainer recorded equals, bit for bit, what the CPU build of the same env produces from
    the same seeds and the trainer's own actions; so do the finished episodes' count and returns."""
    from fastvec.trainer import run
    config = env_config(env, 256 if env == "cartpole" else 128, 64)
    trainer, _, spec = make_pair(config, rollout=rollout)
    assert trainer.plan.rollout == rollout
    cpu = run.make_batch(config)
    cpu.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(cpu.num_envs, dtype=np.uint64), None)
    rows, o, t_len = trainer.rows, spec.obs_size, trainer.horizon
    episodes, returns = 0, 0.0
    for k in range(3):
        trainer.rollout()
        buf = rollout_buffers(trainer)
        for t in range(t_len):
            assert np.array_equal(buf["obs"][t], cpu.obs.reshape(rows, o).astype(np.float32)), (k, t)
            cpu.step(buf["actions"][t].astype(np.int64).reshape(cpu.num_envs, -1))
            done = cpu.terminated | cpu.truncated
            assert np.array_equal(buf["rewards"][t], cpu.rewards.reshape(rows)), (k, t)
            assert np.array_equal(buf["dones"][t], np.repeat(done, trainer.num_agents).astype(np.float32)), (k, t)
            assert np.array_equal(buf["starts"][t + 1], np.repeat(done, trainer.num_agents).astype(np.float32)), (k, t)
            episodes += int(done.sum())
            returns += float(cpu.episode_return[done].astype(np.float64).sum())
        assert np.array_equal(buf["obs"][t_len], cpu.obs.reshape(rows, o).astype(np.float32))
        trainer.update(num_updates=10)  # the policy changes between rollouts
    logged = trainer.pop_episodes()
    if env == "cartpole":
        assert episodes > 0
    if episodes:
        assert logged["episodes"] == episodes
        assert abs(logged["episode_return"] - returns / episodes) <= 1e-9 * max(abs(returns / episodes), 1.0)
    trainer.close()
