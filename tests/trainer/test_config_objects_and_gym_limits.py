"""Small promises of the trainer's config: a Config and its sections are frozen (a run cannot change its
settings by accident), and a Gymnasium id's env.max_episode_steps of -1 leaves gymnasium.make's own limit."""

import dataclasses

import pytest

from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import make_batch
from fastvec.trainer.settings import Config


def test_a_config_and_its_sections_are_frozen():
    config = Config.of(load_config("cartpole"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.train.seed = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.env.name = "pong"
    assert config.replace("train", seed=5).train.seed == 5 and config.train.seed != 5


def test_a_gymnasium_id_without_a_limit_keeps_its_own():
    batch = make_batch(load_config("gym:CartPole-v1", {"env": {"num_envs": 2, "max_episode_steps": -1}}))
    try:
        assert [env.spec.max_episode_steps for env in batch.vec.envs] == [500, 500]
    finally:
        batch.close()
