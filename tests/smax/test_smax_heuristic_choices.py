"""SMAX's heuristic enemy (smax.h's smax_heuristic_action and smax_choice, jaxmarl's heuristic_enemy.py) by hand,
without jaxmarl: set positions and draws, one step, and the action each enemy took read back from its state."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, TIME_LIMIT, scenario_defines

DISABLED = 2  # batch.h's FV_DISABLED: the test resets itself
DT = 1 / 16
UP, RIGHT, DOWN, LEFT, STOP = range(5)
MOVES = 5  # an attack action is MOVES + k, k an ally in the enemy's list (the allies in reverse order)
# smax.h's decoded movement vectors (a residue off the axis, as jaxmarl's jitted step has it)
VECTORS = np.array([[0, 1], [1, 0], [0, -1], [-1, 0], [0, 0]], np.float64)


def heuristic_step(units, enemy, attack_mode="closest", name="3m"):
    """3m with the heuristic enemies: `units` {unit: (x, y)} alive at full health with ready weapons (the rest
    dead), `enemy` {enemy index: (target x, target y, last, draw[, attack draw])}; the allies stop for one step.
    Returns each enemy's action (from its previous move and attack in the state) and the units' health after."""
    sc = SCENARIOS[name]
    n = sc.allies + sc.enemies
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, "heuristic", attack_mode).items()))
    batch = cpu.CpuBatch(env, 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    per_enemy = 5 if attack_mode == "random" else 4
    table = state[: 8 * n].reshape(n, 8)
    table[:] = 0.0
    table[:, :2] = 1.0
    for u, (x, y) in units.items():
        table[u, :5] = x, y, 45.0, 0.0, 1.0
    state[8 * n: 16 * n] = 2 * DT  # each world step's cooldown draw at its maximum: one attack a step at most
    offset = 16 * n
    for e, values in enemy.items():
        state[offset + per_enemy * e: offset + per_enemy * e + len(values)] = values
    batch.set_state(None, state[None])
    batch.step(np.full((1, sc.allies, 1), STOP, np.int64))
    after = batch.get_state()[0, : 8 * n].reshape(n, 8)
    actions = {}
    for e in enemy:
        u = sc.allies + e
        if after[u, 7] != 0:
            actions[e] = int(after[u, 7])
        else:
            actions[e] = int(np.abs(VECTORS - after[u, 5:7]).sum(1).argmin())
    return actions, after[:, 2]


# Enemy 0 (unit 3) at (16, 16), a marine: sight 9, range 5. Allies 7 away (seen, out of range) up, right and down:
# its list holds them in reverse order, ally 2 (down) first.
AROUND = {0: (16.0, 23.0), 1: (23.0, 16.0), 2: (16.0, 9.0), 3: (16.0, 16.0)}


@pytest.mark.parametrize("draw, move", [(0.9, DOWN), (0.5, RIGHT), (0.1, UP), (0.0, UP), (0.67, DOWN), (0.34, RIGHT), (0.3, UP)])
def test_the_heuristic_follows_the_seen_ally_its_draw_picks(draw, move):
    """No ally in range: the enemy moves towards one seen ally drawn uniformly, jax.random.choice's way: the first
    of its list whose cumulative probability (1/3, 2/3, 1) reaches 1 - draw."""
    actions, _ = heuristic_step(AROUND, {0: (30.0, 16.0, -1, draw)})
    assert actions[0] == move


@pytest.mark.parametrize("draw, move", [(0.5, DOWN), (0.49, UP), (0.75, DOWN), (0.25, UP)])
def test_the_draw_ignores_unseen_allies_and_reaches_a_cumulative_exactly(draw, move):
    """Ally 1 out of sight (9.5 away): the two seen share the choice, cumulative 1/2 then 1 (the unseen adds
    nothing); a draw of 1/2 reaches the first's 1/2 exactly, so the first of the list (ally 2, down)."""
    units = {**AROUND, 1: (25.5, 16.0)}
    actions, _ = heuristic_step(units, {0: (30.0, 16.0, -1, draw)})
    assert actions[0] == move


@pytest.mark.parametrize("sight_edge, seen", [(8.99, True), (9.0, False), (9.01, False)])
def test_the_heuristic_sees_allies_within_its_sight_only(sight_edge, seen):
    """One ally up at the edge of the marine's sight (9), the default target far to the left: seen (strictly
    within), the enemy heads up to it; at or past the edge, to its target."""
    units = {0: (16.0, 16.0 + sight_edge), 3: (16.0, 16.0)}
    actions, _ = heuristic_step(units, {0: (2.0, 16.0, -1, 0.5)})
    assert actions[0] == (UP if seen else LEFT)


@pytest.mark.parametrize("target, move", [((16.0, 30.0), UP), ((30.0, 16.0), RIGHT), ((16.0, 2.0), DOWN),
                                          ((2.0, 16.0), LEFT), ((21.0, 21.0), UP), ((11.0, 11.0), DOWN),
                                          ((21.0, 11.0), RIGHT), ((11.0, 21.0), UP), ((17.0, 30.0), UP)])
