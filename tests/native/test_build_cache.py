"""The build caches trust nothing (issue 19): the CPU library cache (native/cpu.py) and the CUDA cubin
cache (native/gpu.py) build beside the final path and rename atomically (any TMPDIR, any file system),
verify every artefact against its key and content hash before use and rebuild a bad one, survive
concurrent builders, refuse a cache directory another user could write, and never paste an env's file
name into source text. CPU only: the CUDA cache is driven with a stand-in nvcc."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fastvec import native
from fastvec.native import cpu, gpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_env.h"
CARTPOLE = native.source_path("cartpole")
BREAKOUT = native.source_path("breakout")
CARTPOLE_DEFINES = {"FLOAT32": 0}
BREAKOUT_DEFINES = {"FRAMESKIP": 4}

# A file name that closes the #include string and adds a line of C: if pasted into source text, the
# library gains an exported fv_injected (or the build stops at #error INJECTED).
INJECT_SYMBOL = 'env.h"\n__attribute__((visibility("default"))) int fv_injected(void) { return 42; }\n#pragma x '
INJECT_ERROR = 'env.h"\n#error INJECTED\n#pragma x '

# Loads CartPole from the cache in a fresh process (a truncated library must not SIGBUS the test run).
LOAD_CARTPOLE = (
    "from fastvec import native\nfrom fastvec.native import cpu\n"
    "env = cpu.load(native.source_path('cartpole'), (('FLOAT32', 0),))\n"
    "print(env.obs_size, env.num_actions)\n"
)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh cache directory (not yet created) for this test and the processes it starts."""
    path = tmp_path / "cache"
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(path))
    monkeypatch.setenv("FASTVEC_NUM_THREADS", "1")
    return path


def _python(code: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, **env})


def _sidecar(artefact: Path) -> Path:
    return artefact.with_suffix(".json")


# ---------------------------------------------------------------------- any file system
def test_builds_when_tmpdir_is_another_file_system(cache, tmp_path):
    """TMPDIR on a tmpfs (/dev/shm here, another device than the cache): the env still builds."""
    shm = Path("/dev/shm")
    tmp_path.mkdir(exist_ok=True)
    if not shm.is_dir() or not os.access(shm, os.W_OK) or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no writable /dev/shm on another device than the test's temporary directory")
    proc = _python(LOAD_CARTPOLE, TMPDIR=str(shm))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["4", "2"]


def test_builds_when_renames_across_devices_fail(cache, monkeypatch):
    """EXDEV simulated: a rename whose source lies outside the cache directory fails as it does across
    file systems; the CPU and the CUDA caches still store their artefacts."""
    real_replace, real_rename = os.replace, os.rename

    def cross_device(real):
        def rename(src, dst, *args, **kwargs):
            if not Path(os.path.abspath(src)).is_relative_to(os.path.abspath(cache)):
                raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(src), None, str(dst))
            return real(src, dst, *args, **kwargs)
        return rename

    monkeypatch.setattr(os, "replace", cross_device(real_replace))
    monkeypatch.setattr(os, "rename", cross_device(real_rename))
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    assert lib.parent == cache and lib.stat().st_size > 0
    commands, _ = _stand_in_nvcc(monkeypatch)
    assert gpu.compile_cubin('#include "batch.h"\n', include_dirs=[native.NATIVE_DIR], arch="sm_90") == b"cubin-1"


def test_artefacts_and_directory_are_fsynced(cache, monkeypatch):
    """The library is on disk (file and directory entry) before anything relies on it."""
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.path.realpath(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else fd)
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    assert synced, "nothing was fsynced"
    if os.path.exists("/proc/self/fd"):
        assert str(lib.parent.resolve()) in synced, "the cache directory was not fsynced"
        assert any(Path(p).parent == lib.parent.resolve() for p in synced if p != str(lib.parent.resolve()))


# ---------------------------------------------------------------------- concurrency
def _race(cache: Path, processes: int = 8) -> list[subprocess.CompletedProcess]:
    """`processes` fresh interpreters that load CartPole at the same moment (they wait for a start file)."""
    start = cache.parent / "start"
    code = (f"import os, time\nwhile not os.path.exists({str(start)!r}): time.sleep(0.005)\n" + LOAD_CARTPOLE)
    env = {**os.environ}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    time.sleep(1.0)  # let the interpreters start and import
    start.write_text("go")
    results = []
    deadline = time.monotonic() + 240
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a concurrent build did not finish in time (a lock held forever?)")
        results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return results


