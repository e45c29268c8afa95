"""NumpyTrainer's bookkeeping: the rollout buffers, segment states and episode starts must let the update
recompute exactly what the policy computed while acting, and the recurrent state must carry across
rollouts; the flat arrays must be the ones the views write into."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer import run
from fastvec.trainer.config import load_config


def make(kind="mingru", **train):
    overrides = {"env": {"num_envs": 6}, "policy": {"kind": kind, "hidden": 8, "layers": 2},
                 "train": {"horizon": 32, "bptt_horizon": 8, "minibatch_size": 64, "seed": 3, **train}}
    return run.make_trainer(load_config("cartpole", overrides))


@pytest.mark.parametrize("kind", ["mingru", "mlp"])
def test_segments_replay_the_rollout_exactly(kind):
    """Before any update, re-running the policy over every (segment, row) sequence from its stored state
    gives back the log-probs and values recorded while acting: starts, resets and states line up."""
    trainer = make(kind)
    trainer.rollout()
    trainer.rollout()  # the second rollout starts from a carried, non-zero state
    assert trainer.dones.sum() > 0, "the test needs episode ends inside the horizon"
    if kind == "mingru":
        assert np.abs(trainer.segment_state[0]).max() > 0
    seg_state = trainer.segment_states()
    logits, values, _, _ = ref.policy_forward(trainer.spec, trainer.param_views, trainer.to_segments(trainer.obs),
                                              trainer.to_segments(trainer.starts), seg_state)
    actions = trainer.to_segments(trainer.actions)
    logp = np.take_along_axis(ref.log_softmax(logits), actions[..., None], -1)[..., 0]
    np.testing.assert_allclose(trainer.from_segments(logp), trainer.logp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trainer.from_segments(values), trainer.values, rtol=1e-5, atol=1e-5)


def test_starts_follow_dones_and_obs_rows_match_the_env():
    trainer = make()
    trainer.rollout()
    np.testing.assert_array_equal(trainer.starts[1:], trainer.dones[:-1])
    assert trainer.starts[0].all(), "the first observation after reset starts an episode"


def test_update_changes_the_flat_parameters_through_the_views_and_counts_steps():
    trainer = make(update_epochs=2, vtrace=True)
    before = trainer.params.copy()
    trainer.rollout()
    stats = trainer.update(num_updates=10)
    assert trainer.opt_step == 2 * (6 * 32 // 64)
    assert not np.array_equal(before, trainer.params)
    assert np.abs(trainer.opt_state).max() > 0
    for key in ["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "grad_norm"]:
        assert np.isfinite(stats[key]), key
    assert trainer.global_step == 6 * 32


def test_same_seed_gives_identical_training():
    a, b = make(), make()
    for trainer in (a, b):
        for _ in range(2):
            trainer.rollout()
            trainer.update(num_updates=4)
    np.testing.assert_array_equal(a.params, b.params)


def test_state_dict_holds_everything_the_next_updates_depend_on():
    """Checkpoint after 2 updates, run 2 more; a fresh trainer loaded from the checkpoint (and given the
    same env and recurrent state, which checkpoints do not hold) must produce bit-identical parameters."""
    a = make(optimizer="muon", learning_rate=0.01)
    for _ in range(2):
        a.rollout()
        a.update(num_updates=6)
    state = a.state_dict()
    env_slots, live_state, next_starts = a.batch.slots.copy(), a.state.copy(), a.next_starts.copy()
    obs = a.batch.obs.copy()
    for _ in range(2):
        a.rollout()
        a.update(num_updates=6)

    b = make(optimizer="muon", learning_rate=0.01)
    b.load_state_dict(state)
    b.batch.slots[...] = env_slots
    b.batch.obs[...] = obs
    b.state[...] = live_state
    b.next_starts = next_starts
    for _ in range(2):
        b.rollout()
        b.update(num_updates=6)
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.opt_state, b.opt_state)
    assert a.global_step == b.global_step and a.opt_step == b.opt_step
