"""The typed, frozen config a run trains with (`Config`): one object per [section] whose attributes are
config_keys.KEYS (their names, types and defaults), built once from a validated config dict (`Config.of`), and
what follows from it alone (the env's kind, its step limit). `to_dict` gives the dict back (config.toml,
checkpoints)."""

from __future__ import annotations

import dataclasses
import keyword
import types
from collections.abc import Mapping

from fastvec.native import ENVS
from fastvec.trainer import teams
from fastvec.trainer.config import env_kind, validate
from fastvec.trainer.config_keys import Key, section_keys


def attribute(key: Key) -> str:
    """The Python attribute of a key: its name, with a trailing underscore where that is a keyword (train.async)."""
    return key.name + "_" if keyword.iskeyword(key.name) else key.name


def _section(section: str, class_name: str, extra: list[tuple] = ()) -> type:
    """A frozen dataclass with a field per key of `section` (its type and default), then `extra`'s fields."""
    fields = [(attribute(key), key.type, dataclasses.field(default=key.default, metadata={"key": key}))
              for key in section_keys(section).values()]
    return dataclasses.make_dataclass(class_name, [*fields, *extra], frozen=True,
                                      namespace={"__doc__": f"The [{section}] keys (config_keys.KEYS)."})


def _empty() -> Mapping:
    return types.MappingProxyType({})


# [env]: its keys, the env's name (fastvec-train's ENV) and the env's own parameters (every other [env] key).
EnvSection = _section("env", "EnvSection",
                      [("name", str, ""), ("params", Mapping, dataclasses.field(default_factory=_empty))])
PolicySection = _section("policy", "PolicySection")
TrainSection = _section("train", "TrainSection")
EvalSection = _section("eval", "EvalSection")
SelfPlaySection = _section("selfplay", "SelfPlaySection")
# [sweep]: its keys and the search space (every quoted "section.key" entry).
SweepSection = _section("sweep", "SweepSection", [("space", Mapping, dataclasses.field(default_factory=_empty))])

_CLASSES = {"env": EnvSection, "policy": PolicySection, "train": TrainSection, "eval": EvalSection,
            "selfplay": SelfPlaySection, "sweep": SweepSection}


def _build(section: str, values: dict):
    """The section object of a config dict's [section]: its keys as attributes, the rest in params/space."""
    keys = section_keys(section)
    known = {attribute(keys[name]): value for name, value in values.items() if name in keys}
    rest = types.MappingProxyType({name: value for name, value in values.items() if name not in keys
                                   and not (section == "env" and name == "name")})
    if section == "env":
        return EnvSection(**known, name=values["name"], params=rest)
    if section == "sweep":
        return SweepSection(**known, space=rest)
    return _CLASSES[section](**known)


def _section_dict(section: str, value) -> dict:
    """A section object as its config dict's [section]: the keys in KEYS' order, then [env]'s parameters and name
    (the order load_config gives), or [sweep]'s search space."""
    out = {key.name: getattr(value, attribute(key)) for key in section_keys(section).values()}
    if section == "env":
        out.update(value.params)
        out["name"] = value.name
    elif section == "sweep":
        out.update(value.space)
    return out


@dataclasses.dataclass(frozen=True)
class Config:
    """A complete, validated config: `config.train.learning_rate`, `config.env.params`, ... Built by `Config.of`;
    `replace` gives a changed copy (validated again), `to_dict` the config dict it stands for."""

    env: EnvSection
    policy: PolicySection
    train: TrainSection
    eval: EvalSection
    selfplay: SelfPlaySection
    sweep: SweepSection

    @staticmethod
    def of(config: Config | dict) -> Config:
        """config as a Config: a dict (load_config's, load_run_config's) is validated (config.validate, the one
        check) and typed; a Config is returned as it is."""
        if isinstance(config, Config):
            return config
        validate(config)
        return Config(**{section: _build(section, config[section]) for section in _CLASSES})

    def to_dict(self) -> dict:
        """The config dict (to_toml's input, a checkpoint's "config"), a fresh copy."""
        return {section: _section_dict(section, getattr(self, section)) for section in _CLASSES}

    def replace(self, section: str, **changes) -> Config:
        """A copy with some of a section's keys changed (by key name: replace("train", device="cpu")), validated."""
        config = self.to_dict()
        config[section].update(changes)
        return Config.of(config)

    @property
    def env_kind(self) -> str:
        """How the env is built: "builtin" (a registered env), "team" (an MPE or SMAX scenario), "source" (a user's
        env file) or "gym" (a Gymnasium id): config.env_kind's answer."""
        return env_kind({"env": {"name": self.env.name, "gym_id": self.env.gym_id, "source": self.env.source}})

    @property
    def step_limit(self) -> int:
        """The steps after which episodes are truncated (0: never): env.max_episode_steps, or with -1 a built-in or
        team env's registered limit (an env file has none; a Gymnasium id's is its registration's)."""
        if self.env.max_episode_steps >= 0:
            return self.env.max_episode_steps
        if self.env_kind == "team":
            return teams.step_limit(self.env.name)
        return int(ENVS[self.env.name].max_episode_steps or 0) if self.env_kind == "builtin" else 0
