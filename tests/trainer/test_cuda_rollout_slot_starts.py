"""The CUDA trainer's rollout slots: _slot's addresses (the slot the next update trains on by default, else the
one named), and _start's episode-start flags, which go to step T of the last slot, where the first rollout copies
its step 0 from (without a GPU, through stand-ins); on a GPU, the first rollout begins every env's episode."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from test_cuda import _cuda_or_skip, make_pair, rollout_buffers, small_config

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.trainer import SCALARS_DTYPE, CudaTrainer

T, N, R, MB = 4, 3, 6, 8  # horizon, envs, rows (2 agents an env), minibatch rows


def _arena(slots: int) -> Arena:
    arena = Arena()
    for name in ("starts", "actions"):
        arena.add(name, (T + 1, R), np.float32)
        if slots == 2:
            arena.add(f"{name}@1", (T + 1, R), np.float32)
    arena.add("params", (5,), np.float32)
    arena.add("scalars", (SCALARS_DTYPE.itemsize,), np.uint8)
    arena.add("ones", (MB,), np.float32)
    arena.add("seeds", (N,), np.uint64)
    arena.base = 0x7000000  # addresses only: nothing is allocated
    return arena


def _trainer(slots: int, active: int) -> CudaTrainer:
    """A CudaTrainer's fields as _start and _slot read them, with stand-ins for the GPU's objects."""
    trainer = CudaTrainer.__new__(CudaTrainer)
    log = []
    trainer.log = log
    trainer.arena = _arena(slots)
    trainer.counters = SimpleNamespace(slots=SimpleNamespace(active=active))
    trainer.cuda = SimpleNamespace(memcpy_htod=lambda address, value: log.append(("set", address)))
    trainer.plan = SimpleNamespace(mb_rows=MB, num_envs=N, rows=R, slot_count=slots, horizon=T)
    trainer.config = SimpleNamespace(train=SimpleNamespace(seed=3, learning_rate=0.01, ent_coef=0.0))
    trainer.layout, trainer.rank, trainer.host_env = SimpleNamespace(size=5), 0, False
    trainer.reduction = SimpleNamespace(broadcast_params=lambda *args: None)
    trainer.stream = SimpleNamespace(synchronize=lambda: log.append(("synchronize",)))
    trainer.k = SimpleNamespace(launch=lambda name, threads, *args: log.append((name, threads, *map(int, args))))
    trainer.actor = SimpleNamespace(k=None, blas=None, params=None)
    trainer.rollout_path = SimpleNamespace(start=lambda *args: None, reset_envs=lambda k: log.append(("reset",)))
    return trainer


@pytest.mark.parametrize("active", [0, 1])
def test_slot_addresses_default_to_the_slot_the_next_update_trains_on(active):
    trainer = _trainer(2, active)
    arena, suffix = trainer.arena, ("", "@1")
    assert trainer._slot("starts") == arena.ptr("starts" + suffix[active])
    assert trainer._slot("actions", offset_elements=7) == arena.ptr("actions" + suffix[active], 7)
    for slot in (0, 1):  # a slot named explicitly, whichever is active
        assert trainer._slot("starts", slot) == arena.ptr("starts" + suffix[slot])
        assert trainer._slot("actions", slot, 2 * R) == arena.ptr("actions" + suffix[slot], 2 * R)


@pytest.mark.parametrize("slots", [1, 2])
def test_start_flags_every_rows_episode_start_at_step_t_of_the_last_slot(monkeypatch, slots):
    """The first rollout (into slot 0) copies step T of the previous slot (the last) to its step 0: the 1s must
    be there, for every row, with train.async (two slots) as without."""
    monkeypatch.setattr(ref, "init_params", lambda spec, rng, dtype: np.zeros(5, dtype))
    trainer = _trainer(slots, active=0)
    trainer.spec, trainer.rng = None, None
    trainer._start()
    last = "starts" if slots == 1 else "starts@1"
    fills = [entry for entry in trainer.log if entry[0] == "fill_kernel"]
    assert fills[-1] == ("fill_kernel", R, trainer.arena.ptr(last, T * R), R, 1)
    assert ("fill_kernel", MB, trainer.arena.ptr("ones"), MB, 1) in fills  # the bias GEMMs' ones row
    assert trainer.log.index(("reset",)) < trainer.log.index(fills[-1]) < trainer.log.index(("synchronize",))


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("active", [0, 1])
def test_last_values_are_the_bootstrap_of_the_slot_the_next_update_trains_on(fused, active):
    """The fused rollouts keep V(obs after step T - 1) in last_value, the GEMM path in r_y's value column (after
    the A head columns); slot 1's in the "@1" copies."""
    trainer = _trainer(2, active)
    arena = Arena()
    for name in ("last_value", "last_value@1"):
        arena.add(name, (R,), np.float32)
    for name in ("r_y", "r_y@1"):
        arena.add(name, (R, 3), np.float32)  # 2 logits, then the value
    arena.base = 0x9000000
    names = {arena.ptr(name): name for name in arena.entries}

    def memcpy_dtoh(out, address):  # each buffer's floats say which buffer and column they are
        tag = 100.0 * (1 + list(arena.entries).index(names[address]))
        out[...] = tag + (np.arange(out.shape[-1]) if out.ndim == 2 else 0)

    trainer.arena, trainer.spec = arena, SimpleNamespace(head_size=2)
    trainer.cuda = SimpleNamespace(memcpy_dtoh=memcpy_dtoh)
    trainer.plan.fused_block = 64 if fused else 0
    trainer.actor = SimpleNamespace(stream=trainer.stream)
    expected = {(True, 0): 100.0, (True, 1): 200.0, (False, 0): 302.0, (False, 1): 402.0}[fused, active]
    assert np.array_equal(trainer.last_values(), np.full(R, expected, np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("is_async", [False, True])
def test_the_first_rollout_begins_every_envs_episode_as_numpy_trainers(is_async):
    """Step 0 of the first rollout (slot 0, train.async's first slot too) has starts 1 on every row, as
    NumpyTrainer's first rollout, and no later step starts an episode the env did not end."""
    _cuda_or_skip()
    gpu_tr, cpu_tr, _ = make_pair(small_config(**{"async": is_async}))
    gpu_tr.rollout()
    cpu_tr.rollout()
    assert gpu_tr.active_slot == cpu_tr.active_slot == 0
    buf = rollout_buffers(gpu_tr)
    assert np.array_equal(buf["starts"][0], np.ones(gpu_tr.rows, np.float32))
    assert np.array_equal(buf["starts"][0], cpu_tr.starts[0])
    assert np.array_equal(buf["starts"][1:gpu_tr.horizon], buf["dones"][:gpu_tr.horizon - 1])
    gpu_tr.close()
