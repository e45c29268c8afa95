"""cuda/cublas.py's ctypes constants are the CUDA headers' values: the data types from library_types.h, the compute
types, transposes and default algorithm from cublas_api.h (each test skips where its header is not installed)."""

from __future__ import annotations

from conftest import cuda_header, header_enums

from fastvec.trainer.cuda import cublas


def test_operand_and_result_data_types_are_library_types_values():
    values = header_enums(cuda_header("library_types.h"))
    assert (cublas.CUDA_R_32F, cublas.CUDA_R_16BF) == (values["CUDA_R_32F"], values["CUDA_R_16BF"])


def test_each_precisions_compute_type_transposes_and_default_algorithm_are_cublas_api_values():
    values = header_enums(cuda_header("cublas_api.h"))
    # "bf16" is FAST_16BF: under FAST_16F (74) cuBLAS may round the operands to fp16 or to TF32, and an H200's
    # results under it kept float32's exponent range and lost bits as bf16's do: a GEMM alone did not tell them apart
    assert cublas.COMPUTE_TYPES == {"fp32": values["CUBLAS_COMPUTE_32F"],
                                    "tf32": values["CUBLAS_COMPUTE_32F_FAST_TF32"],
                                    "bf16": values["CUBLAS_COMPUTE_32F_FAST_16BF"]}
    assert (cublas.OP_N, cublas.OP_T) == (values["CUBLAS_OP_N"], values["CUBLAS_OP_T"])
    assert cublas.GEMM_DEFAULT == values["CUBLAS_GEMM_DEFAULT"]
