"""Each of SMAX's six unit types (marauders and zerglings too, which only the random-unit scenarios draw) by hand:
its speed, attack, range, sight, size, health and cooldown against jaxmarl's default tables, in smacv2_5_units with
the units' types set through set_state; then the map's walls, which kill a unit that reaches them."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import TIME_LIMIT, scenario_defines

# jaxmarl 0.2.0's smax_env.py defaults per type (marine, marauder, stalker, zealot, zergling, hydralisk)
from test_smax_env import ATTACK, COOLDOWN, HEALTH, RADIUS, RANGE, SIGHT, VELOCITY  # noqa: E402, I001

DISABLED = 2  # batch.h's FV_DISABLED: the test resets itself
DT = 1 / 16
N, ALLIES = 10, 5  # smacv2_5_units
TYPE_OFFSET = (8 + 8) * N  # the units' values and the world steps' cooldown draws come first
OWN = 13 * (N - 1)  # a unit's own features follow its 13 per other unit
# each type against one of another type (so a table read for the wrong unit shows)
PAIRS = [(0, 1), (1, 4), (2, 0), (3, 5), (4, 2), (5, 3)]


def duel(subject_type, other_type, distance, action, health=None, other_health=None, cooldown=0.0, at=(10.0, 16.0),
         enemy_action=4, out=None):
    """Ally 0 (of subject_type) and enemy 0 (unit 5, of other_type) `distance` apart along x, every other unit
    dead; one step of ally 0's `action` (the rest stop), each world step's cooldown draw at its maximum (2 dt).
    Returns (ally 0's observation after set_state, the units after the step, the world state after set_state);
    `at` places ally 0, `out` (a dict) takes the step's rewards."""
    batch = cpu.CpuBatch(cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines("smacv2_5_units").items())), 1,
                         DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    units = state[: 8 * N].reshape(N, 8)
    units[:] = 0.0
    units[:, :2] = 16.0
    state[8 * N: TYPE_OFFSET] = 2 * DT
    types = state[TYPE_OFFSET: TYPE_OFFSET + N]
    types[:] = 0
    types[0], types[ALLIES] = subject_type, other_type
    units[0, :5] = *at, HEALTH[subject_type] if health is None else health, cooldown, 1.0
    units[ALLIES, :5] = at[0] + distance, at[1], HEALTH[other_type] if other_health is None else other_health, 0.0, 1.0
    batch.set_state(None, state[None])
    seen, world = batch.obs.reshape(N, -1)[0].copy(), batch.world_state[0].copy()
    actions = np.full((1, N, 1), 4, np.int64)
    actions[0, 0, 0], actions[0, ALLIES, 0] = action, enemy_action
    batch.step(actions)
    if out is not None:
        out["rewards"], out["terminated"] = batch.rewards[0].copy(), bool(batch.terminated[0])
    return seen, batch.get_state()[0, : 8 * N].reshape(N, 8), world


@pytest.mark.parametrize("t, o", PAIRS)
def test_each_type_attacks_within_its_range_for_its_attack_and_waits_its_cooldown(t, o):
    """In range, one hit of the type's attack (the allies' reward that damage over the other's health, shared by
    the 5 enemies; the enemies' 0), then the cooldown reset to the type's plus the draw; out of range nothing."""
    out = {}
    _, units, _ = duel(t, o, RANGE[t] - 0.01, 5, out=out)  # action 5: attack the first enemy
    np.testing.assert_allclose(out["rewards"][:ALLIES], ATTACK[t] / HEALTH[o] / 5, rtol=1e-5)
    np.testing.assert_array_equal(out["rewards"][ALLIES:], 0.0)
    assert units[ALLIES, 2] == pytest.approx(HEALTH[o] - ATTACK[t], abs=1e-4)
    assert units[0, 3] == pytest.approx(COOLDOWN[t] + 2 * DT - 7 * DT, abs=1e-5)  # reset, then 7 ticks down
    _, units, _ = duel(t, o, RANGE[t] + 0.01, 5)
    assert units[ALLIES, 2] == HEALTH[o] and units[0, 3] == pytest.approx(-8 * DT, abs=1e-6)


