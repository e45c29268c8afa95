"""PufferLib 5.0 beside fastvec-train on Breakout, both in one run on one GPU, from a user's checkout of PufferLib's
public sources: its own Breakout env and shipped config/breakout.ini against `fastvec-train breakout`
(fastvec/configs/breakout.toml; fastvec's Breakout is a port of PufferLib's, 864 points at most). Writes
benchmarks/results/pufferlib_breakout.json.

    python benchmarks/peers/pufferlib.py --pufferlib ~/PufferLib                  # build, then both sides
    python benchmarks/peers/pufferlib.py --pufferlib ~/PufferLib --seeds 1 2 3 --skip-sps
    python benchmarks/peers/pufferlib.py --pufferlib ~/PufferLib --pack .gpu/pufferlib   # sources for another machine
    python benchmarks/peers/pufferlib.py --pufferlib .gpu/pufferlib/pufferlib-COMMIT.tar  # a packed checkout

Two claims, one figure each. (1) Time to a score of 850: each side trains its shipped config to its whole budget,
seeds alternating between the sides; a seed that never reaches 850 counts as its whole training time and the ratio
is then a bound. PufferLib logs the mean score of the episodes that finished since its last log (at most every
0.6 s) and prints no episode count, so the last-K-episodes rule of fairness.py cannot be applied to it: both sides
are read by the mean of one such log interval, fastvec's per-update episodes merged into intervals of the same
length (fairness.interval_groups); fastvec's last-100-episodes time is recorded beside it. Each side's clock is its
own training clock (PufferLib: the dashboard's uptime, from the end of its set-up, CUDA-graph capture included;
fastvec: training seconds after start-up and graph capture); each process's wall time is recorded too.
(2) Training SPS at four policy sizes (MinGRU hidden x layers 40x2, 128x2, 256x3, 576x3: about 16K, 115K, 622K and
3M parameters), 8,192 envs x 64 steps, minibatches of 65,536, one pass over the batch, bf16, sync and async:
fastvec measured by benchmarks/train_speed.py's fastvec_sps, PufferLib by the median of its dashboard's SPS over the
second half of a run.

The build compiles PufferLib's src/pufferl.cu with its env compiled in, as its build.sh's native mode does, but with
no download and no ccache: it needs nvcc (CUDA 12.4 or later), the headers and libraries of cuBLAS, cuSOLVER,
cuRAND, NCCL and NVML (from CUDA_HOME, /usr, or Python's nvidia-* wheels: nvidia-cublas, nvidia-cusolver,
nvidia-curand, nvidia-nccl-cu13 that PyTorch brings, and nvidia-nvml-dev for nvml.h; the driver's
libnvidia-ml.so.1), gcc's OpenMP, and raylib 5.5 for Linux (include/raylib.h, lib/libraylib.a): the checkout's
raylib-5.5_linux_amd64/, which PufferLib's ./build.sh downloads on its first run, or --raylib DIR. --pack writes the checkout's committed sources (git archive)
and that raylib folder as one tar, for a machine with no network. The commit is read from the checkout's git or the
archive's header; --commit names it where neither has one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
from fairness import (WINDOW_EPISODES, bounded_time, interval_crossing, interval_groups, ratio,  # noqa: E402
                      seed_time)

TARGET = 850.0
PUFFER_LOG_SECONDS = 0.6  # pufferl.cu's run_train logs after an epoch once this long has passed since the last log
RAYLIB = "raylib-5.5_linux_amd64"
SIZES = [(40, 2), (128, 2), (256, 3), (576, 3)]  # MinGRU hidden x layers: ~16K, 115K, 622K, 3M parameters (fastvec)
SPS_SHAPE = {"envs": 8192, "horizon": 64, "minibatch": 65536}
SPS_EPOCHS = 40  # PufferLib epochs per SPS run: the second half's logs are its steady state
OUT = ROOT / "benchmarks" / "results" / "pufferlib_breakout.json"


class PufferError(Exception):
    """A checkout, build or run of PufferLib that this script cannot use; the message names the fix."""


# --- the checkout ----------------------------------------------------------------------------------------

def archive_commit(path: Path) -> str | None:
    """The commit `git archive` recorded in a tar's header, or None."""
    with tarfile.open(path) as tar:
        comment = tar.pax_headers.get("comment", "")
    return comment if re.fullmatch(r"[0-9a-f]{40}", comment) else None


