"""The relations between train.horizon, train.bptt_horizon and train.minibatch_size: each refused combination
gives exactly its own error (the whole message, so a different error cannot pass for it), the fix each
message suggests is accepted, and the boundary combinations (equal sizes, a minibatch of a whole rollout) run.
Also the ENV argument's forms (built-in, PATH.h, gym:ID), an env file's -D parameters, a damaged run config's
message and the generated default.toml."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fastvec.trainer.config import (
    ConfigError,
    _toml_value,
    default_toml,
    help_text,
    load_config,
    load_run_config,
    looks_like_path,
    parse_env_argument,
    parse_overrides,
    read_run_config,
    run_env_name,
    rollout_sizes,
    source_defines,
    to_toml,
    validate,
)
from fastvec.trainer.settings import Config


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
    train = Config.of(load_config("cartpole", {"train": {"horizon": 16, "bptt_horizon": 4, "minibatch_size": 4}})).train
    samples = num_envs * agents * 16
    train = dataclasses.replace(train, minibatch_size=samples)
    assert rollout_sizes(train, num_envs, agents) == (num_envs * agents, 16, 4, 4, samples)
    with pytest.raises(ConfigError) as err:
        rollout_sizes(dataclasses.replace(train, minibatch_size=samples + 4), num_envs, agents)
    assert str(err.value) == (f"train.minibatch_size={samples + 4} is larger than a rollout ({num_envs * agents} "
                              f"rows x horizon 16 = {samples} samples); lower it or raise env.num_envs / train.horizon")


# ---------------------------------------------------------------------------------------------- env arguments

COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"


def test_what_names_an_env_file():
    assert looks_like_path("my_env.h") and looks_like_path(f"envs{os.sep}mine") and not looks_like_path("cartpole")
    assert parse_env_argument("CartPole") == ("cartpole", {})
    assert parse_env_argument("gym:Acrobot-v1") == ("gym:Acrobot-v1", {"gym_id": "Acrobot-v1"})
    assert parse_env_argument(str(COUNTING)) == ("counting.h", {"source": str(COUNTING.resolve())})
    with pytest.raises(ConfigError) as err:
        parse_env_argument("gym:")
    assert str(err.value) == "ENV 'gym:' names no Gymnasium id; e.g. fastvec-train gym:CartPole-v1"
    with pytest.raises(ConfigError, match="env file 'nowhere/x.h' not found"):
        parse_env_argument("nowhere/x.h")


def test_an_env_file_given_by_key_under_any_name_loads():
    config = load_config("my_counting", {"env": {"source": str(COUNTING), "terminate_at": True}})
    assert config["env"]["name"] == "my_counting" and config["env"]["source"] == str(COUNTING)
    assert source_defines(config["env"]["source"], Config.of(config).env.params) == {"TERMINATE_AT": 1}
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) FAST for env file 'counting.h'.*TERMINATE_AT"):
        load_config("my_counting", {"env": {"source": str(COUNTING), "fast": True}})


@pytest.mark.parametrize("value,message", [
    ("four", ("env.terminate_at='four': a parameter of an env file is a -D define, an int or a float "
              "(e.g. --env.terminate_at=8)")),
    (float("nan"), "env.terminate_at=nan: a parameter of an env file is a -D define"),
    (2**63, f"env.terminate_at={2**63} does not fit in 64 bits"),
    (-2**63 - 1, f"env.terminate_at={-2**63 - 1} does not fit in 64 bits"),
])
def test_env_file_parameters_must_be_64_bit_numbers(value, message):
    with pytest.raises(ConfigError) as err:
        load_config(str(COUNTING), {"env": {"terminate_at": value}})
    assert str(err.value).startswith(message)
    for fits in (2**63 - 1, -2**63, 2.5):
        load_config(str(COUNTING), {"env": {"terminate_at": fits}})


@pytest.mark.parametrize("key,value", [("gym_id", "CartPole-v1"), ("source", str(COUNTING))])
def test_a_custom_env_under_a_builtin_name_is_refused_naming_its_key(key, value):
    with pytest.raises(ConfigError) as err:
        load_config("cartpole", {"env": {key: value}})
    assert str(err.value).startswith(f"env.{key}={value!r} under the name 'cartpole', a built-in env's")


def test_a_damaged_run_config_names_at_most_four_missing_keys(tmp_path):
    config = load_config("cartpole")
    names = ["horizon", "bptt_horizon", "minibatch_size", "gamma", "seed"]
    for name in names[:5]:
        del config["train"][name]
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config))
    with pytest.raises(ConfigError) as err:
        read_run_config(path)
    missing = [f"train.{n}" for n in sorted(names, key=list(load_config("cartpole")["train"]).index)]
    assert f"is damaged (it lacks {', '.join(missing[:4])} and more)" in str(err.value)
    del_one = load_config("cartpole")
    del del_one["train"]["gamma"]
    path.write_text(to_toml(del_one))
    with pytest.raises(ConfigError, match=r"is damaged \(it lacks train.gamma\); --resume"):
        read_run_config(path)


def test_help_for_an_env_file_lists_its_defines():
    text = help_text(load_config(str(COUNTING), {"env": {"terminate_at": 4}}))
    assert "counting.h's -D defines (any other --env.KEY=value adds one):\n    terminate_at = 4" in text
    assert "with counting.h's values (defaults < what the env declares < the command line)" in text
    text = help_text(load_config("pong"))
    assert "with pong's values (defaults < what pong declares < pong.toml < the command line)" in text and "pong's parameters:" in text


def test_running_the_module_prints_the_default_toml():
    out = subprocess.run([sys.executable, "-m", "fastvec.trainer.config"], capture_output=True, text=True,
                         check=True).stdout
    assert out == default_toml()


def test_a_run_config_missing_exactly_four_keys_names_all_four(tmp_path):
    config = load_config("cartpole")
    order = list(config["train"])
    gone = ["horizon", "bptt_horizon", "minibatch_size", "gamma"]
    for name in gone:
        del config["train"][name]
    path = tmp_path / "config.toml"
    path.write_text(to_toml(config))
    with pytest.raises(ConfigError) as err:
        read_run_config(path)
    names = ", ".join(f"train.{n}" for n in sorted(gone, key=order.index))
    assert f"is damaged (it lacks {names}); --resume" in str(err.value)


def test_a_run_of_an_env_file_resumes_from_the_files_new_path(tmp_path):
    original = tmp_path / "a" / "counting.h"
    original.parent.mkdir()
    original.write_text(COUNTING.read_text())
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.toml").write_text(to_toml(load_config(str(original), {"env": {"terminate_at": 4}})))
    moved = tmp_path / "b" / "counting.h"
    moved.parent.mkdir()
    original.rename(moved)
    config = load_run_config(run_dir, str(moved))
    assert config["env"]["source"] == str(moved.resolve()) and config["env"]["terminate_at"] == 4
    assert load_run_config(run_dir, "counting.h", {"env": {"source": str(moved)}})["env"]["source"] == str(moved)
    with pytest.raises(ConfigError, match="the run's env file .* is gone"):
        load_run_config(run_dir, "counting.h")
    with pytest.raises(ConfigError, match="is a 'counting.h' run, not 'cartpole'"):
        load_run_config(run_dir, "cartpole")


def test_command_line_details():
    with pytest.raises(ConfigError) as err:
        parse_overrides(["--train.seed"])
    assert str(err.value) == "--train.seed needs a value: --train.seed=VALUE"
    assert parse_overrides(["--train.seed", "3"]) == {"train": {"seed": 3}}
    with pytest.raises(ConfigError) as err:
        load_config("gym:CartPole-v1", {"env": {"gym_id": "Acrobot-v1"}})
    assert str(err.value) == ("ENV 'gym:CartPole-v1' sets env.gym_id='CartPole-v1', but the command line sets "
                              "env.gym_id='Acrobot-v1'; give one of them")
    assert load_config("gym:CartPole-v1", {"env": {"gym_id": "CartPole-v1"}})["env"]["gym_id"] == "CartPole-v1"


@pytest.mark.parametrize("section,name", [("sweep", "bogus"), ("train", "a.b"), ("policy", "depth")])
def test_validate_refuses_unknown_keys_outside_env_and_sweep_parameters(section, name):
    config = load_config("cartpole")
    config[section][name] = 1
    with pytest.raises(ConfigError, match=f"unknown config key {section}.{name}"):
        validate(config)
    config = load_config("cartpole")
    config["sweep"]["train.gamma"] = {"low": 0.9, "high": 0.99}  # a sweep parameter names a key
    validate(config)


def test_toml_values_are_written_readably():
    assert _toml_value(1e-05) == "1e-05" and _toml_value(1e-05, pretty=True) == "1e-5"
    assert _toml_value(300000) == "300000" and _toml_value(300000, pretty=True) == "300_000"
    assert _toml_value(64, pretty=True) == "64" and _toml_value(0.5, pretty=True) == "0.5"
    # grouped by thousands from five digits on, either sign (9999 stays as it is)
    assert [_toml_value(v, pretty=True) for v in (9_999, 10_000, -9_999, -10_000)] == \
        ["9999", "10_000", "-9999", "-10_000"]
    lines = help_text(load_config("cartpole")).splitlines()
    assert any(line.startswith("  total_timesteps = 300_000 ") for line in lines)


@pytest.mark.parametrize("given", ["cartpole", "CartPole", "fastvec/Breakout-MinAtar", "gym:CartPole-v1", "hopper",
                                   "fastvec/Hopper-v5", "simple_spread", "fastvec/simple_spread-v3", "Simple_Tag_v3",
                                   "smax:3m", "fastvec/smax_2s3z-v0", "examples/my_env.h", "my_env"])
def test_the_name_a_run_records_is_the_env_arguments_whatever_form_it_takes(given, monkeypatch):
    """--eval and --resume compare a checkpoint's env with run_env_name(ENV), which must name every form of ENV
    (built-in, registered id, gym:ID, MuJoCo task, MPE or SMAX team env by any of its names, an env file, a bare
    name given its source by --env.source) as fastvec-train records it (parse_env_argument)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert run_env_name(given) == parse_env_argument(given)[0]


