"""The build cache's records, without a compiler: an artefact is used only when its sidecar records the
same format, key, file name, size and sha256 as the bytes on disk; anything else is rebuilt and the
record rewritten. Also the cache's small rules: lock-timeout values, file-name cleaning, stale temps."""

import hashlib
import json
import os
import socket
import subprocess
import sys

import pytest

from fastvec.native import build_cache as bc


class Builder:
    def __init__(self, data=b"library bytes"):
        self.data, self.calls = data, 0

    def __call__(self):
        self.calls += 1
        return self.data


def test_a_build_is_stored_with_its_record_and_taken_from_the_cache_afterwards(tmp_path):
    art, build = tmp_path / "env-abc.so", Builder()
    assert bc.cached_build(art, "key1", {"env": "x.h"}, build) == b"library bytes"
    assert bc.cached_build(art, "key1", {"env": "x.h"}, build) == b"library bytes"
    assert build.calls == 1
    meta = json.loads(bc.sidecar(art).read_text())
    assert meta == {"format": bc.CACHE_FORMAT, "key": "key1", "artefact": "env-abc.so", "size": 13,
                    "sha256": hashlib.sha256(b"library bytes").hexdigest(), "inputs": {"env": "x.h"}}
    assert bc.sidecar(art).name == "env-abc.json"
    assert bc.verified(art, "key1") == b"library bytes"


def test_another_key_is_rebuilt(tmp_path):
    art = tmp_path / "env.so"
    bc.cached_build(art, "key1", {}, Builder(b"old"))
    build = Builder(b"new")
    assert bc.cached_build(art, "key2", {}, build) == b"new" and build.calls == 1
    assert bc.verified(art, "key1") is None and bc.verified(art, "key2") == b"new"


def _tamper(art, field, value):
    meta = json.loads(bc.sidecar(art).read_text())
    meta[field] = value
    bc.sidecar(art).write_text(json.dumps(meta))


@pytest.mark.parametrize("field,value", [("format", bc.CACHE_FORMAT + 1), ("key", "other"),
                                         ("artefact", "other.so"), ("size", 999), ("sha256", "0" * 64)])
def test_a_record_that_disagrees_in_any_field_is_not_trusted_and_the_entry_rebuilt(tmp_path, field, value):
    art = tmp_path / "env.so"
    bc.cached_build(art, "k", {}, Builder())
    _tamper(art, field, value)
    assert bc.verified(art, "k") is None
    build = Builder()
    assert bc.cached_build(art, "k", {}, build) == b"library bytes" and build.calls == 1
    assert bc.verified(art, "k") == b"library bytes"


@pytest.mark.parametrize("damage", ["truncated", "altered", "no sidecar", "no artefact", "sidecar a list",
                                    "sidecar not json"])
def test_a_damaged_entry_is_rebuilt(tmp_path, damage):
    art = tmp_path / "env.so"
    bc.cached_build(art, "k", {}, Builder())
    if damage == "truncated":
        art.write_bytes(b"library")
    elif damage == "altered":
        art.write_bytes(b"library BYTES")  # same size, other content
    elif damage == "no sidecar":
        bc.sidecar(art).unlink()
    elif damage == "no artefact":
        art.unlink()
    elif damage == "sidecar a list":
        bc.sidecar(art).write_text("[1, 2]")
    else:
        bc.sidecar(art).write_text("{not json")
    assert bc.verified(art, "k") is None
    build = Builder()
    assert bc.cached_build(art, "k", {}, build) == b"library bytes" and build.calls == 1


def test_an_artefact_swapped_with_another_entrys_is_refused(tmp_path):
    a, b = tmp_path / "a.so", tmp_path / "b.so"
    bc.cached_build(a, "ka", {}, Builder(b"AAAA"))
    bc.cached_build(b, "kb", {}, Builder(b"BBBB"))
    a.write_bytes(b.read_bytes())
    bc.sidecar(a).write_bytes(bc.sidecar(b).read_bytes())
    assert bc.verified(a, "ka") is None and bc.verified(a, "kb") is None  # the record names b.so


@pytest.mark.parametrize("value,seconds", [("", 900.0), ("  ", 900.0), ("2.5", 2.5), (" 60 ", 60.0)])
def test_the_lock_timeout_is_the_variables_seconds_or_900(monkeypatch, value, seconds):
    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, value)
    assert bc.lock_timeout() == seconds


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan"])
def test_a_lock_timeout_that_is_not_a_positive_number_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, value)
    with pytest.raises(ValueError, match=bc.LOCK_TIMEOUT_ENV):
        bc.lock_timeout()


def test_the_default_lock_timeout_without_the_variable(monkeypatch):
    monkeypatch.delenv(bc.LOCK_TIMEOUT_ENV, raising=False)
    assert bc.lock_timeout() == 900.0


def test_safe_name_keeps_letters_digits_and_dashes_and_caps_the_length():
    assert bc.safe_name("my env/../x;rm.h") == "my_env_.._x_rm.h"
    assert bc.safe_name("a-b_c.9") == "a-b_c.9"
    assert bc.safe_name("x" * 100) == "x" * 64
    assert bc.safe_name("") == "env"


