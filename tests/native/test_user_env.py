"""Loading a user's env from one source file: the example env, parameters as defines, compile
errors with the compiler's message, the build cache, and the file's validity as CUDA (nvcc)."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import fastvec
from fastvec.native import NATIVE_DIR, cpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_env.h"


def test_example_env_plays_by_its_rules():
    envs = fastvec.make_vec_from_source(EXAMPLE, num_envs=16, length=12)
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (16, 2) and np.all(np.isin(obs[:, 0] * 12, [5, 6, 7]))
    start = np.rint(obs[:, 0] * 12).astype(int)
    for t in range(1, 20):  # always walk right: the goal at cell 11 ends each episode with +1
        obs, rew, term, trunc, info = envs.step(np.ones(16, np.int64))
        done_now = start + t >= 11
        np.testing.assert_array_equal(term, done_now & (start + t == 11))
        if term.any():
            assert np.all(rew[term] == 1.0) and np.all(info["reached_goal"][term] == 1.0)
        start = np.where(term, -100, start)  # finished envs are out of the check
        if (start < 0).all():
            break
    assert (start < 0).all()


def test_defines_change_the_build():
    short = fastvec.make_vec_from_source(EXAMPLE, num_envs=1, length=4)
    obs, _ = short.reset(seed=1)
    assert short.unwrapped.batch.render(0).shape == (16, 64, 3)
    assert obs[0, 0] * 4 in (1, 2, 3)


def test_compile_error_shows_compiler_output(tmp_path):
    bad = tmp_path / "bad_env.h"
    bad.write_text(EXAMPLE.read_text().replace("s->steps += 1;", "s->steps += undefined_thing;"))
    with pytest.raises(cpu.CompileError, match="undefined_thing"):
        fastvec.make_vec_from_source(bad, num_envs=2)


def test_missing_file_and_bad_define_names(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such_env.h"):
        fastvec.make_vec_from_source(tmp_path / "no_such_env.h", num_envs=2)
    with pytest.raises(ValueError, match="not a C identifier"):
        cpu.compile_env(EXAMPLE, {"BAD NAME; rm -rf": 1})


def test_build_is_cached_by_content(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path))
    env = tmp_path / "env.h"
    env.write_text(EXAMPLE.read_text())
    first = cpu.compile_env(env, {})
    assert cpu.compile_env(env, {}) == first  # no rebuild for the same content
    env.write_text(EXAMPLE.read_text().replace("#define LENGTH 9", "#define LENGTH 10"))
    assert cpu.compile_env(env, {}) != first


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("source", ["cartpole.h", "examples/my_env.h"])
def test_env_sources_compile_as_cuda(source, tmp_path):
    path = EXAMPLE if source.startswith("examples") else NATIVE_DIR / source
    driver = tmp_path / "driver.cu"
    driver.write_text(cpu.driver_source(path))
    out = subprocess.run(["nvcc", "-arch=sm_90", "-c", f"-I{NATIVE_DIR}", str(driver), "-o", str(tmp_path / "d.o")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_missing_compiler_says_how_to_get_one(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(cpu.shutil, "which", lambda name: None)
    with pytest.raises(cpu.CompileError, match="no C compiler found.*apt install gcc"):
        cpu.compile_env(EXAMPLE, {"LENGTH": 5})


def _count_compiles(monkeypatch) -> list:
    """The compiler runs that build a library (cpu._run's "compiling ..." calls, not the preprocessing run
    that computes the cache key), recorded in order."""
    calls, real_run = [], cpu._run
    monkeypatch.setattr(cpu, "_run", lambda cmd, what: (calls.append(what) if what.startswith("compiling") else None)
                        or real_run(cmd, what))
    return calls


def test_compile_error_is_compiled_and_reported_once(tmp_path, monkeypatch):
    """The error text always holds the command line, -fopenmp(-simd) included: it used to be taken for
    a compiler without OpenMP and compiled a second time. Support for the flag is probed instead."""
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad_env.h"
    bad.write_text(EXAMPLE.read_text().replace("s->steps += 1;", "s->steps += undefined_thing;"))
    calls = _count_compiles(monkeypatch)
    with pytest.raises(cpu.CompileError, match="undefined_thing") as err:
        cpu.compile_env(bad, {})
    assert calls == ["compiling 'bad_env.h'"]
    assert str(err.value).count("undefined_thing' undeclared") <= 1  # one compiler output, not two


@pytest.mark.parametrize("case", ["missing", "declared_only", "renamed"])
def test_missing_env_step_is_named(tmp_path, monkeypatch, case):
    """An env file without env_step: a CompileError that says so (it was a raw `OSError: undefined symbol:
    env_step` from the loader, the build having passed with an implicit declaration)."""
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    source = EXAMPLE.read_text()
    start = source.index("FV_FN int env_step(")
    end = source.index("FV_FN void env_render(")
    body = {"missing": "",
            "declared_only": "int env_step(State* s, fv_rng* rng, const long long* actions, float* obs, "
                             "float* rewards, float* stats);\n",
            "renamed": source[start:end].replace("env_step(", "env_stepp(")}[case]
    env = tmp_path / "my_env.h"
    env.write_text(source[:start] + body + source[end:])
    calls = _count_compiles(monkeypatch)
    with pytest.raises(cpu.CompileError, match=r"^env_step not defined in my_env\.h: an env file defines"):
        fastvec.make_vec_from_source(env, num_envs=2)
    assert calls == ["compiling 'my_env.h'"]
    assert not list((tmp_path / "cache").glob("*.so"))  # nothing broken was cached


def test_missing_size_and_state_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    source = EXAMPLE.read_text()
    no_size = tmp_path / "no_size.h"
    no_size.write_text(source.replace("#define OBS_SIZE 2", ""))
    with pytest.raises(cpu.CompileError, match=r"^OBS_SIZE not defined in no_size\.h"):
        cpu.compile_env(no_size, {})
    no_state = tmp_path / "no_state.h"
    no_state.write_text(source.replace("} State;", "} Stat;"))
    with pytest.raises(cpu.CompileError, match=r"^State not defined in no_state\.h"):
        cpu.compile_env(no_state, {})
