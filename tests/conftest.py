"""Shared test set-up: a private compile cache for this run, so tests never depend on a user's cache (nor
on a fixed /tmp path another user could have made), and the `gpu` marker: tests marked `gpu` are skipped
where PyCUDA or a CUDA GPU is missing."""

import atexit
import os
import shutil
import tempfile
from functools import lru_cache

import pytest

# A cache of this run's own (mkdtemp: mode 0700, a fresh name), removed at exit; a FASTVEC_CACHE_DIR the
# user set is kept (e.g. to reuse builds across runs).
if not os.environ.get("FASTVEC_CACHE_DIR"):
    _run_cache = tempfile.mkdtemp(prefix="fastvec-test-cache-")
    os.environ["FASTVEC_CACHE_DIR"] = _run_cache
    atexit.register(shutil.rmtree, _run_cache, ignore_errors=True)


@lru_cache(maxsize=None)
def gpu_available() -> bool:
    """PyCUDA imports and a CUDA device answers (no context is created)."""
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:  # no PyCUDA, no driver, no device
        return False


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not gpu_available():
        skip = pytest.mark.skip(reason="needs PyCUDA and a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
