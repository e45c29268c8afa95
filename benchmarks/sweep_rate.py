"""fastvec-sweep's rate (issue 21): runs `fastvec-sweep ENV` in this process for a wall-clock budget and reports
trials per hour (every trial counted: complete, pruned, failed; start-up included), start-up per trial, training
seconds per trial and the best trial. Prints a table and writes benchmarks/results/sweep_rate_<env><tag>.json, and
copies the sweep's Pareto-front plot to benchmarks/results/plots/sweep_<env><tag>_front.png.

    python benchmarks/sweep_rate.py cartpole --minutes 2 -- --train.device=cpu                 # the CPU trainer
    python benchmarks/sweep_rate.py breakout --minutes 60 -- --train.device=cuda               # one H200, an hour

Everything after `--` goes to fastvec-sweep as is (search-space entries, --sweep.* settings); the sweep dir is
sweeps/bench/<env><tag>-<time> unless --sweep.dir is given, so each run starts a fresh study.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def machine() -> str:
    """The host, and its GPU where there is one (PyCUDA's name for device 0)."""
    try:
        from fastvec.trainer.cuda import device
        return f"{platform.node()}, {device.init().Context.get_device().name()}"
    except Exception:  # noqa: BLE001 - no PyCUDA or no GPU: the CPU trainer's sweep
        return f"{platform.node()}, {os.cpu_count()} cores, no GPU"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env")
    parser.add_argument("--minutes", type=float, default=2.0, help="wall-clock budget (no trial starts after it)")
    parser.add_argument("--tag", default="", help="suffix of the result and plot file names")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.sweep_args = argv[cut + 1:]  # fastvec-sweep's own arguments

    from fastvec.trainer import sweep
    given = list(args.sweep_args)
    if not any(a.startswith("--sweep.dir=") for a in given):
        given.append(f"--sweep.dir=sweeps/bench/{args.env}{args.tag}-{time.strftime('%Y%m%d-%H%M%S')}")
    given += [f"--sweep.timeout={args.minutes * 60}", "--sweep.trials=0"]
    plan = sweep.make_plan(args.env, *sweep.split_arguments(given), None)
    start = time.perf_counter()
    code = sweep.main([args.env, *given])
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(code)

    folder = plan.sweep_dir
    lines = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    results = [r for line in lines for r in line.get("results", [])]
    states = {state: sum(line["state"] == state for line in lines) for state in ("COMPLETE", "PRUNED", "FAIL")}
    summary = json.loads((folder / "summary.json").read_text())
    row = {"trials": len(lines), **{k.lower(): v for k, v in states.items()}, "wall_s": round(wall, 1),
           "trials_per_hour": round(3600 * len(lines) / wall, 1),
           "median_startup_s": median(r["startup"] for r in results),
           "median_train_s": median(r["seconds"] for r in results),
           "hits": sum(r["hit_seconds"] is not None for r in results), "best": summary["best"]}
    best = row["best"] or {}
    print(f"\nfastvec-sweep {args.env}: {plan.settings['objective']} ({plan.settings['metric']}"
          f"{' >= ' + str(plan.settings['target']) if plan.settings['objective'] == 'time_to_target' else ''}), "
          f"{args.minutes:g} min on {machine()}")
    print(f"{'trials':>7} {'complete':>9} {'pruned':>7} {'failed':>7} {'trials/h':>9} {'start-up s':>11} "
          f"{'train s':>8} {'best':>12}")
    print(f"{row['trials']:>7} {row['complete']:>9} {row['pruned']:>7} {row['fail']:>7} {row['trials_per_hour']:>9} "
          f"{row['median_startup_s'] or 0:>11.3f} {row['median_train_s'] or 0:>8.3f} "
          f"{[round(v, 3) for v in best.get('values', [])]!s:>12}")
    out = {"env": args.env, "machine": machine(), "date": time.strftime("%Y-%m-%d"),
           "command": "python benchmarks/sweep_rate.py " + " ".join(sys.argv[1:]), "settings": plan.settings,
           "space": plan.space.describe(), "sweep_dir": str(folder), **row}
    results_dir = ROOT / "benchmarks" / "results"
    path = results_dir / f"sweep_rate_{args.env}{args.tag}.json"
    path.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    front = folder / "plots" / "front.png"
    if front.is_file():
        (results_dir / "plots").mkdir(exist_ok=True)
        shutil.copyfile(front, results_dir / "plots" / f"sweep_{args.env}{args.tag}_front.png")
        print(f"wrote {results_dir / 'plots' / f'sweep_{args.env}{args.tag}_front.png'}")


if __name__ == "__main__":
    main()
