"""CleanRL's PPO on Gymnasium's CartPole-v1 (SyncVectorEnv, CleanRL's own setup) versus the same
script (examples/cleanrl_ppo.py) on fastvec/CartPole: wall time and steps until the mean of the
last 20 episodic returns reaches 475. Prints a table and writes benchmarks/results/cleanrl_compare_<device>.json.

    python benchmarks/cleanrl_compare.py [--seeds 1 2 3] [--num-envs 4] [--device cpu|cuda]

Every run is a fresh process with CleanRL's default hyperparameters (4 envs x 128 steps) and one
torch thread on the CPU (OMP_NUM_THREADS=1: a 64x64 MLP is fastest that way, and it keeps runs
comparable on a shared machine). `--num-envs` and `--num-steps` change both sides alike;
`--parallel K` runs K processes at once on a machine with enough idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SCRIPT = ROOT / "examples" / "cleanrl_ppo.py"

# (label, extra arguments): the same script, only the env line differs.
SETUPS = [
    ("gymnasium CartPole-v1 (SyncVectorEnv)", ["--env-id", "CartPole-v1", "--vectorization-mode", "sync"]),
    ("fastvec/CartPole", ["--env-id", "fastvec/CartPole"]),
]


def command(extra: list[str], seed: int, args) -> list[str]:
    return [sys.executable, str(SCRIPT), *extra, "--seed", str(seed), "--device", args.device,
           "--num-envs", str(args.num_envs), "--num-steps", str(args.num_steps),
           "--total-timesteps", str(args.max_steps), "--target-return", str(args.target),
           "--return-window", str(args.window), "--tensorboard", "false"]


def run_all(jobs: list[tuple[str, list[str]]], args) -> list[dict]:
    """Run (label, cmd) jobs, `args.parallel` at a time (each is one single-threaded process)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    pending, running, results = list(jobs), [], []
    while pending or running:
        while pending and len(running) < args.parallel:
            label, cmd = pending.pop(0)
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
            running.append((label, cmd, proc, time.perf_counter()))
        label, cmd, proc, start = running.pop(0)
        out, err = proc.communicate()
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
        result = json.loads(next(line for line in out.splitlines() if line.startswith("SUMMARY "))[8:])
        result.update(setup=label, process_seconds=round(wall, 3), command=" ".join(cmd[1:]))
        results.append(result)
        print(f"  {label:40s} seed {result['seed']}: {'reached' if result['reached_target'] else 'MISSED'} after "
              f"{result['global_step']:>7d} steps, {result['train_seconds']:6.1f} s training, "
              f"{result['process_seconds']:6.1f} s process", flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--device", default="cpu", help="cpu, or cuda (fastvec env on the GPU, zero-copy torch)")
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--window", type=int, default=20, help="episodes averaged for the target")
    parser.add_argument("--max-steps", type=int, default=1_000_000, help="give up after this many steps")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS for every run")
    parser.add_argument("--parallel", type=int, default=1,
                        help="runs at a time (only with enough idle cores; keep 1 for a GPU)")
    parser.add_argument("--out", default="", help="JSON path (default results/cleanrl_compare_<device>.json)")
    args = parser.parse_args()

    # Interleaved, so that drifts in machine load hit both sides alike.
    runs = run_all([(label, command(extra, seed, args)) for seed in args.seeds for label, extra in SETUPS], args)

    rows = []
    for label, _ in SETUPS:
        mine = [r for r in runs if r["setup"] == label]
        hit = [r for r in mine if r["reached_target"]]
        rows.append({
            "setup": label,
            "runs": len(mine),
            "reached": len(hit),
            "median_train_seconds": statistics.median(r["train_seconds"] for r in hit) if hit else None,
            "median_process_seconds": statistics.median(r["process_seconds"] for r in hit) if hit else None,
            "median_steps": statistics.median(r["global_step"] for r in hit) if hit else None,
            "steps_per_second": sum(r["global_step"] for r in mine) / sum(r["train_seconds"] for r in mine),
        })

    print(f"\nCleanRL PPO to a mean return of {args.target:g} (last {args.window} episodes), {args.num_envs} envs x "
          f"{args.num_steps} steps, device {args.device}, seeds {args.seeds}")
    print(f"{'setup':40s} {'reached':>8s} {'median s (train)':>17s} {'median s (process)':>19s} "
          f"{'median steps':>13s} {'steps/s':>9s}")
    for row in rows:
        def fmt(x, spec):
            return format("-", ">" + spec.split(".")[0]) if x is None else format(x, spec)
        print(f"{row['setup']:40s} {row['reached']:>3d}/{row['runs']:<4d} {fmt(row['median_train_seconds'], '17.1f')} "
              f"{fmt(row['median_process_seconds'], '19.1f')} {fmt(row['median_steps'], '13.0f')} "
              f"{row['steps_per_second']:9.0f}")

    out = Path(args.out) if args.out else RESULTS / f"cleanrl_compare_{args.device.split(':')[0]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date": date.today().isoformat(), "machine": platform.platform(), "cores": os.cpu_count(),
        "device": args.device, "num_envs": args.num_envs, "num_steps": args.num_steps, "target": args.target,
        "window": args.window, "threads": args.threads, "parallel": args.parallel, "rows": rows, "runs": runs,
    }, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
