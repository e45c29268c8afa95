"""What to install for a step, said where the step is: each example that needs PyTorch (itself or through
Stable-Baselines3 or RLlib) names the CPU wheel in its header, and the README's `check_env` line names the
extra that its render check needs (pygame)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
TORCH_USERS = ("torch", "stable_baselines3", "ray")  # SB3 and RLlib install torch, the CUDA build on Linux
OWN_HEADERS = sorted(path for path in (ROOT / "examples").glob("*.py"))  # examples/cleanrl/ppo.py is CleanRL's file


def imported_roots(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", OWN_HEADERS, ids=lambda path: path.name)
def test_an_example_that_needs_torch_names_the_cpu_wheel(path):
    tree = ast.parse(path.read_text())
    if not imported_roots(tree) & set(TORCH_USERS):
        pytest.skip(f"{path.name} does not use PyTorch")
    assert CPU_TORCH in (ast.get_docstring(tree) or ""), f"{path.name}'s header does not say `{CPU_TORCH}`"


def test_the_readme_says_check_env_needs_pygame():
    lines = [line for line in (ROOT / "README.md").read_text().split("\n- ") if "check_env" in line]
    assert lines and all('.[render]"' in line and "pygame" in line for line in lines), lines
