/* rollout_on_cpu.h: what a harness needs to build the trainer's env-dependent kernels (rollout.cu, with the env ENV
 * named on the command line, its defines too, and batch.h) for the CPU on cuda_on_cpu.h's threads: CUDA's qualifiers
 * the env and batch files' GPU branches, and the trainer's .cu files rollout.cu includes. */
#include "cuda_on_cpu.h"

#include <vector_types.h> /* uint4, as the trainer's cuda_bf16.h brings it */
#define __constant__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __ldcg(p) (*(p))
/* CUDA's bit-cast intrinsics, which the GPU branches of env files use. */
static long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, 8); return u; }
static double __longlong_as_double(long long u) { double x; memcpy(&x, &u, 8); return x; }
static unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, 4); return u; }
static float __uint_as_float(unsigned u) { float x; memcpy(&x, &u, 4); return x; }
#define __CUDACC__ 1 /* the GPU branches of the env and batch files, as the trainer's module compiles them */
#include ENV
#include "batch.h"
#undef __CUDACC__ /* the trainer's files take cuda_bf16.h's host build, as heads_on_cpu.cpp's do */
#include "common.cu"
#include "policy.cu"
#include "ppo.cu"
#include "heads.cu" /* a Box or MultiDiscrete env's samplers */
#include "teams.cu"
#include "rollout.cu"
