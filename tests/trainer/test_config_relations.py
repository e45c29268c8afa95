"""The relations between train.horizon, train.bptt_horizon and train.minibatch_size: each refused combination
gives exactly its own error (the whole message, so a different error cannot pass for it), the fix each
message suggests is accepted, and the boundary combinations (equal sizes, a minibatch of a whole rollout) run."""

import pytest

from fastvec.trainer.config import ConfigError, load_config, rollout_sizes


def refusal(train: dict, env="cartpole") -> str:
    with pytest.raises(ConfigError) as err:
        load_config(env, {"train": train})
    return str(err.value)


@pytest.mark.parametrize("horizon,bptt", [(64, 48), (64, 128), (10, 4), (7, 2)])
def test_bptt_must_divide_the_horizon(horizon, bptt):
    message = refusal({"horizon": horizon, "bptt_horizon": bptt, "minibatch_size": bptt * 4})
    assert message == (f"train.bptt_horizon={bptt} must divide train.horizon={horizon}; e.g. "
                       f"--train.bptt_horizon={horizon}")
    load_config("cartpole", {"train": {"horizon": horizon, "bptt_horizon": horizon, "minibatch_size": horizon}})


@pytest.mark.parametrize("minibatch,bptt,suggested", [(1000, 16, 992), (17, 16, 16), (8, 16, 16), (95, 32, 64)])
def test_minibatch_must_be_whole_sequences(minibatch, bptt, suggested):
    message = refusal({"horizon": 64, "bptt_horizon": bptt, "minibatch_size": minibatch})
    assert message == (f"train.minibatch_size={minibatch} must be a multiple of train.bptt_horizon={bptt}; e.g. "
                       f"--train.minibatch_size={suggested}")
    load_config("cartpole", {"train": {"horizon": 64, "bptt_horizon": bptt, "minibatch_size": suggested}})


def test_the_horizon_rule_is_reported_before_the_minibatch_rule():
    message = refusal({"horizon": 64, "bptt_horizon": 48, "minibatch_size": 100})
    assert message.startswith("train.bptt_horizon=48 must divide train.horizon=64")


@pytest.mark.parametrize("horizon,bptt,minibatch", [(64, 64, 64), (64, 1, 1), (64, 16, 16), (48, 16, 4096)])
def test_combinations_at_the_boundaries_are_accepted(horizon, bptt, minibatch):
    config = load_config("cartpole", {"train": {"horizon": horizon, "bptt_horizon": bptt, "minibatch_size": minibatch}})
    assert (config["train"]["horizon"], config["train"]["bptt_horizon"]) == (horizon, bptt)


@pytest.mark.parametrize("num_envs,agents", [(4, 1), (3, 2)])
def test_a_minibatch_of_one_whole_rollout_runs_and_one_more_sequence_is_refused(num_envs, agents):
    train = load_config("cartpole", {"train": {"horizon": 16, "bptt_horizon": 4, "minibatch_size": 4}})["train"]
    samples = num_envs * agents * 16
    train["minibatch_size"] = samples
    assert rollout_sizes(train, num_envs, agents) == (num_envs * agents, 16, 4, 4, samples)
    train["minibatch_size"] = samples + 4
    with pytest.raises(ConfigError) as err:
        rollout_sizes(train, num_envs, agents)
    assert str(err.value) == (f"train.minibatch_size={samples + 4} is larger than a rollout ({num_envs * agents} "
                              f"rows x horizon 16 = {samples} samples); lower it or raise env.num_envs / train.horizon")
