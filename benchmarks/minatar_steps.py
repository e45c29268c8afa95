"""MinAtar env-only throughput: steps per second through `step()` with random actions, fastvec's five
MinAtar games beside the `minatar` package (1.0.15) in the same run: its Gymnasium ids
(MinAtar/<Game>-v1, minimal actions, as fastvec's default) under Gymnasium's SyncVectorEnv, and its own
loop over `Environment.act`. Prints a table and writes benchmarks/results/minatar_cpu.json.

    python benchmarks/minatar_steps.py [--seconds 2.0] [--num-envs 4096]

With --gpu (on a CUDA machine with PyCUDA): fastvec on the GPU through `step()` with device arrays and
through the fused `rollout("random", T)`, beside gymnax's MinAtar envs (<Game>-MinAtar) under jax.jit +
lax.scan (vmapped over envs, random actions, T steps per call; warmed until its jit cache stops growing, so
no compile is timed); writes benchmarks/results/minatar_gpu.json.

    python benchmarks/minatar_steps.py --gpu [--gpu-num-envs 65536 1048576] [--rollout-steps 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

import gymnasium as gym
import numpy as np
from env_steps import gpu_rollout_rate, gpu_step_rate, gymnax_measure, steps_per_second

from fastvec import ENVS

RESULTS = Path(__file__).parent / "results"
# (fastvec registry key, minatar game, the Gymnasium/gymnax name)
GAMES = [("asterix-minatar", "asterix", "Asterix"), ("breakout-minatar", "breakout", "Breakout"),
         ("freeway-minatar", "freeway", "Freeway"), ("seaquest-minatar", "seaquest", "Seaquest"),
         ("spaceinvaders-minatar", "space_invaders", "SpaceInvaders")]

# gymnax's Seaquest keeps 100-entity buffers per entity kind (7.7 KB of state per env) and tests every bullet against
# every target: one 100-step call at 1M envs takes ~30 s, and its warm-up needs two; its rate is measured at 65,536.
GYMNAX_MAX_ENVS = {"Seaquest": 65536}


def fastvec_vec(key: str, n: int, **kw):
    """fastvec's Gymnasium vector env of a MinAtar game, through its registered id (fastvec/<Game>-MinAtar)."""
    return gym.make_vec(ENVS[key].gym_id, n, **kw)


def minatar_loop_rate(game: str, n: int, seconds: float) -> float:
    """Env steps per second of the minatar package's own loop: n Environments, act() each, reset at the end."""
    from minatar import Environment

    envs = [Environment(game) for _ in range(n)]
    for i, e in enumerate(envs):
        e.seed(i)
        e.reset()
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 6, (8, n)).tolist()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for e, a in zip(envs, actions[steps % 8]):
            if e.act(a)[1]:
                e.reset()
        steps += 1
    return steps * n / (time.perf_counter() - start)


def cpu_main(args) -> None:
    from minatar.gym import register_envs

    register_envs()
    load_before = os.getloadavg()  # a shared VM: what else ran shows in the load average
    rows = []
    for key, game, name in GAMES:
        row = {"game": name, "num_envs": args.num_envs}
        envs = fastvec_vec(key, args.num_envs)
        row["fastvec"] = steps_per_second(envs, args.seconds)
        envs.close()
        sync = gym.make_vec(f"MinAtar/{name}-v1", args.num_envs, vectorization_mode="sync")
        row["minatar SyncVectorEnv"] = steps_per_second(sync, args.seconds, pool=8)
        sync.close()
        row["minatar loop"] = minatar_loop_rate(game, args.num_envs, args.seconds)
        row["speed-up vs SyncVectorEnv"] = row["fastvec"] / row["minatar SyncVectorEnv"]
        rows.append(row)
        print(row, flush=True)
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    print(f"\nMinAtar env steps/s, {args.num_envs} envs, random actions; {machine}, {date.today()}")
    print(f"{'game':>14} | {'fastvec':>10} | {'minatar SyncVectorEnv':>22} | {'minatar loop':>12} | speed-up")
    for r in rows:
        print(f"{r['game']:>14} | {r['fastvec'] / 1e6:8.1f} M | {r['minatar SyncVectorEnv'] / 1e3:20.0f} k | "
              f"{r['minatar loop'] / 1e3:10.0f} k | {r['speed-up vs SyncVectorEnv']:7.0f}x")
    out = {"date": str(date.today()), "machine": machine, "threads": os.environ.get("FASTVEC_NUM_THREADS", "all"),
           "command": "python benchmarks/minatar_steps.py " + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in
                                                             [("seconds", args.seconds), ("num_envs", args.num_envs)]),
           "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]}, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    Path(args.out or RESULTS / "minatar_cpu.json").write_text(json.dumps(out, indent=2))


def gpu_main(args) -> None:
    import pycuda.driver as drv

    rows = []
    for n in args.gpu_num_envs:
        for key, _, name in GAMES:
            row = {"game": name, "num_envs": n}
            envs = fastvec_vec(key, n, device="cuda", array_type="device")
            row["fastvec state bytes per env"] = envs.unwrapped.batch.env.slot_size
            row["fastvec step()"] = gpu_step_rate(envs, args.seconds)
            row[f"fastvec rollout({args.rollout_steps})"] = gpu_rollout_rate(envs, args.seconds, args.rollout_steps)
            envs.close()
            del envs
            if n > GYMNAX_MAX_ENVS.get(name, n):
                row["gymnax note"] = f"not run above {GYMNAX_MAX_ENVS[name]:,} envs"
            else:
                try:
                    gx = gymnax_measure(f"{name}-MinAtar", n, args.rollout_steps, args.seconds)
                    row[f"gymnax scan({args.rollout_steps})"] = gx["steps_per_second"]
                    row["gymnax warm-up calls"] = gx["warmup_calls"]
                    row["gymnax state bytes per env"] = gx["state_bytes_per_env"]
                except Exception as err:  # noqa: BLE001  (gymnax lacks a game or runs out of memory: report, go on)
                    print(f"gymnax {name}-MinAtar at {n} envs failed: {type(err).__name__}: {err}")
            rows.append(row)
            print(row, flush=True)
            out = {"date": str(date.today()), "device": drv.Device(0).name(), "cores": os.cpu_count(),
                   "command": "python benchmarks/minatar_steps.py " + " ".join(sys.argv[1:]),
                   "rollout_steps": args.rollout_steps, "seconds": args.seconds, "rows": rows}
            RESULTS.mkdir(exist_ok=True)
            Path(args.out or RESULTS / "minatar_gpu.json").write_text(json.dumps(out, indent=2))
    print(f"\nMinAtar env steps/s on {drv.Device(0).name()}, {date.today()}; G = 1e9")
    for r in rows:
        cells = " | ".join(f"{c}: {v / 1e9:6.2f} G" for c, v in r.items() if c.startswith(("fastvec step", "fastvec roll",
                                                                                             "gymnax scan")))
        print(f"{r['game']:>14} {r['num_envs']:>9} | {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--gpu", action="store_true", help="the GPU table (fastvec on CUDA beside gymnax) instead")
    parser.add_argument("--gpu-num-envs", type=int, nargs="+", default=[65536, 1 << 20])
    parser.add_argument("--rollout-steps", type=int, default=100, help="steps per fused rollout / lax.scan call")
    parser.add_argument("--out", help="where to write the JSON (default benchmarks/results/minatar_{cpu,gpu}.json)")
    args = parser.parse_args()
    gpu_main(args) if args.gpu else cpu_main(args)


if __name__ == "__main__":
    main()