@pytest.mark.parametrize("t, o", PAIRS)
def test_each_type_sees_within_its_sight_its_health_and_cooldown_as_fractions_of_its_tables(t, o):
    slot = (ALLIES - 1) * 13  # the first enemy, after the other four allies in ally 0's list
    seen, _, world = duel(t, o, SIGHT[t] - 0.01, 4, health=HEALTH[t] / 4, other_health=HEALTH[o] / 2,
                          cooldown=COOLDOWN[t] / 2)
    assert seen[slot] == pytest.approx(0.5, abs=1e-6)  # the other's health over its type's
    assert seen[slot + 1] == pytest.approx((SIGHT[t] - 0.01) / SIGHT[t], abs=1e-6)
    assert seen[slot + 7: slot + 13].tolist() == [float(k == o) for k in range(6)]
    own = seen[OWN:]
    assert own[0] == pytest.approx(0.25, abs=1e-6) and own[3] == pytest.approx(0.5, abs=1e-6)
    assert own[4:].tolist() == [float(k == t) for k in range(6)]
    assert world[0] == pytest.approx(0.25, abs=1e-6) and world[10 * ALLIES] == pytest.approx(0.5, abs=1e-6)
    assert world[11 * N] == t and world[11 * N + ALLIES] == o
    seen, _, _ = duel(t, o, SIGHT[t] + 0.01, 4)
    assert not seen[slot:slot + 13].any()


@pytest.mark.parametrize("t, o", PAIRS)
def test_each_type_moves_at_its_speed_and_is_pushed_apart_to_its_size(t, o):
    _, units, _ = duel(t, o, 9.0, 1)  # action 1: right, at the type's speed for 8 ticks of dt
    assert units[0, 0] == pytest.approx(10.0 + 8 * DT * VELOCITY[t], abs=1e-4)
    _, units, _ = duel(t, o, 0.2, 4)  # overlapping: pushed apart to touch
    assert units[ALLIES, 0] - units[0, 0] == pytest.approx(RADIUS[t] + RADIUS[o], abs=1e-4)


@pytest.mark.parametrize("at, move", [((0.5, 16.0), 3), ((31.5, 16.0), 1), ((16.0, 0.5), 2), ((16.0, 31.5), 0)])
def test_a_unit_that_walks_into_a_wall_dies_and_its_loss_rewards_the_other_team(at, move):
    """Ally 0 (a marine, 1.575 a step) walking into the wall 0.5 away (left, right, down, up) ends the step at the
    edge, dead with no health; the last ally, so the episode ends and the enemies (agents 5-9) get its whole
    health over the 5 allies plus the win's 1, the allies nothing. The same walk from 2.0 away (0.425 short)
    leaves it alive and the episode on."""
    out = {}
    _, units, _ = duel(0, 0, 0.0, move, at=at, out=out)  # distance 0: the enemy on it, both pushed apart
    assert units[0, 2] == 0.0 and units[0, 4] == 0.0
    assert min(units[0, 0], units[0, 1]) == 0.0 or max(units[0, 0], units[0, 1]) == 32.0
    assert out["terminated"]
    np.testing.assert_allclose(out["rewards"][ALLIES:], 1 + 1 / 5, rtol=1e-6)
    np.testing.assert_array_equal(out["rewards"][:ALLIES], 0.0)
    back = tuple(c if c == 16.0 else (2.0 if c < 16 else 30.0) for c in at)
    _, units, _ = duel(0, 0, 0.0, move, at=back, out=out)
    assert units[0, 2] == HEALTH[0] and units[0, 4] == 1.0 and not out["terminated"]
    np.testing.assert_array_equal(out["rewards"], 0.0)
