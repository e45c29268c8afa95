"""Where fastvec builds and runs GPU code: PyCUDA start-up, each device's primary context, nvcc with one
set of flags, one on-disk cubin cache, and prepared kernels launched on a stream. The env backend
(cuda.py) and the trainer (trainer/cuda/device.py) both go through here."""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from fastvec.native.cpu import CompileError, cache_dir

INSTALL_HINT = "pip install 'fastvec[cuda]'"
# No FMA contraction: the env headers promise the same bits on the CPU (x86-64 without -march has no
# FMA) and the GPU only when neither side fuses; kernels that want a fused multiply-add write fmaf().
NVCC_FLAGS = ["-O3", "--fmad=false"]


class CudaUnavailableError(RuntimeError):
    """PyCUDA, nvcc or a CUDA GPU is missing; the message says which and how to fix it."""


# ---------------------------------------------------------------------- driver and contexts
def driver():
    """pycuda.driver, initialised, or an error that says how to get it."""
    try:
        import pycuda.driver as drv
    except ImportError as err:
        raise CudaUnavailableError(f"the GPU needs PyCUDA, which is not importable ({err}); "
                                   f"install it with `{INSTALL_HINT}`") from None
    try:
        drv.init()
    except drv.Error as err:
        raise CudaUnavailableError(f"the CUDA driver has no usable GPU ({err})") from None
    return drv


_contexts: dict[int, object] = {}


def primary_context(index: int = 0):
    """Retain device `index`'s primary context (the one PyTorch, JAX and CuPy use, so memory is
    shared with them) and make it current: once per device per process, popped at exit."""
    if index in _contexts:
        return _contexts[index]
    drv = driver()
    count = drv.Device.count()
    if count == 0:
        raise CudaUnavailableError("no CUDA GPU is visible")
    if index >= count:
        raise CudaUnavailableError(f"cuda:{index} requested but only {count} CUDA GPU(s) are visible")
    context = drv.Device(index).retain_primary_context()
    context.push()
    _contexts[index] = context
    return context


@atexit.register
def _pop_contexts() -> None:
    for context in _contexts.values():
        try:
            context.pop()
        except Exception:  # already popped by someone else, or the driver is shutting down
            pass
    _contexts.clear()


def device_arch(index: int = 0) -> str:
    """nvcc's -arch for device `index`, e.g. "sm_90"."""
    major, minor = driver().Device(index).compute_capability()
    return f"sm_{major}{minor}"