def checkout_commit(path: Path) -> str | None:
    """The checkout's HEAD, or None where it has no git history."""
    try:
        git = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=False)
    except OSError:
        return None
    return git.stdout.strip() if git.returncode == 0 else None


def pack(checkout: Path, out_dir: Path, raylib: Path | None = None) -> Path:
    """out_dir/pufferlib-COMMIT.tar: the checkout's committed tree (git archive, the commit in its header) and raylib
    for Linux (a folder: raylib, else the checkout's) as RAYLIB/, where there is one."""
    commit = checkout_commit(checkout)
    if commit is None:
        raise PufferError(f"{checkout} is not a git checkout: --pack archives a commit; clone PufferLib's public "
                          f"sources there")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"pufferlib-{commit[:12]}.tar"
    subprocess.run(["git", "-C", str(checkout), "archive", "--format=tar", "-o", str(path.resolve()), commit],
                   check=True)
    raylib = raylib or checkout / RAYLIB
    if raylib.is_dir():
        with tarfile.open(path, "a") as tar:
            tar.add(raylib, arcname=RAYLIB)
    return path


def raylib_dir(path: Path, into: Path) -> Path:
    """raylib's folder: path itself, or a tar of it (a folder with include/ and lib/ in it, or those at its root)
    unpacked into `into`."""
    if not path.is_file():
        return path
    unpack(path, into)
    inner = [d for d in into.iterdir() if (d / "include" / "raylib.h").exists()]
    return inner[0] if inner else into


