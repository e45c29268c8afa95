"""The fused trainer's GPU code: its kernels' argument signatures, its translation unit (an env, batch.h,
kernels.cu, rollout.cu, selfplay.cu, team_rollout.cu), and their build and launches through fastvec/native/gpu.py."""

from __future__ import annotations

import ctypes
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from fastvec.native import NATIVE_DIR, check_define_names, gpu
from fastvec.trainer.cuda.kernel_args import STRUCTS

CUDA_DIR = Path(__file__).resolve().parent

# Argument signatures of kernels.cu / rollout.cu / selfplay.cu / batch.h entry points, in PyCUDA's prepare()
# letters: P pointer, i int32, q int64, Q uint64, f float32, d float64, and {Name} a kernel_args.py struct
# passed by value (prepare_format turns it into its size in bytes, "216s").
SIGNATURES = {
    "fill_kernel": "Pqf",
    "add_bias_kernel": "PPqiP",
    "to_bf16_kernel": "qPP",
    "mingru_forward_kernel": "iiii" + "P" * 9,
    "mingru_forward_bf16_kernel": "iiii" + "P" * 9,
    "mingru_backward_kernel": "iiii" + "P" * 10,
    "mingru_backward_bf16_kernel": "iiii" + "P" * 10,
    "mlp_forward_kernel": "qiPPPi",
    "mlp_backward_kernel": "qPPPi",
    "bias_grad_kernel": "qiPPPPPPi",
    "gae_kernel": "{GaeArgs}",
    "shuffle_kernel": "iiQiPP",
    "prio_kernel": "PiiiddiQiPPPP",
    "gather_minibatch_kernel": "{GatherArgs}",
    "gather_state_kernel": "iiiiiPPP",
    "sums_partial_kernel": "qiPP",
    "moments_finish_kernel": "iPqP",
    "ppo_loss_kernel": "{LossArgs}",
    "ppo_loss_head_kernel": "{LossArgs}",
    "encode_obs_kernel": "qiiPfPP",
    "mask_logits_kernel": "qiiPP",
    "mask_logits_grad_kernel": "qiiPP",
    "gather_rows_kernel": "qiPPP",
    "obs_norm_update_kernel": "qiiiPdP",
    "obs_norm_count_kernel": "qiP",
    "reward_returns_kernel": "iiPPdPP",
    "reward_moments_kernel": "qPP",
    "reward_scale_kernel": "qPP",
    "explained_variance_finish_kernel": "iPqP",
    "grad_norm_kernel": "qPPPfddP",
    "adam_kernel": "qPPPPPfffff",
    "muon_momentum_kernel": "qPPPPf",
    "frobenius_normalize_kernel": "qPP",
    "muon_apply_kernel": "qPPPd",
    "ns_poly_init_kernel": "iPPff",
    "muon_small_kernel": "{MuonSmallArgs}",
    "begin_update_kernel": "P",
    "schedule_kernel": "Pdiidi",
    "advance_rollout_kernel": "Pi",
    "rollout_step_kernel": "{RolloutArgs}{StepSlices}i",
    "rollout_step_staged_kernel": "{RolloutArgs}{StepSlices}i",
    "policy_step_kernel": "{RolloutArgs}{StepSlices}ii",
    "policy_rollout_warp_kernel": "{RolloutArgs}ii",
    "fv_reset_kernel": "iPPPP",
    "host_sample_kernel": "iiPPPPPPPiQ",
    "host_record_kernel": "{HostRecordArgs}",
    "device_env_actions_kernel": "qiPPPP",
    "device_env_outputs_kernel": "P" * 12 + "ii",
    "pool_forward_kernel": "{PoolForwardArgs}",
    "selfplay_step_kernel": "{RolloutArgs}{SelfPlayArgs}i",
    "match_reset_kernel": "iPPPP",
    "match_stage_kernel": "iPqP",
    "match_play_kernel": "{MatchPlayArgs}",
    "selfplay_gather_kernel": "iiPP",
    "team_inputs_kernel": "{TeamInputsArgs}",
}



def prepare_format(signature: str) -> str:
    """A SIGNATURES entry as PyCUDA's prepare() takes it: each {Name} struct as its bytes ("216s"). The structs'
    sizes are multiples of 8 and every C struct here is 8-byte aligned, so each lands where the kernel's
    parameter layout puts it."""
    return re.sub(r"\{(\w+)\}", lambda m: f"{ctypes.sizeof(STRUCTS[m.group(1)])}s", signature)


THREADS = 256  # block size of the element-wise kernels
REDUCE_THREADS = 1024  # the single-block reductions (kernels.cu's REDUCE_THREADS)

CudaUnavailable = gpu.CudaUnavailableError


@lru_cache(maxsize=None)
def init():
    """Make device 0's primary context current (gpu.primary_context: shared with PyTorch, JAX and
    fastvec's GPU envs). Returns pycuda.driver."""
    try:
        gpu.primary_context(0)
        return gpu.driver()
    except gpu.CudaUnavailableError as err:
        raise gpu.CudaUnavailableError(f"the CUDA trainer cannot start: {err}; or use --train.device=cpu") from None


def module_source(env_path: Path | None) -> str:
    """The translation unit: [env file, batch.h,] kernels.cu[, rollout.cu, selfplay.cu, team_rollout.cu]. The env
    file is included as gpu.ENV_INCLUDE, the copy load_module has gpu.py put beside the source: its name is never
    source text."""
    if env_path is None:
        return '#include "kernels.cu"\n'
    return (f'#include "{gpu.ENV_INCLUDE}"\n#include "batch.h"\n#include "kernels.cu"\n#include "rollout.cu"\n'
            '#include "selfplay.cu"\n#include "team_rollout.cu"\n')


def load_module(env_path: Path | None = None, defines: tuple = ()):
    """Compile (or take from gpu.py's disk cache) and load the trainer's kernels, with an env's when
    env_path is given; the flags are gpu.NVCC_FLAGS, the env backend's."""
    init()
    include_dirs = [CUDA_DIR, NATIVE_DIR] + ([Path(env_path).parent] if env_path is not None else [])
    name = "trainer-" + (Path(env_path).stem if env_path is not None else "kernels")
    return gpu.load_module(module_source(env_path), include_dirs=include_dirs,
                           defines=check_define_names(dict(defines)), name=name, env_path=env_path)


def module_int(cuda, module, name: str) -> int:
    """A `__device__ const int` of a compiled module (sizes the host needs)."""
    value = np.empty(1, np.int32)
    cuda.memcpy_dtoh(value, module.get_global(name)[0])
    return int(value[0])


class Launcher(gpu.Launcher):
    """gpu.Launcher with the trainer's SIGNATURES: `k.launch(name, threads, *args)` runs
    ceil(threads / THREADS) blocks, `k.launch_block(name, *args)` one block of REDUCE_THREADS."""

    signatures = {name: prepare_format(signature) for name, signature in SIGNATURES.items()}
    threads = THREADS
    reduce_threads = REDUCE_THREADS

    def __init__(self, module, stream, signatures: dict | None = None):
        """signatures: SIGNATURES-style entries ({Name} structs allowed), in place of the trainer's."""
        super().__init__(module, stream, None if signatures is None else
                         {name: prepare_format(signature) for name, signature in signatures.items()})
