"""How the CUDA policy enqueues an MLP layer's backward and bias gradient, against a stand-in launcher and cuBLAS
that record each call: one bias_grad_kernel launch up to plan.Choices' mlp_bias_fused_max elements (the default
covers a default-config minibatch), else mlp_backward_kernel and a ones-row GEMM; bias_grad_kernel's grid."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.cuda.plan import BIAS_GRAD_BLOCKS, Choices
from fastvec.trainer.cuda.policy import MLP_ACTIVATIONS, GpuPolicy

BASES = {"grads": 0x100000, "dpre": 0x200000, "ones": 0x300000, "block_partial": 0x400000,
         "reduce_counter": 0x500000}


class _Arena:
    def ptr(self, name, offset_elements=0):
        return BASES[name] + 4 * int(offset_elements)


class _Recorder:
    """A launcher and a cuBLAS handle in one: every launch and GEMM, in order."""

    def __init__(self):
        self.calls = []

    def launch(self, name, threads, *args):
        self.calls.append(("launch", name, threads, args))

    def launch_grid(self, name, blocks, threads, *args):
        self.calls.append(("grid", name, blocks, threads, args))

    def matmul(self, *args, **kwargs):
        self.calls.append(("gemm", args, kwargs))


def _policy(rows: int, hidden: int, choices: Choices | None = None) -> GpuPolicy:
    layout = SimpleNamespace(offsets={"layer0.b": (40,)})
    plan = SimpleNamespace(mb_rows=rows, choices=choices or Choices())
    return GpuPolicy(SimpleNamespace(hidden=hidden), layout, _Arena(), plan)


def _mlp_backward(policy, activation="tanh"):
    rec = _Recorder()
    policy.mlp_backward(rec, rec, "layer0", 0xD0, 0xE0, activation)
    return rec.calls


def test_a_default_config_minibatch_takes_the_one_launch_backward():
    """The default's fixed-grid form is the fast one for the minibatches the defaults (and 16x them) make."""
    train, policy = load_config("cartpole")["train"], load_config("cartpole")["policy"]
    for rows in (train["minibatch_size"], 16 * train["minibatch_size"]):
        calls = _mlp_backward(_policy(rows, policy["hidden"]))
        assert [c[:2] for c in calls] == [("grid", "bias_grad_kernel")], rows


@pytest.mark.parametrize("activation", sorted(MLP_ACTIVATIONS))
def test_up_to_the_fused_maximum_one_launch_writes_dpre_and_the_bias_gradient(activation):
    rows, hidden = 30, 8
    calls = _mlp_backward(_policy(rows, hidden, Choices(mlp_bias_fused_max=rows * hidden)), activation)
    assert len(calls) == 1
    kind, name, blocks, threads, args = calls[0]
    assert blocks == 1  # 240 elements
    assert (kind, name, threads) == ("grid", "bias_grad_kernel", 256)
    db = BASES["grads"] + 4 * 40
    assert [int(a) for a in args] == [rows, hidden, 0xD0, 0xE0, BASES["dpre"], BASES["block_partial"],
                                      BASES["reduce_counter"], db, MLP_ACTIVATIONS[activation]]
    assert (args[0].dtype, args[1].dtype, args[-1].dtype) == (np.int64, np.int32, np.int32)


def test_past_the_fused_maximum_the_backward_and_a_ones_row_gemm():
    rows, hidden = 30, 8
    calls = _mlp_backward(_policy(rows, hidden, Choices(mlp_bias_fused_max=rows * hidden - 1)), "relu")
    assert [c[:2] for c in calls] == [("launch", "mlp_backward_kernel"), ("gemm", (BASES["grads"] + 4 * 40,
                                                                                    BASES["ones"], BASES["dpre"], 1,
                                                                                    hidden, rows))]
    _, _, threads, args = calls[0]
    assert threads == rows * hidden
    assert [int(a) for a in args] == [rows * hidden, 0xD0, 0xE0, BASES["dpre"], MLP_ACTIVATIONS["relu"]]
    assert calls[1][2] == {}  # db (1, hidden) = ones (1, rows) @ dpre (rows, hidden), nothing transposed


@pytest.mark.parametrize("rows,cols,blocks", [(1, 1, 1), (64, 128, 1), (64, 129, 2), (8192, 64, 64),
                                              (10 ** 6, 256, BIAS_GRAD_BLOCKS)])
def test_bias_grad_kernel_gets_a_block_per_8k_elements_at_least_one_and_at_most_its_partials(rows, cols, blocks):
    """block_partial holds BIAS_GRAD_BLOCKS rows of partial sums: the grid never exceeds it, nor is ever empty."""
    rec = _Recorder()
    _policy(rows, cols).bias_grad(rec, rec, 0xAB, 0xD0, cols, 0xE0, BASES["dpre"], act=1)
    assert [c[:3] for c in rec.calls] == [("grid", "bias_grad_kernel", blocks)]
