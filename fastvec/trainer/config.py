"""Trainer configuration: the defaults of config_keys.KEYS, overridden by fastvec/configs/ENV.toml, overridden by
`--section.key=value` arguments; validate() is the one place that checks a config. `python -m
fastvec.trainer.config > fastvec/configs/default.toml` regenerates the documented defaults from KEYS."""

from __future__ import annotations

import copy
import difflib
import hashlib
import math
import os
import tomllib
from pathlib import Path

from fastvec.native import ENVS, check_define_names, resolve_defines
from fastvec.native.env_file import check_env_file_defines
from fastvec.native.mujoco.host_batch import gym_id as mujoco_gym_id, task_of as mujoco_task_of, train_name
from fastvec.trainer.config_keys import BY_PATH, KEYS, SECTIONS, ConfigError, Key, section_keys
from fastvec.trainer.config_text import (  # noqa: F401 - to_toml, default_toml, read_run_config: config's API
    RUN_CONFIG_END, RUN_CONFIG_HEAD, _described, _key_lines, _toml_value, default_toml, read_run_config, to_toml)
from fastvec.trainer.env_defaults import (Declared, declared_by_builtin, declared_by_gym,
                                          declared_by_source, layer)
from fastvec.trainer import teams

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

# [env] keys the trainer uses itself; any other [env] key is an env parameter (checked by the env).
ENV_TRAINER_KEYS = set(section_keys("env"))
# ENV as a Gymnasium id: fastvec-train gym:CartPole-v1 (the same as --env.gym_id=CartPole-v1).
GYM_PREFIX = "gym:"
# A built-in env by its registered Gymnasium id, any case: fastvec/CartPole -> cartpole.
REGISTERED_IDS = {info.gym_id.lower(): name for name, info in ENVS.items()}


def load_toml(path: Path) -> dict:
    """A TOML file as a dict; UTF-8 with or without the byte order mark that Windows editors write."""
    try:
        return tomllib.loads(Path(path).read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start}): "
                          f"save it as UTF-8") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: {err}") from None


def parse_value(text: str):
    """A command-line value as TOML (so 20_000_000, 3e-4, true, "x" all work); bare words stay strings."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def defaults() -> dict:
    """A complete config of defaults: {section: {name: default}} for every key, without env.name."""
    return {section: {name: key.default for name, key in section_keys(section).items()} for section in SECTIONS}


def _checked_type(key: Key, value, where: str):
    """value, if it has key's type (an int where a float is expected becomes a float); else a ConfigError."""
    if key.type is bool:
        ok = isinstance(value, bool)
    elif key.type is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif key.type is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        try:
            value = float(value) if ok else value
        except OverflowError:  # an int beyond any float
            raise ConfigError(f"{where} = {value!r} must be a finite number (default {key.default!r})") from None
    else:
        ok = isinstance(value, key.type)
    if not ok:
        kind = key.type.__name__
        raise ConfigError(f"{where} = {value!r} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind} "
                          f"(default {key.default!r})")
    return value


def _unknown_key(section: str, name: str, source: str) -> ConfigError:
    names = list(section_keys(section))
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {section}.{close[0]}? " if close else ""
    return ConfigError(f"unknown config key {section}.{name} in {source}; {hint}"
                       f"[{section}] keys are: {', '.join(names)}")


def merge(base: dict, override: dict, source: str, allow_env_name: bool = False) -> dict:
    """base updated with override; keys must be in KEYS (any other [env] key is an env parameter), and their
    values of the key's type. env.name comes from the ENV argument (or a saved run's config.toml) only."""
    out = copy.deepcopy(base)
    for section, values in override.items():
        if section not in SECTIONS:
            raise ConfigError(f"unknown config section [{section}] in {source}; sections are {list(SECTIONS)}")
        if not isinstance(values, dict):
            raise ConfigError(f"{section} in {source} must be a table [{section}]")
        for name, value in values.items():
            where = f"{section}.{name} in {source}"
            key = BY_PATH.get(f"{section}.{name}")
            if key is not None:
                value = _checked_type(key, value, where)
            elif section == "env" and name == "name" and not allow_env_name:
                raise ConfigError(f"env.name in {source}: the env is fastvec-train's ENV argument, not a key")
            elif section != "env" and not (section == "sweep" and "." in name):  # a search-space entry
                raise _unknown_key(section, name, source)
            out[section][name] = value
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


