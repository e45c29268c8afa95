"""math32.h's float32 sin and cos (the opt-in float32 CartPole and Acrobot) against NumPy's float64 sin and cos:
within 1.1 float32 ulps for |x| <= 1 (a pole's angle) and 1.5 ulps for |x| < 8 (Acrobot's wrapped angles and their
sums, where the reduction's rounding adds), ulps taken at max(|value|, 1/4) (near a zero of sin or cos the
reduction's absolute error is what counts), and sin^2 + cos^2 = 1 to float rounding."""

import ctypes

import numpy as np
import pytest

SOURCE = r"""
#include "math32.h"
void v_sincosf(const float* x, float* s, float* c, long n) { for (long i = 0; i < n; i++) fv_sincosf(x[i], &s[i], &c[i]); }
"""


@pytest.fixture(scope="module")
def sincosf(c_shim):
    lib = c_shim(SOURCE)

    def call(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.ascontiguousarray(x, np.float32)
        s, c = np.empty_like(x), np.empty_like(x)
        lib.v_sincosf(*(a.ctypes.data_as(ctypes.c_void_p) for a in (x, s, c)), ctypes.c_long(x.size))
        return s, c

    return call


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in float32 ulps of max(|exact|, 1/4)."""
    scale = np.maximum(np.abs(exact), 0.25).astype(np.float32)
    return np.abs(got.astype(np.float64) - exact) / np.spacing(scale).astype(np.float64)


@pytest.mark.parametrize("limit,bound", [(1.0, 1.1), (8.0, 1.5)])
def test_close_to_the_exact_values_over_the_envs_angles(sincosf, limit, bound):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-limit, limit, 1_000_000),
                        np.arange(-int(limit / (np.pi / 4)), int(limit / (np.pi / 4)) + 1) * (np.pi / 4)])
    x = x.astype(np.float32)
    s, c = sincosf(x)
    x64 = x.astype(np.float64)
    assert ulps(s, np.sin(x64)).max() <= bound and ulps(c, np.cos(x64)).max() <= bound
    assert np.abs(s.astype(np.float64) ** 2 + c.astype(np.float64) ** 2 - 1).max() < 4e-7


# math32.h built as nvcc sees it (its __CUDACC__ branch skips the reduction for |x| <= pi/4), on the CPU: the
# CUDA keywords as plain C, fmaf and fabsf from libm (one IEEE rounding, as the device's).
GPU_BRANCH_SOURCE = r"""
#include <math.h>
#define __CUDACC__ 1
#define __device__
#define __forceinline__ inline
#define __constant__
#include "math32.h"
void v_sincosf(const float* x, float* s, float* c, long n) { for (long i = 0; i < n; i++) fv_sincosf(x[i], &s[i], &c[i]); }
"""


def test_the_gpu_branch_gives_the_cpus_bits(c_shim, sincosf):
    """The GPU's fv_sincosf (no reduction for |x| <= pi/4) returns the CPU's bits for every angle, small ones
    included: a float32 env steps the same on both."""
    lib = c_shim(GPU_BRANCH_SOURCE)
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-np.pi / 4, np.pi / 4, 20_000), rng.uniform(-8, 8, 20_000),
                        [0.0, -0.0, np.pi / 4, -np.pi / 4, np.nextafter(np.float32(np.pi / 4), 1)]]).astype(np.float32)
    s, c = np.empty_like(x), np.empty_like(x)
    lib.v_sincosf(*(a.ctypes.data_as(ctypes.c_void_p) for a in (x, s, c)), ctypes.c_long(x.size))
    want_s, want_c = sincosf(x)
    np.testing.assert_array_equal(s.view(np.uint32), want_s.view(np.uint32))
    np.testing.assert_array_equal(c.view(np.uint32), want_c.view(np.uint32))


def _fmaf(a, b, c):
    """fmaf on float32 arrays: the product of two floats is exact in float64 (48 bits), so one float64 sum rounded
    to float32 is the single rounding (a double rounding needs the sum within 2**-29 of a float32 midpoint)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def documented_sincosf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """math32.h's algorithm as its comments give it, in NumPy float32: k = round(x 2/pi) by the 1.5 * 2**23 trick,
    r = x - k pi/2 in three parts (Cody-Waite), Taylor polynomials of sin to r^11 and cos to r^12 in fmaf steps
    (Horner), and the quadrant from k mod 4."""
    f = np.float32
    x = x.astype(f)
    magic = f(12582912.0)
    k = (x * f(0.636619772367581382) + magic) - magic
    r = ((x - k * f(1.5703125)) - k * f(4.837512969970703125e-4)) - k * f(7.54978995489188216e-8)
    r2 = r * r
    one = np.ones_like(r)
    ps = _fmaf(r2, one * f(-1.0 / 39916800), one * f(1.0 / 362880))
    for coef in (-1.0 / 5040, 1.0 / 120, -1.0 / 6):
        ps = _fmaf(r2, ps, one * f(coef))
    s = _fmaf(r * r2, ps, r)
    pc = _fmaf(r2, one * f(1.0 / 479001600), one * f(-1.0 / 3628800))
    for coef in (1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5):
        pc = _fmaf(r2, pc, one * f(coef))
    c = _fmaf(r2, pc, one)
    k4 = k - f(4.0) * ((k * f(0.25) + magic) - magic)
    odd = (k4 == 1) | (k4 == -1)
    sin_q, cos_q = np.where(odd, c, s), np.where(odd, s, c)
    return (np.where((k4 < -0.5) | (k4 > 1.5), -sin_q, sin_q).astype(f),
            np.where((k4 > 0.5) | (k4 < -1.5), -cos_q, cos_q).astype(f))


def test_the_documented_algorithm_bit_for_bit(sincosf):
    """fv_sincosf is its documented algorithm to the last bit over the envs' angles (every constant of the reduction
    and of both polynomials counts: a coefficient off by a thousandth of an ulp changes about one result in ten
    thousand, within the accuracy bounds above)."""
    x = np.random.default_rng(2).uniform(-8, 8, 1_000_000).astype(np.float32)
    s, c = sincosf(x)
    want_s, want_c = documented_sincosf(x)
    np.testing.assert_array_equal(s.view(np.uint32), want_s.view(np.uint32))
    np.testing.assert_array_equal(c.view(np.uint32), want_c.view(np.uint32))
