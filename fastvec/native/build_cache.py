"""The build cache shared by the CPU libraries (cpu.py) and the CUDA cubins (gpu.py): a private
directory, artefacts written atomically and verified against a sidecar before every use, and one
builder per artefact at a time under a lock file whose wait is bounded and names the holder."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

CACHE_FORMAT = 1  # the sidecar's layout; a sidecar of another format is not trusted
LOCK_TIMEOUT_ENV = "FASTVEC_BUILD_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT_S = 900.0  # far above the slowest cold build (the fused CUDA trainer's module)
LOCK_NOTICE_S = 5.0  # a wait this long is said on stderr once, so a waiting process is never silent
# Temporary names carry the builder's host and pid, so a later build can tell a dead builder's leftovers.
_TMP = re.compile(r"^\.?fvtmp-(?P<host>.*)-(?P<pid>\d+)-[a-z0-9_]+(\.tmp)?$")


class BuildLockTimeout(TimeoutError):
    """Another process held an artefact's build lock for longer than FASTVEC_BUILD_LOCK_TIMEOUT seconds."""


class CacheDirError(PermissionError):
    """The build cache directory is not safe to load code from (another user's, or writable by others)."""


class CacheWriteError(OSError):
    """A build could not be stored in the cache (no space left, a directory in an entry's place, ...)."""


