"""The CUDA trainer's schedules (ppo.cu's schedule_kernel: the annealed learning rate and entropy bonus; prio.cu's
beta for the importance weights) on the CPU builds when Trainer.update is given a num_updates below 1: counted as 1,
as reference.annealed, ent_coef_at and prio_beta count it (max(num_updates, 1)), so nothing grows past its base."""

from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness, call
from test_prio_kernel import kernel_draws, to_segments

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def heads(tmp_path_factory):
    return build_harness(tmp_path_factory, HERE / "heads_on_cpu.cpp")


@pytest.fixture(scope="module")
def prio(tmp_path_factory):
    return build_harness(tmp_path_factory, HERE / "prio_on_cpu.cpp")


@pytest.mark.parametrize("num_updates", [-1, -3, -1000])
def test_schedule_kernel_counts_a_negative_num_updates_as_one_update(heads, num_updates):
    """Every update from the first is past a one-update schedule: annealed learning rate and entropy bonus 0 (not
    base * (1 + update / |num_updates|)), the bases unchanged without annealing."""
    scalars = np.zeros((), SCALARS_DTYPE)
    raw = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    view = raw.view(SCALARS_DTYPE)[0]
    for anneal in (1, 0):
        view["update"] = 0
        for update in range(1, 4):
            call(heads.emu_schedule, raw, np.float64(3e-3), num_updates, anneal, np.float64(0.01), anneal)
            assert view["update"] == update
            assert view["lr"] == (0.0 if anneal else 3e-3) == ref.annealed(3e-3, update, num_updates, bool(anneal))
            want_ent = float(np.float32(0.0 if anneal else 0.01))
            assert float(view["ent_coef"]) == want_ent == ref.ent_coef_at(0.01, update, num_updates, bool(anneal))


@pytest.mark.parametrize("num_updates,update", [(-2, 1), (-1, 3), (-5, 2)])
def test_prio_kernels_beta_counts_a_negative_num_updates_as_one_update(prio, num_updates, update):
    """beta is 1 from update 1 of a schedule counted as one update (priority.prio_beta), not below beta0: the
    weights bit for bit the reference's at beta 1."""
    rng = np.random.default_rng(73001 + update)
    adv = (rng.standard_normal((8, 40)) * rng.exponential(1.0, 40)).astype(np.float32)
    key, epoch, beta0 = ref.shuffle_key(ref.sampling_key(5)), 1, 0.3
    assert ref.prio_beta(beta0, update, num_updates) == 1.0
    perm, weights, _ = kernel_draws(prio, adv, 4, 0.7, beta0, num_updates, update, key, epoch)
    want_order, want_weights = ref.prioritized_draws(to_segments(adv, 4), 0.7, 1.0, key, update, epoch)
    assert np.array_equal(perm, want_order)
    assert np.array_equal(weights, want_weights)
