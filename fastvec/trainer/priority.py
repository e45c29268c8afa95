"""Prioritised choice of training sequences (train.prio_alpha), part of the reference (reference.py re-exports it):
an epoch draws its sequences in proportion to the size of their advantages and weights their policy-loss terms
to undo the bias. cuda/prio.cu's prio_kernel computes the same draws and weights bit for bit."""

from __future__ import annotations

import numpy as np

from fastvec.trainer.streams import MASK64, _mix64, splitmix64

# Legend as numpy_trainer.py's: K = bptt_horizon, Q = the rollout's sequences (segments x rows).

PRIO_CHUNKS, PRIO_GROUP = 1024, 32  # prio.cu's PRIO_THREADS: a chunk of the running sums a thread, 32 groups of 32
PRIO_SALT = 0x5052494F52495459  # keys the draws apart from the epoch's shuffle (sequence_order) of the same key
LN2, SQRT_HALF = 0.6931471805599453, 0.7071067811865476
LOG_TERMS, EXP_TERMS = 10, 14  # series lengths: both well below a float64 ulp's error over their ranges

# The powers below are written with + - * / and exact scalings alone, in a fixed order: libm's pow rounds
# differently on the CPU and the GPU (and NumPy may call a SIMD one), IEEE's basic operations round alike
# everywhere (the GPU build's --fmad=false keeps them unfused), so the draws agree bit for bit.


def portable_log(x):
    """log(x) of float64 x > 0 within a few ulps: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
    log(m) = 2 atanh(s) = 2 (s + s^3/3 + ... + s^21/21), s = (m - 1) / (m + 1), |s| <= 0.172."""
    m, e = np.frexp(np.asarray(x, np.float64))
    low = m < SQRT_HALF
    m = np.where(low, m * 2.0, m)
    e = (e - low).astype(np.float64)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    series = np.full_like(s, 1.0 / (2 * LOG_TERMS + 1))
    for k in range(LOG_TERMS - 1, -1, -1):
        series = series * s2 + 1.0 / (2 * k + 1)
    return e * LN2 + 2.0 * s * series


def portable_exp(z):
    """exp(z) of float64 z within a few ulps: z = n ln2 + g with |g| <= ln2 / 2, then 2^n times exp(g)'s Taylor
    series to g^14 (Horner, from the top); z is clamped to [-745, 710], where exp is 0 or inf beyond."""
    z = np.asarray(z, np.float64)
    z = np.where(z < -745.0, -745.0, np.where(z > 710.0, 710.0, z))
    n = np.floor(z / LN2 + 0.5)
    g = z - n * LN2
    r = np.ones_like(g)
    for k in range(EXP_TERMS, 0, -1):
        r = 1.0 + g * r / k
    return np.ldexp(r, n.astype(np.int64))


def portable_pow(x, y):
    """x^y for float64 x > 0: exp(y log x) with the two functions above."""
    return portable_exp(y * portable_log(x))


def sequence_priorities(seg_adv, alpha: float) -> np.ndarray:
    """(Q,) float64 priorities q_i = (sum_t |A_it|)^alpha of seg_adv (K, Q) float32, the sum in float32 in time
    order; q_i = 0 where the sum is not > 0 (such a sequence is never drawn)."""
    total = np.zeros(seg_adv.shape[1], np.float32)
    for t in range(seg_adv.shape[0]):
        total += np.abs(seg_adv[t])
    s = total.astype(np.float64)
    positive = s > 0
    return np.where(positive, portable_pow(np.where(positive, s, 1.0), alpha), 0.0)


def priority_sums(q) -> np.ndarray:
    """(Q,) float64 running sums of q, in prio_kernel's order (no thread adds more than a few dozen in a row):
    PRIO_CHUNKS chunks of ceil(Q / PRIO_CHUNKS), each summed from its start, then offset by the chunks before it:
    their sum within its group of PRIO_GROUP chunks, plus the sum of the groups before (each added in order)."""
    count = len(q)
    width = -(-count // PRIO_CHUNKS)
    padded = np.zeros(PRIO_CHUNKS * width, np.float64)
    padded[:count] = q
    local = np.cumsum(padded.reshape(PRIO_CHUNKS, width), axis=1)
    within = np.cumsum(local[:, -1].reshape(-1, PRIO_GROUP), axis=1)
    before = np.concatenate([np.zeros((len(within), 1)), within[:, :-1]], axis=1)  # exclusive, in its group
    groups = np.concatenate([[0.0], np.cumsum(within[:, -1])[:-1]])
    offsets = (groups[:, None] + before).reshape(-1)
    return (offsets[:, None] + local).reshape(-1)[:count]


def prio_beta(beta0: float, update: int, num_updates: int) -> float:
    """The importance weights' exponent at `update`: prio_beta0 at the first update, linearly to 1 at num_updates
    (the fraction the learning rate's annealing uses)."""
    return beta0 + (1.0 - beta0) * min(update / max(num_updates, 1), 1.0)


def prio_uniforms(shuffle_key: int, update: int, epoch: int, count: int) -> np.ndarray:
    """(count,) float64 uniforms in [0, 1) (53 bits) of an epoch's draws: a counter-based stream keyed by
    (shuffle_key, update, epoch), as prio_kernel draws them."""
    key = splitmix64(shuffle_key ^ PRIO_SALT ^ ((update * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9) & MASK64))
    with np.errstate(over="ignore"):
        r = _mix64(np.uint64(key) + np.arange(count, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return (r >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def prioritized_draws(seg_adv, alpha: float, beta: float, shuffle_key: int, update: int,
                      epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """An epoch's sequences and their importance weights under prioritised choice (train.prio_alpha > 0).

    Sequence i of seg_adv's Q (K, Q) has priority q_i = (sum_t |A_it|)^alpha and probability p_i = q_i / sum_j q_j.
    The epoch draws Q sequences with replacement (each draw independent, as prioritised experience replay does):
    draw j takes the first i whose running sum of q (priority_sums) exceeds u_j * sum_j q_j (u_j: prio_uniforms),
    so a sequence whose advantages are all 0 is never drawn. Draw j's weight is w_j = (Q p_i)^-beta divided by the
    largest w of the epoch's draws, so weights only shrink updates (Schaul et al.'s normalisation, over the draws:
    a never-drawn sequence of tiny priority cannot scale the others down). If every priority is 0, the draws are
    uniform (floor(u_j Q)) with weights 1. Minibatches are consecutive runs of the draws, as of a shuffle.
    Returns (order (Q,) int64, weights (Q,) float32)."""
    count = seg_adv.shape[1]
    q = sequence_priorities(seg_adv, alpha)
    cdf = priority_sums(q)
    total = cdf[-1]
    u = prio_uniforms(shuffle_key, update, epoch, count)
    if not total > 0:
        return np.minimum(np.floor(u * count), count - 1).astype(np.int64), np.ones(count, np.float32)
    order = np.minimum(np.searchsorted(cdf, u * total, side="right"), count - 1).astype(np.int64)
    raw = portable_pow(count * (q[order] / total), -beta)
    return order, (raw / raw.max()).astype(np.float32)
