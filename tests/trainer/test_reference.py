"""The NumPy reference algorithm against independent oracles: finite differences in float64 for every
backward pass, direct-sum definitions for GAE and V-trace, step-by-step loops for the MinGRU scan, and
the textbook formulas (or SVD) for Adam and Muon."""

import dataclasses

import numpy as np
import pytest

from fastvec.trainer import reference as ref

RNG = np.random.default_rng(1234)


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar f() with respect to every entry of x (modified in place)."""
    grad = np.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = f()
        flat[i] = old - eps
        down = f()
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return grad


def assert_close_grad(analytic, numeric, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol)


def random_starts(t, b, p=0.25):
    starts = RNG.random((t, b)) < p
    return starts


# ---------------------------------------------------------------------------------------------- MinGRU


def mingru_step_by_step(x, starts, h0, w, bias, highway):
    """The recurrence written one step at a time, straight from its definition."""
    hidden = x.shape[-1]
    h = h0.copy()
    outs = []
    for t in range(len(x)):
        h = np.where(starts[t][:, None], 0.0, h)
        pre = x[t] @ w.T + bias
        z = 1 / (1 + np.exp(-pre[:, :hidden]))
        hp = pre[:, hidden:2 * hidden]
        cand = np.where(hp >= 0, hp + 0.5, 1 / (1 + np.exp(-hp)))
        h = (1 - z) * h + z * cand
        if highway:
            s = 1 / (1 + np.exp(-pre[:, 2 * hidden:]))
            outs.append(s * h + (1 - s) * x[t])
        else:
            outs.append(h.copy())
    return np.stack(outs), h


@pytest.mark.parametrize("highway", [True, False])
@pytest.mark.parametrize("steps", [1, 7, 16])
def test_mingru_scan_matches_step_by_step_with_resets(highway, steps):
    b, hidden = 5, 6
    x = RNG.standard_normal((steps, b, hidden))
    starts = random_starts(steps, b, 0.3)
    h0 = RNG.standard_normal((b, hidden))
    w = RNG.standard_normal(((3 if highway else 2) * hidden, hidden))
    bias = RNG.standard_normal(w.shape[0])
    out, final, _ = ref.mingru_forward(x, 1.0 - starts, h0, w, bias, highway)
    want_out, want_final = mingru_step_by_step(x, starts, h0, w, bias, highway)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(final, want_final, rtol=1e-12, atol=1e-12)


def test_mingru_state_reset_forgets_the_past():
    """After a start, the output must not depend on the state or inputs before it."""
    b, hidden, steps = 3, 4, 6
    w = RNG.standard_normal((3 * hidden, hidden))
    bias = RNG.standard_normal(3 * hidden)
    x = RNG.standard_normal((steps, b, hidden))
    starts = np.zeros((steps, b), bool)
    starts[3] = True
    out1, _, _ = ref.mingru_forward(x, 1.0 - starts, RNG.standard_normal((b, hidden)), w, bias, True)
    x2 = x.copy()
    x2[:3] = RNG.standard_normal((3, b, hidden))
    out2, _, _ = ref.mingru_forward(x2, 1.0 - starts, RNG.standard_normal((b, hidden)), w, bias, True)
    np.testing.assert_allclose(out1[3:], out2[3:], rtol=1e-12)
    assert not np.allclose(out1[:3], out2[:3])


def test_chunked_scan_carries_state_across_horizons():
    """Running a horizon in two halves, carrying the state, equals running it at once (BPTT segments)."""
    spec = ref.PolicySpec(obs_size=3, num_actions=4, kind="mingru", hidden=5, layers=2, highway=True)
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, RNG, np.float64))
    obs = RNG.standard_normal((10, 4, 3))
    starts = random_starts(10, 4)
    state = RNG.standard_normal((2, 4, 5))
    logits, values, final, _ = ref.policy_forward(spec, params, obs, starts, state)
    l1, v1, mid, _ = ref.policy_forward(spec, params, obs[:4], starts[:4], state)
    l2, v2, final2, _ = ref.policy_forward(spec, params, obs[4:], starts[4:], mid)
    np.testing.assert_allclose(np.concatenate([l1, l2]), logits, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.concatenate([v1, v2]), values, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(final2, final, rtol=1e-12, atol=1e-14)


def test_mingru_candidate_activation_is_continuous_and_as_defined():
    x = np.array([-3.0, -1e-9, 0.0, 2.0])
    np.testing.assert_allclose(ref.mingru_g(x), [1 / (1 + np.exp(3)), 0.5, 0.5, 2.5], rtol=1e-8)


# ---------------------------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("highway", [True, False])
def test_mingru_layer_backward_matches_finite_differences(highway):
    steps, b, hidden = 5, 3, 4
    x = RNG.standard_normal((steps, b, hidden))
    keep = 1.0 - random_starts(steps, b, 0.3)
    h0 = RNG.standard_normal((b, hidden))
    w = RNG.standard_normal(((3 if highway else 2) * hidden, hidden))
    bias = RNG.standard_normal(w.shape[0])
    weight_out = RNG.standard_normal((steps, b, hidden))  # loss = sum(out * weight_out)

    def loss():
        return float((ref.mingru_forward(x, keep, h0, w, bias, highway)[0] * weight_out).sum())

    _, _, cache = ref.mingru_forward(x, keep, h0, w, bias, highway)
    dx, dw, db = ref.mingru_backward(weight_out, cache)
    assert_close_grad(dx, numeric_grad(loss, x))
    assert_close_grad(dw, numeric_grad(loss, w))
    assert_close_grad(db, numeric_grad(loss, bias))


def test_mlp_layer_backward_matches_finite_differences():
    x = RNG.standard_normal((4, 3, 5))
    w = RNG.standard_normal((5, 5))
    bias = RNG.standard_normal(5)
    weight_out = RNG.standard_normal((4, 3, 5))

    def loss():
        return float((ref.mlp_forward(x, w, bias)[0] * weight_out).sum())

    _, cache = ref.mlp_forward(x, w, bias)
    dx, dw, db = ref.mlp_backward(weight_out, cache, w)
    assert_close_grad(dx, numeric_grad(loss, x))
    assert_close_grad(dw, numeric_grad(loss, w))
    assert_close_grad(db, numeric_grad(loss, bias))


def random_batch(steps, b, num_actions):
    actions = RNG.integers(0, num_actions, (steps, b))
    old_logp = np.log(RNG.uniform(0.1, 0.9, (steps, b)))
    old_values = RNG.standard_normal((steps, b))
    advantages = RNG.standard_normal((steps, b))
    returns = RNG.standard_normal((steps, b))
    return actions, old_logp, old_values, advantages, returns


def test_ppo_loss_gradient_matches_finite_differences_in_every_branch():
    steps, b, a = 6, 8, 3
    logits = RNG.standard_normal((steps, b, a))
    values = RNG.standard_normal((steps, b))
    actions, old_logp, old_values, advantages, returns = random_batch(steps, b, a)
    # Put old_logp near the current logp so that some ratios fall inside the clip range, some outside.
    logp = np.take_along_axis(ref.log_softmax(logits), actions[..., None], -1)[..., 0]
    old_logp = logp + RNG.uniform(-0.5, 0.5, (steps, b))
    old_values = values + RNG.uniform(-0.4, 0.4, (steps, b))
    coefs = dict(clip_coef=0.2, vf_clip_coef=0.2, vf_coef=0.7, ent_coef=0.03)

    def loss():
        return ref.ppo_loss(logits, values, actions, old_logp, old_values, advantages, returns, **coefs)[0]

    _, dlogits, dvalues, stats = ref.ppo_loss(logits, values, actions, old_logp, old_values, advantages,
                                              returns, **coefs)
    assert 0.05 < stats["clipfrac"] < 0.95, "the test must exercise both clipped and unclipped samples"
    assert_close_grad(dlogits, numeric_grad(loss, logits))
    assert_close_grad(dvalues, numeric_grad(loss, values))


def test_ppo_loss_value_matches_its_definition():
    steps, b, a = 3, 4, 5
    logits = RNG.standard_normal((steps, b, a))
    values = RNG.standard_normal((steps, b))
    actions, old_logp, old_values, adv, ret = random_batch(steps, b, a)
    loss, _, _, stats = ref.ppo_loss(logits, values, actions, old_logp, old_values, adv, ret, 0.3, 0.5, 0.5, 0.01)
    total_pg, total_v, total_h = 0.0, 0.0, 0.0
    for t in range(steps):
        for i in range(b):
            p = np.exp(logits[t, i]) / np.exp(logits[t, i]).sum()
            r = p[actions[t, i]] / np.exp(old_logp[t, i])
            total_pg += max(-adv[t, i] * r, -adv[t, i] * min(max(r, 0.7), 1.3))
            vc = old_values[t, i] + min(max(values[t, i] - old_values[t, i], -0.5), 0.5)
            total_v += 0.5 * max((values[t, i] - ret[t, i]) ** 2, (vc - ret[t, i]) ** 2)
            total_h += -(p * np.log(p)).sum()
    n = steps * b
    assert stats["policy_loss"] == pytest.approx(total_pg / n, rel=1e-10)
    assert stats["value_loss"] == pytest.approx(total_v / n, rel=1e-10)
    assert stats["entropy"] == pytest.approx(total_h / n, rel=1e-10)
    assert loss == pytest.approx(total_pg / n + 0.5 * total_v / n - 0.01 * total_h / n, rel=1e-10)


@pytest.mark.parametrize("kind,highway,critic,encoder", [
    ("mingru", True, "shared", "linear"), ("mingru", False, "shared", "linear"), ("mlp", False, "shared", "linear"),
    ("mlp", False, "separate", "linear"), ("mlp", False, "shared", "relu"), ("mlp", False, "separate", "relu"),
    ("mingru", True, "shared", "relu"), ("mingru", False, "shared", "tanh")])
def test_whole_policy_and_loss_backward_matches_finite_differences(kind, highway, critic, encoder):
    """End to end: encoder (and its ReLU), layers, decoder (and a separate critic's stack) and the PPO loss,
    gradient w.r.t. every parameter."""
    spec = ref.PolicySpec(obs_size=3, num_actions=3, kind=kind, hidden=4, layers=2, highway=highway, critic=critic,
                          encoder=encoder)
    layout = ref.FlatLayout(ref.param_table(spec))
    flat = ref.init_params(spec, RNG, np.float64)
    flat += 0.3 * RNG.standard_normal(flat.shape)  # away from the tiny-logit init, so every branch is live
    params = layout.views(flat)
    steps, b = 5, 4
    obs = RNG.standard_normal((steps, b, 3))
    starts = random_starts(steps, b)
    state = RNG.standard_normal((spec.state_layers, b, 4))
    actions, old_logp, old_values, adv, ret = random_batch(steps, b, 3)
    coefs = (0.2, 0.3, 0.5, 0.02)

    def loss():
        logits, values, _, _ = ref.policy_forward(spec, params, obs, starts, state)
        return ref.ppo_loss(logits, values, actions, old_logp, old_values, adv, ret, *coefs)[0]

    logits, values, _, cache = ref.policy_forward(spec, params, obs, starts, state)
    _, dlogits, dvalues, _ = ref.ppo_loss(logits, values, actions, old_logp, old_values, adv, ret, *coefs)
    grad_flat = np.zeros_like(flat)
    ref.policy_backward(spec, params, layout.views(grad_flat), dlogits, dvalues, cache)
    numeric = numeric_grad(loss, flat)
    for name, (off, shape) in layout.offsets.items():
        size = int(np.prod(shape))
        assert_close_grad(grad_flat[off:off + size], numeric[off:off + size], rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------------------------------------- GAE / V-trace


def gae_by_definition(values, last_value, rewards, dones, gamma, lam):
    """A_s = sum over t >= s of (gamma lam)^(t-s) delta_t, stopping after the step that ends the episode."""
    steps, b = values.shape
    next_values = np.concatenate([values[1:], last_value[None]])
    adv = np.zeros_like(values)
    for i in range(b):
        for s in range(steps):
            total, discount = 0.0, 1.0
            for t in range(s, steps):
                nonterminal = 0.0 if dones[t, i] else 1.0
                delta = rewards[t, i] + gamma * nonterminal * next_values[t, i] - values[t, i]
                total += discount * delta
                if dones[t, i]:
                    break
                discount *= gamma * lam
            adv[s, i] = total
    return adv


def vtrace_by_definition(values, last_value, rewards, dones, ratios, gamma, lam, rho_clip, c_clip):
    """IMPALA's v_s - V(x_s) = sum_t gamma^(t-s) (prod_{s<=i<t} c_i) rho_t delta_t, c_i = lam min(c_clip, ratio)."""
    steps, b = values.shape
    next_values = np.concatenate([values[1:], last_value[None]])
    out = np.zeros_like(values)
    for i in range(b):
        for s in range(steps):
            total, weight = 0.0, 1.0
            for t in range(s, steps):
                nonterminal = 0.0 if dones[t, i] else 1.0
                delta = rewards[t, i] + gamma * nonterminal * next_values[t, i] - values[t, i]
                total += weight * min(rho_clip, ratios[t, i]) * delta
                if dones[t, i]:
                    break
                weight *= gamma * lam * min(c_clip, ratios[t, i])
            out[s, i] = total
    return out


def test_gae_matches_direct_sum():
    steps, b = 13, 5
    values = RNG.standard_normal((steps, b))
    rewards = RNG.standard_normal((steps, b))
    dones = RNG.random((steps, b)) < 0.2
    last = RNG.standard_normal(b)
    got = ref.gae(values, last, rewards, dones, 0.97, 0.9)
    np.testing.assert_allclose(got, gae_by_definition(values, last, rewards, dones, 0.97, 0.9), rtol=1e-12)


def test_vtrace_matches_direct_sum_and_reduces_to_gae_on_policy():
    steps, b = 11, 4
    values = RNG.standard_normal((steps, b))
    rewards = RNG.standard_normal((steps, b))
    dones = RNG.random((steps, b)) < 0.2
    last = RNG.standard_normal(b)
    ratios = np.exp(RNG.uniform(-0.7, 0.7, (steps, b)))
    got = ref.gae(values, last, rewards, dones, 0.99, 0.95, ratios, rho_clip=1.2, c_clip=0.9)
    want = vtrace_by_definition(values, last, rewards, dones, ratios, 0.99, 0.95, 1.2, 0.9)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    on_policy = ref.gae(values, last, rewards, dones, 0.99, 0.95, np.ones_like(values))
    np.testing.assert_allclose(on_policy, ref.gae(values, last, rewards, dones, 0.99, 0.95), rtol=1e-12)


# ---------------------------------------------------------------------------------------------- optimizers


def test_adam_step_matches_formula_over_several_steps():
    p = RNG.standard_normal(7)
    m, v = np.zeros(7), np.zeros(7)
    want_p = p.copy()
    want_m, want_v = np.zeros(7), np.zeros(7)
    for step in range(1, 4):
        g = RNG.standard_normal(7)
        ref.adam_step(p, g, m, v, step, 0.01, 0.9, 0.999, 1e-8)
        want_m = 0.9 * want_m + 0.1 * g
        want_v = 0.999 * want_v + 0.001 * g ** 2
        want_p = want_p - 0.01 * (want_m / (1 - 0.9 ** step)) / (np.sqrt(want_v / (1 - 0.999 ** step)) + 1e-8)
    np.testing.assert_allclose(p, want_p, rtol=1e-12)
    np.testing.assert_allclose(m, want_m, rtol=1e-12)


@pytest.mark.parametrize("shape", [(8, 8), (12, 5), (3, 10)])
def test_newton_schulz_orthogonalises_like_the_svd(shape):
    """NS(G) = U f(S) V^T with the singular vectors of G and every f(s) in Muon's band around 1."""
    g = RNG.standard_normal(shape)
    u, s, vt = np.linalg.svd(g, full_matrices=False)
    out = ref.newton_schulz(g, steps=5)
    core = u.T @ out @ vt.T  # diagonal if out shares G's singular vectors
    np.testing.assert_allclose(core - np.diag(np.diag(core)), 0, atol=1e-8)
    assert np.all((np.diag(core) > 0.6) & (np.diag(core) < 1.25)), np.diag(core)


def test_muon_step_matches_formula():
    shapes = {"w": (6, 4), "b": (6,)}
    params = {k: RNG.standard_normal(s) for k, s in shapes.items()}
    m = {k: np.zeros(s) for k, s in shapes.items()}
    v = {k: np.zeros(s) for k, s in shapes.items()}
    want_w, want_buf = params["w"].copy(), np.zeros((6, 4))
    want_b = params["b"].copy()
    bm, bv = np.zeros(6), np.zeros(6)
    for step in range(1, 4):
        grads = {k: RNG.standard_normal(s) for k, s in shapes.items()}
        ref.muon_step(params, grads, m, v, ["w"], step, 0.02, 0.95, 0.9, 0.999, 1e-8)
        want_buf = 0.95 * want_buf + grads["w"]
        nesterov = grads["w"] + 0.95 * want_buf
        u, _, vt = np.linalg.svd(nesterov, full_matrices=False)
        ortho = ref.newton_schulz(nesterov)
        want_w = want_w - 0.02 * 0.2 * np.sqrt(6) * ortho
        # the scale is what the formula says: 0.2 sqrt(max dim) on a near-orthogonal update
        assert np.linalg.norm(ortho - u @ vt) / np.linalg.norm(u @ vt) < 0.35
        bm = 0.9 * bm + 0.1 * grads["b"]
        bv = 0.999 * bv + 0.001 * grads["b"] ** 2
        want_b = want_b - 0.02 * (bm / (1 - 0.9 ** step)) / (np.sqrt(bv / (1 - 0.999 ** step)) + 1e-8)
    np.testing.assert_allclose(params["w"], want_w, rtol=1e-10)
    np.testing.assert_allclose(params["b"], want_b, rtol=1e-10)


def test_clip_grad_norm_scales_to_max_and_leaves_small_gradients():
    g = RNG.standard_normal(50) * 10
    norm = ref.clip_grad_norm(g, 1.5)
    assert norm > 1.5
    assert np.linalg.norm(g) == pytest.approx(1.5, rel=1e-5)
    small = RNG.standard_normal(5) * 1e-3
    before = small.copy()
    ref.clip_grad_norm(small, 1.5)
    np.testing.assert_array_equal(small, before)
    # a norm of exactly max_norm is not above it: left as it is (the CUDA trainer's grad_norm_kernel's rule too)
    edge = np.array([3.0, 4.0], np.float32)
    assert ref.clip_grad_norm(edge, 5.0) == 5.0
    np.testing.assert_array_equal(edge, [3.0, 4.0])


@pytest.mark.parametrize("max_norm", [1e-5, 1e-3, 0.5])
def test_clip_grad_norm_scales_as_pytorchs_and_never_above_max_norm(max_norm):
    """Clipping scales by max_norm / (norm + 1e-6), PyTorch's clip_grad_norm_ rule: the clipped norm is just under
    max_norm, which tells from a scale of max_norm / norm (or less) where max_norm is small."""
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(7).standard_normal(40) * max_norm
    want = torch.tensor(g)
    want.grad = want.clone()
    torch.nn.utils.clip_grad_norm_([want], max_norm)
    norm = ref.clip_grad_norm(g, max_norm)
    assert norm > max_norm
    np.testing.assert_allclose(g, want.grad.numpy(), rtol=1e-12)
    assert np.linalg.norm(g) < max_norm


def test_learning_rate_anneals_linearly_to_zero():
    assert ref.annealed(0.1, 0, 10, True) == pytest.approx(0.1)
    assert ref.annealed(0.1, 5, 10, True) == pytest.approx(0.05)
    assert ref.annealed(0.1, 5, 10, False) == pytest.approx(0.1)


# ---------------------------------------------------------------------------------------------- sampling, layout


def test_sampling_follows_the_softmax_distribution():
    logits = np.tile(np.array([[0.5, -1.0, 2.0]]), (200_000, 1))
    actions, logp = ref.sample_actions(logits, RNG.random(200_000))
    probs = np.exp(logits[0]) / np.exp(logits[0]).sum()
    np.testing.assert_allclose(np.bincount(actions, minlength=3) / 200_000, probs, atol=5e-3)
    np.testing.assert_allclose(logp, np.log(probs)[actions], rtol=1e-6)


def test_flat_layout_views_share_memory_and_cover_every_parameter_once():
    spec = ref.PolicySpec(obs_size=7, num_actions=3, kind="mingru", hidden=8, layers=3, highway=True)
    layout = ref.FlatLayout(ref.param_table(spec))
    flat = np.zeros(layout.size, np.float32)
    views = layout.views(flat)
    for i, view in enumerate(views.values()):
        view[...] = i + 1
    counts = np.bincount(flat.astype(int))
    assert counts[0] == 0, "a parameter entry belongs to no view"
    assert list(counts[1:]) == [int(np.prod(s)) for _, s in layout.table]
    assert layout.size == 7 * 8 + 8 + 3 * (24 * 8 + 24) + 4 * 8 + 4


def test_a_separate_critic_is_its_own_network():
    """policy.critic=separate: the values come from the critic's stack alone (its weights move them, the actor's
    do not), the logits from the actor's alone, and the value loss reaches no actor weight."""
    spec = ref.PolicySpec(obs_size=3, num_actions=3, kind="mlp", hidden=4, layers=2, critic="separate")
    layout = ref.FlatLayout(ref.param_table(spec))
    assert [name for name in layout.offsets if name.startswith("critic.")] == [
        "critic.dec.b", "critic.enc.w", "critic.enc.b", "critic.layer0.w", "critic.layer0.b", "critic.layer1.w",
        "critic.layer1.b", "critic.dec.w"]
    assert layout.offsets["dec.w"][1] == (3, 4)  # the actor's decoder has no value row
    # the A + 1 decoder biases are contiguous, as the shared critic's dec.b (the CUDA trainer adds them in one pass)
    assert layout.offsets["critic.dec.b"][0] == layout.offsets["dec.b"][0] + 3
    box = ref.PolicySpec(obs_size=3, num_actions=0, kind="mlp", hidden=4, layers=1, action_kind="box", action_dims=2,
                         critic="separate")
    box_offsets = ref.FlatLayout(ref.param_table(box)).offsets  # the GPU's env step reads the log-stds there
    assert box_offsets["dec.logstd"][0] == box_offsets["dec.b"][0] + 3
    flat = ref.init_params(spec, RNG, np.float64)
    params = layout.views(flat)
    obs, starts, state = RNG.standard_normal((2, 5, 3)), np.zeros((2, 5)), np.zeros((0, 5, 4))
    logits, values, _, cache = ref.policy_forward(spec, params, obs, starts, state)
    params["enc.w"][...] += 1.0
    logits2, values2, _, _ = ref.policy_forward(spec, params, obs, starts, state)
    assert np.array_equal(values, values2) and not np.array_equal(logits, logits2)
    params["critic.enc.w"][...] += 1.0
    logits3, values3, _, _ = ref.policy_forward(spec, params, obs, starts, state)
    assert np.array_equal(logits2, logits3) and not np.array_equal(values2, values3)
    grads = np.zeros_like(flat)
    ref.policy_backward(spec, params, layout.views(grads), np.zeros_like(logits), np.ones_like(values), cache)
    for name, (off, shape) in layout.offsets.items():
        touched = np.any(grads[off:off + int(np.prod(shape))] != 0)
        assert touched == name.startswith("critic."), name


@pytest.mark.parametrize("critic", ["shared", "separate"])
def test_a_relu_encoder_with_one_layer_is_the_two_hidden_layer_relu_network(critic):
    """policy.encoder=relu, policy.layers=1: PureJaxRL's and CleanRL's actor-critic, written out here by its
    definition (Dense, ReLU, Dense, ReLU, Dense for the logits and, shared or in a network of its own, the value)."""
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mlp", hidden=6, layers=1, critic=critic, encoder="relu")
    flat = ref.init_params(spec, RNG, np.float64) + 0.3 * RNG.standard_normal(ref.FlatLayout(ref.param_table(spec)).size)
    p = ref.FlatLayout(ref.param_table(spec)).views(flat)
    obs = RNG.standard_normal((2, 4, 5))

    def network(prefix):
        hidden = np.maximum(obs @ p[prefix + "enc.w"].T + p[prefix + "enc.b"], 0)
        hidden = np.maximum(hidden @ p[prefix + "layer0.w"].T + p[prefix + "layer0.b"], 0)
        return hidden @ p[prefix + "dec.w"].T

    logits, values, _, _ = ref.policy_forward(spec, p, obs, np.zeros((2, 4)), np.zeros((0, 4, 6)))
    if critic == "shared":
        expected = network("") + p["dec.b"]
        np.testing.assert_allclose(logits, expected[..., :3], rtol=1e-12)
        np.testing.assert_allclose(values, expected[..., 3], rtol=1e-12)
    else:
        np.testing.assert_allclose(logits, network("") + p["dec.b"], rtol=1e-12)
        np.testing.assert_allclose(values, (network("critic.") + p["critic.dec.b"])[..., 0], rtol=1e-12)
    linear = ref.policy_forward(dataclasses.replace(spec, encoder="linear"), p, obs, np.zeros((2, 4)),
                                np.zeros((0, 4, 6)))[0]
    assert not np.allclose(linear, logits)  # the ReLU is live on these weights


def test_a_mingru_with_a_relu_encoder_reads_a_relu_layer():
    """policy.kind=mingru, policy.encoder=relu: the MinGRU layers read max(0, obs W + b) (JaxMARL's recurrent
    baselines' Dense-ReLU before their GRU), the same layers a linear encoder feeds, given that input."""
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mingru", hidden=6, layers=2, encoder="relu")
    layout = ref.FlatLayout(ref.param_table(spec))
    p = layout.views(ref.init_params(spec, RNG, np.float64) + 0.3 * RNG.standard_normal(layout.size))
    obs, starts, state = RNG.standard_normal((3, 4, 5)), random_starts(3, 4), RNG.standard_normal((2, 4, 6))
    x = np.maximum(obs @ p["enc.w"].T + p["enc.b"], 0)
    assert (x == 0).any() and (x > 0).any()
    for layer in range(2):
        x, _, _ = ref.mingru_forward(x, 1 - starts, state[layer], p[f"layer{layer}.w"], p[f"layer{layer}.b"], True)
    expected = x @ p["dec.w"].T + p["dec.b"]
    logits, values, _, _ = ref.policy_forward(spec, p, obs, starts, state)
    np.testing.assert_allclose(logits, expected[..., :3], rtol=1e-12)
    np.testing.assert_allclose(values, expected[..., 3], rtol=1e-12)


@pytest.mark.parametrize("kind", ["mlp", "mingru"])
def test_an_unknown_encoder_is_refused(kind):
    with pytest.raises(ValueError, match="policy.encoder='gelu': use 'linear', 'relu' or 'tanh'"):
        ref.PolicySpec(obs_size=3, num_actions=3, kind=kind, encoder="gelu")


def test_an_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="policy.activation='gelu': use 'relu' or 'tanh'"):
        ref.PolicySpec(obs_size=3, num_actions=3, kind="mlp", activation="gelu")


