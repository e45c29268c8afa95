/* math32.h: sin and cos in float32 that give the same bits on the CPU and the GPU, for the envs' opt-in
 * float32 variants (cartpole.h, acrobot.h, the mountain cars, pendulum.h): no libm, and the fused
 * multiply-adds are explicit fmaf (one IEEE rounding on every target; CPU builds use -ffp-contract=off,
 * nvcc --fmad=false). */
#ifndef FASTVEC_MATH32_H
#define FASTVEC_MATH32_H
#include "fastvec.h"

/* pi/2 in three parts for the reduction x = k pi/2 + r (Cody-Waite): the first two have few
 * significant bits, so k * part is exact for |k| < 2^15; r is then within float rounding of the
 * true remainder up to |x| ~ 1e4. */
#define FV_F_INV_PIO2 0.636619772367581382f /* 2 / pi */
#define FV_F_PIO2_1 1.5703125f
#define FV_F_PIO2_2 4.837512969970703125e-4f
#define FV_F_PIO2_3 7.54978995489188216e-8f
#define FV_F_ROUND_MAGIC 12582912.0f /* 1.5 * 2^23: adding then subtracting it rounds to an integer */
#define FV_F_PIO4 0.785398163397448310f

/* sin and cos of x in float32: reduced to |r| <= pi/4, then Taylor polynomials to r^11 / r^12
 * (truncation < 1e-10) in fmaf steps, within ~1 float ulp of the true values; branch-free on the CPU
 * (GCC 12 vectorises it across envs). On the GPU |x| <= pi/4 skips the reduction, whose k is then 0 and
 * r = x exactly: the same bits. */
FV_FN void fv_sincosf(float x, float* sin_x, float* cos_x) {
    float k = 0.0f, r = x;
#ifdef __CUDACC__
    if (fabsf(x) > FV_F_PIO4)
#endif
    {
        k = (x * FV_F_INV_PIO2 + FV_F_ROUND_MAGIC) - FV_F_ROUND_MAGIC;
        r = ((x - k * FV_F_PIO2_1) - k * FV_F_PIO2_2) - k * FV_F_PIO2_3;
    }
    float r2 = r * r;
    float ps = fmaf(r2, -1.0f / 39916800, 1.0f / 362880);
    ps = fmaf(r2, ps, -1.0f / 5040);
    ps = fmaf(r2, ps, 1.0f / 120);
    ps = fmaf(r2, ps, -1.0f / 6);
    float s = fmaf(r * r2, ps, r);
    float pc = fmaf(r2, 1.0f / 479001600, -1.0f / 3628800);
    pc = fmaf(r2, pc, 1.0f / 40320);
    pc = fmaf(r2, pc, -1.0f / 720);
    pc = fmaf(r2, pc, 1.0f / 24);
    pc = fmaf(r2, pc, -0.5f);
    float c = fmaf(r2, pc, 1.0f);
    /* k mod 4 as k4 in {-2, ..., 2}; sin(r + q pi/2) is s, c, -s, -c and cos is c, -s, -c, s. */
    float k4 = k - 4.0f * ((k * 0.25f + FV_F_ROUND_MAGIC) - FV_F_ROUND_MAGIC);
    int odd = (k4 == 1.0f) | (k4 == -1.0f);
    float sin_q = odd ? c : s, cos_q = odd ? s : c;
    *sin_x = ((k4 < -0.5f) | (k4 > 1.5f)) ? -sin_q : sin_q; /* q = 2 or 3 */
    *cos_x = ((k4 > 0.5f) | (k4 < -1.5f)) ? -cos_q : cos_q; /* q = 1 or 2 */
}

/* cos of x in float32: fv_sincosf's cos (the same bits; the sine's polynomial is dead code the compiler drops). */
FV_FN float fv_cosf(float x) {
    float s, c;
    fv_sincosf(x, &s, &c);
    return c;
}

#endif /* FASTVEC_MATH32_H */