# ---------------------------------------------------------------------- nvcc and the cubin cache
def find_nvcc() -> str:
    for candidate in [os.environ.get("NVCC"), shutil.which("nvcc"),
                      os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")]:
        if candidate and os.path.isfile(candidate):
            return candidate
    raise CudaUnavailableError("nvcc not found (tried $NVCC, PATH, $CUDA_HOME/bin): fastvec compiles its GPU code "
                               "with the CUDA toolkit's nvcc; install the toolkit or set NVCC")


@lru_cache(maxsize=None)
def _nvcc_version(nvcc: str) -> str:
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def included_files(source: str, include_dirs: list) -> dict[Path, bytes]:
    """Every file that `source` can include with #include "..." (followed through the files it finds),
    searched as nvcc does: the including file's directory, then include_dirs. Files under an #if are
    counted too, so the set is never smaller than what nvcc reads."""
    found: dict[Path, bytes] = {}
    todo = [(source.encode(), None)]
    while todo:
        text, here = todo.pop()
        for name in _QUOTED_INCLUDE.findall(text):
            name = name.decode()
            for folder in ([here] if here else []) + [Path(d) for d in include_dirs]:
                path = Path(name) if os.path.isabs(name) else folder / name
                if path.is_file():
                    path = path.resolve()
                    if path not in found:
                        found[path] = path.read_bytes()
                        todo.append((found[path], path.parent))
                    break
    return found


def _run_nvcc(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def compile_cubin(source: str, *, include_dirs: list, defines: dict | None = None, arch: str,
                  name: str = "module") -> bytes:
    """The cubin of translation unit `source` for `arch`, built with NVCC_FLAGS and -D`defines`, from the
    disk cache when one exists. The cache key hashes the source, every file it can include, the flags,
    defines, arch and nvcc's version, so an edit to any of them rebuilds."""
    nvcc = find_nvcc()
    options = NVCC_FLAGS + [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    include_dirs = [str(d) for d in include_dirs]
    digest = hashlib.sha256("\0".join([source, arch, *options, _nvcc_version(nvcc)]).encode())
    for path, content in sorted(included_files(source, include_dirs).items()):
        digest.update(str(path).encode() + b"\0" + content)
    folder = cache_dir() / "cuda"
    folder.mkdir(exist_ok=True)
    cubin_path = folder / f"{name}-{arch}-{digest.hexdigest()[:24]}.cubin"
    if cubin_path.exists():
        return cubin_path.read_bytes()
    with tempfile.TemporaryDirectory(prefix="fastvec-nvcc-") as tmp:
        src, out = Path(tmp) / f"{name}.cu", Path(tmp) / f"{name}.cubin"
        src.write_text(source)
        cmd = [nvcc, "--cubin", f"-arch={arch}", *options, *[f"-I{d}" for d in include_dirs], str(src), "-o", str(out)]
        proc = _run_nvcc(cmd)
        if proc.returncode != 0:
            raise CompileError(f"compiling {name} for the GPU failed (exit {proc.returncode}):\n$ {' '.join(cmd)}\n"
                               f"{proc.stderr.strip()}")
        cubin = out.read_bytes()
    partial = cubin_path.with_suffix(f".tmp{os.getpid()}")
    partial.write_bytes(cubin)
    os.replace(partial, cubin_path)  # atomic: a concurrent process never reads half a file
    return cubin


def load_module(source: str, *, include_dirs: list, defines: dict | None = None, name: str = "module",
                device_index: int = 0):
    """Compile (or take from the cache) `source` for GPU `device_index` and load it into that device's
    primary context; returns the pycuda Module."""
    drv = driver()
    primary_context(device_index)
    cubin = compile_cubin(source, include_dirs=include_dirs, defines=defines, arch=device_arch(device_index), name=name)
    return drv.module_from_buffer(cubin)


# ---------------------------------------------------------------------- launches
class Launcher:
    """Prepared kernels of one module, launched on one stream. `signatures` maps a kernel's name to its
    arguments in PyCUDA's prepare() letters (P pointer, i int32, q int64, Q uint64, f float32, d
    float64); `threads` is the block size of launch(), `reduce_threads` that of launch_block()."""

    signatures: dict = {}
    threads = 256
    reduce_threads = 1024

    def __init__(self, module, stream, signatures: dict | None = None):
        self.module, self.stream = module, stream
        if signatures is not None:
            self.signatures = signatures
        self.functions = {}

    def function(self, name: str):
        fn = self.functions.get(name)
        if fn is None:
            fn = self.module.get_function(name)
            fn.prepare(self.signatures[name])
            self.functions[name] = fn
        return fn

    def launch(self, name: str, threads: int, *args) -> None:
        """ceil(threads / self.threads) blocks of self.threads threads."""
        blocks = max(1, (int(threads) + self.threads - 1) // self.threads)
        self.function(name).prepared_async_call((blocks, 1, 1), (self.threads, 1, 1), self.stream, *args)

    def launch_grid(self, name: str, blocks: int, threads: int, *args) -> None:
        self.function(name).prepared_async_call((int(blocks), 1, 1), (int(threads), 1, 1), self.stream, *args)

    def launch_shared(self, name: str, threads: int, block: int, shared_bytes: int, *args) -> None:
        """ceil(threads / block) blocks of `block` threads with `shared_bytes` of dynamic shared memory."""
        self.function(name).prepared_async_call((max(1, (int(threads) + block - 1) // block), 1, 1), (int(block), 1, 1),
                                                self.stream, *args, shared_size=int(shared_bytes))

    def launch_block(self, name: str, *args) -> None:
        """One block of self.reduce_threads threads."""
        self.function(name).prepared_async_call((1, 1, 1), (self.reduce_threads, 1, 1), self.stream, *args)
