"""The package's layout rules, checked from the source: no import cycles between fastvec's modules (imports
inside functions count too: a cycle is a cycle whenever it is taken), no file under fastvec/ over 600 lines,
and the CUDA trainer under 500, so it keeps reading beside the NumPy trainer; no test folder shadows an optional
package."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "fastvec"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The fastvec modules `path` imports, anywhere in the file (a package counts as its __init__)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            # `from a import b` imports module a.b where that is a module, else names defined in a
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found - {module_name(path)}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles_in_fastvec():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_import_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "fastvec.trainer.distributed" in graph["fastvec.trainer.run"]  # imported inside train()
    assert "fastvec.native" in graph["fastvec.trainer.config"]


def test_file_size_budget():
    sizes = {p.relative_to(PACKAGE.parent): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*")
             if p.is_file() and p.suffix in {".py", ".h", ".cu", ".cuh", ".toml"}}
    assert not {p: n for p, n in sizes.items() if n > 600}
    assert sizes[Path("fastvec/trainer/cuda/trainer.py")] < 500


def test_no_test_folder_is_named_as_a_package_the_tests_skip_without():
    """pytest puts tests/ on sys.path (its conftest), so a folder there named as an optional package (mujoco, jax)
    is imported as that package where it is missing: `pytest.importorskip` then succeeds and the tests fail
    rather than skip, as a new user without the extra would see."""
    import re

    tests = Path(__file__).resolve().parent
    skipped = {m.split(".")[0] for path in tests.rglob("*.py")
               for m in re.findall(r"importorskip\(\s*[\"']([\w.]+)[\"']", path.read_text())}
    assert {"mujoco", "jax"} <= skipped  # the scan finds what the suite skips on
    folders = {p.name for p in tests.iterdir() if p.is_dir()}
    assert not folders & skipped, f"rename tests/{sorted(folders & skipped)}: it shadows the package of that name"
