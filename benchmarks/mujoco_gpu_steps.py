"""MuJoCo on the GPU: physics steps per second through fastvec's env (WarpBatch on device="cuda": MuJoCo Warp's
step plus the task's kernels, autoreset included) against MuJoCo Warp's own step loop on the same model and the
same number of worlds, both replayed as CUDA graphs with fixed random controls, in one run on one GPU. An env step
is frame_skip physics steps; the claim checked is fastvec's physics rate >= 0.9 of MJWarp's own. fastvec's eager
step() (device arrays, no graph) is a third row, and MJX (MuJoCo's JAX implementation, mujoco-mjx) on the same
model a fourth: frame_skip vmapped mjx.step calls in one jit, warmed until nothing recompiles. Humanoid is refused
(its model uses the PGS solver, which neither MJWarp nor MJX has) and shows as a row with the reason. Every repeat
is kept; the table shows the median.
Prints a table and writes benchmarks/results/mujoco_gpu.json (or --out).

    python benchmarks/mujoco_gpu_steps.py [--tasks Ant Hopper Humanoid] [--num-envs 8192 65536] [--seconds 2]
                                          [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
CLAIM = 0.9  # fastvec's physics steps/s over MJWarp's own loop's, at least


def timed(launch, sync, seconds: float, repeats: int) -> list[float]:
    """Launches per second of `launch` (after one warm-up launch), each repeat running for `seconds`."""
    launch()
    sync()
    rates = []
    for _ in range(repeats):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(8):
                launch()
            count += 8
            sync()
        rates.append(count / (time.perf_counter() - start))
    return rates


def mjwarp_loop(task: str, num_envs: int, seconds: float, repeats: int) -> dict:
    """MJWarp's own loop: frame_skip calls of mujoco_warp.step captured in one graph (an env step's physics)."""
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    from fastvec.native.mujoco import batch_settings, task_spec

    spec = task_spec(task)
    _, skip, xml, _, _ = batch_settings(spec, num_envs, None, None, {})
    mjm = mujoco.MjModel.from_xml_path(xml)
    with wp.ScopedDevice("cuda:0"):
        model = mjw.put_model(mjm)
        data = mjw.make_data(mjm, nworld=num_envs)
        rng = np.random.default_rng(0)
        low, high = mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1]
        data.ctrl.assign(rng.uniform(low, high, (num_envs, mjm.nu)).astype(np.float32))
        for _ in range(skip):  # compiles MJWarp's kernels outside the graph
            mjw.step(model, data)
        wp.synchronize()
        with wp.ScopedCapture() as capture:
            for _ in range(skip):
                mjw.step(model, data)
        rates = timed(lambda: wp.capture_launch(capture.graph), wp.synchronize, seconds, repeats)
    return {"physics_steps_per_s": [r * skip * num_envs for r in rates], "frame_skip": skip}


def mjx_loop(task: str, num_envs: int, seconds: float, repeats: int) -> dict:
    """MJX on the same model (float32, its JAX implementation): one jitted call is frame_skip vmapped mjx.step calls
    over the worlds, with the same fixed random controls; warmed until its jit cache stops growing, and a repeat
    during which it compiled is refused (env_steps' gymnax harness rules)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside Warp's and fastvec's allocations
    import jax
    import jax.numpy as jnp
    import mujoco
    from env_steps import timed_calls, warm_until_cached
    from mujoco import mjx

    from fastvec.native.mujoco import batch_settings, task_spec

    spec = task_spec(task)
    _, skip, xml, _, _ = batch_settings(spec, num_envs, None, None, {})
    mjm = mujoco.MjModel.from_xml_path(xml)
    model = mjx.put_model(mjm)  # NotImplementedError for what MJX lacks (the PGS solver)
    rng = np.random.default_rng(0)
    low, high = mjm.actuator_ctrlrange[:, 0], mjm.actuator_ctrlrange[:, 1]
    ctrl = jnp.asarray(rng.uniform(low, high, (num_envs, mjm.nu)).astype(np.float32))
    data = jax.vmap(lambda c: mjx.make_data(model).replace(ctrl=c))(ctrl)
    step = jax.vmap(mjx.step, in_axes=(None, 0))

    @jax.jit
    def run(carry):
        m, d = carry
        d = jax.lax.fori_loop(0, skip, lambda _, x: step(m, x), d)
        return (m, d), d.qpos

    start = time.perf_counter()
    carry, calls = warm_until_cached(run, (model, data))
    warmup = time.perf_counter() - start
    rates = []
    for _ in range(repeats):
        count, elapsed = timed_calls(run, carry, seconds)
        rates.append(count / elapsed)
    return {"physics_steps_per_s": [r * skip * num_envs for r in rates], "frame_skip": skip,
            "warmup_calls": calls, "warmup_s": warmup, "compiles": run._cache_size()}


def fastvec_env(task: str, num_envs: int, seconds: float, repeats: int, graph: bool) -> dict:
    """fastvec's WarpBatch with device arrays: a captured step launched again and again, or step() each time."""
    from fastvec.native.mujoco.warp_batch import WarpBatch

    batch = WarpBatch(task, num_envs, device="cuda", host_arrays=False)
    batch.reset(seeds=np.arange(num_envs))
    rng = np.random.default_rng(0)
    actions = rng.uniform(batch.ctrl_low, batch.ctrl_high, (num_envs, batch.nu)).astype(np.float32)
    batch.put_actions(actions)
    if graph:
        step = batch.capture_step()
        launch = step.launch
    else:
        given = batch.dev.actions

        def launch():
            batch.step(given)
    rates = timed(launch, batch.synchronize, seconds, repeats)
    batch.close()
    return {"physics_steps_per_s": [r * batch.frame_skip * num_envs for r in rates],
            "env_steps_per_s": [r * num_envs for r in rates], "frame_skip": batch.frame_skip}


def mjx_versions() -> dict:
    """The installed versions of what MJX's rows ran on (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("mujoco-mjx", "jax", "jaxlib", "mujoco", "mujoco-core"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Ant", "Hopper", "Humanoid"])
    parser.add_argument("--num-envs", nargs="+", type=int, default=[8192, 65536])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "mujoco_gpu.json")
    parser.add_argument("--no-mjx", action="store_true", help="leave out MJX (mujoco-mjx and a CUDA JAX needed)")
    args = parser.parse_args()

    import mujoco_warp
    import warp as wp

    wp.init()
    rows = []
    print(f"{'task':<10} {'envs':>7} {'MJWarp loop':>14} {'fastvec graph':>14} {'fastvec step()':>15} {'ratio':>6}")
    for task in args.tasks:
        for n in args.num_envs:
            row = {"task": task, "num_envs": n}
            try:
                row["fastvec_graph"] = fastvec_env(task, n, args.seconds, args.repeats, graph=True)
                row["fastvec_step"] = fastvec_env(task, n, args.seconds, args.repeats, graph=False)
                row["mjwarp_loop"] = mjwarp_loop(task, n, args.seconds, args.repeats)
            except (ValueError, NotImplementedError) as e:
                row["error"] = str(e)
                rows.append(row)
                print(f"{task:<10} {n:>7}  refused: {e}")
                continue
            med = {k: float(np.median(row[k]["physics_steps_per_s"])) for k in ("mjwarp_loop", "fastvec_graph",
                                                                                "fastvec_step")}
            row["ratio"] = med["fastvec_graph"] / med["mjwarp_loop"]
            row["claim_met"] = row["ratio"] >= CLAIM
            mjx = "-"
            if not args.no_mjx:
                try:
                    row["mjx_loop"] = mjx_loop(task, n, args.seconds, args.repeats)
                    med["mjx_loop"] = float(np.median(row["mjx_loop"]["physics_steps_per_s"]))
                    row["ratio_mjx"] = med["fastvec_graph"] / med["mjx_loop"]
                    mjx = f"{med['mjx_loop']:.4g}"
                except Exception as e:  # noqa: BLE001  (out of memory, a missing feature: the row says which)
                    row["mjx_loop"] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                    mjx = "failed"
            rows.append(row)
            print(f"{task:<10} {n:>7} {med['mjwarp_loop']:>14.4g} {med['fastvec_graph']:>14.4g} "
                  f"{med['fastvec_step']:>15.4g} {row['ratio']:>6.2f}  MJX {mjx}")
    out = {"what": "physics steps/s (env steps x frame_skip x worlds), median of repeats", "claim": CLAIM,
           "date": str(date.today()), "gpu": wp.get_device("cuda:0").name, "host": platform.node(),
           "versions": {"warp": wp.config.version, "mujoco_warp": getattr(mujoco_warp, "__version__", "?"),
                        **({} if args.no_mjx else mjx_versions())},
           "seconds": args.seconds, "repeats": args.repeats, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
