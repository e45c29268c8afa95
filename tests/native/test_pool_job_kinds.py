"""pool.h's table of job kinds (FV_JOB_KINDS slots of timings): each job function its own slot in order of first
call, a function past the table takes over the last slot and nothing past it, and every call's result stays whole
however many functions share the pool."""

from __future__ import annotations

import ctypes

import pytest

SOURCE = r"""
#define _GNU_SOURCE
#include "pool.h"
#define JOB(n) static int job##n(const void* j, int lo, int hi) { (void)j; return (n + 1) * (hi - lo); }
JOB(0) JOB(1) JOB(2) JOB(3) JOB(4) JOB(5)
static fv_chunk_fn jobs[6] = {job0, job1, job2, job3, job4, job5};
/* The slot fv_pool_choose gives job function f (one call, untimed). */
int kind_of(int f) { int kind, timed; fv_pool_choose(jobs[f], &kind, &timed); return kind; }
/* One call's way for f on a machine where the caller alone takes t0 and the pool t1 ns per env (as fv_pool_run
 * times it: only the way taken, not the first call after a change). */
int choose_of(int f, double t0, double t1) {
    int kind, timed, way = fv_pool_choose(jobs[f], &kind, &timed);
    if (timed) fv_pool.kinds[kind].ns_per_env[way] = way ? t1 : t0;
    return way;
}
/* Which job function slot k holds: 0..5, -1 for none. */
int slot_holds(int k) {
    for (int f = 0; f < 6; f++) if (fv_pool.kinds[k].fn == jobs[f]) return f;
    return fv_pool.kinds[k].fn == NULL ? -1 : -2;
}
/* The bytes of fv_pool from the end of its kinds table to the end of the pool (gen, done, claimed and the padding
 * before them), summed: a slot written past the table changes it. */
unsigned long long past_kinds(void) {
    const unsigned char* p = (const unsigned char*)(fv_pool.kinds + FV_JOB_KINDS);
    const unsigned char* end = (const unsigned char*)(&fv_pool + 1);
    unsigned long long sum = 0;
    for (; p < end; p++) sum = sum * 31 + *p;
    return sum;
}
int run(int f, int n, int threads) { fv_pool.threads = threads; return fv_pool_run(jobs[f], NULL, n); }
int job_kinds(void) { return FV_JOB_KINDS; }
"""


@pytest.fixture
def pool(c_shim):
    lib = c_shim(SOURCE)
    lib.choose_of.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_double]
    lib.past_kinds.restype = ctypes.c_ulonglong
    return lib


def test_each_job_function_gets_a_slot_of_its_own_in_order_of_first_call(pool):
    kinds = pool.job_kinds()
    assert kinds == 4
    assert [pool.slot_holds(k) for k in range(kinds)] == [-1] * kinds
    for f in (2, 0, 3, 1):
        pool.kind_of(f)
    assert [pool.slot_holds(k) for k in range(kinds)] == [2, 0, 3, 1]
    assert [pool.kind_of(f) for f in (0, 1, 2, 3, 0, 3)] == [1, 3, 0, 2, 1, 2]  # the same slot at every call


def test_a_function_past_the_table_takes_over_the_last_slot_and_writes_nothing_past_it(pool):
    """With all FV_JOB_KINDS slots taken, a fifth and a sixth function each take the last slot over (the first three
    keep theirs), and the pool's memory past the table (the job number, the chunk claims) is left as it was."""
    before = pool.past_kinds()
    assert [pool.kind_of(f) for f in range(4)] == [0, 1, 2, 3]
    assert pool.kind_of(4) == 3 and [pool.slot_holds(k) for k in range(4)] == [0, 1, 2, 4]
    assert pool.kind_of(5) == 3 and [pool.slot_holds(k) for k in range(4)] == [0, 1, 2, 5]
    assert pool.kind_of(3) == 3 and pool.kind_of(0) == 0  # the function put out comes back to the last slot
    assert [pool.slot_holds(k) for k in range(4)] == [0, 1, 2, 3]
    for _ in range(100):
        for f in range(6):
            assert pool.kind_of(f) == min(f, 3)
    assert pool.past_kinds() == before


def test_four_job_functions_each_keep_their_own_timings(pool):
    """Four functions called in turn, two faster on the caller alone and two with the pool: each measures both
    ways once (the pool first, then the caller alone) and then takes its own faster way until its first try, at
    FV_PROBE_CALLS calls; none of them starts its measurements over."""
    timings = {0: (10.0, 20.0), 1: (20.0, 10.0), 2: (10.0, 20.0), 3: (20.0, 10.0)}
    ways = {f: [] for f in timings}
    for _ in range(60):
        for f, (t0, t1) in timings.items():
            ways[f].append(pool.choose_of(f, t0, t1))
    for f, (t0, t1) in timings.items():
        faster = int(t1 < t0)
        assert ways[f][:4] == [1, 1, 0, 0], f
        assert ways[f][4:] == [faster] * 56, f


def test_pooled_calls_of_six_job_functions_each_return_their_whole_sum(pool):
    """fv_pool_run with two threads for six functions in turn (more than the table holds): every call's result is
    its function's sum over all envs, (f + 1) * n, on whichever way the pool chose."""
    for rep in range(30):
        for f in range(6):
            n = 256 + 64 * ((rep + f) % 7) + rep
            assert pool.run(f, n, 2) == (f + 1) * n, (rep, f, n)
