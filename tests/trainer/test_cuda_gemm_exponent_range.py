"""train.precision's GEMMs keep float32's exponent range: "tf32" and "bf16" round the fp32 operands' mantissas
for the tensor cores (cublas.COMPUTE_TYPES) but never their exponents, as fp16 operands would (their range ends
at 65504, and flushes what is below 2^-24 to zero). Needs a GPU with PyCUDA."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def _cuda_or_skip():
    from fastvec.trainer import cuda as cuda_trainer
    if not cuda_trainer.available():
        pytest.skip("needs an NVIDIA GPU with PyCUDA")
    from fastvec.trainer.cuda import device
    return device.init()


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
def test_gemms_of_operands_scaled_by_powers_of_two_scale_exactly_at_every_precision(precision):
    """The same product of operands scaled by 2^-40 (below fp16's smallest subnormal) and 2^40 (past its
    largest value): each precision's rounding commutes with a power of two within float32's (and bfloat16's
    and TF32's) exponent range, so the scaled results are the unscaled one times 2^-80 and 2^80."""
    cuda = _cuda_or_skip()
    from fastvec.trainer.cuda.cublas import Cublas
    rng = np.random.default_rng(11)
    m, n, kk = 64, 48, 256
    a, b = rng.standard_normal((m, kk)).astype(np.float32), rng.standard_normal((kk, n)).astype(np.float32)
    stream = cuda.Stream()
    workspace = cuda.mem_alloc(8 << 20)
    blas = Cublas(stream, int(workspace), 8 << 20, precision)
    results, held = {}, []
    try:
        for power in (0, -40, 40):
            scale = np.float32(2.0 ** power)
            pa, pb = cuda.to_device(a * scale), cuda.to_device(b * scale)
            out = cuda.mem_alloc(m * n * 4)
            held += [pa, pb, out]
            blas.matmul(int(out), int(pa), int(pb), m, n, kk)
            stream.synchronize()
            got = np.empty((m, n), np.float32)
            cuda.memcpy_dtoh(got, out)
            results[power] = got.astype(np.float64) * 2.0 ** (-2 * power)
    finally:
        blas.close()
        for allocation in [workspace, *held]:
            allocation.free()
    exact = a.astype(np.float64) @ b
    base = results[0]
    assert np.isfinite(base).all()
    assert (rel_err(base, exact) < 1e-5) if precision == "fp32" else (1e-5 < rel_err(base, exact) < 3e-2)
    for power in (-40, 40):
        assert np.isfinite(results[power]).all(), (precision, power)
        assert rel_err(results[power], base) < 1e-6, (precision, power, rel_err(results[power], base))
