"""Fixtures of the native tests: `c_shim` builds a small C file against fastvec/native's headers, with the CPU
backend's floating-point flags (no contraction, no errno), and loads it."""

import ctypes
import shutil
import subprocess

import pytest

from fastvec.native import NATIVE_DIR


@pytest.fixture(scope="session")
def c_shim(tmp_path_factory):
    """build(source) -> ctypes.CDLL of `source` compiled with -I fastvec/native; skips without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")

    def build(source: str) -> ctypes.CDLL:
        if cc is None:
            pytest.skip("no C compiler")
        tmp = tmp_path_factory.mktemp("shim")
        (tmp / "shim.c").write_text(source)
        out = tmp / "shim.so"
        subprocess.run([cc, "-O2", "-std=c99", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno",
                        f"-I{NATIVE_DIR}", str(tmp / "shim.c"), "-o", str(out), "-lm"], check=True,
                       capture_output=True)
        return ctypes.CDLL(str(out))

    return build
