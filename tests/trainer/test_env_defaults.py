"""Settings chosen from what the env declares (fastvec/trainer/env_defaults.py): a user's env file or Gymnasium id
trains with the settings of its kind (continuous, discrete, byte observations) and toward its declared target, each
printed at start-up with where it came from; registered ids as ENV; train.wandb_mode leaves WANDB_MODE its say."""

import math
import sys
import tomllib
import types
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from fastvec.trainer import cli, env_defaults
from fastvec.trainer.config import (ConfigError, declared_by_env, load_config, load_run_config, parse_env_argument,
                                    run_env_name, to_toml)
from fastvec.trainer.config_keys import BY_PATH

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "fastvec" / "configs"
CONTINUOUS = ROOT / "examples" / "continuous_env.h"
CORRIDOR = ROOT / "examples" / "my_env.h"


def tuned(file: str, dropped=("checkpoint_interval",)) -> dict:
    """A config file's [env], [policy] and [train] values, as {"section.key": value}."""
    values = tomllib.loads((CONFIGS / file).read_text())
    return {f"{s}.{k}": v for s in ("env", "policy", "train") for k, v in values.get(s, {}).items() if k not in dropped}


def value(config: dict, path: str):
    section, name = path.split(".")
    return config[section][name]


def test_a_continuous_env_file_trains_with_pendulums_settings():
    config = load_config(str(CONTINUOUS))
    expected = tuned("pendulum.toml")
    assert expected["policy.kind"] == "mlp" and expected["train.norm_obs"] and expected["train.norm_reward"]
    assert {path: value(config, path) for path in expected} == expected  # the budget (1M steps) too
    assert math.isinf(config["train"]["target_return"])  # continuous_env.h declares no target


def test_a_discrete_env_file_trains_with_cartpoles_settings_and_its_declared_target():
    config = load_config(str(CORRIDOR), {"env": {"LENGTH": 7}})
    expected = tuned("cartpole.toml", ("checkpoint_interval", "total_timesteps"))
    assert {path: value(config, path) for path in expected} == expected
    assert config["train"]["total_timesteps"] == BY_PATH["train.total_timesteps"].default  # the target ends it
    assert config["train"]["target_return"] == 0.9  # #define REWARD_THRESHOLD 0.9 in my_env.h
    given = load_config(str(CORRIDOR), {"env": {"reward_threshold": 0.5}})
    assert given["train"]["target_return"] == 0.5  # a -D define wins over the file's #define


def byte_env(folder: Path, threshold: str = "") -> Path:
    path = folder / "grid.h"
    path.write_text("#define OBS_T unsigned char\n#define OBS_SIZE 400\n#define NUM_ACTIONS 3\n"
                    + (f"#define REWARD_THRESHOLD {threshold}  /* solved */\n" if threshold else ""))
    return path


def test_an_env_file_with_byte_observations_trains_with_minatars_settings(tmp_path):
    config = load_config(str(byte_env(tmp_path, "(-2.5f)")))
    expected = tuned("breakout-minatar.toml", ("checkpoint_interval", "total_timesteps"))
    assert {path: value(config, path) for path in expected} == expected
    assert config["train"]["target_return"] == -2.5


def test_a_threshold_that_is_not_a_number_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"#define REWARD_THRESHOLD SOLVED in grid.h is not a number"):
        load_config(str(byte_env(tmp_path, "SOLVED")))


class ByteObsEnv(gymnasium.Env):
    """A Gymnasium env with uint8 observations (as an Atari RAM env) for the byte profile."""

    observation_space = gymnasium.spaces.Box(0, 255, (8,), np.uint8)
    action_space = gymnasium.spaces.Discrete(2)


def test_a_gymnasium_id_gets_its_kinds_settings_and_its_reward_threshold():
    config = load_config("gym:CartPole-v1")
    expected = tuned("cartpole.toml", ("checkpoint_interval", "total_timesteps"))
    assert {path: value(config, path) for path in expected} == expected
    assert config["train"]["target_return"] == 475.0 and config["train"]["stop_at_target"]
    if "fastvec-tests/ByteObs-v0" not in gymnasium.registry:
        gymnasium.register("fastvec-tests/ByteObs-v0", entry_point=ByteObsEnv, reward_threshold=3.0)
    config = load_config("gym:fastvec-tests/ByteObs-v0")
    assert config["env"]["num_envs"] == tuned("breakout-minatar.toml")["env.num_envs"]
    assert config["train"]["target_return"] == 3.0


def test_built_in_envs_keep_their_configs_and_get_gymnasiums_threshold():
    cartpole = load_config("cartpole")
    assert cartpole["train"]["target_return"] == 475.0  # Gymnasium's CartPole-v1 threshold
    assert cartpole["train"]["total_timesteps"] == tuned("cartpole.toml", ())["train.total_timesteps"]
    assert load_config("acrobot")["train"]["target_return"] == -100.0
    breakout = load_config("breakout")  # none declared: no target, and no kind's settings over breakout.toml
    assert math.isinf(breakout["train"]["target_return"])
    assert {p: value(breakout, p) for p in tuned("breakout.toml")} == tuned("breakout.toml")


def test_the_command_line_and_a_config_file_override_what_the_env_declares(tmp_path, capsys):
    config = load_config(str(CONTINUOUS), {"policy": {"hidden": 128}, "train": {"target_return": -1.0}})
    assert config["policy"]["hidden"] == 128 and config["train"]["target_return"] == -1.0
    best = tmp_path / "best.toml"  # as fastvec-sweep writes one
    best.write_text('[env]\nname = "continuous_env.h"\n[train]\nlearning_rate = 0.0003\n')
    assert cli.main([str(CONTINUOUS), f"--config={best}", "--print-config"]) == 0
    printed = tomllib.loads(capsys.readouterr().out)
    assert printed["train"]["learning_rate"] == 0.0003 and printed["train"]["norm_reward"] is True


