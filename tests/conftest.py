"""Shared test set-up: a private compile cache for this run, so tests never depend on a user's cache (nor
on a fixed /tmp path another user could have made); the `gpu` marker: tests marked `gpu` are skipped
where PyCUDA or a CUDA GPU is missing; `c_shim`, which builds small C files against fastvec/native's headers;
`load_benchmark`, a script of benchmarks/ as a module; and `minibatch_sources`, the rollout rows of a minibatch
of sequences, the oracle of the gather kernel's tests."""

import atexit
import ctypes
import importlib.util
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
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


@pytest.fixture(scope="session")
def c_shim(tmp_path_factory):
    """build(source) -> ctypes.CDLL of C `source` compiled with -I fastvec/native and the CPU backend's
    floating-point flags (no contraction, no errno); skips without a C compiler."""
    from fastvec.native import NATIVE_DIR

    cc = shutil.which("cc") or shutil.which("gcc")

    def build(source: str) -> ctypes.CDLL:
        if cc is None:
            pytest.skip("no C compiler")
        tmp = tmp_path_factory.mktemp("shim")
        (tmp / "shim.c").write_text(source)
        out = tmp / "shim.so"
        subprocess.run([cc, "-O2", "-std=c99", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno",
                        f"-I{NATIVE_DIR}", str(tmp / "shim.c"), "-o", str(out), "-lm"], check=True,
                       capture_output=True)
        return ctypes.CDLL(str(out))

    return build


@pytest.fixture(scope="session")
def load_benchmark():
    """load_benchmark("train_peers") -> benchmarks/train_peers.py as a module (benchmarks/ is not a package)."""
    def load(name: str):
        path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load


def minibatch_sources(perm: np.ndarray, first: int, seqs_per_mb: int, rows: int, bptt: int) -> np.ndarray:
    """(K, Bm): the rollout index t * R + r of each row of the minibatch of sequences perm[first : first + Bm]:
    sequence q is segment q // R of rollout row q % R, its steps (q // R) * K .. + K - 1 (NumpyTrainer.to_segments'
    order, which gather_minibatch_kernel copies)."""
    seqs = perm[first:first + seqs_per_mb]
    return ((seqs // rows) * bptt)[None, :] * rows + np.arange(bptt)[:, None] * rows + (seqs % rows)[None, :]
