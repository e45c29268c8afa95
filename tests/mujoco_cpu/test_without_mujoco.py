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


@pytest.mark.parametrize("has_library,has_headers", [(False, True), (True, False), (False, False)])
def test_a_mujoco_package_without_its_library_or_its_headers_is_refused(tmp_path, monkeypatch, has_library,
                                                                       has_headers):
    """fastvec compiles against mujoco.h and links libmujoco, both from the package: a build that lacks either (a
    source-only install) is one line that names a binary wheel, before any compile."""
    folder = tmp_path / "mujoco"
    (folder / "include" / "mujoco").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    if has_library:
        (folder / "libmujoco.so.3.3.7").write_text("")
    if has_headers:
        (folder / "include" / "mujoco" / "mujoco.h").write_text("")
    fake = type(sys)("mujoco")
    fake.__file__ = str(folder / "__init__.py")
    monkeypatch.setitem(sys.modules, "mujoco", fake)
    with pytest.raises(ImportError, match="ships no libmujoco and C headers.*pip install 'mujoco>=3.2'") as info:
        libmujoco()
    assert "\n" not in str(info.value)
