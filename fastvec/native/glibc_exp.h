/* glibc_exp.h: exp and log1p in double precision that return glibc's bits (its FMA build, as glibc_math.h's
 * functions; exp shares pow's 2^(i/128) table), on the CPU and on the GPU.
 *
 * Why: MPE's contact force is NumPy's logaddexp(0, x), which calls libm's exp and log1p (mpe_common.h), and its
 * off-screen penalty np.exp; fastvec's MPE worlds follow mpe2's only with the same roundings.
 * optimized-routines' exp and fdlibm's log1p, written out with an explicit fma() wherever glibc's FMA build fuses
 * a multiply and an add. Both match libm everywhere, subnormal results included (tests/mpe/test_mpe_math.py). */
#ifndef FASTVEC_GLIBC_EXP_H
#define FASTVEC_GLIBC_EXP_H
#include "glibc_math.h"

/* exp: x = k ln2 / 128 + r, 2^(k/128) from exp's table, exp(r) by a degree-5 polynomial with the table's
 * tail; |x| >= 512 goes through the scaled path that keeps over- and underflowing results exact. */
FV_FN double fvm_exp_special(double tmp, fv_u64 sbits, fv_u64 ki) {
    /* glibc's FMA build fuses the first branch's multiply-add and not the second's */
    if ((ki & 0x80000000ULL) == 0) { /* k > 0: scale's exponent may have overflowed by up to 460 */
        double scale = fvm_double(sbits - (1009ULL << 52));
        return 0x1p1009 * fma(scale, tmp, scale);
    }
    double scale = fvm_double(sbits + (1022ULL << 52));
    double y = scale + scale * tmp;
    if (y < 1.0) { /* a subnormal result: round once, at its own precision */
        double lo = scale - y + scale * tmp;
        double hi = 1.0 + y;
        lo = ((1.0 - hi) + y) + lo;
        y = (hi + lo) - 1.0;
        if (y == 0.0) y = 0.0;
    }
    return 0x1p-1022 * y;
}

/* glibc's exp(x), which NumPy's logaddexp calls. */
FV_FN double fv_exp(double x) {
    unsigned abstop = (unsigned)(fvm_bits(x) >> 52) & 0x7ffu;
    int special = 0;
    if (abstop - 0x3c9u >= 0x408u - 0x3c9u) { /* |x| < 2^-54, or |x| >= 512 */
        if (abstop < 0x3c9u) return 1.0 + x;
        if (abstop >= 0x409u) { /* |x| >= 1024: 0, infinity or NaN */
            if (fvm_bits(x) == 0xfff0000000000000ULL) return 0.0;
            if (abstop >= 0x7ffu) return 1.0 + x;
            return fvm_bits(x) >> 63 ? 0.0 : (double)FV_INF; /* underflow, overflow */
        }
        special = 1;
    }
    double kd = fma(FVM_INVLN2N, x, FVM_SHIFT);
    fv_u64 ki = fvm_bits(kd);
    kd -= FVM_SHIFT;
    double r = fma(kd, FVM_NEGLN2LON, fma(kd, FVM_NEGLN2HIN, x));
    int idx = 2 * (int)(ki & 127);
    double tail = fvm_double(fvm_exp_table[idx]);
    fv_u64 sbits = fvm_exp_table[idx + 1] + (ki << 45);
    double r2 = r * r;
    double tmp = fma(r2 * r2, fma(r, FVM_C5, FVM_C4), fma(r2, fma(r, FVM_C3, FVM_C2), tail + r));
    if (special) return fvm_exp_special(tmp, sbits, ki);
    double scale = fvm_double(sbits);
    return fma(scale, tmp, scale);
}

/* log1p: 1 + x = 2^k (1 + f) with sqrt(2)/2 < 1 + f < sqrt(2) (a correction c for the rounding of 1 + x), then
 * log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))) with s = f / (2 + f) and R fdlibm's polynomial of degree 7. */
#define FVM_L1P_LN2HI 6.93147180369123816490e-01
#define FVM_L1P_LN2LO 1.90821492927058770002e-10
#define FVM_LP1 6.666666666666735130e-01
#define FVM_LP2 3.999999999940941908e-01
#define FVM_LP3 2.857142874366239149e-01
#define FVM_LP4 2.222219843214978396e-01
#define FVM_LP5 1.818357216161805012e-01
#define FVM_LP6 1.531383769920937332e-01
#define FVM_LP7 1.479819860511658591e-01

FV_FN int fvm_high(double x) { return (int)(fvm_bits(x) >> 32); }
FV_FN double fvm_with_high(double x, int high) {
    return fvm_double((fvm_bits(x) & 0xffffffffULL) | ((fv_u64)(unsigned)high << 32));
}

/* glibc's log1p(x), which NumPy's logaddexp calls. */
FV_FN double fv_log1p(double x) {
    int hx = fvm_high(x), ax = hx & 0x7fffffff, k = 1, hu = 0;
    double f = 0.0, c = 0.0;
    if (hx < 0x3FDA827A) { /* x < 0.41422 */
        if (ax >= 0x3ff00000) return x == -1.0 ? -(double)FV_INF : (x - x) / (x - x); /* -inf, NaN */
        if (ax < 0x3e200000) return ax < 0x3c900000 ? x : fma(-(x * x), 0.5, x); /* |x| < 2^-29 */
        if (hx > 0 || hx <= (int)0xbfd2bec3) k = 0, f = x, hu = 1; /* -0.2929 < x < 0.41422 */
    } else if (hx >= 0x7ff00000) {
        return x + x;
    }
    if (k != 0) {
        double u;
        if (hx < 0x43400000) {
            u = 1.0 + x;
            hu = fvm_high(u);
            k = (hu >> 20) - 1023;
            c = k > 0 ? 1.0 - (u - x) : x - (u - 1.0);
            c /= u;
        } else {
            u = x;
            hu = fvm_high(u);
            k = (hu >> 20) - 1023;
            c = 0.0;
        }
        hu &= 0x000fffff;
        if (hu < 0x6a09e) {
            u = fvm_with_high(u, hu | 0x3ff00000);
        } else {
            k += 1;
            u = fvm_with_high(u, hu | 0x3fe00000);
            hu = (0x00100000 - hu) >> 2;
        }
        f = u - 1.0;
    }
    double hfsq = 0.5 * f * f, dk = (double)k;
    if (hu == 0) { /* |f| < 2^-20 */
        if (f == 0.0) return k == 0 ? 0.0 : fma(dk, FVM_L1P_LN2HI, fma(dk, FVM_L1P_LN2LO, c));
        double R = hfsq * fma(-f, 0.66666666666666666, 1.0);
        return k == 0 ? f - R : fma(dk, FVM_L1P_LN2HI, -((R - fma(dk, FVM_L1P_LN2LO, c)) - f));
    }
    double s = f / (2.0 + f), z = s * s;
    double z2 = z * z, z4 = z2 * z2, z6 = z4 * z2;
    double R = fma(z6, fma(z, FVM_LP7, FVM_LP6), fma(z4, fma(z, FVM_LP5, FVM_LP4),
                                                    fma(z, FVM_LP1, z2 * fma(z, FVM_LP3, FVM_LP2))));
    double sr = s * (hfsq + R);
    if (k == 0) return f - (hfsq - sr);
    return fma(dk, FVM_L1P_LN2HI, -((hfsq - (sr + fma(dk, FVM_L1P_LN2LO, c))) - f));
}

#endif /* FASTVEC_GLIBC_EXP_H */
