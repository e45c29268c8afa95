"""glibc_math.h against the oracle it copies: this machine's libm (NumPy's float64 sin/cos and ** 2, float32 ** 2)
on millions of arguments over every range its algorithms distinguish, and its tables against values recomputed
from their definitions with mpmath (sin/cos of i/128, log(c), 2^(i/128), log2(c), 2^(i/32))."""

import ctypes
import platform
import re

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR

HEADER = NATIVE_DIR / "glibc_math.h"


def glibc_fma() -> bool:
    """glibc >= 2.28 on an x86-64 CPU with FMA: the libm build (its FMA variant) that glibc_math.h reproduces."""
    name, version = platform.libc_ver()
    if name != "glibc" or tuple(int(v) for v in version.split(".")[:2]) < (2, 28) or platform.machine() != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return False
    return re.search(r"\bfma\b", flags) is not None and re.search(r"\bavx2\b", flags) is not None


needs_glibc_fma = pytest.mark.skipif(not glibc_fma(), reason="Gymnasium's sin/cos/pow bits here come from a libm "
                                     "other than glibc's FMA build, which glibc_math.h reproduces")

SOURCE = r"""
#include "glibc_math.h"
void v_sin(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_sin(x[i]); }
void v_cos(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_cos(x[i]); }
void v_pow2(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_pow2(x[i]); }
void v_powf2(const float* x, float* y, long n) { for (long i = 0; i < n; i++) y[i] = fv_powf2(x[i]); }
void v_cos_near(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fvm_cos_near(x[i]); }
void v_cos_mid2(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = fvm_cos_mid2(x[i]); }
void v_in_mid2(const double* x, double* y, long n) { for (long i = 0; i < n; i++) y[i] = FVM_COS_MID2(x[i]); }
"""


@pytest.fixture(scope="module")
def lib(c_shim):
    return c_shim(SOURCE)


def call(lib, name: str, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return y


def arguments(rng) -> np.ndarray:
    """Uniform arguments in each range the functions branch on, both signs, plus their boundaries."""
    parts = [rng.uniform(-b, b, 200_000) for b in (2**-26, 0.126, 0.855469, 2.426265, 10.0, 1e3, 1e8)]
    edges = np.array([0.0, 2**-27, 2**-26, 0.126, 0.855469, 2.426265, 105414350.0, np.pi / 4, np.pi / 2, np.pi])
    edges = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1)])
    return np.concatenate(parts + [edges, -edges])


@needs_glibc_fma
def test_sin_cos_pow2_equal_numpys(lib):
    x = arguments(np.random.default_rng(0))
    for name, ref in (("v_sin", np.sin), ("v_cos", np.cos)):
        got, want = call(lib, name, x), ref(x)
        bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
        assert bad.size == 0, f"{name}: {bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r}"
    # float64 ** 2 is libm's pow, not x * x (they differ in ~0.1% of cases): scalars as Gymnasium's envs use them
    x2 = np.concatenate([x[::20], np.ldexp(np.random.default_rng(1).uniform(1, 2, 20_000), np.arange(20_000) % 400 - 200)])
    want = np.array([np.float64(v) ** 2 for v in x2])
    got = call(lib, "v_pow2", x2)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    assert not np.array_equal(x2 * x2, want)  # the test can tell pow from a product


def square_remainder_in_ulps(x: np.ndarray) -> np.ndarray:
    """|x^2 - x * x| in ulps of x * x, exactly: Dekker's product (Veltkamp's split of x into two 26-bit halves)."""
    square = x * x
    c = 134217729.0 * x  # 2^27 + 1
    high = c - (c - x)
    low = x - high
    remainder = ((high * high - square) + 2 * high * low) + low * low
    ulp = np.ldexp(1.0, np.frexp(square)[1] - 53)
    return np.abs(remainder) / ulp


@needs_glibc_fma
def test_pow2_near_its_shortcuts_bound_equals_numpys(lib):
    # fv_pow2 returns x * x where the square's remainder is at most 7/16 ulp and computes pow elsewhere: arguments
    # both sides of that bound, and those nearest half an ulp, where pow and x * x differ
    x = np.random.default_rng(3).uniform(-40, 40, 4_000_000)
    ratio = square_remainder_in_ulps(x)
    x = np.concatenate([x[ratio > 0.40], np.ldexp(1.0, np.arange(-125, 126)), np.nextafter(np.sqrt(2), [0, 3])])
    want = np.array([np.float64(v) ** 2 for v in x])
    got = call(lib, "v_pow2", x)
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
    differs = want != x * x
    assert differs.sum() > 100 and square_remainder_in_ulps(x)[differs].min() > 0.4375


