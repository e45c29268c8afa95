"""Multi-agent Pong throughput: `fastvec.pettingzoo.vector_env("Pong", G)` beside SuperSuit's
`concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(parallel_env("Pong")), G)`, the speed an existing
PettingZoo self-play user gets today from the same game. Random actions, same-step autoreset in
both; agent steps per second = game steps per second * 2. Prints a table and writes
benchmarks/results/pong_steps_<device>.json and pong_<device>.md.

    python benchmarks/pong_steps.py [--seconds 2] [--num-games 64 1024 4096] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np

from fastvec.pettingzoo import parallel_env, vector_env

RESULTS = Path(__file__).parent / "results"


def agent_steps_per_second(envs, seconds: float, pool: int = 16) -> float:
    """Agent steps (rows) per second of envs.step with pre-drawn random actions."""
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, envs.num_envs) for _ in range(pool)]
    envs.reset(seed=0)
    for a in actions[:2]:
        envs.step(a)  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            envs.step(a)
        steps += len(actions)
    return steps * envs.num_envs / (time.perf_counter() - start)


def supersuit_env(num_games: int):
    import supersuit as ss

    return ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(parallel_env("Pong")), num_games,
                                 num_cpus=0, base_class="gymnasium")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--num-games", type=int, nargs="+", default=[64, 1024, 4096])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--supersuit-max-games", type=int, default=1024, help="largest SuperSuit run (slow)")
    args = parser.parse_args()

    rows = []
    for g in args.num_games:
        ours = agent_steps_per_second(vector_env("Pong", g, device=args.device, copy=False), args.seconds)
        theirs = None
        if g <= args.supersuit_max_games:
            try:
                theirs = agent_steps_per_second(supersuit_env(g), args.seconds)
            except ImportError:
                pass
        rows.append({"num_games": g, "num_envs": 2 * g, "fastvec_vector_env": ours, "supersuit_concat": theirs,
                     "speedup": None if theirs is None else ours / theirs})

    threads = os.environ.get("OMP_NUM_THREADS")  # the batch runs OpenMP over games from 256 games up
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
               f"OMP_NUM_THREADS={threads or 'unset'}")
    head = "| games | rows | fastvec vector_env (agent steps/s) | SuperSuit concat of our parallel_env | speedup |"
    lines = [head, "|---:|---:|---:|---:|---:|"]
    for r in rows:
        theirs = "-" if r["supersuit_concat"] is None else f"{r['supersuit_concat']:,.0f}"
        speedup = "-" if r["speedup"] is None else f"{r['speedup']:,.0f}x"
        lines.append(f"| {r['num_games']} | {r['num_envs']} | {r['fastvec_vector_env']:,.0f} | {theirs} | {speedup} |")
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    meta = {"date": str(date.today()), "machine": machine, "device": args.device, "seconds": args.seconds,
            "command": "python benchmarks/pong_steps.py " + " ".join(
                [f"--seconds {args.seconds}", "--num-games", *map(str, args.num_games), f"--device {args.device}"])}
    (RESULTS / f"pong_steps_{args.device}.json").write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    (RESULTS / f"pong_{args.device}.md").write_text(
        f"### Pong, two players: vector_env vs SuperSuit ({args.device})\n\n"
        f"{meta['date']}, {machine}; `{meta['command']}`. Random actions, same-step autoreset, "
        "agent steps per second (rows x steps); SuperSuit wraps fastvec's own one-game parallel_env, "
        "so the game's C code is the same and the gap is the per-game Python layer.\n\n" + table + "\n")


if __name__ == "__main__":
    main()
