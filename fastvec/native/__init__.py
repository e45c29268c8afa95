"""The native environments: the registry of built-in env sources and their parameters, and the limits every
seed and step limit is checked against (batches.py turns an env source plus parameters into a batch)."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path

import numpy as np

NATIVE_DIR = Path(__file__).resolve().parent

# Autoreset modes as numbered in batch.h (FV_NEXT_STEP, FV_SAME_STEP, FV_DISABLED).
AUTORESET_CODES = {"NextStep": 0, "SameStep": 1, "Disabled": 2}

# batch.h takes the step limit, and counts an episode's steps and the batch's envs, in C ints;
# it seeds each env's generator with a C uint64.
C_INT_MAX = 2**31 - 1
U64_MAX = 2**64 - 1


def is_int(value) -> bool:
    """An int or NumPy integer, not a bool (True is an int to Python, never a count or a seed here)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_step_limit(value, name: str = "max_episode_steps") -> int | None:
    """A step limit as batch.h takes it: None (never truncate) or an int in [1, 2**31-1], else a
    TypeError/ValueError naming the value as given (a larger one would wrap in batch.h's C int)."""
    if value is None:
        return None
    if not is_int(value):
        raise TypeError(f"{name}={value!r} is not an integer: pass a positive int (steps) or None")
    if not 1 <= value <= C_INT_MAX:
        raise ValueError(f"{name}={value!r} is out of range [1, 2**31-1]: {name} must be a positive int "
                         "(batch.h counts steps in a C int) or None")
    return int(value)


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
    render_fps: int = 50  # the spaces (observation bounds included) are the env file's own (fastvec.h)

    def __post_init__(self):
        check_step_limit(self.max_episode_steps)


