"""Async versus sync rollouts in the fused CUDA trainer on Breakout (issue 7): the same config (breakout.toml,
train.device=cuda) and number of updates, 3 seeds each; prints a table and writes
benchmarks/results/async_breakout.json (and .md).

    python benchmarks/async_breakout.py                        # sync, async, async + V-trace; seeds 1 2 3
    python benchmarks/async_breakout.py --steps 10_000_000 --modes sync async --seeds 1
    python benchmarks/async_breakout.py --set train.learning_rate=0.02 --out benchmarks/results/async_breakout_lr0.02.json

SPS = the steps the updates trained on (updates x envs x horizon) / training time; async collects one rollout
more (the one running beside the last update), which is not counted. Training time is the wall time of the
rollout/update loop after the trainer exists (first eager update and graph captures included; start-up and
nvcc compilation excluded). Score = the mean Breakout score of the last >= 1000 episodes that finished
during training (the trainer's own stochastic policy, not a separate evaluation).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODES = {"sync": {"async": False}, "async": {"async": True}, "async-vtrace": {"async": True, "vtrace": True}}
FINAL_EPISODES = 1000  # the score is the mean over at least this many of the last episodes
POP_EVERY = 5  # updates between episode-statistic reads (each read waits for the actor)


def train_once(mode: str, seed: int, steps: int, overrides: dict) -> dict:
    from fastvec.trainer import run
    from fastvec.trainer.config import load_config

    sections = {"train": {"device": "cuda", "seed": seed, "total_timesteps": steps, **MODES[mode]}}
    for key, value in overrides.items():
        section, name = key.split(".")
        sections.setdefault(section, {})[name] = value
    precision = sections["train"].pop("precision", "fp32")  # not a config key: the CUDA trainer reads it if set
    config = load_config("breakout", sections)
    config["train"]["precision"] = precision
    t0 = time.perf_counter()
    trainer = run.make_trainer(config)
    startup = time.perf_counter() - t0
    steps_per_update = trainer.horizon * trainer.num_envs
    num_updates = math.ceil(steps / steps_per_update)
    chunks = []  # (global_step, episodes, mean score, mean return) per read
    t0 = time.perf_counter()
    while trainer.update_index < num_updates:
        trainer.rollout()
        trainer.update(num_updates)
        if trainer.update_index % POP_EVERY == 0 or trainer.update_index == num_updates:
            episodes = trainer.pop_episodes()
            if episodes:
                chunks.append((trainer.update_index * steps_per_update, episodes["episodes"], episodes["score"],
                               episodes["episode_return"]))
    elapsed = time.perf_counter() - t0
    tail, count = [], 0
    for chunk in reversed(chunks):  # the last chunks holding >= FINAL_EPISODES episodes
        tail.append(chunk)
        count += chunk[1]
        if count >= FINAL_EPISODES:
            break
    weights = np.array([c[1] for c in tail], float)
    score = float(np.dot(weights, [c[2] for c in tail]) / max(weights.sum(), 1))
    trained = num_updates * steps_per_update
    result = {"mode": mode, "seed": seed, "updates": num_updates, "trained_steps": trained,
              "collected_steps": trainer.global_step, "train_s": round(elapsed, 3), "startup_s": round(startup, 3),
              "sps": round(trained / elapsed), "final_score": round(score, 2), "final_episodes": int(count),
              "final_from_step": tail[-1][0] if tail else None, "params": trainer.layout.size,
              "curve": [(c[0], c[1], round(c[2], 2)) for c in chunks],
              "time_split": {k: round(v, 3) for k, v in trainer.timing.items()}}
    trainer.close()
    return result


def summarize(results: list[dict], modes: list[str]) -> list[dict]:
    rows = []
    for mode in modes:
        runs = [r for r in results if r["mode"] == mode]
        sps = np.array([r["sps"] for r in runs], float)
        score = np.array([r["final_score"] for r in runs], float)
        rows.append({"mode": mode, "seeds": [r["seed"] for r in runs], "sps_mean": float(sps.mean()),
                     "sps_std": float(sps.std()), "train_s_mean": float(np.mean([r["train_s"] for r in runs])),
                     "score_mean": float(score.mean()), "score_std": float(score.std()),
                     "scores": score.tolist()})
    base = next((r for r in rows if r["mode"] == "sync"), None)
    for row in rows:
        row["sps_vs_sync"] = row["sps_mean"] / base["sps_mean"] if base else None
    return rows


def table(rows: list[dict], steps: int) -> str:
    lines = [f"Breakout (breakout.toml, train.device=cuda), {steps / 1e6:g}M steps per run; score = mean of the "
             f"last >= {FINAL_EPISODES} training episodes",
             "",
             "| mode | seeds | SPS (mean ± std) | vs sync | training s | final score (mean ± std) | per seed |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        ratio = f"{r['sps_vs_sync']:.2f}x" if r["sps_vs_sync"] else ""
        lines.append(f"| {r['mode']} | {' '.join(map(str, r['seeds']))} | {r['sps_mean'] / 1e6:.1f}M ± "
                     f"{r['sps_std'] / 1e6:.1f}M | {ratio} | {r['train_s_mean']:.2f} | {r['score_mean']:.1f} ± "
                     f"{r['score_std']:.1f} | {' / '.join(f'{s:.0f}' for s in r['scores'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000_000, help="env steps per run (breakout.toml's 20M)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a config override for every mode (e.g. env.num_envs=8192, train.precision=bf16)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "async_breakout.json")
    args = parser.parse_args()
    overrides = {}
    for item in args.set:
        key, _, text = item.partition("=")
        try:
            overrides[key] = json.loads(text)
        except json.JSONDecodeError:
            overrides[key] = text  # a bare string such as bf16
    results = []
    for seed in args.seeds:  # modes interleaved per seed, so that drift of the machine hits all alike
        for mode in args.modes:
            res = train_once(mode, seed, args.steps, overrides)
            results.append(res)
            print(json.dumps({k: v for k, v in res.items() if k != "curve"}), flush=True)
    rows = summarize(results, args.modes)
    text = table(rows, args.steps) + (f"\n\nOverrides for every mode: {overrides}" if overrides else "")
    print(text)
    try:
        import pycuda.driver as cuda
        gpu = cuda.Device(0).name()
    except Exception:  # the name is a label only
        gpu = "unknown"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"gpu": gpu, "host": platform.node(), "date": time.strftime("%Y-%m-%d %H:%M"),
                                    "steps": args.steps, "overrides": overrides, "summary": rows, "runs": results}, indent=1))
    args.out.with_suffix(".md").write_text(f"# Async versus sync rollouts, CUDA trainer, Breakout\n\nGPU: {gpu}. Command: "
                                           f"`python benchmarks/async_breakout.py {' '.join(sys.argv[1:])}`\n\n"
                                           f"{text}\n")


if __name__ == "__main__":
    main()
