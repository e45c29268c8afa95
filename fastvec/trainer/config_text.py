"""Config text: the config.toml a run saves (to_toml, between RUN_CONFIG_HEAD and RUN_CONFIG_END) and --resume reads
back whole (read_run_config), and fastvec/configs/default.toml rendered from config_keys.KEYS (default_toml), both
laid out in WIDTH columns."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

from fastvec.trainer.config_keys import KEYS, SECTION_NOTES, SECTIONS, ConfigError, Key, section_keys

# The first line and the last line of every config.toml fastvec-train writes (to_toml): a file that has the
# first and lacks the last was cut short, and resume refuses it.
RUN_CONFIG_HEAD = "# fastvec-train run config: the resolved settings of this run (--resume reads them back)"
RUN_CONFIG_END = "# end of config.toml"


def _toml_value(v, pretty: bool = False) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if pretty and isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:_}"
    if pretty and isinstance(v, float) and "e-0" in repr(v):
        return repr(v).replace("e-0", "e-")
    return repr(v)


def to_toml(config: dict) -> str:
    """The config as TOML text (flat tables of str, bool, int, float: all a config holds), between
    RUN_CONFIG_HEAD and RUN_CONFIG_END (read_run_config knows a file cut short by them)."""
    lines = [RUN_CONFIG_HEAD]
    for section, values in config.items():
        lines.append(f"[{section}]")
        lines += [f"{_toml_value(k) if '.' in k else k} = {_toml_value(v)}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines + [RUN_CONFIG_END, ""])


WIDTH = 110  # default.toml's and --help-config's line width
COLUMN = 26  # where a key's meaning starts


def _described(key: Key) -> str:
    """The key's meaning and range; the range's spaces are no-break, so a wrapped line never splits it."""
    text = key.range_text()
    if not text:
        return key.doc
    text = ("in " if text[0] in "[(" else "") + text
    return f"{key.doc} ({text.replace(' ', chr(0xa0))})"


def _key_lines(assignment: str, texts: list[str], prefix: str) -> list[str]:
    """assignment, then texts wrapped into a column beside it (prefix before every text line)."""
    lead = assignment.ljust(COLUMN) if len(assignment) < COLUMN else assignment + "  "
    width = WIDTH - max(len(lead), COLUMN) - len(prefix)
    wrapped = [line.replace("\xa0", " ") for text in texts
               for line in textwrap.wrap(text, width, break_on_hyphens=False)]
    if not wrapped:
        return [assignment]
    return [lead + prefix + wrapped[0]] + [" " * COLUMN + prefix + line for line in wrapped[1:]]


def default_toml() -> str:
    """fastvec/configs/default.toml, rendered from KEYS: every section and key with its default, its meaning,
    its range and its caveat as TOML comments, wrapped at WIDTH columns."""
    header = ("fastvec-train defaults: every config key, its default, meaning and [range]. fastvec/configs/ENV.toml "
              "overrides these per env, and the command line overrides both: fastvec-train ENV "
              "--section.key=value. Unknown sections or keys are errors.")
    lines = ["# " + line for line in textwrap.wrap(header, WIDTH - 2)]
    lines += ["# Generated from fastvec/trainer/config_keys.py, where the keys are defined; after editing them:",
              "#   python -m fastvec.trainer.config > fastvec/configs/default.toml"]
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        if section in SECTION_NOTES and section != "env":
            lines += ["# " + line for line in textwrap.wrap(SECTION_NOTES[section], WIDTH - 2)]
        for key in section_keys(section).values():
            texts = [_described(key)] + ([key.note] if key.note else [])
            lines += _key_lines(f"{key.name} = {_toml_value(key.default, pretty=True)}", texts, "# ")
        if section == "env":
            lines += ["# " + line for line in textwrap.wrap(SECTION_NOTES[section], WIDTH - 2)]
    return "\n".join(lines) + "\n"


# Keys that a config.toml written before RUN_CONFIG_HEAD existed may lack (they were added after the first
# release that saved run configs); they take their defaults. Any other missing key means a damaged file.
KEYS_NEWER_THAN_UNMARKED_FILES = frozenset({
    "train.blas_threads", "train.env_threads", "train.async", "train.gpus", "train.env_device", "train.env_groups",
    "train.precision", "train.checkpoint_seconds", "eval.opponent",
    *(key.path for key in KEYS if key.section == "selfplay")})
# Keys added after RUN_CONFIG_HEAD was: a marked file written before them lacks them, and they take their defaults
# (their defaults are what those runs did). Any other missing key of a marked file means a damaged file.
KEYS_NEWER_THAN_MARKED_FILES = frozenset({
    "env.source", "env.gym_id", "env.gym_vectorization", "env.max_episode_steps", "policy.critic", "policy.encoder",
    "policy.activation", "policy.agent_id", "policy.critic_input", "train.tensorboard", "train.wandb_project",
    "train.wandb_mode", "train.target_return", "train.target_metric", "train.target_episodes",
    "train.stop_at_target", *(key.path for key in KEYS if key.section == "sweep")})


def read_run_config(path: Path) -> dict:
    """RUN_DIR/config.toml as a dict, checked whole: a ConfigError naming the damage otherwise."""
    def damaged(why: str) -> ConfigError:
        return ConfigError(f"{path} is damaged ({why}); --resume does not guess a run's settings: restore the "
                           f"file, or start a fresh run")

    try:
        text = path.read_bytes().decode("utf-8")
        saved = tomllib.loads(text)
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise damaged("it is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as err:
        raise damaged(f"not valid TOML: {err}") from None
    marked = text.startswith(RUN_CONFIG_HEAD)
    if marked and text.rstrip().splitlines()[-1] != RUN_CONFIG_END:
        raise damaged(f"it was cut short: its last line {RUN_CONFIG_END!r} is missing")
    for section in SECTIONS:
        needed = [key.path for key in section_keys(section).values() if key.path not in KEYS_NEWER_THAN_MARKED_FILES
                  and (marked or key.path not in KEYS_NEWER_THAN_UNMARKED_FILES)]
        if section not in saved and (needed or section == "env"):
            raise damaged(f"it lacks its [{section}] section")
        if section in saved and not isinstance(saved[section], dict):
            raise damaged(f"[{section}] is not a table")
        missing = [name for name in needed if name.partition(".")[2] not in saved.get(section, {})]
        if missing:
            raise damaged(f"it lacks {', '.join(missing[:4])}{' and more' if len(missing) > 4 else ''}")
    return saved
