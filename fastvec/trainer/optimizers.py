"""The NumPy reference's optimizer: global-norm gradient clipping, Adam, Muon (Newton-Schulz orthogonalised
momentum) and the linear schedules of the learning rate and the entropy bonus. Part of reference.py, which imports
it; cuda/optimizers.py and cuda/optimizers.cu are its kernels."""

from __future__ import annotations

import math

import numpy as np


def clip_grad_norm(grads: np.ndarray, max_norm: float) -> float:
    """Scale the flat gradient in place so its L2 norm is at most max_norm; return the norm before."""
    norm = float(np.sqrt(np.dot(grads, grads)))
    if norm > max_norm:
        grads *= max_norm / (norm + 1e-6)
    return norm


def adam_step(params, grads, m, v, step, lr, beta1, beta2, eps):
    """One Adam step in place over (flat or per-tensor) arrays; step counts from 1.
    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p -= lr * m_hat / (sqrt(v_hat) + eps)."""
    m *= beta1
    m += (1 - beta1) * grads
    v *= beta2
    v += (1 - beta2) * grads * grads
    m_hat = m / (1 - beta1 ** step)
    v_hat = v / (1 - beta2 ** step)
    params -= lr * m_hat / (np.sqrt(v_hat) + eps)


NS_COEFFS = (3.4445, -4.7750, 2.0315)  # Keller Jordan's quintic: pushes singular values into ~[0.7, 1.2]


def newton_schulz(g, steps=5):
    """Approximate orthogonalisation U V^T of g = U S V^T (2-D) by a quintic Newton-Schulz iteration."""
    a, b, c = NS_COEFFS
    x = g / (np.linalg.norm(g) + 1e-7)
    transposed = x.shape[0] > x.shape[1]
    if transposed:
        x = x.T  # iterate on the wide side: x @ x.T is the smaller Gram matrix
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if transposed else x


def muon_update_scale(shape) -> float:
    """Muon's update is scaled so its RMS matches a typical Adam step (0.2 * sqrt(max(rows, cols)), as
    in Moonlight): one learning rate then serves both the orthogonalised matrices and the Adam rest."""
    return 0.2 * math.sqrt(max(shape))


def muon_step(params: dict, grads: dict, m: dict, v: dict, matrix_names, step, lr, momentum, beta1,
              beta2, eps, ns_steps=5):
    """One Muon step in place over named views: for 2-D weights, Nesterov momentum
    buf = mu buf + g, u = g + mu buf, p -= lr * scale * NS(u); every other tensor takes Adam."""
    for name in params:
        if name in matrix_names:
            m[name] *= momentum
            m[name] += grads[name]
            update = newton_schulz(grads[name] + momentum * m[name], ns_steps)
            params[name] -= (lr * muon_update_scale(update.shape)) * update
        else:
            adam_step(params[name], grads[name], m[name], v[name], step, lr, beta1, beta2, eps)


def annealed(base, update, num_updates, anneal):
    """Linear decay from base at update 0 to 0 at the last (anneal_lr, anneal_ent); base if not anneal."""
    return base * max(1.0 - update / max(num_updates, 1), 0.0) if anneal else base


def ent_coef_at(base, update, num_updates, anneal):
    """An update's entropy bonus: annealed, rounded to float32 (the CUDA graphs read it from a float32 scalar)."""
    return float(np.float32(annealed(base, update, num_updates, anneal)))
