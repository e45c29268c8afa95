"""Stages EnvPool's Gymnasium MuJoCo tasks for the GPU machine's host (16 cores, Python 3.12, no network), the peer of
benchmarks/mujoco_steps.py's EnvPool column: EnvPool's wheel (53 MB, every env family) and its MuJoCo assets (62 MB)
are over what one device call carries, so both are cut down here to what `envpool.make("Ant-v4", ...)` loads (its
Python, the gym MuJoCo module and the GL libraries it links, the gym tasks' XML files), with its small dependencies.

    python tools/stage_envpool.py                 # into .gpu/, which .gpu/remote.sh installs on the machine
    python tools/stage_envpool.py --python-version 3.11 --out /tmp/ep   # the same for a local check

Only the package's entry module changes (it registers the gym MuJoCo tasks alone); the tasks' code is EnvPool's."""

from __future__ import annotations

import argparse
import base64
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ENVPOOL, ASSETS = "envpool==1.2.5", "envpool-assets==0.3.0"
DEPENDENCIES = ["dm-env==1.6", "optree==0.20.0"]  # the rest (glfw, dm-tree, gymnasium, ...) are there or in .gpu/
ENTRY = '"""The gym MuJoCo tasks only (a cut-down staging of EnvPool, tools/stage_envpool.py)."""\n\n' \
        "import envpool.mujoco.gym.registration  # noqa: F401\n"
GL_LIBS = ("libEGL", "libGLdispatch", "libOpenGL")  # what mujoco_gym_envpool.so links from envpool.libs/


def download(specs: list[str], into: Path, python_version: str) -> None:
    tag = python_version.replace(".", "")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", python_version, "--implementation", "cp", "--abi", f"cp{tag}",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_27_x86_64",
                    "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                    "--platform", "any", "-d", str(into), *specs], check=True)


def keep_envpool(name: str) -> bool:
    if name.startswith("envpool.libs/"):
        return name.split("/")[1].startswith(GL_LIBS)
    if name.endswith(".so"):
        return name == "envpool/mujoco/mujoco_gym_envpool.so"
    return not name.startswith("envpool/") or name.endswith(".py") or name.endswith(".typed")


def keep_assets(name: str) -> bool:
    return name.startswith(("envpool_assets/mujoco/assets_gym/", "envpool_assets-")) or name in (
        "envpool_assets/__init__.py", "envpool_assets/mujoco/__init__.py")


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def cut(wheel: Path, keep, out: Path, replace: dict[str, str]) -> Path:
    """A copy of `wheel` in `out` with the files `keep` accepts (and `replace`'s contents), its RECORD rewritten."""
    target = out / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for info in src.infolist():
            name = info.filename
            if name == record_name or not keep(name):
                continue
            data = replace[name].encode() if name in replace else src.read(name)
            dst.writestr(info, data)
            lines.append(record_line(name, data))
        dst.writestr(record_name, "\n".join(lines + [f"{record_name},,"]) + "\n")
    return target


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(".gpu"))
    p.add_argument("--python-version", default="3.12", help="the machine's Python (3.12)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        download([ENVPOOL, ASSETS], tmp, args.python_version)
        envpool = cut(next(tmp.glob("envpool-*.whl")), keep_envpool, args.out, {"envpool/entry.py": ENTRY})
        assets = cut(next(tmp.glob("envpool_assets-*.whl")), keep_assets, args.out, {})
    download(DEPENDENCIES, args.out, args.python_version)
    for wheel in (envpool, assets):
        print(f"{wheel}: {wheel.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
