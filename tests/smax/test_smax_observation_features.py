"""SMAX's per-agent observation written out by hand (jaxmarl's get_obs): each seen unit's health fraction, offset
over the sight, previous move, previous action over its largest and clipped cooldown fraction, in the viewer's
order (allies in index order, enemies in reverse), and the own features; the attack actions' masks and targets."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import TIME_LIMIT, scenario_defines

DISABLED = 2  # batch.h's FV_DISABLED: the test resets itself
DT = 1 / 16
N, ALLIES = 11, 5  # 5m_vs_6m: marines (sight 9, range 5, health 45, cooldown 0.61)
SIGHT, RANGE, HEALTH, COOLDOWN = 9.0, 5.0, 45.0, 0.61
OBS = 13 * (N - 1) + 10
UP, RIGHT, DOWN, LEFT, STOP = range(5)
VECTORS = {UP: (0.0, 1.0), LEFT: (-1.0, 0.0), STOP: (0.0, 0.0)}
# unit: (x, y, cooldown, action); the rest dead. Ally 0 attacks enemy 0 (action 5: its first enemy, unit 5), ally 1
# walks up, enemy 1 left; enemy 0 tries to attack ally 0 (action 9: its fifth ally from the last) with its weapon
# cooling down, enemy 2 ally 3 (action 6), dead: no hits, but both actions are their previous ones.
SCENE = {0: (10.0, 16.0, 0.0, 5), 1: (12.0, 16.0, 0.6, UP), 2: (14.0, 16.0, 0.0, STOP),
         5: (13.0, 18.0, 1.5, 9), 6: (16.0, 20.0, 0.0, LEFT), 7: (18.0, 14.0, 0.0, 6)}


def empty_battle():
    """One 5m_vs_6m battle with every unit cleared (dead, at (1, 1)): (the batch, its state, the state's units view,
    (N, 8)), for a test to place units in and set_state."""
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines("5m_vs_6m").items()))
    batch = cpu.CpuBatch(env, 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    units = state[: 8 * N].reshape(N, 8)
    units[:] = 0.0
    units[:, :2] = 1.0
    return batch, state, units


def play_scene():
    batch, state, units = empty_battle()
    for u, (x, y, cooldown, _) in SCENE.items():
        units[u, :5] = x, y, HEALTH, cooldown, 1.0
    state[8 * N: 16 * N] = 2 * DT  # each world step's cooldown draw at its maximum
    batch.set_state(None, state[None])
    actions = np.full((1, N, 1), STOP, np.int64)
    for u, (*_, action) in SCENE.items():
        actions[0, u, 0] = action
    batch.step(actions)
    return batch, batch.get_state()[0, : 8 * N].reshape(N, 8)


def order(i):
    """The units agent i's observation lists, slot by slot: allies see the others in index order, enemies in
    reverse (jaxmarl's)."""
    others = [j for j in range(N) if j != i]
    return others if i < ALLIES else others[::-1]


def test_each_seen_units_features_are_jaxmarls_from_the_state_after_the_step():
    batch, units = play_scene()
    # the step itself: ally 0's hit (9 of enemy 0's 45), its cooldown reset to 0.61 + the draw's 2 dt then 7 ticks
    # down; ally 1 a marine's 8 ticks up; neither enemy's attack lands
    assert units[5, 2] == 36.0 and units[0, 3] == pytest.approx(COOLDOWN + 2 * DT - 7 * DT, abs=1e-6)
    assert units[1, 1] == pytest.approx(16.0 + 8 * DT * 3.15, abs=1e-5)
    assert (units[:5, 2] == [45.0, 45.0, 45.0, 0.0, 0.0]).all()
    obs = batch.obs.reshape(N, OBS)
    for i in (2, 5):  # an ally's view and an enemy's
        want = np.zeros(OBS, np.float32)
        for k, j in enumerate(order(i)):
            if j not in SCENE:
                continue
            f = want[13 * k: 13 * k + 13]
            largest = 5 + (6 if j < ALLIES else 5) - 1  # the seen unit's own action count, less one
            action = SCENE[j][3]
            f[0] = units[j, 2] / HEALTH
            f[1], f[2] = (units[j, 0] - units[i, 0]) / SIGHT, (units[j, 1] - units[i, 1]) / SIGHT
            f[3], f[4] = VECTORS.get(action, (0.0, 0.0))
            f[5] = (action if action >= 5 else 0) / largest
            f[6] = np.clip(units[j, 3] / COOLDOWN, 0.0, 1.0)
            f[7] = 1.0
        own = want[13 * (N - 1):]
        own[:5] = units[i, 2] / HEALTH, units[i, 0] / 32, units[i, 1] / 32, np.clip(units[i, 3] / COOLDOWN, 0, 1), 1
        np.testing.assert_allclose(obs[i], want, atol=2e-6)
    # the clip's both ends are met: enemy 0's cooldown 1.0 (over 0.61) reads 1, enemy 1's -0.5 reads 0
    assert obs[2, 13 * 4 + 6] == 1.0 and obs[2, 13 * 5 + 6] == 0.0


@pytest.mark.parametrize("edge, available", [(RANGE - 0.01, True), (RANGE, False), (RANGE + 0.01, False)])
def test_an_attack_is_available_only_on_a_living_enemy_strictly_within_range(edge, available):
    """Ally 0's mask: stop always, the moves while alive, attack k (action 5 + k) on enemy k alive and strictly
    within its range; enemy 0 at `edge`, enemy 1 as near but dead. Enemy 0's mask mirrors it on ally 0 (enemies
    list the allies from the last: ally 0 is its action 5 + 4)."""
    batch, state, units = empty_battle()
    units[0, :5] = 10.0, 16.0, HEALTH, 0.0, 1.0
    units[5, :5] = 10.0 + edge, 16.0, HEALTH, 0.0, 1.0
    units[6, :5] = 10.0, 17.0, 0.0, 0.0, 0.0
    batch.set_state(None, state[None])
    mask = batch.action_mask[0]
    assert mask[0].tolist() == [1, 1, 1, 1, 1, int(available), 0, 0, 0, 0, 0]
    assert mask[5].tolist() == [1, 1, 1, 1, 1, 0, 0, 0, 0, int(available), 0]
    assert mask[1].tolist() == [0, 0, 0, 0, 1] + [0] * 6  # a dead agent: stop alone


def test_attack_actions_target_enemies_in_order_and_allies_from_the_last_and_actions_past_a_space_stop():
    """5m_vs_6m with every unit an agent: ally 1's action 7 hits enemy 2 (unit 7), enemy 1's action 8 hits ally 1
    (an enemy's attack k is on ally 4 - k); enemy 0's action 10, past its own Discrete(10) (the batch's rows are
    Discrete(11), the allies'), is taken as stop: it stays put and records no attack."""
    batch, state, units = empty_battle()
    for u, (x, y) in {1: (12.0, 16.0), 2: (12.0, 12.0), 5: (14.0, 12.0), 6: (14.0, 16.0), 7: (12.0, 19.0)}.items():
        units[u, :5] = x, y, HEALTH, 0.0, 1.0
    state[8 * N: 16 * N] = 2 * DT
    batch.set_state(None, state[None])
    actions = np.full((1, N, 1), STOP, np.int64)
    actions[0, 1, 0], actions[0, 6, 0], actions[0, 5, 0] = 7, 8, 10
    batch.step(actions)
    after = batch.get_state()[0, : 8 * N].reshape(N, 8)
    np.testing.assert_array_equal(after[[1, 2, 5, 6, 7], 2], [36.0, 45.0, 45.0, 45.0, 36.0])
    assert after[5, :2].tolist() == [14.0, 12.0] and after[5, 5:].tolist() == [0.0, 0.0, 0.0]
    assert after[1, 7] == 7 and after[6, 7] == 8
