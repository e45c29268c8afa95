"""The step-kernel lab (README.md): each kernel of step_kernels.h and of fastvec (batch_gpu.h) checked
against the CPU batch, then timed on the same batch through step() and as a CUDA graph of steps.

    python benchmarks/lab/step_kernels.py [--num-envs 65536 1048576] [--seconds 0.5] [--out lab.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from fastvec import native
from fastvec.native import NATIVE_DIR, check_define_names, cpu, cuda, cuda_build, gpu

LAB_DIR = Path(__file__).resolve().parent
# lab kernel name -> (function in step_kernels.h, envs per thread: None reads fv_plain_envs)
LAB_KERNELS = {"plain1": ("fv_step_any1_kernel", 1), "plain": ("fv_step_any_kernel", None)}
GAMES = [("CartPole", "cartpole", {}), ("CartPole float32", "cartpole", {"float32": 1}), ("Breakout", "breakout", {})]


class Lab:
    """One env's product build (cuda.load) and its lab kernels (a second module of the same env with
    step_kernels.h); both step the same CudaBatch buffers."""

    def __init__(self, env: str, params: dict):
        self.path, self.defines = native.source_path(env), native.resolve_defines(env, params)
        self.env = cuda.load(self.path, tuple(sorted(self.defines.items())))
        module = gpu.load_module(cuda.env_source(self.path) + '#include "step_kernels.h"\n',
                                 include_dirs=[NATIVE_DIR, self.path.parent, LAB_DIR],
                                 defines=check_define_names(self.defines), name=f"lab-{env}", env_path=self.path)
        self.module = module  # keeps the lab kernels loaded
        plain_envs = int(cuda_build._read_global(module, "fv_plain_envs", np.int32)[0])
        self.kernels = {name: (module.get_function(fn).prepare(cuda_build.STEP_KERNEL_ARGS), per or plain_envs)
                        for name, (fn, per) in LAB_KERNELS.items()}

    def names(self) -> list[str]:
        return list(cuda.STEP_KERNEL_NAMES) + list(self.kernels)

    def use(self, batch, name: str) -> None:
        """Step `batch` with kernel `name`: fastvec's through use_step_kernel, a lab one with its grid."""
        if name in cuda.STEP_KERNEL_NAMES:
            batch.use_step_kernel(name)
            return
        batch.use_step_kernel()  # drops the graphs captured with the previous kernel
        fn, per_thread = self.kernels[name]
        per_block = cuda.THREADS_PER_BLOCK * per_thread
        batch.step_kernel_name, batch._step_fn = name, fn
        batch._step_grid = ((batch.num_envs + per_block - 1) // per_block, 1)
        batch._step_block = (cuda.THREADS_PER_BLOCK, 1, 1)


def validate(lab: Lab, name: str, exact: bool, n: int = 1000, steps: int = 200) -> None:
    """Kernel `name` against the CPU batch: every output after every step, through episode ends and
    autoresets (NEXT_STEP), and the states at the end. exact: bitwise (no libm calls in the env)."""
    code, limit = native.AUTORESET_CODES["NextStep"], 50
    ref = cpu.CpuBatch(cpu.load(lab.path, tuple(sorted(lab.defines.items()))), n, code, limit)
    batch = cuda.CudaBatch(lab.env, n, code, limit, numpy=True)
    lab.use(batch, name)
    rng = np.random.default_rng(7)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    ref.reset(seeds, None)
    batch.reset(seeds, None)
    check = np.testing.assert_array_equal if exact else \
        (lambda x, y, err_msg: np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6, err_msg=err_msg))
    for t in range(steps):
        actions = rng.integers(0, ref.env.num_actions, (n, ref.env.num_agents))
        ref.step(actions)
        batch.step(actions)
        for field in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length"):
            check(getattr(batch, field), getattr(ref, field), err_msg=f"{name}: {field} at step {t}")
    batch.close()


def step_rate(envs_batch, seconds: float, pool: int = 8) -> float:
    """Env steps per second of step() with device actions drawn beforehand."""
    b = envs_batch
    actions = []
    for t in range(pool):
        b.random_actions(t)
        actions.append(b.dev.actions.copy())
    for a in actions[:4]:
        b.step(a)
    b.synchronize()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for a in actions:
            b.step(a)
        steps += pool
    b.synchronize()
    return steps * b.num_envs / (time.perf_counter() - start)


def graph_rate(b, seconds: float, steps: int = 100) -> float:
    """Env steps per second of `steps` step kernels replayed as one CUDA graph (the kernel's own rate)."""
    hold = lambda t, batch: None  # keeps dev.actions as they are
    b.rollout(hold, steps)
    b.synchronize()
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 2:
        b.rollout(hold, steps)
        calls += 1
    b.synchronize()
    return calls * steps * b.num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-envs", type=int, nargs="+", default=[65536, 1 << 20])
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    parser.add_argument("--validate-only", action="store_true")
    parser.add_argument("--out", help="write the rates as JSON here")
    args = parser.parse_args()
    rows = []
    for game, env, params in GAMES:
        lab = Lab(env, params)
        for name in lab.names():
            validate(lab, name, exact=game != "CartPole")
        print(f"{game}: {', '.join(lab.names())} equal the CPU batch", flush=True)
        if args.validate_only:
            continue
        for n in args.num_envs:
            batch = cuda.CudaBatch(lab.env, n, native.AUTORESET_CODES["NextStep"], 500, numpy=False)
            batch.reset(np.arange(n, dtype=np.uint64), None)
            auto = batch.step_kernel_name
            for name in lab.names():
                lab.use(batch, name)
                row = {"game": game, "num_envs": n, "kernel": name, "auto": name == auto,
                       "step": step_rate(batch, args.seconds), "graph": graph_rate(batch, args.seconds)}
                rows.append(row)
                print(f"{game:>17} {n:>9} {name:>12}{'*' if row['auto'] else ' '} step() {row['step'] / 1e9:6.2f} G/s"
                      f"  graph {row['graph'] / 1e9:6.2f} G/s", flush=True)
            batch.close()
    print("(* the kernel fastvec picks)")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": gpu.driver().Device(0).name(), "rows": rows}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
