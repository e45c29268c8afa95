"""The CUDA trainer's prioritised draws (train.prio_alpha > 0): bit for bit reference.prioritized_draws over the
advantages the GPU trained on (the same counter-based stream), and against the NumPy trainer on the same rollouts
the same draws (V-trace: weights within float32 rounding, as each side's advantages come from its own forward pass),
the weights and optimizer state after each update within float32 rounding, through the eager first update and the
captured graphs after it (beta read from the device's update counter). prio.cu's kernel alone is
tests/emulation/test_prio_kernel.py's. Every test here is skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import (_cuda_or_skip, load_numpy_trainer, make_pair, rel_err, rollout_buffers, small_config,
                       start_async_update)

from fastvec.trainer import reference as ref

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("variant", [{"kind": "mingru", "optimizer": "muon", "vtrace": False},
                                     {"kind": "mlp", "optimizer": "adam", "vtrace": True},
                                     {"kind": "mingru", "optimizer": "muon", "vtrace": False, "async": True,
                                      "precision": "bf16"}],
                         ids=["mingru-muon", "mlp-adam-vtrace", "mingru-muon-async-bf16"])
def test_prioritised_updates_match_the_numpy_trainer(variant):
    """The last variant is breakout.toml's kind of run (MinGRU, Muon, async rollouts, bf16 GEMMs): its draws
    still match bit for bit (the advantages come from the rollout's own values), its weights within bf16's 2e-2."""
    _cuda_or_skip()
    config = small_config(optimizer=variant["optimizer"], vtrace=variant["vtrace"], prio_alpha=0.7, prio_beta0=0.3,
                          precision=variant.get("precision", "fp32"), **{"async": variant.get("async", False)})
    config["policy"]["kind"] = variant["kind"]
    tol = 2e-2 if variant.get("precision") == "bf16" else 1e-4
    gpu_tr, cpu_tr, _ = make_pair(config)
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    assert gpu_tr.plan.prio and gpu_tr.shuffle_key == cpu_tr.shuffle_key
    orders, calls, epoch_order = [], [], cpu_tr.epoch_order
    train = cpu_tr.config.train

    def recording(seg_adv, epoch, num_updates):
        orders.append(epoch_order(seg_adv, epoch, num_updates))
        calls.append((epoch, num_updates, cpu_tr.update_index))
        return orders[-1]

    cpu_tr.epoch_order = recording
    for update in range(3):
        if variant.get("async"):  # both roll out; NumpyTrainer trains on the GPU's slot from the GPU's weights
            _, _, sampling_rng = start_async_update(gpu_tr, cpu_tr, update, config["train"]["update_epochs"])
        else:
            gpu_tr.rollout()
            load_numpy_trainer(cpu_tr, rollout_buffers(gpu_tr), gpu_tr.last_values())
            cpu_tr.params[...] = a.get(cuda, "params")  # the same starting point every update: float32 rounding
            cpu_tr.opt_state[...] = a.get(cuda, "opt_state")
        stats_gpu = gpu_tr.update(num_updates=10)
        stats_cpu = cpu_tr.update(num_updates=10)
        if variant.get("async"):
            cpu_tr.rng = sampling_rng
        order, weights = orders[-1]  # the last epoch's, which the arena still holds
        epoch, num_updates, update_index = calls[-1]
        gpu_adv = cpu_tr.to_segments(a.get(cuda, "adv_returns")[0])
        beta = ref.prio_beta(train.prio_beta0, update_index, num_updates)
        own_order, own_weights = ref.prioritized_draws(gpu_adv, train.prio_alpha, beta, cpu_tr.shuffle_key,
                                                       update_index, epoch)
        assert np.array_equal(a.get(cuda, "perm"), own_order), update
        assert np.array_equal(a.get(cuda, "prio_weight"), own_weights), update
        assert np.array_equal(order, own_order), update
        if variant["vtrace"]:
            assert np.allclose(weights, own_weights, rtol=1e-5, atol=0), update
        else:
            assert np.array_equal(weights, own_weights), update
        assert len(np.unique(order)) < len(order) and weights.min() < 1
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= tol, update
        assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= tol, update
        for key in ["policy_loss", "value_loss", "entropy", "grad_norm"]:
            assert abs(stats_gpu[key] - stats_cpu[key]) <= tol * max(abs(stats_cpu[key]), 1e-2), (update, key)
    gpu_tr.close()
