"""The SMAX oracle's harness: a transition oracle of fastvec's smax.h against jaxmarl's SMAX (jit + vmap over a
batch of episodes, as jaxmarl is trained), both teams' actions given (or, against jaxmarl's HeuristicEnemySMAX, the
allies' and the heuristic's own draws), over whole episodes. Every step, jaxmarl's
state and its random draws for that step (its weapon-cooldown deviations, derived from the step's key as its
step_env derives them) are set into fastvec's env, both step with the same actions (mostly among the available
ones, so units fight), and their next states, observations, rewards and ends are compared until jaxmarl's episode
is done: health, alive flags, cooldowns, previous actions, rewards, terminations, per-agent dones and every
observation feature but the positions bit for bit; positions within POSITION_ATOL and the observations' position
features within OBS_ATOL. The tolerance is XLA's: it fuses the multiply-add of the push-apart distance
(jnp.linalg.norm) or not depending on the batch it compiles for (smax.h takes the unfused form, its CPU code's for
batches of 128 and more), and a 1-ulp difference there grows through the 8 world steps' pushes of a crowd to a
few ulps of the positions; almost every transition is still bit for bit (counted in "bit_exact")."""

from __future__ import annotations

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, TIME_LIMIT, scenario_defines

smax = pytest.importorskip("jaxmarl.environments.smax", reason="the SMAX oracle is jaxmarl's SMAX "
                           "(pip install jaxmarl==0.2.0 with flax, chex, jaxtyping)")
jax = pytest.importorskip("jax")

DISABLED = 2  # batch.h's FV_DISABLED: the test resets each episode itself
WORLD_STEPS = 8
UNIT_STATE = 8  # smax.h's state values per unit
UNIT_FEATURES, OWN_FEATURES = 13, 10  # jaxmarl's unit_list observation: per other unit, then the agent's own
POSITION_ATOL = 5e-5  # 13 ulps at the map's far edge (3.8e-6 at 32); the largest seen is 2.3e-5 (2s3z)
OBS_ATOL = POSITION_ATOL / 4  # two positions' difference over a sight range (>= 8), or one over the map size


def bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def position_features(n: int) -> np.ndarray:
    """The observation's position features (each seen unit's relative x and y, the agent's own x and y)."""
    mask = np.zeros(UNIT_FEATURES * (n - 1) + OWN_FEATURES, np.bool_)
    for k in range(n):
        mask[k * UNIT_FEATURES + 1: k * UNIT_FEATURES + 3] = True
    return mask


