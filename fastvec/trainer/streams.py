"""The reference's counter-based random streams (reference.py re-exports them): the CUDA trainer's sampling
uniforms and epoch orders computed on the host. The kernels draw them from counters instead of a generator state,
so any row or epoch can be recomputed."""

from __future__ import annotations

import math

import numpy as np

from fastvec.trainer.heads import uniforms_per_row

MASK64 = (1 << 64) - 1


def _mix64(z):
    """fastvec.h's fv_mix64 (splitmix64's finaliser) on uint64 arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def splitmix64(z: int) -> int:
    """fastvec.h's fv_mix64 on Python ints (keys for the counter-based streams)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def sampling_key(seed: int) -> int:
    """The counter-based samplers' key of train.seed = seed (CUDA actions, self-play's opponents and pools):
    splitmix64 of seed * 0x9E3779B97F4A7C15 (the golden ratio's 64-bit Weyl step) + 0x5EED, modulo 2^64."""
    return splitmix64((seed * 0x9E3779B97F4A7C15 + 0x5EED) & MASK64)


def shuffle_key(seed_key: int) -> int:
    """The epoch orders' key of a learner sampling with seed_key: shuffle_kernel's, and prioritised draws'.
    splitmix64 of seed_key xor the ASCII bytes of "SHUFFLE" (0x53485546464C45), as self-play's keys xor "OPPONENT"
    and "POOL": each stream of a seed its own salt, so a seed's epoch orders are recomputable from the seed alone."""
    return splitmix64(seed_key ^ 0x53485546464C45)


def policy_uniforms(seed_key: int, rows: int, step: int) -> np.ndarray:
    """The CUDA trainer's policy_uniform for rows 0..rows-1 at one policy step (float32 in [0, 1))."""
    with np.errstate(over="ignore"):
        keys = _mix64(np.uint64(seed_key) + np.arange(rows, dtype=np.uint64))
        r = _mix64(keys + np.uint64(((step + 1) * 0x9E3779B97F4A7C15) & MASK64))
    return (r >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def head_uniforms(spec, seed_key: int, rows: int, step: int) -> np.ndarray:
    """One policy step's counter-based uniforms, (rows, *uniforms_per_row(spec)): row r's j-th (row-major) is
    policy_uniform's of index r * k + j, k a row; a discrete head's are policy_uniforms(seed_key, rows, step)."""
    shape = (rows, *uniforms_per_row(spec))
    return policy_uniforms(seed_key, math.prod(shape), step).reshape(shape)


def sequence_order(count: int, shuffle_key: int, update: int, epoch: int) -> np.ndarray:
    """shuffle_kernel's order of an epoch's `count` sequences: a 4-round Feistel permutation, cycle-walked."""
    half = max(1, math.ceil(math.ceil(math.log2(max(count, 2))) / 2))
    key = splitmix64(shuffle_key ^ ((update * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9) & MASK64))
    mask = np.uint64((1 << half) - 1)

    def feistel(x):
        left, right = x >> np.uint64(half), x & mask
        for rnd in range(4):
            f = _mix64(np.uint64(key) + np.uint64((rnd * 0xD1B54A32D192ED03) & MASK64) + right) & np.uint64(0xFFFFFFFF) & mask
            left, right = right, left ^ f
        return (left << np.uint64(half)) | right

    with np.errstate(over="ignore"):
        x = feistel(np.arange(count, dtype=np.uint64))
        while (bad := x >= count).any():
            x[bad] = feistel(x[bad])
    return x.astype(np.int64)
