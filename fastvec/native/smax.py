"""The SMAX scenarios' registry (fastvec/native/smax.h, jaxmarl's SMAX): each scenario's MAP number in smax.h,
its team sizes and its agents' names (jaxmarl's)."""

from __future__ import annotations

import dataclasses

TIME_LIMIT = 101  # jaxmarl's max_steps=100, checked before its step count increments: a truncation at 101 steps


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One scenario: smax.h's MAP for it and its team sizes."""

    map: int
    allies: int
    enemies: int

    @property
    def agents(self) -> list[str]:
        return [f"ally_{i}" for i in range(self.allies)] + [f"enemy_{i}" for i in range(self.enemies)]


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
}


def scenario_defines(name: str) -> dict[str, int]:
    """smax.h's -D defines for scenario `name`; a KeyError names the choices."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown SMAX scenario {name!r}; fastvec's are {sorted(SCENARIOS)}")
    return {"MAP": SCENARIOS[name].map}
