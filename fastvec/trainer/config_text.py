"""Config text: the config.toml a run saves (to_toml, between RUN_CONFIG_HEAD and RUN_CONFIG_END) and
fastvec/configs/default.toml rendered from config_keys.KEYS (default_toml), both laid out in WIDTH columns."""

from __future__ import annotations

import textwrap

from fastvec.trainer.config_keys import SECTION_NOTES, SECTIONS, Key, section_keys

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
