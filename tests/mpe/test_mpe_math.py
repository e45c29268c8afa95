"""The transcendental functions the MPE physics calls, against the oracle's own: the contact force's softplus
(mpe_common.h's mpe_softplus, from glibc_exp.h's fv_exp and fv_log1p) equals NumPy's np.logaddexp(0, y) bit for
bit, and fv_exp / fv_log1p equal this machine's libm (Python's math.exp and math.log1p) over every range their
algorithms distinguish, subnormal results included, and on both sides of every threshold their code branches on
(the high word of x against each constant, exp's exponent ranges, the over- and underflow edges)."""

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


# On both sides of each branch threshold, against libm (math.log1p, math.exp), +-0 and subnormals included

LOWS = [0, 1, 0x5A5A5A5A, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]  # low words tried under each high word


def around_high_words(highs: list[int]) -> np.ndarray:
    """Doubles whose high word is each of `highs` or one either side, under several low words."""
    words = [((h + d) & 0xFFFFFFFF) << 32 | low for h in highs for d in (-1, 0, 1) for low in LOWS]
    return np.array(words, np.uint64).view(np.float64)


def assert_libms(got: np.ndarray, x: np.ndarray, libm, name: str) -> None:
    def want_of(v):
        try:
            return libm(v)
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan if v != -1.0 else -math.inf
    want = np.array([want_of(v) for v in x])
    same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{name}: {bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r}: {got[bad[0]]!r} != {want[bad[0]]!r}"


@needs_glibc_fma
def test_exp_and_log1p_match_libm_on_both_sides_of_each_log1p_branch_edge(lib):
    # log1p's thresholds on the high word hx (fdlibm's): 0.41422, -0.2929, |x| = 2^-29 and 2^-54, -1, 2^53, inf;
    # the subnormals and zeros (high word 0) of both signs
    edges = [0x3FDA827A, 0xBFD2BEC3, 0x3E200000, 0xBE200000, 0x3C900000, 0xBC900000, 0xBFF00000, 0x43400000,
             0x7FF00000, 0x00000000, 0x80000000, 0x00000001, 0x80000001]
    x = around_high_words(edges)
    # 1 + x's mantissa on either side of sqrt(2) (hu against 0x6a09e), for exponents k from -1 to 60
    k = np.arange(-1, 61)
    for hu in (0x6A09D, 0x6A09E, 0x6A09F):
        for low in (0, 0xFFFFFFFF):
            u = np.array([((int(e) + 1023) << 52) | (hu << 32) | low for e in k], np.uint64).view(np.float64)
            x = np.concatenate([x, u - 1.0])
    assert_libms(call(lib, "v_log1p", x), x, math.log1p, "log1p")


@needs_glibc_fma
def test_exp_and_log1p_match_libm_on_both_sides_of_each_exp_branch_edge(lib):
    # exp's exponent ranges: |x| < 2^-54, the scaled path from 512, infinity or 0 from 1024; and its over- and
    # underflow (709.78...), subnormal (-708.39...) and zero (-745.13...) results, a few ulps either side
    edges = [0x3C900000, 0xBC900000, 0x40800000, 0xC0800000, 0x40900000, 0xC0900000, 0x7FF00000, 0xFFF00000,
             0x00000000, 0x80000000]
    x = around_high_words(edges)
    ulps = np.arange(-3, 4)
    for edge in (709.782712893384, -708.3964185322641, -745.1332191019411, -745.1332191019412, 512.0, -512.0,
                 -1022 * math.log(2), -1074 * math.log(2)):
        x = np.concatenate([x, (np.float64(edge).view(np.uint64) + ulps.astype(np.int64).astype(np.uint64))
                            .view(np.float64)])
    assert_libms(call(lib, "v_exp", x), x, math.exp, "exp")