def unpack(archive: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


# --- the build -------------------------------------------------------------------------------------------

def python_nvidia_dirs() -> list[Path]:
    """The folders of Python's nvidia-* wheels (nvidia/cu13, nvidia/nccl, ...), where PyTorch's CUDA libraries are."""
    try:
        import nvidia
    except ImportError:
        return []
    return sorted(p for base in nvidia.__path__ for p in Path(base).iterdir() if p.is_dir())


def search_dirs(cuda_home: Path | None, extra: list[Path]) -> tuple[list[Path], list[Path]]:
    """(include dirs, library dirs) to look for CUDA's libraries in, the user's first."""
    includes, libs = list(extra), list(extra)
    if cuda_home:
        includes += [cuda_home / "include"]
        libs += [cuda_home / "lib64", cuda_home / "lib", cuda_home / "lib64" / "stubs"]
    for d in python_nvidia_dirs():
        includes.append(d / "include")
        libs.append(d / "lib")
    includes += [Path("/usr/include"), Path("/usr/local/cuda/include")]
    libs += [Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/local/cuda/lib64"), Path("/usr/local/nvidia/lib64"),
             Path("/usr/lib64"), *loader_dirs()]
    return includes, libs


def loader_dirs() -> list[Path]:
    """The folders the dynamic loader knows libraries in (`ldconfig -p`): the driver's libnvidia-ml.so.1."""
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return []
    return sorted({Path(line.rsplit("=> ", 1)[1]).parent for line in text.splitlines() if "=> " in line})


HEADERS = {"cublas": "cublas_v2.h", "cusolver": "cusolverDn.h", "curand": "curand.h", "nccl": "nccl.h",
           "nvml": "nvml.h"}
LIBS = {"cublas": "cublas", "cublasLt": "cublasLt", "cusolver": "cusolver", "curand": "curand", "nccl": "nccl",
        "nvml": "nvidia-ml"}


def find_library(name: str, dirs: list[Path]) -> tuple[Path, str] | None:
    """(dir, linker flag) of lib<name>.so, or of its newest versioned file where no plain .so exists (a wheel's)."""
    for d in dirs:
        if (d / f"lib{name}.so").exists():
            return d, f"-l{name}"
        versioned = sorted(d.glob(f"lib{name}.so.*"), key=lambda p: len(p.name))
        if versioned:
            return d, f"-l:{versioned[0].name}"
    return None


def find_deps(cuda_home: Path | None, extra: list[Path], strict: bool = True) -> dict:
    """Where each header and library the build needs is; PufferError naming every one that is missing (strict), or
    the missing ones listed under "missing"."""
    includes, libs = search_dirs(cuda_home, extra)
    found, missing = {"include": [], "lib": [], "link": []}, []
    for name, header in HEADERS.items():
        where = next((d for d in includes if (d / header).exists()), None)
        if where is None:
            missing.append(f"{header} ({name})")
        elif where not in found["include"]:
            found["include"].append(where)
    for name, lib in LIBS.items():
        hit = find_library(lib, libs)
        if hit is None:
            missing.append(f"lib{lib}.so ({name})")
            continue
        if hit[0] not in found["lib"]:
            found["lib"].append(hit[0])
        found["link"].append(hit[1])
    # raylib's GLFW opens libGL when a window opens (never here); build.sh links it, and so does this where it exists
    gl = find_library("GL", libs)
    if gl is not None:
        found["link"].append(gl[1])
    found["missing"] = missing
    if missing and strict:
        raise PufferError(f"not found: {', '.join(missing)}; install the nvidia-* wheels (pip install nvidia-cublas "
                          f"nvidia-cusolver nvidia-curand nvidia-nccl-cu13 nvidia-nvml-dev) or pass --cuda-dir with "
                          f"their include/ and lib/ folders")
    return found


def build_command(checkout: Path, binary: Path, deps: dict, raylib: Path, env: str = "breakout",
                  gpu_env: bool = True, arch: str = "native", nvcc: str = "nvcc") -> list[str]:
    """nvcc's argv that builds PufferLib's trainer with env compiled in (build.sh's native mode: the same defines,
    sources and libraries; gcc's OpenMP in place of LLVM's, no ccache), run from the checkout's root."""
    env_header = f"ocean/{env}/{env}.{'cu' if gpu_env else 'h'}"
    if not (checkout / env_header).exists():
        raise PufferError(f"{checkout / env_header} is missing: is {checkout} a PufferLib 5.0 checkout?")
    for need in ("include/raylib.h", "lib/libraylib.a"):
        if not (raylib / need).exists():
            raise PufferError(f"{raylib / need} is missing: run ./build.sh {env} once in the checkout (it downloads "
                              f"{RAYLIB}) or pass --raylib DIR")
    cmd = [nvcc, "-O2", "--threads", "0", f"-arch={arch}", "-std=c++17", "-I.", "-Isrc", f"-Iocean/{env}",
           "-Ivendor", f"-I{raylib / 'include'}"]
    cmd += [f"-I{d}" for d in deps["include"]]
    cmd += [f'-DENV_HEADER="{env_header}"', f"-DENV_NAME={env}", f'-DPUFFER_ENV_NAME="{env}"',
            "-DPUFFERLIB_BUILD_MAIN", "-Xcompiler=-DPLATFORM_DESKTOP", "-Xcompiler=-fopenmp",
            "-Xcompiler=-Wno-narrowing", "--diag-suppress=2361", "src/pufferl.cu", str(raylib / "lib" / "libraylib.a")]
    for d in deps["lib"]:
        cmd += [f"-L{d}", f"-Xlinker=-rpath={d}"]
    cmd += ["-lcudart", *deps["link"], "-lgomp", "-lm", "-lpthread", "-ldl", "-o", str(binary)]
    return cmd


# --- PufferLib's output ----------------------------------------------------------------------------------

SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
STAT_LABELS = ["Env", "Params", "Steps", "SPS", "Epoch", "Uptime", "To go"]


def abbreviated(text: str) -> float:
    """The dashboard's '%.1f' + K/M/B/T numbers: '12.3M' -> 12.3e6."""
    m = re.fullmatch(r"(-?[\d.]+)([KMBT]?)", text.strip())
    if not m:
        raise PufferError(f"not a dashboard number: {text!r}")
    return float(m.group(1)) * SUFFIX[m.group(2)]


def duration(text: str) -> float:
    """The dashboard's durations in seconds: '345ms', '12s 345ms', '1m 02s 345ms', '1d 2h 3m 4s'."""
    total, units = 0.0, {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3}
    parts = text.split()
    if not parts:
        raise PufferError("an empty dashboard duration")
    for part in parts:
        m = re.fullmatch(r"(\d+)(ms|d|h|m|s)", part)
        if not m:
            raise PufferError(f"not a dashboard duration: {text!r}")
        total += int(m.group(1)) * units[m.group(2)]
    return total


def parse_dashboards(text: str) -> list[dict]:
    """Every dashboard PufferLib's trainer printed to a pipe (no colours): its steps, SPS, uptime, epoch, parameters
    and env/* means (the episodes finished since the previous log), oldest first. Box rows by fixed columns: label
    [2:11], value [12:25]; env rows: key [2:27], value [28:37], key [40:65], value [66:75]."""
    frames, lines = [], None
    for line in text.splitlines():
        if line.startswith("╭"):
            lines = []
        elif line.startswith("╰") and lines is not None:
            frames.append(lines)
            lines = None
        elif lines is not None:
            lines.append(line)
    out = []
    for rows in frames:
        stats = {}
        for row in rows[2:2 + len(STAT_LABELS)]:
            stats[row[2:11].strip()] = row[12:25].strip()
        if list(stats) != STAT_LABELS:
            raise PufferError(f"a dashboard's rows are {list(stats)}, expected {STAT_LABELS}: not PufferLib 5.0's "
                              f"layout; adapt parse_dashboards")
        env = {}
        for row in rows[3 + len(STAT_LABELS):]:
            for key, value in ((row[2:27], row[28:37]), (row[40:65], row[66:75])):
                if key.strip():
                    env[key.strip()] = float(value)
        out.append({"steps": abbreviated(stats["Steps"]), "sps": abbreviated(stats["SPS"]),
                    "uptime_s": duration(stats["Uptime"]), "epoch": int(stats["Epoch"]),
                    "params": abbreviated(stats["Params"]), "env": env})
    return out


def puffer_groups(frames: list[dict], metric: str = "score") -> list[tuple]:
    """(steps, seconds, mean score, None) for every log with finished episodes: PufferLib prints no count."""
    return [(f["steps"], f["uptime_s"], f["env"][metric], None) for f in frames if metric in f["env"]]


def puffer_command(binary: Path, seed: int, scratch: Path, overrides: dict | None = None) -> list[str]:
    """PufferLib's train command for one seed, its config as shipped but for the seed, no final evaluation (10,000
    episodes by default; neither side evaluates here) and its checkpoints and logs in scratch. Every flag must name a
    key of its config/default.ini: its ini loader refuses any other."""
    flags = {"base.seed": seed, "base.eval_episodes": 0, "base.checkpoint_interval": 0,
             "base.checkpoint_dir": scratch / "checkpoints", "base.log_dir": scratch / "logs", **(overrides or {})}
    return [str(binary), "train", *(f"--{k}={v}" for k, v in flags.items())]


def puffer_run(binary: Path, checkout: Path, seed: int, overrides: dict | None, timeout: float) -> dict:
    """One PufferLib training run from the checkout's root (it reads config/ there); its dashboards parsed."""
    with tempfile.TemporaryDirectory(prefix="puffer-") as scratch:
        cmd = puffer_command(binary, seed, Path(scratch), overrides)
        record = {"seed": seed, "command": shlex.join(cmd).replace(scratch, "$SCRATCH")}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as err:
            out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
            return {**record, "error": f"timed out after {timeout:.0f} s", "frames": safe_parse(out)}
    record["process_s"] = round(time.perf_counter() - t0, 3)
    frames = safe_parse(proc.stdout)
    if proc.returncode != 0 or not frames:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {**record, "error": f"exit {proc.returncode}: {' | '.join(tail)}", "frames": frames}
    return {**record, "frames": frames}


def safe_parse(text: str) -> list[dict]:
    try:
        return parse_dashboards(text)
    except PufferError:
        return []


# --- the two claims --------------------------------------------------------------------------------------

def puffer_seed(run: dict, target: float = TARGET) -> dict:
    """A PufferLib seed's time to target by its log intervals, or its whole training time as a bound."""
    frames = run.get("frames", [])
    if "error" in run and not frames:
        return {k: v for k, v in run.items() if k != "frames"}
    groups = puffer_groups(frames)
    last = frames[-1]
    out = {k: v for k, v in run.items() if k != "frames"}
    out.update(train_s=last["uptime_s"], steps=last["steps"], params=last["params"],
               final_interval_score=groups[-1][2] if groups else None, groups=groups,
               **bounded_time(interval_crossing(groups, target), last["uptime_s"]))
    return out


def fastvec_seed(seed: int, device: str, target: float = TARGET, max_seconds: float | None = None,
                 train: dict | None = None) -> dict:
    """fastvec-train breakout (its shipped config; train: [train] settings over it) for one seed over its whole
    budget, every update's finished episodes logged (score mean and count): its time to target by PufferLib's log
    intervals, and by the last 100 episodes."""
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    config = load_config("breakout", {"train": {**(train or {}), "device": device, "seed": seed, "log_interval": 0.0,
                                                "checkpoint_seconds": 0.0, "checkpoint_interval": 10 ** 9,
                                                "stop_at_target": False}})
    groups = []

    def watch(metrics, seconds, steps):
        if metrics and metrics.get("episodes"):
            groups.append((steps, round(seconds, 4), round(metrics["score"], 3), metrics["episodes"]))
        return max_seconds is not None and seconds >= max_seconds

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fastvec-breakout-") as run_dir:
        summary = run.train(config, Path(run_dir) / "run", dashboard=False, watch=watch)
        close = getattr(summary["trainer"], "close", None)
        if close is not None:
            close()
    train_s = summary["elapsed"]
    intervals = interval_groups(groups, PUFFER_LOG_SECONDS)
    window = seed_time(groups, target, train_s, WINDOW_EPISODES)
    return {"seed": seed, "startup_s": round(summary["startup"], 3), "train_s": round(train_s, 4),
            "steps": summary["trained_steps"], "sps": round(summary["sps"]),
            "process_s": round(time.perf_counter() - t0, 3),
            "capped": max_seconds is not None and train_s >= max_seconds,
            "final_interval_score": intervals[-1][2] if intervals else None, "groups": groups,
            **bounded_time(interval_crossing(intervals, target), train_s),
            "last_100_episodes": {k: window[k] for k in ("reached", "time_s", "lower_bound")}}


def time_to_target(binary: Path, checkout: Path, seeds: list[int], device: str, max_seconds: float,
                   target: float = TARGET) -> dict:
    """Both sides on every seed, alternating which goes first (PufferLib on the 1st, 3rd, ... seed)."""
    puffer, fastvec = [], []
    for i, seed in enumerate(seeds):
        order = ("puffer", "fastvec") if i % 2 == 0 else ("fastvec", "puffer")
        for side in order:
            if side == "puffer":
                puffer.append(puffer_seed(puffer_run(binary, checkout, seed, None, max_seconds), target))
            else:
                fastvec.append(fastvec_seed(seed, device, target, max_seconds))
            print(json.dumps({"side": side, "seed": seed, **{k: (puffer if side == "puffer" else fastvec)[-1].get(k)
                              for k in ("time_s", "reached", "train_s", "error")}}), flush=True)
    return summarize_time(puffer, fastvec, target)


def summarize_time(puffer: list[dict], fastvec: list[dict], target: float = TARGET) -> dict:
    """Each side's seeds and the ratio of the medians (PufferLib's over fastvec's), every seed counted: a run that
    failed counts as neither side's time and is listed."""
    ok = [r for r in puffer if "time_s" in r]
    return {"target": target, "puffer_seeds": puffer, "fastvec_seeds": fastvec,
            "puffer_failed": [r["seed"] for r in puffer if "time_s" not in r],
            **ratio([r["time_s"] for r in ok], [r["lower_bound"] for r in ok],
                    [r["time_s"] for r in fastvec], [r["lower_bound"] for r in fastvec])}


def sps_overrides(hidden: int, layers: int, is_async: bool) -> tuple[dict, dict]:
    """(fastvec settings, PufferLib flags) of one SPS run: the same envs, horizon, minibatch, one pass, bf16."""
    shape = SPS_SHAPE
    fastvec = {"env.num_envs": shape["envs"], "policy.hidden": hidden, "policy.layers": layers,
               "train.horizon": shape["horizon"], "train.bptt_horizon": shape["horizon"],
               "train.minibatch_size": shape["minibatch"], "train.precision": "bf16", "train.async": is_async,
               "train.optimizer": "muon"}
    puffer = {"vec.total_agents": shape["envs"], "policy.hidden_size": hidden, "policy.num_layers": layers,
              "train.horizon": shape["horizon"], "train.minibatch_size": shape["minibatch"], "train.replay_ratio": 1,
              "base.async": int(is_async),
              "train.total_timesteps": shape["envs"] * shape["horizon"] * SPS_EPOCHS}
    return fastvec, puffer


def puffer_sps(frames: list[dict]) -> float | None:
    """PufferLib's steady-state SPS: the median of the SPS its dashboard showed over the second half of the run."""
    if not frames:
        return None
    late = [f["sps"] for f in frames[len(frames) // 2:] if f["sps"] > 0]
    return statistics.median(late) if late else None


def sps_rows(binary: Path, checkout: Path, sizes, modes, timeout: float) -> list[dict]:
    import train_speed  # benchmarks/train_speed.py: fastvec's steady-state SPS, measured as its table is
    rows = []
    for hidden, layers in sizes:
        for is_async in modes:
            fastvec_cfg, puffer_flags = sps_overrides(hidden, layers, is_async)
            mine = train_speed.fastvec_sps(fastvec_cfg, env="breakout", updates=10)
            run = puffer_run(binary, checkout, 1, puffer_flags, timeout)
            peer = puffer_sps(run.get("frames", []))
            row = {"hidden": hidden, "layers": layers, "async": is_async, "fastvec_params": mine["params"],
                   "fastvec_sps": mine["sps"], "fastvec_startup_s": mine["startup_s"],
                   "puffer_params": run["frames"][-1]["params"] if run.get("frames") else None,
                   "puffer_sps": peer, "puffer_command": run["command"], "puffer_error": run.get("error"),
                   "puffer_logs": [(f["steps"], f["uptime_s"], f["sps"]) for f in run.get("frames", [])],
                   "ratio": round(mine["sps"] / peer, 3) if peer else None}
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("hidden", "layers", "async", "fastvec_sps", "puffer_sps",
                                                  "ratio")}), flush=True)
    return rows