def test_start_up_lines_name_where_each_setting_came_from():
    config = load_config(str(CONTINUOUS), {"policy": {"hidden": 128}})
    lines = env_defaults.describe(config, declared_by_env(config["env"]["name"], config["env"]))
    text = "\n".join(lines)
    assert "ACTION_SPACE FV_BOX in continuous_env.h" in lines[0] and "fastvec/configs/pendulum.toml" in lines[0]
    assert "policy.hidden=64 (overridden: 128)" in text and "train.norm_obs=true" in text
    assert "best.toml" in text and "target" not in text  # a sweep is the next step; no target declared
    config = load_config("gym:CartPole-v1")
    text = "\n".join(env_defaults.describe(config, declared_by_env(config["env"]["name"], config["env"])))
    assert "CartPole-v1's reward_threshold" in text and "train.target_return=475" in text
    assert "last 20 episodes >= 475; the run stops there" in text


def test_the_start_up_lines_are_printed_before_training(tmp_path, capsys):
    args = [str(CORRIDOR), "--env.LENGTH=5", "--env.num_envs=8", "--train.total_timesteps=1024", "--train.horizon=64",
            "--train.minibatch_size=256", f"--run-dir={tmp_path / 'run'}"]
    assert cli.main(args) == 0
    err = capsys.readouterr().out
    assert "fastvec-train: my_env.h declares discrete actions" in err and "cartpole.toml" in err
    assert "env.num_envs=64 (overridden: 8)" in err
    assert "target from #define REWARD_THRESHOLD in my_env.h: train.target_return=0.9" in err


@pytest.mark.parametrize("given, name", [("fastvec/CartPole", "cartpole"), ("fastvec/cartpole", "cartpole"),
                                         ("fastvec/Breakout-MinAtar", "breakout-minatar")])
def test_a_registered_id_names_its_built_in_env(given, name, tmp_path):
    assert parse_env_argument(given) == (name, {}) and run_env_name(given) == name
    config = load_config(given)
    assert config["env"]["name"] == name
    (tmp_path / "config.toml").write_text(to_toml(config))
    assert load_run_config(tmp_path, given)["env"]["name"] == name  # --resume with the id as ENV


def test_a_mistyped_registered_id_suggests_the_right_one():
    with pytest.raises(ConfigError, match=r"env file 'fastvec/CartPol' not found; did you mean 'fastvec/CartPole'"):
        parse_env_argument("fastvec/CartPol")


def fake_wandb(monkeypatch) -> list:
    """A stand-in wandb module recording wandb.init's keyword arguments."""
    calls: list = []
    run = types.SimpleNamespace(define_metric=lambda *a, **k: None, finish=lambda: None, log=lambda *a, **k: None)
    module = types.SimpleNamespace(init=lambda **kw: calls.append(kw) or run,
                                   errors=types.SimpleNamespace(Error=RuntimeError))
    monkeypatch.setitem(sys.modules, "wandb", module)
    return calls


def test_wandb_mode_defaults_to_the_wandb_mode_environment_variable(tmp_path, monkeypatch):
    from fastvec.trainer.loggers import RunLoggers
    calls = fake_wandb(monkeypatch)
    config = load_config("cartpole", {"train": {"wandb_project": "p"}})
    assert config["train"]["wandb_mode"] == ""
    RunLoggers(config, tmp_path / "a", resume=False)
    assert calls[-1]["mode"] is None  # wandb.init then reads WANDB_MODE (e.g. offline), else runs online
    RunLoggers(load_config("cartpole", {"train": {"wandb_project": "p", "wandb_mode": "offline"}}), tmp_path / "b",
               resume=False)
    assert calls[-1]["mode"] == "offline"  # a mode given in the config is the run's


@pytest.mark.parametrize("kind,where", [("float", "no OBS_T in continuous_env.h"),
                                        ("byte", "OBS_T unsigned char in grid.h")])
def test_the_first_start_up_line_names_the_observations_in_the_singular_and_who_declares_them(kind, where, tmp_path):
    path = CONTINUOUS if kind == "float" else byte_env(tmp_path)
    config = load_config(str(path))
    first = env_defaults.describe(config, declared_by_env(config["env"]["name"], config["env"]))[0]
    actions = ("continuous actions (ACTION_SPACE FV_BOX in continuous_env.h)" if kind == "float"
               else "discrete actions (NUM_ACTIONS in grid.h)")
    assert first.startswith(f"{path.name} declares {actions} and {kind} observations ({where}): the ")


def test_a_gymnasium_ids_start_up_line_names_its_spaces():
    if "fastvec-tests/ByteObs-v0" not in gymnasium.registry:
        gymnasium.register("fastvec-tests/ByteObs-v0", entry_point=ByteObsEnv, reward_threshold=3.0)
    config = load_config("gym:fastvec-tests/ByteObs-v0")
    first = env_defaults.describe(config, declared_by_env(config["env"]["name"], config["env"]))[0]
    assert first == ("gym:fastvec-tests/ByteObs-v0 declares discrete actions (fastvec-tests/ByteObs-v0's action "
                     "space Discrete(2)) and byte observations (fastvec-tests/ByteObs-v0's observation space of "
                     "uint8): the bytes settings of fastvec/configs/breakout-minatar.toml, a wide MLP over many "
                     "envs:")
