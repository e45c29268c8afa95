"""The NumPy trainer's bookkeeping, asserted directly rather than through a learning curve: which steps end an
episode (termination and truncation both, so nothing is bootstrapped across a reset), the GAE returns and
per-minibatch normalised advantages handed to the PPO loss, every sequence trained once per epoch, the
learning rate of each update, and the approx_kl / clipfrac statistics' definitions."""

from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.resolve import make_policy_spec
from fastvec.native.batches import load_env

GAMMA, LAM = 0.9, 0.8


def make(num_envs=4, max_steps=12, kind="mingru", **train):
    """A trainer on CartPole with a 12-step limit: under the first random policy some episodes terminate
    (the pole falls) before the limit and the rest are truncated at it."""
    settings = {"horizon": 32, "bptt_horizon": 8, "minibatch_size": 32, "seed": 5, "gamma": GAMMA,
                "gae_lambda": LAM, "update_epochs": 2, **train}
    config = load_config("cartpole", {"env": {"num_envs": num_envs}, "train": settings,
                                      "policy": {"kind": kind, "hidden": 8, "layers": 1}})
    batch = cpu.CpuBatch(load_env("cartpole", {}), num_envs, native.AUTORESET_CODES["SameStep"],
                         max_steps)
    return NumpyTrainer(config, batch, make_policy_spec(config, batch.env.obs_size, batch.env.num_actions))


def record_endings(trainer):
    """Wrap the batch's step to keep a copy of (terminated, truncated) after every step."""
    endings, step = [], trainer.batch.step

    def recording_step(actions):
        step(actions)
        endings.append((trainer.batch.terminated.copy(), trainer.batch.truncated.copy()))

    trainer.batch.step = recording_step
    return endings


def gae_by_direct_sums(values, last_value, rewards, ends, gamma, lam):
    """GAE(lambda) written as its definition: A_t = sum_l (gamma lam)^l delta_{t+l} up to the step that ends
    the episode, delta_t = r_t + gamma V(s_{t+1}) - V(s_t) with no V(s_{t+1}) after an episode's last step."""
    horizon, rows = values.shape
    next_values = np.concatenate([values[1:], last_value[None]])
    delta = rewards + gamma * next_values * (1 - ends) - values
    out = np.zeros_like(values, dtype=np.float64)
    for row in range(rows):
        for t in range(horizon):
            total, weight = 0.0, 1.0
            for u in range(t, horizon):
                total += weight * delta[u, row]
                if ends[u, row]:
                    break
                weight *= gamma * lam
            out[t, row] = total
    return out


def test_termination_and_truncation_both_end_the_episode_and_cut_the_bootstrap():
    trainer = make()
    endings = record_endings(trainer)
    trainer.rollout()
    terminated = np.array([e[0] for e in endings], bool)
    truncated = np.array([e[1] for e in endings], bool)
    assert terminated.any() and truncated.any(), "the test needs both kinds of episode end"
    ends = (terminated | truncated).astype(np.float32)
    np.testing.assert_array_equal(trainer.dones, ends)
    np.testing.assert_array_equal(trainer.starts[1:], ends[:-1])  # the obs after either end starts an episode
    expected = gae_by_direct_sums(trainer.values, trainer.last_value, trainer.rewards, ends, GAMMA, LAM)
    np.testing.assert_allclose(trainer.advantages(), expected, rtol=1e-4, atol=1e-5)
    # A truncation is an end: the truncated step's advantage is r - V, as for a termination.
    t, row = np.argwhere(truncated & ~terminated)[0]
    assert trainer.advantages()[t, row] == pytest.approx(trainer.rewards[t, row] - trainer.values[t, row], abs=1e-5)


def test_the_last_value_bootstraps_only_an_unfinished_episode():
    trainer = make(max_steps=None)
    trainer.rollout()
    adv = trainer.advantages()
    last = trainer.horizon - 1
    for row in range(trainer.rows):
        bootstrap = 0.0 if trainer.dones[last, row] else GAMMA * trainer.last_value[row]
        delta = trainer.rewards[last, row] + bootstrap - trainer.values[last, row]
        assert adv[last, row] == pytest.approx(delta, abs=1e-5)


