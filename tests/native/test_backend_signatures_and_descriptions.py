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


@pytest.mark.parametrize("kind,nvec", [(0, [1]), (1, [1, 3]), (1, [2, 1, 1])])
def test_an_action_axis_of_one_choice_is_taken_as_gymnasium_takes_it(kind, nvec):
    """A discrete action count of 1 (Discrete(1), or a MultiDiscrete axis with one choice) is a valid space in
    Gymnasium, so an env file that declares one builds; a count of 0 is refused, naming the counts."""
    def from_counts(counts):
        return EnvSpaces.from_arrays("e", kind, 1, np.float32, 1, np.array([1]), np.zeros(1), np.ones(1),
                                     np.array(counts), np.zeros(len(counts)), np.zeros(len(counts)), -1)

    got = from_counts(nvec)
    assert got.nvec.tolist() == nvec
    want = gymnasium.spaces.Discrete(nvec[0]) if kind == 0 else gymnasium.spaces.MultiDiscrete(nvec)
    assert want.contains(np.zeros((), np.int64) if kind == 0 else np.zeros(len(nvec), np.int64))
    with pytest.raises(ValueError, match=r"every discrete action count must be at least 1, got \[.*0.*\]"):
        from_counts([0] + nvec[1:])
