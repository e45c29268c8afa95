"""fastvec-sweep's search space: the [sweep] section's config-path entries and the command line's --section.key=SPEC
arguments, parsed once into Optuna distributions (lo:hi, lo:hi:log, lo:hi:STEP, a,b,c) or fixed values."""

from __future__ import annotations

import dataclasses

from fastvec.native import ENVS
from fastvec.trainer.config import ConfigError, parse_value
from fastvec.trainer.config_keys import BY_PATH, SECTIONS

# Keys a sweep cannot search: they say which env trains, on how many processes, or how the sweep itself runs.
NOT_SEARCHABLE = {"env.name", "env.source", "env.gym_id", "train.gpus"}
SPEC_FORMS = "lo:hi, lo:hi:log, lo:hi:STEP, a,b,c or one value"


@dataclasses.dataclass(frozen=True)
class Space:
    """The parsed search space: `distributions` {config path: Optuna distribution} in the order given, and
    `fixed` {config path: value}, the entries that every trial trains with."""

    distributions: dict
    fixed: dict

    def overrides(self, params: dict | None = None, only: set | None = None) -> dict:
        """The fixed values (those in `only`, if given) and a trial's sampled params as config overrides
        {section: {name: value}}."""
        out: dict = {}
        fixed = {path: value for path, value in self.fixed.items() if only is None or path in only}
        for path, value in {**fixed, **(params or {})}.items():
            section, _, name = path.partition(".")
            out.setdefault(section, {})[name] = value
        return out

    def describe(self) -> list[str]:
        """One line per searched key, as a person reads it: `train.learning_rate  1e-04 .. 0.1 (log)`."""
        lines = []
        for path, dist in self.distributions.items():
            if hasattr(dist, "choices"):
                lines.append(f"{path}  one of {', '.join(str(c) for c in dist.choices)}")
            else:
                # an int range's step of 1 is Optuna's default (no step given); a float range's 1.0 was given
                stepped = dist.step is not None and (dist.step != 1 or isinstance(dist.step, float))
                extra = " (log)" if dist.log else f" (step {dist.step})" if stepped else ""
                low, high = (f"{v:_}" if isinstance(v, int) else f"{v:g}" for v in (dist.low, dist.high))
                lines.append(f"{path}  {low} .. {high}{extra}")
        return lines


def value_type(path: str, env: str | None):
    """The type of the config key at path (bool, int, float or str), or of a built-in env's parameter
    (env.frameskip); None for a parameter the sweep cannot know (a user env file's define, a Gymnasium argument)."""
    key = BY_PATH.get(path)
    if key is not None:
        return key.type
    section, _, name = path.partition(".")
    info = ENVS.get(env or "")
    if section == "env" and info is not None and name in info.params:
        return type(info.params[name].default)
    return None


def check_path(path: str, env: str | None) -> None:
    """A ConfigError unless path names a key a sweep can search (section.key; any [env] parameter)."""
    section, _, name = path.partition(".")
    if section not in SECTIONS or not name or "." in name:
        raise ConfigError(f"search-space entry {path!r}: give a config key as section.key (e.g. train.learning_rate)")
    if section == "sweep":
        raise ConfigError(f"search-space entry {path!r}: the sweep's own settings are not searched; set them as "
                          f"--{path}=VALUE")
    if section != "env" and path not in BY_PATH:
        import difflib
        close = difflib.get_close_matches(path, list(BY_PATH), n=1)
        hint = f"; did you mean {close[0]}?" if close else "; fastvec-train --help-config lists the keys"
        raise ConfigError(f"search-space entry {path!r} is not a config key{hint}")


def _number(path: str, text: str, kind, spec: str):
    """One bound or choice of a numeric key, of the key's type (an int key takes ints only)."""
    value = parse_value(text.strip())
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not kind:
        raise ConfigError(f"--{path}={spec}: {text.strip()!r} is not {'an int' if kind is int else 'a number'}; "
                          f"{path} takes {SPEC_FORMS}")
    key = BY_PATH.get(path)
    problem = key.problem(value) if key is not None else None
    if problem:
        raise ConfigError(f"--{path}={spec}: {problem}")
    return value


