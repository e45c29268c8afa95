"""env.max_episode_steps: the trainer's env batches truncate episodes where the config says (the env's own limit by
default, none with 0), for built-in envs, env files and Gymnasium ids, and bad values are clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.resolve import make_batch
from fastvec.trainer.settings import Config

EXAMPLE_ENV = Path(__file__).resolve().parents[2] / "examples" / "my_env.h"


def episode_lengths(batch, steps: int) -> tuple[list[int], list[bool]]:
    """The lengths of the episodes that ended in `steps` steps of random actions, and whether each was truncated."""
    rng = np.random.default_rng(0)
    batch.reset(np.arange(batch.num_envs, dtype=np.uint64), None)
    lengths, truncated = [], []
    for _ in range(steps):
        actions = rng.integers(0, batch.env.num_actions, batch.num_envs)
        batch.step(actions.astype(np.int64))
        done = batch.terminated | batch.truncated
        lengths += batch.episode_length[done].tolist()
        truncated += batch.truncated[done].tolist()
    return lengths, truncated


@pytest.mark.parametrize("limit", [-1, 0, 30])
def test_minatar_breakout_is_truncated_where_the_config_says(limit):
    """MinAtar has no limit of its own (as the minatar package); a count truncates at exactly that many steps."""
    config = load_config("breakout-minatar", {"env": {"num_envs": 8, "max_episode_steps": limit}})
    assert Config.of(config).step_limit == max(limit, 0)
    lengths, truncated = episode_lengths(make_batch(config), 200)
    assert lengths
    if limit > 0:
        assert max(lengths) == limit and any(truncated)
        assert all(length == limit for length, cut in zip(lengths, truncated) if cut)
    else:
        assert not any(truncated)


def test_cartpole_keeps_its_registered_limit_unless_told():
    """-1 is CartPole's registered 500 steps; a smaller count cuts earlier; 0 removes the limit."""
    assert Config.of(load_config("cartpole")).step_limit == 500
    config = load_config("cartpole", {"env": {"num_envs": 4, "max_episode_steps": 5}})
    lengths, truncated = episode_lengths(make_batch(config), 40)
    assert set(lengths) == {5} and all(truncated)
    assert Config.of(load_config("cartpole", {"env": {"max_episode_steps": 0}})).step_limit == 0


def test_an_env_file_has_no_limit_unless_given():
    config = load_config(str(EXAMPLE_ENV), {"env": {"num_envs": 4, "max_episode_steps": 3}})
    assert Config.of(config).step_limit == 3
    lengths, truncated = episode_lengths(make_batch(config), 20)
    assert max(lengths) <= 3 and all(cut for length, cut in zip(lengths, truncated) if length == 3)
    assert Config.of(load_config(str(EXAMPLE_ENV))).step_limit == 0


def test_a_gymnasium_id_gets_the_count_as_a_make_argument():
    config = load_config("gym:CartPole-v1", {"env": {"num_envs": 2, "max_episode_steps": 4}})
    lengths, truncated = episode_lengths(make_batch(config), 12)
    assert set(lengths) == {4} and all(truncated)
    with pytest.raises(ConfigError, match="max_episode_steps=0 .* not available for gym:CartPole-v1"):
        make_batch(load_config("gym:CartPole-v1", {"env": {"max_episode_steps": 0}}))


def test_a_negative_limit_other_than_minus_one_is_refused():
    with pytest.raises(ConfigError, match="env.max_episode_steps"):
        load_config("cartpole", {"env": {"max_episode_steps": -2}})
