"""PolicySpec's widths for each action head (the distribution output's width, the decoder's head rows) against
policy_forward's output and hand counts, and FlatLayout's Muon set: exactly the 2-D weights, written out by hand."""

import numpy as np
import pytest

from fastvec.trainer import reference as ref

HEADS = {
    # head kwargs, head_size (decoder rows before the value), dist_size (policy_forward's last axis)
    "discrete": ({"num_actions": 5}, 5, 5),
    "multi_discrete": ({"num_actions": 0, "action_kind": "multi_discrete", "action_nvec": (3, 2, 4)}, 9, 9),
    "box": ({"num_actions": 0, "action_kind": "box", "action_dims": 3}, 3, 6),  # D means, then D log-stds
}


@pytest.mark.parametrize("head", HEADS, ids=list(HEADS))
def test_dist_size_is_the_width_policy_forward_returns(head):
    kwargs, head_size, dist_size = HEADS[head]
    spec = ref.PolicySpec(obs_size=4, kind="mlp", hidden=8, layers=1, **kwargs)
    assert spec.head_size == head_size
    assert spec.dist_size == dist_size
    params = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, np.random.default_rng(0)))
    obs = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    dist = ref.policy_forward(spec, params, obs, np.zeros((2, 3)), np.zeros((0, 3, 8), np.float32))[0]
    assert dist.shape == (2, 3, dist_size)


def test_matrix_names_are_every_2d_weight_and_nothing_else():
    """Muon orthogonalises these; biases, log-stds and observation statistics take Adam."""
    spec = ref.PolicySpec(obs_size=4, num_actions=0, kind="mlp", hidden=8, layers=2, action_kind="box",
                          action_dims=2, critic="separate", norm_obs=True)
    layout = ref.FlatLayout(ref.param_table(spec))
    assert layout.matrix_names() == ["enc.w", "layer0.w", "layer1.w", "dec.w", "critic.enc.w", "critic.layer0.w",
                                     "critic.layer1.w", "critic.dec.w"]
    recurrent = ref.FlatLayout(ref.param_table(ref.PolicySpec(obs_size=3, num_actions=2, hidden=4, layers=1)))
    assert recurrent.matrix_names() == ["enc.w", "layer0.w", "dec.w"]
