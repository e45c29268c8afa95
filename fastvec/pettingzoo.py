"""fastvec's PettingZoo face: `parallel_env(name)`, `env(name)` (AEC) and `vector_env(name,
num_games)` (a Gymnasium VectorEnv in SuperSuit's layout for self-play), plus the registration of
every built-in game with PettingZoo's registry as `fastvec/<name>-v0` (done by `import fastvec`).
The face (wrappers/pettingzoo.py) is imported on first use of one of its names, not by registering."""

from __future__ import annotations

from fastvec.native import ENVS
from fastvec.native.mpe import SCENARIOS
from fastvec.native.smax import SCENARIOS as SMAX_SCENARIOS

FACE = ("parallel_env", "env", "vector_env", "NativeParallelEnv", "MultiAgentVectorEnv", "AGENT_NAMES")
__all__ = [*FACE, "register_pettingzoo"]


def register_pettingzoo() -> None:
    """Register each built-in game for `pettingzoo.make("parallel" | "aec", "fastvec/pong-v0")`, each MPE
    scenario as `fastvec/simple_spread-v3` (mpe2's version; fastvec/wrappers/mpe.py) and each SMAX scenario as
    `fastvec/smax_3m-v0` (fastvec/wrappers/smax.py).
    String entry points, so nothing is compiled until an env is made; registering twice is a no-op."""
    import pettingzoo
    from pettingzoo.env_registry.registration import aec_registry, parallel_registry

    games = [(f"fastvec/{key}-v0", "fastvec.pettingzoo", key) for key in ENVS]
    games += [(f"fastvec/{key}-v{sc.version}", "fastvec.wrappers.mpe", key) for key, sc in SCENARIOS.items()]
    games += [(f"fastvec/smax_{key}-v0", "fastvec.wrappers.smax", key) for key in SMAX_SCENARIOS]
    for env_id, module, key in games:
        keyword = "scenario" if module.endswith("smax") else "name"
        for env_type, creator, registry in (("parallel", "parallel_env", parallel_registry), ("aec", "env", aec_registry)):
            if env_id not in registry:
                pettingzoo.register(env_type, env_id, entry_point=f"{module}:{creator}", kwargs={keyword: key})


def __getattr__(name: str):
    """The face's names (FACE), from wrappers/pettingzoo.py on first use."""
    if name in FACE:
        from fastvec.wrappers import pettingzoo as face

        return getattr(face, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
