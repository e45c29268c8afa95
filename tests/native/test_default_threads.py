"""cpu.default_threads without FASTVEC_NUM_THREADS: as many threads as CPUs in this process's affinity mask (one
for a process pinned to one CPU), os.cpu_count() where there are no affinity masks, 1 where that is unknown."""

import os

import pytest

from fastvec.native import cpu


@pytest.fixture
def no_override(monkeypatch):
    monkeypatch.delenv("FASTVEC_NUM_THREADS", raising=False)
    return monkeypatch


@pytest.mark.parametrize("cpus", [{0}, {5}, {0, 1}, {1, 3, 7}], ids=["one", "one-not-0", "two", "three"])
def test_threads_follow_the_affinity_mask_of_this_process(no_override, cpus):
    asked = []

    def affinity(pid):
        asked.append(pid)
        return set(cpus)

    no_override.setattr(os, "sched_getaffinity", affinity)
    assert cpu.default_threads() == len(cpus)  # pinned to one CPU (taskset -c 5): one thread, not two
    assert all(pid in (0, os.getpid()) for pid in asked)  # this process's mask, not another's


def test_threads_in_a_real_one_cpu_mask(no_override):
    """This thread pinned to one CPU for real (as taskset -c N would), its mask restored after."""
    mine = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mine)})
    try:
        assert cpu.default_threads() == 1
    finally:
        os.sched_setaffinity(0, mine)


@pytest.mark.parametrize("count,want", [(6, 6), (1, 1), (None, 1)])
def test_without_affinity_masks_the_cpu_count_or_one(no_override, count, want):
    no_override.delattr(os, "sched_getaffinity")
    no_override.setattr(os, "cpu_count", lambda: count)
    assert cpu.default_threads() == want