def _assert_one_valid_artefact(cache: Path) -> Path:
    libs = sorted(cache.glob("cartpole-*.so"))
    assert len(libs) == 1, libs
    meta = json.loads(_sidecar(libs[0]).read_text())
    assert meta["sha256"] == hashlib.sha256(libs[0].read_bytes()).hexdigest()
    leftovers = [p.name for p in cache.iterdir() if p.suffix not in (".so", ".json", ".lock")]
    assert not leftovers, f"temporary files left in the cache: {leftovers}"
    return libs[0]


def test_eight_processes_build_one_env_at_once(cache):
    results = _race(cache)
    for r in results:
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["4", "2"]
    _assert_one_valid_artefact(cache)


def test_eight_processes_meet_a_truncated_artefact(cache):
    """A library cut in half (a full disk, a killed copy): eight processes at once all rebuild or wait
    for one rebuild, none crashes (it was SIGBUS in every later process)."""
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    good = lib.read_bytes()
    lib.write_bytes(good[: len(good) // 2])
    results = _race(cache)
    for r in results:
        assert r.returncode == 0, (r.returncode, r.stderr)
        assert r.stdout.split() == ["4", "2"]
    assert _assert_one_valid_artefact(cache).read_bytes() == good


# ---------------------------------------------------------------------- bad artefacts are rebuilt
def _relabel(source: Path, target: Path) -> None:
    """source's artefact and sidecar copied under target's names, the sidecar's file name rewritten."""
    shutil.copyfile(source, target)
    meta = json.loads(_sidecar(source).read_text()) if _sidecar(source).exists() else {}
    meta["artefact"] = target.name
    _sidecar(target).write_text(json.dumps(meta))


def _damage(kind: str, lib: Path, breakout: Path) -> None:
    good = lib.read_bytes()
    if kind == "truncated":
        lib.write_bytes(good[: len(good) // 2])
    elif kind == "zero-byte":
        lib.write_bytes(b"")
    elif kind == "garbage":
        lib.write_bytes(os.urandom(len(good)))
    elif kind == "corrupted":  # one byte of the code flipped: the file still loads, the hash does not match
        mid = len(good) // 2
        lib.write_bytes(good[:mid] + bytes([good[mid] ^ 0xFF]) + good[mid + 1:])
    elif kind == "foreign":  # Breakout's library under CartPole's name
        shutil.copyfile(breakout, lib)
    elif kind == "swapped":  # Breakout's library and its sidecar under CartPole's names
        shutil.copyfile(breakout, lib)
        if _sidecar(breakout).exists():
            shutil.copyfile(_sidecar(breakout), _sidecar(lib))
    elif kind == "relabelled":  # swapped, and the sidecar edited to name CartPole's file: only its key differs
        _relabel(breakout, lib)
    elif kind == "no-sidecar":  # a library from an older fastvec, or one planted without a record
        _sidecar(lib).unlink(missing_ok=True)
        lib.write_bytes(Path(breakout).read_bytes())
    else:
        raise ValueError(kind)


@pytest.mark.parametrize("kind", ["truncated", "zero-byte", "garbage", "corrupted", "foreign", "swapped",
                                  "relabelled", "no-sidecar"])
def test_bad_cpu_artefact_is_rebuilt(cache, kind):
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    good = lib.read_bytes()
    breakout = cpu.compile_env(BREAKOUT, BREAKOUT_DEFINES)
    _damage(kind, lib, breakout)
    damaged = lib.read_bytes()
    proc = _python(LOAD_CARTPOLE)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split() == ["4", "2"], "CartPole must load with its own sizes (obs 4, 2 actions)"
    assert lib.read_bytes() == good != damaged, "a bad artefact must be replaced by a fresh build"
    assert json.loads(_sidecar(lib).read_text())["sha256"] == hashlib.sha256(good).hexdigest()
    assert cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES) == lib


def test_warm_cache_is_not_rebuilt(cache, monkeypatch):
    """A second process with a warm cache does not compile (only preprocesses, for the key)."""
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    mtime = lib.stat().st_mtime_ns
    calls = []
    real_run = cpu._run
    monkeypatch.setattr(cpu, "_run", lambda cmd, what: calls.append(what) or real_run(cmd, what))
    assert cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES) == lib
    assert [c for c in calls if c.startswith("compiling")] == []
    assert lib.stat().st_mtime_ns == mtime


# ---------------------------------------------------------------------- the cache directory
def test_new_cache_directory_is_private(cache):
    assert cpu.cache_dir() == cache
    assert cache.stat().st_mode & 0o777 == 0o700


def test_without_fastvec_cache_dir_the_cache_is_the_xdg_cache_homes_else_homes(tmp_path, monkeypatch):
    """FASTVEC_CACHE_DIR unset (or empty): $XDG_CACHE_HOME/fastvec, else ~/.cache/fastvec (the XDG base directory
    spec's default), each created private."""
    monkeypatch.setenv("FASTVEC_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cpu.cache_dir() == tmp_path / "xdg" / "fastvec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cpu.cache_dir() == tmp_path / "home" / ".cache" / "fastvec"
    assert (tmp_path / "home" / ".cache" / "fastvec").stat().st_mode & 0o777 == 0o700


def test_a_build_lock_file_is_private_to_its_user(tmp_path):
    """The lock a build takes is created readable and writable by its user alone (0600 under the usual umask)."""
    umask = os.umask(0o022)
    try:
        with native.build_cache._locked(tmp_path / "env.lock"):
            assert (tmp_path / "env.lock").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(umask)


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_cache_directory_writable_by_others_is_refused(cache, mode):
    cache.mkdir()
    os.chmod(cache, mode)
    with pytest.raises(PermissionError, match="FASTVEC_CACHE_DIR") as err:
        cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    assert str(cache) in str(err.value) and "writable by other users" in str(err.value)
    assert not list(cache.iterdir()), "nothing was built into it"


def test_a_cache_directory_that_cannot_be_made_or_is_a_file_is_refused_in_one_line(cache):
    """A cache path under a regular file (mkdir fails) is refused naming the path and the system's reason as
    strerror gives it (a regular file in the cache's own place: it exists); both say what to set."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("not a directory")
    under = cache / "below"
    with pytest.raises(PermissionError) as err:
        native.build_cache.private_dir(under)
    assert str(err.value) == (f"fastvec cannot create its build cache {under} (Not a directory); set "
                              "FASTVEC_CACHE_DIR to a directory you own that only you can write (fastvec creates a "
                              "missing one with mode 0700)")
    with pytest.raises(PermissionError, match=rf"fastvec cannot create its build cache {cache} \(File exists\); set "):
        cpu.cache_dir()


def test_cache_directory_of_another_user_is_refused(cache, monkeypatch):
    cache.mkdir(mode=0o700)
    other = os.getuid() + 1
    real_stat = os.stat

    def stat(path, *args, **kwargs):  # the directory as if another user had made it (no chown here)
        st = real_stat(path, *args, **kwargs)
        if os.path.abspath(path) == str(cache):
            fields = list(st)
            fields[4] = other  # st_uid
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(os, "stat", stat)
    with pytest.raises(PermissionError, match="FASTVEC_CACHE_DIR") as err:
        cpu.cache_dir()
    assert str(cache) in str(err.value) and f"uid {other}" in str(err.value)


def test_cuda_cache_directory_is_checked_too(cache, monkeypatch):
    _stand_in_nvcc(monkeypatch)
    (cache / "cuda").mkdir(parents=True)
    os.chmod(cache, 0o700)
    os.chmod(cache / "cuda", 0o777)
    with pytest.raises(PermissionError, match="FASTVEC_CACHE_DIR"):
        gpu.compile_cubin('#include "batch.h"\n', include_dirs=[native.NATIVE_DIR], arch="sm_90")


def test_tests_use_a_per_run_cache():
    """conftest.py gives each test run its own private cache (a fixed /tmp path could be another user's)."""
    path = os.environ["FASTVEC_CACHE_DIR"]
    assert path != os.path.join(tempfile.gettempdir(), "fastvec-test-cache")
    assert cpu.cache_dir() == Path(path) and os.stat(path).st_uid == os.getuid()


# ---------------------------------------------------------------------- file names never become code
@pytest.mark.parametrize("name", [INJECT_SYMBOL, INJECT_ERROR])
def test_env_file_name_never_becomes_code(cache, tmp_path, name):
    """An env file whose name closes the #include string and adds C code: the name is only a name (the
    env builds as itself) or the build is refused, and the added code is never compiled."""
    folder = tmp_path / "envs"
    folder.mkdir()
    (folder / "env.h").write_text(EXAMPLE.read_text())  # what the pasted #include would have found
    evil = folder / name
    evil.write_text(EXAMPLE.read_text())
    try:
        lib = cpu.compile_env(evil, {})
    except (ValueError, cpu.CompileError) as err:
        assert "INJECTED" not in str(err).replace(name, ""), "the injected #error was compiled"
        return
    assert not hasattr(ctypes.CDLL(str(lib)), "fv_injected"), "the injected function was compiled"
    assert "\n" not in lib.name and '"' not in lib.name, "the cache file name is sanitised"
    env = cpu.CompiledEnv(lib, "evil")
    assert (env.obs_size, env.num_actions) == (2, 2)


@pytest.mark.parametrize("name", [INJECT_SYMBOL, INJECT_ERROR])
def test_env_file_name_never_reaches_nvcc_source(cache, tmp_path, monkeypatch, name):
    """The GPU env and trainer builds: the env reaches nvcc as a copy under a fixed name; neither the
    translation unit nor the command line holds the crafted name."""
    from fastvec.native import cuda
    from fastvec.trainer.cuda import device

    folder = tmp_path / "envs"
    folder.mkdir()
    (folder / "env.h").write_text(EXAMPLE.read_text())
    evil = folder / name
    evil.write_text(EXAMPLE.read_text() + "/* the evil env's own text */\n")
    commands, builds = _stand_in_nvcc(monkeypatch)
    monkeypatch.setattr(device, "init", lambda: None)
    for build in (lambda: cuda.CudaCompiledEnv(evil, {}, 0), lambda: device.load_module(evil, ())):
        try:
            build()
        except _Loaded:
            pass
    assert len(builds) == 2
    for cmd, files in zip(commands, builds):
        assert not any("fv_injected" in arg or "INJECTED" in arg or "\n" in arg or '"' in arg for arg in cmd), cmd
        for text in files.values():
            assert "INJECTED" not in text and "fv_injected" not in text, "the crafted name reached nvcc's source"
        assert "/* the evil env's own text */" in "".join(files.values()), "the env's own text was compiled"


def test_driver_source_holds_no_file_name():
    assert str(CARTPOLE) not in cpu.driver_source()
    with pytest.raises(ValueError, match="cannot be written into an #include"):
        cpu.driver_source(Path("/tmp") / INJECT_SYMBOL)


# ---------------------------------------------------------------------- the CUDA cache, with a stand-in nvcc
class _Loaded(Exception):
    """Raised where a stand-in build would load its module."""


includes: list = []  # the stand-in nvcc's -I directories per build, resolved while the build ran


def _stand_in_nvcc(monkeypatch):
    """Stand-ins for the GPU and nvcc in fastvec.native.gpu: each nvcc run is recorded with the text of
    every file in its build directory (and its -I directories, resolved, in `includes`) and answered with
    cubin-N (N counts the builds)."""
    commands, builds = [], []
    includes.clear()

    def run(cmd):
        commands.append(cmd)
        src = Path(next(c for c in cmd if c.endswith(".cu")))
        builds.append({p.name: p.read_text(errors="replace") for p in src.parent.iterdir() if p.is_file()})
        includes.append([Path(c[2:]).resolve() for c in cmd if c.startswith("-I")])
        Path(cmd[cmd.index("-o") + 1]).write_bytes(f"cubin-{len(commands)}".encode())
        return SimpleNamespace(returncode=0, stderr="")

    def module_from_buffer(cubin):
        raise _Loaded

    monkeypatch.setattr(gpu, "driver", lambda: SimpleNamespace(module_from_buffer=module_from_buffer))
    monkeypatch.setattr(gpu, "primary_context", lambda index=0: None)
    monkeypatch.setattr(gpu, "device_arch", lambda index=0: "sm_90")
    monkeypatch.setattr(gpu, "find_nvcc", lambda: "/stand-in/nvcc")
    monkeypatch.setattr(gpu, "_nvcc_version", lambda nvcc: "stand-in")
    monkeypatch.setattr(gpu, "_run_nvcc", run)
    return commands, builds


@pytest.mark.parametrize("kind", ["truncated", "zero-byte", "garbage", "foreign", "swapped", "relabelled",
                                  "no-sidecar"])
def test_bad_cubin_is_rebuilt(cache, monkeypatch, kind):
    commands, _ = _stand_in_nvcc(monkeypatch)
    build = lambda source: gpu.compile_cubin(source, include_dirs=[native.NATIVE_DIR], arch="sm_90", name="m")
    assert build("// one\n") == b"cubin-1"
    assert build("// two\n") == b"cubin-2"
    assert build("// one\n") == b"cubin-1" and len(commands) == 2, "a good cubin comes from the cache"
    one, two = sorted((cache / "cuda").glob("m-*.cubin"), key=lambda p: p.read_bytes())
    if kind == "truncated":
        one.write_bytes(b"cubin")
    elif kind == "zero-byte":
        one.write_bytes(b"")
    elif kind == "garbage":
        one.write_bytes(os.urandom(7))
    elif kind == "foreign":
        shutil.copyfile(two, one)
    elif kind == "swapped":
        shutil.copyfile(two, one)
        if _sidecar(two).exists():
            shutil.copyfile(_sidecar(two), _sidecar(one))
    elif kind == "relabelled":
        _relabel(two, one)
    elif kind == "no-sidecar":
        _sidecar(one).unlink(missing_ok=True)
    assert build("// one\n") == b"cubin-3", "a bad cubin must be rebuilt, not handed to the driver"
    assert len(commands) == 3 and one.read_bytes() == b"cubin-3"
    assert build("// one\n") == b"cubin-3" and len(commands) == 3, "the rebuilt cubin is trusted again"
    assert build("// two\n") == b"cubin-2" and len(commands) == 3


def test_nvcc_never_sees_an_include_directory_it_cannot_quote(cache, tmp_path, monkeypatch):
    """nvcc runs its steps through a shell and drops a `"` from a path: an include directory with such
    characters reaches it as a plain link in the build directory, the files are still found."""
    commands, builds = _stand_in_nvcc(monkeypatch)
    odd = tmp_path / 'we"ird $(dir)'
    odd.mkdir()
    (odd / "h.h").write_text("#define H 1\n")
    gpu.compile_cubin('#include "h.h"\n', include_dirs=[odd], arch="sm_90")
    (cmd,) = commands
    given = [c[2:] for c in cmd if c.startswith("-I")]
    assert all('"' not in c and "$" not in c for c in given), given
    assert odd.resolve() in includes[0], "the link leads to the directory"


# ---------------------------------------------------------------------- entries that cannot be written
@pytest.mark.parametrize("entry", [".so", ".json", ".lock"])
def test_empty_directory_in_an_entrys_place_is_rebuilt(cache, entry):
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    good = lib.read_bytes()
    target = lib.with_suffix(entry)
    target.unlink()
    target.mkdir()
    if entry == ".lock":  # the lock is taken only for a build
        lib.write_bytes(b"")
    proc = _python(LOAD_CARTPOLE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["4", "2"]
    assert target.is_file() and lib.read_bytes() == good


@pytest.mark.parametrize("entry", [".so", ".json", ".lock"])
def test_directory_holding_files_in_an_entrys_place_is_one_line(cache, entry):
    lib = cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    target = lib.with_suffix(entry)
    target.unlink()
    (target / "kept").mkdir(parents=True)
    if entry == ".lock":
        lib.write_bytes(b"")
    proc = _python(LOAD_CARTPOLE)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fastvec.native.build_cache.CacheWriteError:"), last
    assert f"{target} is a directory, not a file: remove it (rm -r '{target}')" in last
    assert (target / "kept").is_dir(), "a directory holding anything is the user's to remove, never fastvec's"


def test_full_disk_names_the_entry_and_the_fix(cache, monkeypatch):
    from fastvec.native import build_cache

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(build_cache.os, "fsync", no_space)
    with pytest.raises(build_cache.CacheWriteError) as err:
        cpu.compile_env(CARTPOLE, CARTPOLE_DEFINES)
    message = str(err.value)
    assert "No space left on device" in message and "FASTVEC_CACHE_DIR" in message and ".so" in message
    assert "\n" not in message
    assert not [p for p in cache.iterdir() if "fvtmp" in p.name], "no temporary file left behind"
