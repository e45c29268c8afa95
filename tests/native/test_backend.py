"""Both backends offer what every face steps through (native/backend.py's Backend): the CPU batch whole, the GPU
batch's class every method of it (its arrays need a GPU; tests/native/test_cuda_backend.py steps it)."""

import inspect

import numpy as np
import pytest

from fastvec import native
from fastvec.native import backend, cpu


def protocol_methods(protocol) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(protocol).items()
            if inspect.isfunction(member) and not name.startswith("_")}


def cartpole_batch(num_envs: int = 3) -> cpu.CpuBatch:
    compiled = cpu.load(native.source_path("cartpole"), tuple(sorted(native.resolve_defines("cartpole", {}).items())))
    return cpu.CpuBatch(compiled, num_envs, native.AUTORESET_CODES["SameStep"], 7)


def test_the_cpu_batch_is_a_backend_with_host_arrays():
    batch = cartpole_batch()
    assert isinstance(batch, backend.Backend) and isinstance(batch.env, backend.EnvBuild)
    assert batch.host_arrays is True and batch.device == "cpu" and batch.max_episode_steps == 7
    for name in ("obs", "rewards", "terminated", "truncated", "final_obs", "episode_return", "episode_length",
                 "episode_stats"):
        assert isinstance(getattr(batch, name), np.ndarray), name
    batch.reset(np.arange(3, dtype=np.uint64), None)
    batch.synchronize()  # nothing to wait for
    with pytest.raises(NotImplementedError, match="device='cuda'"):
        batch.rollout("random", 4)
    batch.close()


@pytest.mark.parametrize("cls_path", ["fastvec.native.cpu.CpuBatch", "fastvec.native.cuda.CudaBatch"])
def test_each_backend_class_defines_every_method_with_the_protocols_parameters(cls_path):
    module, _, name = cls_path.rpartition(".")
    cls = getattr(__import__(module, fromlist=[name]), name)  # cuda.py imports without PyCUDA
    for method, signature in protocol_methods(backend.Backend).items():
        assert inspect.isfunction(getattr(cls, method, None)), f"{name} lacks {method}"
        assert list(inspect.signature(getattr(cls, method)).parameters)[:len(signature.parameters)] == \
            list(signature.parameters), f"{name}.{method}{inspect.signature(getattr(cls, method))}"
    for attribute in ("max_episode_steps", "host_arrays"):  # class-level: a property or a constant
        assert isinstance(inspect.getattr_static(cls, attribute), (property, bool)), attribute
