"""The reference's team parts against hand computations and finite differences: the masked categorical (its
log-probabilities, entropies and PPO gradient are those of the categorical over the available actions alone,
and sampling never takes an unavailable action), the agent-id one-hot, and MAPPO's world-state critic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastvec.trainer import reference as ref

from test_reference import assert_close_grad, numeric_grad, random_batch, random_starts

RNG = np.random.default_rng(4321)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_log_prob_and_entropy_equal_the_hand_computation(dtype):
    """logits (1, 2, 3, 0.5), action 1 unavailable: the distribution is softmax over (1, 3, 0.5) on actions 0, 2, 3."""
    logits = np.array([[1.0, 2.0, 3.0, 0.5]], dtype)
    mask = np.array([[1, 0, 1, 1]], np.uint8)
    z = math.exp(1.0) + math.exp(3.0) + math.exp(0.5)
    probs = {0: math.exp(1.0) / z, 2: math.exp(3.0) / z, 3: math.exp(0.5) / z}
    entropy = -sum(p * math.log(p) for p in probs.values())
    masked = ref.mask_logits(logits, mask)
    for action, p in probs.items():
        logp, ent, _ = ref.head_log_prob(None, masked, np.array([action]))
        assert logp[0] == pytest.approx(math.log(p), rel=1e-6)
        assert ent[0] == pytest.approx(entropy, rel=1e-6)
    assert np.exp(ref.log_softmax(masked))[0, 1] == 0.0  # exactly: no mass leaks to the unavailable action


def test_masked_ppo_loss_and_gradient_are_the_available_actions_categoricals():
    """The PPO loss over masked logits equals the loss over the available columns alone (another categorical), and its
    gradient is that one's on the available logits and 0 on the others."""
    t, b, a = 4, 5, 6
    logits = RNG.standard_normal((t, b, a))
    keep = np.array([0, 2, 3, 5])  # actions 1 and 4 unavailable in every row
    mask = np.zeros((t, b, a), np.uint8)
    mask[..., keep] = 1
    chosen = RNG.integers(0, len(keep), (t, b))
    _, old_logp, old_values, adv, ret = random_batch(t, b, len(keep))
    values = RNG.standard_normal((t, b))
    coefs = (0.2, 0.3, 0.5, 0.02)
    full = ref.ppo_loss(ref.mask_logits(logits, mask), values, keep[chosen], old_logp, old_values, adv, ret, *coefs)
    alone = ref.ppo_loss(logits[..., keep], values, chosen, old_logp, old_values, adv, ret, *coefs)
    assert full[0] == pytest.approx(alone[0], rel=1e-12)
    assert full[3] == pytest.approx(alone[3], rel=1e-12)
    dlogits = ref.mask_logits_grad(full[1], mask)
    np.testing.assert_allclose(dlogits[..., keep], alone[1], rtol=1e-12, atol=1e-15)
    assert not dlogits[..., [1, 4]].any()


def test_masked_sampling_never_picks_an_unavailable_action():
    """Masked actions carry the largest logits; the uniforms include 0 and the largest float32 below 1."""
    rows, a = 4000, 7
    mask = (RNG.random((rows, a)) < 0.4).astype(np.uint8)
    mask[np.arange(rows), RNG.integers(0, a, rows)] = 1  # at least one available action per row
    logits = np.where(mask == 1, RNG.standard_normal((rows, a)), 30.0).astype(np.float32)
    uniforms = RNG.random(rows, dtype=np.float32)
    uniforms[:50], uniforms[50:100] = 0.0, np.float32(1 - 2 ** -24)
    actions, logp = ref.sample_actions(ref.mask_logits(logits, mask), ref.masked_uniforms(uniforms))
    assert mask[np.arange(rows), actions].all()
    assert np.isfinite(logp).all()
    spec = ref.PolicySpec(obs_size=3, num_actions=a, kind="mlp", hidden=8, layers=1)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, RNG))
    obs, starts, state = RNG.standard_normal((rows, 3)).astype(np.float32), np.ones(rows, np.float32), \
        np.zeros((0, rows, 8), np.float32)
    for deterministic in (False, True):
        taken = ref.policy_act(spec, params, obs, starts, state, RNG, deterministic, mask=mask)[0]
        assert mask[np.arange(rows), taken].all()


