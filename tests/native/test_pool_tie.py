"""pool.h's choice between the caller alone and the worker pool when both ways measure the same time per env: the
pool is kept (the way that scales with the batch), and only the caller alone is tried now and then."""

import ctypes

SOURCE = r"""
#define _GNU_SOURCE
#include "pool.h"
static int job(const void* j, int lo, int hi) { (void)j; (void)lo; (void)hi; return 0; }
/* One call's choice (0: the caller alone, 1: the pool), the way taken timed at t0 or t1 ns per env as in
 * fv_pool_run (not the first call after a change of way). */
int choose(double t0, double t1) {
    int kind, timed, way = fv_pool_choose(job, &kind, &timed);
    if (timed) fv_pool.kinds[kind].ns_per_env[way] = way ? t1 : t0;
    return way;
}
int probe_calls(void) { return FV_PROBE_CALLS; }
int probe_run(void) { return FV_PROBE_RUN; }
"""


def test_equal_timings_keep_the_pool(c_shim):
    lib = c_shim(SOURCE)
    lib.choose.argtypes = [ctypes.c_double, ctypes.c_double]
    first, run = lib.probe_calls(), lib.probe_run()
    ways = [lib.choose(7.0, 7.0) for _ in range(1000)]
    assert ways[:4] == [1, 1, 0, 0]  # the pool measured first, then the caller alone
    assert ways[4] == 1  # a tie: the pool
    # from then on the pool, but for runs of FV_PROBE_RUN calls of the caller alone, the first at FV_PROBE_CALLS
    alone = [c for c in range(4, 1000) if ways[c] == 0]
    assert alone and alone[0] == first and ways[first:first + run] == [0] * run and ways[first + run] == 1
    assert len(alone) < 1000 // 8
