"""The start-up lines' settings (fastvec/trainer/env_defaults.py's describe): wrapped greedily into lines of at
most 94 columns, indented by two, broken only at spaces, every setting and override kept whole and in order."""

from pathlib import Path

import pytest

from fastvec.trainer import env_defaults
from fastvec.trainer.config import declared_by_env, load_config

CONTINUOUS = Path(__file__).resolve().parents[2] / "examples" / "continuous_env.h"  # the pendulum.toml profile
WIDTH = 94


@pytest.mark.parametrize("overrides,want", [
    ({"policy": {"hidden": 128}, "train": {"learning_rate": 1e-05, "gamma": 0.9, "norm_obs": False}},
     ["env.num_envs=32", 'policy.kind="mlp"', "policy.hidden=64 (overridden: 128)", "policy.layers=2",
      "train.learning_rate=0.001 (overridden: 1e-05)", "train.gamma=0.95 (overridden: 0.9)",
      "train.norm_obs=true (overridden: false)", "train.norm_reward=true"]),
    ({"env": {"num_envs": 8}, "policy": {"hidden": 128, "layers": 3}, "train": {"learning_rate": 0.0003}},
     ["env.num_envs=32 (overridden: 8)", "policy.hidden=64 (overridden: 128)", "policy.layers=2 (overridden: 3)",
      "train.learning_rate=0.001 (overridden: 0.0003)", "train.gamma=0.95", "train.norm_obs=true"]),
])
def test_the_settings_are_wrapped_greedily_at_94_columns_and_broken_only_at_spaces(overrides, want):
    config = load_config(str(CONTINUOUS), overrides)
    lines = env_defaults.describe(config, declared_by_env(config["env"]["name"], config["env"]))
    wrapped = [line for line in lines[1:] if line.startswith("  ")]
    assert lines[1:1 + len(wrapped)] == wrapped and len(wrapped) >= 4  # one block after the first line
    assert all(len(line) <= WIDTH and line[2] != " " for line in wrapped), wrapped
    for line, after in zip(wrapped, wrapped[1:]):  # greedy: the next line's first word did not fit
        assert len(line) + 1 + len(after.split()[0]) > WIDTH, (line, after)
    entries = " ".join(line[2:] for line in wrapped).split(", ")
    assert [e for e in entries if e in want] == want, entries
    assert all("=" in e and e.split("=")[0].count(".") == 1 for e in entries), entries
