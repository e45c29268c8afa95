"""fastvec's SMAX (fastvec/native/smax.h) against jaxmarl's (the oracle, tests/smax/smax_oracle.py's transition
harness): over 10,000 transitions per scenario, both teams' actions, jaxmarl's random draws fed; then with jaxmarl's
heuristic enemies (HeuristicEnemySMAX), the allies' actions given; skipped where jaxmarl (0.2.0, with flax, chex and
jaxtyping) cannot be imported."""

import pytest
from smax_oracle import play

from fastvec.native.smax import SCENARIOS

EPISODES = 128  # >= 10,000 transitions: episodes run to a team's elimination or the 101-step limit


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_matches_jaxmarl(name):
    counts = play(name, EPISODES)
    assert counts["transitions"] >= 10_000, counts
    # the episodes exercise what is compared: hits, deaths, won battles (random 25-on-25 battles all reach the
    # time limit) and the time limit
    assert min(counts["hits"], counts["deaths"], counts["time_limits"]) > 0, counts
    assert counts["wins"] > 0 or name == "25m", counts
    # the tolerance covers XLA's batch-dependent fusing only, which touches a few transitions (1.4% in the
    # crowd of 27m_vs_30m): a formula off by an ulp would touch most
    assert counts["bit_exact"] >= 0.97 * counts["transitions"], counts


@pytest.mark.parametrize("name", ["3m", "3s5z_vs_3s6z"])
def test_action_masks_and_world_state_match_jaxmarl(name):
    """batch.action_mask and batch.world_state (play checks them at every step of every scenario) over episodes
    that see deaths, so masks lose moves and targets."""
    counts = play(name, 16, seed=100)
    assert counts["transitions"] >= 1_000 and counts["deaths"] > 0, counts
    assert counts["masks_after_step"] >= 0.97 * counts["transitions"], counts


# Random allies lose to the heuristic enemies within 10-50 steps: 64 episodes are 1,100-3,500 transitions.
HEURISTIC_EPISODES = 64
# The crowds the heuristic enemies gather into push apart more than random battles do: more of XLA's fusing shows
CROWDS = {"25m", "27m_vs_30m"}


@pytest.mark.parametrize("name", SCENARIOS)
def test_heuristic_enemies_match_jaxmarl(name):
    """smax.h's ENEMY=1 (the enemies' actions, their policy states, everything play compares) against jaxmarl's
    HeuristicEnemySMAX, its draws fed; play compares the enemies' default and last targets bit for bit."""
    counts = play(name, HEURISTIC_EPISODES, seed=7, enemy="heuristic")
    assert counts["transitions"] >= 800 and min(counts["hits"], counts["deaths"], counts["wins"]) > 0, counts
    assert counts["bit_exact"] >= (0.65 if name in CROWDS else 0.95) * counts["transitions"], counts


@pytest.mark.parametrize("name", ["5m_vs_6m", "3s5z", "smacv2_10_units"])
def test_heuristic_enemies_attacking_at_random_match_jaxmarl(name):
    """smax.h's ATTACK_MODE=1 against HeuristicEnemySMAX(attack_mode="random"), its draws fed: a new target drawn
    among the allies in range, compared (the enemies' last targets) bit for bit."""
    counts = play(name, HEURISTIC_EPISODES, seed=11, enemy="heuristic", attack_mode="random")
    assert counts["transitions"] >= 800 and min(counts["hits"], counts["deaths"], counts["wins"]) > 0, counts
    assert counts["bit_exact"] >= 0.95 * counts["transitions"], counts
