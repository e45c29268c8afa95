"""Stage MuJoCo Warp for a GPU machine without network (Python 3.12, CUDA 13, x86-64, an sm_90 GPU) inside the
64 MiB that one device call carries: the wheels it needs (PyCUDA and its dependencies from .gpu/, gymnasium,
mujoco-core, mujoco-warp, and MJX for the benchmark beside it) and warp-lang cut down to what a GPU uses, plus
remote.sh, which installs them there.

warp-lang 1.19.0's wheel is 149 MB: bin/warp.so (285 MB: NVRTC, nvJitLink and libmathdx linked in, and Warp's own
CUDA kernels for sm_75 to sm_120) and bin/warp-clang.so (67 MB, the CPU device's compiler). On the GPU only warp.so
is loaded (Warp skips a missing warp-clang.so, and has no CPU device then), and the driver loads the sm_90 cubins of
its fatbins, so the others are zeroed in place (headers kept, file layout unchanged) and the xz stream squeezes
them out; examples/ and tests/ are dropped. If the staged files are still over the limit, warp.so's archive is
split into parts of at most --part-mib, each in a folder (.gpu-mjwarp-2, ...) that another call carries
(remote.sh says how).

    python tools/stage_mjwarp.py [--out .gpu-mjwarp] [--wheels DIR] [--gpu-wheels .gpu]
"""

from __future__ import annotations

import argparse
import io
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = ["--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64"]
DOWNLOADS = ["mujoco-core==4.0.1", "mujoco-warp==4.0.0", "warp-lang==1.19.0", "gymnasium==1.4.0",
             "farama-notifications", "cloudpickle", "markupsafe", "typing_extensions",
             # MJX, benchmarks/mujoco_gpu_steps.py's other peer (the machine's JAX runs it): mujoco/mjx/ installed
             # in the same pip call as mujoco-core's mujoco/, and what it imports that the machine lacks
             "mujoco-mjx==3.17.0", "etils==1.15.0", "trimesh==5.2.0", "absl-py==2.5.1", "fsspec==2026.9.0",
             "importlib_resources==7.1.0", "zipp==4.1.2"]
# PyCUDA and what it imports, and PettingZoo (which `import fastvec` registers with), as .gpu/ holds them
# (../shared/gpu/stage.sh does not bring markupsafe and typing_extensions: they are downloaded above)
GPU_WHEELS = ["pycuda-", "pytools-", "platformdirs-", "siphash24-", "mako-", "pettingzoo-"]
KEEP_ARCH = 90  # H100 and H200
FATBIN_MAGIC = 0xBA55ED50
LIMIT = 64 * 2**20
SLACK = 2 * 2**20  # left free in each call beside the tracked tree, for files added before the calls


def fatbin_section(path: Path) -> tuple[int, int]:
    """(offset, size) of the .nv_fatbin section of an ELF shared library."""
    out = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if ".nv_fatbin" in line:
            fields = line.split("]", 1)[1].split()
            return int(fields[3], 16), int(fields[4], 16)
    raise ValueError(f"{path} has no .nv_fatbin section")


def keep_one_arch(data: bytearray, offset: int, size: int, arch: int) -> int:
    """Zero the payload of every cubin (fatbin entry kind 2) for another arch than `arch` in the fatbins at
    data[offset:offset + size]; PTX entries stay. Returns the bytes zeroed; a fatbin without an `arch` cubin is an
    error (its kernels would fall back to PTX, or fail)."""
    pos, zeroed = offset, 0
    while pos + 16 <= offset + size:
        magic, _, header, length = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8
            continue
        entry, end, archs = pos + header, pos + header + length, []
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            entry_arch = struct.unpack_from("<I", data, entry + 28)[0]
            archs.append((kind, entry_arch))
            if kind == 2 and entry_arch != arch:
                data[entry + entry_header:entry + entry_header + payload] = bytes(payload)
                zeroed += payload
            entry += entry_header + payload
        if (2, arch) not in archs:
            raise ValueError(f"a fatbin at byte {pos} has no sm_{arch} cubin (entries: {archs})")
        pos = end
    return zeroed


