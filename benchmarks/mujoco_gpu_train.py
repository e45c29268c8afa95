"""fastvec-train over a MuJoCo task with the physics on the GPU (MuJoCo Warp, train.env_device=cuda) beside the same
CUDA trainer over the host's C batch (train.env_device=cpu, mujoco.toml: CleanRL's shape), in one run. The target
is what the host path reaches (the median over its seeds of each seed's last-K-episode mean after its budget); each
side's time to it is read by benchmarks/peers/fairness.py's rule (a seed that never gets there counts as its whole
training time, and the ratio is then a bound). Prints a table and writes benchmarks/results/mujoco_gpu_train.json.

    python benchmarks/mujoco_gpu_train.py --tasks Hopper Ant HalfCheetah --seeds 1 2 3
    python benchmarks/mujoco_gpu_train.py --tasks InvertedPendulum --seeds 1 --gpu-set train.total_timesteps=200000

The GPU side's shape (--gpu-set, over mujoco.toml) is fastvec/configs/mujoco-warp.toml's (GPU_SHAPE): many envs and
few, large minibatches, as GPU PPO runs (Brax's) use."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))

from fairness import WINDOW_EPISODES, final_window_mean, seed_time  # noqa: E402
from train_peers import fastvec_run  # noqa: E402

GPU_CONFIG = ROOT / "fastvec" / "configs" / "mujoco-warp.toml"
GPU_SHAPE = {f"{section}.{key}": value for section, keys in tomllib.loads(GPU_CONFIG.read_text()).items()
             for key, value in keys.items()}


def settings_of(pairs: dict) -> dict:
    """{"train.horizon": 16} -> {"train": {"horizon": 16}}."""
    out: dict = {}
    for key, value in pairs.items():
        section, name = key.split(".", 1)
        out.setdefault(section, {})[name] = value
    return out


def parse_sets(items: list[str]) -> dict:
    """KEY=VALUE pairs with VALUE read as JSON where it parses (numbers, true/false), else as a string."""
    out = {}
    for item in items:
        key, _, text = item.partition("=")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def side(task: str, seeds: list[int], env_device: str, shape: dict, threshold, max_seconds: float, eval_episodes: int,
         window: int, root: Path, device: str = "cuda") -> list[dict]:
    settings = settings_of({**shape, "train.env_device": env_device})
    return [fastvec_run(task.lower(), seed, device, threshold, max_seconds, eval_episodes, None, root, settings,
                        window) for seed in seeds]


def summary(runs: list[dict], target: float | None, window: int) -> dict:
    ok = [r for r in runs if "groups" in r]
    times = [seed_time(r["groups"], target, r["train_s"], window) for r in ok] if target is not None else []
    return {"seconds_to_target": [t["time_s"] for t in times], "reached": [t["reached"] for t in times],
            "median_s": statistics.median(t["time_s"] for t in times) if times else None,
            "bound": any(not t["reached"] for t in times),
            "final_return": [final_window_mean(r["groups"], window) for r in ok],
            "eval_return": [r["eval_return"] for r in ok], "sps": [r["sps"] for r in ok],
            "train_s": [r["train_s"] for r in ok], "steps": [r["steps"] for r in ok],
            "capped": [r["capped"] for r in ok], "startup_s": [r["startup_s"] for r in ok],
            "errors": [r.get("refused") or r.get("error") for r in runs if "groups" not in r]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["Hopper", "Ant", "HalfCheetah"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--gpu-set", nargs="*", default=[], metavar="SECTION.KEY=VALUE", help="over GPU_SHAPE")
    p.add_argument("--cpu-set", nargs="*", default=[], metavar="SECTION.KEY=VALUE", help="over mujoco.toml")
    p.add_argument("--max-seconds", type=float, default=300.0, help="safety cap on a run's training seconds")
    p.add_argument("--eval-episodes", type=int, default=100)
    p.add_argument("--window", type=int, default=WINDOW_EPISODES)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="the trainer of both sides (cpu: the NumPy trainer over host batches, a check of this script)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mujoco_gpu_train.json"))
    args = p.parse_args(argv)
    gpu_shape, cpu_shape = {**GPU_SHAPE, **parse_sets(args.gpu_set)}, parse_sets(args.cpu_set)
    rows, t0 = [], time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            host = side(task, args.seeds, "cpu", cpu_shape, None, args.max_seconds, args.eval_episodes, args.window,
                        Path(tmp), args.device)
            finals = [final_window_mean(r["groups"], args.window) for r in host if "groups" in r]
            finals = [f for f in finals if f is not None]
            target = statistics.median(finals) if finals else None
            gpu = side(task, args.seeds, "cuda", gpu_shape, target, args.max_seconds, args.eval_episodes,
                       args.window, Path(tmp), args.device)
            row = {"task": task, "target": target, "host": summary(host, target, args.window),
                   "gpu": summary(gpu, target, args.window)}
            h, g = row["host"]["median_s"], row["gpu"]["median_s"]
            row["faster"] = round(h / g, 2) if h and g else None
            rows.append(row)
            print(f"{task}: target {target}, host {h} s, MuJoCo Warp {g} s, ratio {row['faster']}"
                  f"{' (a bound)' if row['gpu']['bound'] else ''}", flush=True)
    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(["python", "benchmarks/mujoco_gpu_train.py",
                                                                      *(argv if argv is not None else sys.argv[1:])]),
           "device": args.device, "gpu_shape": gpu_shape, "cpu_shape": cpu_shape, "seeds": args.seeds,
           "window": args.window, "rows": rows, "wall_s": round(time.perf_counter() - t0, 1)}
    try:
        import pycuda.driver as drv
        out["gpu"] = drv.Device(0).name()
    except Exception:  # the runs above say why there is none
        out["gpu"] = None
    Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
