"""The CUDA kernels' #define constants that the Python side mirrors (launch blocks, unroll widths, activation and head
codes, normalisation bounds) agree with it: a kernel's launch bound or loop width is the block or width the trainer
launches it with, and the CPU emulation runs the same block. Read from the .cu sources, so no GPU is needed."""

import re
from pathlib import Path

import pytest

from fastvec.trainer import normalize
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import device, heads, optimizers, plan, policy

CUDA_DIR = Path(ref.__file__).parent / "cuda"
EMULATION_DIR = Path(__file__).resolve().parents[1] / "emulation"


def define(source: str, name: str) -> float:
    """The value of `#define NAME value` in trainer/cuda/SOURCE (a number, C's float suffix dropped); exactly one."""
    found = re.findall(rf"^#define {name}\s+([0-9.eE+-]+)f?\b", (CUDA_DIR / source).read_text(), re.M)
    assert len(found) == 1, (source, name, found)
    return float(found[0])


MIRRORED = [
    ("optimizers.cu", "MUON_SMALL_THREADS", optimizers.MUON_SMALL_THREADS),
    ("common.cu", "REDUCE_THREADS", device.REDUCE_THREADS),
    ("normalize.cu", "MOMENT_THREADS", heads.MOMENT_THREADS),
    ("ppo.cu", "GATHER_UNROLL", plan.GATHER_UNROLL),
    ("policy.cu", "MAX_ACTIONS", plan.MAX_ACTIONS),
    ("policy.cu", "MLP_RELU", policy.MLP_ACTIVATIONS["relu"]),
    ("policy.cu", "MLP_TANH", policy.MLP_ACTIVATIONS["tanh"]),
    ("heads.cu", "HEAD_MULTI_DISCRETE", heads.HEAD_KINDS["multi_discrete"]),
    ("heads.cu", "HEAD_BOX", heads.HEAD_KINDS["box"]),
    ("normalize.cu", "OBS_NORM_EPS", ref.OBS_NORM_EPS),
    ("normalize.cu", "OBS_NORM_CLIP", ref.OBS_NORM_CLIP),
    ("normalize.cu", "REWARD_EPS", normalize.REWARD_EPS),
    ("normalize.cu", "REWARD_CLIP", normalize.REWARD_CLIP),
]


@pytest.mark.parametrize("source, name, value", MIRRORED, ids=[name for _, name, _ in MIRRORED])
def test_a_kernel_constant_is_the_one_python_launches_with(source, name, value):
    assert define(source, name) == value


def test_muon_small_kernel_launch_bound_is_its_block_and_the_emulations():
    """muon_small_kernel is declared __launch_bounds__(MUON_SMALL_THREADS, 1) and launched with blocks of
    optimizers.MUON_SMALL_THREADS threads; tests/emulation/newton_schulz_on_cpu.cpp runs its Newton-Schulz on a block
    of the same size."""
    text = (CUDA_DIR / "optimizers.cu").read_text()
    assert "__launch_bounds__(MUON_SMALL_THREADS, 1) muon_small_kernel" in text
    harness = (EMULATION_DIR / "newton_schulz_on_cpu.cpp").read_text()
    emulated = re.findall(r"static const int kThreads = (\d+);", harness)
    assert emulated == [str(optimizers.MUON_SMALL_THREADS)]
