"""CleanRL's PPO on Gymnasium's CartPole-v1 (SyncVectorEnv, CleanRL's own setup) versus the same
script (examples/cleanrl_ppo.py) on fastvec/CartPole: wall time and steps until the mean of the
last 20 episodic returns reaches 475. Prints a table and writes benchmarks/results/cleanrl_compare_<device>.json.

    python benchmarks/cleanrl_compare.py [--seeds 1 2 3] [--num-envs 4] [--device cpu|cuda]
    python benchmarks/cleanrl_compare.py --env-only   # env steps/s alone: vector API and SB3 adapter

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


def env_only(args) -> None:
    """Env steps/s alone (random actions) through what the two sides of the comparison use, and
    through the SB3 adapter against SB3's DummyVecEnv; writes results/integrations_env_steps.json."""
    import gymnasium as gym
    import numpy as np
    from gymnasium.vector import AutoresetMode

    import fastvec  # noqa: F401

    def rate(step, n, seconds=1.5):
        rng = np.random.default_rng(0)
        actions = [rng.integers(0, 2, n) for _ in range(64)]
        for a in actions[:4]:
            step(a)  # warm-up
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions:
                step(a)
            done += len(actions)
        return done * n / (time.perf_counter() - start)

    same_step = AutoresetMode.SAME_STEP
    rows = []
    for n in args.env_only_num_envs:
        ours = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec("fastvec/CartPole", n, autoreset_mode=same_step))
        theirs = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec(
            "CartPole-v1", n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": same_step}))
        ours.reset(seed=0)
        theirs.reset(seed=0)
        row = {"num_envs": n, "fastvec vector API": rate(ours.step, n), "SyncVectorEnv": rate(theirs.step, n)}
        try:
            from stable_baselines3.common.monitor import Monitor
            from stable_baselines3.common.vec_env import DummyVecEnv

            from fastvec.wrappers.sb3 import FastvecVecEnv

            sb3_ours = FastvecVecEnv("fastvec/CartPole", n)
            sb3_theirs = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))] * n)
            sb3_ours.reset()
            sb3_theirs.reset()
            row["SB3 FastvecVecEnv"] = rate(sb3_ours.step, n)
            row["SB3 DummyVecEnv"] = rate(sb3_theirs.step, n)
        except ImportError:
            pass
        rows.append(row)
        print("  ".join(f"{k} {v:,.0f}" for k, v in row.items()), flush=True)
    out = RESULTS / "integrations_env_steps.json"
    out.write_text(json.dumps({"date": date.today().isoformat(), "machine": platform.platform(),
                               "cores": os.cpu_count(), "device": "cpu", "rows": rows}, indent=2))
    print(f"wrote {out}")


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
    parser.add_argument("--env-only", action="store_true", help="measure env steps/s only (no training)")
    parser.add_argument("--env-only-num-envs", type=int, nargs="+", default=[4, 32, 256])
    parser.add_argument("--out", default="", help="JSON path (default results/cleanrl_compare_<device>.json)")
    args = parser.parse_args()
    if args.env_only:
        return env_only(args)

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
