"""The mutation campaign (tools/mutation.py) covers every source file under fastvec/: each is a target with its
fast tests, a GPU-only file (sampled and reported apart), or a file in which the mutator finds nothing."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
mutation = pytest.importorskip("mutation")


def sources():
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "fastvec").rglob("*")
                  if p.suffix in (".py", ".h", ".c", ".cu"))


def test_every_source_file_is_a_target_or_gpu_only_or_has_no_mutants():
    assert not set(mutation.TARGETS) & set(mutation.GPU_ONLY)
    assert set(mutation.TARGETS) | set(mutation.GPU_ONLY) <= set(sources())  # no stale names
    for rel in sorted(set(sources()) - set(mutation.TARGETS) - set(mutation.GPU_ONLY)):
        path = REPO / rel
        if rel.endswith(mutation.C_SOURCES):
            found = mutation.c_mutants(rel, path.read_text())
        else:
            pytest.importorskip("cosmic_ray")
            found = mutation.py_mutants(rel, path)
        assert not found, f"{rel} has {len(found)} mutants: add it to TARGETS (its fast tests) or GPU_ONLY"


def test_each_target_names_test_files_that_exist():
    for rel, args in mutation.TARGETS.items():
        files = [a.split("::")[0] for a in args if a.startswith("tests/")]
        assert files, rel
        for f in files:
            assert (REPO / f).is_file(), f"{rel}: {f}"


def test_every_listed_mutant_names_a_line_its_file_still_holds():
    """An entry of tools/mutation_equivalent.toml whose line was rewritten or moved to another file matches no mutant
    again: it would sit there as a reason for code that no longer exists."""
    import tomllib
    listed = tomllib.loads(mutation.EQUIVALENT_FILE.read_text())
    stale = [(kind, e["file"], e["source"]) for kind, entries in listed.items() for e in entries
             if not (REPO / e["file"]).is_file() or e["source"] not in (REPO / e["file"]).read_text()]
    assert not stale, f"listed mutants of lines that are gone (remove them, or list the new line): {stale}"
