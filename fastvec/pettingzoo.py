"""fastvec's PettingZoo face: `parallel_env(name)`, `env(name)` (AEC) and `vector_env(name, num_games)` (a Gymnasium
VectorEnv in SuperSuit's layout) for every fastvec game, a built-in one, an MPE or a SMAX scenario, by name or id, plus
their registration with PettingZoo's registry (done by `import fastvec`). The faces (wrappers/pettingzoo.py, mpe.py,
smax.py) are imported on first use, not by registering."""

from __future__ import annotations

from fastvec.native import ENVS
from fastvec.native.mpe import SCENARIOS, scenario_key as mpe_scenario_key
from fastvec.native.smax import SCENARIOS as SMAX_SCENARIOS

FACE = ("NativeParallelEnv", "MultiAgentVectorEnv", "AGENT_NAMES")
__all__ = [*FACE, "parallel_env", "env", "vector_env", "register_pettingzoo"]


def _face(name: str):
    """(the face module, the name it takes) for a fastvec game: "fastvec/smax_3m-v0" or "smax_3m" is SMAX's 3m,
    "fastvec/simple_spread-v3" or "simple_spread" an MPE scenario, anything else a built-in game ("Pong")."""
    if str(name).split("/")[-1].lower().startswith("smax_"):
        from fastvec.wrappers import smax
        return smax, name
    try:
        mpe_scenario_key(name)
    except KeyError:  # not an MPE scenario: a built-in game (its face names the choices if it is none)
        from fastvec.wrappers import pettingzoo as face
        return face, name
    from fastvec.wrappers import mpe
    return mpe, name


def parallel_env(name: str, **kwargs):
    """One game of `name` (a built-in game, an MPE or a SMAX scenario, by name or PettingZoo id) as a ParallelEnv."""
    module, key = _face(name)
    return module.parallel_env(key, **kwargs)


def env(name: str, **kwargs):
    """One game of `name` (as parallel_env's) as a PettingZoo AEC env."""
    module, key = _face(name)
    return module.env(key, **kwargs)


def vector_env(name: str, num_games: int, device: str = "cpu", **kwargs):
    """`num_games` games of `name` (as parallel_env's) as a Gymnasium VectorEnv in SuperSuit's layout."""
    module, key = _face(name)
    return module.vector_env(key, num_games, device=device, **kwargs)


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
