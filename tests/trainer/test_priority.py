"""Prioritised choice of training sequences (train.prio_alpha, reference.prioritized_draws): the priorities,
probabilities, draw frequencies and importance weights against hand computations, beta's schedule, the powers
written with IEEE operations alone against NumPy's, the config keys' checks, and the NumPy trainer: off (the
default) it trains bit for bit as a plain shuffle does, on it trains on the prioritised draws and their weights.
tests/emulation/test_prio_kernel.py checks the CUDA kernel against the same reference."""

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu
from fastvec.native.batches import load_env
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.priority import (PRIO_CHUNKS, portable_exp, portable_log, portable_pow, prio_uniforms,
                                      priority_sums, sequence_priorities)
from fastvec.trainer.resolve import make_policy_spec

# Four sequences of two steps whose |advantage| sums are 1, 3, 0 and 4 (exact in float32).
HAND_ADV = np.array([[0.5, -1.0, 0.0, 4.0],
                     [-0.5, 2.0, 0.0, 0.0]], np.float32)


def test_priorities_are_the_summed_absolute_advantages_to_the_alpha():
    np.testing.assert_allclose(sequence_priorities(HAND_ADV, 1.0), [1.0, 3.0, 0.0, 4.0], rtol=1e-14)
    np.testing.assert_allclose(sequence_priorities(HAND_ADV, 0.5), [1.0, 3 ** 0.5, 0.0, 2.0], rtol=1e-14)
    rng = np.random.default_rng(0)
    adv = rng.standard_normal((16, 500)).astype(np.float32)
    np.testing.assert_allclose(sequence_priorities(adv, 0.7),
                               np.abs(adv.astype(np.float64)).sum(0) ** 0.7, rtol=1e-6)


def test_draw_frequencies_are_the_priorities_probabilities():
    """p = (1, 3, 0, 4) / 8 at alpha 1: the four sequences 1,000 times over (4,000 sequences, as many draws), each
    kind's share of the draws is its probability (binomial std < 0.008), the all-zero kind never drawn."""
    draws = ref.prioritized_draws(np.tile(HAND_ADV, (1, 1000)), 1.0, 0.5, 77, 3, 0)[0] % 4
    share = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(share, [1 / 8, 3 / 8, 0, 4 / 8], atol=0.03)
    assert share[2] == 0


def test_weights_are_normalised_inverse_probabilities():
    """w = (Q p)^-beta over the epoch's largest: Q p = (0.5, 1.5, -, 2); beta 0.5, an epoch that drew sequence 0
    (the largest weight) gives (1, sqrt(1/3), -, 0.5) for sequences 0, 1, 3."""
    raw = {0: 0.5 ** -0.5, 1: 1.5 ** -0.5, 3: 2.0 ** -0.5}
    checked = 0
    for epoch in range(40):
        order, weights = ref.prioritized_draws(HAND_ADV, 1.0, 0.5, 5, 0, epoch)
        assert weights.dtype == np.float32 and weights.max() == 1
        top = max(raw[i] for i in order)
        np.testing.assert_allclose(weights, [raw[i] / top for i in order], rtol=1e-6)
        checked += 0 in order
    assert checked > 5
    _, flat = ref.prioritized_draws(HAND_ADV, 1.0, 0.0, 5, 0, 0)  # beta 0: no correction
    assert np.all(flat == 1)


def test_all_zero_advantages_draw_uniformly_with_weights_one():
    zero = np.zeros((3, 6), np.float32)
    orders = np.concatenate([ref.prioritized_draws(zero, 0.6, 0.4, 9, 0, e)[0] for e in range(500)])
    assert set(np.unique(orders)) == set(range(6))
    np.testing.assert_allclose(np.bincount(orders) / orders.size, 1 / 6, atol=0.03)
    assert np.all(ref.prioritized_draws(zero, 0.6, 0.4, 9, 0, 0)[1] == 1)


def test_beta_anneals_linearly_from_beta0_to_one():
    assert ref.prio_beta(0.4, 0, 10) == 0.4
    assert ref.prio_beta(0.4, 5, 10) == pytest.approx(0.7, abs=1e-15)
    assert ref.prio_beta(0.4, 10, 10) == 1.0
    assert ref.prio_beta(0.4, 12, 10) == 1.0  # past the run's end (a resumed run with a longer budget)
    assert ref.prio_beta(1.0, 3, 10) == 1.0


def test_draw_uniforms_are_keyed_by_update_and_epoch():
    u = prio_uniforms(123, 4, 1, 100_000)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    assert not np.array_equal(u[:50], prio_uniforms(123, 4, 0, 50))
    assert not np.array_equal(u[:50], prio_uniforms(123, 5, 1, 50))
    assert np.array_equal(u[:50], prio_uniforms(123, 4, 1, 50))


