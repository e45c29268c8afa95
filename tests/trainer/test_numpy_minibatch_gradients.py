"""NumpyTrainer's minibatch steps: the gradient each step clips and hands to the optimizer is that minibatch's
own (reference.policy_backward into a zeroed buffer), nothing carried over from the step before it."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer import run
from fastvec.trainer.config import load_config


@pytest.mark.parametrize("kind,optimizer", [("mingru", "adam"), ("mlp", "adam"), ("mlp", "muon")])
def test_each_minibatch_steps_on_its_own_gradient_alone(kind, optimizer, monkeypatch):
    overrides = {"env": {"num_envs": 6}, "policy": {"kind": kind, "hidden": 8, "layers": 2},
                 "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 32, "seed": 3, "update_epochs": 2,
                           "optimizer": optimizer}}
    trainer = run.make_trainer(load_config("cartpole", overrides))
    backward, clip = ref.policy_backward, ref.clip_grad_norm
    own, clipped = [], []

    def policy_backward(spec, params, grads, dlogits, dvalues, cache):
        fresh = np.zeros_like(trainer.grads)
        backward(spec, params, trainer.layout.views(fresh), dlogits, dvalues, cache)
        own.append(fresh)
        return backward(spec, params, grads, dlogits, dvalues, cache)

    def clip_grad_norm(grads, max_norm):
        clipped.append(grads.copy())
        return clip(grads, max_norm)
    monkeypatch.setattr(ref, "policy_backward", policy_backward)
    monkeypatch.setattr(ref, "clip_grad_norm", clip_grad_norm)
    trainer.rollout()
    trainer.update(num_updates=10)
    trainer.rollout()
    trainer.update(num_updates=10)
    assert len(own) == len(clipped) == 2 * 2 * (6 * 16 // 32) == trainer.opt_step
    for mine, seen in zip(own, clipped):
        assert np.abs(mine).max() > 0
        np.testing.assert_array_equal(seen, mine)
