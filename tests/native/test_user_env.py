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
    monkeypatch.setattr(cpu.shutil, "which", lambda name: None)
    with pytest.raises(cpu.CompileError, match="no C compiler found.*apt install gcc"):
        cpu.compile_env(EXAMPLE, {"LENGTH": 5})