def test_with_no_ally_seen_the_heuristic_heads_for_its_target_by_the_largest_dot_product(target, move):
    """No ally seen: the move (up, right, down, left) whose direction has the largest dot product with the way to
    its default target; on a tie the first of them in that order."""
    actions, _ = heuristic_step({0: (1.0, 1.0), 3: (16.0, 16.0)}, {0: (*target, -1, 0.5)})
    assert actions[0] == move


@pytest.mark.parametrize("near", [0, 1, 2])
def test_the_heuristic_attacks_the_closest_ally_in_range(near):
    """Every ally in range (3.5 to 4.5 away), ally `near` the closest: the enemy attacks it (action 5 + its place in
    the reversed list), it alone loses the marine's 9 health, and the enemy remembers it as its last target."""
    units = {0: (16.0, 20.5), 1: (20.5, 16.0), 2: (16.0, 11.5), 3: (16.0, 16.0)}
    units[near] = ((16.0, 19.5), (19.5, 16.0), (16.0, 12.5))[near]
    actions, health = heuristic_step(units, {0: (30.0, 16.0, -1, 0.5)})
    assert actions[0] == MOVES + (2 - near)
    want = np.full(3, 45.0)
    want[near] -= 9.0
    np.testing.assert_allclose(health[:3], want)


def test_the_heuristic_keeps_its_last_target_while_in_range_and_else_takes_the_closest():
    """Its last target (place 2: ally 0) still in range though farther than another: attacked again; out of range
    (5.5 away): the closest in range instead; a last target of -1 (none): the closest."""
    near_and_far = {0: (16.0, 20.5), 1: (19.0, 16.0), 3: (16.0, 16.0)}
    actions, health = heuristic_step(near_and_far, {0: (30.0, 16.0, 2, 0.5)})
    assert actions[0] == MOVES + 2 and health[0] == 36.0 and health[1] == 45.0
    out_of_range = {0: (16.0, 21.5), 1: (19.0, 16.0), 3: (16.0, 16.0)}
    actions, health = heuristic_step(out_of_range, {0: (30.0, 16.0, 2, 0.5)})
    assert actions[0] == MOVES + 1 and health[0] == 45.0 and health[1] == 36.0
    actions, _ = heuristic_step(near_and_far, {0: (30.0, 16.0, -1, 0.5)})
    assert actions[0] == MOVES + 1


@pytest.mark.parametrize("range_edge, attacks", [(4.99, True), (5.0, False), (5.01, False)])
def test_the_heuristic_attacks_within_its_range_only(range_edge, attacks):
    """One ally to the right at the edge of the marine's range (5): strictly within, attacked; else followed."""
    units = {0: (16.0 + range_edge, 16.0), 3: (16.0, 16.0)}
    actions, _ = heuristic_step(units, {0: (2.0, 16.0, -1, 0.5)})
    assert actions[0] == (MOVES + 2 if attacks else RIGHT)


@pytest.mark.parametrize("draw, place", [(0.9, 0), (0.5, 1), (0.1, 2), (0.0, 2)])
def test_attacking_at_random_the_heuristic_draws_among_the_allies_in_range(draw, place):
    """attack_mode "random": with every ally in range and no last target, the one its attack draw picks by the
    same cumulative rule (1/3, 2/3, 1 against 1 - draw); its move draw plays no part."""
    units = {0: (16.0, 20.0), 1: (20.0, 16.0), 2: (16.0, 12.0), 3: (16.0, 16.0)}
    actions, health = heuristic_step(units, {0: (30.0, 16.0, -1, 0.99, draw)}, attack_mode="random")
    assert actions[0] == MOVES + place
    assert health[2 - place] == 36.0 and (health[:3] == 45.0).sum() == 2


def test_attacking_at_random_the_draw_skips_allies_out_of_range():
    """Ally 1 out of range (6 away, still seen): the two in range share the draw, 1/2 each."""
    units = {0: (16.0, 20.0), 1: (22.0, 16.0), 2: (16.0, 12.0), 3: (16.0, 16.0)}
    for draw, place in ((0.75, 0), (0.25, 2)):
        actions, _ = heuristic_step(units, {0: (30.0, 16.0, -1, 0.99, draw)}, attack_mode="random")
        assert actions[0] == MOVES + place


@pytest.mark.parametrize("attack_mode", ["closest", "random"])
@pytest.mark.parametrize("alone", [0, 1, 2])
def test_an_enemy_attacks_the_only_ally_in_range_whichever_place_it_holds(alone, attack_mode):
    """Exactly one ally in range (4 away), the other two seen but out of range (7 away): the enemy attacks it
    whatever its place in the reversed list (ally 2 is the first, place 0), by either attack mode, and it alone
    loses the marine's 9 health; it does not move towards a seen ally instead."""
    units = {0: (16.0, 23.0), 1: (23.0, 16.0), 2: (16.0, 9.0), 3: (16.0, 16.0)}
    units[alone] = ((16.0, 20.0), (20.0, 16.0), (16.0, 12.0))[alone]
    draws = (0.5, 0.5) if attack_mode == "random" else (0.5,)
    actions, health = heuristic_step(units, {0: (30.0, 16.0, -1, *draws)}, attack_mode=attack_mode)
    assert actions[0] == MOVES + (2 - alone)
    want = np.full(3, 45.0)
    want[alone] -= 9.0
    np.testing.assert_allclose(health[:3], want)