ENVS: dict[str, NativeEnvInfo] = {
    "cartpole": NativeEnvInfo(
        "cartpole.h", "fastvec/CartPole", 500,
        {"float32": Param(0, 0, 1, "1: float32 state and physics (16-byte state, like gymnax; faster on the GPU); "
                                   "0: Gymnasium's float64, observations identical to Gymnasium's"),
         "sutton_barto_reward": Param(0, 0, 1, "1: Gymnasium's sutton_barto_reward=True (0 per step, -1 at the end)")},
        render_fps=50,
    ),
    "breakout": NativeEnvInfo(
        "breakout.h",
        "fastvec/Breakout",
        10_000,
        {"frameskip": Param(4, 1, 8, "physics ticks (1/60 s) per agent step")},
        render_fps=15,
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
    ),
    # Gymnasium's classic control, bit for bit (float64 physics, glibc's sin/cos/pow as NumPy calls them).
    # Float parameters of Gymnasium's are integers here: n / 1000 (or / 1e6) is the double Python reads for the decimal.
    "acrobot": NativeEnvInfo(
        "acrobot.h", "fastvec/Acrobot", 500,
        {"nips": Param(0, 0, 1, "1: the NeurIPS paper's dynamics (Gymnasium's book_or_nips='nips'); 0: the book's"),
         "float32": Param(0, 0, 1, "1: float32 state and physics (like gymnax; much faster on the GPU, leaves "
                                   "Gymnasium's trajectories); 0: Gymnasium's float64, identical to Gymnasium's")},
        render_fps=15,
    ),
    "mountaincar": NativeEnvInfo(
        "mountaincar.h", "fastvec/MountainCar", 200,
        {"goal_velocity_micro": Param(0, -70_000, 70_000, "Gymnasium's goal_velocity in millionths (0.01 is 10000)"),
         "float32": Param(0, 0, 1, "1: float32 state and physics (8-byte state, like gymnax; faster on the GPU); "
                                   "0: Gymnasium's float64, identical to Gymnasium's")},
        render_fps=30,
    ),
    "mountaincarcontinuous": NativeEnvInfo(
        "mountaincar_continuous.h", "fastvec/MountainCarContinuous", 999,
        {"goal_velocity_micro": Param(0, -70_000, 70_000, "Gymnasium's goal_velocity in millionths (0.01 is 10000)"),
         "float32": Param(0, 0, 1, "1: float32 state and physics (8-byte state, like gymnax; faster on the GPU); "
                                   "0: Gymnasium's float64, identical to Gymnasium's")},
        render_fps=30,
    ),
    "pendulum": NativeEnvInfo(
        "pendulum.h", "fastvec/Pendulum", 200,
        {"g_milli": Param(10_000, 0, 1_000_000, "Gymnasium's g (gravity, m/s^2) in thousandths (9.81 is 9810)"),
         "float32": Param(0, 0, 1, "1: float32 state and physics (8-byte state, like gymnax; faster on the GPU); "
                                   "0: Gymnasium's float64, identical to Gymnasium's")},
        render_fps=30,
    ),
    # MinAtar (the `minatar` package's five games, rules exact; minatar_*.h). Keys and ids as gymnax's
    # (Breakout-MinAtar, ...); the `minatar` package's own ids are MinAtar/Breakout-v1 (minimal actions) and -v0.
    **{key: NativeEnvInfo(
        f"minatar_{source}.h", f"fastvec/{game}-MinAtar", None,
        {"sticky_action_milli": Param(100, 0, 1000, "probability, in thousandths, that the previous action repeats"),
         "difficulty_ramping": Param(1, 0, 1, "1: the game speeds up as it goes on (minatar's default)"),
         "minimal_action_set": Param(1, 0, 1, "1: the game's minimal action set (MinAtar/*-v1, gymnax); "
                                              "0: all 6 actions (MinAtar/*-v0)")},
        render_fps=20,
    ) for key, source, game in [("asterix-minatar", "asterix", "Asterix"), ("breakout-minatar", "breakout", "Breakout"),
                                ("freeway-minatar", "freeway", "Freeway"), ("seaquest-minatar", "seaquest", "Seaquest"),
                                ("spaceinvaders-minatar", "space_invaders", "SpaceInvaders")]},
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
    """The env source for a built-in name, or the given path for a user file; a FileNotFoundError that
    says what the path is when it is not a regular file (a directory, a device, nothing)."""
    if isinstance(name_or_path, str) and name_or_path.lower() in ENVS:
        return NATIVE_DIR / ENVS[name_or_path.lower()].source
    path = Path(name_or_path)
    if not path.is_file():
        raise FileNotFoundError(f"env source {str(path)!r} {_what_it_is(path)}: an env source is a built-in env "
                                f"({', '.join(sorted(ENVS))}) or a C env file (e.g. examples/my_env.h)")
    return path.resolve()


def _what_it_is(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except OSError:
        return "not found"
    if stat.S_ISDIR(mode):
        return "is a directory, not an env file"
    kind = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a named pipe",
            stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(mode), "not a regular file")
    return f"is {kind}, not an env file"


def check_define_names(defines: dict) -> dict[str, int | float | str]:
    """Refuse define names that are not C identifiers (they end up on a compiler command line) and values
    that are not an int, a finite float or a string of C (None, True and NaN would reach the compiler
    as `-DNAME=None` and fail there, far from the key)."""
    for key, value in defines.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise ValueError(f"define name {key!r} is not a C identifier")
        if isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{key}={value!r}: a define's value is a number; pass {int(value)} for {value!r}")
        if not isinstance(value, (int, float, str, np.integer, np.floating)):
            raise TypeError(f"{key}={value!r}: a define's value is an int, a float or a string of C (e.g. {key}=1)")
        if isinstance(value, (float, np.floating)) and not np.isfinite(value):
            raise ValueError(f"{key}={value!r}: a define's value must be finite")
        if isinstance(value, str) and (not value.strip() or re.search(r"[\x00-\x1f\x7f]", value)):
            raise ValueError(f"{key}={value!r}: a define's value must be non-empty and on one line")
    return dict(defines)


def check_seed(seed, name: str = "seed", high: int = U64_MAX, why: str = "") -> int:
    """One seed as an int in [0, high], else a TypeError/ValueError that shows it as given. Like
    Gymnasium's np_random: non-negative integers only (NumPy integers too; no bools, floats or strings)."""
    if not is_int(seed):
        raise TypeError(f"{name}={seed!r} is not an integer: seeds are ints in [0, 2**64-1]")
    if not 0 <= seed <= high:
        bound = "2**64-1" if high == U64_MAX else str(high)
        raise ValueError(f"{name}={seed!r} is out of range [0, {bound}]{why}")
    return int(seed)


def check_seeds(seed, n: int, unit: str = "env") -> tuple[int | None, np.ndarray, np.ndarray]:
    """A reset's `seed` for n envs (or games) checked whole before anything is reseeded: returns (the
    base seed or None, seeds (n,) uint64, given (n,) bool). An int seeds env i with seed + i, so it
    must leave room for n envs below 2**64 (a wrapped seed would repeat another env's stream); a list
    (or array) holds one int or None per env; None seeds nothing."""
    if seed is None:
        return None, np.zeros(n, np.uint64), np.zeros(n, np.bool_)
    if isinstance(seed, np.ndarray) and seed.ndim == 0:
        seed = seed[()]
    if is_int(seed):
        why = f": {unit} i is seeded with seed + i, so with {n} {unit}s seed must be at most 2**64 - {n}"
        base = check_seed(seed, high=U64_MAX - (n - 1), why=why if n > 1 else "")
        return base, np.arange(n, dtype=np.uint64) + np.uint64(base), np.ones(n, np.bool_)
    if not isinstance(seed, (list, tuple, np.ndarray)):  # a set or a dict's keys would seed envs in no set order
        raise TypeError(f"seed={seed!r} is not an integer: pass an int ({unit} i gets seed + i), a list, tuple or "
                        f"array of {n} ints or Nones, or None")
    seed = seed.tolist() if isinstance(seed, np.ndarray) else list(seed)
    if len(seed) != n:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_{unit}s={n} but got length={len(seed)}."
        )
    given = np.array([s is not None for s in seed], np.bool_)
    values = [0 if s is None else check_seed(s, f"seed[{i}]") for i, s in enumerate(seed)]
    return None, np.array(values, np.uint64), given


def reset_seeded(batch, seeds: np.ndarray, given: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Reset the envs of `mask` (None: all) in `batch` as check_seeds split the reset's seed: those `given` a seed
    reseeded with it, the others continuing their random streams (a batch's reset takes seeds for all the envs it
    resets or for none, so a list mixing ints and Nones takes two)."""
    if given.all() or not given.any():
        batch.reset(seeds if given.all() else None, mask)
        return
    reset = np.ones(len(given), np.bool_) if mask is None else mask
    if (reset & given).any():
        batch.reset(seeds, reset & given)
    if (reset & ~given).any():
        batch.reset(None, reset & ~given)

