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
