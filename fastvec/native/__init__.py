"""The native environments: the registry of built-in env sources and their parameters, and
`load_env`, which turns an env source plus parameters into a batch on the CPU or the GPU."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path

NATIVE_DIR = Path(__file__).resolve().parent

# Autoreset modes as numbered in batch.h (FV_NEXT_STEP, FV_SAME_STEP, FV_DISABLED).
AUTORESET_CODES = {"NextStep": 0, "SameStep": 1, "Disabled": 2}


@dataclasses.dataclass(frozen=True)
class Param:
    """An integer compile-time parameter of an env: passed to the compiler as -DNAME=value."""

    default: int
    low: int
    high: int
    doc: str = ""


@dataclasses.dataclass(frozen=True)
class NativeEnvInfo:
    """A built-in env: its source file, parameters and Gymnasium registration facts."""

    source: str
    gym_id: str
    max_episode_steps: int | None
    params: dict[str, Param] = dataclasses.field(default_factory=dict)
    render_fps: int = 50
    obs_high: tuple[float, ...] | None = None  # symmetric observation bounds; None: unbounded


ENVS: dict[str, NativeEnvInfo] = {
    "cartpole": NativeEnvInfo(
        "cartpole.h", "fastvec/CartPole", 500,
        {"float32": Param(0, 0, 1, "1: float32 state and physics (16-byte state, like gymnax; faster on the GPU); "
                                   "0: Gymnasium's float64, observations identical to Gymnasium's")},
        render_fps=50,
        obs_high=(4.8, float("inf"), 2 * 12 * 2 * math.pi / 360, float("inf")),  # as Gymnasium's
    ),
    "breakout": NativeEnvInfo(
        "breakout.h",
        "fastvec/Breakout",
        10_000,
        {"frameskip": Param(4, 1, 8, "physics ticks (1/60 s) per agent step")},
        render_fps=15,
        obs_high=(1.0,) * 118,  # every entry is normalised into [-1, 1]
    ),
    # Two players; the Gymnasium face (PongEnv) sets pong_bot=1 so the right paddle is the bot.
    "pong": NativeEnvInfo(
        "pong.h",
        "fastvec/Pong",
        20_000,
        {
            "points": Param(21, 1, 99, "points that win the game"),
            "return_bonus_milli": Param(0, 0, 1000, "reward per return, in thousandths"),
            "pong_bot": Param(0, 0, 1, "1: the right paddle is the scripted bot (one agent)"),
            "bot_level": Param(2, 0, 4, "the bot's difficulty, 0 (easy) to 4 (hard)"),
        },
        render_fps=30,
        obs_high=(1.0,) * 8,
    ),
}


def env_info(name: str) -> NativeEnvInfo:
    """The registry entry of built-in env `name` (case-insensitive), or a KeyError naming the choices."""
    key = name.lower()
    if key not in ENVS:
        raise KeyError(f"unknown fastvec env {name!r}; built-in envs are {sorted(ENVS)}")
    return ENVS[key]


def resolve_defines(name: str, params: dict) -> dict[str, int]:
    """Check `params` against env `name`'s declared parameters and return them as -D defines."""
    info = env_info(name)
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        allowed = ", ".join(sorted(info.params)) or "none"
        raise TypeError(f"unknown keyword(s) {unknown} for fastvec env {name!r}; its parameters are: {allowed}")
    defines = {}
    for key, spec in info.params.items():
        value = params.get(key, spec.default)
        if isinstance(value, bool):  # a 0/1 switch written as True/False (float32=True, `float32 = true` in TOML)
            value = int(value)
        if not isinstance(value, (int,)) and not hasattr(value, "__index__"):
            raise TypeError(f"{key}={value!r} for {name!r} must be an int in [{spec.low}, {spec.high}]")
        value = int(value)
        if not spec.low <= value <= spec.high:
            raise ValueError(f"{key}={value} for {name!r} is out of range [{spec.low}, {spec.high}]")
        defines[key.upper()] = value
    return defines


def source_path(name_or_path: str | os.PathLike) -> Path:
    """The env source for a built-in name, or the given path for a user file."""
    if isinstance(name_or_path, str) and name_or_path.lower() in ENVS:
        return NATIVE_DIR / ENVS[name_or_path.lower()].source
    path = Path(name_or_path)
    if not path.is_file():
        raise FileNotFoundError(f"env source {str(path)!r} not found (built-in envs: {sorted(ENVS)})")
    return path.resolve()


def check_define_names(defines: dict) -> dict[str, int | float | str]:
    """Refuse define names that are not C identifiers (they end up on a compiler command line)."""
    for key in defines:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise ValueError(f"define name {key!r} is not a C identifier")
    return dict(defines)
