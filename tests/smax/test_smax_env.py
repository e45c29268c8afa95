"""fastvec's SMAX env file on its own (no jaxmarl): its spaces per scenario (the registry's team sizes) and what its
episodes keep true."""

import shutil
import subprocess

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, TIME_LIMIT, scenario_defines

DISABLED = 2  # batch.h's FV_DISABLED: this test resets itself


def load(name):
    return cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name).items()))


@pytest.mark.parametrize("name", SCENARIOS)
def test_spaces(name):
    env, sc = load(name), SCENARIOS[name]
    n = sc.allies + sc.enemies
    assert env.num_agents == len(sc.agents) == n
    # the agents playing both teams: every unit is an agent, named as jaxmarl's SMAX names them
    names = [f"ally_{i}" for i in range(sc.allies)] + [f"enemy_{i}" for i in range(sc.enemies)]
    assert sc.agent_names("agents") == names
    assert env.obs_size == 13 * (n - 1) + 10  # jaxmarl's unit_list observation
    sizes = [env.lib.fv_agent_action_size(a) for a in range(n)]
    assert sizes == [5 + sc.enemies] * sc.allies + [5 + sc.allies] * sc.enemies


@pytest.mark.parametrize("name", ["3m", "5m_vs_6m", "6h_vs_8z"])
def test_heuristic_enemies_leave_the_allies_the_agents(name):
    sc = SCENARIOS[name]
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, "heuristic").items()))
    n = sc.allies + sc.enemies
    assert env.num_agents == sc.allies and sc.agent_names("heuristic") == sc.agents[: sc.allies]
    assert env.obs_size == 13 * (n - 1) + 10 and env.num_actions == 5 + sc.enemies  # the allies' space
    assert env.spaces.state_size == 16 * n + 4 * sc.enemies  # units, draws, the enemies' policy states
    with pytest.raises(ValueError, match="heuristic"):
        scenario_defines(name, "scripted")


def test_unknown_scenario_names_the_choices():
    with pytest.raises(KeyError, match="3s5z_vs_3s6z"):
        scenario_defines("3s5z_vs_3s7z")


