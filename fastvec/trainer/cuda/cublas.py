"""cuBLAS through ctypes: one handle on the trainer's stream with a workspace from the arena (so calls can
be captured into CUDA graphs), and `matmul`, a row-major GEMM in fp32 (or bf16 operands, fp32 compute).
cuBLAS is column-major: row-major C = op(A) op(B) is computed as column-major C^T = op(B)^T op(A)^T."""

from __future__ import annotations

import ctypes
import glob
import os
from functools import lru_cache

OP_N, OP_T = 0, 1
CUDA_R_32F, CUDA_R_16BF = 0, 14
# cublasComputeType_t per trainer precision: "fp32" is full fp32 (no TF32), so it matches NumPy to float
# rounding; "tf32" and "bf16" let cuBLAS round the fp32 operands to TF32 / bfloat16 for the tensor cores
# (fp32 accumulation, fp32 storage: the master weights and every other kernel stay fp32).
COMPUTE_TYPES = {"fp32": 68, "tf32": 77, "bf16": 75}
GEMM_DEFAULT = -1


class CublasError(RuntimeError):
    """A cuBLAS call failed; the message names the call and its status."""


@lru_cache(maxsize=None)
def libcublas() -> ctypes.CDLL:
    """libcublas from the CUDA toolkit (or the nvidia-cublas wheel), or an error naming where we looked."""
    candidates = ["libcublas.so"]
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    for root in filter(None, roots):
        candidates += sorted(glob.glob(os.path.join(root, "lib64", "libcublas.so*")))
        candidates += sorted(glob.glob(os.path.join(root, "targets", "*", "lib", "libcublas.so*")))
    candidates += sorted(glob.glob("/usr/local/cuda*/lib64/libcublas.so*"))
    try:
        import nvidia.cublas  # the pip wheel PyTorch brings
        candidates += sorted(glob.glob(os.path.join(list(nvidia.cublas.__path__)[0], "lib", "libcublas.so*")))
    except ImportError:
        pass
    errors = []
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError as err:
            errors.append(str(err))
    raise CublasError("cannot load libcublas (tried " + ", ".join(candidates) + "); install the CUDA toolkit "
                      "or set CUDA_HOME")


def check(status: int, call: str) -> None:
    if status != 0:
        raise CublasError(f"{call} failed with cublasStatus_t {status}")


class Cublas:
    """A cuBLAS handle bound to `stream` (a PyCUDA stream) with a fixed workspace (device pointer, bytes)."""

    def __init__(self, stream, workspace_ptr: int, workspace_bytes: int, precision: str = "fp32"):
        if precision not in COMPUTE_TYPES:
            raise ValueError(f"precision {precision!r} is not supported; use one of {sorted(COMPUTE_TYPES)}")
        self.compute = COMPUTE_TYPES[precision]
        self.lib = libcublas()
        self.handle = ctypes.c_void_p()
        check(self.lib.cublasCreate_v2(ctypes.byref(self.handle)), "cublasCreate_v2")
        check(self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(stream.handle)), "cublasSetStream_v2")
        check(self.lib.cublasSetWorkspace_v2(self.handle, ctypes.c_void_p(workspace_ptr),
                                             ctypes.c_size_t(workspace_bytes)), "cublasSetWorkspace_v2")
        self.gemm = self.lib.cublasGemmEx

    def matmul(self, out: int, a: int, b: int, m: int, n: int, k: int, trans_a: bool = False,
               trans_b: bool = False, alpha: float = 1.0, beta: float = 0.0, dtype: int = CUDA_R_32F,
               out_dtype: int = CUDA_R_32F, lda: int = 0, ldc: int = 0) -> None:
        """Row-major out (m, n) = alpha * op(a) @ op(b) + beta * out, op(a) (m, k), op(b) (k, n).
        a is stored (m, k), or (k, m) when trans_a; b is stored (k, n), or (n, k) when trans_b.
        a and b are `dtype`, out `out_dtype` (fp32, or bf16 where a and b are). fp32 operands are multiplied
        per the handle's precision; bf16 operands as they are, with fp32 accumulation. lda, ldc: the row strides
        (elements) of a and out where they are columns of a wider matrix (0: dense)."""
        compute = COMPUTE_TYPES["fp32"] if dtype == CUDA_R_16BF else self.compute
        c_int = ctypes.c_int
        alpha_c, beta_c = ctypes.c_float(alpha), ctypes.c_float(beta)
        status = self.gemm(
            self.handle, c_int(OP_T if trans_b else OP_N), c_int(OP_T if trans_a else OP_N),
            c_int(n), c_int(m), c_int(k), ctypes.byref(alpha_c),
            ctypes.c_void_p(b), c_int(dtype), c_int(k if trans_b else n),
            ctypes.c_void_p(a), c_int(dtype), c_int(lda or (m if trans_a else k)),
            ctypes.byref(beta_c), ctypes.c_void_p(out), c_int(out_dtype), c_int(ldc or n),
            c_int(compute), c_int(GEMM_DEFAULT))
        check(status, f"cublasGemmEx(m={m}, n={n}, k={k})")

    def close(self) -> None:
        if self.handle.value:
            self.lib.cublasDestroy_v2(self.handle)
            self.handle = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