def looks_like_path(env: str) -> bool:
    """ENV names an env file (not a built-in or a run's name): it ends in .h or holds a path separator."""
    return env.endswith(".h") or os.sep in env or (os.altsep is not None and os.altsep in env)


def parse_env_argument(env: str) -> tuple[str, dict]:
    """fastvec-train's ENV argument as (env.name, the [env] keys it sets): cartpole -> ("cartpole", {}) (built-in,
    any case); path/to/my_env.h -> ("my_env.h", {"source": "/abs/path/to/my_env.h"}); gym:CartPole-v1 ->
    ("gym:CartPole-v1", {"gym_id": "CartPole-v1"}); my_env -> ("my_env", {}) (with --env.source or --env.gym_id)."""
    if not isinstance(env, str) or not env:
        raise ConfigError("ENV is empty; give a built-in env, a path to an env file (PATH.h) or gym:ID")
    if env.startswith(GYM_PREFIX):
        gym_id = env[len(GYM_PREFIX):]
        if not gym_id:
            raise ConfigError(f"ENV {env!r} names no Gymnasium id; e.g. fastvec-train gym:CartPole-v1")
        return env, {"gym_id": gym_id}
    if env.lower() in ENVS:
        return env.lower(), {}
    if env.lower() in REGISTERED_IDS and not Path(env).is_file():
        return REGISTERED_IDS[env.lower()], {}
    task = mujoco_task_of(env) if not Path(env).is_file() else None
    if task is not None:  # a MuJoCo task: trained as its registered Gymnasium id, over fastvec's C batch
        return train_name(task), {"gym_id": mujoco_gym_id(task)}
    if (team := teams.team_env_name(env)) is not None and not Path(env).is_file():  # simple_spread, smax:3m
        return team, {}
    if looks_like_path(env) or Path(env).is_file():
        path = Path(env).expanduser()
        if not path.is_file():
            close = difflib.get_close_matches(env.lower(), [*ENVS, *REGISTERED_IDS], n=1, cutoff=0.6)
            suggestion = ENVS[REGISTERED_IDS[close[0]]].gym_id if close and close[0] in REGISTERED_IDS else \
                close[0] if close else ""
            hint = f"; did you mean {suggestion!r}?" if close else ""
            raise ConfigError(f"env file {env!r} not found{hint} (ENV is a built-in env {sorted(ENVS)} or its "
                              f"registered id, e.g. fastvec/CartPole; a path to an env file; or gym:ID)")
        return path.name, {"source": str(path.resolve())}
    return env, {}


def run_env_name(env: str) -> str:
    """The env.name a run of ENV records (parse_env_argument's), without looking for an env file: my_env.h for
    path/to/my_env.h, gym:ID for gym:ID, a built-in env's name in lower case."""
    if env.startswith(GYM_PREFIX):
        return env
    if env.lower() in ENVS:
        return env.lower()
    if env.lower() in REGISTERED_IDS:
        return REGISTERED_IDS[env.lower()]
    if mujoco_task_of(env) is not None:
        return train_name(mujoco_task_of(env))
    if teams.team_env_name(env) is not None:
        return teams.team_env_name(env)
    return Path(env).name if looks_like_path(env) else env


def env_kind(config: dict) -> str:
    """How the config's env is built: "builtin" (a registered fastvec env), "team" (an MPE or SMAX scenario, by
    name: teams.py), "source" (a user's env file, env.source) or "gym" (a Gymnasium id, env.gym_id)."""
    env = config["env"]
    if env.get("gym_id") or env.get("source"):
        return "gym" if env.get("gym_id") else "source"
    return "team" if teams.team_env_name(env.get("name")) == env.get("name") else "builtin"