@pytest.mark.parametrize("agents, refused", [(1, True), (2, False), (3, False)])
def test_self_play_needs_two_agents_per_game_and_two_are_enough(agents, refused):
    """check_with_env: self-play refuses a one-agent env, accepts two seats (Pong) or more; without self-play
    any count passes."""
    from fastvec.trainer.config import check_with_env
    config = Config.of(load_config("pong", {"selfplay": {"enabled": True}}))
    if refused:
        with pytest.raises(ConfigError, match=f"selfplay.enabled=true needs a multi-agent env.*has {agents} agent"):
            check_with_env(config, agents, [])
    else:
        check_with_env(config, agents, [])
    check_with_env(Config.of(load_config("pong")), agents, [])


@pytest.mark.parametrize("given,hint", [("cartpol.h", "; did you mean 'cartpole'?"),
                                        ("fastvec/cartpol", "; did you mean 'fastvec/CartPole'?"),
                                        ("fastvec/Acrobt", "; did you mean 'fastvec/Acrobot'?"),
                                        ("nowhere/x.h", " (")])
def test_a_missing_env_file_names_the_nearest_built_in_or_registered_id(given, hint):
    """A path that is no file suggests the closest built-in env by its name, or registered id as Gymnasium spells
    it (fastvec/CartPole, not the lower-case key it is matched by); with nothing close, no suggestion."""
    with pytest.raises(ConfigError) as error:
        parse_env_argument(given)
    assert str(error.value).startswith(f"env file {given!r} not found{hint}")
    assert ("did you mean" in str(error.value)) == (hint != " (")
