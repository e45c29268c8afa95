"""Trainer settings chosen from what an env declares (its action space, observation type and solved return): a
config layer under ENV.toml, --config and the command line, and the start-up lines naming where each
setting came from."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import textwrap
import tomllib
from pathlib import Path

from fastvec.native.env_file import define_value

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"

# The settings a user's env file or a Gymnasium id trains with, by the kind of env it declares: those of the fastvec
# config that trains an env of that kind well. Per-run counts (checkpoint_interval) stay the defaults; so does the
# step budget of the discrete kinds (their tuned envs' budgets are those games' own, and a declared target ends a
# run early), while continuous control keeps pendulum.toml's 1M steps: these settings converge well within it.
PROFILES = {
    "continuous": ("pendulum.toml", "the Gaussian head over an MLP, observation and reward normalisation",
                   ("train.checkpoint_interval",)),
    "discrete": ("cartpole.toml", "a MinGRU with Adam", ("train.checkpoint_interval", "train.total_timesteps")),
    "bytes": ("breakout-minatar.toml", "a wide MLP over many envs", ("train.checkpoint_interval",
                                                                      "train.total_timesteps")),
    "mujoco": ("mujoco.toml", "CleanRL's continuous PPO for MuJoCo over a vectorised batch",
               ("train.checkpoint_interval",)),
    "mpe": ("mpe.toml", "JaxMARL's IPPO for MPE: one MLP every agent shares, reading its agent id",
            ("train.checkpoint_interval",)),
    "smax": ("smax.toml", "JaxMARL's IPPO for SMAX: one policy every agent shares, reading its agent id, over "
             "masked actions", ("train.checkpoint_interval",)),
}
PROFILE_SECTIONS = ("env", "policy", "train")


@dataclasses.dataclass(frozen=True)
class Declared:
    """What an env declares, each fact None where it says nothing; `where` names, per fact, who declares it
    (e.g. "ACTION_SPACE FV_BOX in continuous_env.h")."""

    name: str
    actions: str | None = None  # "continuous" (Box) or "discrete" (Discrete, MultiDiscrete)
    observations: str | None = None  # "floats" or "bytes"
    reward_threshold: float | None = None
    where: dict = dataclasses.field(default_factory=dict)
    # "mujoco", "mpe", "smax": a MuJoCo task or a team env, which share their family's settings (mujoco.toml, ...)
    family: str | None = None

    @property
    def kind(self) -> str | None:
        """The PROFILES entry the env trains with (None: a built-in env, which has its own ENV.toml)."""
        if self.actions is None:
            return None
        if self.family is not None:
            return self.family
        return "continuous" if self.actions == "continuous" else "bytes" if self.observations == "bytes" else "discrete"


def _number(text: str, name: str, where: str) -> float:
    """A define's value as a number: 475, 0.9f, (-100.0); a ValueError naming it otherwise."""
    try:
        value = float(text.strip("() ").rstrip("fFlL"))
    except ValueError:
        raise ValueError(f"#define {name} {text} in {where} is not a number; write e.g. #define {name} 0.9") from None
    if not math.isfinite(value):
        raise ValueError(f"#define {name} {text} in {where} must be a finite number")
    return value


def declared_by_source(path: Path, defines: dict) -> Declared:
    """An env file's declarations (read from its text, as fastvec.h defines them): ACTION_SPACE FV_BOX (continuous
    actions, else discrete), OBS_T unsigned char (byte observations, else floats), and, optional, the trainer's
    REWARD_THRESHOLD (the mean return that counts as solved). --env.reward_threshold=X (a -D define) wins over the
    file's #define."""
    path, file = Path(path), Path(path).name
    action = define_value(path, "ACTION_SPACE") or "FV_DISCRETE"
    obs_t = define_value(path, "OBS_T") or "float"
    where = {"actions": f"ACTION_SPACE {action} in {file}" if action != "FV_DISCRETE" else f"NUM_ACTIONS in {file}",
             "observations": f"OBS_T {obs_t} in {file}" if obs_t != "float" else f"no OBS_T in {file}"}
    facts = {}
    given = defines.get("REWARD_THRESHOLD")
    value = define_value(path, "REWARD_THRESHOLD") if given is None else str(given)
    if value is not None:
        facts["reward_threshold"] = _number(value, "REWARD_THRESHOLD", file)
        where["reward_threshold"] = f"--env.reward_threshold={given}" if given is not None else \
            f"#define REWARD_THRESHOLD in {file}"
    return Declared(file, "continuous" if action == "FV_BOX" else "discrete",
                    "bytes" if re.fullmatch(r"unsigned\s+char|uint8_t", obs_t) else "floats", where=where, **facts)


