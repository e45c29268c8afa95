"""The typed config (settings.Config) is frozen, as settings.py documents: neither the config nor any section nor
[env]'s params or [sweep]'s space can be changed in place; replace() is the one way to a changed config."""

import dataclasses

import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.settings import Config


@pytest.fixture(scope="module")
def config():
    return Config.of(load_config("cartpole", {"env": {"num_envs": 4}}))


@pytest.mark.parametrize("section", ["env", "policy", "train", "eval", "selfplay", "sweep"])
def test_no_section_of_a_config_can_be_replaced_or_changed_in_place(config, section):
    value = getattr(config, section)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, section, value)
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, getattr(value, field))
    assert getattr(config, section) is value


def test_env_params_and_sweep_space_are_read_only_and_replace_gives_a_changed_copy(config):
    with pytest.raises(TypeError):
        config.env.params["extra"] = 1
    with pytest.raises(TypeError):
        config.sweep.space["train.learning_rate"] = [1e-3]
    rate = config.train.learning_rate
    changed = config.replace("train", learning_rate=rate * 2)
    assert changed.train.learning_rate == rate * 2 and config.train.learning_rate == rate
    assert hash(config.train) == hash(Config.of(config.to_dict()).train)  # frozen sections hash by value
