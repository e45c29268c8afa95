"""The transcendental functions the MPE physics calls, against the oracle's own: the contact force's softplus
(mpe_common.h's mpe_softplus, from glibc_exp.h's fv_exp and fv_log1p) equals NumPy's np.logaddexp(0, y) bit for
bit, and fv_exp / fv_log1p equal this machine's libm (Python's math.exp and math.log1p) over every range their
algorithms distinguish, subnormal results included."""

import ctypes
import math

import numpy as np
import pytest
from mpe_oracle import needs_glibc_fma

SOURCE = r"""
#include "glibc_exp.h"
#define OBS_SIZE 1
#define MPE_AGENTS 1
#define MPE_LANDMARKS 0
#define MPE_DIM_C 0
#define MPE_EXTRA_STATE 0
#define MPE_NUM_ACTIONS 5
FV_FN double mpe_size(int e) { (void)e; return 0.05; }
FV_FN int mpe_collide(int e) { (void)e; return 0; }
FV_FN int mpe_movable(int e) { (void)e; return 1; }
FV_FN int mpe_silent(int a) { (void)a; return 1; }
FV_FN double mpe_accel(int a) { (void)a; return 5.0; }
FV_FN double mpe_max_speed(int a) { (void)a; return 0.0; }
#include "mpe_common.h"
void v_softplus(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = mpe_softplus(x[i]); }
void v_exp(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_exp(x[i]); }
void v_log1p(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_log1p(x[i]); }
"""


@pytest.fixture(scope="module")
def lib(c_shim):
    return c_shim(SOURCE)


def call(lib, name: str, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, np.float64)
    y = np.empty_like(x)
    getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return y


def assert_same_bits(got: np.ndarray, want: np.ndarray, x: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
    assert bad.size == 0, (f"{name}: {bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r}: "
                           f"{got[bad[0]]!r} != {want[bad[0]]!r}")


@needs_glibc_fma
def test_softplus_equals_numpys_logaddexp(lib):
    """The contact force's arguments: -(dist - dist_min) / 1e-3, thousands below 0 to a few hundred above."""
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.uniform(-3000, 400, 300_000), rng.uniform(-40, 40, 300_000),
                        rng.uniform(-750, -700, 100_000), [0.0, -0.0, 1e-300, -1e-300, 36.7, -36.7, -745.2]])
    assert_same_bits(call(lib, "v_softplus", y), np.logaddexp(0.0, y), y, "softplus")


@needs_glibc_fma
def test_exp_and_log1p_equal_libms(lib):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-800, 720, 200_000), rng.uniform(-745.2, -708, 200_000),
                        rng.uniform(-3, 3, 200_000),
                        -np.ldexp(rng.uniform(1, 2, 20_000), -rng.integers(0, 70, 20_000)),
                        [0.0, -0.0, 5e-324, -745.14, -745.13, 709.78, 709.79, -1100.0, -np.inf, np.inf]])
    assert_same_bits(call(lib, "v_exp", x), np.array([math.exp(v) if v < 709.79 else np.inf for v in x]), x, "exp")
    u = np.concatenate([rng.uniform(0, 1, 200_000), rng.uniform(-0.99, 5, 200_000),
                        np.exp(rng.uniform(-800, 0, 100_000)),
                        np.ldexp(rng.uniform(1, 2, 20_000), rng.integers(-80, 80, 20_000)), [0.0, 0.41422, 1.0, 1e300]])
    assert_same_bits(call(lib, "v_log1p", u), np.array([math.log1p(v) for v in u]), u, "log1p")


def test_exp_and_log1p_of_nan_are_nan_as_libms(lib):
    """A NaN in (either sign) gives a NaN out, as math.exp and math.log1p do: never an infinity or 0."""
    nan = np.array([np.nan, np.copysign(np.nan, -1.0)])
    assert np.signbit(nan).tolist() == [False, True]
    for name, libm in (("v_exp", math.exp), ("v_log1p", math.log1p)):
        assert np.isnan(call(lib, name, nan)).all() and all(math.isnan(libm(v)) for v in nan), name


def test_exp_and_log1p_at_and_below_minus_one_are_libms(lib):
    """log1p's edge of the domain: -1 gives -inf (not +inf), anything below -1 (to -inf) NaN, as NumPy's log1p;
    signed zeros and the tiny arguments returned as they are keep their sign, and +inf stays +inf."""
    edge = np.array([-1.0, -0.0, 0.0, -1e-300, 1e-300, np.inf])
    with np.errstate(divide="ignore"):
        want = np.log1p(edge)
    assert want[0] == -np.inf
    assert_same_bits(call(lib, "v_log1p", edge), want, edge, "log1p")
    below = np.array([-1.0000000000000002, -1.5, -2.0, -1e300, -np.inf])
    assert np.isnan(call(lib, "v_log1p", below)).all()
    assert np.isinf(call(lib, "v_exp", np.array([np.inf])))[0] and call(lib, "v_exp", np.array([-np.inf]))[0] == 0.0
