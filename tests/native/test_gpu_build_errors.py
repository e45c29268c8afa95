"""A user's env file built for the GPU fails as it does on the CPU: a parameter the file does not declare refused by
name before any GPU is asked for, nvcc's first errors at the env file's own name and line (its full output one flag
away), and an edited file loaded anew within one process. Runs without a GPU (nvcc alone for the compile error)."""

import shutil
from pathlib import Path

import pytest

from fastvec.native import NATIVE_DIR, cuda, cuda_build, gpu
from fastvec.native.cpu import CompileError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_env.h"


def test_an_undeclared_parameter_is_refused_before_the_gpu_is_asked_for(monkeypatch):
    monkeypatch.setattr(cuda_build, "CudaCompiledEnv", lambda *args: pytest.fail("built despite the misspelling"))
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) LENGHT for env file 'my_env.h'.*LENGTH \(default 9\)"):
        cuda.load(EXAMPLE, (("LENGHT", 12),), 0)


def test_a_built_in_env_is_not_checked_as_an_env_file(monkeypatch):
    built = []
    monkeypatch.setattr(cuda_build, "_loaded", {})
    monkeypatch.setattr(cuda_build, "CudaCompiledEnv", lambda path, defines, index: built.append(defines) or object())
    cuda.load(NATIVE_DIR / "cartpole.h", (("FLOAT32", 1),), 0)  # the registry's parameter, not an #ifndef block
    assert built == [{"FLOAT32": 1}]


def test_an_edited_env_file_loads_its_new_build_in_the_same_process(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(cuda_build, "_loaded", {})
    monkeypatch.setattr(cuda_build, "CudaCompiledEnv",
                        lambda path, defines, index: built.append(path.read_text()) or object())
    env = tmp_path / "my_env.h"
    env.write_text(EXAMPLE.read_text())
    first = cuda.load(env, (("LENGTH", 5),), 0)
    assert cuda.load(env, (("LENGTH", 5),), 0) is first and len(built) == 1  # unchanged: the same build
    env.write_text(EXAMPLE.read_text().replace("#define LENGTH 9", "#define LENGTH 10"))
    assert cuda.load(env, (("LENGTH", 5),), 0) is not first and "#define LENGTH 10" in built[-1]
    assert cuda.load(env, (("LENGTH", 6),), 0) is not first and len(built) == 3  # other defines: another build


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_an_nvcc_error_names_the_env_file_and_line_in_a_few_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FASTVEC_BUILD_LOG", raising=False)
    bad = tmp_path / "bad_env.h"
    text = EXAMPLE.read_text().replace("s->steps += 1;", "s->steps += undefined_thing;")
    bad.write_text(text)
    line = text.splitlines().index(next(x for x in text.splitlines() if "undefined_thing" in x)) + 1
    with pytest.raises(CompileError) as err:
        gpu.compile_cubin(cuda.env_source(), include_dirs=[NATIVE_DIR, tmp_path], arch="sm_90", name="env-bad_env",
                          env_path=bad)
    message = str(err.value)
    assert message.startswith("compiling 'bad_env.h' for the GPU failed:"), message
    assert f"bad_env.h({line}): error: identifier \"undefined_thing\" is undefined" in message, message
    assert len(message.splitlines()) <= 5 and "fastvec-nvcc-" not in message, message  # no build directory
    assert "nvcc" in err.value.log and "undefined_thing" in err.value.log  # the command and full output kept
    monkeypatch.setenv("FASTVEC_BUILD_LOG", "1")
    with pytest.raises(CompileError, match=r"\$ .*nvcc"):
        gpu.compile_cubin(cuda.env_source(), include_dirs=[NATIVE_DIR, tmp_path], arch="sm_90", name="env-bad_env",
                          env_path=bad)
