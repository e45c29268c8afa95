"""Env-only throughput: steps per second through `step()` with random actions, for fastvec and, in
the same run, Gymnasium's own CartPole-v1 (native vector env and SyncVectorEnv). Prints a table and
writes benchmarks/results/env_steps_cpu.json.

    python benchmarks/env_steps.py [--seconds 1.0] [--num-envs 64 512 4096 16384]

With --gpu (on a CUDA machine with PyCUDA): fastvec on the GPU through `step()` with device arrays
(int64 actions pre-drawn on the device, nothing returns to the host) and through the fused
`rollout("random", T)`, for CartPole (default float64, and the opt-in `float32=1`) and Breakout,
beside gymnax's CartPole-v1 and MinAtar Breakout under jax.jit +
lax.scan (vmapped over envs, random actions, T steps per call), in one run; and each of fastvec's
step kernels (batch_gpu.h) in turn on the same batch, through `step()` and as T step kernels replayed
in one CUDA graph (the kernel's own rate, without the Python call per step); writes
benchmarks/results/env_steps_gpu.json (or --out). Kernels that fastvec does not ship: benchmarks/lab/.

    python benchmarks/env_steps.py --gpu [--gpu-num-envs 65536 1048576 16777216] [--rollout-steps 100]
                                         [--kernels all | NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import gymnasium as gym
import numpy as np

import fastvec  # noqa: F401  (registers fastvec/...)

RESULTS = Path(__file__).parent / "results"


def steps_per_second(envs, seconds: float, pool: int = 64) -> float:
    """Env steps per second of envs.step with pre-drawn random actions (drawing is not timed)."""
    rng = np.random.default_rng(0)
    n, high = envs.num_envs, int(envs.single_action_space.n)
    actions = [rng.integers(0, high, n) for _ in range(pool)]
    envs.reset(seed=0)
    for a in actions[:4]:
        envs.step(a)  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions[:8]:
            envs.step(a)
        steps += 8
    return steps * n / (time.perf_counter() - start)


def gpu_step_rate(envs, seconds: float, pool: int = 8) -> float:
    """Env steps per second of envs.step(device actions) on a GPU env made with array_type="device".
    The GPU runs asynchronously, so the clock starts and stops at a synchronisation."""
    b = envs.unwrapped.batch
    envs.reset(seed=0)
    actions = []
    for t in range(pool):  # pre-drawn random actions, on the device
        b.random_actions(t)
        actions.append(b.dev.actions.copy())
    for a in actions[:4]:
        envs.step(a)  # warm-up
    envs.synchronize()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            envs.step(a)
        steps += pool
    envs.synchronize()
    return steps * envs.num_envs / (time.perf_counter() - start)


def gpu_rollout_rate(envs, seconds: float, steps: int) -> float:
    """Env steps per second of the fused envs.rollout("random", steps) (envs already reset)."""
    envs.rollout("random", steps)
    envs.synchronize()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        envs.rollout("random", steps)
        calls += 1
        if calls % 4 == 0:
            envs.synchronize()
    envs.synchronize()
    return calls * steps * envs.num_envs / (time.perf_counter() - start)


def hold_actions(t: int, batch) -> None:
    """A rollout policy that keeps batch.dev.actions as they are (enqueues nothing)."""


def gpu_graph_step_rate(envs, seconds: float, steps: int) -> float:
    """Env steps per second of `steps` step kernels replayed as one CUDA graph (rollout with a policy
    that keeps the actions): the step kernel's own rate, without step()'s Python call per step."""
    envs.rollout(hold_actions, steps)  # capture
    envs.synchronize()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        envs.rollout(hold_actions, steps)
        calls += 1
        if calls % 4 == 0:
            envs.synchronize()
    envs.synchronize()
    return calls * steps * envs.num_envs / (time.perf_counter() - start)


def _flax_struct_shim() -> None:
    """gymnax needs only flax.struct.dataclass; where flax is not installed, provide that alone."""
    try:
        import flax.struct  # noqa: F401
        return
    except ImportError:
        pass
    import dataclasses
    import sys
    import types

    import jax

    def dataclass(cls=None, **kwargs):
        def wrap(c):
            c = dataclasses.dataclass(frozen=True)(c)
            names = [f.name for f in dataclasses.fields(c)]
            c.replace = lambda self, **updates: dataclasses.replace(self, **updates)
            jax.tree_util.register_pytree_node(c, lambda x: ([getattr(x, k) for k in names], None),
                                               lambda _, children: c(*children))
            return c
        return wrap if cls is None else wrap(cls)

    flax = types.ModuleType("flax")
    flax.struct = types.ModuleType("flax.struct")
    flax.struct.dataclass = dataclass
    sys.modules["flax"], sys.modules["flax.struct"] = flax, flax.struct


def warm_until_cached(run, carry, max_calls: int = 8):
    """Call `carry, out = run(carry)` until a call adds nothing to run's jit cache; returns (carry, calls).
    One warm-up call is not enough where the state a step returns differs in type from the one reset made (a
    weakly typed field made strong, a Python int made an array): the second call compiles again. A function
    still compiling after max_calls calls is an error, never a timing."""
    for calls in range(1, max_calls + 1):
        size = run._cache_size()
        carry, out = run(carry)
        jax_block(out)
        if run._cache_size() == size:
            return carry, calls
    raise RuntimeError(f"{getattr(run, '__name__', run)} still compiles after {max_calls} calls "
                       f"(jit cache size {run._cache_size()}): its output's types never settle")


def timed_calls(run, carry, seconds: float, min_calls: int = 2):
    """Replay `carry, out = run(carry)` for `seconds` (at least min_calls calls) on a warmed `run`; returns
    (calls, elapsed seconds). Raises if run's jit cache grew while timing: a compile is never timed."""
    size = run._cache_size()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < min_calls:
        carry, out = run(carry)
        calls += 1
    jax_block(out)
    elapsed = time.perf_counter() - start
    if run._cache_size() != size:
        raise RuntimeError(f"{getattr(run, '__name__', run)} compiled while being timed (jit cache {size} -> "
                           f"{run._cache_size()}): warm it with warm_until_cached first")
    return calls, elapsed


