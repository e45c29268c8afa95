"""The mutation campaign (tools/mutation.py) covers every source file under fastvec/: each is a target with its
fast tests, a GPU-only file (sampled and reported apart), or a file in which the mutator finds nothing."""

import json
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


def test_a_report_counts_listed_equivalents_apart_even_after_a_time_out_but_never_a_gpu_only_listing(
        tmp_path, monkeypatch, capsys):
    def row(line, outcome):
        return {"file": "fastvec/x.py", "line": line, "source": f"a = {line}", "change": "c", "index": 0,
                "outcome": outcome}
    listed = {("fastvec/x.py", "a = 2", "c", 0, 0): ("equivalent", "same value"),
              ("fastvec/x.py", "a = 3", "c", 0, 0): ("equivalent", "same value"),
              ("fastvec/x.py", "a = 4", "c", 0, 0): ("gpu-only", "runs on a GPU"),
              ("fastvec/x.py", "a = 6", "c", 0, 0): ("equivalent", "same value")}
    monkeypatch.setattr(mutation, "load_listed", lambda: listed)
    cpu, gpu = tmp_path / "cpu.json", tmp_path / "gpu.json"
    cpu.write_text(json.dumps({"mutants": [row(1, "killed"), row(2, "timeout"), row(3, "survived"),
                                           row(4, "survived"), row(5, "timeout"), row(6, "killed")]}))
    gpu.write_text(json.dumps({"mutants": [row(5, "survived")]}))  # a later run replaces an earlier outcome
    assert mutation.main(["--report", str(cpu), str(gpu)]) == 0
    table = capsys.readouterr().out
    # killed: 1 and 6 (a real failure stands: a listing cannot undo it); survived: 4 (its GPU-only listing is no
    # excuse once it ran) and 5; equivalent: 2 (its time-out was the machine's load) and 3
    assert "| **all** | 6 | 2 | 2 | 2 | 0 | 0 | 0 | 50.0% |" in table


def test_only_the_cuda_branches_of_a_file_the_cpu_builds_without_nvcc_are_gpu_only():
    """mj_view.cu's thread-per-world loop sits in an #ifdef __CUDACC__ branch that no CPU build compiles: its
    mutants go to the GPU half; the #else loop beside it and the code after the branch, which every CPU test runs,
    stay CPU mutants, as does the same branch in a file a CPU harness compiles with __CUDACC__ defined."""
    from dataclasses import replace
    view = "fastvec/native/mujoco/mj_view.cu"
    text = (REPO / view).read_text()
    found = mutation.c_mutants(view, text)

    def first(needle):
        return next(m for m in found if needle in m.source)
    gpu_loop = first("blockIdx.x * blockDim.x + threadIdx.x")
    assert mutation.nvcc_only(gpu_loop, text)
    assert not mutation.nvcc_only(first("for (long i = 0; i < (n); i++)"), text)
    assert not mutation.nvcc_only(first("long at = i * j.m.nu + k;"), text)
    assert not mutation.nvcc_only(replace(gpu_loop, file="fastvec/native/emulated.cu"), text)


def test_each_gpu_selection_names_test_files_that_exist_once_each():
    mutation_gpu = pytest.importorskip("mutation_gpu")
    for prefix, args in mutation_gpu.GPU_TESTS.items():
        for f in (a.split("::")[0] for a in args if a.startswith("tests/")):
            assert (REPO / f).exists(), f"{prefix}: {f}"
            assert args.count(f) <= 1, f"{prefix}: {f} twice"


def test_the_campaign_names_the_test_libraries_it_runs_without(monkeypatch):
    """A Python without one of CI's optional test libraries skips its tests: the campaign names each such library
    (and only those), so that a score taken there is not read as CI's."""
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("torch", "mpe2") else object())
    assert mutation.missing_test_libraries() == [n for n in mutation.CI_TEST_LIBRARIES if n in ("torch", "mpe2")]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert mutation.missing_test_libraries() == []
    assert {"mujoco", "torch", "stable_baselines3", "mpe2"} <= set(mutation.CI_TEST_LIBRARIES)
