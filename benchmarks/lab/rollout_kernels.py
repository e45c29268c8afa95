"""The fused random rollout's kernels (random_gpu.h: staged, plain, occ) on each env at one size: env steps per
second of rollout("random", 100) with each, which one `rollout_kernel_name(env, "auto")` takes, the kernels'
registers and local memory, and a check that all of them leave the same slots and obs after 20 steps from the
same reset. Writes benchmarks/lab/results/rollout_kernels.json.

    python benchmarks/lab/rollout_kernels.py [--num-envs 65536] [--seconds 0.5] [--envs cartpole smax:3m ...]
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from env_steps import gpu_rollout_rate  # noqa: E402
from teams_steps import fastvec_batch  # noqa: E402

from fastvec.native.batches import load_batch  # noqa: E402
from fastvec.native.cuda import ROLLOUT_KERNELS, rollout_kernel_name  # noqa: E402

ENVS = ["cartpole", "acrobot", "mountaincar", "pendulum", "breakout-minatar", "seaquest-minatar", "breakout", "pong",
        "mpe:simple_spread", "mpe:simple_tag", "mpe:simple_adversary", "mpe:simple_world_comm", "smax:3m",
        "smax:2s3z", "smax:8m", "smax:3s5z"]


def batch_of(env: str, n: int):
    if ":" in env:
        return fastvec_batch(env, n, device="cuda", host_arrays=False)
    return load_batch(env, n, device="cuda", host_arrays=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=65536)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--envs", nargs="+", default=ENVS)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "lab" / "results" / "rollout_kernels.json")
    args = parser.parse_args()
    rows = []
    for env in args.envs:
        batch = batch_of(env, args.num_envs)
        compiled = batch.env
        names = [k for k in ROLLOUT_KERNELS if k != "staged" or compiled.stage_threads > 0]
        row = {"env": env, "auto": rollout_kernel_name(compiled), "stage_threads": compiled.stage_threads,
               "kernels": {}}
        seeds = np.arange(args.num_envs, dtype=np.uint64)
        after = {}
        for name in names:
            fn = compiled.rollout_kernels[name]
            batch.use_rollout_kernel(name)
            batch.reset(seeds, None)
            batch.rollout("random", 20)
            batch.synchronize()
            after[name] = (batch.dev.slots.get(), batch.dev.obs.get())
            batch.reset(seeds, None)
            rate = gpu_rollout_rate(batch, args.seconds, 100)
            row["kernels"][name] = {"rate": rate, "registers": fn.num_regs, "local_bytes": fn.local_size_bytes}
        first = after[names[0]]
        row["same_bits"] = all(np.array_equal(a[0], first[0]) and np.array_equal(a[1], first[1])
                               for a in after.values())
        best = max(row["kernels"], key=lambda k: row["kernels"][k]["rate"])
        row["best"] = best
        rates = "  ".join(f"{k} {v['rate'] / 1e9:7.3f}G ({v['registers']} regs, {v['local_bytes']} B)"
                          for k, v in row["kernels"].items())
        print(f"{env:24s} auto {row['auto']:6s} best {best:6s} same {row['same_bits']}  {rates}", flush=True)
        rows.append(row)
        batch.close()
    out = {"benchmark": "rollout_kernels", "date": time.strftime("%Y-%m-%d"), "num_envs": args.num_envs,
           "steps_per_call": 100, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
