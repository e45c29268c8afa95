"""MuJoCo env throughput: env steps per second through `step()` with random actions, for fastvec's C batch
(`fastvec/<Task>-v5`, on every CPU and on one thread) and, in the same run, Gymnasium's own v5 envs under `gymnasium.make_vec` with
vectorization_mode "sync" and "async", EnvPool's port of the same task (its v4, on a thread per CPU; run by
--envpool-python, a Python with `envpool`, skipped without one) and the raw physics of the same model under
`mujoco.rollout`. Every repeat is kept; the table shows the median and the spread.
Prints a table and writes benchmarks/results/mujoco_cpu.json (or --out).

    python benchmarks/mujoco_steps.py [--tasks Ant Humanoid HalfCheetah] [--num-envs 8 32] [--seconds 1.0]
                                      [--repeats 3] [--envpool-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import gymnasium as gym
import numpy as np

import fastvec  # noqa: F401  (registers fastvec/<Task>-v5)

RESULTS = Path(__file__).parent / "results"
MODES = ("fastvec", "fastvec_1_thread", "sync", "async", "envpool", "mujoco_rollout")

# EnvPool's side, run in the Python that has it: its synchronous mode (batch_size = num_envs) on a thread per CPU,
# the same pool of 16 random float32 action batches drawn beforehand, one warm-up run then `repeats` timed ones.
ENVPOOL_SCRIPT = """
import json, os, sys, time
import numpy as np
import envpool
task, num_envs, seconds, repeats = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
envs = envpool.make(task + "-v4", env_type="gymnasium", num_envs=num_envs, batch_size=num_envs,
                    num_threads=len(os.sched_getaffinity(0)), seed=0)
high = envs.action_space.high
rng = np.random.default_rng(0)
actions = [(rng.uniform(-1, 1, (num_envs, high.size)) * high).astype(np.float32) for _ in range(16)]
envs.reset()
rates = []
for run in range(repeats + 1):
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            envs.step(a)
        steps += len(actions)
    if run > 0:
        rates.append(steps * num_envs / (time.perf_counter() - start))
