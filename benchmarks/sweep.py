"""Hyperparameter sweep of the fused CUDA trainer's time to a target (issue 6): a grid searched with one
seed, then the best configurations re-run over more seeds. Prints a table and writes benchmarks/results/sweep_<env>.json.

    python benchmarks/sweep.py cartpole --grid env.num_envs=1024,4096 train.learning_rate=0.005,0.01 [--top 5 --seeds 1 2 3]
    python benchmarks/sweep.py breakout --target 850 --key score --max-seconds 10 --base train.gamma=0.999 --grid ...

Every run is train_speed.py's fastvec_time_to_solve: training time counts everything after start-up (the trainer
built and warmed up: graphs captured, the warm-up's state changes undone); start-up is not counted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastvec.trainer.config import ENVS, ConfigError, parse_value  # noqa: E402
from train_speed import fastvec_config, fastvec_time_to_solve  # noqa: E402


def parse_assignments(items: list[str], multi: bool) -> dict:
    """['train.lr=0.1,0.2'] -> {'train.lr': [0.1, 0.2]} (multi) or {'train.lr': 0.1}."""
    out = {}
    for item in items:
        key, _, text = item.partition("=")
        if "." not in key or not text:
            raise SystemExit(f"bad assignment {item!r}: use section.key=value{',value' if multi else ''}")
        values = [parse_value(v) for v in text.split(",")] if multi else parse_value(text)
        out[key] = values
    return out


def run(env: str, overrides: dict, seed: int, args) -> dict | None:
    """One training run to the target; None where the grid point is not a valid config."""
    try:
        fastvec_config(env, overrides)
    except ConfigError as err:
        print(f"skipped {overrides}: {err}", flush=True)
        return None
    res = fastvec_time_to_solve({**overrides, "train.seed": seed}, max_seconds=args.max_seconds, env=env,
                                target=args.target, key=args.key)
    best = max((point[2] for point in res["curve"]), default=None)
    return {"seed": seed, "solved": res["solved"], "train_s": res["train_s"], "steps": res["steps"],
            "sps": res["sps"], "best": best, "params": res["params"], "curve": res["curve"]}


def summary(runs: list[dict]) -> dict:
    solved = [r for r in runs if r["solved"]]
    return {"solved": f"{len(solved)}/{len(runs)}",
            "median_s": statistics.median(r["train_s"] if r["solved"] else float("inf") for r in runs),
            "median_steps": statistics.median(r["steps"] for r in runs),
            "best": max((r["best"] for r in runs if r["best"] is not None), default=None),
            "sps": round(statistics.median(r["sps"] for r in runs))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env", choices=sorted(ENVS))
    parser.add_argument("--grid", nargs="*", default=[], help="section.key=v1,v2,... (the product is searched)")
    parser.add_argument("--base", nargs="*", default=[], help="section.key=value applied to every run")
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--key", default="episode_return", help="the episode statistic compared with --target")
    parser.add_argument("--max-seconds", type=float, default=1.0, help="training time allowed per run")
    parser.add_argument("--top", type=int, default=5, help="configurations re-run over --seeds")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    args = parser.parse_args()

    base = parse_assignments(args.base, multi=False)
    grid = parse_assignments(args.grid, multi=True)
    keys = list(grid)
    configs = [{**base, **dict(zip(keys, values))} for values in itertools.product(*(grid[k] for k in keys))]
    print(f"{len(configs)} configurations x 1 seed, then the best {args.top} x seeds {args.seeds}", flush=True)

    first = []
    for cfg in configs:
        r = run(args.env, cfg, args.seeds[0], args)
        if r is None:
            continue
        first.append((cfg, r))
        print(json.dumps({"config": {k: cfg[k] for k in keys}, **{k: v for k, v in r.items() if k != "curve"}}),
              flush=True)
    ranked = sorted(first, key=lambda cr: (not cr[1]["solved"], cr[1]["train_s"] if cr[1]["solved"]
                                           else -(cr[1]["best"] or 0)))
    results = []
    for cfg, r in ranked[:args.top]:
        runs = [r] + [run(args.env, cfg, seed, args) for seed in args.seeds[1:]]
        results.append({"config": cfg, "summary": summary(runs), "runs": runs})

    print(f"\n{args.env}: time to {args.key} >= {args.target} (training seconds, start-up excluded), "
          f"seeds {args.seeds}")
    print(f"{'configuration':<70} {'solved':>6} {'median s':>9} {'median steps':>13} {'best':>7} {'SPS':>12}")
    for res in results:
        s = res["summary"]
        label = " ".join(f"{k.split('.')[1]}={res['config'][k]}" for k in keys)
        print(f"{label:<70} {s['solved']:>6} {s['median_s']:>9.3f} {s['median_steps']:>13,.0f} "
              f"{'' if s['best'] is None else round(s['best'], 1):>7} {s['sps']:>12,}")
    out = {"env": args.env, "target": args.target, "key": args.key, "base": base, "grid": grid,
           "first_pass": [{"config": c, **{k: v for k, v in r.items() if k != "curve"}} for c, r in first],
           "top": results}
    path = ROOT / "benchmarks" / "results" / f"sweep_{args.env}{args.tag}.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
