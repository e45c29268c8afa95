"""Shared test set-up: a private compile cache for this run, so tests never depend on a user's cache (nor
on a fixed /tmp path another user could have made); the `gpu` marker: tests marked `gpu` are skipped
where PyCUDA or a CUDA GPU is missing; `c_shim`, which builds small C files against fastvec/native's headers;
`env_warnings`, the compiler's warnings about an env file;
`load_benchmark`, a script of benchmarks/ as a module; `minibatch_sources`, the rollout rows of a minibatch
of sequences, the oracle of the gather kernel's tests; `mingru_layer_case`, one MinGRU layer's reference case;
`cuda_header` and `header_enums`, the CUDA, cuBLAS and NCCL headers the ctypes bindings are checked against; and
each test's stand-in `wandb` module taken out again."""

import atexit
import ctypes
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

# A cache of this run's own (mkdtemp: mode 0700, a fresh name), removed at exit; a FASTVEC_CACHE_DIR the
# user set is kept (e.g. to reuse builds across runs).
if not os.environ.get("FASTVEC_CACHE_DIR"):
    _run_cache = tempfile.mkdtemp(prefix="fastvec-test-cache-")
    os.environ["FASTVEC_CACHE_DIR"] = _run_cache
    atexit.register(shutil.rmtree, _run_cache, ignore_errors=True)

# SB3's learn() makes a log folder (empty at verbose 0) in the system temp dir unless SB3_LOGDIR names one: the
# tests' go to a folder of this run's, removed at exit, so that no run leaves folders behind.
if not os.environ.get("SB3_LOGDIR"):
    _sb3_logs = tempfile.mkdtemp(prefix="fastvec-test-sb3-logs-")
    os.environ["SB3_LOGDIR"] = _sb3_logs
    atexit.register(shutil.rmtree, _sb3_logs, ignore_errors=True)


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


# An env's env_reset and env_step as the CPU backend compiles them (-O3 and its floating-point flags), called from
# exported functions so that the compiler keeps them.
ENV_WARNINGS_DRIVER = r"""
#include "spaces.h"
int fv_test_step(State* s, fv_rng* r, const ACT_T* a, OBS_T* o, float* rw, float* st) {
    return env_step(s, r, a, o, rw, st);
}
void fv_test_reset(State* s, fv_rng* r, OBS_T* o) { env_reset(s, r, o); }
"""


@pytest.fixture(scope="session")
def env_warnings(tmp_path_factory):
    """env_warnings(env_file, defines) -> the compiler's -Wall warnings about an env file's reset and step (at -O3
    the compiler follows the fixed-size arrays the env indexes, and warns about an index past an array's end);
    skips without a C compiler."""
    from fastvec.native import NATIVE_DIR

    cc = shutil.which("cc") or shutil.which("gcc")
    tmp = tmp_path_factory.mktemp("env_warnings")
    (tmp / "driver.c").write_text(ENV_WARNINGS_DRIVER)

    def warnings(env_file, defines: dict) -> str:
        if cc is None:
            pytest.skip("no C compiler")
        env_file = Path(env_file)
        cmd = [cc, "-O3", "-std=c99", "-fPIC", "-fno-math-errno", "-ffp-contract=off", "-Wall", f"-I{NATIVE_DIR}",
               f"-I{env_file.parent}", "-include", str(env_file), *[f"-D{k}={v}" for k, v in defines.items()], "-c",
               str(tmp / "driver.c"), "-o", str(tmp / "driver.o")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return "\n".join(line for line in proc.stderr.splitlines() if "warning" in line)

    return warnings


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


def cuda_header(name: str, first: Iterable[Path] = ()) -> Path:
    """The header `name`: in `first`, else the CUDA toolkit's include directory (CUDA_HOME, CUDA_PATH, nvcc's,
    /usr/local/cuda*), an nvidia wheel on sys.path or the system's; where none has it, the test skips."""
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", "")]
    if nvcc := shutil.which("nvcc"):
        roots.append(str(Path(nvcc).resolve().parents[1]))
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/usr", "/usr/local"]
    places = list(first) + [Path(root) / "include" / name for root in roots if root]
    for entry in sys.path:
        places += [Path(entry or ".") / "nvidia" / sub / "include" / name
                   for sub in ("cuda_runtime", "cublas", "nccl", "cu13", "cu12")]
    found = next((p for p in places if p.is_file()), None)
    if found is None:
        pytest.skip(f"no {name} here (the CUDA toolkit, or an nvidia pip wheel, brings one)")
    return found


def header_enums(header: Path) -> dict[str, int]:
    """NAME = value of every enumerator the header spells out with a number (the first, where one repeats)."""
    values: dict[str, int] = {}
    enumerator = r"\b([A-Za-z_]\w*)\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))\b"
    for name, value in re.findall(enumerator, header.read_text(errors="replace")):
        values.setdefault(name, int(value, 0))
    return values

def mingru_layer_case(highway: bool, seed: int) -> SimpleNamespace:
    """One MinGRU layer's inputs and the reference's outputs and gradients, the oracle of its kernels' tests: 9 steps
    of 13 sequences of width 24 (a partial last block of 256 threads), starts at random, `pre` the GEMM's part
    x @ w.T that the kernels add the bias to."""
    from fastvec.trainer import reference as ref
    rng = np.random.default_rng(seed)
    steps, b, h = 9, 13, 24
    w_rows = (3 if highway else 2) * h
    x = rng.standard_normal((steps, b, h)).astype(np.float32)
    w = (rng.standard_normal((w_rows, h)) / np.sqrt(h)).astype(np.float32)
    bias = rng.standard_normal(w_rows).astype(np.float32) * 0.3
    starts = (rng.random((steps, b)) < 0.2).astype(np.float32)
    h0 = rng.standard_normal((b, h)).astype(np.float32)
    dout = rng.standard_normal((steps, b, h)).astype(np.float32)
    out_ref, last_ref, cache = ref.mingru_forward(x, 1 - starts, h0, w, bias, highway)
    dx_ref, dw_ref, db_ref = ref.mingru_backward(dout, cache)
    return SimpleNamespace(steps=steps, b=b, h=h, w_rows=w_rows, x=x, w=w, bias=bias, starts=starts, h0=h0, dout=dout,
                           pre=(x @ w.T).astype(np.float32), out_ref=out_ref, last_ref=last_ref, dx_ref=dx_ref,
                           dw_ref=dw_ref, db_ref=db_ref)


@pytest.fixture(autouse=True)
def wandb_module_restored():
    """The peer harnesses' tests run JaxMARL-style trials in this process, whose quiet_wandb() puts a stand-in `wandb`
    module into sys.modules where wandb is not installed: it is taken out after the test, so that later tests (the
    W&B logger's, which skip without the real package) never take it for wandb."""
    before = sys.modules.get("wandb")
    yield
    if before is None:
        sys.modules.pop("wandb", None)
    else:
        sys.modules["wandb"] = before
