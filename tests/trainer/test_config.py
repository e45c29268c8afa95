"""The trainer's config: KEYS defines every key once, default.toml is generated from it, loaded configs are
complete, and validate() refuses every bad value or combination with a message naming the key and the fix."""

import tomllib

import pytest

from fastvec.native import ENVS
from fastvec.trainer import cli
from fastvec.trainer.config import (CONFIG_DIR, KEYS, ConfigError, check_world_size, default_toml, defaults, load_toml,
                                    help_text, load_config, load_run_config, parse_overrides, parse_value,
                                    rollout_sizes, to_toml, validate)
from fastvec.trainer.config_keys import SECTIONS, Key
from fastvec.trainer.settings import Config

# ---------------------------------------------------------------------------------------------- the definition


def test_shipped_default_toml_is_the_generated_one():
    shipped = (CONFIG_DIR / "default.toml").read_text()
    assert shipped == default_toml(), ("fastvec/configs/default.toml is stale: "
                                       "python -m fastvec.trainer.config > fastvec/configs/default.toml")


def test_default_toml_reads_back_as_the_defaults_and_fits_110_columns():
    assert tomllib.loads(default_toml()) == defaults()
    assert max(len(line) for line in default_toml().splitlines()) <= 110
    assert "python -m fastvec.trainer.config > fastvec/configs/default.toml" in default_toml()


@pytest.mark.parametrize("length", range(105, 112))
def test_section_notes_of_any_length_are_wrapped_into_110_columns(monkeypatch, length):
    """A note of two words `length` characters long in all, on every section: "# " and the note's first line
    still fit 110 columns (a 108-character line is the longest that does), and the note stays whole comments."""
    from fastvec.trainer.config_keys import SECTION_NOTES

    note = "x" * 50 + " " + "y" * (length - 51)
    for section in SECTIONS:
        monkeypatch.setitem(SECTION_NOTES, section, note)
    text = default_toml()
    assert max(len(line) for line in text.splitlines()) <= 110
    assert text.count("y" * (length - 51)) == len(SECTIONS) and tomllib.loads(text) == defaults()


def test_every_key_has_a_meaning_a_valid_default_and_names_its_choices():
    paths = [key.path for key in KEYS]
    assert len(paths) == len(set(paths)), "a key is defined twice"
    for key in KEYS:
        assert key.section in SECTIONS, key.path
        assert key.doc.strip() and "\n" not in key.doc and "\n" not in key.note, key.path
        assert type(key.default) is key.type, key.path
        assert key.problem(key.default) is None, key.path
        for choice in key.choices:
            assert f'"{choice}"' in key.doc, f"{key.path}: its meaning should name the choice {choice!r}"
        assert f"{key.name} = " in default_toml(), key.path


def test_key_ranges_and_choices_read_as_written():
    assert Key("s", "k", float, 0.5, "x", min=0, lt=1).range_text() == "[0, 1)"
    assert Key("s", "k", float, 0.5, "x", gt=0).problem(0.0) == "s.k=0.0 must be > 0"
    assert Key("s", "k", float, 0.5, "x", min=0, max=1).problem(1.5) == "s.k=1.5 must be in [0, 1]"
    assert Key("s", "k", str, "a", '"a", "b" or "c"', choices=("a", "b", "c")).problem("d") == "s.k='d': use a, b or c"


def test_every_env_loads_a_complete_config():
    for env in ENVS:
        config = load_config(env)
        for key in KEYS:
            assert key.name in config[key.section], f"{env}: {key.path} missing"
        assert config["env"]["name"] == env


def test_help_lists_every_key_from_the_definition(capsys):
    text = help_text()
    for key in KEYS:
        assert f"  {key.name} = " in text and key.doc.split()[0] in text, key.path
    assert "points = 21" in help_text(load_config("pong"))  # an env's own parameters
    assert cli.main(["--help"]) == 0
    assert "--help-config" in capsys.readouterr().out
    assert cli.main(["breakout", "--help-config", "--train.seed=7"]) == 0
    out = capsys.readouterr().out
    assert "seed = 7" in out and "frameskip = 4" in out and "async = true" in out


# ---------------------------------------------------------------------------------------------- layering


