"""The MPE scenarios' registry (fastvec/native/mpe_*.h, PettingZoo's MPE as the `mpe2` package has them): each
scenario's env file, mpe2's version and keywords (their ranges; each becomes a -D parameter of the file) and its
agents' names, and the defines for a set of keywords."""

from __future__ import annotations

import dataclasses
from typing import Callable

from fastvec.native import Param, is_int

MAX_CYCLES = 25  # mpe2's default step limit, every scenario's


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One scenario: its env file, mpe2's id version, its integer keywords and its agents' names given them."""

    source: str
    version: int
    params: dict[str, Param]
    names: Callable[[dict], list[str]]
    local_ratio: bool = False  # takes mpe2's float local_ratio (the file's LOCAL_RATIO_MILLI)


def _numbered(prefix: str, count: int) -> list[str]:
    return [f"{prefix}_{i}" for i in range(count)]


SCENARIOS: dict[str, Scenario] = {
    "simple_spread": Scenario("mpe_spread.h", 3, {"N": Param(3, 1, 16, "agents and landmarks")},
                              lambda p: _numbered("agent", p["N"]), local_ratio=True),
    "simple_tag": Scenario("mpe_tag.h", 3, {"num_good": Param(1, 1, 16, "prey"),
                                            "num_adversaries": Param(3, 1, 16, "predators"),
                                            "num_obstacles": Param(2, 0, 16, "obstacles")},
                           lambda p: _numbered("adversary", p["num_adversaries"]) + _numbered("agent", p["num_good"])),
    "simple_adversary": Scenario("mpe_adversary.h", 3, {"N": Param(2, 1, 16, "good agents and landmarks")},
                                 lambda p: ["adversary_0"] + _numbered("agent", p["N"])),
    "simple_push": Scenario("mpe_push.h", 3, {}, lambda p: ["adversary_0", "agent_0"]),
    "simple_speaker_listener": Scenario("mpe_speaker_listener.h", 4, {}, lambda p: ["speaker_0", "listener_0"]),
    "simple_reference": Scenario("mpe_reference.h", 3, {}, lambda p: ["agent_0", "agent_1"], local_ratio=True),
    "simple_crypto": Scenario("mpe_crypto.h", 3, {}, lambda p: ["eve_0", "bob_0", "alice_0"]),
    "simple_world_comm": Scenario(
        "mpe_world_comm.h", 3,
        {"num_good": Param(2, 1, 16, "prey"), "num_adversaries": Param(4, 1, 16, "predators, the leader first"),
         "num_obstacles": Param(1, 0, 16, "obstacles"), "num_food": Param(2, 1, 16, "food"),
         "num_forests": Param(2, 0, 16, "forests")},
        lambda p: (["leadadversary_0"] + _numbered("adversary", p["num_adversaries"] - 1)
                   + _numbered("agent", p["num_good"]))),
}


def scenario_key(name: str) -> str:
    """The key of a scenario name: "simple_spread", "simple_spread_v3" and "fastvec/simple_spread-v3" all give
    "simple_spread"; a KeyError names the choices."""
    key = str(name).split("/")[-1].lower().split("-v")[0]
    base, _, version = key.rpartition("_v")
    key = base if version.isdigit() else key
    if key not in SCENARIOS:
        raise KeyError(f"unknown MPE scenario {name!r}; fastvec's are {sorted(SCENARIOS)}")
    return key


def scenario_defines(key: str, continuous_actions: bool, params: dict) -> tuple[dict[str, int], dict[str, int]]:
    """(the -D defines, the integer keywords with defaults filled in) of scenario `key` for mpe2's keywords; a
    TypeError names an unknown keyword, a ValueError a value out of range or a local_ratio not in thousandths."""
    sc = SCENARIOS[key]
    params = dict(params)
    defines = {"CONTINUOUS_ACTIONS": int(bool(continuous_actions))}
    if sc.local_ratio:
        ratio = params.pop("local_ratio", 0.5)
        milli = round(float(ratio) * 1000) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else None
        if milli is None or not 0 <= milli <= 1000 or milli / 1000 != ratio:
            raise ValueError(f"local_ratio={ratio!r} for {key}: a proportion in [0, 1] in thousandths "
                             "(0.5, 0.125, ...)")
        defines["LOCAL_RATIO_MILLI"] = milli
    unknown = sorted(set(params) - set(sc.params))
    if unknown:
        allowed = ", ".join(sorted(sc.params) + (["local_ratio"] if sc.local_ratio else [])) or "none"
        raise TypeError(f"unknown keyword(s) {unknown} for {key}; its keywords are: {allowed}")
    values = {}
    for name, spec in sc.params.items():
        value = params.get(name, spec.default)
        if not is_int(value) or not spec.low <= value <= spec.high:
            raise ValueError(f"{name}={value!r} for {key} must be an int in [{spec.low}, {spec.high}]")
        values[name] = defines[name.upper()] = int(value)
    return defines, values
