"""The CUDA trainer (trainer.py and the units it is built from; the kernels in kernels.cu and rollout.cu): the
NumPy reference's math on the GPU. `available()` says whether it can run here; `make_trainer(config, batch)`
builds one for a config."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def available() -> bool:
    """True when PyCUDA imports and a CUDA device answers (the check creates no context)."""
    try:
        import pycuda.driver as cuda

        cuda.init()
        return cuda.Device.count() > 0
    except Exception:  # no PyCUDA, no driver, no device: all mean "use the CPU trainer"
        return False


def make_trainer(config, batch):
    """A CudaTrainer for config; `batch` (a CpuBatch of the same env) describes the env's sizes."""
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.resolve import make_policy_spec

    spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, getattr(batch.env, "spaces", None))
    return CudaTrainer(config, batch, spec)