def test_env_toml_overrides_defaults_and_command_line_overrides_both():
    config = load_config("breakout", parse_overrides(["--train.total_timesteps=20_000", "--policy.hidden", "16"]))
    assert config["train"]["total_timesteps"] == 20_000  # the command line over breakout.toml's 50M
    assert config["policy"]["hidden"] == 16
    assert config["train"]["async"] is True and config["env"]["frameskip"] == 4  # from breakout.toml
    assert config["train"]["vf_clip_coef"] == 0.2  # from the defaults: breakout.toml does not set it
    assert config["env"]["name"] == "breakout"
    assert load_config("cartpole")["train"]["learning_rate"] == 0.005


def test_a_mujoco_task_with_its_own_toml_trains_it_over_the_family_settings():
    """reacher.toml (a swept shape) layers over mujoco.toml's for `fastvec-train reacher` and its registered id;
    a task without its own file keeps mujoco.toml's, and the command line still wins."""
    family, own = load_toml(CONFIG_DIR / "mujoco.toml"), load_toml(CONFIG_DIR / "reacher.toml")
    for env in ("reacher", "fastvec/Reacher-v5"):
        config = load_config(env)
        assert config["env"]["gym_id"] == "fastvec/Reacher-v5"
        assert all(config[section][key] == value for section in own for key, value in own[section].items())
        assert config["train"]["norm_obs"] == family["train"]["norm_obs"]  # the family's settings stay beneath
    assert load_config("hopper")["train"]["gamma"] == family["train"]["gamma"] != own["train"]["gamma"]
    assert load_config("reacher", {"train": {"gamma": 0.5}})["train"]["gamma"] == 0.5
    from fastvec.trainer.config import declared_by_env
    from fastvec.trainer.env_defaults import describe

    for env, says in (("reacher", True), ("hopper", False)):
        config = load_config(env)
        first = describe(config, declared_by_env(config["env"]["name"], config["env"]))[0]
        assert ("reacher.toml's over them" in first) is says, first


def test_values_parse_as_toml():
    assert parse_value("20_000_000") == 20_000_000
    assert parse_value("3e-4") == pytest.approx(3e-4)
    assert parse_value("true") is True
    assert parse_value("cpu") == "cpu"
    # an int where a float is expected is accepted and becomes a float
    assert load_config("cartpole", {"train": {"learning_rate": 1}})["train"]["learning_rate"] == 1.0


def test_env_parameters_pass_through_to_the_env():
    assert load_config("breakout", {"env": {"frameskip": 2}})["env"]["frameskip"] == 2
    with pytest.raises(ConfigError, match=r"^\[env\]: frameskip=99"):
        load_config("breakout", {"env": {"frameskip": 99}})


def test_selfplay_turns_the_bot_off_in_the_resolved_config():
    assert load_config("pong")["env"]["pong_bot"] == 1
    assert load_config("pong", {"selfplay": {"enabled": True}})["env"]["pong_bot"] == 0


def test_unknown_env_is_an_error_listing_the_envs():
    with pytest.raises(ConfigError, match="unknown env 'pacman'.*cartpole"):
        load_config("pacman")


def test_env_name_comes_from_the_env_argument_only():
    with pytest.raises(ConfigError, match="env.name in the command line"):
        load_config("cartpole", {"env": {"name": "breakout"}})