def _unknown_env(env: str) -> ConfigError:
    """(fastvec-train's cli adds the closest built-in names to this message.)"""
    return ConfigError(f"unknown env {env.lower()!r}; fastvec-train trains a built-in env {sorted(ENVS)}, a MuJoCo "
                       f"task (hopper, halfcheetah, ...: fastvec-train --list), a team of agents (an MPE scenario, "
                       f"e.g. simple_spread, or a SMAX one, e.g. smax:3m), a user's env "
                       f"file (fastvec-train path/to/my_env.h, or NAME --env.source=PATH) or a Gymnasium id "
                       f"(fastvec-train gym:CartPole-v1)")


def _apply_env_argument(config: dict, env: str, implied: dict, source: str) -> dict:
    """config with the [env] keys the ENV argument implies; a command line that sets them otherwise is refused."""
    for key, value in implied.items():
        given = config["env"].get(key)
        # ENV's path wins over an env.source carried along (fastvec-train PATH.h --eval=CKPT takes the checkpoint's
        # [env] keys as overrides: the file may have moved since)
        if given and given != value and key != "source":
            raise ConfigError(f"ENV {env!r} sets env.{key}={value!r}, but {source} sets env.{key}={given!r}; "
                              f"give one of them")
        config["env"][key] = value
    if config["env"]["source"]:  # recorded absolute, so --resume and --eval find it from any directory
        config["env"]["source"] = str(Path(config["env"]["source"]).expanduser().resolve())
    return config


def declared_by_env(name: str, env: dict) -> Declared:
    """What the env of [env] keys `env` declares (env_defaults): a built-in env `name`'s target, or an env file's
    (env.source) or Gymnasium id's (env.gym_id) spaces and target; a ConfigError for a declaration
    that is not a number. A file that does not exist declares nothing here (validate names it)."""
    params = {k: v for k, v in env.items() if k not in ENV_TRAINER_KEYS and k != "name"}
    if env.get("gym_id"):
        return declared_by_gym(env["gym_id"], params)
    if env.get("source"):
        path = Path(env["source"]).expanduser()
        try:
            return declared_by_source(path, {str(k).upper(): v for k, v in params.items()}) if path.is_file() \
                else Declared(name)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    if teams.team_env_name(name) == name:
        return teams.declared(name)
    return declared_by_builtin(name) if name in ENVS else Declared(name)


def load_config(env: str, overrides: dict | None = None) -> dict:
    """The resolved, complete config for env (parse_env_argument: a built-in env, PATH.h or gym:ID): KEYS'
    defaults < what the env declares (env_defaults: its kind's settings and its target) < ENV.toml
    (built-in envs and MuJoCo tasks only) < overrides, validated."""
    overrides = overrides or {}
    given_source = overrides.get("env", {}).get("source")
    if isinstance(env, str) and looks_like_path(env) and not Path(env).expanduser().is_file() and given_source \
            and Path(given_source).name == Path(env).name:
        name, implied = Path(env).name, {}  # a run's file name, found where --env.source (e.g. its checkpoint) says
    else:
        name, implied = parse_env_argument(env)
    task = mujoco_task_of(name) if implied.get("gym_id") else None  # a MuJoCo task: its own TOML too (reacher.toml)
    own_task = task is not None and implied == {"gym_id": mujoco_gym_id(task)}
    custom = (implied and not own_task) or any(overrides.get("env", {}).get(key) for key in ("source", "gym_id"))
    if not custom and not own_task and name not in ENVS and teams.team_env_name(name) != name:
        raise _unknown_env(env)
    config = merge(defaults(), layer(declared_by_env(name, {**overrides.get("env", {}), **implied})),
                   "what the env declares")
    env_file = CONFIG_DIR / f"{name}.toml"
    if not custom and env_file.exists():
        config = merge(config, load_toml(env_file), env_file.name)
    config = merge(config, overrides, "the command line")
    config = _apply_env_argument(config, env, implied, "the command line")
    config["env"]["name"] = name
    apply_selfplay(config)
    validate(config)
    return config


