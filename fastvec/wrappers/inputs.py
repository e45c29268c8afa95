"""What every face checks of its inputs before anything changes (keywords, switches, options; Pong's keyword
face), and the rule that one env object is used by one thread at a time (`one_thread`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from fastvec import native

SEED_LIMIT = 2**63  # seeds drawn for envs reset without one

TWO_THREADS = "fastvec env stepped from two threads at once; use one env object per thread"


def two_threads() -> None:
    """Raised by reset/step when another thread is inside the same env object: a native batch is
    stepped in place, so two threads at once would lose steps (one env object, one thread at a time)."""
    raise RuntimeError(TWO_THREADS)


def one_thread(method):
    """Decorates an env method to run holding the object's `lock` (a threading.Lock or RLock); another thread
    inside the same object raises (see two_threads). Costs one lock acquire and release per call."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        lock = self.lock
        if not lock.acquire(False):
            two_threads()
        try:
            return method(self, *args, **kwargs)
        finally:
            lock.release()
    return call


def check_options(options) -> None:
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options={options!r} must be a dict or None")


def check_keywords(func: str, env_name: str | None, params: dict, extra: tuple[str, ...] = ()) -> None:
    """Python's own `TypeError: func() got an unexpected keyword argument 'x'` for a keyword a built-in env does
    not take (TorchRL's GymEnv matches that wording); a user's env file (env_name None) takes any -D define."""
    known = sorted((*native.ENVS[env_name].params, *extra)) if env_name else []
    for key in params if env_name else ():
        if key not in known:
            raise TypeError(f"{func}() got an unexpected keyword argument {key!r} (fastvec's {env_name} takes: "
                            f"{', '.join(known) or 'no parameters'})")


def check_bool(name: str, value, default_ok: bool = False) -> bool | None:
    """A switch keyword as a bool (NumPy's too); a string such as 'no' would otherwise read as True."""
    if isinstance(value, (bool, np.bool_)) or (default_ok and value is None):
        return None if value is None else bool(value)
    raise TypeError(f"{name}={value!r} is not a bool: pass True or False{' (or None: the default)' * default_ok}")


def pong_params(opponent: str | None, difficulty: int, params: dict) -> dict:
    """Pong's keyword face -> its compile-time parameters: opponent="bot" makes the right paddle
    the scripted bot at `difficulty` 0..4 (one agent); opponent=None leaves two players."""
    for key in ("pong_bot", "bot_level"):
        if key in params:
            raise TypeError(f"{key}= is internal; choose the opponent with opponent='bot' or None and difficulty=0..4")
    if opponent not in ("bot", None):
        raise ValueError(f"opponent={opponent!r} is not supported; use opponent='bot' (scripted) or None (two players)")
    if opponent == "bot":
        if isinstance(difficulty, bool) or not isinstance(difficulty, (int, np.integer)) or not 0 <= difficulty <= 4:
            raise ValueError(f"difficulty={difficulty!r} for Pong's bot must be an int from 0 (easy) to 4 (hard)")
        return {**params, "pong_bot": 1, "bot_level": int(difficulty)}
    return dict(params)
