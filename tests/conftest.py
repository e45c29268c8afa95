"""Shared test set-up: a private compile cache, so tests never depend on a user's cache, and the `gpu`
marker: tests marked `gpu` are skipped where PyCUDA or a CUDA GPU is missing."""

import os
import tempfile
from functools import lru_cache

import pytest

os.environ.setdefault("FASTVEC_CACHE_DIR", os.path.join(tempfile.gettempdir(), "fastvec-test-cache"))


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
