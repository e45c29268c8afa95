"""What the CUDA build cache records beside each cubin (NAME.json's inputs: the module, the arch, nvcc's flags and
version, the include folders and the env file with its hash) and where it keeps it, checked without a GPU: nvcc is
a stand-in, and the real one (where installed) compiles a cubin no GPU is needed for."""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from fastvec.native import gpu

VERSION = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.48\n" \
          "Build cuda_13.0.r13.0/compiler.1_0\n"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cuda"


@pytest.fixture
def nvcc(monkeypatch):
    """A stand-in nvcc: each run recorded, answered with cubin-N."""
    commands = []

    def run(cmd):
        commands.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(f"cubin-{len(commands)}".encode())
        return SimpleNamespace(returncode=0, stderr="")

    monkeypatch.setattr(gpu, "find_nvcc", lambda: "/opt/stand-in/nvcc")
    monkeypatch.setattr(gpu, "_nvcc_version", lambda path: VERSION)
    monkeypatch.setattr(gpu, "_run_nvcc", run)
    return commands


def _record(cache: Path) -> tuple[Path, dict]:
    (cubin,) = cache.glob("*.cubin")
    return cubin, json.loads(cubin.with_suffix(".json").read_text())


def test_the_record_names_the_env_file_and_its_hash(cache, nvcc, tmp_path):
    """A build with an env file records the env's absolute path (as the user's file, not the copy nvcc reads) and
    the sha256 of its bytes, beside the module's name, arch, flags with the sorted defines, nvcc and the last line
    of its --version, and the include folders."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "h.h").write_text("#define H 1\n")
    env = tmp_path / "envs" / "my env.h"
    env.parent.mkdir()
    text = b"#define OBS_SIZE 3\n/* the user's env */\n"
    env.write_bytes(text)
    source = '#include "h.h"\n#include "fastvec_env.h"\n'
    cubin = gpu.compile_cubin(source, include_dirs=[inc], defines={"ZETA": 2, "ALPHA": 1}, arch="sm_90",
                              name="env-my env", env_path=env)
    assert cubin == b"cubin-1" and len(nvcc) == 1
    path, meta = _record(cache)
    assert meta["inputs"] == {
        "name": "env-my_env", "arch": "sm_90", "options": ["-O3", "--fmad=false", "-DALPHA=1", "-DZETA=2"],
        "nvcc": "/opt/stand-in/nvcc", "nvcc_version": "Build cuda_13.0.r13.0/compiler.1_0",
        "include_dirs": [str(inc)], "env": str(env), "env_sha256": hashlib.sha256(text).hexdigest()}
    assert meta["artefact"] == path.name and path.name.startswith("env-my_env-sm_90-")
    assert meta["key"][:16] in path.name, "the file is named after its key"
    assert meta["size"] == len(b"cubin-1") and meta["sha256"] == hashlib.sha256(b"cubin-1").hexdigest()


def test_the_record_of_a_build_without_an_env_file_has_none(cache, nvcc, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu, "_nvcc_version", lambda path: "")
    gpu.compile_cubin("// no includes\n", include_dirs=[], arch="sm_80", name="trainer")
    _, meta = _record(cache)
    assert meta["inputs"] == {"name": "trainer", "arch": "sm_80", "options": ["-O3", "--fmad=false"],
                              "nvcc": "/opt/stand-in/nvcc", "nvcc_version": "", "include_dirs": [], "env": None,
                              "env_sha256": None}


def test_one_file_per_build_and_the_same_file_for_the_same_build(cache, nvcc, tmp_path):
    """The cache holds one cubin per distinct build (source, defines, arch, env content, a header the env includes)
    and gives an unchanged build back from its file without running nvcc; each file's record is of its own build."""
    env = tmp_path / "e.h"
    env.write_text("#define A 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.h").write_text("#define B 1\n")
    build = lambda **kw: gpu.compile_cubin('#include "fastvec_env.h"\n#include "sub/b.h"\n', include_dirs=[tmp_path],
                                           name="m", **{"arch": "sm_90", "env_path": env, **kw})
    assert build() == b"cubin-1"
    assert build() == b"cubin-1" and len(nvcc) == 1
    assert build(defines={"X": 1}) == b"cubin-2"
    assert build(arch="sm_89") == b"cubin-3"
    env.write_text("#define A 2\n")
    assert build() == b"cubin-4"
    (tmp_path / "sub" / "b.h").write_text("#define B 2\n")
    assert build() == b"cubin-5" and build() == b"cubin-5"
    files = sorted(cache.glob("m-*.cubin"))
    assert len(files) == 5 and len({p.name for p in files}) == 5
    records = [json.loads(p.with_suffix(".json").read_text()) for p in files]
    assert sorted(r["inputs"]["arch"] for r in records) == ["sm_89", "sm_90", "sm_90", "sm_90", "sm_90"]
    assert [r["inputs"]["env_sha256"] for r in records].count(hashlib.sha256(b"#define A 2\n").hexdigest()) == 2
    for path, record in zip(files, records):
        assert record["artefact"] == path.name and path.name.startswith(f"m-{record['inputs']['arch']}-")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_the_real_nvcc_builds_a_cubin_and_its_record_without_a_gpu(cache, tmp_path, monkeypatch):
    """nvcc itself (no GPU needed to compile): the cached artefact is an ELF cubin, and the record holds nvcc's path
    and the last line of its own --version."""
    nvcc = shutil.which("nvcc")
    monkeypatch.setattr(gpu, "find_nvcc", lambda: nvcc)
    env = tmp_path / "scale.h"
    env.write_text("#define SCALE 2.0f\n")
    source = '#include "fastvec_env.h"\nextern "C" __global__ void twice(float* x) { x[threadIdx.x] *= SCALE; }\n'
    cubin = gpu.compile_cubin(source, include_dirs=[], arch="sm_90", name="twice", env_path=env)
    assert cubin[:4] == b"\x7fELF"
    path, meta = _record(cache)
    assert path.read_bytes() == cubin
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    version = version.strip().splitlines()[-1]
    assert meta["inputs"]["nvcc"] == nvcc and meta["inputs"]["nvcc_version"] == version
    assert meta["inputs"]["env"] == str(env) and meta["inputs"]["env_sha256"] == hashlib.sha256(
        env.read_bytes()).hexdigest()


def test_a_header_is_taken_from_the_first_folder_that_has_it_as_nvcc_does(cache, nvcc, tmp_path):
    """#include "h.h" finds the including file's folder first, then the include folders in order: an edit to a copy
    of h.h that an earlier folder shadows changes nothing nvcc reads, so the cached cubin is used; an edit to the
    one found rebuilds."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "h.h").write_text(f"#define FROM_{folder.name.upper()} 1\n")
    build = lambda: gpu.compile_cubin('#include "h.h"\n', include_dirs=[first, second], arch="sm_90", name="m")
    assert build() == b"cubin-1"
    (second / "h.h").write_text("#define FROM_SECOND 2\n")
    assert build() == b"cubin-1" and len(nvcc) == 1, "the shadowed copy is not part of the build"
    (first / "h.h").write_text("#define FROM_FIRST 2\n")
    assert build() == b"cubin-2" and len(nvcc) == 2