def test_stale_temps_of_dead_builders_on_this_host_go_and_the_rest_stay(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = bc.safe_name(socket.gethostname())
    names = {"dead_dir": f"fvtmp-{host}-{dead.pid}-abc", "dead_file": f".fvtmp-{host}-{dead.pid}-x1.tmp",
             "mine": f"fvtmp-{host}-{os.getpid()}-abc", "live": f"fvtmp-{host}-{os.getppid()}-abc",
             "other_host": f"fvtmp-elsewhere-{dead.pid}-abc", "entry": "env-123.so"}
    (tmp_path / names["dead_dir"]).mkdir()
    (tmp_path / names["dead_dir"] / "part.o").write_text("x")
    for key in ("dead_file", "entry"):
        (tmp_path / names[key]).write_text("x")
    for key in ("mine", "live", "other_host"):
        (tmp_path / names[key]).mkdir()
    bc.remove_stale_temps(tmp_path)
    left = set(os.listdir(tmp_path))
    assert left == {names["mine"], names["live"], names["other_host"], names["entry"]}


def test_a_build_directory_is_inside_the_cache_and_gone_afterwards(tmp_path):
    with bc.build_dir(tmp_path) as d:
        assert d.parent == tmp_path and d.is_dir() and d.name.startswith("fvtmp-")
        (d / "x.o").write_text("x")
    assert not d.exists()


def _hold(lock_path, text: bytes) -> int:
    """A second open file description holding the flock (as another process's would), its holder line written."""
    import fcntl

    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.pwrite(fd, text, 0)
    return fd


def test_a_waiter_for_a_held_build_lock_says_so_once_naming_the_holder_then_builds(tmp_path, monkeypatch, capfd):
    import threading

    monkeypatch.setattr(bc, "LOCK_NOTICE_S", 0.15)
    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, "30")
    art = tmp_path / "env-abc.so"
    fd = _hold(art.with_suffix(".lock"), b"4242 builder-host\n")
    threading.Timer(0.6, os.close, [fd]).start()  # the holder finishes after several notice periods
    assert bc.cached_build(art, "k", {}, Builder()) == b"library bytes"
    err = capfd.readouterr().err
    assert err.count("fastvec: waiting for pid 4242 on builder-host, which is building env-abc") == 1, err
    assert len(err.splitlines()) == 1 and bc.LOCK_TIMEOUT_ENV in err
    assert (tmp_path / "env-abc.lock").read_text().split() == [str(os.getpid()), socket.gethostname()]


def test_a_short_wait_for_a_build_lock_is_silent(tmp_path, monkeypatch, capfd):
    import threading

    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, "30")
    art = tmp_path / "env-abc.so"
    fd = _hold(art.with_suffix(".lock"), b"4242 builder-host\n")
    threading.Timer(0.2, os.close, [fd]).start()
    assert bc.cached_build(art, "k", {}, Builder()) == b"library bytes"
    assert capfd.readouterr().err == ""


def test_a_build_lock_held_past_the_timeout_gives_up_naming_the_holder_and_the_variable(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(bc, "LOCK_NOTICE_S", 0.1)
    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, "0.4")
    art = tmp_path / "env-abc.so"
    fd = _hold(art.with_suffix(".lock"), b"4242 builder-host\n")
    build = Builder()
    try:
        with pytest.raises(bc.BuildLockTimeout, match=r"held by pid 4242 on builder-host.*kill 4242.*"
                           + bc.LOCK_TIMEOUT_ENV):
            bc.cached_build(art, "k", {}, build)
    finally:
        os.close(fd)
    assert build.calls == 0 and not art.exists()
    assert capfd.readouterr().err.count("waiting for pid 4242") == 1


def test_an_unreadable_holder_line_is_named_as_unknown(tmp_path, monkeypatch):
    monkeypatch.setenv(bc.LOCK_TIMEOUT_ENV, "0.2")
    art = tmp_path / "env-abc.so"
    fd = _hold(art.with_suffix(".lock"), b"")
    try:
        with pytest.raises(bc.BuildLockTimeout, match=r"held by pid \? on \?"):
            bc.cached_build(art, "k", {}, Builder())
    finally:
        os.close(fd)


@pytest.mark.parametrize("error, cause", [(OSError(28, "No space left on device"), "(No space left on device)"),
                                          (OSError("quota exceeded"), "(quota exceeded)")])
def test_a_store_that_fails_names_the_entry_the_os_reason_alone_and_the_fix(tmp_path, monkeypatch, error, cause):
    """A cache entry the OS will not take is one CacheWriteError naming the entry, the cause (the OS's reason
    alone where it gives one, not the errno prefix and the temporary name; else the error's own text) and what
    to do; the build's bytes are not lost to the caller's retry."""
    def refuse(path, data):
        raise error

    monkeypatch.setattr(bc, "write_atomic", refuse)
    art = tmp_path / "env.so"
    with pytest.raises(bc.CacheWriteError) as err:
        bc.cached_build(art, "key1", {}, Builder())
    message = str(err.value)
    assert f"in {art} {cause}; " in message and "FASTVEC_CACHE_DIR" in message, message
    assert "Errno" not in message and "None" not in message


def test_a_cache_directory_refused_without_an_os_reason_names_the_errors_own_text(tmp_path, monkeypatch):
    """An error with no strerror (one raised by a file system layer in Python) is named by its own text."""
    def refuse(self, *args, **kwargs):
        raise OSError("mount is read-only")

    monkeypatch.setattr(bc.Path, "mkdir", refuse)
    with pytest.raises(bc.CacheDirError, match=rf"cannot create its build cache {tmp_path / 'c'} "
                                               r"\(mount is read-only\); set FASTVEC_CACHE_DIR"):
        bc.private_dir(tmp_path / "c")
