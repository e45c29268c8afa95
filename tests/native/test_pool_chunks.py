"""pool.h's split of a call into chunks, through a C shim that records every chunk run: each env exactly once,
in whole 64-env chunks, as few envs a chunk as FV_CHUNKS_PER_THREAD chunks a thread allow; small batches and one
thread on the caller alone; and fv_now_ns on CLOCK_MONOTONIC in nanoseconds (Python's time.monotonic_ns)."""

from __future__ import annotations

import ctypes
import math
import time

import numpy as np
import pytest

SOURCE = r"""
#define _GNU_SOURCE
#include <string.h>
#include "pool.h"
#define MAX_ENVS 70000
static int los[4 * FV_MAX_CHUNKS], his[4 * FV_MAX_CHUNKS], calls, runs[MAX_ENVS];
static int job(const void* j, int lo, int hi) {
    (void)j;
    int c = __atomic_fetch_add(&calls, 1, __ATOMIC_SEQ_CST);
    los[c] = lo, his[c] = hi;
    for (int i = lo; i < hi; i++) __atomic_fetch_add(&runs[i], 1, __ATOMIC_SEQ_CST);
    return hi - lo;
}
static void clear(void) { calls = 0; memset(runs, 0, sizeof runs); }
/* One call through fv_pool_run (the pool's choice of way included) with `threads` threads a call. */
int run(int n, int threads) { clear(); fv_pool.threads = threads; return fv_pool_run(job, NULL, n); }
/* One call with the workers, whatever the timings (FV_CHUNKS_PER_THREAD, fv_pool_run's count, or per_thread). */
int run_team(int n, int threads) { clear(); return fv_pool_run_team(job, NULL, n, threads, FV_CHUNKS_PER_THREAD); }
int run_team_chunks(int n, int threads, int per_thread) {
    clear();
    return fv_pool_run_team(job, NULL, n, threads, per_thread);
}
int started(void) { return fv_pool.started; }
int chunks_per_thread(void) { return FV_CHUNKS_PER_THREAD; }
int max_chunks(void) { return FV_MAX_CHUNKS; }
int par_min_envs(void) { return FV_PAR_MIN_ENVS; }
int recorded(int* lo, int* hi, int* counts, int n) {
    memcpy(lo, los, sizeof(int) * calls), memcpy(hi, his, sizeof(int) * calls), memcpy(counts, runs, sizeof(int) * n);
    return calls;
}
long long now_ns(void) { return fv_now_ns(); }
"""


@pytest.fixture
def pool(c_shim):
    return c_shim(SOURCE)


def chunks(pool, n: int) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The (lo, hi) of every chunk of the last call, in order, and how often each env of [0, n) was run."""
    lo, hi, counts = (np.zeros(4 * pool.max_chunks(), np.int32), np.zeros(4 * pool.max_chunks(), np.int32),
                      np.zeros(n, np.int32))
    ptr = ctypes.POINTER(ctypes.c_int)
    calls = pool.recorded(lo.ctypes.data_as(ptr), hi.ctypes.data_as(ptr), counts.ctypes.data_as(ptr), n)
    return sorted(zip(lo[:calls].tolist(), hi[:calls].tolist())), counts


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_a_pooled_call_runs_every_env_once_in_the_fewest_envs_a_chunk_of_whole_64_env_blocks(pool, threads):
    """The team (the caller and threads - 1 workers) splits [0, n) into contiguous chunks of a multiple of 64 envs
    (no two threads write one cache line of a byte-per-env output), the smallest such size that makes at most
    FV_CHUNKS_PER_THREAD chunks a thread (FV_MAX_CHUNKS in all), the last chunk short; the call returns the sum of
    the chunks' results."""
    target = min(threads * pool.chunks_per_thread(), pool.max_chunks())
    for n in (256, 257, 319, 520, 1000, 1025, 4096, 65537):
        assert pool.run_team(n, threads) == n
        assert pool.started() == threads - 1
        size = math.ceil(math.ceil(n / target) / 64) * 64
        got, counts = chunks(pool, n)
        assert got == [(lo, min(lo + size, n)) for lo in range(0, n, size)], n
        assert len(got) <= target and (counts == 1).all(), n


def test_small_batches_and_one_thread_run_on_the_caller_alone_in_one_call(pool):
    """Below FV_PAR_MIN_ENVS (256) envs, or with one thread, one call over [0, n); from 256 envs on two threads the
    first call of a job takes the pool (its chunks)."""
    assert pool.par_min_envs() == 256
    for n, threads in ((255, 2), (1, 8), (5000, 1)):
        assert pool.run(n, threads) == n
        got, counts = chunks(pool, n)
        assert got == [(0, n)] and (counts == 1).all()
    assert pool.run(256, 2) == 256
    got, counts = chunks(pool, 256)
    assert got == [(0, 64), (64, 128), (128, 192), (192, 256)] and (counts == 1).all()


def test_the_pools_clock_is_monotonic_nanoseconds(pool):
    """fv_now_ns (the spins' and the timings' clock) reads CLOCK_MONOTONIC in ns, as time.monotonic_ns does."""
    pool.now_ns.restype = ctypes.c_longlong
    for _ in range(100):
        before = time.monotonic_ns()
        now = pool.now_ns()
        after = time.monotonic_ns()
        assert before <= now <= after


def test_a_call_with_fewer_threads_than_workers_started_cuts_for_its_own_team(pool):
    """Workers once started stay: a later call of fewer threads uses a team of its own count (FV_CHUNKS_PER_THREAD
    chunks each), never one sized by the workers running; a call of more threads starts the missing workers."""
    n, most = 4096, 0
    for threads in (3, 2, 8, 2, 3, 7):
        most = max(most, threads)
        assert pool.run_team(n, threads) == n
        assert pool.started() == most - 1
        size = math.ceil(math.ceil(n / (threads * pool.chunks_per_thread())) / 64) * 64
        got, counts = chunks(pool, n)
        assert got == [(lo, min(lo + size, n)) for lo in range(0, n, size)] and (counts == 1).all(), threads


@pytest.mark.parametrize("threads", [2, 3, 16])
def test_more_chunks_a_thread_cut_whole_64_env_blocks_down_to_one_block_a_chunk(pool, threads):
    """fv_pool_run_chunks' per_thread (MuJoCo's batch asks for FV_MAX_CHUNKS, each env given 64 indices): as many
    chunks as per_thread a thread allow, up to FV_MAX_CHUNKS in all, never under one 64-env block; at 4 a thread
    the split is fv_pool_run's."""
    for n, per_thread in ((64 * 64, 1024), (64 * 256, 1024), (64 * 1000, 1024), (64 * 1090, 1024), (4096, 4),
                          (64 * 256, 32)):
        assert pool.run_team_chunks(n, threads, per_thread) == n
        target = min(threads * per_thread, pool.max_chunks())
        size = max(64, math.ceil(math.ceil(n / target) / 64) * 64)
        got, counts = chunks(pool, n)
        assert got == [(lo, min(lo + size, n)) for lo in range(0, n, size)] and (counts == 1).all(), (n, per_thread)
        if per_thread == 1024 and n <= 64 * pool.max_chunks():
            assert size == 64  # an env a chunk, however few envs a thread has
