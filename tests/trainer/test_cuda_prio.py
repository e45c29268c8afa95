"""The CUDA trainer's prioritised draws (train.prio_alpha > 0) against the NumPy trainer on the same rollouts: the
epoch's draws and weights bit for bit (the same advantages, the same counter-based stream), the weights and
optimizer state after each update within float32 rounding, through the eager first update and the captured
graphs after it (beta read from the device's update counter). prio.cu's kernel alone is
tests/emulation/test_prio_kernel.py's. Every test here is skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda import (_cuda_or_skip, load_numpy_trainer, make_pair, rel_err, rollout_buffers, small_config,
                       start_async_update)

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
    orders, epoch_order = [], cpu_tr.epoch_order

    def recording(seg_adv, epoch, num_updates):
        orders.append(epoch_order(seg_adv, epoch, num_updates))
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
        assert np.array_equal(a.get(cuda, "perm"), order), update
        assert np.array_equal(a.get(cuda, "prio_weight"), weights), update
        assert len(np.unique(order)) < len(order) and weights.min() < 1
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= tol, update
        assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= tol, update
        for key in ["policy_loss", "value_loss", "entropy", "grad_norm"]:
            assert abs(stats_gpu[key] - stats_cpu[key]) <= tol * max(abs(stats_cpu[key]), 1e-2), (update, key)
    gpu_tr.close()
