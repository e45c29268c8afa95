"""Confirm configurations over several seeds, as a sweep's winner is confirmed before it ships: each case (a TOML
given to `fastvec-train ENV --config`, or the env's own config) trains once per seed through the trainer's public
API, its final checkpoint is evaluated over --eval-episodes sampled episodes, and a table and JSON are written.

    python benchmarks/confirm_config.py breakout --case shipped - \
        --case t45 sweep/best.toml train.total_timesteps=60_000_000 \
        --seeds 1 2 3 --target 850 --metric score --out benchmarks/results/breakout_confirm.json

--case LABEL CONFIG [SECTION.KEY=VALUE ...]: CONFIG is a TOML path or "-" (ENV.toml alone), the values go over it.
Each run is a standalone `fastvec-train` run (its own logging; one checkpoint, at the end): training time excludes
start-up (reported beside it). `--target`: the first training log whose metric reaches it (time and steps); the
table's last column is the evaluation's metric, over --eval-episodes episodes (`fastvec-train ENV --eval`).
Curves (training time, steps, metric) go into the JSON: `python benchmarks/plots.py OUT --x seconds` draws them.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import tempfile
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def case_config(env: str, config_path: str, assignments: list[str], seed: int, episodes: int) -> dict:
    """The resolved config of one run: ENV.toml < CONFIG < the case's values < seed, evaluation and checkpoints."""
    from fastvec.trainer import cli
    from fastvec.trainer.config import ConfigError, load_config, parse_overrides

    overrides = cli.config_file(config_path, env) if config_path != "-" else {}
    try:
        values = parse_overrides([f"--{item}" for item in assignments])
    except ConfigError as err:
        raise SystemExit(f"--case values {assignments}: use SECTION.KEY=VALUE, e.g. train.total_timesteps=60_000_000 "
                         f"({err})") from None
    for section, keys in values.items():
        overrides.setdefault(section, {}).update(keys)
    train = overrides.setdefault("train", {})
    train.update(seed=seed, checkpoint_interval=10 ** 9, checkpoint_seconds=0.0)
    overrides.setdefault("eval", {})["episodes"] = episodes
    overrides.get("env", {}).pop("name", None)
    return load_config(env, overrides)


def one_run(env: str, label: str, config_path: str, assignments: list[str], seed: int, metric: str,
            target: float | None, episodes: int, root: Path) -> dict:
    """Train and evaluate one seed of one case; its figures and curve."""
    from fastvec.trainer import run

    config = case_config(env, config_path, assignments, seed, episodes)
    run_dir = root / f"{label}-s{seed}"
    summary = run.train(config, run_dir, dashboard=False)
    trainer = summary.pop("trainer")
    close = getattr(trainer, "close", None)
    if close is not None:
        close()
    curve = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if m.get(metric) is not None:
            curve.append({"time": m["time"], "global_step": m["global_step"], metric: round(m[metric], 3)})
    hit = next((p for p in curve if target is not None and p[metric] >= target), None)
    evaluation = run.evaluate(config, Path(summary["checkpoint"]))
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return {"case": label, "config": config_path, "set": assignments, "seed": seed, "name": f"{label}, seed {seed}",
            "steps": summary["trained_steps"], "train_s": round(summary["elapsed"], 4),
            "startup_s": round(summary["startup"], 3), "sps": round(summary["sps"]),
            "target_s": hit and hit["time"], "target_steps": hit and hit["global_step"],
            "last_log": curve[-1][metric] if curve else None,
            "eval": round(evaluation.get(metric, evaluation["episode_return"]), 3),
            "eval_std": round(evaluation["episode_return_std"], 3), "eval_episodes": evaluation["episodes"],
            "curve": curve}


def si(value: float) -> str:
    return f"{value / 1e6:.1f}M" if value >= 1e6 else f"{value / 1e3:.1f}K"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env")
    parser.add_argument("--case", nargs="+", action="append", required=True,
                        metavar="ARG", help="a case: label, TOML (or -), values over it")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--metric", default="episode_return", help="logged and evaluated metric (breakout: score)")
    parser.add_argument("--target", type=float, default=None, help="time the first log whose metric reaches it")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--commit", default=None, help="recorded in the JSON where the tree has no git history")
    parser.add_argument("--out", default=str(RESULTS / "confirm_config.json"))
    args = parser.parse_args(argv)
    for case in args.case:
        if len(case) < 2:
            parser.error(f"--case {' '.join(case)}: give LABEL CONFIG (CONFIG: a TOML path, or - for ENV.toml)")

    commit = args.commit
    if commit is None:
        git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True,
                             cwd=ROOT)
        commit = git.stdout.strip() or None
    out = {"date": date.today().isoformat(), "machine": platform.node(), "commit": commit, "env": args.env,
           "metric": args.metric, "target": args.target, "eval_episodes": args.eval_episodes, "runs": []}
    try:
        from fastvec.trainer.cuda import device
        out["gpu"] = device.init().Context.get_device().name()
    except Exception:  # noqa: BLE001 - no PyCUDA or no GPU: the runs train on the CPU (or say why not)
        out["gpu"] = None
    root = Path(tempfile.mkdtemp(prefix="confirm_config-"))
    print(f"{'case':<24} {'seed':>4} {'steps':>9} {'train s':>8} {'start s':>8} {'SPS':>8} "
          f"{'to target':>10} {'eval ' + args.metric:>14}")
    for label, config_path, *assignments in args.case:
        for seed in args.seeds:
            r = one_run(args.env, label, config_path, assignments, seed, args.metric, args.target,
                        args.eval_episodes, root)
            out["runs"].append(r)
            to_target = f"{r['target_s']:.3f} s" if r["target_s"] is not None else "-"
            print(f"{label:<24} {seed:>4} {si(r['steps']):>9} {r['train_s']:>8.3f} {r['startup_s']:>8.2f} "
                  f"{si(r['sps']):>8} {to_target:>10} {r['eval']:>14.1f}", flush=True)
        evals = [r["eval"] for r in out["runs"] if r["case"] == label]
        print(f"{label:<24} {'all':>4} eval min {min(evals):.1f}, median {statistics.median(evals):.1f}")
    shutil.rmtree(root, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
