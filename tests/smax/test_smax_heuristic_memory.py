"""SMAX's heuristic enemy's memory of its last target (jaxmarl's heuristic_enemy.py: last_attacked_enemy is the ally
it attacked while still in range, else -1) over several steps, by hand: set positions step by step, the enemy's
policy state carried from step to step, read back from the state with the action it took."""

import numpy as np
import pytest
from test_smax_heuristic_choices import DISABLED, DT, MOVES, STOP

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, TIME_LIMIT, scenario_defines

ENEMY_UNIT = 3  # 3m: enemy 0 is unit 3
# Allies around enemy 0 at (16, 16), a marine (sight 9, range 5). Its list holds the allies in reverse order
# (place 0 is ally 2); SEEN: all 7 away (seen, out of range).
SEEN = {0: (16.0, 23.0), 1: (23.0, 16.0), 2: (16.0, 9.0)}


class Steps:
    """A 3m env with the heuristic enemies, stepped one step at a time with the allies standing still; before each
    step the units are put where `place` says (alive at full health, weapons ready; the rest dead) and the enemies'
    draws set, while their targets and last targets are the ones the previous step left."""

    def __init__(self, attack_mode):
        sc = SCENARIOS["3m"]
        self.n, self.allies = sc.allies + sc.enemies, sc.allies
        self.per_enemy = 5 if attack_mode == "random" else 4
        env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines("3m", "heuristic", attack_mode).items()))
        self.batch = cpu.CpuBatch(env, 1, DISABLED, TIME_LIMIT)
        self.batch.reset(np.zeros(1, np.uint64), None)
        state = self.batch.get_state()[0]
        state[16 * self.n: 16 * self.n + 2] = 30.0, 16.0  # enemy 0's default target: right, past the allies
        self.batch.set_state(None, state[None])

    def step(self, units, draws=(0.5, 0.5)):
        """Returns enemy 0's action (an attack MOVES + place, or a move), every unit's health and its last target."""
        n = self.n
        state = self.batch.get_state()[0]
        table = state[: 8 * n].reshape(n, 8)
        table[:] = 0.0
        table[:, :2] = 1.0
        for u, (x, y) in {**units, ENEMY_UNIT: (16.0, 16.0)}.items():
            table[u, :5] = x, y, 45.0, 0.0, 1.0
        state[8 * n: 16 * n] = 2 * DT  # each world step's cooldown draw at its maximum: one attack a step at most
        enemy = state[16 * n: 16 * n + self.per_enemy]
        enemy[3:] = draws[: self.per_enemy - 3]
        self.batch.set_state(None, state[None])
        self.batch.step(np.full((1, self.allies, 1), STOP, np.int64))
        after = self.batch.get_state()[0]
        unit = after[: 8 * n].reshape(n, 8)
        attack = int(unit[ENEMY_UNIT, 7])
        return attack, unit[:3, 2], int(after[16 * n + 2])


@pytest.mark.parametrize("attack_mode", ["closest", "random"])
def test_with_no_ally_in_range_the_enemy_remembers_no_target(attack_mode):
    """Allies seen but none in range: the enemy moves and its last target stays -1 (none), not some ally's place."""
    run = Steps(attack_mode)
    attack, health, last = run.step(SEEN)
    assert attack == 0 and (health == 45.0).all() and last == -1


def test_after_a_step_without_targets_the_enemy_attacks_the_closest_not_an_old_place():
    """A step with every ally out of range, then allies 2 (place 0, 4.5 away) and 1 (place 1, 3.5 away) in range: the
    enemy attacks the closest, ally 1, and remembers place 1."""
    run = Steps("closest")
    run.step(SEEN)
    attack, health, last = run.step({0: (16.0, 23.0), 1: (19.5, 16.0), 2: (16.0, 11.5)})
    assert attack == MOVES + 1 and last == 1
    np.testing.assert_array_equal(health, [45.0, 36.0, 45.0])


def test_an_enemy_forgets_a_target_that_left_its_range():
    """Ally 0 (place 2) attacked, then out of range with no other ally in range (memory: -1), then allies 0 and 2
    back in range with ally 2 (place 0) the closer: the enemy attacks ally 2, the closest, and remembers place 0;
    then, ally 0 now the closer, it keeps attacking ally 2 (its last target, still in range)."""
    run = Steps("closest")
    attack, health, last = run.step({0: (16.0, 20.0), 1: (23.0, 16.0), 2: (16.0, 9.0)})
    assert attack == MOVES + 2 and last == 2 and health[0] == 36.0
    attack, _, last = run.step(SEEN)
    assert attack == 0 and last == -1
    attack, health, last = run.step({0: (16.0, 20.5), 1: (23.0, 16.0), 2: (16.0, 12.5)})
    assert attack == MOVES + 0 and last == 0 and health.tolist() == [45.0, 45.0, 36.0]
    attack, health, last = run.step({0: (16.0, 19.5), 1: (23.0, 16.0), 2: (16.0, 11.5)})
    assert attack == MOVES + 0 and last == 0 and health.tolist() == [45.0, 45.0, 36.0]


@pytest.mark.parametrize("draw, place", [(0.1, 2), (0.5, 1)])
def test_attacking_at_random_after_a_step_without_targets_the_draw_picks(draw, place):
    """attack_mode "random": a step with none in range, then all three in range (4 away): the ally the attack draw
    picks (the same cumulative rule as without the step before), not the ally at some remembered place."""
    run = Steps("random")
    run.step(SEEN)
    attack, health, last = run.step({0: (16.0, 20.0), 1: (20.0, 16.0), 2: (16.0, 12.0)}, draws=(0.99, draw))
    assert attack == MOVES + place and last == place
    assert health[2 - place] == 36.0 and (health == 45.0).sum() == 2
