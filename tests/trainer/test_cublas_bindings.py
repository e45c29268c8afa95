"""cuda/cublas.py's ctypes constants are the CUDA headers' values: the data types from library_types.h, the compute
types, transposes and default algorithm from cublas_api.h (each test skips where its header is not installed)."""

from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path

import pytest

from fastvec.trainer.cuda import cublas


def cuda_header(name: str) -> Path:
    """`name` in the CUDA toolkit's include directory, or in an nvidia wheel on sys.path; else the test skips."""
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda",
             *sorted(glob.glob("/usr/local/cuda-*")), "/usr"]
    places = [Path(root) / "include" / name for root in roots if root]
    for entry in sys.path:
        places += [Path(entry or ".") / "nvidia" / sub / "include" / name
                   for sub in ("cublas", "cuda_runtime", "cu13", "cu12")]
    found = next((p for p in places if p.is_file()), None)
    if found is None:
        pytest.skip(f"no {name} here (the CUDA toolkit, or pip install nvidia-cublas, brings one)")
    return found


def enum_values(header: Path) -> dict[str, int]:
    """NAME = value of every enumerator the header spells out with a number."""
    text = header.read_text(errors="replace")
    enumerator = r"\b([A-Z][A-Z0-9_]+)\s*=\s*(-?(?:0x[0-9a-fA-F]+|\d+))"
    return {name: int(value, 0) for name, value in re.findall(enumerator, text)}


def test_operand_and_result_data_types_are_library_types_values():
    values = enum_values(cuda_header("library_types.h"))
    assert (cublas.CUDA_R_32F, cublas.CUDA_R_16BF) == (values["CUDA_R_32F"], values["CUDA_R_16BF"])


def test_each_precisions_compute_type_transposes_and_default_algorithm_are_cublas_api_values():
    values = enum_values(cuda_header("cublas_api.h"))
    # "bf16" is FAST_16BF: under FAST_16F (74) cuBLAS may round the operands to fp16 or to TF32, and an H200's
    # results under it kept float32's exponent range and lost bits as bf16's do: a GEMM alone did not tell them apart
    assert cublas.COMPUTE_TYPES == {"fp32": values["CUBLAS_COMPUTE_32F"],
                                    "tf32": values["CUBLAS_COMPUTE_32F_FAST_TF32"],
                                    "bf16": values["CUBLAS_COMPUTE_32F_FAST_16BF"]}
    assert (cublas.OP_N, cublas.OP_T) == (values["CUBLAS_OP_N"], values["CUBLAS_OP_T"])
    assert cublas.GEMM_DEFAULT == values["CUBLAS_GEMM_DEFAULT"]
