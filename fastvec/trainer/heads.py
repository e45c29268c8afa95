"""The reference algorithm's action heads (reference.py imports them; the CUDA trainer implements the same
math): a categorical (Discrete), one categorical per dimension (MultiDiscrete) and a diagonal Gaussian with a
state-independent log-std (Box): sampling from counter uniforms, log-probabilities, entropies, gradients."""

from __future__ import annotations

import itertools
import math

import numpy as np

ACTION_KINDS = ("discrete", "multi_discrete", "box")
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)

# ----------------------------------------------------------------------------------------------
# SAMPLING


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def sample_actions(logits, uniforms):
    """Inverse-CDF sampling of one action per row. logits: (B, A); uniforms: (B,) in [0, 1).
    Returns actions (B,) int64 and their log-probabilities (B,)."""
    logp = log_softmax(logits)
    cdf = np.cumsum(np.exp(logp), axis=-1)
    actions = np.minimum((cdf < uniforms[:, None] * cdf[:, -1:]).sum(-1), logits.shape[-1] - 1)
    return actions.astype(np.int64), np.take_along_axis(logp, actions[:, None], -1)[:, 0]


def gaussian_from_uniforms(u):
    """Standard normals from pairs of uniforms u (..., 2) in [0, 1) by Box-Muller:
    sqrt(-2 log1p(-u0)) * cos(2 pi u1), computed in float64 and rounded to float32 (a kernel computing it in
    double agrees exactly; in float, to a few ulps)."""
    u = u.astype(np.float64)
    return (np.sqrt(-2.0 * np.log1p(-u[..., 0])) * np.cos(2.0 * np.pi * u[..., 1])).astype(np.float32)


def uniforms_per_row(spec) -> tuple[int, ...]:
    """The uniforms one row's action takes: () one (discrete), (D,) one per dimension (multi_discrete), or
    (D, 2) a Box-Muller pair per dimension (box)."""
    return {"discrete": (), "multi_discrete": (len(spec.action_nvec),),
            "box": (spec.action_dims, 2)}[spec.action_kind]


def _nvec_slices(spec):
    edges = np.cumsum((0,) + spec.action_nvec)
    return [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]


def sample_head(spec, dist, uniforms):
    """Sample one action per row from the head's distribution dist (R, Y) with uniforms
    (R, *uniforms_per_row(spec)): discrete: sample_actions; multi_discrete: sample_actions per dimension with
    its uniform; box: mean + exp(log_std) * gaussian_from_uniforms, unclipped (the env clips). Returns actions
    (R, *spec.action_shape) and their log-probabilities (R,)."""
    if spec.action_kind == "discrete":
        return sample_actions(dist, uniforms)
    if spec.action_kind == "multi_discrete":
        actions = np.stack([sample_actions(dist[:, part], uniforms[:, d])[0]
                            for d, part in enumerate(_nvec_slices(spec))], axis=-1)
    else:
        d = spec.action_dims
        actions = dist[:, :d] + np.exp(dist[:, d:]) * gaussian_from_uniforms(uniforms).astype(dist.dtype)
    return actions, head_log_prob(spec, dist, actions)[0]


def head_mode(spec, dist):
    """The deterministic action: argmax (per dimension for multi_discrete), or the Gaussian's mean."""
    if spec.action_kind == "discrete":
        return dist.argmax(-1)
    if spec.action_kind == "multi_discrete":
        return np.stack([dist[..., part].argmax(-1) for part in _nvec_slices(spec)], axis=-1)
    return dist[..., :spec.action_dims].copy()


# ----------------------------------------------------------------------------------------------
# ACTION HEADS: log-probability, entropy and their gradient for each kind


def _categorical(logits, actions):
    logp_all = log_softmax(logits)
    probs = np.exp(logp_all)
    logp = np.take_along_axis(logp_all, actions[..., None], -1)[..., 0]
    entropy = -(probs * logp_all).sum(-1)
    return logp, entropy, (logp_all, probs, actions, entropy)


def _categorical_grad(cache, dlogp, went):
    """d(loss)/d(logits) for dlogp = d(loss)/d(logp) and went = ent_coef / N: dlogp (onehot - p) for the
    log-probability, and went * p (log p + H) for the loss's -ent_coef * mean(H) (dH/dlogit_j = -p_j (log p_j + H))."""
    logp_all, probs, actions, entropy = cache
    onehot = np.zeros_like(logp_all)
    np.put_along_axis(onehot, actions[..., None], 1.0, -1)
    dlogits = dlogp[..., None] * (onehot - probs)
    dlogits += went * probs * (logp_all + entropy[..., None])
    return dlogits


def head_log_prob(spec, dist, actions):
    """Log-probabilities and entropies (...) of actions under dist (..., Y), and a cache for head_grad.
    discrete (also spec None): a categorical over the logits. multi_discrete: one categorical per dimension,
    log-probabilities and entropies summed in dimension order. box: with m, s = the means and log-stds and
    z = (a - m) / exp(s): logp = sum_d(-z^2 / 2 - s - log(2 pi) / 2), entropy = sum_d(1/2 + log(2 pi) / 2 + s)."""
    if spec is None or spec.action_kind == "discrete":
        return _categorical(dist, actions)
    if spec.action_kind == "multi_discrete":
        parts = [_categorical(dist[..., part], actions[..., d]) for d, part in enumerate(_nvec_slices(spec))]
        logp, entropy = parts[0][0], parts[0][1]
        for part in parts[1:]:
            logp, entropy = logp + part[0], entropy + part[1]
        return logp, entropy, [part[2] for part in parts]
    d = spec.action_dims
    mean, logstd = dist[..., :d], dist[..., d:]
    z = (actions - mean) / np.exp(logstd)
    logp = (-0.5 * z * z - logstd - HALF_LOG_2PI).sum(-1)
    entropy = (0.5 + HALF_LOG_2PI + logstd).sum(-1)
    return logp.astype(dist.dtype), entropy.astype(dist.dtype), (z, np.exp(logstd))


def head_grad(spec, cache, dlogp, went):
    """d(loss)/d(dist) (..., Y) given dlogp = d(loss)/d(logp) (...) and went = ent_coef / N (the loss has
    -ent_coef * mean(entropy)). box: d/dmean = dlogp z / std, d/dlogstd = dlogp (z^2 - 1) - went."""
    if spec is None or spec.action_kind == "discrete":
        return _categorical_grad(cache, dlogp, went)
    if spec.action_kind == "multi_discrete":
        return np.concatenate([_categorical_grad(part, dlogp, went) for part in cache], axis=-1)
    z, std = cache
    return np.concatenate([dlogp[..., None] * z / std, dlogp[..., None] * (z * z - 1) - went], axis=-1)


def action_log_prob(spec, dist, actions):
    """log pi(a|s) (...) of actions under dist (..., Y)."""
    return head_log_prob(spec, dist, actions)[0]