def test_random_episodes_stay_on_the_map_and_end_with_the_winners_stat():
    """3m under random actions: units stay on the map; an episode's stats (allies_won, enemies_won) are 1 for the
    team with units left when the other's are all dead (jaxmarl's won_battle), 0 for both at a time-limit end and
    0 on the steps that end nothing."""
    env = load("3m")
    assert env.stat_names == ["allies_won", "enemies_won"]
    batch = cpu.CpuBatch(env, 64, DISABLED, TIME_LIMIT)
    batch.reset(np.arange(64, dtype=np.uint64), None)
    rng = np.random.default_rng(0)
    ended, kinds = np.zeros(64, np.bool_), set()
    for _ in range(TIME_LIMIT):
        live = ~(batch.terminated | batch.truncated)  # DISABLED: an ended env stays ended until reset
        batch.step(rng.integers(0, 8, (64, 6, 1)))
        state = batch.get_state()[:, : 8 * 6].reshape(64, 6, 8)
        assert ((state[..., :2] >= 0) & (state[..., :2] <= 32)).all()
        assert ((state[..., 2] > 0) == (state[..., 4] != 0)).all()  # alive exactly while health is left
        assert ((batch.obs >= -1) & (batch.obs <= 1)).all()
        alive = state[..., 4] != 0
        allies_left, enemies_left = alive[:, :3].any(1), alive[:, 3:].any(1)
        done = batch.terminated | batch.truncated
        want = np.stack([allies_left & ~enemies_left, enemies_left & ~allies_left], 1) & done[:, None]
        np.testing.assert_array_equal(batch.episode_stats[live], want[live])
        kinds |= {("won" if w.any() else "time") for w in want[live & done]}
        ended |= done
    assert ended.all() and kinds == {"won", "time"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", ["3m", "27m_vs_30m"])
def test_the_gpu_env_module_and_the_trainers_compile(name, tmp_path):
    """The crowded scenarios' observations (25m's 129 KB an env, 27m_vs_30m's 168 KB) do not fit a block's shared
    memory: their staged kernels are never launched, compile empty, and the modules must still build, the env's
    and the trainer's; 27m_vs_30m, the larger, stands for both (each build takes tens of seconds), 3m for those
    that fit."""
    from fastvec.native.gpu import NVCC_FLAGS
    from fastvec.trainer.cuda.device import CUDA_DIR
    shutil.copyfile(NATIVE_DIR / "smax.h", tmp_path / "fastvec_env.h")
    units = {"env": '#include "fastvec_env.h"\n#include "batch.h"\n#include "batch_gpu.h"\n',
             "trainer": '#include "fastvec_env.h"\n#include "batch.h"\n#include "kernels.cu"\n#include "rollout.cu"\n'
                        '#include "selfplay.cu"\n'}
    defines = [f"-D{key}={value}" for key, value in scenario_defines(name).items()]
    for unit, text in units.items():
        (tmp_path / f"{unit}.cu").write_text(text)
        cmd = ["nvcc", "--cubin", "-arch=sm_90", *NVCC_FLAGS, *defines, f"-I{tmp_path}", f"-I{CUDA_DIR}",
               f"-I{NATIVE_DIR}", str(tmp_path / f"{unit}.cu"), "-o", str(tmp_path / f"{unit}.cubin")]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert proc.returncode == 0, (unit, proc.stderr[-2000:])


def test_action_masks_and_world_state_go_with_the_returned_observation():
    """batch.action_mask (N, A, NUM_ACTIONS) uint8 and batch.world_state (N, WORLD_STATE_SIZE) float32 after every
    reset and step are those of the state whose observation the batch returns: after an autoreset, the new
    episode's. Recomputed from scratch (set_state of the same state, which reads back as set) they come out the
    same."""
    env = load("5m_vs_6m")
    n, agents, actions = 32, 11, 5 + 6
    batch = cpu.CpuBatch(env, n, 1, 20)  # SameStep: ended envs hand out the next episode's first observation
    assert env.action_mask and env.world_state_size == 12 * agents
    batch.reset(np.arange(n, dtype=np.uint64), None)
    assert batch.action_mask.shape == (n, agents, actions) and batch.action_mask.dtype == np.uint8
    assert batch.world_state.shape == (n, 12 * agents) and batch.world_state.dtype == np.float32
    # a first state: every unit alive and out of the others' range, so moves and stop, no attacks
    assert (batch.action_mask[..., :5] == 1).all() and not batch.action_mask[..., 5:].any()
    rng, ended, attacks = np.random.default_rng(1), 0, 0
    for _ in range(60):
        # available actions, mostly: the mask a policy would apply
        logits = np.where(batch.action_mask, rng.random(batch.action_mask.shape), -1.0)
        batch.step(logits.argmax(-1))
        ended += int((batch.terminated | batch.truncated).sum())
        attacks += int(batch.action_mask[..., 5:].sum())
        mask, world, state = batch.action_mask.copy(), batch.world_state.copy(), batch.get_state()
        batch.set_state(None, state)
        np.testing.assert_array_equal(batch.get_state(), state)  # every value of a state reads back as set
        np.testing.assert_array_equal(batch.action_mask, mask)
        np.testing.assert_array_equal(batch.world_state, world)
        alive = batch.get_state()[:, : 8 * agents].reshape(n, agents, 8)[..., 4] != 0
        np.testing.assert_array_equal(mask[..., 0], alive)  # moves while alive
        assert (mask[..., 4] == 1).all()  # stop always
        assert not mask[:, 5:, 5 + 5:].any()  # enemies attack 5 allies: their sixth attack is beyond their space
    assert ended > 0 and attacks > 0


def test_a_reset_refreshes_the_masks_and_world_state_of_exactly_the_reset_envs():
    """A reset (all envs, or those its mask picks, the first and last included) recomputes their action masks and
    world states, those of a fresh start (moves and stop, no attacks); the others' are left alone."""
    env = load("3m")
    batch = cpu.CpuBatch(env, 4, DISABLED, TIME_LIMIT)
    for which in (None, [False, True, False, True], [True, False, True, False], [True, True, True, True]):
        batch.action_mask[:], batch.world_state[:] = 7, -5.0  # marks what a refresh leaves alone
        picked = np.ones(4, np.bool_) if which is None else np.array(which)
        batch.reset(np.arange(4, dtype=np.uint64), None if which is None else picked)
        assert (batch.action_mask[~picked] == 7).all() and (batch.world_state[~picked] == -5.0).all()
        assert (batch.action_mask[picked, :, :5] == 1).all() and not batch.action_mask[picked, :, 5:].any()
        assert (batch.world_state[picked] >= 0).all() and (batch.world_state[picked] > 0).any(1).all()


def test_envs_without_the_hooks_hand_out_none():
    from fastvec.native.batches import load_batch

    batch = load_batch("cartpole", 2)
    assert (batch.env.action_mask, batch.env.world_state_size) == (False, 0)
    batch.reset(None, None)
    batch.step(np.zeros(2, np.int64))
    assert batch.action_mask is None and batch.world_state is None


# jaxmarl 0.2.0's smax_env.py, the oracle where jaxmarl is not installed: MAP_NAME_TO_SCENARIO's unit types in
# unit order (allies, then enemies), and SMAX's default per-type tables (marine, marauder, stalker, zealot,
# zergling, hydralisk).
JAXMARL_TYPES = {"3m": [0] * 6, "2s3z": [2, 2, 3, 3, 3] * 2, "3s5z": [2, 2, 2, 3, 3, 3, 3, 3] * 2,
                 "5m_vs_6m": [0] * 11, "3s5z_vs_3s6z": [2, 2, 2, 3, 3, 3, 3, 3] + [2, 2, 2, 3, 3, 3, 3, 3, 3],
                 "3s_vs_5z": [2, 2, 2, 3, 3, 3, 3, 3], "6h_vs_8z": [5] * 6 + [3] * 8, "8m": [0] * 16,
                 "25m": [0] * 50, "10m_vs_11m": [0] * 21, "27m_vs_30m": [0] * 57}
VELOCITY = [3.15, 2.25, 4.13, 3.15, 4.13, 3.15]
ATTACK = [9.0, 10.0, 13.0, 8.0, 5.0, 12.0]
RANGE = [5.0, 6.0, 6.0, 2.0, 2.0, 5.0]
SIGHT = [9.0, 10.0, 10.0, 9.0, 8.0, 9.0]
RADIUS = [0.375, 0.5625, 0.625, 0.5, 0.375, 0.625]
HEALTH = [45.0, 125.0, 160.0, 150.0, 35.0, 80.0]
COOLDOWN = [0.61, 1.07, 1.87, 0.86, 0.5, 0.59]
DT = 1 / 16


@pytest.mark.parametrize("name", JAXMARL_TYPES)  # the random-unit scenarios' draws: test_smax_units.py
def test_every_unit_starts_with_its_jaxmarl_type_and_full_health(name):
    sc, types = SCENARIOS[name], JAXMARL_TYPES[name]
    n = sc.allies + sc.enemies
    assert len(types) == n
    batch = cpu.CpuBatch(load(name), 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    own = batch.obs.reshape(n, 13 * (n - 1) + 10)[:, 13 * (n - 1):]  # health, x, y, cooldown, type one-hot
    np.testing.assert_array_equal(own[:, 4:].argmax(1), types)
    np.testing.assert_array_equal(own[:, 4:].sum(1), 1)
    np.testing.assert_array_equal(own[:, 0], 1)
    units = batch.get_state()[0, : 8 * n].reshape(n, 8)
    np.testing.assert_allclose(units[:, 2], np.array(HEALTH, np.float32)[types])  # full health, in points


def duel(name, subject, distance, action, health=None, cooldown=0.0):
    """Ally `subject` and the first enemy `distance` apart along x (every other unit dead), after set_state and
    after one step of the subject's `action` (the enemy stops); each world step's cooldown draw at its maximum
    (2 dt), so a unit attacks at most once a step. Returns (observation after set_state, units after the step)."""
    sc = SCENARIOS[name]
    n = sc.allies + sc.enemies
    batch = cpu.CpuBatch(load(name), 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    units = state[: 8 * n].reshape(n, 8)
    units[:] = 0.0
    units[:, :2] = 16.0
    target = sc.allies
    for u, x in ((subject, 10.0), (target, 10.0 + distance)):
        units[u, :5] = x, 16.0, HEALTH[JAXMARL_TYPES[name][u]], 0.0, 1.0
    if health is not None:
        units[subject, 2] = health
    units[subject, 3] = cooldown
    state[8 * n:] = 2 * DT
    batch.set_state(None, state[None])
    seen = batch.obs.reshape(n, -1)[subject].copy()
    actions = np.full((1, n, 1), 4, np.int64)
    actions[0, subject, 0] = action
    batch.step(actions)
    return seen, batch.get_state()[0, : 8 * n].reshape(n, 8), target


# One scenario and ally for each unit type a scenario holds (no scenario has marauders or zerglings).
SUBJECTS = [("3m", 0), ("2s3z", 0), ("2s3z", 2), ("6h_vs_8z", 0)]


@pytest.mark.parametrize("name,subject", SUBJECTS)
def test_each_unit_type_attacks_within_its_jaxmarl_range_for_its_attack_value(name, subject):
    t, other = JAXMARL_TYPES[name][subject], JAXMARL_TYPES[name][SCENARIOS[name].allies]
    _, units, target = duel(name, subject, RANGE[t] - 0.01, 5)  # action 5: attack the first enemy
    assert units[target, 2] == pytest.approx(HEALTH[other] - ATTACK[t], abs=1e-4)
    assert units[subject, 3] == pytest.approx(COOLDOWN[t] + 2 * DT - 7 * DT, abs=1e-5)  # reset, then 7 ticks down
    _, units, target = duel(name, subject, RANGE[t] + 0.01, 5)
    assert units[target, 2] == HEALTH[other]


@pytest.mark.parametrize("name,subject", SUBJECTS)
def test_each_unit_type_sees_moves_and_fills_its_jaxmarl_size(name, subject):
    sc = SCENARIOS[name]
    n, t, other = sc.allies + sc.enemies, JAXMARL_TYPES[name][subject], JAXMARL_TYPES[name][sc.allies]
    slot = (sc.allies - 1) * 13  # the first enemy, after the other allies in the subject's list
    seen, _, _ = duel(name, subject, SIGHT[t] - 0.01, 4, health=HEALTH[t] / 4, cooldown=COOLDOWN[t] / 2)
    assert seen[slot] == 1.0 and seen[slot + 1] == pytest.approx((SIGHT[t] - 0.01) / SIGHT[t], abs=1e-6)
    assert seen[slot + 7 + other] == 1.0
    own = seen[13 * (n - 1):]
    assert own[0] == pytest.approx(0.25, abs=1e-6) and own[3] == pytest.approx(0.5, abs=1e-6)
    seen, _, _ = duel(name, subject, SIGHT[t] + 0.01, 4)
    assert not seen[slot:slot + 13].any()
    _, units, _ = duel(name, subject, 8.0, 1)  # action 1: right, at the type's speed for 8 ticks of dt
    assert units[subject, 0] == pytest.approx(10.0 + 8 * DT * VELOCITY[t], abs=1e-4)
    _, units, target = duel(name, subject, 0.2, 4)  # overlapping: pushed apart to touch
    assert units[target, 0] - units[subject, 0] == pytest.approx(RADIUS[t] + RADIUS[other], abs=1e-4)


@pytest.mark.parametrize("name", ["3m", "smax_3m", "SMAX_3m", "fastvec/smax_3m-v0", "3m-v0", "fastvec/3m-v0"])
def test_a_scenario_is_found_by_name_or_id(name):
    from fastvec.native.smax import scenario_key

    assert scenario_key(name) == "3m"
    assert scenario_key("fastvec/smax_5m_vs_6m-v0") == "5m_vs_6m"
    with pytest.raises(KeyError, match="unknown SMAX scenario 'fastvec/smax_4m-v0'"):
        scenario_key("fastvec/smax_4m-v0")


@pytest.mark.parametrize("winner", ["allies", "enemies"])
def test_the_last_kill_ends_the_episode_with_the_winners_stat_and_bonus(winner):
    """3m with one marine a side left, 3 apart: the winner's marine shoots the other, half an attack from death
    (action 5: an ally's first enemy, an enemy's last ally, as jaxmarl orders them), while the other stops. The
    episode ends with the winner's stat 1 and the other's 0 (jaxmarl's won_battle, both ways), the winners' reward
    the damage dealt over the three enemies plus the +1 win bonus, the losers' 0."""
    n, batch = 6, cpu.CpuBatch(load("3m"), 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    units = state[: 8 * n].reshape(n, 8)
    units[:] = 0.0
    units[:, :2] = 16.0
    shooter, target = (0, 3) if winner == "allies" else (3, 2)
    units[shooter, :5] = 10.0 if shooter == 0 else 13.0, 16.0, HEALTH[0], 0.0, 1.0
    units[target, :5] = 13.0 if shooter == 0 else 10.0, 16.0, ATTACK[0] / 2, 0.0, 1.0
    state[8 * n:] = 2 * DT
    batch.set_state(None, state[None])
    actions = np.full((1, n, 1), 4, np.int64)
    actions[0, shooter, 0] = 5
    batch.step(actions)
    assert batch.terminated[0]
    assert batch.episode_stats[0].tolist() == ([1.0, 0.0] if winner == "allies" else [0.0, 1.0])
    winners = slice(0, 3) if winner == "allies" else slice(3, 6)
    losers = slice(3, 6) if winner == "allies" else slice(0, 3)
    np.testing.assert_allclose(batch.rewards[0, winners], 1 + ATTACK[0] / 2 / HEALTH[0] / 3, rtol=1e-6)
    np.testing.assert_array_equal(batch.rewards[0, losers], 0.0)


@pytest.mark.parametrize("name,enemy", [("3m", "agents"), ("2s3z", "heuristic"), ("27m_vs_30m", "agents"),
                                        ("smacv2_10_units", "heuristic")])
def test_a_scenario_compiles_without_warnings(name, enemy, env_warnings):
    """A scenario's build compiles without a warning (-Wall at -O3: no unit, position or table indexed past its end,
    no value used uninitialised): the smallest and largest fixed maps, a map of random units, the heuristic enemy."""
    assert env_warnings(NATIVE_DIR / "smax.h", scenario_defines(name, enemy)) == ""


@pytest.mark.parametrize("max_steps, steps", [(0, 1), (100, 101), (2**31 - 2, 2**31 - 1)])
def test_max_steps_takes_jaxmarls_count_from_zero_to_the_c_ints_limit(max_steps, steps):
    """jaxmarl's max_steps, an int >= 0: an episode is cut after max_steps + 1 steps, which batch.h's C int holds
    up to 2**31 - 1; anything else (negative, past that, not an int) is refused naming the range."""
    from fastvec.native.smax import step_limit
    assert step_limit(max_steps) == steps
    for bad in (-1, 2**31 - 1, 2**31, 1.0, True, "100", None):
        with pytest.raises(ValueError, match=r"max_steps=.* must be an int in \[0, 2\*\*31 - 2\]"):
            step_limit(bad)


def test_the_world_state_is_jaxmarls_layout_after_a_set_state():
    """2s3z with two units alive (an ally stalker and an enemy zealot, at set positions, health and cooldowns): the
    world state is, per unit, its health fraction, x, y, cooldown and type one-hot (zeros for the dead), then every
    unit's team (0 ally, 1 enemy), then every unit's type, as jaxmarl's get_world_state lays it out."""
    n, types = 10, JAXMARL_TYPES["2s3z"]
    batch = cpu.CpuBatch(load("2s3z"), 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    state = batch.get_state()[0]
    units = state[: 8 * n].reshape(n, 8)
    units[:] = 0.0
    units[0, :5] = 10.0, 12.0, 80.0, 0.5, 1.0
    units[7, :5] = 20.0, 22.0, 150.0, 0.25, 1.0
    batch.set_state(None, state[None])
    want = np.zeros(12 * n, np.float32)
    for u, health in ((0, 80.0), (7, 150.0)):
        row = want[10 * u: 10 * u + 10]
        row[:4] = health / HEALTH[types[u]], units[u, 0], units[u, 1], units[u, 3]
        row[4 + types[u]] = 1.0
    want[10 * n: 11 * n] = [0.0] * 5 + [1.0] * 5
    want[11 * n:] = types
    np.testing.assert_allclose(batch.world_state[0], want, rtol=1e-6)


@pytest.mark.parametrize("name", ["3m", "2s3z"])
def test_heuristic_enemies_first_head_for_their_start_turned_about_the_map_centre(name):
    """jaxmarl's heuristic enemy: at its first step (no target yet, none attacked), its target becomes its own
    position rotated by 180 degrees about the map's centre (32 - x, 32 - y on the 32 x 32 map), and stays there."""
    sc = SCENARIOS[name]
    n = sc.allies + sc.enemies
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, "heuristic").items()))
    batch = cpu.CpuBatch(env, 1, DISABLED, TIME_LIMIT)
    batch.reset(np.zeros(1, np.uint64), None)
    offset = (8 + 8) * n  # the units' values and the world steps' cooldown draws come first
    state = batch.get_state()[0]
    enemies = state[8 * sc.allies: 8 * n].reshape(sc.enemies, 8)[:, :2].astype(np.float32)
    heuristic = state[offset:offset + 4 * sc.enemies].reshape(sc.enemies, 4)
    assert (heuristic[:, :3] == [0.0, 0.0, -1.0]).all()  # no target, none attacked
    actions = np.full((1, sc.allies, 1), 4, np.int64)  # the allies stop
    batch.step(actions)
    want = -(enemies - np.float32(16.0)) + np.float32(16.0)
    targets = batch.get_state()[0, offset:offset + 4 * sc.enemies].reshape(sc.enemies, 4)[:, :2]
    np.testing.assert_array_equal(targets, want)
    batch.step(actions)
    np.testing.assert_array_equal(batch.get_state()[0, offset:offset + 4 * sc.enemies].reshape(sc.enemies, 4)[:, :2], want)



@pytest.mark.parametrize("name, enemy, attack_mode", [("2s3z", "heuristic", "random"),
                                                      ("smacv2_5_units", "agents", "closest")])
def test_a_state_set_into_another_battle_reads_back_and_plays_on_as_the_battle_it_came_from(name, enemy, attack_mode):
    """set_state overwrites every value of a state (each unit's position, health, cooldown, life, last move and
    attack, the world's deviations, the heuristic's targets and draws, smacv2's unit types), whatever the env held
    before: a state taken from one batch and set into another, which played other random actions as many steps from
    the same seeds (the RNG is no part of a state), reads back as taken, and both then play the same actions to the
    same observations, rewards and states."""
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, enemy, attack_mode).items()))
    sc, n = SCENARIOS[name], 8
    agents = sc.allies + (sc.enemies if enemy == "agents" else 0)
    source, target = cpu.CpuBatch(env, n, DISABLED, 1000), cpu.CpuBatch(env, n, DISABLED, 1000)
    source.reset(np.arange(n, dtype=np.uint64), None)
    target.reset(np.arange(n, dtype=np.uint64), None)  # the same random streams: the state holds no RNG
    rng = np.random.default_rng(3)
    for _ in range(12):  # other moves (and stops) in each
        source.step(rng.integers(0, 5, (n, agents, 1))), target.step(rng.integers(0, 5, (n, agents, 1)))
    state = source.get_state()
    units = 8 * (sc.allies + sc.enemies)
    moved = state[:, :units].reshape(n, -1, 8)[..., 5:7]
    assert (moved != target.get_state()[:, :units].reshape(n, -1, 8)[..., 5:7]).all(-1).any(-1).all()
    target.set_state(None, state)
    np.testing.assert_array_equal(target.get_state(), state)
    np.testing.assert_array_equal(target.obs, source.obs)
    for _ in range(10):  # available actions, attacks included once in range
        chosen = np.where(source.action_mask, rng.random(source.action_mask.shape), -1.0).argmax(-1)[..., None]
        source.step(chosen), target.step(chosen)
        np.testing.assert_array_equal(target.obs, source.obs)
        np.testing.assert_array_equal(target.rewards, source.rewards)
        np.testing.assert_array_equal(target.get_state(), source.get_state())


