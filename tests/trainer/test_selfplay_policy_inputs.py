"""Self-play (one seat per game) refuses a policy that reads an agent id or a world state; without self-play a
team env takes both."""

import pytest

from fastvec.trainer.config import ConfigError, load_config

REFUSAL = ("selfplay.enabled=true trains one seat per game, which neither an agent id nor a world state fits: "
           "add --policy.agent_id=false --policy.critic_input=local")
WORLD = {"policy": {"critic_input": "world_state", "critic": "separate", "kind": "mlp"}, "train": {"norm_obs": False}}


@pytest.mark.parametrize("policy", [{"policy": {"agent_id": True}}, WORLD], ids=["agent_id", "world_state"])
def test_selfplay_refuses_an_agent_id_or_a_world_state(policy):
    with pytest.raises(ConfigError) as err:
        load_config("pong", {"selfplay": {"enabled": True}, **policy})
    assert str(err.value) == REFUSAL
    assert load_config("pong", {"selfplay": {"enabled": True}})["selfplay"]["enabled"] is True


@pytest.mark.parametrize("policy", [{"policy": {"agent_id": True}}, WORLD], ids=["agent_id", "world_state"])
def test_a_team_env_without_selfplay_takes_an_agent_id_or_a_world_state(policy):
    config = load_config("smax:3m", policy)
    assert config["selfplay"]["enabled"] is False
    assert {k: config["policy"][k] for k in policy["policy"]} == policy["policy"]
