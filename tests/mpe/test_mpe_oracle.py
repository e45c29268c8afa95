"""fastvec's MPE scenarios against mpe2's (the oracle), bit for bit over whole episodes from mpe2's own reset
states, discrete and continuous actions (tests/mpe/mpe_oracle.py's harness): 10,000 transitions per scenario
through mpe2's raw env, and a few episodes through its parallel_env."""

import pytest
from mpe_oracle import Scenario, play

SCENARIOS = {
    "simple_spread": Scenario("simple_spread_v3", "mpe_spread.h"),
}
EPISODES = 200  # per action kind: 2 x 200 x 25 = 10,000 transitions per scenario


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2(name, continuous):
    assert play(SCENARIOS[name], continuous, EPISODES) == EPISODES * 25


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2_parallel_env(name, continuous):
    assert play(SCENARIOS[name], continuous, 8, seed=1000, public=True) == 8 * 25
