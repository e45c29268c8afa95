/* cartpole_simd_exact.h: a branch-free form of glibc_math.h's sin and cos over EVERY range (same bits: in
 * every range, sin and cos of x take one do_sin and one do_cos between them, so both are computed and
 * assigned by range and quadrant). Measured on a 2-core AVX-512 VM (GCC 12, -O3 -march=native, 4,096 envs,
 * one thread, env_step alone): ~15-17M steps/s, slower than the branchy fv_sin/fv_cos (~17-21M): GCC left
 * its table reads (through a pointer, 32-bit index) scalar. What cartpole.h ships instead: fvm_sincos_mid,
 * only the range of a live pole, table reads by 64-bit index (vector gathers), ~100M steps/s for env_step
 * alone, the other states stepped one at a time by batch.h (SIMD_STEP_VALID).
 * To try it: include this after glibc_math.h and call fv_sincos_branchless in cartpole.h's step. */
#include "glibc_math.h"

/* Branch-free sin and cos of one angle with fv_sin's and fv_cos's bits, for code that must vectorise
 * (cartpole.h's SIMD_STEP): in every range, sin and cos of x take one do_sin and one do_cos between them,
 * so both are computed (Taylor and table forms of do_sin, then a select) and assigned by the range and
 * quadrant. Beyond |x| = 105414350 it keeps the reduction (not glibc's bits there). */
FV_FN void fvm_do_sin_cos_nb(double a, double da, double b, double db, double* sin_a, double* cos_b) {
    double ua = fabs(a), u = FVM_BIG + ua, v = ua - (u - FVM_BIG);
    unsigned row = (unsigned)fvm_bits(u);
    const double* t = fvm_sincos_table + 4 * (row < 109u ? row : 109u);
    double dxs = a <= 0 ? -da : da, xx = v * v;
    double s = v + fma(v * xx, fma(xx, FVM_SN5, FVM_SN3), dxs);
    double c = fma(v, dxs, xx * fma(xx, fma(xx, FVM_CS6, FVM_CS4), FVM_CS2));
    double table_sin = copysign(t[0] + fma(s, t[2], fma(-c, t[0], fma(s, t[3], t[1]))), a);
    *sin_a = ua < 0.126 ? fvm_taylor_sin(a, da) : table_sin;
    double ub = FVM_BIG + fabs(b), xc = (fabs(b) - (ub - FVM_BIG)) + (b < 0 ? -db : db);
    unsigned row_b = (unsigned)fvm_bits(ub);
    const double* tb = fvm_sincos_table + 4 * (row_b < 109u ? row_b : 109u);
    double xxc = xc * xc;
    double sc = fma(xc * xxc, fma(xxc, FVM_SN5, FVM_SN3), xc);
    double cc = xxc * fma(xxc, fma(xxc, FVM_CS6, FVM_CS4), FVM_CS2);
    *cos_b = tb[2] + fma(-tb[0], sc, fma(-tb[2], cc, fma(-sc, tb[1], tb[3])));
}

FV_FN void fv_sincos_branchless(double x, double* sin_x, double* cos_x) {
    unsigned k = (unsigned)(fvm_bits(x) >> 32) & 0x7fffffffu;
    double a, da, y = FVM_HP0 - fabs(x), ya = y + FVM_HP1, ds, dc;
    int n = fvm_reduce(x, &a, &da), small = k < 0x3feb6000u, middle = !small & (k < 0x400368fdu);
    int reduced = !small & !middle, odd = n & 1;
    fvm_do_sin_cos_nb(small ? x : (middle ? ya : a), small ? 0.0 : (middle ? (y - ya) + FVM_HP1 : da),
                      small ? x : (middle ? y : a), small ? 0.0 : (middle ? FVM_HP1 : da), &ds, &dc);
    double s = small ? ds : (middle ? copysign(dc, x) : (odd ? dc : ds));
    double c = small ? dc : (middle ? ds : (odd ? ds : dc));
    s = (reduced & ((n & 2) != 0)) ? -s : s;
    c = (reduced & (((n + 1) & 2) != 0)) ? -c : c;
    *sin_x = k < 0x3e500000u ? x : s;
    *cos_x = k < 0x3e400000u ? 1.0 : c;
}