def load_run_config(run_dir: Path, env: str, overrides: dict | None = None) -> dict:
    """The config saved in RUN_DIR/config.toml (for --resume), with command-line overrides on top. A file that
    does not parse, was cut short or lacks keys it must have is refused (a ConfigError saying it is damaged),
    never completed with defaults; only a file from a fastvec older than its keys gets their defaults.
    A user's env file is found where the run recorded it (env.source), or at the path given as ENV (or with
    --env.source): a file that moved is resumed from its new path, a missing one is a ConfigError saying so."""
    saved_path = Path(run_dir) / "config.toml"
    if not saved_path.is_file():
        raise ConfigError(f"--resume={run_dir}: no config.toml there; give the run directory fastvec-train wrote")
    saved = read_run_config(saved_path)
    saved_env = saved["env"].get("name")
    if not isinstance(saved_env, str):
        raise ConfigError(f"{saved_path} names no env (env.name); give the run directory fastvec-train wrote")
    given_path = isinstance(env, str) and looks_like_path(env) and not env.startswith(GYM_PREFIX)
    if given_path and Path(env).expanduser().is_file():
        name, implied = parse_env_argument(env)
    else:  # the run's name (a user env's file name, e.g. my_env.h, need not exist here: the run recorded it)
        name, implied = (env.lower() if env.lower() in ENVS else REGISTERED_IDS.get(env.lower(), env)), {}
    if saved_env != name:
        raise ConfigError(f"--resume={run_dir} is a {saved_env!r} run, not {env!r}")
    config = merge(defaults(), saved, str(saved_path), allow_env_name=True)
    if implied.get("source"):  # the env file as given now (it may have moved since the run was saved)
        config["env"]["source"] = implied["source"]
    config = merge(config, overrides or {}, "the command line")
    config = _apply_env_argument(config, env, {}, "the command line")
    source = config["env"]["source"]
    if source and not Path(source).is_file():
        raise ConfigError(f"--resume={run_dir}: the run's env file {source} is gone (moved or deleted); give its "
                          f"new path as ENV: fastvec-train NEW/PATH/{Path(source).name} --resume={run_dir}")
    apply_selfplay(config)
    validate(config)
    return config


def env_params(config: dict) -> dict:
    """The [env] keys that are the env's own parameters: a built-in env's compile-time parameters (e.g.
    frameskip), a user env file's -D defines (source_defines), or a Gymnasium env's gymnasium.make arguments."""
    return {k: v for k, v in config["env"].items() if k not in ENV_TRAINER_KEYS and k != "name"}


def source_defines(source: str, params) -> dict[str, int | float]:
    """The -D defines of the user env file `source` from its [env] parameters `params` (names upper-cased, as
    make_vec_from_source does; true/false as 1/0), or a ConfigError naming a parameter that is not a C identifier
    or not a number."""
    defines = {}
    for key, value in params.items():
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, (int, float)) or (isinstance(value, float) and value != value):
            raise ConfigError(f"env.{key}={value!r}: a parameter of an env file is a -D define, an int or a float "
                              f"(e.g. --env.{key}=8)")
        if isinstance(value, int) and not -2**63 <= value < 2**63:
            raise ConfigError(f"env.{key}={value!r} does not fit in 64 bits")
        defines[str(key).upper()] = value
    try:  # only the parameters the env file declares (a misspelled one would be ignored by the compiler)
        check_env_file_defines(Path(source), check_define_names(defines))
    except (ValueError, TypeError) as err:
        raise ConfigError(f"[env]: {err}") from None
    return defines


