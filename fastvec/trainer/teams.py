"""Teams of agents as fastvec-train envs: the MPE scenarios (fastvec-train simple_spread; mpe2's keywords as [env]
keys, e.g. --env.N=5) and the SMAX battles (fastvec-train smax:3m; --env.enemy=heuristic or agents): their names,
parameters and step limits, and each agent's team (the episode returns are logged per team); their builds (env file
and defines) are native.batches.team_source's."""

from __future__ import annotations

from fastvec.native import mpe, smax
from fastvec.native.batches import team_source
from fastvec.native.smax import PREFIX as SMAX_PREFIX
from fastvec.trainer.env_defaults import Declared

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


def check_params(name: str, params: dict) -> None:
    """A ValueError or TypeError naming what team env `name` does not take of [env] parameters `params`."""
    team_source(name, params)


def step_limit(name: str) -> int:
    """The registered step limit: mpe2's max_cycles (25) or SMAX's 101 steps (jaxmarl's max_steps of 100)."""
    return smax.TIME_LIMIT if is_smax(name) else mpe.MAX_CYCLES


def agent_teams(name: str, params: dict) -> list[str]:
    """Each agent's team, in agent order: "allies" and "enemies" (SMAX); one team for mpe2's cooperative scenarios;
    else "adversaries" (the adversaries and simple_crypto's eavesdropper eve) and "agents"."""
    _, _, agents = team_source(name, params)
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
