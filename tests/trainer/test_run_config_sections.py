"""read_run_config's section checks (a run's config.toml that --resume reads back): a section that is not a
table is refused by name, and a section whose every key is newer than the file may be absent."""

import pytest

from fastvec.trainer.config import ConfigError, load_config, read_run_config, to_toml
from fastvec.trainer.config_text import RUN_CONFIG_END, RUN_CONFIG_HEAD


def written(tmp_path, config: dict, marked: bool = True):
    text = to_toml(config)
    if not marked:  # a file from before the head and end lines
        text = text.replace(RUN_CONFIG_HEAD + "\n", "").replace(RUN_CONFIG_END + "\n", "")
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("section", ["env", "policy", "train", "eval", "selfplay", "sweep"])
def test_a_section_that_is_not_a_table_is_refused_by_name(tmp_path, section):
    """`train = 3` where the [train] table belongs: the file is damaged, and the message names the section."""
    config = load_config("cartpole")
    del config[section]
    path = written(tmp_path, config)
    path.write_text(path.read_text().replace(RUN_CONFIG_HEAD + "\n", f"{RUN_CONFIG_HEAD}\n{section} = 3\n"))
    with pytest.raises(ConfigError, match=rf"is damaged \(\[{section}\] is not a table\); --resume"):
        read_run_config(path)


def test_a_marked_file_without_the_sweep_section_reads_back_whole(tmp_path):
    """Every [sweep] key is newer than the marked files, so one written before them lacks the section and still
    reads back, with every other section as written."""
    config = load_config("cartpole")
    del config["sweep"]
    saved = read_run_config(written(tmp_path, config))
    assert "sweep" not in saved
    assert {k: saved[k] for k in config} == config


def test_an_unmarked_file_without_the_selfplay_section_reads_back_whole(tmp_path):
    """A file from before the head line lacks the keys newer than it (all of [selfplay]): it reads back."""
    config = load_config("cartpole")
    del config["selfplay"], config["sweep"]
    saved = read_run_config(written(tmp_path, config, marked=False))
    assert "selfplay" not in saved and "sweep" not in saved
    assert saved["train"] == config["train"] and saved["env"] == config["env"]


def test_a_marked_file_without_the_selfplay_section_is_refused(tmp_path):
    """A marked file was written after [selfplay] existed: without it, it is damaged."""
    config = load_config("cartpole")
    del config["selfplay"]
    with pytest.raises(ConfigError, match=r"is damaged \(it lacks its \[selfplay\] section\); --resume"):
        read_run_config(written(tmp_path, config))


@pytest.mark.parametrize("what,reason", [("missing", "No such file or directory"), ("folder", "Is a directory")])
def test_a_config_that_cannot_be_read_is_named_with_the_systems_reason(tmp_path, what, reason):
    """OSError's own words (its strerror) after the path, not its repr with the errno and the path again."""
    path = tmp_path / "config.toml"
    if what == "folder":
        path.mkdir()
    with pytest.raises(ConfigError) as err:
        read_run_config(path)
    assert str(err.value) == f"cannot read {path}: {reason}"