def parse_entry(path: str, spec, env: str | None = None):
    """One search-space entry as ("fixed", value) or ("search", an Optuna distribution). spec is a string in the
    command line's grammar (SPEC_FORMS) or a TOML value (a fixed one). Bad entries are ConfigErrors naming the
    entry and the forms it may take."""
    what, value = _parse_entry(path, spec, env)
    if what == "search" and path in NOT_SEARCHABLE:
        raise ConfigError(f"search-space entry {path!r}: a sweep trains one env on one process; set it once "
                          f"(or run one sweep per value)")
    return what, value


def _parse_entry(path: str, spec, env: str | None):
    check_path(path, env)
    kind = value_type(path, env)
    if not isinstance(spec, str):
        if isinstance(spec, (list, dict)):
            raise ConfigError(f"search-space entry {path!r} = {spec!r}: give choices as one string, "
                              f"\"{','.join(str(v) for v in spec) if isinstance(spec, list) else 'a,b'}\"")
        return "fixed", spec
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    text = spec.strip()
    if "," in text:
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            raise ConfigError(f"--{path}={spec}: an empty choice; give choices as a,b,c")
        if kind in (int, float):
            choices = [_number(path, part, kind, spec) for part in parts]
        elif kind is bool:
            choices = [parse_value(part) for part in parts]
            if not all(isinstance(c, bool) for c in choices):
                raise ConfigError(f"--{path}={spec}: {path} is true or false; search it as true,false")
        else:
            choices = [parse_value(part) if kind is None else part for part in parts]
        if len(set(choices)) != len(choices):
            raise ConfigError(f"--{path}={spec}: a choice is given twice")
        return "search", CategoricalDistribution(choices)
    if ":" in text and kind is not str:
        parts = text.split(":")
        if kind is bool or len(parts) not in (2, 3):
            raise ConfigError(f"--{path}={spec}: {path} takes {SPEC_FORMS}"
                              + (" (a bool: true,false)" if kind is bool else ""))
        number_kind = kind or (float if any(c in text for c in ".e") else int)
        low, high = (_number(path, part, number_kind, spec) for part in parts[:2])
        log, step = False, None
        if len(parts) == 3:
            if parts[2].strip() == "log":
                log = True
            else:
                step = _number(path, parts[2], number_kind, spec)
                if step <= 0:
                    raise ConfigError(f"--{path}={spec}: the step {parts[2].strip()} must be > 0")
        if low >= high:
            raise ConfigError(f"--{path}={spec}: the low end {low} must be below the high end {high}")
        if log and low <= 0:
            raise ConfigError(f"--{path}={spec}: a log range needs a low end > 0")
        if number_kind is int:
            return "search", IntDistribution(low, high, log=log, step=step or 1)
        return "search", FloatDistribution(low, high, log=log, step=step)
    value = parse_value(text) if kind is not str else text
    if kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = _number(path, text, kind, spec)
    return "fixed", value


def parse_space(entries: dict, env: str | None = None) -> Space:
    """The Space of {config path: spec} entries (the [sweep] section's, then the command line's over them)."""
    distributions, fixed = {}, {}
    for path, spec in entries.items():
        what, value = parse_entry(path, spec, env)
        (distributions if what == "search" else fixed)[path] = value
    return Space(distributions, fixed)


def split_arguments(args: list[str]) -> tuple[dict, dict]:
    """fastvec-sweep's --section.key=value arguments as ({sweep setting: value}, {config path: spec text}):
    --sweep.* are the sweep's settings (TOML values), every other one a search-space entry kept as text, so
    1e-4:1e-1:log and 32,64 reach parse_entry as written."""
    settings, entries = {}, {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or "." not in arg.split("=", 1)[0]:
            raise ConfigError(f"unexpected argument {arg!r}; fastvec-sweep takes --sweep.key=value and "
                              f"--section.key=SPEC ({SPEC_FORMS})")
        name, eq, text = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(args):
                raise ConfigError(f"--{name} needs a value: --{name}=VALUE")
            text, i = args[i + 1], i + 1
        section, _, key = name.partition(".")
        if section == "sweep":
            if "." in key:
                raise ConfigError(f"--{name}: give a search-space entry as --{key}=SPEC")
            settings[key] = parse_value(text)
        else:
            check_path(name, None)
            entries[name] = text
        i += 1
    return settings, entries
