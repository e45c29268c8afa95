"""The SMAX scenarios' registry (fastvec/native/smax.h, jaxmarl's SMAX): each scenario's MAP number in smax.h,
its team sizes and its agents' names (jaxmarl's), and who plays the enemies (smax.h's ENEMY)."""

from __future__ import annotations

import dataclasses

# Who plays the enemies (smax.h's ENEMY): the agents (jaxmarl's SMAX) or jaxmarl's heuristic (HeuristicEnemySMAX).
ENEMIES = {"agents": 0, "heuristic": 1}
# How the heuristic picks a new target in attack range (smax.h's ATTACK_MODE; HeuristicEnemySMAX's attack_mode).
ATTACK_MODES = {"closest": 0, "random": 1}
PREFIX = "smax:"  # a SMAX scenario as a team env's name (fastvec-train smax:3m), as gym:ID names a Gymnasium id
TIME_LIMIT = 101  # jaxmarl's max_steps=100, checked before its step count increments: a truncation at 101 steps


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One scenario: smax.h's MAP for it, its team sizes, and whether each reset draws its units' types and start
    positions (jaxmarl's smacv2-style scenarios; fastvec/native/smax_units.h) or it has fixed ones."""

    map: int
    allies: int
    enemies: int
    random_units: bool = False

    @property
    def agents(self) -> list[str]:
        """Every unit's name: jaxmarl's SMAX agents."""
        return [f"ally_{i}" for i in range(self.allies)] + [f"enemy_{i}" for i in range(self.enemies)]

    def agent_names(self, enemy: str) -> list[str]:
        """The agents' names when `enemy` plays the enemies: every unit, or the allies alone (HeuristicEnemySMAX)."""
        return self.agents if ENEMIES[check_enemy(enemy)] == 0 else self.agents[: self.allies]


SCENARIOS: dict[str, Scenario] = {
    "3m": Scenario(0, 3, 3),
    "2s3z": Scenario(1, 5, 5),
    "3s5z": Scenario(2, 8, 8),
    "5m_vs_6m": Scenario(3, 5, 6),
    "3s5z_vs_3s6z": Scenario(4, 8, 9),
    "3s_vs_5z": Scenario(5, 3, 5),
    "6h_vs_8z": Scenario(6, 6, 8),
    "8m": Scenario(7, 8, 8),
    "25m": Scenario(8, 25, 25),
    "10m_vs_11m": Scenario(9, 10, 11),
    "27m_vs_30m": Scenario(10, 27, 30),
    "smacv2_5_units": Scenario(11, 5, 5, random_units=True),
    "smacv2_10_units": Scenario(12, 10, 10, random_units=True),
    "smacv2_20_units": Scenario(13, 20, 20, random_units=True),
}


def check_enemy(enemy: str) -> str:
    if enemy not in ENEMIES:
        raise ValueError(f"enemy={enemy!r} is not one of {sorted(ENEMIES)}: 'heuristic' (jaxmarl's scripted enemies) "
                         "or 'agents' (every unit an agent)")
    return enemy


def check_attack_mode(attack_mode: str, enemy: str) -> str:
    if attack_mode not in ATTACK_MODES:
        raise ValueError(f"attack_mode={attack_mode!r} is not one of {sorted(ATTACK_MODES)}: how jaxmarl's heuristic "
                         "enemy picks a new target in range, 'closest' (its default) or 'random'")
    if attack_mode != "closest" and enemy != "heuristic":
        raise ValueError(f"attack_mode={attack_mode!r} is the heuristic enemy's: it needs enemy='heuristic', not "
                         f"{enemy!r}")
    return attack_mode


def scenario_defines(name: str, enemy: str = "agents", attack_mode: str = "closest") -> dict[str, int]:
    """smax.h's -D defines for scenario `name` with `enemy` playing the enemies (the heuristic picking targets by
    `attack_mode`); a KeyError names the scenarios, a ValueError the enemies or attack modes."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown SMAX scenario {name!r}; fastvec's are {sorted(SCENARIOS)}")
    mode = ATTACK_MODES[check_attack_mode(attack_mode, check_enemy(enemy))]
    return {"MAP": SCENARIOS[name].map, "ENEMY": ENEMIES[enemy], "ATTACK_MODE": mode}


def scenario_key(name: str) -> str:
    """The key of a scenario name: "3m", "smax_3m" and "fastvec/smax_3m-v0" all give "3m"; a KeyError names the
    choices."""
    key = str(name).split("/")[-1].split("-v")[0].lower()
    key = key[len("smax_"):] if key.startswith("smax_") else key
    if key not in SCENARIOS:
        raise KeyError(f"unknown SMAX scenario {name!r}; fastvec's are {sorted(SCENARIOS)}")
    return key


def step_limit(max_steps) -> int:
    """The truncation's step count for jaxmarl's max_steps (an int >= 0): jaxmarl checks it before its step count
    increments, so an episode is cut after max_steps + 1 steps (TIME_LIMIT for its default 100)."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 0 <= max_steps < 2**31 - 1:
        raise ValueError(f"max_steps={max_steps!r} must be an int in [0, 2**31 - 2] (jaxmarl's: the default is 100)")
    return max_steps + 1