def jax_block(tree) -> None:
    import jax

    jax.block_until_ready(tree)


def gymnax_measure(env_id: str, num_envs: int, steps: int, seconds: float) -> dict:
    """A gymnax env's steps per second, vmapped over envs, `steps` steps per jitted lax.scan call, uniform random
    actions (Discrete: one randint draw for all envs; other spaces: the space's own sample per env), warmed until
    its jit cache stops growing; with the warm-up calls it took, its compile seconds and its state's bytes per env."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    _flax_struct_shim()
    import gymnax
    import jax

    env, params = gymnax.make(env_id)
    space = env.action_space(params)
    if hasattr(space, "n"):
        def sample(key):
            return jax.random.randint(key, (num_envs,), 0, space.n)
    else:
        def sample(key):
            return jax.vmap(space.sample)(jax.random.split(key, num_envs))

    @jax.jit
    def run(carry):
        def body(carry, _):
            state, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, num_envs), state,
                                                              sample(k_act), params)
            return (out[1], key), out[2].sum()
        return jax.lax.scan(body, carry, None, length=steps)

    key = jax.random.PRNGKey(0)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, num_envs), params)
    state_bytes = sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(state)) / num_envs
    start = time.perf_counter()
    carry, warmup_calls = warm_until_cached(run, (state, key))
    compile_s = time.perf_counter() - start
    calls, elapsed = timed_calls(run, carry, seconds)
    return {"steps_per_second": calls * steps * num_envs / elapsed, "warmup_calls": warmup_calls,
            "compiles": run._cache_size(), "warmup_s": compile_s, "state_bytes_per_env": state_bytes}


def gymnax_rate(env_id: str, num_envs: int, steps: int, seconds: float) -> float:
    """Env steps per second of a gymnax env (gymnax_measure: warmed until nothing recompiles, never timing a compile)."""
    return gymnax_measure(env_id, num_envs, steps, seconds)["steps_per_second"]


def gpu_main(args) -> None:
    import pycuda.driver as drv

    from fastvec.native.cuda import STEP_KERNEL_NAMES

    rows, kernels = [], {}  # kernels: {game: {num_envs: the step kernel that cuda.py picks}}
    # (column name, env id, env parameters)
    games = [("CartPole", "CartPole", {}), ("CartPole float32", "CartPole", {"float32": 1}), ("Breakout", "Breakout", {})]
    sweep = [k for k in args.kernels if k in STEP_KERNEL_NAMES]
    for n in args.gpu_num_envs:
        row = {"num_envs": n}
        for game, env_id, params in games:
            if env_id == "Breakout" and n > args.breakout_max_envs:
                continue
            envs = gym.make_vec(f"fastvec/{env_id}", n, device="cuda", array_type="device", **params)
            batch = envs.unwrapped.batch
            kernels.setdefault(game, {})[n] = default = batch.step_kernel_name
            row[f"fastvec {game} step()"] = gpu_step_rate(envs, args.seconds)
            row[f"fastvec {game} rollout({args.rollout_steps})"] = gpu_rollout_rate(envs, args.seconds, args.rollout_steps)
            # Each step kernel in turn on the same batch (batch_gpu.h; all give the same bits), for the
            # choice in cuda.step_kernel_name. Breakout: staged_wide and wide only (the wide kernels
            # keep its state in local memory; one of them shows that cost).
            for kernel in sweep if env_id != "Breakout" else [k for k in sweep if k in ("staged_wide", "wide")]:
                batch.use_step_kernel(kernel)
                row[f"fastvec {game} step() {kernel} kernel"] = gpu_step_rate(envs, args.seconds)
                if n <= 1 << 20:  # (above, step() is the kernel's rate: its Python call is hidden)
                    try:
                        row[f"fastvec {game} graph({args.rollout_steps}) {kernel} kernel"] = gpu_graph_step_rate(
                            envs, args.seconds / 2, args.rollout_steps)
                    except Exception as err:  # report and go on: step() is the measurement that matters
                        print(f"graph of {kernel} for {game} at {n} envs failed: {type(err).__name__}: {err}")
            batch.use_step_kernel(default)
            envs.close()
            del envs, batch
        for game, gymnax_id in [("CartPole", "CartPole-v1"), ("Breakout", "Breakout-MinAtar")]:
            if n <= args.gymnax_max_envs:
                try:
                    row[f"gymnax {game} scan({args.rollout_steps})"] = gymnax_rate(gymnax_id, n, args.rollout_steps, args.seconds)
                except Exception as err:  # report and go on: the fastvec columns matter most
                    print(f"gymnax {gymnax_id} at {n} envs failed: {type(err).__name__}: {err}")
        rows.append(row)
        print(row, flush=True)
        write_gpu_results(args, rows, kernels, games)  # after every row: a cut-short run keeps what it measured
    row = {"num_envs": 4096}
    row["gymnasium CartPole vector (CPU)"] = steps_per_second(
        gym.make_vec("CartPole-v1", 4096, vectorization_mode="vector_entry_point"), args.seconds)
    rows.append(row)

    columns = list(dict.fromkeys(c for r in rows for c in r if c != "num_envs"))
    print(f"env steps/s on {drv.Device(0).name()} (+ {os.cpu_count()} CPU cores), {date.today()}; G = 1e9")
    for c in columns:
        print(f"{c:>44} | " + " | ".join(
            f"{r['num_envs']:>9}: {r[c] / 1e9:7.2f} G" for r in rows if c in r))
    print(f"step kernels picked by default: {kernels}")
    print(f"fastest step kernels in this run: {write_gpu_results(args, rows, kernels, games)}")


def write_gpu_results(args, rows: list, kernels: dict, games: list) -> dict:
    """Write the GPU JSON; returns the fastest step kernel through step() per game and size (from
    the sweep, what cuda.step_kernel_name's choice rests on)."""
    import pycuda.driver as drv

    best = {game: {r["num_envs"]: max((c for c in r if c.startswith(f"fastvec {game} step() ") and c.endswith(" kernel")),
                                      key=r.get, default="").removeprefix(f"fastvec {game} step() ").removesuffix(" kernel")
                   for r in rows if f"fastvec {game} step()" in r} for game, _, _ in games}
    l2 = getattr(drv.device_attribute, "L2_CACHE_SIZE", None)
    out = {"date": str(date.today()), "device": drv.Device(0).name(),
           "l2_bytes": drv.Device(0).get_attribute(l2) if l2 is not None else None, "cores": os.cpu_count(),
           "rollout_steps": args.rollout_steps, "default_step_kernels": kernels, "fastest_step_kernels": best,
           "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    Path(args.out or RESULTS / "env_steps_gpu.json").write_text(json.dumps(out, indent=2))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64, 512, 4096, 16384])
    parser.add_argument("--no-breakout", dest="breakout", action="store_false", help="CartPole only")
    parser.add_argument("--sync-max-envs", type=int, default=512, help="largest num_envs for SyncVectorEnv (slow)")
    parser.add_argument("--gpu", action="store_true", help="the GPU table (fastvec on CUDA beside gymnax) instead")
    parser.add_argument("--gpu-num-envs", type=int, nargs="+", default=[65536, 1 << 20, 1 << 24])
    parser.add_argument("--rollout-steps", type=int, default=100, help="steps per fused rollout / lax.scan call")
    parser.add_argument("--breakout-max-envs", type=int, default=1 << 24)
    parser.add_argument("--gymnax-max-envs", type=int, default=1 << 20, help="0: no gymnax columns")
    parser.add_argument("--out", help="GPU: where to write the JSON (default benchmarks/results/env_steps_gpu.json)")
    parser.add_argument("--kernels", nargs="*", default=["all"],
                        help="step kernels to force one by one at every size (GPU; 'all' or names; none: no sweep)")
    args = parser.parse_args()
    if args.kernels == ["all"]:
        from fastvec.native.cuda import STEP_KERNEL_NAMES

        args.kernels = list(STEP_KERNEL_NAMES)
    if args.gpu:
        return gpu_main(args)

    rows = []
    for n in args.num_envs:
        row = {"num_envs": n}
        cartpole = gym.make_vec("fastvec/CartPole", n, copy=False)
        row["fastvec CartPole"] = steps_per_second(cartpole, args.seconds)
        lib = cartpole.unwrapped.batch.env.lib
        threads = lib.fv_set_num_threads(1)  # core for core against single-threaded Gymnasium
        row["fastvec CartPole 1 thread"] = steps_per_second(cartpole, args.seconds)
        lib.fv_set_num_threads(threads)
        row["gymnasium CartPole vector"] = steps_per_second(
            gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point"), args.seconds)
        if n <= args.sync_max_envs:
            row["gymnasium CartPole Sync"] = steps_per_second(
                gym.make_vec("CartPole-v1", n, vectorization_mode="sync"), args.seconds)
        breakout = gym.make_vec("fastvec/Breakout", n, copy=False) if args.breakout else None
        if breakout is not None:
            row["fastvec Breakout"] = steps_per_second(breakout, args.seconds)
            lib = breakout.unwrapped.batch.env.lib
            threads = lib.fv_set_num_threads(1)
            row["fastvec Breakout 1 thread"] = steps_per_second(breakout, args.seconds)
            lib.fv_set_num_threads(threads)
        rows.append(row)

    columns = [k for k in rows[-1] if k != "num_envs"] + (
        ["gymnasium CartPole Sync"] if "gymnasium CartPole Sync" not in rows[-1] else [])
    print(f"env steps/s on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, {date.today()}")
    print(f"{'num_envs':>9} | " + " | ".join(f"{c:>26}" for c in columns))
    for row in rows:
        print(f"{row['num_envs']:>9} | " + " | ".join(
            f"{row[c] / 1e6:>24.2f} M" if c in row else f"{'-':>26}" for c in columns))
        if "gymnasium CartPole vector" in row:
            print(f"{'':>9}   fastvec/gymnasium CartPole speed-up: {row['fastvec CartPole'] / row['gymnasium CartPole vector']:.1f}x")
    RESULTS.mkdir(exist_ok=True)
    out = {"date": str(date.today()), "machine": platform.platform(), "cores": os.cpu_count(), "rows": rows}
    (RESULTS / "env_steps_cpu.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
