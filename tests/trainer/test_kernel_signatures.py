"""The CUDA trainer's launch signatures (device.SIGNATURES, PyCUDA's prepare() letters) against its kernels'
parameter lists, read from the translation units it compiles (run through the C preprocessor, which expands the
parameter macros): a kernel whose parameters change without its signature fails here, on the CPU, instead of at
its first launch on a GPU."""

import re
import subprocess

import pytest

from fastvec.native import NATIVE_DIR, resolve_defines, source_path
from fastvec.native.cpu import find_compiler
from fastvec.native.gpu import ENV_INCLUDE
from fastvec.trainer.cuda.device import CUDA_DIR, SIGNATURES, module_source

KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", re.DOTALL)
# The C parameter types the kernels take, as prepare() letters (pointers are P whatever they point to).
LETTERS = {"int": "i", "float": "f", "double": "d", "long long": "q", "int64_t": "q",
           "unsigned long long": "Q", "uint64_t": "Q"}
# The modules the trainer builds: a Discrete env, self-play's Pong, with the fused policy's sizes (rollout.cu's
# per-warp and per-thread kernels and selfplay.cu exist only with them).
POLICY = {"POLICY_HIDDEN": 32, "POLICY_LAYERS": 1, "POLICY_MINGRU": 1, "POLICY_HIGHWAY": 1, "POLICY_HEAD_SIZE": 2}
MODULES = [("cartpole", POLICY), ("pong", {**POLICY, "POLICY_HEAD_SIZE": 3}), (None, {})]


def parameter_letter(kernel: str, param: str) -> str:
    if "*" in param:
        return "P"
    words = re.sub(r"\b(const|__restrict__|restrict)\b", " ", param).split()
    kind = " ".join(words[:-1])  # the last word is the parameter's name
    assert kind in LETTERS, f"{kernel}: parameter {param.strip()!r} has no prepare() letter for {kind!r}"
    return LETTERS[kind]


def without_launch_bounds(text: str) -> str:
    """text with every __launch_bounds__(...) removed (its expanded arguments nest parentheses)."""
    while (start := text.find("__launch_bounds__")) >= 0:
        depth, end = 0, text.index("(", start)
        while True:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
            if depth == 0:
                break
        text = text[:start] + text[end:]
    return text


def preprocessed(env: str | None, defines: dict, tmp_path) -> str:
    """The module's translation unit after the preprocessor (an empty cuda_bf16.h: only the kernels' parameter
    lists are read, and none of them takes a bf16 value)."""
    (tmp_path / "cuda_bf16.h").write_text("")
    include = [tmp_path, CUDA_DIR, NATIVE_DIR]
    if env is not None:
        (tmp_path / ENV_INCLUDE).write_text(source_path(env).read_text())
        defines = {**resolve_defines(env, {}), **defines}
    cmd = [*find_compiler(), "-E", "-P", "-x", "c++", "-D__CUDACC__", *[f"-I{d}" for d in include],
           *[f"-D{k}={v}" for k, v in defines.items()], "-"]
    out = subprocess.run(cmd, input=module_source(source_path(env) if env else None), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return without_launch_bounds(out.stdout)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict:
    """{kernel name: {prepare() letters of each definition met}} over the modules the trainer builds."""
    found: dict = {}
    for env, defines in MODULES:
        text = preprocessed(env, defines, tmp_path_factory.mktemp("module"))
        for name, params in KERNEL.findall(text):
            params = [p for p in params.split(",") if p.strip() and p.strip() != "void"]
            found.setdefault(name, set()).add("".join(parameter_letter(name, p) for p in params))
    return found


def test_the_modules_define_every_kernel_the_trainer_launches(kernels):
    assert sorted(set(SIGNATURES) - set(kernels)) == []


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_signature_matches_its_kernels_parameters(kernels, name):
    assert kernels.get(name, {SIGNATURES[name]}) == {SIGNATURES[name]}, \
        f"{name} takes {kernels[name]}, device.SIGNATURES says {SIGNATURES[name]!r}"