# ---------------------------------------------------------------------- the cache directory
def private_dir(path: Path) -> Path:
    """`path`, created private (0700) if missing, refused with CacheDirError unless it is a directory
    owned by this user that no one else can write (a library planted there would run as this user)."""
    fix = ("set FASTVEC_CACHE_DIR to a directory you own that only you can write "
           "(fastvec creates a missing one with mode 0700)")
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path)
    except OSError as err:
        raise CacheDirError(f"fastvec cannot create its build cache {path} ({err.strerror or err}); {fix}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheDirError(f"fastvec's build cache {path} is not a directory; {fix}")
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if st.st_uid != uid:
        raise CacheDirError(f"fastvec will not load code from its build cache {path}: it is owned by another "
                            f"user (uid {st.st_uid}; you are uid {uid}); {fix}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheDirError(f"fastvec will not load code from its build cache {path}: it is writable by other "
                            f"users (mode {stat.S_IMODE(st.st_mode):04o}); {fix}, or `chmod go-w {path}`")
    return path


def cache_dir() -> Path:
    """Where compiled envs are kept: $FASTVEC_CACHE_DIR, else the user's cache dir; checked by private_dir."""
    root = os.environ.get("FASTVEC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fastvec"
    )
    return private_dir(Path(root))


def safe_name(name: str) -> str:
    """`name` as a plain file-name part: characters other than letters, digits, `_`, `-`, `.` become `_`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "env"


# ---------------------------------------------------------------------- verified artefacts
def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a platform without directory fds
        return
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):  # file systems that cannot
            raise
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` as a temporary file beside it (same directory, so same file system),
    fsynced, then renamed over `path` and the directory fsynced: readers see the old file or the new
    one, never a part, and a crash never leaves a half file under the final name."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{_tmp_prefix()}", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def sidecar(artefact: Path) -> Path:
    """The record beside a cached artefact: NAME.json for NAME.so / NAME.cubin."""
    return artefact.with_suffix(".json")


def verified(artefact: Path, key: str) -> bytes | None:
    """The artefact's bytes if its sidecar records this key and the artefact's own size and sha256;
    None (so: rebuild) for a missing, truncated, altered, foreign or swapped artefact or sidecar."""
    try:
        meta = json.loads(sidecar(artefact).read_bytes())
        data = artefact.read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT or meta.get("key") != key \
            or meta.get("artefact") != artefact.name or meta.get("size") != len(data) \
            or meta.get("sha256") != hashlib.sha256(data).hexdigest():
        return None
    return data


def _tmp_prefix() -> str:
    return f"fvtmp-{safe_name(socket.gethostname())}-{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_stale_temps(folder: Path) -> None:
    """Remove the temporary build directories and files in `folder` left by builds of this host whose
    process is gone (killed mid-build); a live builder's are left alone."""
    host = safe_name(socket.gethostname())
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = _TMP.match(name)
        if match and match["host"] == host and int(match["pid"]) != os.getpid() and not _pid_alive(int(match["pid"])):
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


@contextmanager
def build_dir(folder: Path):
    """A private temporary directory inside the cache `folder` for one build, removed after it; a dead
    build's leftovers in `folder` are removed first (remove_stale_temps)."""
    remove_stale_temps(folder)
    path = Path(tempfile.mkdtemp(dir=folder, prefix=_tmp_prefix()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def lock_timeout() -> float:
    """Seconds to wait for another process's build lock: $FASTVEC_BUILD_LOCK_TIMEOUT, else 900."""
    value = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"{LOCK_TIMEOUT_ENV}={value!r} is not a positive number of seconds (e.g. 900)")
    return seconds


def _holder(fd: int) -> tuple[str, str]:
    """(pid, host) that the lock's holder wrote into the lock file, "?" where unreadable."""
    try:
        fields = os.pread(fd, 256, 0).decode(errors="replace").split()
    except OSError:
        fields = []
    return (fields[0] if fields else "?"), (fields[1] if len(fields) > 1 else "?")


@contextmanager
def _locked(lock_path: Path):
    """An exclusive flock on lock_path (created 0600) for the block: one builder per artefact at a time.
    The holder writes its pid and host into the file; a waiter says so on stderr after LOCK_NOTICE_S
    and gives up with BuildLockTimeout after lock_timeout(), naming the holder and what to do."""
    timeout = lock_timeout()
    if lock_path.is_dir() and not lock_path.is_symlink():
        _remove_empty_dir(lock_path)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        start, noticed = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            pid, host = _holder(fd)
            if waited >= timeout:
                raise BuildLockTimeout(
                    f"fastvec waited {waited:.0f} s for the build lock {lock_path}, held by pid {pid} on {host}: "
                    f"if that process is stuck, end it (kill {pid}) and run again, or set {LOCK_TIMEOUT_ENV} "
                    "to wait longer")
            if not noticed and waited >= LOCK_NOTICE_S:
                print(f"fastvec: waiting for pid {pid} on {host}, which is building {lock_path.stem} "
                      f"(gives up after {timeout:.0f} s, {LOCK_TIMEOUT_ENV})", file=sys.stderr, flush=True)
                noticed = True
            time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def cached_build(artefact: Path, key: str, inputs: dict, build: Callable[[], bytes]) -> bytes:
    """The bytes of `artefact` from the cache when verified() against `key`, else build() them and store
    them: the artefact written atomically first, then its sidecar (key, inputs, size, sha256), so a crash
    in between leaves an artefact that fails verification. Concurrent processes serialise on a lock file
    per artefact and re-check under it, so one builds and the others take its result."""
    data = verified(artefact, key)
    if data is not None:
        return data
    with _locked(artefact.with_suffix(".lock")):
        data = verified(artefact, key)
        if data is not None:
            return data
        data = build()
        meta = {"format": CACHE_FORMAT, "key": key, "artefact": artefact.name, "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "inputs": inputs}
        _store(artefact, data)
        _store(sidecar(artefact), json.dumps(meta, indent=1, sort_keys=True).encode())
        return data


def _remove_empty_dir(path: Path) -> None:
    """Remove the empty directory standing where a cache entry belongs; refuse one that holds anything."""
    try:
        path.rmdir()
    except OSError:
        raise CacheWriteError(f"fastvec's build cache entry {path} is a directory, not a file: remove it "
                              f"(rm -r '{path}') and run again") from None


def _store(path: Path, data: bytes) -> None:
    """write_atomic(path, data) as a cache entry: an empty directory standing in the entry's place is
    removed (it holds nothing); anything that still stops the write is one CacheWriteError naming the
    entry, the cause and the fix, not a rename error between two temporary names."""
    fix = "free space there or set FASTVEC_CACHE_DIR to a directory on another disk, and run again"
    if path.is_dir() and not path.is_symlink():
        _remove_empty_dir(path)
    try:
        write_atomic(path, data)
    except OSError as err:
        raise CacheWriteError(f"fastvec could not store its build in {path} ({err.strerror or err}); {fix}") from None
