"""Asynchronous rollouts in the NumPy trainer (train.async, computed sequentially): update k >= 1 must train
on a rollout collected with exactly the weights from before update k - 1's end (one update old), each slot
with its own initial recurrent state, and V-trace must correct with pi_current / mu from the first epoch. The CUDA
trainer's slot bookkeeping (cuda/slots.py) is checked against it."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer import run
from fastvec.trainer.config import load_config


def make(**train):
    overrides = {"env": {"num_envs": 6}, "policy": {"kind": "mingru", "hidden": 8, "layers": 2},
                 "train": {"device": "cpu", "horizon": 32, "bptt_horizon": 8, "minibatch_size": 64, "seed": 5,
                           "async": True, "learning_rate": 0.02, **train}}
    return run.make_trainer(load_config("cartpole", overrides))


def replay_logp(trainer, params):
    """log mu(a|s) of the active slot's actions under `params`, from the slot's own segment states."""
    views = trainer.layout.views(params)
    logits, values, _, _ = ref.policy_forward(trainer.spec, views, trainer.to_segments(trainer.obs),
                                              trainer.to_segments(trainer.starts), trainer.segment_states())
    actions = trainer.to_segments(trainer.actions)
    logp = np.take_along_axis(ref.log_softmax(logits), actions[..., None], -1)[..., 0]
    return trainer.from_segments(logp), trainer.from_segments(values)


def test_each_update_trains_on_the_rollout_of_the_weights_one_update_old():
    trainer = make()
    weights = {}  # update index k -> the weights update k starts from (w_k)
    for k in range(5):
        weights[k] = trainer.params.copy()
        trainer.rollout()
        expected_version = max(k - 1, 0)  # update 0 trains on the priming rollout, made with w_0
        assert trainer.behaviour_version == expected_version
        logp, values = replay_logp(trainer, weights[expected_version])
        np.testing.assert_allclose(logp, trainer.logp, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(values, trainer.values, rtol=1e-5, atol=1e-5)
        if k >= 1:  # and not with the weights the update starts from (so the check above can fail)
            current, _ = replay_logp(trainer, weights[k])
            assert np.abs(current - trainer.logp).max() > 1e-3
        trainer.update(num_updates=100)
    # the first call primed two slots; every later call collected exactly one rollout
    assert trainer.global_step == (5 + 1) * trainer.horizon * trainer.batch.num_envs


def test_the_two_slots_keep_their_own_initial_state():
    trainer = make()
    w0 = trainer.params.copy()
    trainer.rollout()  # fills both slots: slot 1 starts where slot 0's rollout left the live state
    first, second = trainer.slots
    assert trainer.active_slot == 0
    assert np.abs(second["segment_state"][0]).max() > 0, "slot 1 starts from a carried, non-zero state"
    assert not np.allclose(first["segment_state"][0], second["segment_state"][0])
    trainer.update(num_updates=100)
    trainer.rollout()  # update 1 trains on slot 1 while slot 0 is refilled
    assert trainer.active_slot == 1
    logp, _ = replay_logp(trainer, w0)
    np.testing.assert_allclose(logp, trainer.logp, rtol=1e-5, atol=1e-5)
    # replaying slot 1 from the other slot's initial states does not reproduce what the actor did
    trainer.segment_state[...] = first["segment_state"]
    wrong, _ = replay_logp(trainer, w0)
    assert np.abs(wrong - trainer.logp).max() > 1e-4


def test_sync_trains_on_fresh_data():
    trainer = make(**{"async": False})
    for k in range(3):
        weights = trainer.params.copy()
        trainer.rollout()
        assert trainer.behaviour_version == k
        logp, _ = replay_logp(trainer, weights)
        np.testing.assert_allclose(logp, trainer.logp, rtol=1e-5, atol=1e-5)
        trainer.update(num_updates=100)
    assert len(trainer.slots) == 1


def test_vtrace_corrects_stale_data_from_the_first_epoch():
    """With async data, the first advantage computation that trains uses rho = pi_current / mu."""
    trainer = make(vtrace=True, update_epochs=1)
    trainer.rollout()
    trainer.update(num_updates=100)
    trainer.rollout()  # stale: collected with w_0, trained by update 1 (weights w_1)
    current_logp, _ = replay_logp(trainer, trainer.params.copy())
    expected_ratios = np.exp(current_logp - trainer.logp)
    seen = []
    original = trainer.advantages

    def recording(ratios=None):
        seen.append(None if ratios is None else ratios.copy())
        return original(ratios)

    trainer.advantages = recording
    trainer.update(num_updates=100)
    used = [r for r in seen if r is not None]
    assert used, "V-trace was not applied to stale data"
    np.testing.assert_allclose(used[0], expected_ratios, rtol=1e-4, atol=1e-5)
    assert np.abs(used[0] - 1).max() > 1e-3  # the data really is off-policy


@pytest.mark.parametrize("is_async", [False, True])
def test_first_rollout_is_identical_in_both_modes(is_async):
    """Update 0 trains on the same data in both modes (weights w_0, same seeds): async only shifts later
    rollouts by one weight version."""
    reference = make(**{"async": False})
    reference.rollout()
    trainer = make(**{"async": is_async})
    trainer.rollout()
    np.testing.assert_array_equal(trainer.obs, reference.obs)
    np.testing.assert_array_equal(trainer.actions, reference.actions)


def test_the_cuda_trainers_slot_machine_collects_and_trains_as_the_numpy_trainers():
    """cuda/slots.py's Slots (the CUDA trainer's train.async bookkeeping) against NumpyTrainer's own: each
    rollout() collects the same slots in the same order (the last one overlapping the next update), and the next
    update trains on the same slot, collected with the same weights."""
    from fastvec.trainer.cuda.slots import Slots, SlotState

    trainer = make()
    collected, real = [], trainer.collect
    trainer.collect = lambda slot: (collected.append(slot), real(slot))[1]
    state = SlotState([-1, -1])
    slots = Slots(state, async_rollouts=True)
    for k in range(4):
        collected.clear()
        trainer.rollout()
        planned = slots.rollouts()
        for slot, _ in planned:
            state.version[slot] = k  # CudaTrainer.collect: the weights of update k
        assert [slot for slot, _ in planned] == collected
        assert [overlaps for _, overlaps in planned] == [False] * (len(planned) - 1) + [True]
        assert state.active == trainer.active_slot
        assert state.version[state.active] == trainer.behaviour_version
        assert slots.stale(k) == (trainer.behaviour_version < k)
        trainer.update(num_updates=100)
    # Without train.async a rollout is always collected by the weights that train on it: never stale, whatever
    # the versions say.
    synchronous = Slots(SlotState([-1, -1]), async_rollouts=False)
    assert not any(synchronous.stale(k) for k in range(4))


def test_the_warm_ups_counters_come_back_whole_and_in_place():
    """slots.Counters: restore() puts back every count of a snapshot into the same objects (the rollout paths and
    the slot machine hold the timing dict and the slot state)."""
    from fastvec.trainer.cuda.slots import Counters, SlotState

    counters = Counters(SlotState([-1, -1]))
    timing, slot_state = counters.timing, counters.slots
    saved = counters.snapshot()
    counters.global_step, counters.update_index, counters.opt_step = 5, 2, 7
    timing["rollout"] += 1.0
    timing["env"] = 3.0
    slot_state.version[0], slot_state.active, slot_state.fill, slot_state.ready = 1, 1, 0, 1
    counters.restore(saved)
    assert (counters.global_step, counters.update_index, counters.opt_step) == (0, 0, 0)
    assert counters.timing is timing and timing == {"rollout": 0.0, "update": 0.0}
    assert counters.slots is slot_state
    assert (slot_state.version, slot_state.active, slot_state.fill, slot_state.ready) == ([-1, -1], 0, 0, None)
