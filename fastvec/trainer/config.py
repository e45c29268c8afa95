"""Trainer configuration: fastvec/configs/default.toml, overridden by fastvec/configs/ENV.toml, overridden
by `--section.key=value` arguments; every key is checked against default.toml's keys and types."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from fastvec.native import ENVS, resolve_defines

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

# [env] keys the trainer uses itself; any other [env] key is an env parameter (checked by the env).
ENV_TRAINER_KEYS = {"num_envs"}


class ConfigError(ValueError):
    """A bad config key, value or env name; the message names it and the valid choices."""


def load_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: {err}") from None


def parse_value(text: str):
    """A command-line value as TOML (so 20_000_000, 3e-4, true, "x" all work); bare words stay strings."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _check_type(where: str, value, default):
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{where} = {value!r} must be a {type(default).__name__} (default {default!r})")
    return value


def merge(base: dict, override: dict, source: str, defaults: dict) -> dict:
    """base updated with override; keys must exist in defaults (except env parameters under [env])."""
    out = copy.deepcopy(base)
    for section, values in override.items():
        if section not in defaults:
            raise ConfigError(f"unknown config section [{section}] in {source}; sections are {sorted(defaults)}")
        if not isinstance(values, dict):
            raise ConfigError(f"{section} in {source} must be a table [{section}]")
        for key, value in values.items():
            where = f"{section}.{key} in {source}"
            if key in defaults[section]:
                value = _check_type(where, value, defaults[section][key])
            elif section != "env":
                raise ConfigError(f"unknown config key {section}.{key} in {source}; "
                                  f"[{section}] keys are: {', '.join(sorted(defaults[section]))}")
            out[section][key] = value
    return out


def parse_overrides(args: list[str]) -> dict:
    """['--train.seed=3', '--env.num_envs', '64'] -> {'train': {'seed': 3}, 'env': {'num_envs': 64}}."""
    overrides: dict = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or "." not in arg.split("=", 1)[0]:
            raise ConfigError(f"unexpected argument {arg!r}; config overrides look like --section.key=value")
        name, eq, text = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(args):
                raise ConfigError(f"--{name} needs a value: --{name}=VALUE")
            text = args[i + 1]
            i += 1
        section, _, key = name.partition(".")
        if not section or not key or "." in key:
            raise ConfigError(f"bad override --{name}; use --section.key=value")
        overrides.setdefault(section, {})[key] = parse_value(text)
        i += 1
    return overrides


def load_config(env: str, overrides: dict | None = None) -> dict:
    """The resolved config for env: default.toml < ENV.toml < overrides, validated."""
    env = env.lower()
    if env not in ENVS:
        raise ConfigError(f"unknown env {env!r}; fastvec-train knows {sorted(ENVS)}")
    defaults = load_toml(CONFIG_DIR / "default.toml")
    config = copy.deepcopy(defaults)
    env_file = CONFIG_DIR / f"{env}.toml"
    if env_file.exists():
        config = merge(config, load_toml(env_file), env_file.name, defaults)
    config = merge(config, overrides or {}, "the command line", defaults)
    config["env"]["name"] = env
    apply_selfplay(config)
    validate(config)
    return config


def load_run_config(run_dir: Path, env: str, overrides: dict | None = None) -> dict:
    """The config saved in RUN_DIR/config.toml (for --resume), with command-line overrides on top."""
    saved_path = Path(run_dir) / "config.toml"
    if not saved_path.is_file():
        raise ConfigError(f"--resume={run_dir}: no config.toml there; give the run directory fastvec-train wrote")
    saved = load_toml(saved_path)
    saved_env = saved.get("env", {}).get("name")
    if saved_env != env.lower():
        raise ConfigError(f"--resume={run_dir} is a {saved_env!r} run, not {env!r}")
    defaults = load_toml(CONFIG_DIR / "default.toml")
    config = merge(copy.deepcopy(defaults), saved, str(saved_path), defaults)
    config = merge(config, overrides or {}, "the command line", defaults)
    apply_selfplay(config)
    validate(config)
    return config


def env_params(config: dict) -> dict:
    """The [env] keys that are the env's own compile-time parameters (e.g. frameskip)."""
    return {k: v for k, v in config["env"].items() if k not in ENV_TRAINER_KEYS and k != "name"}