def test_masked_sampling_follows_the_masked_distribution():
    logits = np.array([[0.3, 5.0, -0.2, 1.0]] * 40_000, np.float32)
    mask = np.array([[1, 0, 1, 1]] * 40_000, np.uint8)
    actions, _ = ref.sample_actions(ref.mask_logits(logits, mask), ref.masked_uniforms(RNG.random(40_000, np.float32)))
    p = np.exp([0.3, -0.2, 1.0]) / np.exp([0.3, -0.2, 1.0]).sum()
    freq = np.bincount(actions, minlength=4) / len(actions)
    assert freq[1] == 0
    np.testing.assert_allclose(freq[[0, 2, 3]], p, atol=0.01)


def test_agent_onehot_marks_each_rows_agent():
    ids = ref.agent_onehot(num_envs=3, num_agents=4)
    assert ids.shape == (12, 4) and ids.dtype == np.float32
    np.testing.assert_array_equal(ids.argmax(1), np.arange(12) % 4)
    np.testing.assert_array_equal(ids.sum(1), 1)
    assert ref.agent_onehot(2, 3, np.uint8, 255).max() == 255


def test_agent_ids_widen_the_encoder_and_a_world_state_critic():
    spec = ref.PolicySpec(obs_size=18, num_actions=5, kind="mlp", hidden=8, layers=1, critic="separate",
                          agent_ids=3, world_size=54)
    shapes = dict(ref.param_table(spec))
    assert spec.input_size == 21 and shapes["enc.w"] == (8, 21)
    assert spec.critic_input_size == 57 and shapes["critic.enc.w"] == (8, 57)
    with pytest.raises(ValueError, match="policy.critic='separate'"):
        ref.PolicySpec(obs_size=18, num_actions=5, kind="mlp", world_size=54)


def test_a_world_state_critic_reads_the_world_state_alone():
    """Its values change with the world state and not with the observation; the actor's logits the other way round."""
    spec = ref.PolicySpec(obs_size=3, num_actions=4, kind="mlp", hidden=8, layers=1, critic="separate", world_size=5)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, RNG, np.float64))
    obs, world = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 5))
    starts, state = np.zeros((2, 6)), np.zeros((0, 6, 8))
    logits, values, _, _ = ref.policy_forward(spec, params, obs, starts, state, world)
    logits2, values2, _, _ = ref.policy_forward(spec, params, obs + 1, starts, state, world)
    logits3, values3, _, _ = ref.policy_forward(spec, params, obs, starts, state, world + 1)
    np.testing.assert_array_equal(values, values2)
    np.testing.assert_array_equal(logits, logits3)
    assert not np.allclose(values, values3) and not np.allclose(logits, logits2)


def test_world_state_critic_and_masked_loss_backward_match_finite_differences():
    """End to end with masks, agent ids and a world-state critic: the gradient w.r.t. every parameter."""
    spec = ref.PolicySpec(obs_size=3, num_actions=4, kind="mlp", hidden=4, layers=2, critic="separate",
                          agent_ids=2, world_size=5)
    layout = ref.FlatLayout(ref.param_table(spec))
    flat = ref.init_params(spec, RNG, np.float64)
    flat += 0.3 * RNG.standard_normal(flat.shape)
    params = layout.views(flat)
    steps, b = 4, 4
    obs = np.concatenate([RNG.standard_normal((steps, b, 3)), np.tile(np.eye(2), (steps, 2, 1))], axis=-1)
    world = RNG.standard_normal((steps, b, 7))
    starts, state = random_starts(steps, b), np.zeros((0, b, 4))
    mask = (RNG.random((steps, b, 4)) < 0.7).astype(np.uint8)
    mask[..., 0] = 1
    actions = np.argmax(mask * RNG.random((steps, b, 4)), -1)  # an available action each
    _, old_logp, old_values, adv, ret = random_batch(steps, b, 4)
    coefs = (0.2, 0.3, 0.5, 0.02)

    def loss():
        logits, values, _, _ = ref.policy_forward(spec, params, obs, starts, state, world)
        return ref.ppo_loss(ref.mask_logits(logits, mask), values, actions, old_logp, old_values, adv, ret, *coefs)[0]

    logits, values, _, cache = ref.policy_forward(spec, params, obs, starts, state, world)
    _, dlogits, dvalues, _ = ref.ppo_loss(ref.mask_logits(logits, mask), values, actions, old_logp, old_values, adv,
                                          ret, *coefs)
    grad_flat = np.zeros_like(flat)
    ref.policy_backward(spec, params, layout.views(grad_flat), ref.mask_logits_grad(dlogits, mask), dvalues, cache)
    numeric = numeric_grad(loss, flat)
    for name, (off, shape) in layout.offsets.items():
        size = int(np.prod(shape))
        assert_close_grad(grad_flat[off:off + size], numeric[off:off + size], rtol=1e-5, atol=1e-8)
