"""Without the `mujoco` package, making a MuJoCo task says in one line what to install (no mujoco needed here)."""

import sys

import pytest

from fastvec.native.mujoco import libmujoco, mujoco_package


def test_missing_mujoco_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # `import mujoco` now fails as if it were not installed
    for call in (mujoco_package, libmujoco):
        with pytest.raises(ImportError, match=r"pip install 'fastvec\[mujoco\]'") as info:
            call()
        assert "\n" not in str(info.value)
