"""Env-only throughput of the classic-control envs (Acrobot, MountainCar, MountainCarContinuous, Pendulum; CartPole
for reference): steps per second through `step()` with pre-drawn random actions, fastvec against Gymnasium's own
envs in the same run: gymnasium.make_vec(..., vectorization_mode="vector_entry_point") where Gymnasium has a
vectorised version (CartPole), else "sync" (which is SyncVectorEnv), and SyncVectorEnv. Prints a table and writes
benchmarks/results/classic_control_cpu.json.

    python benchmarks/classic_control.py [--seconds 2.0] [--num-envs 4096]

With --gpu (a CUDA machine with PyCUDA and gymnax): fastvec on the GPU through the fused
`rollout("random", T)` at 1M envs against gymnax's version of each env under jax.jit + lax.scan (vmapped over
envs, random actions, T steps per call; warmed until its jit cache stops growing, so no compile is timed), in one run; writes benchmarks/results/classic_control_gpu.json.

    python benchmarks/classic_control.py --gpu [--gpu-num-envs 1048576] [--rollout-steps 100]
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

import fastvec
from fastvec import native

RESULTS = Path(__file__).parent / "results"
# registry key: (Gymnasium's id, gymnax's id)
ENVS = {
    "acrobot": ("Acrobot-v1", "Acrobot-v1"),
    "mountaincar": ("MountainCar-v0", "MountainCar-v0"),
    "mountaincarcontinuous": ("MountainCarContinuous-v0", "MountainCarContinuous-v0"),
    "pendulum": ("Pendulum-v1", "Pendulum-v1"),
    "cartpole": ("CartPole-v1", "CartPole-v1"),
}
# the envs with an opt-in float32=1 (GPU table only)
FLOAT32_VARIANTS = ["cartpole", "acrobot", "mountaincar", "mountaincarcontinuous", "pendulum"]


def make_fastvec(key: str, num_envs: int, **kwargs):
    """fastvec's vector env of registry entry `key` (the registry's step limit)."""
    return fastvec.make_vec_from_source(native.source_path(key), num_envs,
                                        max_episode_steps=native.ENVS[key].max_episode_steps, **kwargs)


def random_actions(space, rng, pool: int) -> list[np.ndarray]:
    if hasattr(space, "nvec"):  # a batched Discrete space is MultiDiscrete
        return [rng.integers(0, space.nvec) for _ in range(pool)]
    return [rng.uniform(space.low, space.high).astype(space.dtype) for _ in range(pool)]


def steps_per_second(envs, seconds: float, pool: int = 16) -> float:
    """Env steps per second of envs.step with pre-drawn random actions (drawing is not timed)."""
    actions = random_actions(envs.action_space, np.random.default_rng(0), pool)
    envs.reset(seed=0)
    envs.step(actions[0])  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps < 2:
        envs.step(actions[steps % pool])
        steps += 1
    return steps * envs.num_envs / (time.perf_counter() - start)


def cpu_main(args) -> None:
    rows = []
    for key, (gym_id, _) in ENVS.items():
        mode = "vector_entry_point" if gym.spec(gym_id).vector_entry_point else "sync"
        fv = steps_per_second(make_fastvec(key, args.num_envs), args.seconds)
        vec = steps_per_second(gym.make_vec(gym_id, args.num_envs, vectorization_mode=mode), args.seconds)
        sync = vec if mode == "sync" else steps_per_second(gym.make_vec(gym_id, args.num_envs, vectorization_mode="sync"),
                                                           args.seconds)
        rows.append({"env": key, "gym_id": gym_id, "num_envs": args.num_envs, "fastvec": fv, "gymnasium_vector": vec,
                     "gymnasium_vector_mode": mode, "sync_vector_env": sync})
        print(f"{key:<22} fastvec {fv / 1e6:8.2f}M  Gymnasium {mode:<18} {vec / 1e6:7.3f}M ({fv / vec:6.1f}x)  "
              f"SyncVectorEnv {sync / 1e6:7.3f}M ({fv / sync:6.1f}x)", flush=True)
    out = {"date": str(date.today()), "machine": platform.platform(), "processor": platform.processor(),
           "cores": os.cpu_count(), "command": "python benchmarks/classic_control.py", "seconds": args.seconds,
           "rows": rows}
    path = Path(args.out or RESULTS / "classic_control_cpu.json")
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


def gpu_main(args) -> None:
    import pycuda.driver as drv
    from env_steps import gpu_rollout_rate, gymnax_measure

    rows = []
    # the float64 envs (Gymnasium's bits), then the opt-in float32 variants (gymnax computes in float32)
    variants = [(key, gymnax_id, {}) for key, (_, gymnax_id) in ENVS.items()]
    variants += [(key, ENVS[key][1], {"float32": 1}) for key in FLOAT32_VARIANTS]
    for key, gymnax_id, params in variants:
        for n in args.gpu_num_envs:
            envs = make_fastvec(key, n, device="cuda", array_type="device", **params)
            envs.reset(seed=0)
            fv = gpu_rollout_rate(envs, args.seconds, args.rollout_steps)
            envs.close()
            try:
                gx = gymnax_measure(gymnax_id, n, args.rollout_steps, args.seconds)
            except ImportError as e:
                gx, why = {}, f"gymnax unavailable: {e}"
            else:
                why = ""
            jx = gx.get("steps_per_second")
            name = key + "".join(f" {k}={v}" for k, v in params.items())
            rows.append({"env": name, "gymnax_id": gymnax_id, "num_envs": n, "rollout_steps": args.rollout_steps,
                         "fastvec_rollout": fv, "gymnax_scan": jx, "gymnax_warmup_calls": gx.get("warmup_calls"),
                         "gymnax_compiles": gx.get("compiles"), "note": why})
            ratio = f"({fv / jx:5.1f}x)" if jx else why
            print(f"{name:<22} n={n:>9,}  fastvec rollout {fv / 1e9:7.3f}G  gymnax {0 if jx is None else jx / 1e9:7.3f}G "
                  f"{ratio}", flush=True)
    out = {"date": str(date.today()), "machine": platform.platform(), "gpu": drv.Device(0).name(),
           "command": "python benchmarks/classic_control.py " + " ".join(sys.argv[1:]), "seconds": args.seconds, "rows": rows}
    path = Path(args.out or RESULTS / "classic_control_gpu.json")
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--gpu-num-envs", type=int, nargs="+", default=[1 << 20])
    parser.add_argument("--rollout-steps", type=int, default=100)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    print(f"env steps/s on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {date.today()}")
    gpu_main(args) if args.gpu else cpu_main(args)


if __name__ == "__main__":
    main()
