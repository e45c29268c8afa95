"""CPU stepping on a busy machine: CartPole at 4,096 envs through the Gymnasium vector face, with the
machine idle and with busy competing processes (a Python busy loop, `while True: pass`, one per core taken),
fastvec's default threads and one thread, beside Gymnasium's own NumPy vector CartPole in the same run.
Prints a table and writes benchmarks/results/busy_cpu.json.

    python benchmarks/busy_cpu.py [--seconds 1.0] [--rounds 5] [--num-envs 4096] [--competitors 0 1]
                                  [--extra-env FASTVEC_NUM_THREADS=2 ...]

Each configuration runs in a fresh process (so FASTVEC_* variables take effect at start-up) that times
one window per competitor count back to back on one batch, starting and killing the competitors
around its window; --rounds rounds go over every configuration in turn (idle first in one round, busy
first in the next), and each figure is the median of its windows, so neither a slow start nor another
program's burst on a shared machine decides it. The target: with a competitor, fastvec's default is >= 4x
Gymnasium's and within 2x of its own idle figure.
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

RESULTS = Path(__file__).parent / "results"
# A busy loop that ends itself once its parent is gone (a killed run never leaves one spinning).
BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    for _ in range(200_000): pass"


def make(kind: str, num_envs: int):
    import gymnasium as gym

    import fastvec  # noqa: F401  (registers fastvec/...)

    if kind == "fastvec":
        return gym.make_vec("fastvec/CartPole", num_envs=num_envs)
    # Gymnasium's NumPy CartPole, its fastest vector env
    return gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")


def window(envs, actions, seconds: float) -> tuple[float, float]:
    """(env steps per second, slowest step in seconds) of envs.step over `seconds`."""
    steps, worst, start = 0, 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions[:8]:
            t0 = time.perf_counter()
            envs.step(a)
            worst = max(worst, time.perf_counter() - t0)
        steps += 8
    return steps * envs.num_envs / (time.perf_counter() - start), worst


def measure(kind: str, num_envs: int, seconds: float, competitors: list[int]) -> dict:
    """In this process: one window of `seconds` per entry of `competitors` (that many busy processes
    spinning during it), on one env batch, so that idle and busy windows are measured back to back."""
    import numpy as np

    envs = make(kind, num_envs)
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 2, num_envs) for _ in range(16)]
    envs.reset(seed=0)
    for a in actions:
        envs.step(a)  # warm-up
    result = {}
    for k in competitors:
        procs = start_competitors(k)
        try:
            rate, worst = window(envs, actions, seconds)
        finally:
            stop(procs)
        result[str(k)] = {"steps_per_s": rate, "slowest_step_s": worst}
    envs.close()
    return result


def run_child(kind: str, env: dict, competitors: list[int], args) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--num-envs", str(args.num_envs),
           "--seconds", str(args.seconds), "--competitors", *map(str, competitors)]
    proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {env} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def start_competitors(k: int) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(k)]
    if procs:
        time.sleep(0.3)  # let them start spinning
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="timed seconds per window")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds over every configuration (each reported figure is the median window)")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--competitors", type=int, nargs="+", default=[0, 1],
                        help="busy processes running during a window (0 = idle)")
    parser.add_argument("--extra-env", nargs="*", default=[],
                        help="further fastvec configurations to measure, as VAR=VALUE (comma-joined for several)")
    parser.add_argument("--out", type=Path, default=RESULTS / "busy_cpu.json")
    parser.add_argument("--child", choices=["fastvec", "gymnasium"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.num_envs, args.seconds, args.competitors)))
        return

    clean = {k: v for k, v in os.environ.items() if not (k.startswith("OMP_") or k.startswith("GOMP_")
                                                          or k == "FASTVEC_NUM_THREADS")}
    os.environ.clear()
    os.environ.update(clean)
    configs = [("fastvec (default)", "fastvec", {}), ("fastvec, FASTVEC_NUM_THREADS=1", "fastvec",
                                                      {"FASTVEC_NUM_THREADS": "1"})]
    for extra in args.extra_env:
        env = dict(item.split("=", 1) for item in extra.split(","))
        configs.append((f"fastvec, {extra}", "fastvec", env))
    configs.append(("Gymnasium CartPoleVectorEnv (NumPy)", "gymnasium", {}))

    windows = {(label, k): [] for label, _, _ in configs for k in args.competitors}
    worst = {(label, k): 0.0 for label, _, _ in configs for k in args.competitors}
    loads = []
    for r in range(args.rounds):
        order = args.competitors if r % 2 == 0 else args.competitors[::-1]  # idle first, then busy first
        for label, kind, env in configs:
            loads.append(os.getloadavg()[0])
            result = run_child(kind, env, order, args)
            for k in order:
                windows[label, k].append(result[str(k)]["steps_per_s"])
                worst[label, k] = max(worst[label, k], result[str(k)]["slowest_step_s"])
            print(f"  round {r + 1}: {label:<38} " + "  ".join(
                f"{k} busy {result[str(k)]['steps_per_s'] / 1e6:7.2f}M" for k in args.competitors), flush=True)
    rows = [{"config": label, "env": env, "competitors": k, "steps_per_s": statistics.median(windows[label, k]),
             "windows": windows[label, k], "slowest_step_s": worst[label, k]}
            for label, _, env in configs for k in args.competitors]

    def rate(config: str, k: int) -> float | None:
        return next((r["steps_per_s"] for r in rows if r["config"] == config and r["competitors"] == k), None)

    gym_label = configs[-1][0]
    print(f"\nCartPole, {args.num_envs:,} envs, Gymnasium vector face, {os.cpu_count()} cores "
          f"(M env-steps/s, median of {args.rounds} windows of {args.seconds} s; 1-min load average during the "
          f"run {min(loads):.2f}-{max(loads):.2f})\n")
    head = "| config | " + " | ".join(f"{k} busy" if k else "idle" for k in args.competitors) \
        + " | " + " | ".join(f"x Gymnasium ({k} busy)" for k in args.competitors if k) \
        + " | " + " | ".join(f"busy {k} / idle" for k in args.competitors if k) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for label, _, _ in configs:
        cells = [f"{rate(label, k) / 1e6:.2f}M" for k in args.competitors]
        if label != gym_label:
            cells += [f"{rate(label, k) / rate(gym_label, k):.1f}x" for k in args.competitors if k]
            idle = rate(label, 0)
            cells += [f"{rate(label, k) / idle:.2f}" if idle else "-" for k in args.competitors if k]
        else:
            cells += ["-"] * (2 * sum(1 for k in args.competitors if k))
        print(f"| {label} | " + " | ".join(cells) + " |")

    verdict = {}
    if 0 in args.competitors:
        for k in args.competitors:
            if k:
                d, g, idle = rate(configs[0][0], k), rate(gym_label, k), rate(configs[0][0], 0)
                verdict[f"{k}_busy"] = {"x_gymnasium": d / g, "fraction_of_idle": d / idle,
                                        "meets_target": d >= 4 * g and d >= idle / 2}
        print(f"\ntarget (default with a competitor >= 4x Gymnasium and >= idle / 2): {verdict}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "date": date.today().isoformat(), "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "num_envs": args.num_envs, "seconds": args.seconds,
        "rounds": args.rounds, "load_average_1min": [min(loads), max(loads)], "competitor": "a Python busy loop (while True: pass)", "rows": rows, "target": verdict,
    }, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