print(json.dumps({"rates": rates, "version": envpool.__version__}))
"""


def measure_envpool(python: str | None, task: str, num_envs: int, seconds: float, repeats: int) -> dict:
    """EnvPool's steps per second for `task` (ENVPOOL_SCRIPT in `python`), or why there are none."""
    if not python:
        return {"skipped": "no --envpool-python given and envpool is not importable here"}
    proc = subprocess.run([python, "-c", ENVPOOL_SCRIPT, task, str(num_envs), str(seconds), str(repeats)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"skipped": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make(task: str, mode: str, num_envs: int):
    if mode.startswith("fastvec"):
        from fastvec.native.cpu import default_threads
        from fastvec.native.mujoco import library

        library().fv_mj_set_threads(1 if mode == "fastvec_1_thread" else default_threads())
        return gym.make_vec(f"fastvec/{task}-v5", num_envs=num_envs)
    return gym.make_vec(f"{task}-v5", num_envs=num_envs, vectorization_mode=mode)


def measure(envs, seconds: float, repeats: int, pool: int = 16) -> list[float]:
    """Env steps per second of `repeats` runs of about `seconds` each, after a warm-up of the same length;
    actions are drawn beforehand (not timed)."""
    rng = np.random.default_rng(0)
    high = envs.single_action_space.high
    actions = [(rng.uniform(-1, 1, (envs.num_envs, high.size)) * high).astype(np.float32) for _ in range(pool)]
    envs.reset(seed=0)
    rates = []
    for run in range(repeats + 1):
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for a in actions:
                envs.step(a)
            steps += pool
        if run > 0:  # run 0 is the warm-up
            rates.append(steps * envs.num_envs / (time.perf_counter() - start))
    return rates


def measure_rollout(task: str, num_envs: int, seconds: float, repeats: int, steps: int = 20) -> list[float]:
    """The raw physics of the same model: `mujoco.rollout` on a thread per CPU, frame_skip physics steps per env step
    (no task terms, no mj_rnePostConstraint), each call `steps` env steps of every env from a reset state, random
    actions held over each env step; in env steps per second, after a warm-up run."""
    import mujoco
    from mujoco import rollout

    env = gym.make(f"{task}-v5")
    env.reset(seed=0)
    u = env.unwrapped
    model, skip = u.model, u.frame_skip
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, u.data, state, spec)
    initial = np.tile(state, (num_envs, 1))
    rng = np.random.default_rng(0)
    low, high = model.actuator_ctrlrange.T
    control = np.repeat(rng.uniform(low, high, (num_envs, steps, model.nu)), skip, axis=1)
    datas = [mujoco.MjData(model) for _ in range(len(os.sched_getaffinity(0)))]
    rates = []
    for run in range(repeats + 1):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            rollout.rollout(model, datas, initial, control, persistent_pool=True)
            calls += 1
        if run > 0:
            rates.append(calls * steps * num_envs / (time.perf_counter() - start))
    rollout.shutdown_persistent_pool()
    env.close()
    return rates


def spread(rates: list[float]) -> float:
    """(max - min) / median of the repeats: how far apart they fell."""
    return (max(rates) - min(rates)) / float(np.median(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Ant", "Humanoid", "HalfCheetah"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[8, 32])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--envpool-python", default=None,
                        help="a Python with envpool installed (default: this one, if it has envpool)")
    parser.add_argument("--out", type=Path, default=RESULTS / "mujoco_cpu.json")
    args = parser.parse_args()
    import mujoco

    envpool_python = args.envpool_python
    if envpool_python is None and subprocess.run([sys.executable, "-c", "import envpool"],
                                                 capture_output=True).returncode == 0:
        envpool_python = sys.executable
    envpool_version = None

    rows = []
    load_start = os.getloadavg()
    header = (f"{'task':<12} {'envs':>5} " + " ".join(f"{m:>20}" for m in MODES)
              + f" {'vs sync':>8} {'vs async':>8} {'vs envpool':>10} {'of rollout':>10}")
    print(header)
    for task in args.tasks:
        for n in args.num_envs:
            row = {"task": f"{task}-v5", "num_envs": n}
            for mode in MODES:
                if mode == "mujoco_rollout":
                    rates = measure_rollout(task, n, args.seconds, args.repeats)
                elif mode == "envpool":
                    result = measure_envpool(envpool_python, task, n, args.seconds, args.repeats)
                    if "skipped" in result:
                        row[mode] = {"skipped": result["skipped"], "median": float("nan")}
                        continue
                    rates, envpool_version = result["rates"], result["version"]
                else:
                    envs = make(task, mode, n)
                    try:
                        rates = measure(envs, args.seconds, args.repeats)
                    finally:
                        envs.close()
                row[mode] = {"steps_per_s": rates, "median": float(np.median(rates))}
            rows.append(row)
            cells = " ".join(f"{row[m]['median']:>14,.0f} \u00b1{spread(row[m]['steps_per_s']):>4.0%}"
                             if "steps_per_s" in row[m] else f"{'-':>20}" for m in MODES)
            print(f"{task:<12} {n:>5} {cells} {row['fastvec']['median'] / row['sync']['median']:>7.1f}x "
                  f"{row['fastvec']['median'] / row['async']['median']:>7.1f}x "
                  f"{row['fastvec']['median'] / row['envpool']['median']:>9.2f}x "
                  f"{row['fastvec']['median'] / row['mujoco_rollout']['median']:>9.2f}x", flush=True)
    print("(steps/s: median of the repeats \u00b1 their spread, (max - min) / median; vs: fastvec on every CPU)")
    out = {"benchmark": "mujoco_steps", "date": date.today().isoformat(), "machine": platform.node(),
           "cpus": len(os.sched_getaffinity(0)), "processor": platform.processor() or platform.machine(),
           "mujoco": mujoco.__version__, "gymnasium": gym.__version__, "envpool": envpool_version,
           "envpool_note": "EnvPool's tasks are Gymnasium's v4 (the v5 tasks' models and physics; v5 changed reward "
                           "and observation details and default keywords), stepped in its synchronous mode",
           "seconds": args.seconds,
           "repeats": args.repeats, "fastvec_threads": os.environ.get("FASTVEC_NUM_THREADS", "all CPUs"),
           "load_average_1_5_15min": {"start": load_start, "end": os.getloadavg()},
           "note": "random float32 actions drawn beforehand; each figure one timed run after a warm-up run",
           "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
