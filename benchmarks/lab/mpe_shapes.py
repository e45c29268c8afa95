"""Policy shapes on MPE simple_spread: fastvec-train's runs of several named shapes side by side (one process each,
--parallel at a time on one device), each run's time and steps to a return by benchmarks/peers/fairness.py's window
rule. Writes one JSON per run into --out and prints a table; benchmarks/lab/mpe_learning.md reads the results.
Processes on one GPU share it by time slices: with --parallel above 1 only the learning per step compares.

    python benchmarks/lab/mpe_shapes.py --device cuda --shapes gru2 gru2_e64 --seeds 17001 17002 --parallel 4 \\
        --threshold -8.3 --out /tmp/shapes
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))

# JaxMARL's recurrent IPPO numbers (ippo_rnn_mpe.yaml: Adam 5e-4, clip 0.3, value coefficient 1, two minibatches of
# a 16 x 128 rollout of 3 agents) on a MinGRU whose torso actor and critic share
RECURRENT = {"policy": {"kind": "mingru", "critic": "shared", "layers": 1, "encoder": "linear", "activation": "relu",
                        "hidden": 128},
             "train": {"bptt_horizon": 128, "learning_rate": 0.0005, "clip_coef": 0.3, "vf_coef": 1.0,
                       "minibatch_size": 3072}}


def shape(layers=2, hidden=128, envs=16, minibatches=2, lr=0.0005, steps=10_000_000, encoder="linear",
          **train) -> dict:
    """RECURRENT with these changes; minibatch_size follows envs x 3 agents x 128 steps / minibatches."""
    return {"policy": {**RECURRENT["policy"], "layers": layers, "hidden": hidden, "encoder": encoder},
            "env": {"num_envs": envs},
            "train": {**RECURRENT["train"], "learning_rate": lr, "total_timesteps": steps,
                      "minibatch_size": envs * 3 * 128 // minibatches, **train}}


SHAPES = {
    "gru1": shape(layers=1),
    "gru2": shape(),
    "gru3": shape(layers=3),
    "gru2_h256": shape(hidden=256),
    "gru2_20m": shape(steps=20_000_000),
    "gru2_e64": shape(envs=64, steps=30_000_000),
    "gru2_e64_mb4": shape(envs=64, minibatches=4, steps=30_000_000),
    "gru2_e64_lr1e3": shape(envs=64, lr=0.001, steps=30_000_000),
    "gru3_e64": shape(layers=3, envs=64, steps=30_000_000),
    "gru2_e256_mb8": shape(envs=256, minibatches=8, steps=50_000_000),
    "gru2_e256_mb8_lr1e3": shape(envs=256, minibatches=8, lr=0.001, steps=50_000_000),
    "gru2_e64_ep8": shape(envs=64, minibatches=4, steps=30_000_000, update_epochs=8),
    "gru2_h256_e32_mb4": shape(hidden=256, envs=32, minibatches=4, steps=20_000_000),
    "gru2_h256_e64_mb4": shape(hidden=256, envs=64, minibatches=4, steps=30_000_000),
    "gru2_e64_mb4_40m": shape(envs=64, minibatches=4, steps=40_000_000),
    "gru2_h256_e64_mb4_40m": shape(hidden=256, envs=64, minibatches=4, steps=40_000_000),
    "relu_gru1": shape(layers=1, encoder="relu"),
    "relu_gru2": shape(encoder="relu"),
    "relu_gru2_e64": shape(encoder="relu", envs=64, steps=30_000_000),
}


def one_run(name: str, seed: int, device: str, threshold: float, max_seconds: float, out: Path) -> dict:
    """fastvec_run of one shape and seed, in a process of its own (its own CUDA context)."""
    path = out / f"shape_{name}_{seed}.json"
    code = ("import json, sys, pathlib; sys.path[:0] = [%r, %r, %r]; import train_peers; "
            "r = train_peers.fastvec_run('simple_spread', %d, %r, %r, %r, 100, None, pathlib.Path(%r), %r); "
            "pathlib.Path(%r).write_text(json.dumps(r))"
            % (str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "benchmarks" / "peers"), seed, device, threshold,
               max_seconds, tempfile.mkdtemp(), SHAPES[name], str(path)))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode or not path.exists():
        result = {"error": done.stderr[-2000:]}
        path.write_text(json.dumps(result))
    result = json.loads(path.read_text())
    result.update(shape=name, wall_s=round(time.perf_counter() - t0, 1))
    path.write_text(json.dumps(result))
    return result


def at_steps(groups, steps: int, k: int = 100):
    """The mean of the last k episodes logged by `steps`."""
    from fairness import window_means
    means = [(s, m) for (s, *_), m in zip(groups, window_means(groups, k)) if s <= steps]
    return means[-1][1] if means else None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--seeds", nargs="+", type=int, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=-8.3)
    parser.add_argument("--max-seconds", type=float, default=150.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(name, seed) for name in args.shapes for seed in args.seeds]
    with ThreadPoolExecutor(args.parallel) as pool:
        results = list(pool.map(lambda j: one_run(*j, args.device, args.threshold, args.max_seconds, args.out), jobs))
    print(f"{'shape':22} {'seed':>6} {'SPS':>8} {'train s':>8} {'to thr s':>9} {'thr steps':>10} {'@3M':>6} {'@10M':>6} {'final':>6}")
    for r in results:
        if "groups" not in r:
            print(f"{r['shape']:22} error: {str(r.get('error') or r.get('refused'))[-300:]}")
            continue
        g = r["groups"]
        hit = r.get("time_to_threshold_s")
        fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        print(f"{r['shape']:22} {r['seed']:>6} {r['sps']:>8} {r['train_s']:>8.1f} {fmt(hit):>9} "
              f"{str(r.get('steps_to_threshold') if hit else '-'):>10} "
              f"{fmt(at_steps(g, 3_000_000)):>6} {fmt(at_steps(g, 10_000_000)):>6} {fmt(r.get('final_return')):>6}")


if __name__ == "__main__":
    main()
