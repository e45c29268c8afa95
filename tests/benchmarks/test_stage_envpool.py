"""tools/stage_envpool.py's cut of EnvPool's wheels (no network: a stand-in wheel): the gym MuJoCo module, its GL
libraries, every Python file and the gym assets stay byte for byte, the other families' modules and libraries and
assets go, the entry module registers the gym tasks alone, and RECORD lists exactly what is kept, with its hashes."""

import base64
import hashlib
import importlib.util
import zipfile
from pathlib import Path

spec = importlib.util.spec_from_file_location("stage_envpool", Path(__file__).parents[2] / "tools" / "stage_envpool.py")
stage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stage)

FILES = {
    "envpool/__init__.py": b"import envpool.entry\n",
    "envpool/entry.py": b"import envpool.atari.registration\nimport envpool.mujoco.gym.registration\n",
    "envpool/atari/registration.py": b"# atari\n",
    "envpool/atari/atari_envpool.so": b"\x7fELF atari",
    "envpool/mujoco/mujoco_gym_envpool.so": b"\x7fELF gym",
    "envpool/mujoco/mujoco_dmc_envpool.so": b"\x7fELF dmc",
    "envpool/mujoco/gym/registration.py": b"# gym tasks\n",
    "envpool/py.typed": b"",
    "envpool.libs/libEGL-48f73270.so.1.1.0": b"egl",
    "envpool.libs/libQt6Core-2ad30508.so.6.11.1": b"qt",
    "envpool-1.2.5.dist-info/METADATA": b"Name: envpool\n",
    "envpool-1.2.5.dist-info/RECORD": b"stale\n",
}
ASSETS = {
    "envpool_assets/__init__.py": b"",
    "envpool_assets/mujoco/__init__.py": b"",
    "envpool_assets/mujoco/assets_gym/ant.xml": b"<mujoco/>",
    "envpool_assets/mujoco/assets_dmc/cheetah.xml": b"<mujoco/>",
    "envpool_assets/atari/roms/pong.bin": b"rom",
    "envpool_assets-0.3.0.dist-info/RECORD": b"stale\n",
}


def wheel(path: Path, files: dict) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def read(path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def check_record(files: dict, record: str) -> None:
    lines = files[record].decode().splitlines()
    assert lines[-1] == f"{record},,"
    listed = {}
    for line in lines[:-1]:
        name, digest, size = line.split(",")
        listed[name] = (digest, int(size))
    assert set(listed) == set(files) - {record}
    for name, (digest, size) in listed.items():
        want = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=").decode()
        assert digest == f"sha256={want}" and size == len(files[name]), name


def test_the_envpool_wheel_keeps_the_gym_mujoco_tasks_and_what_they_load(tmp_path):
    (tmp_path / "out").mkdir()
    src = wheel(tmp_path / "envpool-1.2.5-cp312-cp312-manylinux_2_28_x86_64.whl", FILES)
    got = read(stage.cut(src, stage.keep_envpool, tmp_path / "out", {"envpool/entry.py": stage.ENTRY}))
    kept = {n for n in FILES if n != "envpool-1.2.5.dist-info/RECORD"}
    kept -= {"envpool/atari/atari_envpool.so", "envpool/mujoco/mujoco_dmc_envpool.so",
             "envpool.libs/libQt6Core-2ad30508.so.6.11.1"}
    assert set(got) == kept | {"envpool-1.2.5.dist-info/RECORD"}
    assert all(got[n] == FILES[n] for n in kept if n != "envpool/entry.py")
    assert got["envpool/entry.py"] == stage.ENTRY.encode()
    assert "import envpool.mujoco.gym.registration" in stage.ENTRY and "atari" not in stage.ENTRY
    check_record(got, "envpool-1.2.5.dist-info/RECORD")


def test_the_assets_wheel_keeps_the_gym_models_alone(tmp_path):
    (tmp_path / "out").mkdir()
    src = wheel(tmp_path / "envpool_assets-0.3.0-py3-none-any.whl", ASSETS)
    got = read(stage.cut(src, stage.keep_assets, tmp_path / "out", {}))
    assert set(got) == {"envpool_assets/__init__.py", "envpool_assets/mujoco/__init__.py",
                        "envpool_assets/mujoco/assets_gym/ant.xml", "envpool_assets-0.3.0.dist-info/RECORD"}
    check_record(got, "envpool_assets-0.3.0.dist-info/RECORD")
