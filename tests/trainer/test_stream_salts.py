"""The keys of the counter-based streams derived from one seed: sampling_key (splitmix64 of a Weyl step plus
0x5EED), then each stream's key splitmix64 of it xor the stream's name in ASCII ("SHUFFLE" for the epoch orders,
"OPPONENT" and "POOL" for self-play): recomputable from that derivation, and apart from one another."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.selfplay import selfplay_keys


def salt(name: str) -> int:
    return int.from_bytes(name.encode("ascii"), "big")


SEED_KEYS = [0, 1, 0x5EED, 2**63, 2**64 - 1, *(ref.sampling_key(s) for s in (0, 1, 7, 12345))]


@pytest.mark.parametrize("seed_key", SEED_KEYS)
def test_the_epoch_order_key_is_splitmix64_of_the_seed_key_xor_shuffle(seed_key):
    """splitmix64 itself is pinned against its published first output (test_counter_streams)."""
    assert salt("SHUFFLE") == 0x53485546464C45
    assert ref.shuffle_key(seed_key) == ref.splitmix64(seed_key ^ salt("SHUFFLE"))


@pytest.mark.parametrize("seed_key", SEED_KEYS)
def test_the_self_play_keys_are_splitmix64_of_the_seed_key_xor_opponent_and_pool(seed_key):
    assert selfplay_keys(seed_key) == (ref.splitmix64(seed_key ^ salt("OPPONENT")),
                                       ref.splitmix64(seed_key ^ salt("POOL")))


def test_a_seeds_derived_keys_are_all_different():
    """The epoch orders', the opponents' and the pool draws' keys of a seed, and the seed key itself: four
    different keys, so no two of its streams repeat each other's draws."""
    for seed in range(200):
        key = ref.sampling_key(seed)
        keys = {key, ref.shuffle_key(key), *selfplay_keys(key)}
        assert len(keys) == 4, seed


@pytest.mark.parametrize("seed", [0, 1, 7, 2**40 + 3])
def test_a_seeds_sampling_key_and_first_epoch_order_are_the_documented_derivations(seed):
    """sampling_key: splitmix64 of seed times the golden-ratio Weyl step plus 0x5EED, modulo 2^64; and the
    first epoch (update 0, epoch 0) over 16 sequences of the key derived from it by hand."""
    key = ref.splitmix64((seed * 0x9E3779B97F4A7C15 + 0x5EED) % 2**64)
    assert ref.sampling_key(seed) == key
    np.testing.assert_array_equal(ref.sequence_order(16, ref.shuffle_key(ref.sampling_key(seed)), 0, 0),
                                  ref.sequence_order(16, ref.splitmix64(key ^ salt("SHUFFLE")), 0, 0))
