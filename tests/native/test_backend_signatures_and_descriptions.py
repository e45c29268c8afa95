"""What the backends promise in their signatures and how an env's action space is described: each backend
class takes the protocol's parameters with the protocol's defaults, and EnvSpaces.describe() prints the space
as Gymnasium's own repr does."""

import inspect

import gymnasium
import numpy as np
import pytest

from fastvec.native import backend, cpu
from fastvec.native.spaces import EnvSpaces


@pytest.mark.parametrize("cls_path", ["fastvec.native.cpu.CpuBatch", "fastvec.native.cuda.CudaBatch"])
def test_each_backend_method_keeps_the_protocols_defaults_and_keyword_only_parameters(cls_path):
    module, _, name = cls_path.rpartition(".")
    cls = getattr(__import__(module, fromlist=[name]), name)
    for method, member in vars(backend.Backend).items():
        if not inspect.isfunction(member) or method.startswith("_"):
            continue
        ours = inspect.signature(getattr(cls, method)).parameters
        for pname, p in inspect.signature(member).parameters.items():
            assert pname in ours, f"{name}.{method} lacks {pname}"
            assert (ours[pname].default, ours[pname].kind) == (p.default, p.kind), f"{name}.{method}({pname})"


def spaces(kind, low, high, nvec=None):
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    nvec = np.asarray(nvec if nvec is not None else np.zeros(len(low)), np.int64)
    return EnvSpaces(name="e", action_kind=kind, nvec=nvec, action_low=low, action_high=high, obs_shape=(1,),
                     obs_dtype=np.dtype(np.float32), obs_low=np.zeros(1, np.float32),
                     obs_high=np.ones(1, np.float32), state_size=-1)


@pytest.mark.parametrize("low,high", [([-2.0], [2.0]), ([-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]),
                                      ([-2.0, 0.0], [2.0, 1.0]), ([0.0, 0.0], [1.0, 3.5])])
def test_a_box_is_described_as_gymnasium_prints_it(low, high):
    ours = spaces("box", low, high).describe()
    assert ours == repr(gymnasium.spaces.Box(np.array(low, np.float32), np.array(high, np.float32), (len(low),),
                                             np.float32))


def test_discrete_kinds_are_described_as_gymnasium_prints_them():
    assert spaces("discrete", [0.0], [2.0], [3]).describe() == repr(gymnasium.spaces.Discrete(3))
    assert spaces("multi_discrete", [0, 0], [2, 3], [3, 4]).describe() == \
        repr(gymnasium.spaces.MultiDiscrete([3, 4]))
