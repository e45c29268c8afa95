"""PyCUDA for the fused trainer: the device's primary context (shared with PyTorch/JAX), the trainer's
kernels compiled with nvcc once and cached on disk by a hash of every source they include, and
prepared launches with their argument signatures."""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from fastvec.native import NATIVE_DIR, check_define_names

CUDA_DIR = Path(__file__).resolve().parent
NVCC_OPTIONS = ["-O3"]

# Argument signatures of kernels.cu / rollout.cu / batch.h entry points, in PyCUDA's prepare()
# letters: P pointer, i int32, q int64, Q uint64, f float32, d float64.
SIGNATURES = {
    "fill_kernel": "Pqf",
    "add_bias_kernel": "PPqiP",
    "to_bf16_kernel": "qPP",
    "mingru_forward_kernel": "iiii" + "P" * 9,
    "mingru_forward_bf16_kernel": "iiii" + "P" * 9,
    "mingru_backward_kernel": "iiii" + "P" * 10,
    "mingru_backward_bf16_kernel": "iiii" + "P" * 10,
    "mlp_forward_kernel": "qiPPP",
    "mlp_backward_kernel": "qPPP",
    "bias_grad_kernel": "qiPPPPPP",
    "sample_actions_kernel": "iiiPPPP",
    "policy_uniforms_kernel": "iQqP",
    "gae_kernel": "iiPPiPPfffiPPffPP",
    "shuffle_kernel": "iiQiPP",
    "gather_minibatch_kernel": "iiiii" + "P" * 19,
    "gather_state_kernel": "iiiiiPPP",
    "sums_partial_kernel": "qiPP",
    "moments_finish_kernel": "iPqP",
    "ppo_loss_kernel": "ii" + "P" * 8 + "fff" + "P" * 5,
    "explained_variance_finish_kernel": "iPqP",
    "grad_norm_kernel": "qPPPfddP",
    "adam_kernel": "qPPPPPfffff",
    "muon_momentum_kernel": "qPPPPf",
    "frobenius_normalize_kernel": "qPP",
    "muon_apply_kernel": "qPPPd",
    "ns_poly_init_kernel": "iPPff",
    "muon_small_kernel": "PPPPPPffffifffff",
    "begin_update_kernel": "P",
    "schedule_kernel": "Pdii",
    "advance_rollout_kernel": "Pi",
    "rollout_step_kernel": "i" + "P" * 18 + "iQii",
    "rollout_step_staged_kernel": "i" + "P" * 18 + "iQii",
    "policy_step_kernel": "i" + "P" * 5 + "iP" + "P" * 16 + "iQii",
    "policy_rollout_warp_kernel": "iiiii" + "P" * 21 + "Qii",
    "fv_reset_kernel": "iPPPP",
}

THREADS = 256  # block size of the element-wise kernels
REDUCE_THREADS = 1024  # the single-block reductions (kernels.cu's REDUCE_THREADS)


class CudaUnavailable(RuntimeError):
    """No PyCUDA or no GPU; the message says which and what to do."""


@lru_cache(maxsize=None)
def init():
    """Import PyCUDA and make device 0's primary context current (pushed once per process, popped at
    exit), so memory is shared with PyTorch, JAX and fastvec's GPU envs. Returns pycuda.driver."""
    try:
        import pycuda.driver as cuda
    except ImportError as err:
        raise CudaUnavailable(f"the CUDA trainer needs PyCUDA ({err}); pip install 'fastvec[cuda]', or use "
                              f"--train.device=cpu") from None
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise CudaUnavailable("no CUDA device found; use --train.device=cpu")
        if cuda.Context.get_current() is None:
            import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
    except cuda.Error as err:
        raise CudaUnavailable(f"CUDA could not start ({err}); use --train.device=cpu") from None
    return cuda


def cache_dir() -> Path:
    root = os.environ.get("FASTVEC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fastvec")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def module_source(env_path: Path | None) -> str:
    """The translation unit: [env file, batch.h,] kernels.cu[, rollout.cu]."""
    if env_path is None:
        return '#include "kernels.cu"\n'
    return f'#include "{env_path}"\n#include "batch.h"\n#include "kernels.cu"\n#include "rollout.cu"\n'


def load_module(env_path: Path | None = None, defines: tuple = ()):
    """Compile (or load from the disk cache) the trainer's kernels, with an env's when env_path is given.
    The cache key hashes the driver text, every header and kernel file it can include, the env file,
    the options and the device's architecture, so editing any of them triggers a rebuild."""
    cuda = init()
    from pycuda import compiler

    major, minor = cuda.Context.get_device().compute_capability()
    arch = f"sm_{major}{minor}"
    options = NVCC_OPTIONS + [f"-D{k}={v}" for k, v in sorted(check_define_names(dict(defines)).items())]
    source = module_source(env_path)
    digest = hashlib.sha256("\n".join([source, arch, *options]).encode())
    files = sorted(NATIVE_DIR.glob("*.h")) + sorted(CUDA_DIR.glob("*.cu"))
    if env_path is not None:
        files.append(Path(env_path))
    for path in files:
        digest.update(path.read_bytes())
    name = Path(env_path).stem if env_path is not None else "kernels"
    cubin_path = cache_dir() / f"trainer-{name}-{arch}-{digest.hexdigest()[:24]}.cubin"
    if not cubin_path.exists():
        include_dirs = [str(CUDA_DIR), str(NATIVE_DIR)] + ([str(Path(env_path).parent)] if env_path else [])
        cubin = compiler.compile(source, options=options, no_extern_c=True, arch=arch, include_dirs=include_dirs,
                                 cache_dir=False, keep=os.environ.get("FASTVEC_KEEP") == "1")
        tmp = cubin_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(cubin)
        os.replace(tmp, cubin_path)  # atomic: a concurrent process never reads half a file
    return cuda.module_from_buffer(cubin_path.read_bytes())


class Launcher:
    """Prepared kernels of one module, launched on one stream: `k.launch(name, threads, *args)`
    runs ceil(threads / THREADS) blocks; `k.launch_block(name, *args)` one block of REDUCE_THREADS."""

    def __init__(self, module, stream):
        self.module, self.stream = module, stream
        self.functions = {}

    def function(self, name):
        fn = self.functions.get(name)
        if fn is None:
            fn = self.module.get_function(name)
            fn.prepare(SIGNATURES[name])
            self.functions[name] = fn
        return fn

    def launch(self, name: str, threads: int, *args) -> None:
        blocks = max(1, (int(threads) + THREADS - 1) // THREADS)
        self.function(name).prepared_async_call((blocks, 1, 1), (THREADS, 1, 1), self.stream, *args)

    def launch_grid(self, name: str, blocks: int, threads: int, *args) -> None:
        self.function(name).prepared_async_call((int(blocks), 1, 1), (int(threads), 1, 1), self.stream, *args)

    def launch_shared(self, name: str, threads: int, block: int, shared_bytes: int, *args) -> None:
        """ceil(threads / block) blocks of `block` threads with `shared_bytes` of dynamic shared memory."""
        self.function(name).prepared_async_call((max(1, (int(threads) + block - 1) // block), 1, 1), (int(block), 1, 1),
                                                self.stream, *args, shared_size=int(shared_bytes))

    def launch_block(self, name: str, *args) -> None:
        self.function(name).prepared_async_call((1, 1, 1), (REDUCE_THREADS, 1, 1), self.stream, *args)