class LossRecorder:
    """Stands in for ref.ppo_loss inside the trainer and keeps each call's inputs and stats."""

    def __init__(self):
        self.calls = []
        self.real = ref.ppo_loss

    def __call__(self, logits, values, actions, old_logp, old_values, advantages, returns, *coefs):
        result = self.real(logits, values, actions, old_logp, old_values, advantages, returns, *coefs)
        self.calls.append({"old_values": old_values.copy(), "advantages": advantages.copy(),
                           "returns": returns.copy(), "stats": result[3], "coefs": coefs})
        return result


def record_minibatches(trainer, monkeypatch):
    """Record every minibatch's sequence indices and ppo_loss inputs during the next update."""
    loss = LossRecorder()
    monkeypatch.setattr(ref, "ppo_loss", loss)
    indices, real_step = [], trainer.minibatch_step

    def step(seg, seg_adv, seg_returns, seg_state, idx, *rest):
        indices.append(idx.copy())
        return real_step(seg, seg_adv, seg_returns, seg_state, idx, *rest)

    monkeypatch.setattr(trainer, "minibatch_step", step)
    return indices, loss


@pytest.mark.parametrize("norm_adv", [True, False])
def test_the_loss_gets_gae_returns_and_per_minibatch_normalised_advantages(monkeypatch, norm_adv):
    trainer = make(norm_adv=norm_adv)
    trainer.rollout()
    ends = trainer.dones.copy()
    raw = gae_by_direct_sums(trainer.values, trainer.last_value, trainer.rewards, ends, GAMMA, LAM)
    seg_adv, seg_returns = trainer.to_segments(raw), trainer.to_segments(raw + trainer.values)
    seg_values = trainer.to_segments(trainer.values)
    indices, loss = record_minibatches(trainer, monkeypatch)
    stats = trainer.update(num_updates=4)

    per_epoch = trainer.segments * trainer.rows // (32 // 8)
    assert len(indices) == 2 * per_epoch == len(loss.calls)
    for epoch in range(2):  # each (segment, row) sequence trained exactly once per epoch
        drawn = np.concatenate(indices[epoch * per_epoch:(epoch + 1) * per_epoch])
        np.testing.assert_array_equal(np.sort(drawn), np.arange(trainer.segments * trainer.rows))
    for idx, call in zip(indices, loss.calls):
        adv = seg_adv[:, idx]
        if norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            assert abs(call["advantages"].mean()) < 1e-5 and call["advantages"].std() == pytest.approx(1, abs=1e-4)
        np.testing.assert_allclose(call["advantages"], adv, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(call["returns"], seg_returns[:, idx], rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(call["old_values"], seg_values[:, idx])
        tc = trainer.config.train
        # the entropy bonus as a float32, the CUDA trainer's scalar
        assert call["coefs"] == (tc.clip_coef, tc.vf_clip_coef, tc.vf_coef, float(np.float32(tc.ent_coef)))
    # The update's statistics are the minibatches' means.
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"):
        assert stats[key] == pytest.approx(np.mean([c["stats"][key] for c in loss.calls]), rel=1e-6, abs=1e-9)
    assert stats["explained_variance"] == pytest.approx(
        1 - np.var(raw + trainer.values - trainer.values) / np.var(raw + trainer.values), abs=1e-4)


@pytest.mark.parametrize("optimizer,anneal", [("adam", True), ("adam", False), ("muon", True)])
def test_each_update_steps_with_the_linearly_annealed_learning_rate(monkeypatch, optimizer, anneal):
    trainer = make(optimizer=optimizer, anneal_lr=anneal, learning_rate=0.01, update_epochs=1)
    step_name = "muon_step" if optimizer == "muon" else "adam_step"
    used, real = [], getattr(ref, step_name)

    def recording(*args):
        used.append(args[6] if optimizer == "muon" else args[5])  # the lr argument
        return real(*args)

    monkeypatch.setattr(ref, step_name, recording)
    num_updates, steps_per_update = 4, trainer.segments * trainer.rows // (32 // 8)
    for update in range(num_updates):
        trainer.rollout()
        stats = trainer.update(num_updates=num_updates)
        expected = 0.01 * (1 - update / num_updates) if anneal else 0.01
        assert stats["learning_rate"] == pytest.approx(expected)
        assert used[-steps_per_update:] == [pytest.approx(expected)] * steps_per_update
    assert trainer.opt_step == num_updates * steps_per_update


@pytest.mark.parametrize("anneal", [True, False])
def test_each_update_weights_the_entropy_bonus_by_its_schedule(monkeypatch, anneal):
    trainer = make(anneal_ent=anneal, ent_coef=0.02, update_epochs=1)
    used, real = [], ref.ppo_loss

    def recording(*args, **kwargs):
        used.append(args[10])  # the ent_coef argument
        return real(*args, **kwargs)

    monkeypatch.setattr(ref, "ppo_loss", recording)
    num_updates, steps_per_update = 4, trainer.segments * trainer.rows // (32 // 8)
    for update in range(num_updates):
        trainer.rollout()
        stats = trainer.update(num_updates=num_updates)
        expected = 0.02 * (1 - update / num_updates) if anneal else 0.02
        assert stats["ent_coef"] == pytest.approx(expected, rel=1e-7)
        assert used[-steps_per_update:] == [stats["ent_coef"]] * steps_per_update
    assert len(used) == num_updates * steps_per_update


def test_learning_rate_schedule_values():
    assert [ref.annealed(3.0, u, 3, True) for u in range(4)] == pytest.approx([3.0, 2.0, 1.0, 0.0])
    assert ref.annealed(3.0, 5, 3, True) == 0.0  # past the end: zero, never negative
    assert ref.annealed(3.0, 2, 3, False) == 3.0
    assert ref.annealed(3.0, 0, 0, True) == 3.0


def test_approx_kl_and_clipfrac_are_cleanrls_definitions():
    """approx_kl is the k3 estimator mean((r - 1) - log r) of KL(old || new); clipfrac the fraction of samples
    whose ratio r lies outside (1 - clip, 1 + clip); both over the new policy's log-probs of the taken actions."""
    ratios = np.array([0.5, 0.95, 1.0, 1.1, 1.3, 1.25])
    logits = np.zeros((6, 2))
    actions = np.zeros(6, np.int64)
    new_logp = np.log(0.5)  # uniform over 2 actions
    old_logp = new_logp - np.log(ratios)
    zeros = np.zeros(6)
    _, _, _, stats = ref.ppo_loss(logits, zeros, actions, old_logp, zeros, np.ones(6), zeros,
                                  clip_coef=0.2, vf_clip_coef=1.0, vf_coef=0.5, ent_coef=0.0)
    kl_terms = [(r - 1) - np.log(r) for r in ratios]
    assert stats["approx_kl"] == pytest.approx(sum(kl_terms) / 6, rel=1e-9)
    assert stats["approx_kl"] > 0
    assert stats["clipfrac"] == pytest.approx(3 / 6)  # 0.5, 1.3 and 1.25 are outside (0.8, 1.2)
    assert stats["entropy"] == pytest.approx(np.log(2))
    # pg: mean(max(-A r, -A clip(r))) with A = 1
    assert stats["policy_loss"] == pytest.approx(np.mean(np.maximum(-ratios, -np.clip(ratios, 0.8, 1.2))))


COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"


def counting_trainer(num_envs=3, **train):
    """A trainer on tests/envs/counting.h: reward = the action (0..4), episodes of exactly 3 steps."""
    settings = {"horizon": 8, "bptt_horizon": 4, "minibatch_size": 4, "seed": 2, **train}
    config = load_config("cartpole", {"env": {"num_envs": num_envs}, "train": settings,
                                      "policy": {"kind": "mlp", "hidden": 8, "layers": 1}})
    compiled = cpu.load(COUNTING, (("TERMINATE_AT", 3),))
    batch = cpu.CpuBatch(compiled, num_envs, native.AUTORESET_CODES["SameStep"], None)
    return NumpyTrainer(config, batch, make_policy_spec(config, batch.env.obs_size, batch.env.num_actions))


@pytest.mark.parametrize("clamp", [True, False])
def test_rewards_are_clamped_to_plus_minus_one_only_when_asked(clamp):
    trainer = counting_trainer(reward_clamp=clamp)
    trainer.rollout()
    raw = trainer.actions.astype(np.float32)  # the env pays the action
    assert raw.max() > 1
    np.testing.assert_array_equal(trainer.rewards, np.minimum(raw, 1) if clamp else raw)


def test_finished_episodes_are_reported_once_with_their_returns_and_lengths():
    trainer = counting_trainer()
    endings = record_endings(trainer)
    trainer.rollout()
    actions = trainer.actions  # (T, R); every env ends at steps 2 and 5 (3-step episodes from reset)
    assert [t for t, (term, _) in enumerate(endings) if term.any()] == [2, 5]
    returns = np.concatenate([actions[0:3].sum(0), actions[3:6].sum(0)]).astype(np.float64)
    report = trainer.pop_episodes()
    assert report["episodes"] == 6 and report["episode_length"] == 3.0 and report["count"] == 3.0
    assert report["episode_return"] == pytest.approx(returns.mean())
    assert trainer.pop_episodes() is None


def test_timing_counters_add_up_to_at_most_the_wall_time():
    import time

    trainer = counting_trainer()
    t0 = time.perf_counter()
    trainer.rollout()
    trainer.update(num_updates=2)
    elapsed = time.perf_counter() - t0
    assert all(0 < value <= elapsed for value in trainer.timing.values()), trainer.timing
    assert sum(trainer.timing.values()) <= elapsed


@pytest.mark.parametrize("bptt", [8, 4, 2])
def test_segments_are_consecutive_steps_of_one_row(bptt):
    """to_segments: sequence s * R + r is steps s*K .. s*K + K - 1 of row r; from_segments inverts it."""
    trainer = counting_trainer(horizon=8, bptt_horizon=bptt, minibatch_size=bptt)
    t, r = trainer.horizon, trainer.rows
    for x in (np.arange(t * r).reshape(t, r) * 10, np.arange(t * r * 3).reshape(t, r, 3)):  # (T, R), (T, R, O)
        seg = trainer.to_segments(x)
        assert seg.shape == (bptt, (t // bptt) * r, *x.shape[2:])
        for s in range(t // bptt):
            for row in range(r):
                np.testing.assert_array_equal(seg[:, s * r + row], x[s * bptt:(s + 1) * bptt, row])
        np.testing.assert_array_equal(trainer.from_segments(seg), x)


def test_vtrace_reweights_later_epochs_by_the_current_over_the_behaviour_policy(monkeypatch):
    """Epoch 0 of synchronous data is plain GAE; every later epoch recomputes the advantages with ratios
    pi/mu, pi being the log-probs each sequence got in its latest minibatch forward pass."""
    trainer = make(vtrace=True, update_epochs=3, learning_rate=0.05)
    trainer.rollout()
    gae_calls, real_gae = [], ref.gae

    def recording_gae(values, last_value, rewards, dones, gamma, lam, ratios=None, *clips):
        gae_calls.append(None if ratios is None else ratios.copy())
        return real_gae(values, last_value, rewards, dones, gamma, lam, ratios, *clips)

    monkeypatch.setattr(ref, "gae", recording_gae)
    indices, loss = record_minibatches(trainer, monkeypatch)
    logits_seen, real_loss = [], loss.real

    def loss_with_logits(logits, values, actions, *rest):
        logits_seen.append((logits.copy(), actions.copy()))
        return real_loss(logits, values, actions, *rest)

    loss.real = loss_with_logits
    trainer.update(num_updates=4)
    assert len(gae_calls) == 3 and gae_calls[0] is None
    per_epoch = len(indices) // 3
    new_logp = trainer.to_segments(trainer.logp).copy()
    for epoch in (1, 2):
        for i in range((epoch - 1) * per_epoch, epoch * per_epoch):  # the previous epoch's forward passes
            logits, actions = logits_seen[i]
            new_logp[:, indices[i]] = np.take_along_axis(ref.log_softmax(logits), actions[..., None], -1)[..., 0]
        expected = np.exp(trainer.from_segments(new_logp) - trainer.logp)
        np.testing.assert_allclose(gae_calls[epoch], expected, rtol=1e-5)
        assert not np.allclose(gae_calls[epoch], 1.0, atol=1e-4)  # the policy moved
        tc = trainer.config.train  # this epoch's targets: the V-trace advantages plus the old values
        vtrace = real_gae(trainer.values, trainer.last_value, trainer.rewards, trainer.dones, tc.gamma,
                          tc.gae_lambda, gae_calls[epoch], tc.vtrace_rho_clip, tc.vtrace_c_clip)
        seg_returns = trainer.to_segments(vtrace + trainer.values)
        for i in range(epoch * per_epoch, (epoch + 1) * per_epoch):
            np.testing.assert_allclose(loss.calls[i]["returns"], seg_returns[:, indices[i]], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_policy_act_is_one_step_of_the_policy(kind):
    """policy_act (the rollout's step) against policy_forward over a one-step horizon: argmax actions and their
    log-probs when deterministic, inverse-CDF samples of rng's uniforms otherwise, and the new state."""
    spec = ref.PolicySpec(obs_size=3, num_actions=4, kind=kind, hidden=6, layers=2)
    rng = np.random.default_rng(0)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng) * 30)  # peaked logits
    obs = rng.standard_normal((5, 3)).astype(np.float32)
    starts = np.array([1, 0, 0, 1, 0], np.float32)
    state = rng.standard_normal((spec.state_layers, 5, 6)).astype(np.float32)
    logits, values, new_state, _ = ref.policy_forward(spec, params, obs[None], starts[None], state)
    logp_all = ref.log_softmax(logits[0])
    actions, logp, v, s = ref.policy_act(spec, params, obs, starts, state, None, deterministic=True)
    np.testing.assert_array_equal(actions, logits[0].argmax(-1))
    assert len(set(actions.tolist())) > 1
    np.testing.assert_allclose(logp, logp_all[np.arange(5), actions], rtol=1e-6)
    np.testing.assert_allclose(v, values[0], rtol=1e-6)
    np.testing.assert_allclose(s, new_state, rtol=1e-6)
    uniforms = np.random.default_rng(7).random(5, np.float32)
    actions, logp, _, _ = ref.policy_act(spec, params, obs, starts, state, np.random.default_rng(7))
    expected, expected_logp = ref.sample_actions(logits[0], uniforms)
    np.testing.assert_array_equal(actions, expected)
    np.testing.assert_allclose(logp, expected_logp, rtol=1e-6)


def test_one_minibatch_update_reports_that_minibatchs_statistics(monkeypatch):
    trainer = make(update_epochs=1, minibatch_size=4 * 32, horizon=32, bptt_horizon=8)
    trainer.rollout()
    _, loss = record_minibatches(trainer, monkeypatch)
    stats = trainer.update(num_updates=1)
    assert len(loss.calls) == 1
    for key, value in loss.calls[0]["stats"].items():
        assert stats[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_loading_a_state_without_counters_starts_them_at_zero():
    trainer = make()
    trainer.rollout()
    trainer.update(num_updates=2)
    params = trainer.params.copy()
    fresh = make()
    fresh.load_state_dict({"params": params})
    np.testing.assert_array_equal(fresh.params, params)
    assert (fresh.update_index, fresh.opt_step, fresh.global_step) == (0, 0, 0)
    assert not fresh.opt_state.any()


def test_value_loss_gradient_at_a_tie_takes_the_unclipped_branch():
    """max((v - R)^2, (v_clip - R)^2) at a tie: the unclipped branch's gradient, as ppo.cu's value loss
    (`us >= cs`). Here v = 2, v_old = 0, clip 1 -> v_clip = 1, R = 1.5: both squares are 0.25."""
    logits = np.zeros((1, 2))
    zeros = np.zeros(1)
    _, _, dvalues, stats = ref.ppo_loss(logits, np.array([2.0]), np.zeros(1, np.int64), zeros, zeros, zeros,
                                        np.array([1.5]), clip_coef=0.2, vf_clip_coef=1.0, vf_coef=0.5, ent_coef=0.0)
    assert stats["value_loss"] == pytest.approx(0.5 * 0.25)
    assert dvalues[0] == pytest.approx(0.5 * (2.0 - 1.5))


def test_an_episode_start_forgets_the_carried_state():
    """Where starts[t] = 1 the recurrent state entering step t is zeroed: from then on the outputs are those of
    a policy started from a zero state at t; before it they depend on the carried state."""
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mingru", hidden=5, layers=2)
    rng = np.random.default_rng(4)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng))
    obs = rng.standard_normal((6, 2, 3))
    starts = np.zeros((6, 2))
    starts[3] = 1
    carried = rng.standard_normal((2, 2, 5))
    logits, values, _, _ = ref.policy_forward(spec, params, obs, starts, carried)
    fresh_logits, fresh_values, _, _ = ref.policy_forward(spec, params, obs[3:], np.zeros((3, 2)), np.zeros((2, 2, 5)))
    np.testing.assert_allclose(logits[3:], fresh_logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(values[3:], fresh_values, rtol=1e-12, atol=1e-12)
    zero_logits, _, _, _ = ref.policy_forward(spec, params, obs[:3], starts[:3], np.zeros((2, 2, 5)))
    assert not np.allclose(logits[:3], zero_logits)


def test_observation_statistics_close_the_parameter_layout():
    """The layout is the checkpoint contract: with policy.norm_obs the running statistics follow the decoder."""
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1, norm_obs=True)
    table = ref.param_table(spec)
    assert table[-3:] == [("obs_norm.mean", (3,)), ("obs_norm.var", (3,)), ("obs_norm.count", (1,))]
    plain = ref.param_table(ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1))
    assert table[:-3] == plain


def test_observation_statistics_start_and_merge_as_gymnasiums_running_mean_std():
    """policy.norm_obs's statistics start as Gymnasium's RunningMeanStd (NormalizeObservation's: mean 0, var 1,
    count 1e-4) and after each rollout's observations equal its update (stored in float32)."""
    from gymnasium.wrappers.utils import RunningMeanStd

    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1, norm_obs=True)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, np.random.default_rng(0)))
    rms = RunningMeanStd(epsilon=1e-4, shape=(3,))
    np.testing.assert_array_equal(views["obs_norm.mean"], rms.mean)
    np.testing.assert_array_equal(views["obs_norm.var"], rms.var)
    np.testing.assert_array_equal(views["obs_norm.count"], np.float32(rms.count))
    rng = np.random.default_rng(3)
    for _ in range(2):
        obs = (rng.standard_normal((6, 5, 3)) * [1.0, 4.0, 0.5] + [0.0, 2.0, -1.0]).astype(np.float32)
        ref.update_obs_norm(spec, views, obs)
        rms.update(obs.reshape(-1, 3).astype(np.float64))
        np.testing.assert_allclose(views["obs_norm.mean"], rms.mean, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(views["obs_norm.var"], rms.var, rtol=1e-6)
        np.testing.assert_allclose(views["obs_norm.count"], rms.count, rtol=1e-7)


def test_reward_scaling_keeps_gymnasiums_running_moments_of_the_discounted_returns():
    """train.norm_reward against Gymnasium's own RunningMeanStd (NormalizeReward's), over two rollouts of the
    counting env (reward = the action, 3-step episodes): moments of every step's discounted return, rewards
    divided by sqrt(var + 1e-8)."""
    from gymnasium.wrappers.utils import RunningMeanStd

    trainer = counting_trainer(norm_reward=True, gamma=0.9)
    rms, returns = RunningMeanStd(epsilon=1e-4, shape=()), np.zeros(trainer.rows)
    for _ in range(2):
        trainer.rollout()
        raw = trainer.actions.astype(np.float64)
        seen = []
        for t in range(trainer.horizon):
            returns = 0.9 * returns + raw[t]
            seen.append(returns.copy())
            returns = returns * (1 - trainer.dones[t])
        rms.update(np.concatenate(seen))
        np.testing.assert_allclose(trainer.reward_moments, (rms.mean, rms.var, rms.count), rtol=1e-9)
        np.testing.assert_allclose(trainer.rewards, raw / np.sqrt(rms.var + 1e-8), rtol=1e-6)


def test_normalised_observations_are_clipped_to_plus_minus_10_as_cleanrls():
    """norm_obs: (x - mean) / sqrt(var + 1e-8) from the layout's statistics, then clipped to [-10, 10] (CleanRL's
    clip after Gymnasium's NormalizeObservation); an observation far out in either direction sits on the clip."""
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=4, layers=1, norm_obs=True)
    params = {"enc.w": np.zeros((4, 3), np.float32), "obs_norm.mean": np.array([0.0, 1.0, -2.0], np.float32),
              "obs_norm.var": np.array([1.0, 4.0, 0.25], np.float32)}
    obs = np.array([[1e6, -1e6, -2.0], [9.0, 1.0 + 2 * 9.999, -2.0 - 0.5 * 10.5]], np.float32)
    got = ref.encoder_input(spec, params, obs)
    want = np.clip((obs - params["obs_norm.mean"]) / np.sqrt(params["obs_norm.var"] + np.float32(1e-8)), -10, 10)
    np.testing.assert_array_equal(got, want)
    assert got[0].tolist() == [10.0, -10.0, 0.0] and got[1, 2] == -10.0 and 9.99 < got[1, 1] < 10.0


def test_a_multi_discrete_head_needs_a_count_of_at_least_1_for_each_value():
    ref.PolicySpec(obs_size=2, num_actions=3, action_kind="multi_discrete", action_nvec=(1, 2))
    for nvec in ((), (3, 0), (0,), (2, -1)):
        with pytest.raises(ValueError, match=r"a multi_discrete head needs action_nvec counts >= 1, got"):
            ref.PolicySpec(obs_size=2, num_actions=3, action_kind="multi_discrete", action_nvec=nvec)
