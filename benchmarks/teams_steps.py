"""Team env throughput: env steps per second (a step moves every agent of one game) of fastvec's SMAX scenarios and
MPE scenarios beside jaxmarl's own (SMAX with its scenario, MPE_<name>_v3) in the same run, with uniform random
actions (every agent's whole action space, the same work on both sides: an attack on a dead or far unit does nothing
in either). fastvec: the CPU batch through step() (pre-drawn actions), and with --gpu the GPU batch's fused
rollout("random", T) and step() with device actions. jaxmarl: jax.jit of lax.scan over T steps of jax.vmap(env.step)
over the envs (its own autoreset), warmed until its jit cache stops growing, so no compile is timed; run by
--jaxmarl-python (a Python with jaxmarl and JAX) in a process of its own, on JAX's default device.
Prints a table and writes benchmarks/results/teams_cpu.json (teams_gpu.json with --gpu).

    python benchmarks/teams_steps.py [--envs smax:3m mpe:simple_spread] [--num-envs 1024] [--seconds 2]
    python benchmarks/teams_steps.py --gpu [--gpu-num-envs 65536] [--rollout-steps 100] --jaxmarl-python PYTHON
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

import numpy as np
from env_steps import gpu_rollout_rate

from fastvec.native import NATIVE_DIR
from fastvec.native.batches import load_batch
from fastvec.native.mpe import MAX_CYCLES, SCENARIOS as MPE, scenario_defines as mpe_defines
from fastvec.native.smax import TIME_LIMIT, scenario_defines as smax_defines
from fastvec.trainer.agent_inputs import agent_sizes

RESULTS = Path(__file__).parent / "results"
DEFAULT_ENVS = ["smax:3m", "smax:3s5z", "smax:5m_vs_6m", "smax:3s5z_vs_3s6z", "mpe:simple_spread", "mpe:simple_tag"]

# jaxmarl's side: make the env, draw every agent's action uniformly from its own Discrete space, scan T steps of the
# vmapped step, warm until nothing recompiles (env_steps.warm_until_cached's rule), then time whole calls.
JAXMARL_SCRIPT = """
import json, os, sys, time
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax, jax.numpy as jnp
import jaxmarl
family, name, num_envs, steps, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
if family == "smax":
    from jaxmarl.environments.smax import map_name_to_scenario
    env = jaxmarl.make("SMAX", scenario=map_name_to_scenario(name))
else:
    env = jaxmarl.make(f"MPE_{name}_v3")
sizes = {a: env.action_space(a).n for a in env.agents}

def actions(key):
    keys = jax.random.split(key, len(env.agents))
    return {a: jax.random.randint(k, (num_envs,), 0, sizes[a]) for a, k in zip(env.agents, keys)}

@jax.jit
def run(carry):
    def body(carry, _):
        state, key = carry
        key, k_act, k_step = jax.random.split(key, 3)
        out = jax.vmap(env.step)(jax.random.split(k_step, num_envs), state, actions(k_act))
        # every agent's observation summed into the output: else XLA drops the observation code, which the
        # fastvec side runs every step
        observed = sum(o.sum() for o in jax.tree_util.tree_leaves(out[0]))
        return (out[1], key), out[2][env.agents[0]].sum() + observed
    return jax.lax.scan(body, carry, None, length=steps)

key = jax.random.PRNGKey(0)
_, state = jax.vmap(env.reset)(jax.random.split(key, num_envs))
carry, start = (state, key), time.perf_counter()
for warmup_calls in range(1, 9):
    size = run._cache_size()
    carry, out = run(carry)
    jax.block_until_ready(out)
    if run._cache_size() == size:
        break
else:
    raise RuntimeError("still compiling after 8 calls")
warmup_s = time.perf_counter() - start
size, calls, start = run._cache_size(), 0, time.perf_counter()
while time.perf_counter() - start < seconds or calls < 2:
    carry, out = run(carry)
    calls += 1
jax.block_until_ready(out)
elapsed = time.perf_counter() - start
assert run._cache_size() == size, "compiled while timed"
print(json.dumps({"steps_per_second": calls * steps * num_envs / elapsed, "warmup_calls": warmup_calls,
                  "warmup_s": warmup_s, "device": str(jax.devices()[0]), "jax": jax.__version__}))