@pytest.mark.parametrize("face", ["parallel", "vector"])
def test_the_faces_default_step_limit_is_jaxmarls_max_steps_100_cut_on_the_101st_step(face):
    """Nobody moves or attacks (3m, both teams stopped): by default both faces cut the battle where jaxmarl's default
    max_steps=100 does, checked before its step count increments: truncated on step 101, never before."""
    from fastvec.wrappers.smax import SmaxParallelEnv, SmaxVectorEnv

    stop = 4
    if face == "parallel":
        e = SmaxParallelEnv("3m", enemy="agents")
        e.reset(seed=0)
        steps = 0
        while e.agents:
            *_, terminations, truncations, _ = e.step({a: stop for a in e.agents})
            steps += 1
            assert not any(terminations.values()) and all(truncations.values()) == (steps == 101)
        assert steps == 101
        return
    e = SmaxVectorEnv("3m", 2, enemy="agents")
    e.reset(seed=0)
    for step in range(1, 102):
        _, _, terminations, truncations, _ = e.step(np.full(e.num_envs, stop))
        assert not np.any(terminations)
        assert np.all(truncations) if step == 101 else not np.any(truncations)
    e.close()


def test_attack_mode_is_the_heuristics_closest_by_default_or_random_and_refused_for_agent_enemies():
    """scenario_defines' ATTACK_MODE (smax.h: 0 the closest ally in range, 1 one drawn uniformly) and ENEMY (0 agents,
    1 the heuristic), with the scenario's MAP whatever the enemy: 'random' only with the heuristic enemy, and a mode
    or an enemy it does not know refused naming it."""
    assert scenario_defines("3m") == {"MAP": 0, "ENEMY": 0, "ATTACK_MODE": 0}
    assert scenario_defines("2s3z", "heuristic") == {"MAP": 1, "ENEMY": 1, "ATTACK_MODE": 0}
    assert scenario_defines("8m", "heuristic", "random") == {"MAP": 7, "ENEMY": 1, "ATTACK_MODE": 1}
    with pytest.raises(ValueError, match=r"attack_mode='random' is the heuristic enemy's: it needs enemy='heuristic', "
                                         r"not 'agents'"):
        scenario_defines("3m", "agents", "random")
    with pytest.raises(ValueError, match=r"attack_mode='weakest' is not one of \['closest', 'random'\]"):
        scenario_defines("3m", "heuristic", "weakest")
    with pytest.raises(ValueError, match=r"enemy='bots' is not one of \['agents', 'heuristic'\]"):
        scenario_defines("3m", "bots", "random")


