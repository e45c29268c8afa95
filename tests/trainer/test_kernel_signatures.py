"""The CUDA trainer's launch signatures (device.SIGNATURES, PyCUDA's prepare() letters) against its kernels'
parameter lists, and the argument structs kernels take by value (kernel_args.py's ctypes Structures) against their
C typedefs, read from the translation units it compiles (run through the C preprocessor, which expands the
parameter macros): a kernel or struct that changes without its Python twin fails here, on the CPU, instead of at
its first launch on a GPU."""

import re
import subprocess

import pytest

from fastvec.native import NATIVE_DIR, resolve_defines, source_path
from fastvec.native.cpu import find_compiler
from fastvec.native.gpu import ENV_INCLUDE
import ctypes

from fastvec.trainer.cuda.device import CUDA_DIR, SIGNATURES, module_source, prepare_format
from fastvec.trainer.cuda.kernel_args import STRUCTS

KERNEL = re.compile(r"__global__\s+void\s+(\w+)\s*\(([^)]*)\)", re.DOTALL)
TYPEDEF = re.compile(r"typedef\s+struct\s*\{([^}]*)\}\s*(\w+)\s*;", re.DOTALL)
# ctypes field types as prepare() letters.
CTYPES = {ctypes.c_void_p: "P", ctypes.c_int32: "i", ctypes.c_int64: "q", ctypes.c_uint64: "Q", ctypes.c_float: "f",
          ctypes.c_double: "d"}
# The C parameter types the kernels take, as prepare() letters (pointers are P whatever they point to).
LETTERS = {"int": "i", "float": "f", "double": "d", "long long": "q", "int64_t": "q",
           "unsigned long long": "Q", "uint64_t": "Q"}
# The modules the trainer builds: a Discrete env, self-play's Pong, with the fused policy's sizes (rollout.cu's
# per-warp and per-thread kernels and selfplay.cu exist only with them).
POLICY = {"POLICY_HIDDEN": 32, "POLICY_LAYERS": 1, "POLICY_MINGRU": 1, "POLICY_HIGHWAY": 1, "POLICY_HEAD_SIZE": 2}
MODULES = [("cartpole", POLICY), ("pong", {**POLICY, "POLICY_HEAD_SIZE": 3}), (None, {})]


def parameter_letter(kernel: str, param: str) -> str:
    """A kernel parameter's prepare() letter; {Name} for a struct of kernel_args.py passed by value."""
    if "*" in param:
        return "P"
    words = re.sub(r"\b(const|__restrict__|restrict)\b", " ", param).split()
    kind = " ".join(words[:-1])  # the last word is the parameter's name
    if kind in STRUCTS:
        return "{" + kind + "}"
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
def sources(tmp_path_factory) -> list[str]:
    """The preprocessed translation units of the modules the trainer builds."""
    return [preprocessed(env, defines, tmp_path_factory.mktemp("module")) for env, defines in MODULES]


@pytest.fixture(scope="module")
def kernels(sources) -> dict:
    """{kernel name: {prepare() letters of each definition met}} over the modules the trainer builds."""
    found: dict = {}
    for text in sources:
        for name, params in KERNEL.findall(text):
            params = [p for p in params.split(",") if p.strip() and p.strip() != "void"]
            found.setdefault(name, set()).add("".join(parameter_letter(name, p) for p in params))
    return found


@pytest.fixture(scope="module")
def structs(sources) -> dict:
    """{struct name: {((field name, prepare() letter), ...) of each definition met}} for kernel_args.py's structs."""
    found: dict = {}
    for text in sources:
        for body, name in TYPEDEF.findall(text):
            if name not in STRUCTS:
                continue
            fields = []
            for declaration in filter(str.strip, body.split(";")):
                kind, *names = declaration.split(",")
                first = parameter_letter(name, kind)
                fields.append((kind.replace("*", " ").split()[-1], first))
                fields += [(other.replace("*", " ").strip(), "P" if "*" in other or first == "P" else first)
                           for other in names]
            found.setdefault(name, set()).add(tuple(fields))
    return found


def test_the_modules_define_every_kernel_the_trainer_launches(kernels):
    assert sorted(set(SIGNATURES) - set(kernels)) == []


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_signature_matches_its_kernels_parameters(kernels, name):
    assert kernels.get(name, {SIGNATURES[name]}) == {SIGNATURES[name]}, \
        f"{name} takes {kernels[name]}, device.SIGNATURES says {SIGNATURES[name]!r}"


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_each_argument_struct_matches_its_typedef(structs, name):
    fields = tuple((field, CTYPES[kind]) for field, kind in STRUCTS[name]._fields_)
    assert structs.get(name) == {fields}, f"{name}: the C typedef has {structs.get(name)}, kernel_args.py {fields}"


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_argument_structs_keep_the_parameter_layout(name):
    """A struct passed as prepare()'s bytes ("216s", unaligned) lands where CUDA's parameter layout puts it only if
    its size keeps the next parameter aligned: every struct is a multiple of 8 bytes."""
    assert ctypes.sizeof(STRUCTS[name]) % 8 == 0 and ctypes.alignment(STRUCTS[name]) == 8


def test_prepare_format_gives_each_struct_its_size():
    assert prepare_format("{RolloutArgs}{StepSlices}i") == \
        f"{ctypes.sizeof(STRUCTS['RolloutArgs'])}s{ctypes.sizeof(STRUCTS['StepSlices'])}si"