def apply_selfplay(config: dict) -> None:
    """Self-play trains a policy on every seat, so the env's bot switch (selfplay.bot_switch_param, e.g.
    pong_bot) is turned off in the resolved config that the run records."""
    selfplay = config["selfplay"]
    if selfplay["enabled"] and selfplay["bot_switch_param"]:
        config["env"][selfplay["bot_switch_param"]] = 0


def validate(config: dict) -> None:
    """Check values the types alone do not: ranges, choices, divisibility; and the env's parameters."""
    train, policy, selfplay = config["train"], config["policy"], config["selfplay"]
    try:
        resolve_defines(config["env"]["name"], env_params(config))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[env]: {err}") from None
    checks = [
        (config["env"]["num_envs"] >= 1, "env.num_envs must be >= 1"),
        (train["device"] in ("auto", "cpu", "cuda"), f"train.device={train['device']!r}: use cpu, cuda or auto"),
        (train["gpus"] >= 1, f"train.gpus={train['gpus']} must be >= 1"),
        (train["optimizer"] in ("adam", "muon"), f"train.optimizer={train['optimizer']!r}: use adam or muon"),
        (train["precision"] in ("fp32", "tf32", "bf16"),
         f"train.precision={train['precision']!r}: use fp32, tf32 or bf16"),
        (policy["kind"] in ("mingru", "mlp"), f"policy.kind={policy['kind']!r}: use mingru or mlp"),
        (policy["hidden"] >= 1 and policy["layers"] >= 1, "policy.hidden and policy.layers must be >= 1"),
        (train["horizon"] >= 1, "train.horizon must be >= 1"),
        (train["bptt_horizon"] >= 1 and train["horizon"] % train["bptt_horizon"] == 0,
         f"train.bptt_horizon={train['bptt_horizon']} must divide train.horizon={train['horizon']}"),
        (train["minibatch_size"] >= train["bptt_horizon"] and train["minibatch_size"] % train["bptt_horizon"] == 0,
         f"train.minibatch_size={train['minibatch_size']} must be a multiple of "
         f"train.bptt_horizon={train['bptt_horizon']}"),
        (train["update_epochs"] >= 1, "train.update_epochs must be >= 1"),
        (train["learning_rate"] > 0, "train.learning_rate must be > 0"),
        (0 <= train["gamma"] <= 1 and 0 <= train["gae_lambda"] <= 1, "train.gamma and train.gae_lambda must be in [0, 1]"),
        (train["total_timesteps"] >= 1, "train.total_timesteps must be >= 1"),
        (config["eval"]["episodes"] >= 1, "eval.episodes must be >= 1"),
        (selfplay["pool_size"] >= 1, "selfplay.pool_size must be >= 1"),
        (selfplay["refresh_interval"] >= 1, "selfplay.refresh_interval must be >= 1 (updates between snapshots)"),
        (0 <= selfplay["latest_prob"] <= 1, "selfplay.latest_prob must be a probability in [0, 1]"),
        (selfplay["eval_interval"] >= 0 and selfplay["eval_games"] >= 1 and selfplay["eval_past"] >= 0,
         "selfplay.eval_interval and selfplay.eval_past must be >= 0, selfplay.eval_games >= 1"),
    ]
    params = ENVS[config["env"]["name"]].params
    for key in ("bot_switch_param", "bot_level_param"):
        if selfplay[key] and selfplay[key] not in params:
            raise ConfigError(f"selfplay.{key}={selfplay[key]!r} is not a parameter of {config['env']['name']}; "
                              f"its parameters are {sorted(params)} (\"\" for an env without a bot)")
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)


def rollout_sizes(train: dict, num_envs: int, num_agents: int) -> tuple[int, int, int, int, int]:
    """The derived sizes both trainers share: (rows R = envs x agents, horizon T, bptt K,
    segments T / K, samples per rollout R x T), with the minibatch checked against a rollout."""
    rows, horizon, bptt = num_envs * num_agents, train["horizon"], train["bptt_horizon"]
    samples = rows * horizon
    if train["minibatch_size"] > samples:
        raise ValueError(f"train.minibatch_size={train['minibatch_size']} is larger than a rollout "
                         f"({rows} rows x horizon {horizon} = {samples} samples); lower it "
                         f"or raise env.num_envs / train.horizon")
    return rows, horizon, bptt, horizon // bptt, samples


def to_toml(config: dict) -> str:
    """The config as TOML text (flat tables of str, bool, int, float: all a config holds)."""

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)

    lines = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {value(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)
