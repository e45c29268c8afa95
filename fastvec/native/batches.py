"""The one loader of env sources: a registered env's name or a user's env file, its parameters and a device in,
the env's build (`load_env`) or a backend batch of it (`load_batch`, a backend.Backend) out. The Gymnasium and
PettingZoo faces and the trainers' env batches all load through it."""

from __future__ import annotations

import os
import numpy as np

from fastvec.native import AUTORESET_CODES, ENVS, cpu, resolve_defines, source_path


def registered(env: str | os.PathLike) -> str | None:
    """The registry key of `env` if it names a built-in env (case-insensitive), else None (an env file)."""
    return env.lower() if isinstance(env, str) and env.lower() in ENVS else None


def load_env(env: str | os.PathLike, params: dict | None = None, device: str = "cpu"):
    """Compile (cached) and load `env` for `device`: a built-in env by name, its parameters checked against the
    registry, or a user's env file (a path), its parameters passed as -D defines with upper-cased names.
    device: "cpu", or "cuda" / "cuda:N" (PyCUDA, see cuda.py). Returns the build (a backend.EnvBuild)."""
    params = dict(params or {})
    key = registered(env)
    if key is not None:
        for name, value in params.items():  # True is an int to Python: here only a 0/1 switch takes it
            spec = ENVS[key].params.get(name)
            if isinstance(value, (bool, np.bool_)) and spec is not None and (spec.low, spec.high) != (0, 1):
                raise TypeError(f"{name}={value!r} for {key!r} is not an int: pass an int in [{spec.low}, {spec.high}]")
        defines = resolve_defines(key, params)
    else:
        defines = {name.upper(): value for name, value in params.items()}
    path, defines = source_path(key or env), tuple(sorted(defines.items()))
    if device == "cpu":
        return cpu.load(path, defines)
    from fastvec.native import cuda

    return cuda.load(path, defines, cuda.parse_device(device))


def load_batch(env: str | os.PathLike, num_envs: int, params: dict | None = None, *, device: str = "cpu",
               autoreset: str = "SameStep", max_episode_steps: int | None = None, threads: int = 0,
               host_arrays: bool = True, validate: bool = False):
    """A batch of `num_envs` copies of `env` (see load_env) on `device`, in `autoreset` mode ("NextStep",
    "SameStep" or "Disabled", Gymnasium's AutoresetMode values), truncating episodes after max_episode_steps
    (None or 0: never). On the CPU, threads > 0 sets the threads stepping the env's build. On a GPU,
    host_arrays=False hands out DeviceArrays (no wait per step), validate=True synchronises every step to raise
    a bad action at once. Returns a backend.Backend (cpu.CpuBatch or cuda.CudaBatch)."""
    device = str(device)
    build = load_env(env, params, device)
    code = AUTORESET_CODES[autoreset]
    if device == "cpu":
        if threads > 0:
            build.lib.fv_set_num_threads(threads)
        return cpu.CpuBatch(build, num_envs, code, max_episode_steps or None)
    from fastvec.native import cuda

    return cuda.CudaBatch(build, num_envs, code, max_episode_steps or None, numpy=host_arrays, validate=validate)

