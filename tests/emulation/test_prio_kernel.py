"""The CUDA trainer's prioritised draws (fastvec/trainer/cuda/prio.cu) without a GPU: built for the CPU by
tests/emulation/prio_on_cpu.cpp and compared bit for bit with reference.prioritized_draws on random advantages
(the draws, the weights, beta's schedule, the all-zero fallback), and ppo.cu's loss with the weights against
reference.ppo_loss(pg_weights=...). tests/trainer/test_cuda_prio.py checks the whole update on the device."""

from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness, call, rel_err

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE
from fastvec.trainer.priority import LN2, portable_exp, portable_log, priority_sums, sequence_priorities

HARNESS = Path(__file__).resolve().parent / "prio_on_cpu.cpp"


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS)


def kernel_draws(emu, adv, k, alpha, beta0, num_updates, update, key, epoch):
    """prio_kernel's (perm, weights, scratch: the priorities (Q,), their running sums (Q,), each draw's unnormalised
    weight (Q,)) for adv (T, R) in K-step sequences."""
    t_len, r = adv.shape
    q = (t_len // k) * r
    perm, weights, scratch = np.full(q, -1, np.int32), np.zeros(q, np.float32), np.zeros((3, q), np.float64)
    call(emu.emu_prio, np.ascontiguousarray(adv), k, r, q, np.float64(alpha), np.float64(beta0), num_updates, update,
         np.uint64(key), epoch, scratch, perm, weights)
    return perm, weights, scratch


def to_segments(x, k):
    """(T, R) -> (K, S * R), NumpyTrainer.to_segments' sequence order."""
    t_len, r = x.shape
    return np.swapaxes(x.reshape(t_len // k, k, r), 0, 1).reshape(k, -1)


@pytest.mark.parametrize("t_len,rows,k,alpha,update", [(16, 70, 8, 0.6, 3), (64, 1100, 32, 1.0, 0), (12, 5, 4, 0.25, 9),
                                                       (8, 1500, 4, 2.0, 40)])
def test_prio_kernel_draws_the_references_sequences_and_weights_bit_for_bit(emu, t_len, rows, k, alpha, update):
    """Q from 15 (fewer than the block's threads) to 3,000 (several priorities a thread): heavy-tailed advantages
    with some all-zero sequences, beta mid-schedule (and past the end: update 40 of 20). The priorities' running
    sums too, bit for bit (priority_sums' order, which plain running sums would round differently), and the
    priorities the kernel keeps for the weights."""
    rng = np.random.default_rng(rows)
    adv = (rng.standard_normal((t_len, rows)) * rng.exponential(1.0, rows) ** 2).astype(np.float32)
    adv[:, rng.random(rows) < 0.1] = 0  # rows whose every sequence has zero advantages
    key, epoch, num_updates = ref.shuffle_key(ref.sampling_key(7)), 1, 20
    perm, weights, (priorities, sums, _) = kernel_draws(emu, adv, k, alpha, 0.3, num_updates, update, key, epoch)
    beta = ref.prio_beta(0.3, update, num_updates)
    want_order, want_weights = ref.prioritized_draws(to_segments(adv, k), alpha, beta, key, update, epoch)
    assert np.array_equal(priorities, sequence_priorities(to_segments(adv, k), alpha))
    assert np.array_equal(sums, priority_sums(priorities))
    assert np.array_equal(perm, want_order)
    assert np.array_equal(weights, want_weights)
    assert weights.max() == 1 and len(np.unique(perm)) < len(perm)


def test_prio_kernel_draws_uniformly_when_every_advantage_is_zero(emu):
    adv = np.zeros((8, 300), np.float32)
    perm, weights, _ = kernel_draws(emu, adv, 4, 0.5, 0.4, 10, 2, 99, 0)
    want_order, _ = ref.prioritized_draws(to_segments(adv, 4), 0.5, 0.6, 99, 2, 0)
    assert np.array_equal(perm, want_order) and np.all(weights == 1)


def test_weighted_loss_kernel_matches_ppo_loss_with_pg_weights(emu):
    """ppo_loss_kernel with weights: row t * Bm + b's normalised advantage times sequence b's weight, against
    reference.ppo_loss(pg_weights=...) on the (K, Bm) minibatch; without weights the policy loss differs."""
    rng = np.random.default_rng(5)
    kk, bm, a = 6, 50, 4
    n = kk * bm
    y = rng.standard_normal((n, a + 1)).astype(np.float32)
    actions = rng.integers(0, a, n).astype(np.int32)
    old_logp = (ref.log_softmax(y[:, :a])[np.arange(n), actions] + rng.normal(0, 0.3, n)).astype(np.float32)
    old_values = (y[:, -1] + rng.normal(0, 0.3, n)).astype(np.float32)
    adv, returns = (rng.standard_normal(n) * 2).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    weights = rng.uniform(0.05, 1.0, bm).astype(np.float32)
    moments = np.array([adv.astype(np.float64).mean(), adv.astype(np.float64).std()], np.float32)
    adv_n = ((adv - moments[0]) / (moments[1] + np.float32(1e-8))).astype(np.float32)
    shape = (kk, bm)
    _, dlogits, dvalues, stats = ref.ppo_loss(y[:, :a].reshape(*shape, a), y[:, -1].reshape(shape),
                                              actions.reshape(shape), old_logp.reshape(shape),
                                              old_values.reshape(shape), adv_n.reshape(shape),
                                              returns.reshape(shape), 0.2, 0.2, 0.5, 0.01,
                                              pg_weights=weights[None, :])
    results = {}
    for name, w in (("weighted", weights), ("plain", None)):
        scalars = np.zeros((), SCALARS_DTYPE)
        scalars["ent_coef"] = 0.01
        scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
        dy = np.zeros((n, a + 1), np.float32)
        call(emu.emu_weighted_loss, n, a, bm, y, actions, old_logp, old_values, adv, returns, moments, w, scalars,
             dy, np.zeros(5 * -(-n // 256)), np.zeros(1, np.uint32))
        results[name] = dy, np.frombuffer(scalars.tobytes(), SCALARS_DTYPE)[0]["stat"]
    dy, got = results["weighted"]
    assert rel_err(dy[:, :a], dlogits.reshape(n, a)) <= 1e-5
    assert rel_err(dy[:, -1], dvalues.reshape(n)) <= 1e-6
    assert abs(got[0] - stats["policy_loss"]) <= 1e-5 * max(abs(stats["policy_loss"]), 1.0)
    assert rel_err(results["plain"][0][:, :a], dy[:, :a]) > 0.1  # the weights do reach the gradient


def test_the_kernels_log_and_exp_are_the_references_bit_for_bit_over_their_whole_range(emu):
    """prio.cu's prio_log and prio_exp give priority.portable_log's and portable_exp's bits: over 1e-300 to 1e300,
    at mantissas next to sqrt(1/2) and sqrt(2) (where the series' last terms still count), and over exp's whole
    range, its clamps at -745 and 710 and past them included."""
    rng = np.random.default_rng(11)
    n = 60000
    exponents = rng.integers(-60, 60, n // 3)
    x = np.concatenate([np.exp(rng.uniform(-690, 690, n // 3)),
                        np.ldexp(rng.uniform(1.36, np.sqrt(2), n // 3) / 2, exponents),
                        np.ldexp(rng.uniform(np.sqrt(0.5), 0.74, n // 3), exponents)])
    z = np.concatenate([rng.uniform(-800, 800, n // 3), rng.uniform(-2, 2, n // 3),
                        np.round(rng.uniform(-60, 60, n // 3)) * LN2 + rng.uniform(-0.4, 0.4, n // 3)])
    got_log, got_exp = np.zeros(n), np.zeros(n)
    call(emu.emu_prio_log_exp, np.int64(n), x, z, got_log, got_exp)
    assert np.array_equal(got_log.view(np.uint64), portable_log(x).view(np.uint64))
    with np.errstate(over="ignore"):  # exp past 709.8 is inf
        want_exp = portable_exp(z)
    assert np.array_equal(got_exp.view(np.uint64), want_exp.view(np.uint64))
    np.testing.assert_allclose(got_log, np.log(x), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(got_exp[np.abs(z) < 700], np.exp(z[np.abs(z) < 700]), rtol=1e-12)
    assert (got_exp[z < -745] <= 5e-324).all() and np.isinf(got_exp[z > 710]).all()


def test_prio_kernel_writes_nothing_past_its_draws_and_weights(emu):
    """Q = 140 sequences on the block's 1024 threads: the draws and weights fill perm and weights and nothing after
    them, with advantages (prioritised draws) and with all of them 0 (uniform draws)."""
    rng = np.random.default_rng(18)
    t_len, r, k, guard = 16, 70, 8, 64
    q = (t_len // k) * r
    for adv in (rng.standard_normal((t_len, r)).astype(np.float32), np.zeros((t_len, r), np.float32)):
        perm, weights = np.full(q + guard, -5, np.int32), np.full(q + guard, 7.0, np.float32)
        scratch = np.zeros(3 * q + guard)
        call(emu.emu_prio, adv, k, r, q, np.float64(0.6), np.float64(0.4), 10, 2, np.uint64(99), 0, scratch, perm,
             weights)
        assert (perm[q:] == -5).all() and (weights[q:] == 7.0).all()
        assert ((perm[:q] >= 0) & (perm[:q] < q)).all() and ((weights[:q] > 0) & (weights[:q] <= 1)).all()


@pytest.mark.parametrize("lane_draw,low_sequence", [(995, 910), (1, 925)])
def test_prio_kernel_normalises_by_the_largest_weight_whatever_lane_and_warp_draws_it(emu, lane_draw, low_sequence):
    """Q = 1024 (a draw a thread: draw j is lane j % 32 of warp j // 32): every sequence's priority 1 but one's 0.5,
    which only draw `lane_draw` takes (an odd lane; 995: of the last warp), so that draw alone has the largest
    weight. The block's maximum must reach it: its weight is exactly 1 and the rest are the reference's."""
    q, key, update, epoch = 1024, ref.shuffle_key(ref.sampling_key(7)), 2, 1
    adv = np.full((2, q), 0.5, np.float32)
    adv[:, low_sequence] = 0.25
    want_order, want_weights = ref.prioritized_draws(to_segments(adv, 2), 1.0, ref.prio_beta(0.3, update, 20), key,
                                                     update, epoch)
    assert np.flatnonzero(want_order == low_sequence).tolist() == [lane_draw]  # the case is what it says
    assert np.flatnonzero(want_weights == 1).tolist() == [lane_draw]
    perm, weights, _ = kernel_draws(emu, adv, 2, 1.0, 0.3, 20, update, key, epoch)
    assert np.array_equal(perm, want_order)
    assert np.array_equal(weights, want_weights)


@pytest.mark.parametrize("num_updates,update", [(2, 1), (1, 0), (1, 1), (0, 0), (0, 3), (3, 2), (3, 5)])
def test_prio_kernel_weights_follow_betas_schedule_at_its_edges(emu, num_updates, update):
    """beta = beta0 + (1 - beta0) * min(update / max(num_updates, 1), 1) (priority.prio_beta) where the schedule
    is short: 2 updates (halfway at update 1), 1, none (0: counted as 1), and past its end; the weights bit for
    bit the reference's with that beta."""
    rng = np.random.default_rng(31 + 7 * num_updates + update)
    adv = (rng.standard_normal((8, 40)) * rng.exponential(1.0, 40)).astype(np.float32)
    key, epoch = ref.shuffle_key(ref.sampling_key(3)), 0
    beta0 = 0.3
    beta = beta0 + (1 - beta0) * min(update / max(num_updates, 1), 1)
    assert beta == ref.prio_beta(beta0, update, num_updates)
    perm, weights, _ = kernel_draws(emu, adv, 4, 0.7, beta0, num_updates, update, key, epoch)
    want_order, want_weights = ref.prioritized_draws(to_segments(adv, 4), 0.7, beta, key, update, epoch)
    assert np.array_equal(perm, want_order)
    assert np.array_equal(weights, want_weights)