def check_obs(got: np.ndarray, want: np.ndarray, where: str) -> None:
    pos = position_features(got.shape[-1] // UNIT_FEATURES + 1)
    np.testing.assert_array_equal(bits(got[..., ~pos]), bits(want[..., ~pos]), err_msg=where)
    np.testing.assert_allclose(got[..., pos], want[..., pos], rtol=0, atol=OBS_ATOL, err_msg=where)


def step_draws(env, key):
    """jaxmarl's cooldown deviations (8, N) of a step_env call with `key`, drawn as its step derives them."""
    key, _ = jax.random.split(key)  # step_env: key, action_key
    out = []
    for _ in range(WORLD_STEPS):  # step_env_no_decode's scan: step_key, world_step_key
        key, world_key = jax.random.split(key)
        keys = jax.random.split(world_key, num=env.num_agents)  # _world_step: one per unit
        out.append(jax.vmap(lambda k: jax.random.uniform(k, minval=-env.time_per_step,
                                                         maxval=2 * env.time_per_step))(keys))
    return jax.numpy.stack(out)


def unit_state(state) -> np.ndarray:
    """smax.h's per-unit state values (E, N, 8) of a batch of jaxmarl SMAX states."""
    s = jax.tree.map(np.asarray, state)
    return np.concatenate([s.unit_positions, s.unit_health[..., None], s.unit_weapon_cooldowns[..., None],
                           s.unit_alive[..., None], s.prev_movement_actions, s.prev_attack_actions[..., None]],
                          -1).astype(np.float64)


def enemy_policy_state(policy) -> np.ndarray:
    """smax.h's heuristic enemies' values but their draws (E, enemies, 3) of a batch of jaxmarl's
    HeuristicPolicyStates: the default target's x and y, the last attacked ally."""
    p = jax.tree.map(np.asarray, policy)
    return np.concatenate([p.default_target, p.last_attacked_enemy[..., None]], -1).astype(np.float64)


def heuristic_draws(env, key):
    """jaxmarl's heuristic enemies' uniform draws (enemies, 2) of a HeuristicEnemySMAX.step_env call with `key`: each
    enemy's jax.random.choice of the seen ally it follows and of the ally in range it attacks (attack_mode
    "random"), drawn as get_enemy_actions and the policy derive them."""
    _, action_key = jax.random.split(key)  # step_env: key, action_key
    keys = jax.random.split(action_key, num=env.num_enemies)  # get_enemy_actions: one per enemy
    # the policy: key, key_attack; choice(key, ...) draws uniform(key) (jax.random.choice with p)
    return jax.vmap(lambda k: jax.vmap(jax.random.uniform)(jax.random.split(k)))(keys)


def enemy_state_floats(attack_mode: str) -> int:
    """smax.h's SMAX_ENEMY_STATE: a heuristic enemy's default target (x, y), last target, and its draws (one, the
    followed ally's; two where attack_mode is "random", the attacked ally's too)."""
    return 4 + (attack_mode == "random")


def set_state_values(name: str, state, draws, enemy_draws=None, attack_mode: str = "closest") -> np.ndarray:
    """The rows smax.h's set_state takes (E, ...) for a batch of jaxmarl states and the next step's draws: the units'
    values, their cooldown draws (step_draws), with heuristic enemies (enemy_draws given: heuristic_draws of a
    HeuristicEnemySMAX, whose states these are) each enemy's policy values and the draws it keeps, and the unit types
    where the scenario draws them."""
    world = state if enemy_draws is None else state.state
    episodes = np.asarray(draws).shape[0]
    values = [unit_state(world).reshape(episodes, -1), np.asarray(draws).reshape(episodes, -1)]
    if enemy_draws is not None:
        kept = np.asarray(enemy_draws)[..., : enemy_state_floats(attack_mode) - 3]
        values.append(np.concatenate([enemy_policy_state(state.enemy_policy_state), kept], -1).reshape(episodes, -1))
    if SCENARIOS[name].random_units:  # this episode's unit types
        values.append(np.asarray(world.unit_types, np.float64))
    return np.concatenate(values, 1)


def check_masks_and_world_state(batch, env, masks, world, live: np.ndarray, where: str) -> None:
    """The batch's action masks and world states (fastvec.h's hooks, as the faces and trainers read them) equal
    jaxmarl's get_avail_actions `masks` and get_world_state `world` for the envs in `live`."""
    for i, a in enumerate(env.agents):
        want = np.asarray(masks[a])[live]
        np.testing.assert_array_equal(batch.action_mask[live, i, : want.shape[-1]], want,
                                      err_msg=f"{a}'s action mask, {where}")
        assert not batch.action_mask[live, i, want.shape[-1]:].any(), f"{a}'s mask beyond its space, {where}"
    np.testing.assert_array_equal(bits(batch.world_state[live]), bits(np.asarray(world)[live]),
                                  err_msg=f"world state, {where}")


def play(name: str, episodes: int, seed: int = 0, enemy: str = "agents", attack_mode: str = "closest") -> dict:
    """Run `episodes` episodes of `name` (fastvec's as one batch) with `enemy` playing the enemies (jaxmarl's SMAX
    or HeuristicEnemySMAX with `attack_mode`); returns counts of what was compared, the action masks and world
    states among them: those of every state set (jaxmarl's), and those of every step's result where the step was
    bit for bit ("masks_after_step")."""
    heuristic = enemy == "heuristic"
    scenario = smax.map_name_to_scenario(name)
    env = (smax.HeuristicEnemySMAX(scenario=scenario, attack_mode=attack_mode) if heuristic
           else smax.SMAX(scenario=scenario))
    per_enemy = enemy_state_floats(attack_mode)
    world = env._env if heuristic else env  # the SMAX of every unit
    agents, n, units = env.agents, env.num_agents, world.num_agents
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step_env))
    draws = jax.jit(jax.vmap(lambda k: step_draws(world, k)))
    enemy_draws = jax.jit(jax.vmap(lambda k: heuristic_draws(env, k)))
    avail = jax.jit(jax.vmap(env.get_avail_actions))
    world_state = jax.jit(jax.vmap(env.get_world_state))
    lib = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, enemy, attack_mode).items()))
    assert (lib.num_agents, lib.obs_size) == (n, env.obs_size)
    assert SCENARIOS[name].agent_names(enemy) == agents
    batch = cpu.CpuBatch(lib, episodes, DISABLED, TIME_LIMIT)
    batch.reset(np.arange(episodes, dtype=np.uint64), None)
    units_of = (lambda state: unit_state(state.state)) if heuristic else unit_state
    key = jax.random.PRNGKey(seed)
    key, *reset_keys = jax.random.split(key, episodes + 1)
    obs, state = reset(jax.numpy.stack(reset_keys))
    rng = np.random.default_rng(seed)
    sizes = np.array([env.action_spaces[a].n for a in agents])
    live = np.ones(episodes, np.bool_)
    counts = {"transitions": 0, "bit_exact": 0, "hits": 0, "deaths": 0, "wins": 0, "time_limits": 0,
              "max_position_error": 0.0, "max_obs_error": 0.0, "masks_after_step": 0}
    for t in range(TIME_LIMIT):
        where = f"{name} seed {seed} step {t}"
        key, *step_keys = jax.random.split(key, episodes + 1)
        step_keys = jax.numpy.stack(step_keys)
        batch.set_state(None, set_state_values(name, state, draws(step_keys),
                                               enemy_draws(step_keys) if heuristic else None, attack_mode))
        masks = avail(state)
        check_masks_and_world_state(batch, env, masks, world_state(state), live, where)
        want = np.stack([np.asarray(obs[a]) for a in agents], 1)
        check_obs(batch.obs[live], want[live], where)
        actions = np.zeros((episodes, n), np.int64)
        for i, a in enumerate(agents):
            m = np.asarray(masks[a]).astype(np.float64) + 1e-3  # mostly available actions, now and then any
            p = m / m.sum(-1, keepdims=True)
            actions[:, i] = (p.cumsum(-1) > rng.random((episodes, 1))).argmax(-1)
        assert (actions < sizes).all()
        health = units_of(state)[..., 2]
        batch.step(actions)
        obs, state, rewards, dones, _ = step(step_keys, state, {a: actions[:, i] for i, a in enumerate(agents)})
        got = batch.get_state()[:, : UNIT_STATE * units].reshape(episodes, units, UNIT_STATE)[live]
        expected = units_of(state)[live]
        np.testing.assert_array_equal(got[..., 2:], expected[..., 2:], err_msg=where)
        np.testing.assert_allclose(got[..., :2], expected[..., :2], rtol=0, atol=POSITION_ATOL, err_msg=where)
        want = np.stack([np.asarray(obs[a]) for a in agents], 1)[live]
        check_obs(batch.obs[live], want, where)
        want_rewards = np.stack([np.asarray(rewards[a]) for a in agents], 1)
        np.testing.assert_array_equal(bits(batch.rewards[live]), bits(want_rewards[live]), err_msg=where)
        done = np.asarray(dones["__all__"])
        alive = units_of(state)[..., 4] != 0
        if heuristic:  # the enemies' policy states: default targets and last targets bit for bit
            policy = batch.get_state()[:, (UNIT_STATE + WORLD_STEPS) * units:][:, : per_enemy * env.num_enemies]
            policy = policy.reshape(episodes, -1, per_enemy)[..., :3]
            np.testing.assert_array_equal(policy[live], enemy_policy_state(state.enemy_policy_state)[live],
                                          err_msg=f"heuristic enemies' policy state, {where}")
        eliminated = ~alive[:, : env.num_allies].any(1) | ~alive[:, env.num_allies:].any(1)
        np.testing.assert_array_equal(batch.terminated[live], eliminated[live], err_msg=where)
        np.testing.assert_array_equal((batch.terminated | batch.truncated)[live], done[live], err_msg=where)
        for i, a in enumerate(agents):
            np.testing.assert_array_equal(np.asarray(dones[a])[live], ~alive[live, i], err_msg=where)
        exact = (bits(got) == bits(expected)).all((1, 2)) & (bits(batch.obs[live]) == bits(want)).all((1, 2))
        same = np.zeros(episodes, np.bool_)
        same[np.nonzero(live)[0][exact]] = True
        check_masks_and_world_state(batch, env, avail(state), world_state(state), same, f"after the step, {where}")
        counts["masks_after_step"] += int(same.sum())
        counts["max_position_error"] = max(counts["max_position_error"],
                                           float(np.abs(got[..., :2] - expected[..., :2]).max(initial=0)))
        counts["max_obs_error"] = max(counts["max_obs_error"], float(np.abs(batch.obs[live] - want).max(initial=0)))
        counts["transitions"] += int(live.sum())
        counts["bit_exact"] += int(exact.sum())
        counts["hits"] += int(((units_of(state)[..., 2] < health) & live[:, None]).sum())
        counts["deaths"] += int((~alive & (health > 0) & live[:, None]).sum())
        counts["wins"] += int((eliminated & live).sum())
        counts["time_limits"] += int((done & ~eliminated & live).sum())
        live &= ~done
        if not live.any():
            break
    return counts