def declared_by_gym(gym_id: str, make_args: dict) -> Declared:
    """A Gymnasium id's declarations: its registration's reward_threshold, and the spaces of one env made with
    make_args (an env that cannot be made declares no spaces here: making the batch reports why)."""
    import gymnasium
    import numpy as np
    name = f"gym:{gym_id}"
    from fastvec.native.mujoco.host_batch import GYM_IDS
    task = GYM_IDS.get(gym_id.lower())
    if task is not None:
        return declared_by_mujoco(task)
    try:
        spec = gymnasium.spec(gym_id)
    except (gymnasium.error.Error, ModuleNotFoundError):
        return Declared(name)
    facts, where = {}, {}
    if spec.reward_threshold is not None:
        facts["reward_threshold"] = float(spec.reward_threshold)
        where["reward_threshold"] = f"{gym_id}'s reward_threshold (its Gymnasium registration)"
    try:
        env = gymnasium.make(gym_id, **make_args)
    except Exception:  # noqa: BLE001 - whatever make raises, make_batch raises again with the fix
        return Declared(name, where=where, **facts)
    try:
        action_space, obs_space = env.action_space, env.observation_space
    finally:
        env.close()
    continuous = isinstance(action_space, gymnasium.spaces.Box)
    byte_obs = getattr(obs_space, "dtype", None) == np.uint8
    where["actions"] = f"{gym_id}'s action space {action_space}"
    where["observations"] = f"{gym_id}'s observation space of {getattr(obs_space, 'dtype', '?')}"
    return Declared(name, "continuous" if continuous else "discrete", "bytes" if byte_obs else "floats",
                    where=where, **facts)


def declared_by_mujoco(task: str) -> Declared:
    """A fastvec MuJoCo task's declarations, without building it: Box controls and float observations (every
    task's), the reward_threshold of Gymnasium's own v5 registration where it has one."""
    import gymnasium
    from fastvec.native.mujoco.host_batch import gym_id, train_name
    where = {"actions": f"{gym_id(task)}'s Box of controls", "observations": f"{gym_id(task)}'s float observations"}
    facts = {}
    threshold = gymnasium.spec(f"{task}-v5").reward_threshold
    if threshold is not None:
        facts["reward_threshold"] = float(threshold)
        where["reward_threshold"] = f"{task}-v5's reward_threshold (its Gymnasium registration)"
    return Declared(train_name(task), "continuous", "floats", where=where, family="mujoco", **facts)


def declared_by_builtin(name: str) -> Declared:
    """A built-in env's declarations for the trainer: the reward_threshold of its Gymnasium registration (its
    settings are fastvec/configs/NAME.toml's, its step limit the registry's)."""
    from fastvec import REWARD_THRESHOLDS
    from fastvec.native import ENVS
    gym_id = ENVS[name].gym_id
    threshold = REWARD_THRESHOLDS.get(gym_id)
    if threshold is None:
        return Declared(name)
    return Declared(name, reward_threshold=threshold,
                    where={"reward_threshold": f"{gym_id}'s reward_threshold (as Gymnasium's own env)"})


def profile(kind: str) -> dict:
    """PROFILES[kind]'s settings as config overrides: its config file's [env], [policy] and [train] keys, less
    the ones the profile leaves at their defaults."""
    file, _, dropped = PROFILES[kind]
    with open(CONFIG_DIR / file, "rb") as f:
        values = tomllib.load(f)
    return {section: {name: value for name, value in values.get(section, {}).items()
                      if f"{section}.{name}" not in dropped}
            for section in PROFILE_SECTIONS if values.get(section)}


def layer(declared: Declared) -> dict:
    """The config overrides declared implies: its kind's profile and its target."""
    out = profile(declared.kind) if declared.kind else {}
    if declared.reward_threshold is not None:
        out.setdefault("train", {})["target_return"] = float(declared.reward_threshold)
    return out


def describe(config: dict, declared: Declared) -> list[str]:
    """The start-up lines: the settings chosen from what the env declares, where they came from, and which the
    config overrides (ENV.toml, --config or the command line)."""
    implied = layer(declared)
    lines = []

    def settings(keys) -> str:
        shown = []
        for path in keys:
            section, name = path.split(".")
            value, chosen = config[section][name], implied[section][name]
            text = f"{path}={_text(chosen)}"
            shown.append(text if value == chosen else f"{text} (overridden: {_text(value)})")
        return ", ".join(shown)

    if declared.kind:
        file, what, _ = PROFILES[declared.kind]
        keys = [f"{s}.{n}" for s, values in profile(declared.kind).items() for n in values]
        own = CONFIG_DIR / f"{declared.name}.toml"  # a MuJoCo task's own settings (reacher.toml), if any
        over = f", then fastvec/configs/{own.name}'s over them" if declared.family and own.is_file() else ""
        lines.append(f"{declared.name} declares {declared.actions} actions ({declared.where['actions']}) and "
                     f"{declared.observations[:-1]} observations ({declared.where['observations']}): the "
                     f"{declared.kind} settings of fastvec/configs/{file}, {what}{over}:")
        lines += textwrap.wrap(settings(keys), 94, initial_indent="  ", subsequent_indent="  ",
                               break_on_hyphens=False)
    if declared.reward_threshold is not None:
        lines.append(f"target from {declared.where['reward_threshold']}: {settings(['train.target_return'])}")
    train = config["train"]
    if math.isfinite(train["target_return"]):
        then = "stops there" if train["stop_at_target"] else "trains on (train.stop_at_target=false)"
        lines.append(f"target: the mean {train['target_metric']} of the last {train['target_episodes']} episodes "
                     f">= {_text(train['target_return'])}; the run {then}")
    if declared.kind:
        source = config["env"]["source"]
        env = os.path.relpath(source) if source and not os.path.relpath(source).startswith("..") else \
            source or declared.name
        lines.append(f"any --section.key=value overrides these; to tune them for this env: fastvec-sweep {env}, "
                     f"then fastvec-train {env} --config=SWEEP_DIR/best.toml (docs/sweeps.md)")
    return lines


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)
