"""A user env file's parameters: the `#ifndef NAME` / `#define NAME default` blocks it declares (as
examples/my_env.h's LENGTH), read from its text, and the check that refuses a -D define it does not declare."""

from __future__ import annotations

import re
from pathlib import Path

# Defines the trainer reads from an env file's text and takes as --env.KEY=value (env_defaults.py), declared
# or not: passing one is never an unknown parameter. Nor is a switch of fastvec's batch layer (FV_*, and
# batch.h's own #ifndef defaults such as SIMD_STEP or NUM_AGENTS), which every env file is built with.
TRAINER_DEFINES = ("REWARD_THRESHOLD",)
BATCH_LAYER = Path(__file__).resolve().parent / "batch.h"
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PARAM = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#[ \t]*define[ \t]+\1\b[ \t]*([^\n]*)", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def declared_params(path: Path, _seen: set | None = None) -> dict[str, str]:
    """{NAME: default text} of the parameters `path` declares, and the files it #includes "..." from its
    own directory declare (fastvec's headers are not the env's: their names are batch.h's contract)."""
    seen = set() if _seen is None else _seen
    path = Path(path).resolve()
    if path in seen:
        return {}
    seen.add(path)
    try:
        text = _COMMENTS.sub("", path.read_text(errors="replace"))
    except OSError:
        return {}
    params = {}
    for name in _INCLUDE.findall(text):
        included = path.parent / name
        if included.is_file():
            params.update(declared_params(included, seen))
    params.update({name: default.strip() for name, default in _PARAM.findall(text)})
    return params


def check_env_file_defines(path: Path, defines: dict) -> None:
    """Refuse, with a TypeError that lists the file's parameters, a define `path` does not declare
    (a misspelled `lenght=30` would otherwise be ignored by the compiler)."""
    if not defines:
        return
    params = declared_params(path)
    unknown = sorted(k for k in defines if k not in params and k not in TRAINER_DEFINES and not k.startswith("FV_"))
    if unknown:
        unknown = [k for k in unknown if k not in declared_params(BATCH_LAYER)]
    if not unknown:
        return
    declared = ", ".join(f"{name} (default {default or 'empty'})" for name, default in sorted(params.items()))
    raise TypeError(f"unknown parameter(s) {', '.join(unknown)} for env file {Path(path).name!r} (names are "
                    f"case-insensitive); its parameters are: {declared or 'none'}. A parameter is an "
                    f"`#ifndef NAME` / `#define NAME default` block in the env file")