def warp_archive(wheel: Path, out: Path) -> None:
    """warp-lang's wheel as a .tar.xz of its files for the GPU: warp.so's cubins for sm_90 only, no
    warp-clang.so, examples or tests."""
    with zipfile.ZipFile(wheel) as zf, tarfile.open(out, "w:xz", preset=9) as tar:
        for info in zf.infolist():
            name = info.filename
            if name.endswith("/") or name == "warp/bin/warp-clang.so" or name.startswith(("warp/examples/",
                                                                                           "warp/tests/")):
                continue
            data = zf.read(info)
            if name == "warp/bin/warp.so":
                with tempfile.NamedTemporaryFile(suffix=".so") as tmp:
                    tmp.write(data)
                    tmp.flush()
                    offset, size = fatbin_section(Path(tmp.name))
                data = bytearray(data)
                zeroed = keep_one_arch(data, offset, size, KEEP_ARCH)
                print(f"warp.so: {len(data) / 1e6:.0f} MB, {zeroed / 1e6:.0f} MB of other archs' cubins zeroed")
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o755 if name.endswith(".so") else 0o644
            tar.addfile(member, io.BytesIO(bytes(data)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu-mjwarp")
    parser.add_argument("--wheels", type=Path, help="a folder that holds the wheels already (else pip downloads)")
    parser.add_argument("--gpu-wheels", type=Path, default=ROOT / ".gpu", help="PyCUDA's wheels for the GPU machine")
    parser.add_argument("--part-mib", type=float, default=60.0)
    args = parser.parse_args()
    wheels = args.wheels or Path(tempfile.mkdtemp(prefix="mjwarp-wheels-"))
    if args.wheels is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *PLATFORM,
                        "-d", str(wheels), *DOWNLOADS], check=True)
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    (out / "wheels").mkdir(parents=True)
    for name in DOWNLOADS:  # every downloaded wheel but warp's, which goes in cut down below
        dist = name.split("==")[0].replace("-", "_")
        if dist != "warp_lang":
            shutil.copy2(one(wheels, dist + "-"), out / "wheels")
    for prefix in GPU_WHEELS:
        shutil.copy2(one(args.gpu_wheels, prefix), out / "wheels")
    warp = out / "warp_lang-1.19.0-sm90.tar.xz"
    warp_archive(one(wheels, "warp_lang-"), warp)
    shutil.copy2(ROOT / "tools" / "mjwarp_remote.sh", out / "remote.sh")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    if total > LIMIT:  # warp's archive in parts: the first beside the wheels, each other one in a folder of its own
        data, part = warp.read_bytes(), int(args.part_mib * 2**20)
        tree = tracked_bytes()  # every call carries the working tree too
        room = LIMIT - (total - len(data)) - tree - SLACK
        part = min(part, LIMIT - tree - SLACK - 2**16)
        warp.unlink()
        (out / (warp.name + ".part0")).write_bytes(data[:room])
        for k, start in enumerate(range(room, len(data), part), 1):
            folder = out.parent / f"{out.name}-{k + 1}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            (folder / (warp.name + f".part{k}")).write_bytes(data[start:start + part])
            shutil.copy2(ROOT / "tools" / "mjwarp_remote.sh", folder / "remote.sh")
        print(f"{out}: over one call's 64 MiB; warp's archive split, one part per folder {out.name}-2, ...")
    for folder in sorted({p.parent for p in out.parent.glob(out.name + "*/*")}):
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        print(f"{folder}: {size / 2**20:.1f} MiB")


def tracked_bytes() -> int:
    """The size of the repository's tracked files, which travel with every device call."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    return sum((ROOT / n.decode()).stat().st_size for n in names if n and (ROOT / n.decode()).is_file())


def one(folder: Path, prefix: str) -> Path:
    found = sorted(p for p in folder.iterdir() if p.name.lower().startswith(prefix.lower()) and p.suffix == ".whl")
    if not found:
        raise FileNotFoundError(f"no {prefix}*.whl in {folder}")
    return found[-1]


if __name__ == "__main__":
    main()
