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