def source_sha256(path) -> str:
    """The sha256 of a user env file (checkpoints record it; --resume and --eval warn when it changed)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def apply_selfplay(config: dict) -> None:
    """Self-play trains a policy on every seat, so the env's bot switch (selfplay.bot_switch_param, e.g.
    pong_bot) is turned off in the resolved config that the run records."""
    selfplay = config["selfplay"]
    info = ENVS.get(config["env"].get("name")) if env_kind(config) == "builtin" else None
    if selfplay["enabled"] and info is not None and selfplay["bot_switch_param"] in info.params:
        config["env"][selfplay["bot_switch_param"]] = 0


# ------------------------------------------------------------------------------------------------
# VALIDATION


def validate(config: dict) -> None:
    """Raise a ConfigError naming the key, the value and the fix for the first problem of a config: a
    missing, unknown or mistyped key, a value outside its key's choices or range, a self-play parameter
    the env lacks, a bad env parameter, or a combination of keys the trainers refuse (_cross_key_problems).
    Only the minibatch against a rollout's size waits for rollout_sizes, which knows the env's agents."""
    for section in [*SECTIONS, *(section for section in config if section not in SECTIONS)]:
        if section not in SECTIONS:
            raise ConfigError(f"unknown config section [{section}]; sections are {list(SECTIONS)}")
        if section not in config:
            raise ConfigError(f"the config lacks its [{section}] section; load_config and load_run_config "
                              f"give complete configs")
        for name in config[section]:
            if f"{section}.{name}" not in BY_PATH and section != "env" and not (section == "sweep" and "." in name):
                raise _unknown_key(section, name, "the config")
    for key in KEYS:
        if key.name not in config[key.section]:
            raise ConfigError(f"the config lacks {key.path}; load_config and load_run_config fill in every "
                              f"default (default {key.default!r})")
        value = _checked_type(key, config[key.section][key.name], key.path)
        problem = key.problem(value)
        if problem:
            raise ConfigError(problem)
    env = config["env"].get("name")
    if not isinstance(env, str) or not env:
        raise ConfigError(f"env.name: the config names no env; use one of {sorted(ENVS)}, PATH.h or gym:ID")
    kind = env_kind(config)
    if kind == "builtin":
        if env not in ENVS:
            raise _unknown_env(env)
        _check_builtin_env(config, env)
    elif kind == "team":
        try:
            teams.check_params(env, env_params(config))
        except (TypeError, ValueError) as err:
            raise ConfigError(f"[env]: {err}") from None
    else:
        _check_custom_env(config, env, kind)
    for problem in _cross_key_problems(config):
        raise ConfigError(problem)


def _check_builtin_env(config: dict, env: str) -> None:
    selfplay, params = config["selfplay"], ENVS[env].params
    for name in ("bot_switch_param", "bot_level_param"):
        if selfplay[name] and selfplay[name] not in params:
            raise ConfigError(f"selfplay.{name}={selfplay[name]!r} is not a parameter of {env}; "
                              f"its parameters are {sorted(params)} (\"\" for an env without a bot)")
    try:
        resolve_defines(env, env_params(config))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[env]: {err}") from None


def _check_custom_env(config: dict, env: str, kind: str) -> None:
    """A user's env file (env.source) or a Gymnasium id (env.gym_id): one of them, under a name that is not a
    built-in env's, self-play only for an env file (no bot switch); the file exists, its defines are numbers."""
    source, gym_id = config["env"]["source"], config["env"]["gym_id"]
    if source and gym_id:
        raise ConfigError(f"env.source={source!r} and env.gym_id={gym_id!r}: train one env, a file or a Gymnasium id")
    if env.lower() in ENVS:
        what = f"env.source={source!r}" if source else f"env.gym_id={gym_id!r}"
        raise ConfigError(f"{what} under the name {env!r}, a built-in env's; give the file's path as ENV "
                          f"(fastvec-train PATH.h), gym:ID, or another name")
    selfplay = config["selfplay"]
    for name in ("enabled", "bot_switch_param", "bot_level_param"):
        if selfplay[name] and (kind == "gym" or name != "enabled"):
            raise ConfigError(f"selfplay.{name}={selfplay[name]!r}: self-play trains a multi-agent env file or a "
                              f"built-in game ({', '.join(sorted(n for n in ENVS if n == 'pong'))}), and a bot "
                              f"switch is a built-in game's parameter; not for {env}")
    if kind == "source":
        if not Path(source).is_file():
            raise ConfigError(f"env.source={source!r}: no such env file; give its path as ENV "
                              f"(fastvec-train PATH.h) or --env.source=PATH")
        source_defines(source, env_params(config))
        return
    if config["env"]["max_episode_steps"] == 0:
        raise ConfigError(f"env.max_episode_steps=0 (never truncate) is not available for gym:{gym_id}: its "
                          "registration's TimeLimit applies; give a step count (> 0) or -1 (the registration's)")
    try:
        import gymnasium
    except ImportError:  # pragma: no cover - gymnasium is a dependency
        raise ConfigError(f"env.gym_id={gym_id!r} needs gymnasium: pip install gymnasium") from None
    try:
        gymnasium.spec(gym_id)
    except (gymnasium.error.Error, ModuleNotFoundError) as err:
        raise ConfigError(f"env.gym_id={gym_id!r}: {str(err).strip()}") from None