@needs_glibc_fma
def test_powf2_equals_numpys_float32_square(lib):
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-2, 2, 60_000), np.ldexp(rng.uniform(1, 2, 20_000), rng.integers(-60, 60, 20_000))])
    x = x.astype(np.float32)
    want = np.array([v ** 2 for v in x], np.float32)  # np.float32 ** 2: libm's powf
    got = call(lib, "v_powf2", x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not np.array_equal(x * x, want)


@needs_glibc_fma
def test_cos_near_is_within_its_bound_of_glibcs_cos_at_float32_arguments(lib):
    # MountainCarContinuous's vector step trusts fvm_cos_near to 2^-49 of glibc's cos relative to its size, at
    # the float32 arguments 3 * position: random ones, and those nearest the zeros of cos and the quadrants' edges
    rng = np.random.default_rng(4)
    x = rng.uniform(-3.6, 1.8, 3_000_000).astype(np.float32)
    edges = np.float32(np.array([-np.pi, -3 * np.pi / 4, -np.pi / 2, -np.pi / 4, 0, np.pi / 4, np.pi / 2]))
    near = np.concatenate([edges + np.arange(-300, 301, dtype=np.float32)[:, None] * np.spacing(edges) for _ in [0]])
    x = np.concatenate([x, near.ravel(), np.float32([-3.6, 1.8, 2**-30, -(2**-30)])]).astype(np.float64)
    got, want = call(lib, "v_cos_near", x), np.cos(x)
    assert np.max(np.abs(got - want) / np.abs(want)) <= 2.0**-49
    assert not np.array_equal(got, want)  # a polynomial, not glibc's cos: the step's rounding check is needed


@needs_glibc_fma
def test_branch_free_cos_of_the_second_range_equals_numpys_wherever_its_test_admits(lib):
    # fvm_cos_mid2 (MountainCar's vector step) wherever FVM_COS_MID2 admits x (fv_cos's second range, 0.855469 <=
    # |x| < 2.426265): its Taylor part near pi/2, its table part elsewhere, both signs; arguments beyond the range
    # too, and the range's edges, so that a test admitting too much fails
    rng = np.random.default_rng(6)
    edges = np.array([0.855469, 0.85546875, 2.426265, np.pi / 2 - 0.126, np.pi / 2 + 0.126])
    x = np.concatenate([rng.uniform(0.5, 3.0, 2_000_000), rng.uniform(np.pi / 2 - 0.13, np.pi / 2 + 0.13, 500_000),
                        edges, np.nextafter(edges, 0), np.nextafter(edges, 4)])
    x = np.concatenate([x, -x])
    admitted = np.empty(x.size, np.float64)
    lib.v_in_mid2(x.ctypes.data_as(ctypes.c_void_p), admitted.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    x = x[admitted != 0]
    assert 0.85 < np.abs(x).min() < 0.856 and 2.42 < np.abs(x).max() < 2.427 and x.size > 2_000_000
    got, want = call(lib, "v_cos_mid2", x), np.cos(x)
    bad = np.flatnonzero(got.view(np.uint64) != want.view(np.uint64))
    assert bad.size == 0, f"{bad.size} of {x.size} differ, e.g. x={x[bad[0]]!r}"


def table(name: str) -> list[str]:
    text = HEADER.read_text()
    body = re.search(rf"{name}\[\d+\] = \{{(.*?)\}};", text, re.DOTALL).group(1)
    return [v for v in re.split(r"[,\s]+", body) if v]


def test_tables_are_their_definitions():
    mpmath = pytest.importorskip("mpmath")
    from mpmath.libmp import to_float

    mpmath.mp.prec = 300

    def rn(v):
        return to_float(v._mpf_, rnd="n")

    def u64(v: float) -> int:
        return int(np.float64(v).view(np.uint64))

    sincos = [float.fromhex(v) for v in table("fvm_sincos_table")]
    for i in range(110):
        x = mpmath.mpf(i) / 128
        sn, cs = rn(mpmath.sin(x)), rn(mpmath.cos(x))
        assert sincos[4 * i:4 * i + 4] == [sn, rn(mpmath.sin(x) - sn), cs, rn(mpmath.cos(x) - cs)], i
    log = [float.fromhex(v) for v in table("fvm_log_table")]
    for i in range(128):
        invc, logc, logctail = log[3 * i:3 * i + 3]
        assert (invc * 256).is_integer()  # 1/c = j/256: z/c - 1 is exact
        exact = -mpmath.log(mpmath.mpf(invc))
        assert logc == float(mpmath.nint(exact * 2**43) / 2**43) and logctail == rn(exact - logc), i
    for name, n, shift in (("fvm_exp_table", 128, 45), ("fvm_exp2_table", 32, 47)):
        entries = [int(v.removesuffix("ULL"), 16) for v in table(name)]
        for k in range(n):
            exact = mpmath.mpf(2) ** (mpmath.mpf(k) / n)
            top = (u64(rn(exact)) - (k << shift)) % 2**64
            if n == 128:  # exp's table also holds each entry's relative rounding error
                assert entries[2 * k] == u64(rn((exact - rn(exact)) / rn(exact))) and entries[2 * k + 1] == top, k
            else:
                assert entries[k] == top, k
    log2 = [float.fromhex(v) for v in table("fvm_log2_table")]
    for i in range(16):
        assert log2[2 * i + 1] == rn(-mpmath.log(mpmath.mpf(log2[2 * i]), 2)), i
