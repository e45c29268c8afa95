"""A user's env file that fails to build: the compiler's error lines name the file as the user wrote it
(its directory left off) at the line and column of the mistake, for the preprocessing and the compiling run."""

import re
from pathlib import Path

import pytest

from fastvec.native import cpu

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_env.h"


def _broken(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """examples/my_env.h with `old` replaced by `new`, in a folder of its own; the (1-based) line of the edit."""
    source = EXAMPLE.read_text()
    assert source.count(old) == 1
    folder = tmp_path / "user_envs"
    folder.mkdir()
    env = folder / "broken_env.h"
    env.write_text(source.replace(old, new))
    return env, source[:source.index(old)].count("\n") + 1


@pytest.mark.parametrize("old, new, word", [
    ("s->steps += 1;", "s->steps += undefined_thing;", "undefined_thing"),  # fails compiling
    ("#define OBS_SIZE 2", "#define OBS_SIZE 2\n#error stop_here", "stop_here"),  # fails preprocessing
], ids=["compiling", "preprocessing"])
def test_an_error_is_shown_at_the_env_files_own_name_line_and_column(tmp_path, monkeypatch, old, new, word):
    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FASTVEC_BUILD_LOG", raising=False)
    env, line = _broken(tmp_path, old, new)
    line += new.split(word)[0].count("\n")  # the #error sits on the line after the define it follows
    with pytest.raises(cpu.CompileError) as err:
        cpu.compile_env(env, {})
    message = str(err.value)
    shown = [m for m in message.splitlines() if word in m]
    assert shown, message
    assert re.fullmatch(rf"\s*broken_env\.h:{line}:\d+: (fatal )?error: .*{word}.*", shown[0]), message
    assert str(env.parent) not in message  # the full command and output are in the log, not the message
    assert f"{env.parent}/broken_env.h:{line}:" in err.value.log
