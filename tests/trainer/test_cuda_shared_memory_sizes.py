"""Shared memory the CUDA trainer's host side asks for, against the kernels' own layouts worked out by hand: the
thread-per-env policy step's weights and per-thread scratch, and which Muon matrices the default limit sends to
muon_small_kernel (one block's shared memory) rather than a chain of GEMMs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda import plan as plan_mod
from fastvec.trainer.cuda.optimizers import Muon, muon_small_shared_bytes
from fastvec.trainer.cuda.plan import SHARED_LIMIT, Choices
from fastvec.trainer.cuda.rollouts import ThreadRollout

TRAIN = SimpleNamespace(reward_clamp=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-8, max_grad_norm=0.5,
                        muon_momentum=0.95)


@pytest.mark.parametrize("num_actions", [2, 3, 4, 5])  # flat sizes 4k + 3, 4k, 4k + 1, 4k + 2
@pytest.mark.parametrize("hidden", [8, 32])
def test_the_thread_policy_step_gets_its_weights_rounded_to_float4_then_a_hidden_row_per_thread(hidden, num_actions):
    """policy_step_kernel's shared memory (rollout.cu): the flat weights from w[0], its scratch from float
    ((P + 3) / 4) * 4 on, hidden floats per thread of the block; the kernel's attribute is set to that (its launches pass
    rollout.shared)."""
    spec = ref.PolicySpec(obs_size=7, num_actions=num_actions, kind="mlp", hidden=hidden, layers=1)
    layout = ref.FlatLayout(ref.param_table(spec))
    kind, block = plan_mod.fused_rollout_kernel(spec, layout, num_envs=plan_mod.FUSED_THREAD_MIN_ENVS, num_agents=1)
    assert kind == "thread"
    attributes = []
    k = SimpleNamespace(function=lambda name: SimpleNamespace(
        set_attribute=lambda attribute, value: attributes.append((name, attribute, value))))
    cuda = SimpleNamespace(function_attribute=SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max dynamic shared"))
    plan = SimpleNamespace(fused_block=block, num_envs=64, horizon=2)
    rollout = ThreadRollout(plan, spec, layout, None, None, 0, TRAIN, 1, 100)
    rollout.start(cuda, (k, None, "params"))
    expected = 4 * (4 * -(-layout.size // 4) + hidden * block)
    assert attributes == [("policy_step_kernel", "max dynamic shared", expected)]
    assert rollout.shared == expected <= SHARED_LIMIT


def _muon_for(obs_size: int, hidden: int):
    spec = ref.PolicySpec(obs_size=obs_size, num_actions=3, kind="mlp", hidden=hidden, layers=1)
    layout = ref.FlatLayout(ref.param_table(spec))
    return Muon(TRAIN, layout, None, Choices().muon_small_shared_max), layout


def test_the_default_muon_limit_keeps_a_matrix_needing_exactly_226_kib_in_muon_small_kernel():
    """A (32, 850) encoder weight: r4 = 32, strides 868 and 36, so 8 * 32 * 904 = 231424 bytes = 226 KiB, a
    block's 227 KiB less 1 KiB that muon_small_kernel's own static scratch (128 bytes) fits in. It is the
    largest size the default admits (sizes are multiples of 128); 8 * 32 * 936 bytes (850 -> 870) is not."""
    muon, layout = _muon_for(850, 32)
    encoder = [(name, shape) for name, shape in layout.table if 850 in shape]
    assert len(encoder) == 1 and muon_small_shared_bytes(encoder[0][1]) == 231424 == SHARED_LIMIT - 1024
    assert encoder[0] in muon.small and encoder[0] not in muon.chains
    muon, layout = _muon_for(870, 32)
    encoder = [(name, shape) for name, shape in layout.table if 870 in shape]
    assert muon_small_shared_bytes(encoder[0][1]) == 8 * 32 * 936
    assert encoder[0] in muon.chains and encoder[0] not in muon.small
    assert muon.small  # the (32, 32) hidden layer and the decoder still take the small kernel
