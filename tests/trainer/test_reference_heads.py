"""The reference's action heads (Box: diagonal Gaussian with a learned log-std; MultiDiscrete: a categorical per
dimension), byte observations and running normalisation against independent oracles: finite differences in
float64 through the whole policy and PPO loss, scipy's distributions, and sums written out by hand."""

import numpy as np
import pytest
from scipy import stats

from fastvec.trainer import reference as ref

RNG = np.random.default_rng(4321)
BOX = {"num_actions": 0, "action_kind": "box", "action_dims": 2}
MULTI = {"num_actions": 0, "action_kind": "multi_discrete", "action_nvec": (3, 2, 4)}


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar f() with respect to every entry of x (modified in place)."""
    grad = np.zeros_like(x)
    for i in range(x.size):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        grad[i] = (up - down) / (2 * eps)
    return grad


def random_actions(spec, shape):
    if spec.action_kind == "box":
        return RNG.standard_normal((*shape, spec.action_dims))
    return np.stack([RNG.integers(0, n, shape) for n in spec.action_nvec], axis=-1)


@pytest.mark.parametrize("head", [BOX, MULTI], ids=["box", "multi_discrete"])
@pytest.mark.parametrize("kind", ["mingru", "mlp"])
@pytest.mark.parametrize("norm_obs", [False, True])
def test_whole_policy_and_loss_backward_matches_finite_differences(head, kind, norm_obs):
    """Encoder (with normalised observations), layers, decoder, the head (log-stds too) and the PPO loss with an
    entropy bonus: the gradient w.r.t. every trained parameter; the observation statistics get none."""
    spec = ref.PolicySpec(obs_size=3, kind=kind, hidden=4, layers=2, norm_obs=norm_obs, **head)
    layout = ref.FlatLayout(ref.param_table(spec))
    flat = ref.init_params(spec, RNG, np.float64)
    flat += 0.3 * RNG.standard_normal(flat.shape)  # every branch live, log-stds away from 0
    params = layout.views(flat)
    if norm_obs:
        params["obs_norm.var"][...] = RNG.uniform(0.5, 2.0, 3)
        params["obs_norm.count"][...] = 10.0
    steps, b = 5, 4
    obs = 2 * RNG.standard_normal((steps, b, 3))
    starts = RNG.random((steps, b)) < 0.25
    state = RNG.standard_normal((spec.state_layers, b, 4))
    actions = random_actions(spec, (steps, b))
    old_logp = ref.action_log_prob(spec, ref.policy_forward(spec, params, obs, starts, state)[0], actions)
    old_logp += 0.2 * RNG.standard_normal(old_logp.shape)  # ratios on both sides of the clip range
    old_values, adv, ret = (RNG.standard_normal((steps, b)) for _ in range(3))
    coefs = (0.2, 0.3, 0.5, 0.05)

    def loss():
        dist, values, _, _ = ref.policy_forward(spec, params, obs, starts, state)
        return ref.ppo_loss(dist, values, actions, old_logp, old_values, adv, ret, *coefs, spec=spec)[0]

    dist, values, _, cache = ref.policy_forward(spec, params, obs, starts, state)
    assert dist.shape == (steps, b, spec.dist_size)
    _, ddist, dvalues, _ = ref.ppo_loss(dist, values, actions, old_logp, old_values, adv, ret, *coefs, spec=spec)
    grad_flat = np.zeros_like(flat)
    ref.policy_backward(spec, params, layout.views(grad_flat), ddist, dvalues, cache)
    numeric = numeric_grad(loss, flat)
    for name, (off, shape) in layout.offsets.items():
        size = int(np.prod(shape))
        if name.startswith("obs_norm."):
            assert not grad_flat[off:off + size].any(), name
        else:
            np.testing.assert_allclose(grad_flat[off:off + size], numeric[off:off + size], rtol=1e-5, atol=1e-8,
                                       err_msg=name)


def test_box_log_prob_and_entropy_are_scipys_summed_over_dimensions():
    spec = ref.PolicySpec(obs_size=1, **BOX)
    mean, logstd = RNG.standard_normal((6, 2)), RNG.uniform(-1, 1, (6, 2))
    actions = RNG.standard_normal((6, 2))
    logp, entropy, _ = ref.head_log_prob(spec, np.concatenate([mean, logstd], -1), actions)
    np.testing.assert_allclose(logp, stats.norm.logpdf(actions, mean, np.exp(logstd)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(entropy, stats.norm.entropy(mean, np.exp(logstd)).sum(-1), rtol=1e-12)


def test_multi_discrete_log_prob_and_entropy_sum_each_dimensions_categorical():
    spec = ref.PolicySpec(obs_size=1, **MULTI)
    logits = RNG.standard_normal((5, 9))
    actions = random_actions(spec, (5,))
    logp, entropy, _ = ref.head_log_prob(spec, logits, actions)
    want_logp, want_entropy = np.zeros(5), np.zeros(5)
    for part, n, dim in ((logits[:, :3], 3, 0), (logits[:, 3:5], 2, 1), (logits[:, 5:], 4, 2)):
        p = np.exp(part) / np.exp(part).sum(-1, keepdims=True)
        assert p.shape[1] == n
        want_logp += np.log(p[np.arange(5), actions[:, dim]])
        want_entropy += stats.entropy(p, axis=-1)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-12)
    np.testing.assert_allclose(entropy, want_entropy, rtol=1e-12)


def test_box_samples_are_the_gaussian_unclipped_and_box_muller_is_standard_normal():
    z = ref.gaussian_from_uniforms(RNG.random((200_000, 2), dtype=np.float32))
    assert z.dtype == np.float32 and np.isfinite(z).all()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    u = np.array([[0.5, 0.0], [0.0, 0.25], [0.75, 0.5]], np.float32)  # by hand: sqrt(-2 ln(1 - u0)) cos(2 pi u1)
    np.testing.assert_allclose(ref.gaussian_from_uniforms(u), [np.sqrt(2 * np.log(2)), 0.0, -np.sqrt(2 * np.log(4))],
                               atol=1e-6)
    spec = ref.PolicySpec(obs_size=1, **BOX)
    dist = np.array([[3.0, -1.0, np.log(2.0), np.log(0.5)]], np.float32)
    uniforms = np.array([[[0.75, 0.5], [0.5, 0.0]]], np.float32)
    actions, logp = ref.sample_head(spec, dist, uniforms)
    np.testing.assert_allclose(actions, [[3.0 - 2.0 * np.sqrt(2 * np.log(4)), -1.0 + 0.5 * np.sqrt(2 * np.log(2))]],
                               rtol=1e-6)  # 3 - 2 * 2.35 lies far outside a [-2, 2] Box: never clipped here
    np.testing.assert_allclose(logp, stats.norm.logpdf(actions, [3.0, -1.0], [2.0, 0.5]).sum(-1), rtol=1e-5)


def test_multi_discrete_samples_follow_each_dimensions_probabilities():
    spec = ref.PolicySpec(obs_size=1, **MULTI)
    logits = np.tile(RNG.standard_normal(9), (100_000, 1))
    actions, logp = ref.sample_head(spec, logits, RNG.random((100_000, 3)))
    for dim, part in enumerate((slice(0, 3), slice(3, 5), slice(5, 9))):
        p = np.exp(logits[0, part]) / np.exp(logits[0, part]).sum()
        np.testing.assert_allclose(np.bincount(actions[:, dim], minlength=len(p)) / 100_000, p, atol=0.01)
    np.testing.assert_allclose(logp, ref.action_log_prob(spec, logits, actions))
    np.testing.assert_array_equal(ref.head_mode(spec, logits[:1])[0],
                                  [logits[0, :3].argmax(), logits[0, 3:5].argmax(), logits[0, 5:].argmax()])


def test_head_uniforms_are_policy_uniforms_by_row_major_index():
    """The counter twin a CUDA kernel reproduces: row r's j-th uniform is policy_uniform's index r * k + j."""
    key = ref.sampling_key(7)
    discrete = ref.PolicySpec(obs_size=1, num_actions=3)
    np.testing.assert_array_equal(ref.head_uniforms(discrete, key, 5, 3), ref.policy_uniforms(key, 5, 3))
    box = ref.PolicySpec(obs_size=1, **BOX)
    flat = ref.policy_uniforms(key, 5 * 4, 3)
    u = ref.head_uniforms(box, key, 5, 3)
    assert u.shape == (5, 2, 2) and u[3, 1, 0] == flat[3 * 4 + 1 * 2 + 0]
    multi = ref.PolicySpec(obs_size=1, **MULTI)
    assert ref.head_uniforms(multi, key, 5, 3)[4, 2] == ref.policy_uniforms(key, 15, 3)[4 * 3 + 2]


def test_a_discrete_head_is_todays_layout_and_loss():
    spec = ref.PolicySpec(obs_size=4, num_actions=3, hidden=8, layers=1)
    assert [name for name, _ in ref.param_table(spec)] == ["enc.w", "enc.b", "layer0.w", "layer0.b", "dec.w", "dec.b"]
    logits, values = RNG.standard_normal((4, 3, 3)), RNG.standard_normal((4, 3))
    args = (logits, values, RNG.integers(0, 3, (4, 3)), -np.ones((4, 3)), values, RNG.standard_normal((4, 3)),
            RNG.standard_normal((4, 3)), 0.2, 0.2, 0.5, 0.01)
    plain, with_spec = ref.ppo_loss(*args), ref.ppo_loss(*args, spec=spec)
    assert plain[0] == with_spec[0] and plain[3] == with_spec[3]
    np.testing.assert_array_equal(plain[1], with_spec[1])


def test_bytes_are_scaled_and_observations_normalised_in_the_encoder():
    spec = ref.PolicySpec(obs_size=3, num_actions=2, hidden=4, layers=1, kind="mlp", obs_scale=1 / 255, norm_obs=True)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, RNG))
    params["obs_norm.mean"][...] = [0.5, 0.0, 1.0]
    params["obs_norm.var"][...] = [0.25, 1.0, 1e-6]
    obs = np.array([[255, 0, 51]], np.uint8)
    x = ref.encoder_input(spec, params, obs)
    want = np.clip((obs / 255.0 - [0.5, 0.0, 1.0]) / np.sqrt(np.array([0.25, 1.0, 1e-6]) + 1e-8), -10, 10)
    assert x.dtype == np.float32 and want[0, 2] == -10
    np.testing.assert_allclose(x, want, rtol=1e-6)
    as_floats = ref.policy_forward(spec, params, obs[None].astype(np.float32), np.ones((1, 1)), np.zeros((0, 1, 4)))
    as_bytes = ref.policy_forward(spec, params, obs[None], np.ones((1, 1)), np.zeros((0, 1, 4)))
    np.testing.assert_array_equal(as_floats[0], as_bytes[0])  # --eval's float copy acts as training's bytes did


def test_running_moments_equal_the_statistics_of_everything_seen():
    first, second = RNG.normal(3, 2, (500, 4)), RNG.normal(-1, 0.5, (300, 4))
    mean, var, count = ref.merge_moments(np.zeros(4), np.ones(4), 0.0, first)
    mean, var, count = ref.merge_moments(mean, var, count, second)
    both = np.concatenate([first, second])
    np.testing.assert_allclose(mean, both.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var, both.var(0), rtol=1e-12)
    assert count == 800
    spec = ref.PolicySpec(obs_size=4, num_actions=2, norm_obs=True, obs_scale=0.5)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, RNG))
    ref.update_obs_norm(spec, params, both.reshape(8, 100, 4))
    np.testing.assert_allclose(params["obs_norm.mean"], 0.5 * both.mean(0), rtol=1e-5)  # the 1e-4 prior count
    np.testing.assert_allclose(params["obs_norm.var"], 0.25 * both.var(0), rtol=1e-5)
    assert params["obs_norm.count"][0] == pytest.approx(800, abs=1e-3)


def test_reward_scaling_divides_by_the_std_of_discounted_returns_by_hand():
    rewards = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]], np.float32)
    dones = np.array([[0, 1], [1, 0], [0, 0]], np.float32)
    carried = np.array([10.0, 0.0])
    gamma = 0.5
    # row 0: G = 5 + 1 = 6, 3 + 3 = 6 (ends), 0.5; row 1: G = 2 (ends), -1, -0.5 + 4 = 3.5
    seen = np.array([6.0, 6.0, 0.5, 2.0, -1.0, 3.5])
    scaled, moments = ref.scale_rewards(rewards, dones, carried, (0.0, 1.0, 1e-4), gamma)
    want_mean, want_var, _ = ref.merge_moments(0.0, 1.0, 1e-4, seen)
    assert moments[0] == pytest.approx(want_mean) and moments[1] == pytest.approx(want_var)
    assert moments[1] == pytest.approx(seen.var(), rel=1e-3)
    np.testing.assert_allclose(scaled, rewards / np.sqrt(want_var + 1e-8), rtol=1e-6)
    np.testing.assert_array_equal(carried, [0.5, 3.5])  # carried into the next rollout
    big, _ = ref.scale_rewards(np.array([[1e6]], np.float32), np.zeros((1, 1)), np.zeros(1), (0.0, 1.0, 1e15), gamma)
    assert big[0, 0] == 10.0
