"""pool.h's choice between the caller alone and the worker pool, driven with made-up timings: the faster way
is taken, the other is tried now and then, less and less often while the tries change nothing (a try of the pool
can cost a scheduler time slice on a busy machine), and as often as at first once a try changes the choice."""

from __future__ import annotations

import ctypes

import pytest

SOURCE = r"""
#define _GNU_SOURCE
#include "pool.h"
static int job(const void* j, int lo, int hi) { (void)j; (void)lo; (void)hi; return 0; }
/* One call's choice (0: the caller alone, 1: the pool) on a machine where the caller alone takes t0 and the pool
 * t1 ns per env: as in fv_pool_run, only the way taken is timed (not the first call after a change of way). */
int choose(double t0, double t1) {
    int kind, timed, way = fv_pool_choose(job, &kind, &timed);
    if (timed) fv_pool.kinds[kind].ns_per_env[way] = way ? t1 : t0;
    return way;
}
unsigned probe_every(void) { return fv_pool.kinds[0].probe_every; }
int probe_calls(void) { return FV_PROBE_CALLS; }
int probe_max(void) { return FV_PROBE_MAX; }
int probe_run(void) { return FV_PROBE_RUN; }
"""


@pytest.fixture
def pool(c_shim):
    lib = c_shim(SOURCE)
    lib.choose.argtypes = [ctypes.c_double, ctypes.c_double]
    return lib


def tries(ways: list[int], faster: int) -> list[int]:
    """The calls at which a try of the slower way began."""
    return [c for c, way in enumerate(ways) if way != faster and (c == 0 or ways[c - 1] == faster)]


def test_tries_grow_rarer_while_they_change_nothing(pool):
    first, cap, run = pool.probe_calls(), pool.probe_max(), pool.probe_run()
    ways = [pool.choose(10.0, 20.0) for _ in range(40_000)]  # the caller alone is twice as fast throughout
    # the pool measured first (its first call untimed: it starts the workers), then the caller alone
    assert ways[:4] == [1, 1, 0, 0]
    begun = [c + 4 for c in tries(ways[4:], 0)]
    expected, at, every = [], first, first
    while at < 40_000:
        expected.append(at)
        at, every = at + every, min(2 * every, cap)
    assert begun == expected  # 64, 128, 256, ... then every 4,096 calls
    assert all(ways[c:c + run] == [1] * run and ways[c + run] == 0 for c in begun)  # FV_PROBE_RUN calls a try
    assert pool.probe_every() == cap
    assert sum(ways) == 2 + run * len(begun)  # the pool only in its first calls and in the tries


def test_a_try_that_changes_the_choice_resets_the_interval(pool):
    for _ in range(3000):  # the caller alone faster: tries already 1,024+ calls apart
        pool.choose(10.0, 20.0)
    assert pool.probe_every() >= 1024
    ways = []
    for _ in range(5000):  # a competitor leaves: the pool is now faster, which the next try shows
        ways.append(pool.choose(10.0, 5.0))
    assert ways[-1] == 1 and pool.probe_every() <= 2 * pool.probe_calls()


REUSE_SOURCE = r"""
#define _GNU_SOURCE
#include "pool.h"
#define JOB(n) static int job##n(const void* j, int lo, int hi) { (void)j; (void)lo; (void)hi; return n; }
JOB(0) JOB(1) JOB(2) JOB(3) JOB(4)
static fv_chunk_fn jobs[5] = {job0, job1, job2, job3, job4};
/* choose() of the first source, for job function f of five (more than the FV_JOB_KINDS slots). */
int choose_of(int f, double t0, double t1) {
    int kind, timed, way = fv_pool_choose(jobs[f], &kind, &timed);
    if (timed) fv_pool.kinds[kind].ns_per_env[way] = way ? t1 : t0;
    return way;
}
int job_kinds(void) { return FV_JOB_KINDS; }
int probe_calls(void) { return FV_PROBE_CALLS; }
"""


def test_a_job_function_that_takes_over_a_used_slot_starts_with_no_timings(c_shim):
    """With every slot taken, a new job function takes the last one over: it measures both ways afresh (the pool
    first, then the caller alone) and tries the slower way first after FV_PROBE_CALLS calls, whatever the slot's
    previous function had measured or however rare its tries had grown."""
    lib = c_shim(REUSE_SOURCE)
    lib.choose_of.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_double]
    kinds, first = lib.job_kinds(), lib.probe_calls()
    assert kinds == 4
    for f in range(kinds):  # each slot's function: the caller alone 100 ns per env, the pool 1 ns (pool faster)
        for _ in range(3000):
            lib.choose_of(f, 100.0, 1.0)
    # the fifth function: the caller alone faster (10 vs 20), which the old slot's timings would contradict
    ways = [lib.choose_of(4, 10.0, 20.0) for _ in range(200)]
    assert ways[:4] == [1, 1, 0, 0]
    assert tries(ways[4:], 0)[0] + 4 == first


def test_equal_timings_keep_the_pool(pool):
    """When both ways measure the same time per env, the pool is kept (the way that scales with the batch), and
    only the caller alone is tried now and then: runs of FV_PROBE_RUN calls, the first at FV_PROBE_CALLS."""
    first, run = pool.probe_calls(), pool.probe_run()
    ways = [pool.choose(7.0, 7.0) for _ in range(1000)]
    assert ways[:4] == [1, 1, 0, 0]  # the pool measured first, then the caller alone
    assert ways[4] == 1  # a tie: the pool
    alone = [c for c in range(4, 1000) if ways[c] == 0]
    assert alone and alone[0] == first and ways[first:first + run] == [0] * run and ways[first + run] == 1
    assert len(alone) < 1000 // 8
