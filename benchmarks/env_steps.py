"""Env-only throughput: steps per second through `step()` with random actions, for fastvec and, in
the same run, Gymnasium's own CartPole-v1 (native vector env and SyncVectorEnv). Prints a table and
writes benchmarks/results/env_steps_cpu.json.

    python benchmarks/env_steps.py [--seconds 1.0] [--num-envs 64 512 4096 16384]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import gymnasium as gym
import numpy as np

import fastvec  # noqa: F401  (registers fastvec/...)

RESULTS = Path(__file__).parent / "results"


def steps_per_second(envs, seconds: float, pool: int = 64) -> float:
    """Env steps per second of envs.step with pre-drawn random actions (drawing is not timed)."""
    rng = np.random.default_rng(0)
    n, high = envs.num_envs, int(envs.single_action_space.n)
    actions = [rng.integers(0, high, n) for _ in range(pool)]
    envs.reset(seed=0)
    for a in actions[:4]:
        envs.step(a)  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions[:8]:
            envs.step(a)
        steps += 8
    return steps * n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64, 512, 4096, 16384])
    parser.add_argument("--no-breakout", dest="breakout", action="store_false", help="CartPole only")
    parser.add_argument("--sync-max-envs", type=int, default=512, help="largest num_envs for SyncVectorEnv (slow)")
    args = parser.parse_args()

    rows = []
    for n in args.num_envs:
        row = {"num_envs": n}
        row["fastvec CartPole"] = steps_per_second(gym.make_vec("fastvec/CartPole", n, copy=False), args.seconds)
        row["gymnasium CartPole vector"] = steps_per_second(
            gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point"), args.seconds)
        if n <= args.sync_max_envs:
            row["gymnasium CartPole Sync"] = steps_per_second(
                gym.make_vec("CartPole-v1", n, vectorization_mode="sync"), args.seconds)
        breakout = gym.make_vec("fastvec/Breakout", n, copy=False) if args.breakout else None
        if breakout is not None:
            row["fastvec Breakout"] = steps_per_second(breakout, args.seconds)
            lib = breakout.unwrapped.batch.env.lib
            threads = lib.fv_set_num_threads(1)
            row["fastvec Breakout 1 thread"] = steps_per_second(breakout, args.seconds)
            lib.fv_set_num_threads(threads)
        rows.append(row)

    columns = [k for k in rows[-1] if k != "num_envs"] + (
        ["gymnasium CartPole Sync"] if "gymnasium CartPole Sync" not in rows[-1] else [])
    print(f"env steps/s on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {date.today()}")
    print(f"{'num_envs':>9} | " + " | ".join(f"{c:>26}" for c in columns))
    for row in rows:
        print(f"{row['num_envs']:>9} | " + " | ".join(
            f"{row[c] / 1e6:>24.2f} M" if c in row else f"{'-':>26}" for c in columns))
        if "gymnasium CartPole vector" in row:
            print(f"{'':>9}   fastvec/gymnasium CartPole speed-up: {row['fastvec CartPole'] / row['gymnasium CartPole vector']:.1f}x")
    RESULTS.mkdir(exist_ok=True)
    out = {"date": str(date.today()), "machine": platform.platform(), "cores": os.cpu_count(), "rows": rows}
    (RESULTS / "env_steps_cpu.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
