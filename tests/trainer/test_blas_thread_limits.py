"""run.blas_threads (train.blas_threads): a positive count limits NumPy's BLAS through threadpoolctl to that many
threads, 0 (or less) leaves BLAS alone without asking threadpoolctl at all, and no threadpoolctl means no limit."""

import contextlib
import sys
from types import SimpleNamespace

import pytest

from fastvec.trainer import run


@pytest.fixture
def limits(monkeypatch):
    """A stand-in threadpoolctl recording each threadpool_limits call."""
    calls = []

    @contextlib.contextmanager
    def threadpool_limits(limits=None, user_api=None):
        calls.append((limits, user_api))
        yield
    monkeypatch.setitem(sys.modules, "threadpoolctl", SimpleNamespace(threadpool_limits=threadpool_limits))
    return calls


@pytest.mark.parametrize("count", [1, 2, 16])
def test_a_positive_count_limits_blas_to_that_many_threads(limits, count):
    with run.blas_threads(count):
        assert limits == [(count, "blas")]


@pytest.mark.parametrize("count", [0, -1])
def test_zero_or_less_leaves_blas_alone(limits, count):
    with run.blas_threads(count):
        pass
    assert limits == []


def test_without_threadpoolctl_there_is_no_limit(monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import raises ImportError
    with run.blas_threads(2) as inside:
        assert inside is None