def test_ieee_powers_match_numpys_and_sums_match_cumsum():
    rng = np.random.default_rng(3)
    x = np.exp(rng.uniform(-60, 60, 20_000))
    np.testing.assert_allclose(portable_log(x), np.log(x), rtol=1e-15, atol=1e-15)
    z = rng.uniform(-700, 700, 20_000)
    np.testing.assert_allclose(portable_exp(z), np.exp(z), rtol=2e-13)
    np.testing.assert_allclose(portable_pow(x, -0.37), x ** -0.37, rtol=1e-13)
    assert portable_pow(np.array([1.0]), 0.3)[0] == 1.0
    for count in (5, PRIO_CHUNKS, 3 * PRIO_CHUNKS + 17):
        q = rng.random(count)
        np.testing.assert_allclose(priority_sums(q), np.cumsum(q), rtol=1e-12)


@pytest.mark.parametrize("key,value", [("prio_alpha", -0.1), ("prio_beta0", 1.5), ("prio_beta0", -0.2)])
def test_config_refuses_out_of_range_prio_keys(key, value):
    with pytest.raises(ConfigError, match=f"train.{key}"):
        load_config("cartpole", {"train": {key: value}})


def make(**train):
    settings = {"horizon": 32, "bptt_horizon": 8, "minibatch_size": 32, "seed": 3, "update_epochs": 2,
                "vtrace": True, **train}
    config = load_config("cartpole", {"env": {"num_envs": 4}, "train": settings,
                                      "policy": {"kind": "mingru", "hidden": 8, "layers": 1}})
    batch = cpu.CpuBatch(load_env("cartpole", {}), 4, native.AUTORESET_CODES["SameStep"], 20)
    return NumpyTrainer(config, batch, make_policy_spec(config, batch.env.obs_size, batch.env.num_actions))


def train(trainer, updates=3):
    for _ in range(updates):
        trainer.rollout()
        trainer.update(num_updates=10)
    return trainer.params.copy()


class ShuffleOnly(NumpyTrainer):
    """The trainer without prioritised draws: every epoch a shuffle of every sequence, no weights."""

    def epoch_order(self, seg_adv, epoch, num_updates):
        return self.rng.permutation(seg_adv.shape[1]), None


def test_prio_alpha_zero_trains_bit_for_bit_as_a_plain_shuffle():
    plain = make()
    plain.__class__ = ShuffleOnly
    off = train(make(prio_alpha=0.0, prio_beta0=0.1))
    assert np.array_equal(off, train(plain))
    assert not np.array_equal(off, train(make(prio_alpha=0.8)))  # the knob does change training


def test_numpy_trainer_trains_on_the_prioritised_draws_and_weights():
    """Epoch 0 of update 0 (no V-trace correction yet): its minibatches are consecutive runs of
    prioritized_draws of the rollout's advantages with beta = prio_beta0, and each minibatch's loss gets its
    sequences' weights; the policy loss is the weighted mean of the per-sample clipped terms."""
    trainer = make(prio_alpha=0.6, prio_beta0=0.3)
    trainer.rollout()
    want_order, want_weights = ref.prioritized_draws(trainer.to_segments(trainer.advantages()), 0.6, 0.3,
                                                     trainer.shuffle_key, 0, 0)
    seen, step = [], trainer.minibatch_step

    def recording(seg, seg_adv, seg_returns, seg_state, idx, lr, ent_coef, new_logp, weights=None):
        seen.append((idx.copy(), weights.copy()))
        return step(seg, seg_adv, seg_returns, seg_state, idx, lr, ent_coef, new_logp, weights)

    trainer.minibatch_step = recording
    trainer.update(num_updates=10)
    per_epoch = len(seen) // 2
    assert np.array_equal(np.concatenate([s[0] for s in seen[:per_epoch]]), want_order)
    assert np.array_equal(np.concatenate([s[1] for s in seen[:per_epoch]]), want_weights)
    assert len(np.unique(want_order)) < len(want_order)  # drawn with replacement


def test_ppo_loss_weights_each_samples_policy_term():
    rng = np.random.default_rng(4)
    n, a = 40, 3
    logits = rng.standard_normal((n, a)).astype(np.float64)
    actions = rng.integers(0, a, n)
    old_logp = ref.log_softmax(logits)[np.arange(n), actions] + rng.normal(0, 0.3, n)
    adv, values, returns = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
    w = rng.uniform(0.1, 1.0, n)
    _, _, _, stats = ref.ppo_loss(logits, values, actions, old_logp, values, adv, returns, 0.2, 0.2, 0.5, 0.0,
                                  pg_weights=w)
    ratio = np.exp(ref.log_softmax(logits)[np.arange(n), actions] - old_logp)
    terms = np.maximum(-adv * ratio, -adv * np.clip(ratio, 0.8, 1.2))
    assert stats["policy_loss"] == pytest.approx(float(np.mean(w * terms)), rel=1e-12)