def _cross_key_problems(config: dict):
    """Messages for the combinations of keys that cannot run, in the order they are checked."""
    train, ev, selfplay = config["train"], config["eval"], config["selfplay"]
    horizon, bptt, minibatch = train["horizon"], train["bptt_horizon"], train["minibatch_size"]
    if horizon % bptt:
        yield (f"train.bptt_horizon={bptt} must divide train.horizon={horizon}; e.g. "
               f"--train.bptt_horizon={horizon}")
    if minibatch % bptt:
        yield (f"train.minibatch_size={minibatch} must be a multiple of train.bptt_horizon={bptt}; e.g. "
               f"--train.minibatch_size={max(minibatch // bptt, 1) * bptt}")
    yield from world_size_problems(config, train["gpus"], f"train.gpus={train['gpus']}")
    if config["policy"]["critic"] == "separate" and config["policy"]["kind"] != "mlp":
        yield "policy.critic=separate is for an MLP policy; add --policy.kind=mlp (a MinGRU's critic shares its torso)"
    policy = config["policy"]
    if policy["critic_input"] == "world_state" and (policy["critic"] != "separate" or train["norm_obs"]):
        yield ("policy.critic_input=world_state is a critic of its own over the raw world state: add "
               "--policy.critic=separate --policy.kind=mlp, and --train.norm_obs=false")
    if selfplay["enabled"] and (policy["agent_id"] or policy["critic_input"] == "world_state"):
        yield ("selfplay.enabled=true trains one seat per game, which neither an agent id nor a world state fits: "
               "add --policy.agent_id=false --policy.critic_input=local")
    if policy["activation"] != "relu" and policy["kind"] != "mlp":
        yield (f"policy.activation={policy['activation']} is for an MLP policy; add --policy.kind=mlp (a MinGRU's "
               "layers have their gates' own nonlinearities)")
    if ev["opponent"] == "bot" and not (selfplay["bot_switch_param"] and selfplay["bot_level_param"]):
        yield (f"eval.opponent=bot: {config['env']['name']} has no scripted bot (selfplay.bot_switch_param / "
               f"bot_level_param are empty)")
    if ev["render"] and Path(ev["render"]).suffix.lower() not in (".gif", ".mp4"):
        yield f"eval.render={ev['render']!r}: give a path ending in .gif or .mp4"


def check_with_env(config, num_agents: int, stat_names) -> None:
    """The checks that need the built env, made once a run's batch exists (config: a settings.Config): self-play
    needs several agents per game, and train.target_metric must be a metric the env logs."""
    if config.selfplay.enabled and num_agents < 2:
        raise ConfigError(f"selfplay.enabled=true needs a multi-agent env, and {config.env.name} with these [env] "
                          f"settings has {num_agents} agent per game; self-play trains one policy on every seat of "
                          f"a game (e.g. fastvec-train pong)")
    metrics = ["episode_return", "episode_length", *stat_names]
    if math.isfinite(config.train.target_return) and config.train.target_metric not in metrics:
        raise ConfigError(f"train.target_metric={config.train.target_metric!r} is not a logged metric of this env; "
                          f"use one of {', '.join(metrics)}")


