"""What a user's env file build takes and says: an edited file rebuilt in the same process, only the
parameters the file declares, CC as given, bounded build-lock waits and dead builds' temp dirs removed,
a compile error in a few lines, and a path that is not a file named for what it is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import fastvec
from fastvec.native import cpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_env.h"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(path))
    return path


def test_an_edited_env_file_loads_its_new_build_in_the_same_process(tmp_path, cache):
    env = tmp_path / "corridor.h"
    env.write_text(EXAMPLE.read_text())
    assert fastvec.make_vec_from_source(env).unwrapped.batch.render(0).shape == (16, 9 * 16, 3)
    env.write_text(EXAMPLE.read_text().replace("#define LENGTH 9", "#define LENGTH 5"))
    assert fastvec.make_vec_from_source(env).unwrapped.batch.render(0).shape == (16, 5 * 16, 3)
    header = tmp_path / "length.h"  # a header beside it, edited (to another size: mtimes can be coarse)
    header.write_text("#define LENGTH 7\n")
    env.write_text('#include "length.h"\n' + EXAMPLE.read_text())
    assert cpu.load(env, ()).render_shape == (16, 7 * 16, 3)
    header.write_text("#define LENGTH 11\n")
    assert cpu.load(env, ()).render_shape == (16, 11 * 16, 3)


def test_a_parameter_the_env_file_does_not_declare_is_refused_with_its_parameters(cache):
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) LENGHT for env file 'my_env.h'.*LENGTH \(default 9\)"):
        fastvec.make_vec_from_source(EXAMPLE, lenght=30)
    with pytest.raises(TypeError, match="LENGHT"):
        cpu.load(EXAMPLE, (("LENGHT", 12),))
    assert fastvec.make_vec_from_source(EXAMPLE, length=4).unwrapped.batch.render(0).shape == (16, 64, 3)


def test_the_batch_layers_own_parameters_pass_with_any_env_file_and_only_the_unknown_ones_are_named():
    """batch.h's switches (SIMD_STEP, NUM_STATS, ...) may be given to any env file without its declaring them; a
    misspelt name next to one is refused naming it alone."""
    from fastvec.native.env_file import check_env_file_defines

    check_env_file_defines(EXAMPLE, {"LENGTH": 4, "SIMD_STEP": 1})
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) LENGHT for env file 'my_env.h'"):
        check_env_file_defines(EXAMPLE, {"LENGHT": 4, "SIMD_STEP": 1})


def test_declared_parameters_come_from_the_file_and_its_own_headers_and_the_threshold_passes(tmp_path, cache):
    (tmp_path / "sizes.h").write_text("#ifndef WIDTH\n#define WIDTH 3 /* cells */\n#endif\n")
    env = tmp_path / "env.h"
    env.write_text('#include "sizes.h"\n' + EXAMPLE.read_text())
    from fastvec.native.env_file import declared_params

    assert declared_params(env) == {"WIDTH": "3", "LENGTH": "9"}
    cpu.compile_env(env, {"WIDTH": 4, "LENGTH": 6, "REWARD_THRESHOLD": 0.5})  # the trainer's --env.reward_threshold
    env.write_text('#ifndef MY_ENV_H\n#define MY_ENV_H\n#if MODE == 1\n#endif\n' + EXAMPLE.read_text() + "#endif\n")
    assert declared_params(env) == {"MODE": "", "LENGTH": "9"}  # tested, never defined: a parameter, no default


def test_a_switch_without_a_value_and_a_name_ending_in_h_with_one_are_parameters_and_a_guard_is_not(tmp_path):
    """`#ifndef VERBOSE` / `#define VERBOSE` declares a switch (default: defined, no value); `#ifndef CELL_H` /
    `#define CELL_H 2` a parameter that happens to end in _H; only `#ifndef X_H` / `#define X_H` with no value
    is an include guard."""
    from fastvec.native.env_file import declared_params
    env = tmp_path / "env.h"
    env.write_text("#ifndef MY_ENV_H\n#define MY_ENV_H\n#ifndef VERBOSE\n#define VERBOSE\n#endif\n"
                   "#ifndef CELL_H\n#define CELL_H 2\n#endif\n" + EXAMPLE.read_text() + "#endif\n")
    assert declared_params(env) == {"VERBOSE": "", "CELL_H": "2", "LENGTH": "9"}


def test_cc_is_used_as_given_or_refused_naming_cc(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    with pytest.raises(cpu.CompileError, match=r"^CC='/nonexistent': .* not an executable found on PATH"):
        cpu.compile_env(EXAMPLE, {})
    monkeypatch.setenv("CC", "gcc -O0")
    assert cpu.find_compiler() == ("gcc", "-O0")
    lib = cpu.compile_env(EXAMPLE, {})
    assert '"compiler": "gcc -O0"' in cpu.sidecar(lib).read_text()


def _hold_lock(lock: Path) -> subprocess.Popen:
    code = ("import sys, time\nfrom pathlib import Path\nfrom fastvec.native.build_cache import _locked\n"
            "with _locked(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_build_lock_wait_is_bounded_and_names_the_holder(tmp_path, monkeypatch):
    from fastvec.native import build_cache

    artefact = tmp_path / "env-abc.so"
    holder = _hold_lock(artefact.with_suffix(".lock"))
    try:
        monkeypatch.setenv("FASTVEC_BUILD_LOCK_TIMEOUT", "0.3")
        with pytest.raises(build_cache.BuildLockTimeout, match=rf"held by pid {holder.pid} .*kill {holder.pid}"):
            cpu.cached_build(artefact, "key", {}, lambda: b"never built")
    finally:
        holder.kill()
        holder.wait()
    assert cpu.cached_build(artefact, "key", {}, lambda: b"built") == b"built"  # the lock died with its holder
    monkeypatch.setenv("FASTVEC_BUILD_LOCK_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="FASTVEC_BUILD_LOCK_TIMEOUT='soon'"):
        cpu.cached_build(artefact, "other key", {}, lambda: b"x")


def test_temp_files_of_dead_builds_are_removed_and_live_ones_kept(cache):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = cpu.safe_name(socket.gethostname())
        cache.mkdir(mode=0o700)
        stale_dir, stale_file = cache / f"fvtmp-{host}-{dead.pid}-abc_1", cache / f".fvtmp-{host}-{dead.pid}-x9.tmp"
        live_dir = cache / f"fvtmp-{host}-{live.pid}-abc_2"
        for folder in (stale_dir, live_dir):
            folder.mkdir()
            (folder / "driver.c").write_text("")
        stale_file.write_bytes(b"half a library")
        cpu.compile_env(EXAMPLE, {})
        assert not stale_dir.exists() and not stale_file.exists() and live_dir.exists()
        assert not [p for p in os.listdir(cache) if p.startswith("fvtmp-") and p != live_dir.name]
    finally:
        live.kill()
        live.wait()


def test_a_compile_error_is_a_few_lines_with_file_and_line_and_the_full_log_attached(tmp_path, cache):
    bad = tmp_path / "bad_env.h"
    bad.write_text(EXAMPLE.read_text().replace("s->steps += 1;", "s->steps += undefined_thing;"))
    line = 1 + EXAMPLE.read_text().split("s->steps += 1;")[0].count("\n")
    with pytest.raises(cpu.CompileError) as err:
        fastvec.make_vec_from_source(bad)
    message = str(err.value)
    assert len(message.splitlines()) <= 6, message
    assert f"bad_env.h:{line}:" in message and "undefined_thing" in message and "error" in message
    assert "$ " in err.value.log and str(bad) in err.value.log and "undefined_thing" in err.value.log


@pytest.mark.parametrize("value", [None, True, float("nan"), [1]])
def test_a_define_value_that_is_no_number_is_refused_before_compiling_naming_the_key(value, cache, monkeypatch):
    monkeypatch.setattr(cpu, "_run", lambda cmd, what: pytest.fail(f"compiled: {cmd}"))
    with pytest.raises((TypeError, ValueError), match=r"^LENGTH="):
        fastvec.make_vec_from_source(EXAMPLE, length=value)


def test_a_path_that_is_not_a_file_says_what_it_is(tmp_path):
    with pytest.raises(FileNotFoundError, match="is a directory, not an env file"):
        fastvec.make_vec_from_source(tmp_path)
    with pytest.raises(FileNotFoundError, match="is a character device, not an env file"):
        fastvec.make_vec_from_source(os.devnull)
    with pytest.raises(FileNotFoundError, match="nothing.h' not found"):
        fastvec.make_vec_from_source(tmp_path / "nothing.h")


def test_fastvec_train_refuses_a_parameter_the_env_file_does_not_declare(tmp_path, capsys):
    from fastvec.trainer import cli

    assert cli.main([str(EXAMPLE), "--env.LENGHT=12", "--train.device=cpu", f"--run-dir={tmp_path / 'run'}"]) == 2
    assert "unknown parameter(s) LENGHT for env file 'my_env.h'" in capsys.readouterr().err


def test_an_env_files_text_is_read_as_the_preprocessor_reads_it(tmp_path):
    """Parameters and define values read from the text: directives with spaces after `#`, comments
    ignored, headers included by a quoted name read once each (a cycle too) from the file's folder, fastvec's
    contract headers and missing headers skipped; names tested in `#if defined(...)` that nothing defines are
    parameters, reserved `_` names are not; FV_* and REWARD_THRESHOLD pass without being declared; a file with no
    parameters says so."""
    from fastvec.native.env_file import check_env_file_defines, declared_params, define_value

    (tmp_path / "a.h").write_text('#include "b.h"\n#  ifndef  SPEED\n#  define SPEED 7 // cells a step\n#endif\n'
                                  "#define OBS_T unsigned char /* bytes */\n#define EMPTY\n")
    (tmp_path / "b.h").write_text('#include "a.h"\n#include "fastvec.h"\n#include "batch.h"\n#include "nowhere.h"\n'
                                  "#if defined(FAST) && _PRIVATE > 1\n#endif\n/* #ifndef GHOST\n#define GHOST 1 */\n")
    env = tmp_path / "env.h"
    env.write_text('#include "a.h"\n#ifndef LENGTH\n#define LENGTH 9\n#endif\n#define OBS_T float\n')
    assert declared_params(env) == {"FAST": "", "SPEED": "7", "LENGTH": "9"}
    assert define_value(env, "OBS_T") == "float"  # the file's own define before its headers'
    assert define_value(tmp_path / "a.h", "OBS_T") == "unsigned char"
    assert define_value(env, "SPEED") == "7" and define_value(env, "EMPTY") is None
    assert define_value(env, "GHOST") is None and define_value(env, "NOWHERE") is None
    check_env_file_defines(env, {"SPEED": 1, "FAST": 1, "FV_CHECK": 1, "REWARD_THRESHOLD": 2.0})
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) GHOST, _PRIVATE for env file 'env.h'.*"
                                        r"FAST, LENGTH \(default 9\), SPEED \(default 7\)\. A parameter"):
        check_env_file_defines(env, {"GHOST": 1, "_PRIVATE": 2, "SPEED": 1})
    bare = tmp_path / "bare.h"
    bare.write_text("#define OBS_SIZE 4\n")
    with pytest.raises(TypeError, match="its parameters are: none"):
        check_env_file_defines(bare, {"LENGTH": 3})
    check_env_file_defines(bare, {})


def test_a_header_in_the_env_files_folder_is_read_before_fastvecs_header_of_the_same_name(tmp_path):
    """`#include "name.h"` finds the header next to the including file first, then fastvec's native folder, as the
    compiler's quoted include does: a user's own mountaincar_common.h shadows fastvec's (its defines and parameters
    are read, not fastvec's), and a name only fastvec has is read from fastvec's folder."""
    from fastvec.native.env_file import declared_params, define_value

    (tmp_path / "mountaincar_common.h").write_text("#ifndef MINE\n#define MINE 3\n#endif\n#define MC_FORCE 0.5\n")
    env = tmp_path / "env.h"
    env.write_text('#include "mountaincar_common.h"\n#define OBS_SIZE 2\n')
    assert define_value(env, "MC_FORCE") == "0.5" and define_value(env, "MINE") == "3"
    assert define_value(env, "MC_GRAVITY") is None  # fastvec's mountaincar_common.h is not read
    assert declared_params(env) == {"MINE": "3"}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "env.h").write_text('#include "mountaincar_common.h"\n')
    assert define_value(tmp_path / "sub" / "env.h", "MC_GRAVITY") == "0.0025"
    assert define_value(tmp_path / "sub" / "env.h", "MINE") is None
