"""Data-parallel scaling of fastvec-train (issue 9): steady-state SPS with --train.gpus=1, 2, ... (one process
per GPU, NCCL all-reduce in the update graph) at a fixed per-GPU batch, and the same global batch learned on
one GPU and on two. Prints tables and writes benchmarks/results/multi_gpu.json.

    python benchmarks/multi_gpu.py [--gpus 1 2] [--updates 20]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from fastvec.trainer import distributed, run
from fastvec.trainer.config import load_config

SPS_CASES = {  # per-GPU settings: each GPU keeps its own envs and minibatch, so the global batch grows with N
    "cartpole-mlp-64k": ("cartpole", {"policy": {"kind": "mlp", "hidden": 64, "layers": 2},
                                      "env": {"num_envs": 65536},
                                      "train": {"horizon": 16, "bptt_horizon": 16, "minibatch_size": 262144,
                                                "update_epochs": 1, "precision": "bf16"}}),
    "breakout-mingru-128x2": ("breakout", {"policy": {"hidden": 128, "layers": 2}, "env": {"num_envs": 8192},
                                           "train": {"horizon": 64, "bptt_horizon": 64, "minibatch_size": 65536,
                                                     "update_epochs": 1, "precision": "bf16", "async": False}}),
}


def train(env: str, overrides: dict, gpus: int, steps: int, tmp: Path) -> dict:
    sections = json.loads(json.dumps(overrides))
    sections.setdefault("train", {}).update(gpus=gpus, device="cuda", total_timesteps=steps, log_interval=0.0,
                                            checkpoint_interval=10_000)
    config = load_config(env, sections)
    run_dir = tmp / f"{env}-{gpus}-{time.monotonic_ns()}"
    summary = run.train(config, run_dir, dashboard=False)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {"summary": summary, "rows": rows}


def steady_sps(rows: list[dict]) -> float:
    """SPS between the third logged update (after the eager first update and the graph captures) and the last."""
    first, last = rows[2], rows[-1]
    return (last["global_step"] - first["global_step"]) / max(last["time"] - first["time"], 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--updates", type=int, default=20)
    args = parser.parse_args()
    available = distributed.visible_gpu_count()
    counts = [g for g in args.gpus if g <= available]
    out = {"date": time.strftime("%Y-%m-%d"), "gpus_visible": available, "sps": [], "same_global_batch": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, (env, overrides) in SPS_CASES.items():
            per_gpu = overrides["env"]["num_envs"] * overrides["train"]["horizon"]
            for gpus in counts:
                res = train(env, overrides, gpus, gpus * per_gpu * args.updates, tmp)
                row = {"case": name, "gpus": gpus, "sps": round(steady_sps(res["rows"])),
                       "params_drift": res["summary"].get("params_drift")}
                out["sps"].append(row)
                print(json.dumps(row), flush=True)
        # One global batch (2,048 envs x 32 steps, minibatches of 16,384) on one GPU, or split over two.
        for gpus in counts[:2]:
            overrides = {"policy": {"kind": "mlp", "hidden": 64, "layers": 2}, "env": {"num_envs": 2048 // gpus},
                         "train": {"horizon": 32, "bptt_horizon": 32, "minibatch_size": 16384 // gpus,
                                   "update_epochs": 2, "learning_rate": 0.01, "optimizer": "adam"}}
            res = train("cartpole", overrides, gpus, 2048 * 32 * 60, tmp)
            returns = [r["episode_return"] for r in res["rows"] if r.get("episode_return") is not None]
            row = {"gpus": gpus, "updates": res["rows"][-1]["update"], "steps": res["summary"]["global_step"],
                   "returns_last5": [round(x, 1) for x in returns[-5:]],
                   "first_update_at_475": next((r["update"] for r in res["rows"]
                                                if (r.get("episode_return") or 0) >= 475), None)}
            out["same_global_batch"].append(row)
            print(json.dumps(row), flush=True)
    print(f"\nsteady-state SPS, per-GPU batch fixed ({available} GPUs visible)")
    print(f"{'case':<24} {'GPUs':>5} {'SPS':>14} {'vs 1 GPU':>9}")
    base = {r["case"]: r["sps"] for r in out["sps"] if r["gpus"] == 1}
    for r in out["sps"]:
        ratio = r["sps"] / base[r["case"]] if base.get(r["case"]) else float("nan")
        print(f"{r['case']:<24} {r['gpus']:>5} {r['sps']:>14,} {ratio:>8.2f}x")
    path = Path(__file__).resolve().parent / "results" / "multi_gpu.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