def test_cuda_trainer_refuses_what_it_cannot_draw():
    from fastvec.trainer.resolve import cuda_unsupported
    spec = ref.PolicySpec(obs_size=4, num_actions=2)
    assert "train.prio_alpha" in cuda_unsupported(spec, load_config("cartpole", {"train": {"prio_alpha": 0.5,
                                                                                            "gpus": 2}}))
    assert cuda_unsupported(spec, load_config("cartpole", {"train": {"prio_alpha": 0.5}})) is None
    assert cuda_unsupported(spec, load_config("cartpole", {"train": {"gpus": 2}})) is None


def recorded_update(prio_alpha):
    """The CUDA trainer's update (cuda/update.py) recorded against stand-in launchers: an epoch's order, then the
    minibatch step of sequences perm[3:6]; no GPU needed. Returns (plan, the launcher's log)."""
    from types import SimpleNamespace

    from test_distributed import _Address, _Recorder

    from fastvec.trainer.cuda.data_parallel import SingleGpu
    from fastvec.trainer.cuda.heads import HeadOps
    from fastvec.trainer.cuda.optimizers import Adam
    from fastvec.trainer.cuda.plan import Choices
    from fastvec.trainer.cuda.policy import GpuPolicy
    from fastvec.trainer.cuda.update import GpuUpdate
    from fastvec.trainer.settings import Config

    log = []
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mingru", hidden=8, layers=1)
    layout = ref.FlatLayout(ref.param_table(spec))
    train = Config.of(load_config("cartpole", {"train": {"optimizer": "adam", "prio_alpha": prio_alpha,
                                                         "prio_beta0": 0.25}})).train
    arena = SimpleNamespace(ptr=_Address)
    plan = SimpleNamespace(bptt=4, seqs_per_mb=3, rows=6, mb_rows=12, horizon=8, sequences=12, bf16_acts=False,
                           obs_bytes=False, slot_count=1, choices=Choices(), masked=False)
    learner = (_Recorder(log, "k"), _Recorder(log, "blas"), SimpleNamespace(handle=1234))
    update = GpuUpdate(plan, spec, layout, arena, train, learner, None, GpuPolicy(spec, layout, arena, plan),
                       Adam(train, layout, arena), HeadOps(spec, layout, arena, plan, train), SingleGpu(),
                       shuffle_key=77)
    update.epoch_order(2, 1, 10)
    update.minibatch_step(3)
    return plan, log


@pytest.mark.parametrize("prio_alpha", [0.0, 0.6])
def test_cuda_update_launches_the_draws_and_hands_their_weights_to_the_loss(prio_alpha):
    """prio_alpha 0: the epoch's shuffle and a loss without weights, as before the option existed; > 0: prio_kernel
    (one block of PRIO_CHUNKS threads) over adv_returns into perm and prio_weight, and the loss kernel reads the
    weights of the minibatch's sequences (prio_weight + first, Bm of them)."""
    from test_distributed import _Address

    from fastvec.trainer.cuda.kernel_args import LossArgs
    from fastvec.trainer.priority import PRIO_CHUNKS

    plan, log = recorded_update(prio_alpha)
    launches = [entry[2] for entry in log if entry[0] == "k"]
    names = [args[0] for args in launches]
    loss = LossArgs.from_buffer_copy(next(args[2] for args in launches if args[0] == "ppo_loss_kernel"))
    if prio_alpha == 0:
        assert "shuffle_kernel" in names and "prio_kernel" not in names
        assert loss.weights is None
        return
    assert "shuffle_kernel" not in names
    draws = next(args for args in launches if args[0] == "prio_kernel")
    assert draws[1:3] == (1, PRIO_CHUNKS)
    assert draws[3] == ("adv_returns", 0) and [int(x) for x in draws[4:7]] == [plan.bptt, plan.rows, plan.sequences]
    assert (float(draws[7]), float(draws[8]), int(draws[9]), int(draws[10]), int(draws[11])) == (0.6, 0.25, 10, 77, 1)
    assert [draws[i] for i in (12, 13, 14, 15)] == [("scalars", 0), ("prio_scratch", 0), ("perm", 0),
                                                     ("prio_weight", 0)]
    assert names.index("prio_kernel") < names.index("gather_minibatch_kernel")
    assert loss.weights == _Address("prio_weight", 3) and loss.Bm == plan.seqs_per_mb
