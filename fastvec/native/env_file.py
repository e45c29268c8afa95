"""A user env file read as text: its parameters (the `#ifndef NAME` / `#define NAME default` blocks it declares, as
examples/my_env.h's LENGTH), its other defines, and the check that refuses a -D define it does not declare."""

from __future__ import annotations

import re
from pathlib import Path

# Defines the trainer reads from an env file's text and takes as --env.KEY=value (env_defaults.py), declared
# or not: passing one is never an unknown parameter. Nor is a switch of fastvec's batch layer (FV_*, and
# batch.h's own #ifndef defaults such as SIMD_STEP or NUM_AGENTS), which every env file is built with.
TRAINER_DEFINES = ("REWARD_THRESHOLD",)
NATIVE_DIR = Path(__file__).resolve().parent
BATCH_LAYER = NATIVE_DIR / "batch.h"
CONTRACT_HEADERS = ("fastvec.h", "batch.h")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PARAM = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#[ \t]*define[ \t]+\1\b[ \t]*([^\n]*)", re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
_CONDITION = re.compile(r"^[ \t]*#[ \t]*(?:if|elif|ifdef|ifndef)\b([^\n]*)", re.M)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def declared_params(path: Path) -> dict[str, str]:
    """{NAME: default text} of the parameters `path` declares, and the files it #includes "..." declare
    (searched in its directory, then fastvec's, as the compiler does; fastvec.h and batch.h are the contract,
    not the env's). A name the files only test and never define (`#if MA_GAME == 1`) is a parameter
    without a default (""); include guards (`#ifndef X_H`) are not parameters."""
    texts = _texts(Path(path).resolve(), {})
    defined = {name for text in texts for name in _DEFINE.findall(text)}
    params = {}
    for text in texts:
        for condition in _CONDITION.findall(text):
            for name in _NAME.findall(re.sub(r"\bdefined\b", " ", condition)):
                if name not in defined and not name.startswith("_"):
                    params.setdefault(name, "")
        params.update({name: default.strip() for name, default in _PARAM.findall(text)
                       if default.strip() or not re.search(r"_H_?$", name)})
    return params


def _texts(path: Path, seen: dict) -> list[str]:
    """The comment-free texts of `path` and the files it includes by a quoted name, each once."""
    if path in seen:
        return []
    try:
        seen[path] = text = _COMMENTS.sub("", path.read_text(errors="replace"))
    except OSError:
        return []
    texts = [text]
    for name in _INCLUDE.findall(text):
        found = [d / name for d in (path.parent, NATIVE_DIR) if (d / name).is_file()]
        if found and name not in CONTRACT_HEADERS:
            texts += _texts(found[0].resolve(), seen)
    return texts


def define_value(path: Path, name: str) -> str | None:
    """The value text of the first `#define NAME value` in `path` or the files it includes (comments removed;
    None: not defined), as the compiler would see it without -D NAME."""
    for text in _texts(Path(path).resolve(), {}):
        match = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{name}\b[ \t]*([^\n]*)", text, re.M)
        if match is not None:
            return match.group(1).strip() or None
    return None


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
    declared = ", ".join(f"{name} (default {default})" if default else name for name, default in sorted(params.items()))
    raise TypeError(f"unknown parameter(s) {', '.join(unknown)} for env file {Path(path).name!r} (names are "
                    f"case-insensitive); its parameters are: {declared or 'none'}. A parameter is an "
                    f"`#ifndef NAME` / `#define NAME default` block in the env file")
