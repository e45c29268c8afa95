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

from fastvec.native.cpu import (CompileError, cache_dir, cached_build, compile_failure, first_errors, private_dir,
                                safe_name)

INSTALL_HINT = "pip install 'fastvec[cuda]'"
# No FMA contraction: the env headers promise the same bits on the CPU (x86-64 without -march has no
# FMA) and the GPU only when neither side fuses; kernels that want a fused multiply-add write fmaf().
NVCC_FLAGS = ["-O3", "--fmad=false"]
# The name an env file is copied to beside the translation unit: sources include it by this fixed name
# (cuda.env_source, trainer/cuda/device.module_source), so the env's own file name is never source text.
ENV_INCLUDE = "fastvec_env.h"
# Paths nvcc takes as they are: it runs its steps through a shell and drops or mangles quotes, `$`, `\`
# and splits lists at commas, so an include directory with anything else reaches it as a link.
_NVCC_SAFE_PATH = re.compile(r"[A-Za-z0-9_./+=@%:~ -]+")


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


def included_files(source: str, include_dirs: list, env: tuple[Path, bytes] | None = None) -> dict[Path, bytes]:
    """Every file that `source` can include with #include "..." (followed through the files it finds),
    searched as nvcc does: the including file's directory, then include_dirs. Files under an #if are
    counted too, so the set is never smaller than what nvcc reads. `env` is (path, content) of the env
    file that the source includes as ENV_INCLUDE (a copy): its includes are followed from its own folder."""
    found: dict[Path, bytes] = {}
    todo = [(source.encode(), None)]
    if env is not None:
        path, content = Path(os.path.abspath(env[0])), env[1]
        found[path] = content
        todo.append((content, path.parent))
    while todo:
        text, here = todo.pop()
        for name in _QUOTED_INCLUDE.findall(text):
            name = name.decode(errors="surrogateescape")
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


_NVCC_ERROR_LINE = re.compile(r"^(.*?\(\d+\): (?:catastrophic )?error: .*)$", re.M)


def nvcc_error(name: str, cmd: list[str], proc: subprocess.CompletedProcess, build_dir: Path,
               env_name: str | None) -> CompileError:
    """nvcc's failure as the CPU build's (cpu.compile_failure): its first errors (file(line): error: ...), the env
    file named as the user named it rather than as its copy in the build directory."""
    errors = first_errors(proc.stderr.replace(str(build_dir / ENV_INCLUDE), env_name or ENV_INCLUDE), build_dir,
                          _NVCC_ERROR_LINE)
    what = f"compiling {repr(env_name) if env_name is not None else name} for the GPU"
    return compile_failure(what, cmd, proc, errors, len(_NVCC_ERROR_LINE.findall(proc.stderr)), "nvcc")


def _nvcc_include_flags(include_dirs: list[str], build_dir: Path) -> list[str]:
    """-I flags for include_dirs, in order: a directory whose path nvcc's shell steps could mangle (a
    quote, `$`, a backslash, a comma, ...) is given as a link to it inside build_dir instead."""
    flags = []
    for i, folder in enumerate(include_dirs):
        if not _NVCC_SAFE_PATH.fullmatch(folder):
            link = build_dir / f"include{i}"
            link.symlink_to(os.path.abspath(folder), target_is_directory=True)
            folder = str(link)
        flags.append(f"-I{folder}")
    return flags


def compile_cubin(source: str, *, include_dirs: list, defines: dict | None = None, arch: str,
                  name: str = "module", env_path: Path | None = None) -> bytes:
    """The cubin of translation unit `source` for `arch`, built with NVCC_FLAGS and -D`defines`, from the
    disk cache when a verified one exists (cpu.cached_build: key and sha256 checked, a bad one rebuilt).
    The cache key hashes the source, every file it can include, the flags, defines, arch and nvcc's
    version, so an edit to any of them rebuilds. With env_path, the env file is copied beside the source
    as ENV_INCLUDE (which the source includes): its name never becomes source text or an nvcc argument."""
    nvcc = find_nvcc()
    options = NVCC_FLAGS + [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    include_dirs = [str(d) for d in include_dirs]
    env = None if env_path is None else (Path(os.path.abspath(env_path)), Path(env_path).read_bytes())
    digest = hashlib.sha256("\0".join([source, arch, *options, _nvcc_version(nvcc)]).encode())
    for path, content in sorted(included_files(source, include_dirs, env).items()):
        digest.update(str(path).encode(errors="surrogateescape") + b"\0" + content)
    if env is not None:
        digest.update(b"\0env\0" + str(env[0]).encode(errors="surrogateescape") + b"\0" + env[1])
    key = digest.hexdigest()
    name = safe_name(name)
    folder = private_dir(cache_dir() / "cuda")
    cubin_path = folder / f"{name}-{safe_name(arch)}-{key[:24]}.cubin"
    inputs = {"name": name, "arch": arch, "options": options, "nvcc": nvcc,
              "nvcc_version": (_nvcc_version(nvcc).strip().splitlines() or [""])[-1], "include_dirs": include_dirs,
              "env": None if env is None else str(env[0]),
              "env_sha256": None if env is None else hashlib.sha256(env[1]).hexdigest()}

    def build() -> bytes:
        with tempfile.TemporaryDirectory(prefix="fastvec-nvcc-") as tmp:
            src, out = Path(tmp) / f"{name}.cu", Path(tmp) / f"{name}.cubin"
            src.write_text(source)
            if env is not None:
                (Path(tmp) / ENV_INCLUDE).write_bytes(env[1])
            cmd = [nvcc, "--cubin", f"-arch={arch}", *options, *_nvcc_include_flags(include_dirs, Path(tmp)),
                   str(src), "-o", str(out)]
            proc = _run_nvcc(cmd)
            if proc.returncode != 0:
                raise nvcc_error(name, cmd, proc, Path(tmp), None if env_path is None else Path(env_path).name)
            return out.read_bytes()

    return cached_build(cubin_path, key, inputs, build)


def load_module(source: str, *, include_dirs: list, defines: dict | None = None, name: str = "module",
                device_index: int = 0, env_path: Path | None = None):
    """Compile (or take from the cache) `source` for GPU `device_index` and load it into that device's
    primary context; returns the pycuda Module. env_path: as compile_cubin's (the env the source
    includes as ENV_INCLUDE)."""
    drv = driver()
    primary_context(device_index)
    cubin = compile_cubin(source, include_dirs=include_dirs, defines=defines, arch=device_arch(device_index), name=name,
                          env_path=env_path)
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
