"""The faces stand on the backend's public surface: no face reads or writes another object's private members or
imports a private name, and `import fastvec` registers the ids without importing any face."""

import ast
import subprocess
import sys
from pathlib import Path

import fastvec

WRAPPERS = Path(fastvec.__file__).parent / "wrappers"


def private_uses(path: Path) -> list[str]:
    """`obj._name` where obj is not self or cls, and `from m import _name`, in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom):
            found += [f"{path.name}:{node.lineno}: from {node.module} import {alias.name}" for alias in node.names
                      if alias.name.startswith("_")]
    return found


def test_the_scan_finds_a_private_member_of_another_object(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from m import _helper\nclass A:\n    def f(self):\n        self.vec._has_reset = True\n")
    assert private_uses(probe) == ["probe.py:1: from m import _helper", "probe.py:4: self.vec._has_reset"]


def test_faces_touch_only_public_members_of_other_objects():
    assert [use for path in sorted(WRAPPERS.glob("*.py")) for use in private_uses(path)] == []


def test_import_fastvec_imports_no_face():
    code = ("import sys, fastvec, gymnasium, pettingzoo\n"
            "assert 'fastvec/CartPole' in gymnasium.registry and 'fastvec/pong-v0' in pettingzoo.parallel_registry\n"
            "print(sorted(m for m in sys.modules if m.startswith('fastvec.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(fastvec.__file__).parents[1]).stdout
    assert "fastvec.wrappers" not in out, out


def test_the_pettingzoo_faces_names_load_on_first_use():
    from fastvec.pettingzoo import AGENT_NAMES, parallel_env

    env = parallel_env("Pong", points=1)
    assert env.possible_agents == list(AGENT_NAMES["pong"])
    env.close()
