"""The one loader of env sources: a registered env's name or a user's env file, its parameters and a device in,
the env's build (`load_env`) or a backend batch of it (`load_batch`, a backend.Backend) out; a team env's source
(`team_source`). The Gymnasium and PettingZoo faces and the trainers' env batches all load through it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from fastvec.native import AUTORESET_CODES, ENVS, NATIVE_DIR, cpu, mpe, resolve_defines, smax, source_path


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



def team_source(name: str, params: dict) -> tuple[Path, dict, list[str]]:
    """(the env file, its -D defines, the agents' names) of team env `name`, an MPE scenario by mpe2's name
    ("simple_spread") or a SMAX scenario as "smax:3m", with [env] parameters `params` (mpe2's keywords; SMAX's enemy
    and attack_mode); a ValueError or TypeError names a parameter it does not take or a value out of range."""
    params = dict(params)
    if "max_cycles" in params:
        raise ValueError(f"env.max_cycles={params['max_cycles']!r}: fastvec-train takes mpe2's max_cycles as "
                         f"--env.max_episode_steps={params['max_cycles']}")
    if name.startswith(smax.PREFIX):
        scenario = name[len(smax.PREFIX):]
        if scenario not in smax.SCENARIOS:
            raise ValueError(f"unknown SMAX scenario {scenario!r}; fastvec's are "
                             f"{', '.join(smax.PREFIX + s for s in smax.SCENARIOS)}")
        enemy = params.pop("enemy", "agents")
        attack_mode = params.pop("attack_mode", "closest")
        if params:
            raise TypeError(f"{name} takes the [env] keywords enemy (\"heuristic\" or \"agents\") and attack_mode "
                            f"(\"closest\" or \"random\", the heuristic's), not {sorted(params)}")
        defines = smax.scenario_defines(scenario, enemy, attack_mode)
        return NATIVE_DIR / "smax.h", defines, smax.SCENARIOS[scenario].agent_names(enemy)
    continuous = params.pop("continuous_actions", False)
    if not isinstance(continuous, bool):
        raise TypeError(f"env.continuous_actions={continuous!r} must be true or false")
    defines, values = mpe.scenario_defines(name, continuous, params)
    return NATIVE_DIR / mpe.SCENARIOS[name].source, defines, mpe.SCENARIOS[name].names(values)