def test_a_separate_critic_needs_an_mlp_policy():
    with pytest.raises(ValueError, match="is for an MLP policy"):
        ref.PolicySpec(obs_size=3, num_actions=3, kind="mingru", critic="separate")


@pytest.mark.parametrize("kind, layers, expected", [("mlp", 1, 0), ("mlp", 3, 0), ("mingru", 1, 1), ("mingru", 3, 3)])
def test_only_a_recurrent_policy_carries_state_and_then_one_row_per_layer(kind, layers, expected):
    """An MLP's state arrays are empty (no layer of them), a minGRU's hold one row per layer: the trainer's live
    state, the rollout's segment states and a checkpoint's arrays are all sized by state_layers."""
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind=kind, hidden=4, layers=layers, highway=False)
    assert spec.state_layers == expected
    state = np.zeros((spec.state_layers, 5, spec.hidden), np.float32)
    assert (state.size == 0) == (kind == "mlp")


@pytest.mark.parametrize("num_updates", [0, 1, 2, 5])
def test_the_annealed_schedule_is_zero_from_update_num_updates_on_however_short_the_run(num_updates):
    """annealed (anneal_lr, anneal_ent): base at update 0, base * (1 - u / n) after, 0 from update n on (the
    CUDA schedule kernel's value after a run's last update); a run of one update or none counts as one."""
    n = max(num_updates, 1)
    assert ref.annealed(2.0, 0, num_updates, True) == 2.0
    for u in range(1, n):
        assert ref.annealed(2.0, u, num_updates, True) == pytest.approx(2.0 * (1 - u / n))
    for u in (n, n + 1, n + 7):
        assert ref.annealed(2.0, u, num_updates, True) == 0.0
        assert ref.ent_coef_at(0.5, u, num_updates, True) == 0.0
        assert ref.annealed(2.0, u, num_updates, False) == 2.0
