"""Self-play on the GPU mirrors the host's OpponentPool into arena rows (SelfPlayRollout.sync_pool), checked
against stand-ins for the arena and the driver: which slot each snapshot's weights go to, the member table the
kernels draw from, and what happens (one warning, a pool that still has a member) when every slot is in use."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import pool_row_floats
from fastvec.trainer.cuda.rollouts import SelfPlayRollout
from fastvec.trainer.selfplay import OpponentPool, Policy, draw_opponents, selfplay_keys

POOL_BASE = 0x10000000
SPEC = ref.PolicySpec(obs_size=6, num_actions=3, kind="mlp", hidden=4, layers=1)
LAYOUT = ref.FlatLayout(ref.param_table(SPEC))
SEED_KEY, NUM_ENVS, LATEST_PROB = 12345, 8, 0.25


class _Arena:
    """Named tensors on the host: ptr() addresses (float32 elements, 4 bytes), get/set by name."""

    def __init__(self):
        self.added, self.values = {}, {}

    def add(self, name, shape, dtype, doc):
        self.added[name] = (tuple(shape), np.dtype(dtype))

    def ptr(self, name, offset_elements=0):
        assert name == "pool"
        return POOL_BASE + 4 * int(offset_elements)

    def get(self, cuda, name):
        return self.values[name].copy()

    def set(self, cuda, name, value):
        self.values[name] = np.array(value)


def _rollout(pool_slots):
    plan = SimpleNamespace(env_agents=2, pool_slots=pool_slots, num_envs=NUM_ENVS)
    train = SimpleNamespace(reward_clamp=0.0)
    arena = _Arena()
    rollout = SelfPlayRollout(plan, SPEC, LAYOUT, arena, None, 0, train, SEED_KEY, 1000)
    uploads = []  # (pool row, weights) of every memcpy_htod
    stride = -(-LAYOUT.size // 4) * 4

    def memcpy_htod(address, array):
        row, rest = divmod(address - POOL_BASE, 4 * stride)
        assert rest == 0 and 0 <= row < pool_slots
        uploads.append((row, np.array(array)))

    rollout.cuda = SimpleNamespace(memcpy_htod=memcpy_htod)  # as start() sets them, without a module to read
    rollout.k = SimpleNamespace(stream=SimpleNamespace(synchronize=lambda: None))
    return rollout, arena, uploads


def _policy(pid):
    return Policy(SPEC, np.full(LAYOUT.size, float(pid + 1), np.float32), f"u{pid}")


def _table(arena):
    table = arena.values["pool_table"]
    assert table[1] == np.float32(LATEST_PROB).view(np.int32)  # latest_prob's float bits, as the kernel reads them
    return list(table[2:2 + table[0]])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 8, 68, 69, 70, 71, 72])
def test_a_pool_row_is_the_flat_parameters_rounded_up_to_whole_16_bytes(size):
    """The smallest multiple of 4 floats that holds the parameters: float4 loads, and no row wider than that."""
    assert pool_row_floats(SimpleNamespace(size=size)) == 4 * ((size + 3) // 4)
    assert pool_row_floats(LAYOUT) == LAYOUT.size == 68  # already a multiple of 4: no padding


def test_the_pool_arena_holds_every_slot_in_rows_of_the_rounded_parameters():
    rollout, arena, _ = _rollout(pool_slots=6)
    rollout.add_tensors(arena)
    assert arena.added["pool"] == ((6, 68), np.dtype(np.float32))
    assert arena.added["pool_table"] == ((2 + 6,), np.dtype(np.int32))
    assert arena.added["game_weights"] == ((NUM_ENVS,), np.dtype(np.int32))


def test_new_members_take_free_slots_and_a_slot_frees_once_no_game_plays_its_left_snapshot(capsys):
    pool = OpponentPool(2, LATEST_PROB)
    rollout, arena, uploads = _rollout(pool_slots=6)
    pool.add(_policy(0))
    rollout.sync_pool(pool)  # the first call: every game draws its opponent, from the one member
    assert [row for row, _ in uploads] == [0] and np.all(uploads[0][1] == 1.0)
    assert _table(arena) == [0]
    _, pool_key = selfplay_keys(SEED_KEY)
    np.testing.assert_array_equal(arena.values["game_weights"],
                                  draw_opponents(pool_key, np.arange(NUM_ENVS), NUM_ENVS, -1, [0], LATEST_PROB))
    assert set(arena.values["game_weights"]) == {0}

    pool.add(_policy(1))
    pool.add(_policy(2))  # snapshot 0 leaves the pool; the games still play it
    rollout.sync_pool(pool)
    assert [row for row, _ in uploads[1:]] == [1, 2] and [w[0] for _, w in uploads[1:]] == [2.0, 3.0]
    assert _table(arena) == [1, 2] and 0 in pool.policies
    assert set(arena.values["game_weights"]) == {0}  # only the first call draws; the kernels draw afterwards

    arena.values["game_weights"] = np.full(NUM_ENVS, 1, np.int32)  # every game now plays snapshot 1
    pool.add(_policy(3))  # snapshot 1 leaves the pool too, but is played; snapshot 0 is neither: its slot frees
    rollout.sync_pool(pool)
    assert 0 not in pool.policies and 1 in pool.policies
    assert [row for row, _ in uploads[3:]] == [0] and uploads[3][1][0] == 4.0  # the lowest free slot
    assert _table(arena) == [2, 0]
    assert capsys.readouterr().err == ""


def test_a_snapshot_that_finds_every_slot_played_is_skipped_with_one_warning_and_the_pool_keeps_a_member(capsys):
    """pool_size 1 (4 slots): games still play 4 snapshots when a fifth comes. It leaves the pool again (no
    upload) with a warning, printed once a run; the kernels still draw from a member (an empty member table
    would send them to slot pool_table[1]); and the pool takes the next snapshot without an error."""
    pool = OpponentPool(1, LATEST_PROB)
    rollout, arena, uploads = _rollout(pool_slots=4)
    for pid in range(4):
        pool.add(_policy(pid))
        rollout.sync_pool(pool)
        arena.values["game_weights"] = np.arange(NUM_ENVS, dtype=np.int32) % (pid + 1)  # every snapshot played
        assert _table(arena) == [pid]
    assert [row for row, _ in uploads] == [0, 1, 2, 3]
    assert capsys.readouterr().err == ""

    pool.add(_policy(4))
    rollout.sync_pool(pool)
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "all 4 pool slots hold snapshots that games still play" in err
    assert len(uploads) == 4 and 4 not in pool.policies
    assert pool.members == [3] and _table(arena) == [3]  # the newest snapshot that has a slot

    pool.add(_policy(5))  # still full: skipped again, without a second warning
    rollout.sync_pool(pool)
    assert capsys.readouterr().err == ""
    assert len(uploads) == 4 and pool.members == [3] and _table(arena) == [3]

    arena.values["game_weights"] = np.full(NUM_ENVS, 3, np.int32)  # the games that played 0, 1 and 2 ended
    pool.add(_policy(6))
    rollout.sync_pool(pool)
    assert [row for row, _ in uploads[4:]] == [0] and uploads[4][1][0] == 7.0
    assert pool.members == [6] and _table(arena) == [0] and sorted(pool.policies) == [3, 6]
    assert capsys.readouterr().err == ""