"""


def fastvec_batch(env: str, num_envs: int, device: str = "cpu", **kwargs):
    """A native batch of `env` ("smax:NAME" or "mpe:NAME", the scenario's defaults) and its step limit."""
    family, name = env.split(":")
    if family == "smax":
        path, defines, limit = NATIVE_DIR / "smax.h", smax_defines(name), TIME_LIMIT
    else:
        path, defines, limit = NATIVE_DIR / MPE[name].source, mpe_defines(name, False, {})[0], MAX_CYCLES
    return load_batch(path, num_envs, defines, device=device, max_episode_steps=limit, **kwargs)


def cpu_rate(env: str, num_envs: int, seconds: float, pool: int = 16) -> float:
    """fastvec's CPU batch: env steps per second of step() with pre-drawn uniform actions per agent."""
    batch = fastvec_batch(env, num_envs)
    sizes = np.array(agent_sizes(batch, "action"))  # each agent's own Discrete size
    rng = np.random.default_rng(0)
    actions = [(rng.random((num_envs, len(sizes))) * sizes).astype(np.int64)[..., None] for _ in range(pool)]
    batch.reset(np.arange(num_envs, dtype=np.uint64), None)
    for a in actions[:4]:
        batch.step(a)  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            batch.step(a)
        steps += pool
    return steps * num_envs / (time.perf_counter() - start)


def gpu_rates(env: str, num_envs: int, seconds: float, steps: int) -> dict:
    """fastvec's GPU batch: the fused random rollout's env steps per second (env_steps.gpu_rollout_rate)."""
    batch = fastvec_batch(env, num_envs, device="cuda", host_arrays=False)
    batch.reset(np.arange(num_envs, dtype=np.uint64), None)
    try:
        return {"rollout": gpu_rollout_rate(batch, seconds, steps)}
    finally:
        batch.close()


def jaxmarl_rate(python: str | None, env: str, num_envs: int, steps: int, seconds: float) -> dict:
    """jaxmarl's measurement (JAXMARL_SCRIPT in `python`), or why there is none."""
    if not python:
        return {"skipped": "no --jaxmarl-python given and jaxmarl is not importable here"}
    family, name = env.split(":")
    proc = subprocess.run([python, "-c", JAXMARL_SCRIPT, family, name, str(num_envs), str(steps), str(seconds)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"skipped": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=DEFAULT_ENVS, help="smax:NAME or mpe:NAME")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024])
    parser.add_argument("--gpu", action="store_true", help="fastvec's GPU batch (and jaxmarl on JAX's GPU)")
    parser.add_argument("--gpu-num-envs", type=int, nargs="+", default=[65536])
    parser.add_argument("--rollout-steps", type=int, default=100, help="T: steps a call (fastvec's rollout, jaxmarl's "
                                                                       "scan)")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--jaxmarl-python", default=None, help="a Python with jaxmarl (default: this one, if it has it)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    python = args.jaxmarl_python
    if python is None and subprocess.run([sys.executable, "-c", "import jaxmarl"], capture_output=True).returncode == 0:
        python = sys.executable
    sizes = args.gpu_num_envs if args.gpu else args.num_envs
    path = args.out or RESULTS / ("teams_gpu.json" if args.gpu else "teams_cpu.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    out = {"benchmark": "teams_steps", "date": date.today().isoformat(), "machine": platform.node(),
           "cpus": len(os.sched_getaffinity(0)), "processor": platform.processor() or platform.machine(),
           "device": "cuda" if args.gpu else "cpu", "seconds": args.seconds, "rollout_steps": args.rollout_steps,
           "note": "env steps per second (a step moves every agent of one game); uniform random actions on both "
                   "sides; jaxmarl warmed until its jit cache stops growing",
           "command": " ".join(["python", "benchmarks/teams_steps.py", *sys.argv[1:]]), "rows": []}
    if args.gpu:
        import pycuda.driver as drv
        drv.init()
        out["gpu"] = drv.Device(0).name()
    print(f"{'env':<24} {'envs':>8} {'fastvec':>14} {'jaxmarl':>14} {'ratio':>8}")
    for env in args.envs:
        for n in sizes:
            row = {"env": env, "num_envs": n}
            if args.gpu:
                row["fastvec"] = gpu_rates(env, n, args.seconds, args.rollout_steps)
                mine = row["fastvec"]["rollout"]
            else:
                mine = cpu_rate(env, n, args.seconds)
                row["fastvec"] = {"step": mine}
            row["jaxmarl"] = jaxmarl_rate(python, env, n, args.rollout_steps, args.seconds)
            theirs = row["jaxmarl"].get("steps_per_second")
            row["ratio"] = mine / theirs if theirs else None
            out["rows"].append(row)
            print(f"{env:<24} {n:>8} {mine:>14,.0f} {theirs or float('nan'):>14,.0f} "
                  f"{(row['ratio'] or float('nan')):>7.1f}x", flush=True)
            # written after every row: a run cut short (a time limit on a lent machine) keeps what it measured
            out["load_average_1_5_15min"] = os.getloadavg()
            path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