# --- the run ---------------------------------------------------------------------------------------------

def read_config(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def ini_value(text: str | None, section: str, key: str) -> str | None:
    """A key's value in an ini text as PufferLib's loader reads it (comments after # or ;), or None."""
    current = None
    for line in (text or "").splitlines():
        line = re.split(r"[#;]", line, maxsplit=1)[0].strip()
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == section and "=" in line and line.split("=", 1)[0].strip() == key:
            return line.split("=", 1)[1].strip()
    return None


def fastvec_frameskip() -> int:
    """fastvec's Breakout frameskip as `fastvec-train breakout` loads it (each side steps its own shipped env)."""
    from fastvec.trainer.config import load_config
    return load_config("breakout", {})["env"]["frameskip"]


def gpu_name() -> str:
    try:
        from fastvec.trainer.cuda import device
        return device.init().Context.get_device().name()
    except Exception as err:  # noqa: BLE001 - PyCUDA's errors where there is no GPU: recorded, the build still runs
        return f"unavailable: {err}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pufferlib", required=True, type=Path,
                        help="a checkout of PufferLib's public sources, or a tar that --pack wrote")
    parser.add_argument("--commit", help="the checkout's commit where it has no git history (recorded)")
    parser.add_argument("--pack", type=Path, metavar="DIR", help="only write the checkout as a tar into DIR")
    parser.add_argument("--build-dir", type=Path, help="where the checkout is unpacked and built (default: a "
                        "temporary folder for a tar, CHECKOUT/build for a folder)")
    parser.add_argument("--raylib", type=Path,
                        help=f"raylib 5.5 for Linux, a folder or a tar of one (default: CHECKOUT/{RAYLIB})")
    parser.add_argument("--cuda-dir", type=Path, action="append", default=[],
                        help="a folder with include/ and lib/ files the build needs (repeatable)")
    parser.add_argument("--arch", default="native", help="nvcc -arch (native: this machine's GPU)")
    parser.add_argument("--cpu-env", action="store_true",
                        help="PufferLib's CPU Breakout (breakout.h, build.sh's default) instead of its CUDA one")
    parser.add_argument("--dry-run", action="store_true", help="print the build and run commands, run nothing")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="cap on a run's training seconds (fastvec) and process seconds (PufferLib)")
    parser.add_argument("--skip-sps", action="store_true")
    parser.add_argument("--skip-time", action="store_true")
    parser.add_argument("--sps-modes", nargs="+", default=["sync", "async"], choices=["sync", "async"])
    parser.add_argument("--device", default="cuda", help="fastvec's device")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    source = args.pufferlib.resolve()

    if args.pack:
        print(f"wrote {pack(source, args.pack, args.raylib.resolve() if args.raylib else None)}")
        return 0
    if source.is_file():
        commit = args.commit or archive_commit(source)
        checkout = unpack(source, args.build_dir or Path(tempfile.mkdtemp(prefix="pufferlib-")))
    else:
        commit = args.commit or checkout_commit(source)
        checkout = source
    build_dir = (args.build_dir or checkout / "build").resolve()
    binary = build_dir / "puffer_breakout"
    raylib = raylib_dir((args.raylib or checkout / RAYLIB).resolve(), build_dir / "raylib")
    nvcc = shutil.which("nvcc") or "nvcc"
    cuda_home = Path(os.environ.get("CUDA_HOME") or Path(nvcc).resolve().parent.parent)
    deps = find_deps(cuda_home, [d for base in args.cuda_dir for d in (base, base / "include", base / "lib")],
                     strict=not args.dry_run)
    build = build_command(checkout, binary, deps, raylib, gpu_env=not args.cpu_env, arch=args.arch, nvcc=nvcc)
    if args.dry_run:
        if deps["missing"]:
            print(f"# not found here, left out of the command: {', '.join(deps['missing'])}")
        print(f"cd {shlex.quote(str(checkout))} && {shlex.join(build)}")
        print(shlex.join(puffer_command(binary, args.seeds[0], Path("$SCRATCH"))))
        return 0

    if commit is None:
        raise PufferError(f"{source} has no git history and no commit in its header: name its commit with --commit")
    build_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run(build, cwd=checkout, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PufferError(f"the build failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    out = {"date": date.today().isoformat(), "machine": platform.platform(), "python": platform.python_version(),
           "gpu": gpu_name(), "fastvec_commit": checkout_commit(ROOT), "puffer_commit": commit,
           "command": shlex.join(["python", "benchmarks/peers/pufferlib.py",
                                  *(sys.argv[1:] if argv is None else argv)]),
           "build": {"command": shlex.join(build), "seconds": round(time.perf_counter() - t0, 1),
                     "env": "ocean/breakout/breakout." + ("h" if args.cpu_env else "cu")},
           "smoothing": {"rule": f"the mean score of the episodes finished in one log interval (PufferLib logs at "
                                 f"most every {PUFFER_LOG_SECONDS} s and prints each interval's mean, not its episode "
                                 f"count; fastvec's per-update groups merged into intervals of the same length)",
                         "interval_s": PUFFER_LOG_SECONDS, "fastvec_also": f"last {WINDOW_EPISODES} episodes",
                         "note": "an interval closes no sooner than 0.6 s after the last one, so a run of about a "
                                 "second is read at one or two points: the rule can delay a side's crossing, never "
                                 "advance it"},
           "clocks": {"puffer": "its dashboard's uptime: from the end of its set-up, CUDA-graph capture included",
                      "fastvec": "training seconds after start-up (compiles, arena, graph capture)"},
           "configs": {"puffer": {"breakout.ini": read_config(checkout / "config" / "breakout.ini"),
                                  "default.ini": read_config(checkout / "config" / "default.ini")},
                       "fastvec": read_config(ROOT / "fastvec" / "configs" / "breakout.toml")},
           "frameskip": {"puffer": ini_value(read_config(checkout / "config" / "breakout.ini"), "env", "frameskip"),
                         "fastvec": fastvec_frameskip()},
           "seeds": args.seeds, "max_seconds": args.max_seconds}
    if not args.skip_time:
        out["time_to_850"] = time_to_target(binary, checkout, args.seeds, args.device, args.max_seconds)
        out["fastvec_command"] = ("fastvec-train breakout --train.seed=S --train.log_interval=0 "
                                  "--train.stop_at_target=false --train.checkpoint_seconds=0")
    if not args.skip_sps:
        out["sps_shape"] = SPS_SHAPE
        out["sps"] = sps_rows(binary, checkout, SIZES, [m == "async" for m in args.sps_modes], args.max_seconds)
    out["wall_s"] = round(time.perf_counter() - start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {args.out} ({out['wall_s']} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except PufferError as err:
        sys.exit(f"pufferlib.py: {err}")
