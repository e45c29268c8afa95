"""reference.PolicySpec's checks at each edge: the smallest size each field accepts and the one below it, the
kinds, critics and encoders it takes, and the combinations it refuses (each with its own message)."""

import pytest

from fastvec.trainer import reference as ref


def spec(**fields):
    return ref.PolicySpec(**{"obs_size": 3, "num_actions": 2, **fields})


def test_hidden_and_layers_of_1_are_the_smallest_accepted():
    assert spec(hidden=1, layers=1).hidden == 1
    for fields in ({"hidden": 0}, {"layers": 0}, {"hidden": -1, "layers": 2}):
        with pytest.raises(ValueError, match=r"policy.hidden=-?\d+ and policy.layers=\d must both be >= 1"):
            spec(**fields)


def test_only_the_known_kinds_action_kinds_and_critics_are_accepted():
    assert spec(kind="mlp").recurrent is False and spec(kind="mingru").recurrent is True
    with pytest.raises(ValueError, match=r"policy.kind='gru' is not supported; use 'mingru' or 'mlp'"):
        spec(kind="gru")
    with pytest.raises(ValueError, match=r"action kind 'continuous' is not one of discrete, multi_discrete, box"):
        spec(action_kind="continuous")
    with pytest.raises(ValueError, match=r"policy.critic='central' is not supported; use 'shared' or 'separate'"):
        spec(kind="mlp", critic="central")


def test_a_box_head_needs_at_least_one_dimension():
    assert spec(num_actions=0, action_kind="box", action_dims=1).action_dims == 1
    for dims in (0, -2):
        with pytest.raises(ValueError, match=rf"a box head needs action_dims >= 1, got {dims}"):
            spec(num_actions=0, action_kind="box", action_dims=dims)


def test_a_separate_critic_and_a_nonlinear_encoder_are_for_an_mlp_alone():
    assert spec(kind="mlp", critic="separate", encoder="tanh").critic == "separate"
    assert spec(kind="mlp", encoder="relu").encoder == "relu"
    assert spec(kind="mingru", encoder="linear").encoder == "linear"
    with pytest.raises(ValueError, match=r"policy.critic='separate' is for an MLP policy"):
        spec(kind="mingru", critic="separate")
    assert spec(kind="mingru", encoder="relu").encoder == "relu"
    with pytest.raises(ValueError, match=r"policy.encoder='gelu': use 'linear', 'relu' or 'tanh'"):
        spec(kind="mlp", encoder="gelu")
    with pytest.raises(ValueError, match=r"policy.activation='linear': use 'relu' or 'tanh'"):
        spec(kind="mlp", activation="linear")


def test_agent_ids_and_world_size_start_at_0_and_a_world_state_needs_a_separate_critic():
    assert spec(agent_ids=0, world_size=0).input_size == 3
    assert spec(agent_ids=1).input_size == 4
    assert spec(kind="mlp", critic="separate", world_size=1, agent_ids=2).critic_input_size == 3
    for fields in ({"agent_ids": -1}, {"world_size": -1, "kind": "mlp", "critic": "separate"},
                   {"world_size": 5}, {"world_size": 5, "kind": "mlp", "critic": "shared"}):
        with pytest.raises(ValueError, match=r"agent_ids=-?\d and world_size=-?\d must be >= 0, and a world-state "
                                             r"critic is a separate one"):
            spec(**fields)