@pytest.mark.parametrize("name", ["3m", "5m_vs_6m"])
def test_a_fixed_maps_units_start_around_their_teams_centre_as_jaxmarls_draw(name):
    """jaxmarl's fixed maps: each unit starts at its team's centre (allies (8, 16), enemies (24, 16) on the 32-cell
    map) plus a uniform draw in [-2, 2] per coordinate, then overlapping units are pushed apart (a fraction of a
    cell): over 1,000 resets the offsets fill [-2, 2] on both sides and almost none lie past 2.5, and they average
    the centre."""
    sc, n = SCENARIOS[name], 1000
    batch = cpu.CpuBatch(load(name), n, DISABLED, 100)
    batch.reset(np.arange(n, dtype=np.uint64), None)
    units = batch.get_state()[:, : 8 * (sc.allies + sc.enemies)].reshape(n, -1, 8)
    for team, centre in ((units[:, : sc.allies], 8.0), (units[:, sc.allies:], 24.0)):
        for offset in (team[..., 0] - centre, team[..., 1] - 16.0):
            assert offset.min() < -1.9 and offset.max() > 1.9
            assert (np.abs(offset) > 2.5).mean() < 0.01
            assert abs(offset.mean()) < 0.1


@pytest.mark.parametrize("name", ["3m", "2s3z"])
def test_the_heuristic_enemy_attacks_an_ally_just_inside_its_range_and_walks_towards_one_just_outside(name):
    """jaxmarl's heuristic enemy (its view of the allies rebuilt from its observation's scaled features): an ally
    alone, 0.05 inside the enemy's attack range (3-4-5 along x and y), loses the enemy's attack value in one step; 0.05 outside it
    (still in sight) keeps its health, and the enemy walks towards it. Every other unit dead, the ally stopped, each
    world step's cooldown draw at its maximum."""
    sc = SCENARIOS[name]
    n, enemy = sc.allies + sc.enemies, sc.allies
    ally_type, enemy_type = JAXMARL_TYPES[name][0], JAXMARL_TYPES[name][enemy]
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, "heuristic").items()))
    for gap, hit in ((RANGE[enemy_type] - 0.05, True), (RANGE[enemy_type] + 0.05, False)):
        assert gap < SIGHT[enemy_type]
        batch = cpu.CpuBatch(env, 1, DISABLED, TIME_LIMIT)
        batch.reset(np.zeros(1, np.uint64), None)
        state = batch.get_state()[0]
        units = state[: 8 * n].reshape(n, 8)
        units[:] = 0.0
        units[:, :2] = 16.0
        units[0, :5] = 10.0, 16.0, HEALTH[ally_type], 0.0, 1.0
        units[enemy, :5] = 10.0 + 0.6 * gap, 16.0 + 0.8 * gap, HEALTH[enemy_type], 0.0, 1.0
        state[8 * n: 16 * n] = 2 * DT  # the world steps' cooldown draws
        batch.set_state(None, state[None])
        batch.step(np.full((1, sc.allies, 1), 4, np.int64))  # the allies stop
        after = batch.get_state()[0, : 8 * n].reshape(n, 8)
        if hit:
            assert after[0, 2] == pytest.approx(HEALTH[ally_type] - ATTACK[enemy_type], abs=1e-4)
            assert after[enemy, :2] == pytest.approx([10.0 + 0.6 * gap, 16.0 + 0.8 * gap])
        else:
            assert after[0, 2] == HEALTH[ally_type]
            assert np.hypot(after[enemy, 0] - 10.0, after[enemy, 1] - 16.0) < gap - 0.1  # it walked closer
