"""pool.h's per-way timing that decides between the caller alone and the pool: the first timed call of a way sets its
mean ns per env, each later one moves it a sixteenth of the way to the new call's time (15/16 old + 1/16 new).
Driven through fv_pool_run with a job that busy-waits a known time per env."""

from __future__ import annotations

import ctypes

import pytest

SOURCE = r"""
#define _GNU_SOURCE
#include "pool.h"
/* Busy-waits *j ns for each env of [lo, hi). */
static int job(const void* j, int lo, int hi) {
    long long want = *(const long long*)j * (hi - lo), start = fv_now_ns();
    while (fv_now_ns() - start < want) {
    }
    return hi - lo;
}
/* One call of n envs through fv_pool_run (2 threads) in `way` (the other way measured far slower, no try due, the
 * same way as the last call: the call is timed), from the way's mean `mean`; returns the way's mean after it. */
double mean_after(int way, double mean, long long ns_per_env, int n) {
    fv_pool.threads = 2;
    int kind, timed;
    fv_pool_choose(job, &kind, &timed); /* the job's kind, registered */
    fv_pool.kinds[kind].ns_per_env[way] = mean;
    fv_pool.kinds[kind].ns_per_env[!way] = 1e12;
    fv_pool.kinds[kind].last_way = way, fv_pool.kinds[kind].trial_left = 0, fv_pool.kinds[kind].probe_from = -1;
    fv_pool.kinds[kind].next_probe = fv_pool.kinds[kind].calls + 1000000;
    if (fv_pool_run(job, &ns_per_env, n) != n) return -1.0;
    return fv_pool.kinds[kind].ns_per_env[way];
}
"""

N = 4096  # envs a call: past FV_PAR_MIN_ENVS
PER_ENV = 1000  # ns the job takes an env: 4 ms a call
SLACK = 100_000  # ns per env a call may overrun (a busy CI machine's preemption: 400 ms a call)


@pytest.fixture
def pool(c_shim):
    lib = c_shim(SOURCE)
    lib.mean_after.restype = ctypes.c_double
    lib.mean_after.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_longlong, ctypes.c_int]
    return lib


@pytest.mark.parametrize("way", [0, 1], ids=["caller_alone", "pool"])
def test_a_ways_first_timed_call_sets_its_mean_and_later_ones_move_it_a_sixteenth(pool, way):
    # the pool's two threads share the envs: its call takes at least half the envs' time
    fastest = PER_ENV if way == 0 else PER_ENV / 2
    first = pool.mean_after(way, 0.0, PER_ENV, N)
    assert fastest <= first <= PER_ENV + SLACK
    old = 1_000_000.0  # far above any call's time, so that the sixteenth shows past SLACK
    moved = pool.mean_after(way, old, PER_ENV, N)
    assert (15 * old + fastest) / 16 <= moved <= (15 * old + PER_ENV + SLACK) / 16
    # a faster call pulls the mean down, never below the new time
    assert moved < old
