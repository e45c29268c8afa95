"""Teams of agents as fastvec-train envs: the MPE scenarios (fastvec-train simple_spread; mpe2's keywords as [env]
keys, e.g. --env.N=5) and the SMAX battles (fastvec-train smax:3m; --env.enemy=heuristic or agents): their names,
parameters, step limits and builds (env file and defines), and each agent's team (the episode returns are logged per
team)."""

from __future__ import annotations

from pathlib import Path

from fastvec.native import NATIVE_DIR, mpe, smax
from fastvec.trainer.env_defaults import Declared

SMAX_PREFIX = "smax:"  # ENV as a SMAX scenario: fastvec-train smax:3m, as gym:ID names a Gymnasium id
# mpe2's cooperative scenarios: one team, every agent rewarded alike or for a shared goal.
COOPERATIVE = ("simple_spread", "simple_reference", "simple_speaker_listener")


def team_env_name(env: str) -> str | None:
    """The name a run of team env `env` records, or None (not a team env): an MPE scenario by mpe2's name,
    any case ("simple_spread", also "simple_spread_v3" and its PettingZoo id "fastvec/simple_spread-v3") ->
    "simple_spread"; "smax:NAME" -> itself (an unknown NAME is reported by check_params), and its PettingZoo id
    "fastvec/smax_3m-v0" -> "smax:3m"."""
    if not isinstance(env, str):
        return None
    if env.lower().startswith(SMAX_PREFIX):
        return SMAX_PREFIX + env[len(SMAX_PREFIX):]
    if env.split("/")[-1].lower().startswith("smax_"):  # its PettingZoo id, fastvec/smax_3m-v0
        try:
            return SMAX_PREFIX + smax.scenario_key(env)
        except KeyError:
            return None
    try:
        return mpe.scenario_key(env)
    except KeyError:
        return None


def names() -> list[str]:
    """Every team env's name, as fastvec-train takes it."""
    return [*mpe.SCENARIOS, *(SMAX_PREFIX + name for name in smax.SCENARIOS)]


def is_smax(name: str) -> bool:
    return name.startswith(SMAX_PREFIX)


def build(name: str, params: dict) -> tuple[Path, dict, list[str]]:
    """(the env file, its -D defines, the agents' names) of team env `name` with [env] parameters `params`; a
    ValueError or TypeError names a parameter it does not take or a value out of range."""
    params = dict(params)
    if "max_cycles" in params:
        raise ValueError(f"env.max_cycles={params['max_cycles']!r}: fastvec-train takes mpe2's max_cycles as "
                         f"--env.max_episode_steps={params['max_cycles']}")
    if is_smax(name):
        scenario = name[len(SMAX_PREFIX):]
        if scenario not in smax.SCENARIOS:
            raise ValueError(f"unknown SMAX scenario {scenario!r}; fastvec's are "
                             f"{', '.join(SMAX_PREFIX + s for s in smax.SCENARIOS)}")
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


def check_params(name: str, params: dict) -> None:
    """A ValueError or TypeError naming what team env `name` does not take of [env] parameters `params`."""
    build(name, params)


def step_limit(name: str) -> int:
    """The registered step limit: mpe2's max_cycles (25) or SMAX's 101 steps (jaxmarl's max_steps of 100)."""
    return smax.TIME_LIMIT if is_smax(name) else mpe.MAX_CYCLES


def agent_teams(name: str, params: dict) -> list[str]:
    """Each agent's team, in agent order: "allies" and "enemies" (SMAX); one team for mpe2's cooperative scenarios;
    else "adversaries" (the adversaries and simple_crypto's eavesdropper eve) and "agents"."""
    _, _, agents = build(name, params)
    if is_smax(name):
        return ["allies" if agent.startswith("ally") else "enemies" for agent in agents]
    if name in COOPERATIVE:
        return ["agents"] * len(agents)
    return ["adversaries" if "adversary" in agent or agent.startswith("eve") else "agents" for agent in agents]


def declared(name: str) -> Declared:
    """A team env's declarations: Discrete actions (mpe2's default; continuous_actions=true gives a Box) and float
    observations, trained with its family's settings (fastvec/configs/mpe.toml or smax.toml)."""
    family = "smax" if is_smax(name) else "mpe"
    source = "smax.h" if family == "smax" else mpe.SCENARIOS[name].source
    where = {"actions": f"NUM_ACTIONS in {source}", "observations": f"no OBS_T in {source}"}
    return Declared(name, "discrete", "floats", where=where, family=family)
