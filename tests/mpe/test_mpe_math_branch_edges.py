"""glibc_exp.h's fv_log1p and fv_exp on both sides of every threshold their code branches on (the high word of x
against each constant, exp's exponent ranges, the over- and underflow edges), bit for bit against this machine's
libm (math.log1p, math.exp), including +-0 and the subnormals."""

import ctypes
import math

import numpy as np
import pytest
from mpe_oracle import needs_glibc_fma

SOURCE = r"""
#include "glibc_exp.h"
void v_exp(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_exp(x[i]); }
void v_log1p(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_log1p(x[i]); }
"""

LOWS = [0, 1, 0x5A5A5A5A, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF]  # low words tried under each high word


@pytest.fixture(scope="module")
def lib(c_shim):
    return c_shim(SOURCE)


def call(lib, name: str, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, np.float64)
    y = np.empty_like(x)
    getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return y


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