def world_size_problems(config: dict, world_size: int, what: str):
    """What several training processes cannot do yet (world_size > 1): the CUDA trainer's data parallelism
    has neither two rollout slots nor host envs. validate() asks with train.gpus; a launcher's ranks (torchrun,
    srun, mpirun with train.gpus=1) are only known at run time, so the run can ask again: check_world_size."""
    if world_size <= 1:
        return
    train = config["train"]
    if train["device"] == "cpu":
        yield (f"several GPUs ({what}) need the CUDA trainer, but train.device=cpu; drop --train.device=cpu, "
               f"or use --train.gpus=1 for the CPU trainer")
    if train["async"]:
        yield f"train.async=true with several GPUs ({what}) is not supported yet; use --train.async=false"
    if train["env_device"] == "cpu":
        yield (f"train.env_device=cpu (host environments) with several GPUs ({what}) is not supported; "
               f"use --train.gpus=1, or --train.env_device=cuda")
    if config["selfplay"]["enabled"]:
        yield (f"selfplay.enabled=true with several GPUs ({what}) is not supported: self-play steps its games "
               f"on the host (train.env_device=cpu); use --train.gpus=1")


def check_world_size(config: dict, world_size: int, what: str | None = None) -> None:
    """Raise a ConfigError if config cannot train as world_size processes (e.g. the ranks a launcher started)."""
    for problem in world_size_problems(config, world_size, what or f"{world_size} ranks"):
        raise ConfigError(problem)


def rollout_sizes(train, num_envs: int, num_agents: int) -> tuple[int, int, int, int, int]:
    """The derived sizes both trainers share, from a Config's [train] section: (rows R = envs x agents, horizon T,
    bptt K, segments T / K, samples per rollout R x T). The minibatch is checked against a rollout here and not in
    validate(): a rollout's size needs the env's agents per game, which the built batch knows."""
    rows, horizon, bptt = num_envs * num_agents, train.horizon, train.bptt_horizon
    samples = rows * horizon
    if train.minibatch_size > samples:
        raise ConfigError(f"train.minibatch_size={train.minibatch_size} is larger than a rollout "
                          f"({rows} rows x horizon {horizon} = {samples} samples); lower it "
                          f"or raise env.num_envs / train.horizon")
    return rows, horizon, bptt, horizon // bptt, samples


# ------------------------------------------------------------------------------------------------
# TEXT: saved run configs, the generated default.toml, --help-config
def help_text(config: dict | None = None) -> str:
    """fastvec-train --help-config: every key with its value and meaning; with a resolved config, that
    config's values and its env's parameters, else the defaults."""
    values = config or defaults()
    env = config["env"]["name"] if config else ""
    layers = f"defaults < what {env} declares < {env}.toml < the command line" if config and \
        env_kind(config) == "builtin" else "defaults < what the env declares < the command line"
    lines = [f"fastvec-train config keys (--section.key=value) with {env}'s values ({layers}):" if config else "fastvec-train config keys (--section.key=value) with their defaults; "
             "fastvec-train ENV --help-config\nshows an env's values and parameters:"]
    for section in SECTIONS:
        lines.append(f"[{section}]")
        for key in section_keys(section).values():
            lines += _key_lines(f"  {key.name} = {_toml_value(values[section][key.name], pretty=True)}",
                                [_described(key)], "")
        if section == "env" and config and env_kind(config) != "builtin":
            given = env_params(config)
            what = {"source": "-D defines", "team": "keywords"}.get(env_kind(config), "gymnasium.make arguments")
            more = "fastvec-train --list names the others" if env_kind(config) == "team" else \
                "any other --env.KEY=value adds one"
            lines.append(f"  {env}'s {what} ({more}):")
            lines += [f"    {name} = {_toml_value(value)}" for name, value in given.items()] or ["    (none given)"]
        elif section == "env" and config:
            params = ENVS[env].params
            current = {**{name: param.default for name, param in params.items()}, **env_params(config)}
            lines.append(f"  {env}'s parameters:" if params else f"  ({env} has no parameters)")
            for name, param in params.items():
                lines += _key_lines(f"    {name} = {_toml_value(current[name])}",
                                    [f"{param.doc} (in [{param.low},\xa0{param.high}])"], "")
        elif section == "env":
            lines.append("  any other [env] key: a parameter of the env")
    lines.append("Caveats of each key: fastvec/configs/default.toml.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(default_toml(), end="")
