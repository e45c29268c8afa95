"""The trainers' env batch factory: a registered env, compiled for the CPU, as a CpuBatch."""

from __future__ import annotations

from fastvec.native import AUTORESET_CODES, ENVS, cpu, resolve_defines, source_path


def make_batch(name: str, num_envs: int, params: dict | None = None, threads: int = 0,
               max_episode_steps: int | None = None):
    """A CPU batch of `num_envs` copies of registered env `name` with its compile-time `params`, in SAME_STEP
    autoreset (where an episode ended, obs is already the next episode's first) and max_episode_steps (None: the
    env's registered step limit; 0: none); threads > 0 sets the OpenMP threads stepping it. The trainers' env
    batch."""
    defines = resolve_defines(name, params or {})
    compiled = cpu.load(source_path(name), tuple(sorted(defines.items())))
    if threads > 0:
        compiled.lib.fv_set_num_threads(threads)
    limit = ENVS[name].max_episode_steps if max_episode_steps is None else max_episode_steps
    return cpu.CpuBatch(compiled, num_envs, AUTORESET_CODES["SameStep"], limit or None)