# ---------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize("overrides,message", [
    # unknown section and key, wrong type
    ({"trian": {"seed": 1}}, "unknown config section [trian]"),
    ({"train": {"learnin_rate": 0.1}}, ("unknown config key train.learnin_rate in the command line; "
                                        "did you mean train.learning_rate?")),
    ({"train": {"seed": "one"}}, "train.seed in the command line = 'one' must be an int"),
    ({"train": {"async": 1}}, "train.async in the command line = 1 must be a bool"),
    # choices
    ({"policy": {"kind": "lstm"}}, "policy.kind='lstm': use mingru or mlp"),
    ({"train": {"precision": "fp16"}}, "train.precision='fp16': use fp32, tf32 or bf16"),
    ({"train": {"device": "tpu"}}, "train.device='tpu': use cpu, cuda or auto"),
    ({"train": {"env_device": "gpu"}}, "train.env_device='gpu': use cuda or cpu"),
    # ranges
    ({"env": {"num_envs": 0}}, "env.num_envs=0 must be >= 1"),
    ({"train": {"env_groups": 0}}, "train.env_groups=0 must be >= 1"),
    ({"train": {"learning_rate": 0.0}}, "train.learning_rate=0.0 must be > 0"),
    ({"train": {"gamma": 1.5}}, "train.gamma=1.5 must be in [0, 1]"),
    ({"train": {"adam_beta2": 1.0}}, "train.adam_beta2=1.0 must be in [0, 1)"),
    ({"selfplay": {"latest_prob": -0.1}}, "selfplay.latest_prob=-0.1 must be in [0, 1]"),
    ({"train": {"checkpoint_interval": 0}}, "train.checkpoint_interval=0 must be >= 1"),
    ({"train": {"checkpoint_seconds": -1}}, "train.checkpoint_seconds=-1.0 must be >= 0"),
    # finite floats, 64-bit ints, whatever the range
    ({"train": {"learning_rate": float("inf")}}, "train.learning_rate=inf must be a finite number > 0"),
    ({"train": {"max_grad_norm": float("nan")}}, "train.max_grad_norm=nan must be a finite number > 0"),
    ({"train": {"ent_coef": 10**400}}, "train.ent_coef in the command line = 1000"),
    ({"train": {"seed": 2**64}}, "train.seed=18446744073709551616 does not fit in 64 bits"),
    ({"train": {"seed": 2**63}}, "train.seed=9223372036854775808 does not fit in 64 bits"),  # the first past int64
    ({"train": {"seed": -2**63 - 1}}, "train.seed=-9223372036854775809 does not fit in 64 bits"),
    ({"train": {"seed": 2**63 - 1}}, "train.seed=9223372036854775807 must be in [0, 4_294_967_295]"),  # int64's ends:
    ({"train": {"seed": -2**63}}, "train.seed=-9223372036854775808 must be in [0, 4_294_967_295]"),  # out of range only
    ({"train": {"seed": 2**32}}, "train.seed=4294967296 must be in [0, 4_294_967_295]"),
    # env parameters and self-play's parameters
    ({"env": {"frameskip": 4}}, "[env]: unknown keyword(s) ['frameskip']"),
    ({"selfplay": {"bot_switch_param": "bot"}}, "selfplay.bot_switch_param='bot' is not a parameter of cartpole"),
])
def test_bad_values_name_the_key_and_the_fix(overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config("cartpole", overrides)
    assert message in str(err.value)


@pytest.mark.parametrize("env,overrides,message", [
    ("cartpole", {"train": {"horizon": 64, "bptt_horizon": 48}},
     "train.bptt_horizon=48 must divide train.horizon=64; e.g. --train.bptt_horizon=64"),
    ("cartpole", {"train": {"horizon": 64, "bptt_horizon": 16, "minibatch_size": 1000}},
     "train.minibatch_size=1000 must be a multiple of train.bptt_horizon=16; e.g. --train.minibatch_size=992"),
    ("breakout", {"train": {"gpus": 2}},  # breakout.toml turns train.async on
     "train.async=true with several GPUs (train.gpus=2) is not supported yet; use --train.async=false"),
    ("cartpole", {"train": {"gpus": 2, "env_device": "cpu"}},
     ("train.env_device=cpu (host environments) with several GPUs (train.gpus=2) is not supported; "
      "use --train.gpus=1, or --train.env_device=cuda")),
    ("pong", {"train": {"gpus": 4}, "selfplay": {"enabled": True}},
     "selfplay.enabled=true with several GPUs (train.gpus=4) is not supported"),
    ("cartpole", {"train": {"gpus": 2, "device": "cpu"}},
     "several GPUs (train.gpus=2) need the CUDA trainer, but train.device=cpu; drop --train.device=cpu"),
    ("cartpole", {"eval": {"opponent": "bot"}}, "eval.opponent=bot: cartpole has no scripted bot"),
    ("cartpole", {"eval": {"render": "play.png"}}, "eval.render='play.png': give a path ending in .gif or .mp4"),
])
def test_each_cross_key_rule_refuses_its_combination(env, overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(env, overrides)
    assert message in str(err.value)


def test_the_cross_key_rules_pass_the_combinations_that_work():
    load_config("cartpole", {"train": {"horizon": 64, "bptt_horizon": 16, "minibatch_size": 1024}})
    load_config("breakout", {"train": {"gpus": 2, "async": False}})
    load_config("pong", {"eval": {"opponent": "bot", "render": "play.GIF"}})


def test_a_launchers_ranks_are_checked_like_train_gpus():
    config = load_config("breakout")  # async: fine on one process
    check_world_size(config, 1)
    with pytest.raises(ConfigError, match=r"train.async=true with several GPUs \(2 ranks\)"):
        check_world_size(config, 2)


def test_validate_refuses_an_incomplete_or_edited_config():
    config = load_config("cartpole")
    del config["train"]["horizon"]
    with pytest.raises(ConfigError, match="lacks train.horizon"):
        validate(config)
    config = load_config("cartpole")
    config["policy"]["depth"] = 3
    with pytest.raises(ConfigError, match="unknown config key policy.depth"):
        validate(config)
    config = load_config("cartpole")
    config["train"]["horizon"] = 0
    with pytest.raises(ConfigError, match="train.horizon=0 must be >= 1"):
        validate(config)


def test_minibatch_larger_than_a_rollout_is_refused_once_the_agents_are_known():
    train = Config.of(load_config("cartpole", {"env": {"num_envs": 4}, "train": {"horizon": 16, "bptt_horizon": 16}})).train
    with pytest.raises(ConfigError, match="train.minibatch_size=1024 is larger than a rollout"):
        rollout_sizes(train, 4, 1)
    assert rollout_sizes(train, 32, 2) == (64, 16, 16, 1, 1024)


# ---------------------------------------------------------------------------------------------- saved run configs


def test_saved_config_reads_back_identically(tmp_path):
    config = load_config("pong", {"train": {"adam_eps": 1e-8, "device": "cpu"}, "env": {"points": 3},
                                  "selfplay": {"enabled": True}})
    assert tomllib.loads(to_toml(config)) == config
    (tmp_path / "config.toml").write_text(to_toml(config))
    assert load_run_config(tmp_path, "pong") == config
    resumed = load_run_config(tmp_path, "pong", {"train": {"total_timesteps": 123}})
    assert resumed["train"]["total_timesteps"] == 123 and resumed["env"]["points"] == 3
    assert load_run_config(tmp_path, "Pong") == config  # a built-in env's name in any case, as everywhere else


def test_a_saved_config_without_a_newer_key_gets_its_default(tmp_path):
    """Only in a config.toml of a fastvec older than the key (no first and last marker lines); a file written
    now holds every key, and one that lacks any is damaged (test_reliability.py: refused on resume)."""
    config = load_config("cartpole")
    del config["train"]["blas_threads"]
    legacy = "\n".join(line for line in to_toml(config).splitlines() if not line.startswith("#"))
    (tmp_path / "config.toml").write_text(legacy)
    assert load_run_config(tmp_path, "cartpole")["train"]["blas_threads"] == defaults()["train"]["blas_threads"]
    without_horizon = "\n".join(line for line in legacy.splitlines() if not line.startswith("horizon ="))
    (tmp_path / "config.toml").write_text(without_horizon)  # a key that every release wrote
    with pytest.raises(ConfigError, match=r"config.toml is damaged \(it lacks train.horizon\)"):
        load_run_config(tmp_path, "cartpole")
    (tmp_path / "config.toml").write_text(to_toml(config))  # written now, yet without the key
    with pytest.raises(ConfigError, match=r"config.toml is damaged \(it lacks train.blas_threads\)"):
        load_run_config(tmp_path, "cartpole")
    (tmp_path / "config.toml").write_text(legacy)
    with pytest.raises(ConfigError, match="is a 'cartpole' run, not 'pong'"):
        load_run_config(tmp_path, "pong")


@pytest.mark.parametrize("section", ["train", "policy", "env"])
def test_a_saved_config_without_a_whole_section_is_damaged_naming_it(tmp_path, section):
    """A config.toml cut down to fewer sections (a hand edit, a merge gone wrong) is refused on resume naming the
    missing section, rather than resumed with that section's defaults."""
    lines, kept, skipping = to_toml(load_config("cartpole")).splitlines(), [], False
    for line in lines:
        if line.startswith("["):
            skipping = line.strip() == f"[{section}]"
        if not skipping:
            kept.append(line)
    (tmp_path / "config.toml").write_text("\n".join(kept) + "\n")
    with pytest.raises(ConfigError, match=rf"config.toml is damaged \(it lacks its \[{section}\] section\)"):
        load_run_config(tmp_path, "cartpole")


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path):
    """Windows editors (Notepad) save UTF-8 with a BOM; TOML's text is the same."""
    path = tmp_path / "mine.toml"
    path.write_bytes("\ufeff[train]\nlearning_rate = 0.001\n".encode("utf-8"))
    assert cli.config_file(str(path), "cartpole") == {"train": {"learning_rate": 0.001}}


def test_a_config_file_that_is_not_utf8_is_refused_in_one_line_naming_it(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes("# réglages\n[train]\nlearning_rate = 0.001\n".encode("latin-1"))
    with pytest.raises(ConfigError) as err:
        cli.config_file(str(path), "cartpole")
    text = str(err.value)
    assert str(path) in text and "UTF-8" in text and "\n" not in text
