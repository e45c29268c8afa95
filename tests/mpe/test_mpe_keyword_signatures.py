"""The MPE registry against mpe2's own env signatures (the oracle): each scenario's version, the scenario
keywords fastvec takes (those that shape the world; mpe2's generic ones aside) and their defaults, and the
agents' names for the defaults."""

import importlib
import inspect

import pytest

from fastvec.native.mpe import MAX_CYCLES, SCENARIOS, scenario_defines

mpe2 = pytest.importorskip("mpe2")

# mpe2's keywords that every scenario takes and fastvec handles outside the registry (the step limit, the
# action kind, rendering) or leaves at mpe2's default (curricula, benchmark data, neighbour limits).
GENERIC = {"self", "max_cycles", "continuous_actions", "render_mode", "dynamic_rescaling", "benchmark_data",
           "curriculum", "terminate_on_success", "num_agent_neighbors", "num_landmark_neighbors"}


def mpe2_env(name):
    return importlib.import_module(f"mpe2.{name}_v{SCENARIOS[name].version}")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_keywords_and_defaults_are_mpe2s(name):
    params = inspect.signature(mpe2_env(name).raw_env.__init__).parameters
    assert params["max_cycles"].default == MAX_CYCLES
    theirs = {k: p.default for k, p in params.items() if k not in GENERIC}
    sc = SCENARIOS[name]
    ours = {k: p.default for k, p in sc.params.items()}
    if sc.local_ratio:
        ours["local_ratio"] = 0.5
    assert ours == theirs
    for key, param in sc.params.items():
        assert param.low <= param.default <= param.high


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_an_unknown_keywords_error_lists_the_scenarios_keywords_as_mpe2s(name):
    """A keyword a scenario does not take is a TypeError naming it and listing the keywords it does take:
    mpe2's own for that scenario (its generic ones aside), local_ratio where mpe2's takes it, "none" where none."""
    params = inspect.signature(mpe2_env(name).raw_env.__init__).parameters
    theirs = ", ".join(sorted(k for k in params if k not in GENERIC)) or "none"
    with pytest.raises(TypeError, match=rf"unknown keyword\(s\) \['num_walls'\] for {name}; its keywords are: "
                                        rf"{theirs}$"):
        scenario_defines(name, False, {"num_walls": 2})


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_agent_names_for_the_defaults_are_mpe2s(name):
    env = mpe2_env(name).parallel_env()
    sc = SCENARIOS[name]
    _, values = scenario_defines(name, False, {})
    assert sc.names(values) == env.possible_agents


def test_the_frame_rate_is_mpe2s():
    from fastvec.wrappers.mpe import parallel_env

    ours = parallel_env("simple_spread")
    assert ours.metadata["render_fps"] == mpe2_env("simple_spread").parallel_env().metadata["render_fps"]


# Each integer keyword's (low, high): what a run config or a sweep range may ask of fastvec's MPE files (the
# C files size their arrays from these defines; mpe2 itself takes any count). Counts start at 1 for
# the agents and food, at 0 for obstacles and forests.
RANGES = {
    "simple_spread": {"N": (1, 16)},
    "simple_tag": {"num_good": (1, 16), "num_adversaries": (1, 16), "num_obstacles": (0, 16)},
    "simple_adversary": {"N": (1, 16)},
    "simple_push": {}, "simple_speaker_listener": {}, "simple_reference": {}, "simple_crypto": {},
    "simple_world_comm": {"num_good": (1, 16), "num_adversaries": (1, 16), "num_obstacles": (0, 16),
                          "num_food": (1, 16), "num_forests": (0, 16)},
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_keywords_are_taken_across_their_ranges_and_refused_past_them(name):
    assert {k: (p.low, p.high) for k, p in SCENARIOS[name].params.items()} == RANGES[name]
    for key, (low, high) in RANGES[name].items():
        for value in (low, high):
            defines, values = scenario_defines(name, False, {key: value})
            assert defines[key.upper()] == values[key] == value
        for value in (low - 1, high + 1):
            with pytest.raises(ValueError, match=rf"{key}={value} for {name} must be an int in \[{low}, {high}\]"):
                scenario_defines(name, False, {key: value})


@pytest.mark.parametrize("name", [n for n in SCENARIOS if RANGES[n]])
def test_scenario_keywords_at_their_ends_name_the_agents_as_mpe2(name):
    """The agents' names at each keyword's smallest and largest value, from mpe2's own env built with it."""
    for key, (low, high) in RANGES[name].items():
        for value in (low, high):
            _, values = scenario_defines(name, False, {key: value})
            ref = mpe2_env(name).parallel_env(**{key: value})
            assert SCENARIOS[name].names(values) == ref.possible_agents, (key, value)
