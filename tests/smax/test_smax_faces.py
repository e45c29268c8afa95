"""SMAX's PettingZoo faces (fastvec/wrappers/smax.py): PettingZoo's own API and seed tests, the registered ids, the
keywords, and the action masks the faces hand out (in the observation dicts, in the vector face's infos) against
jaxmarl's get_avail_actions from the same states (skipped without jaxmarl)."""

import re

import gymnasium
import numpy as np
import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import fastvec  # noqa: F401  (registers the ids)
from fastvec.native import NATIVE_DIR
from fastvec.native.smax import SCENARIOS
from fastvec.wrappers.smax import env, parallel_env, vector_env

CASES = [("3m", "heuristic"), ("5m_vs_6m", "agents"), ("3s_vs_5z", "heuristic"), ("smacv2_5_units", "agents"),
         ("smacv2_10_units", "heuristic"), ("smacv2_20_units", "agents")]


@pytest.mark.parametrize("scenario,enemy", CASES)
def test_pettingzoo_api_and_seed_tests_pass(scenario, enemy):
    parallel_api_test(parallel_env(scenario, enemy=enemy), num_cycles=60)
    api_test(env(scenario, enemy=enemy), num_cycles=60)
    parallel_seed_test(lambda: parallel_env(scenario, enemy=enemy))
    seed_test(lambda: env(scenario, enemy=enemy))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_scenario_is_registered_with_its_agents_and_spaces(scenario):
    sc = SCENARIOS[scenario]
    for kind in ("parallel", "aec"):
        made = pettingzoo.make(kind, f"fastvec/smax_{scenario}-v0")  # enemy="heuristic" by default
        assert made.possible_agents == [f"ally_{i}" for i in range(sc.allies)]
    e = parallel_env(f"fastvec/smax_{scenario}-v0", enemy="agents")
    assert e.possible_agents == sc.agents and e.metadata["name"] == f"smax_{scenario}_v0"
    n = sc.allies + sc.enemies
    for agent in e.possible_agents:  # jaxmarl's: Discrete(5 + the other team's size), the unit_list observation
        actions = 5 + (sc.enemies if agent.startswith("ally") else sc.allies)
        assert e.action_space(agent) == gymnasium.spaces.Discrete(actions)
        space = e.observation_space(agent)
        assert space["observation"].shape == (13 * (n - 1) + 10,)
        assert space["action_mask"] == gymnasium.spaces.Box(0, 1, (actions,), np.int8)  # PettingZoo's 0/1 masks
    assert e.state_space == gymnasium.spaces.Box(-np.inf, np.inf, (12 * n,), np.float32)
    observations, _ = e.reset(seed=0)
    assert e.state_space.contains(e.state())
    # jaxmarl's Box(-1, 1) unit_list; the smacv2 scenarios' [-2, 2] (a unit may start off the map, its own position
    # beyond 1); each agent's observation and mask within its space
    bound = 2.0 if scenario.startswith("smacv2") else 1.0
    for agent, obs in observations.items():
        assert e.observation_space(agent)["observation"] == gymnasium.spaces.Box(-bound, bound, (13 * (n - 1) + 10,),
                                                                                  np.float32)
        assert e.observation_space(agent).contains(obs)


def test_keywords():
    e = parallel_env("3m", max_steps=4)  # jaxmarl's max_steps: truncated after max_steps + 1 steps
    e.reset(seed=0)
    for _ in range(5):
        *_, truncations, _ = e.step({a: 4 for a in e.agents})  # everyone stops: nobody is in range
    assert all(truncations.values()) and e.agents == []
    with pytest.raises(ValueError, match="heuristic"):
        parallel_env("3m", enemy="scripted")
    with pytest.raises(KeyError, match="27m_vs_30m"):
        parallel_env("4m")
    with pytest.raises(ValueError, match="Discrete\\(10\\)"):  # enemy_0 of 5m_vs_6m attacks 5 allies, not 6
        parallel_env("5m_vs_6m", enemy="agents").check_action("enemy_0", 10)
    with pytest.raises(ValueError, match="max_steps"):
        parallel_env("3m", max_steps=-1)
    with pytest.raises(ValueError, match="needs enemy='heuristic'"):  # the heuristic's attack_mode
        vector_env("3m", 2, enemy="agents", attack_mode="random")
    assert len(parallel_env("3m", attack_mode="random").batch.get_state()[0]) == 16 * 6 + 5 * 3  # attack draws
    with pytest.raises(TypeError, match="unexpected"):
        vector_env("3m", 2, points=3)


def test_the_vector_face_hands_out_masks_and_autoresets():
    v = vector_env("3m", 4, max_steps=30)
    obs, infos = v.reset(seed=3)
    assert obs.shape == (12, 75) and infos["action_mask"].shape == (12, 8)
    assert (infos["action_mask"][:, :5] == 1).all() and not infos["action_mask"][:, 5:].any()
    rng, ended = np.random.default_rng(0), 0
    for _ in range(40):
        mask = infos["action_mask"]
        obs, _, terminated, truncated, infos = v.step((np.where(mask, rng.random(mask.shape), -1)).argmax(1))
        ended += int((terminated | truncated).sum())
        np.testing.assert_array_equal(infos["action_mask"], v.batch.action_mask.reshape(12, 8))
        # the rows of a battle that just ended: the next battle's first masks (all alive, out of range)
        fresh = terminated | truncated
        assert (infos["action_mask"][fresh, :5] == 1).all()
    assert ended > 0


def lockstep(face_step, batch, scenario: str, enemy: str, games: int, seed: int):
    """Steps a face and jaxmarl's env from jaxmarl's states (set into the face's batch each step); yields, where the
    step was bit for bit, (what face_step(actions) returned, game, jaxmarl's avail actions of the new state per
    agent) for the caller to compare with the masks the face returned."""
    oracle = pytest.importorskip("smax_oracle", reason="the SMAX oracle is jaxmarl's SMAX")
    jax = oracle.jax
    smax = oracle.smax
    cls = smax.HeuristicEnemySMAX if enemy == "heuristic" else smax.SMAX
    jenv = cls(scenario=smax.map_name_to_scenario(scenario))
    world = jenv._env if enemy == "heuristic" else jenv
    reset, step = jax.jit(jax.vmap(jenv.reset)), jax.jit(jax.vmap(jenv.step_env))
    avail = jax.jit(jax.vmap(jenv.get_avail_actions))
    key = jax.random.PRNGKey(seed)
    key, *keys = jax.random.split(key, games + 1)
    _, state = reset(jax.numpy.stack(keys))
    rng = np.random.default_rng(seed)
    for t in range(15):
        key, *keys = jax.random.split(key, games + 1)
        keys = jax.numpy.stack(keys)
        draws = jax.vmap(lambda k: oracle.step_draws(world, k))(keys)
        enemy_draws = jax.vmap(lambda k: oracle.heuristic_draws(jenv, k))(keys) if enemy == "heuristic" else None
        batch.set_state(None, oracle.set_state_values(scenario, state, draws, enemy_draws))
        masks = avail(state)
        actions = np.stack([(np.where(np.asarray(masks[a]), rng.random(np.asarray(masks[a]).shape), -1)).argmax(-1)
                            for a in jenv.agents], 1)
        returned = face_step(actions)
        _, state, _, dones, _ = step(keys, state, {a: actions[:, i] for i, a in enumerate(jenv.agents)})
        units = oracle.unit_state(state.state if enemy == "heuristic" else state)
        got = batch.get_state()[:, : units[0].size].reshape(units.shape)
        exact = (oracle.bits(got) == oracle.bits(units)).all((1, 2))
        new = avail(state)
        for g in np.nonzero(exact & ~np.asarray(dones["__all__"]))[0]:
            yield returned, g, [np.asarray(new[a])[g] for a in jenv.agents]


@pytest.mark.parametrize("scenario,enemy", [("3m", "heuristic"), ("5m_vs_6m", "agents")])
def test_the_faces_masks_are_jaxmarls_avail_actions(scenario, enemy):
    games = 8
    v = vector_env(scenario, games, enemy=enemy, max_steps=1000)
    v.reset(seed=0)
    agents = v.num_agents
    compared = 0
    for infos, g, want in lockstep(lambda a: v.step(a.reshape(-1))[-1], v.batch, scenario, enemy, games, seed=5):
        for i, mask in enumerate(want):
            row = infos["action_mask"][g * agents + i]
            np.testing.assert_array_equal(row[: len(mask)], mask)
            assert not row[len(mask):].any()
        compared += 1
    p = parallel_env(scenario, enemy=enemy, max_steps=1000)
    p.reset(seed=0)

    def parallel_step(actions):  # one battle: the first game's actions
        return p.step({a: int(actions[0, i]) for i, a in enumerate(p.possible_agents)})[0]
    for obs, g, want in lockstep(parallel_step, p.batch, scenario, enemy, 1, seed=6):
        for a, mask in zip(p.possible_agents, want):
            np.testing.assert_array_equal(obs[a]["action_mask"], mask)
        compared += 1
    assert compared > 50


def test_by_default_an_episode_is_truncated_as_jaxmarls_max_steps_100_does():
    """Nobody moves or attacks: the episode runs until jaxmarl's default max_steps=100 truncates it, which
    jaxmarl checks before its step count increments: on the 101st step."""
    from fastvec.native.smax import TIME_LIMIT

    e = parallel_env("3m", enemy="agents")
    e.reset(seed=0)
    steps = 0
    while e.agents:
        *_, terminations, truncations, _ = e.step({a: 4 for a in e.agents})  # 4: stop
        steps += 1
        assert not any(terminations.values())
    assert steps == TIME_LIMIT == 101 and all(truncations.values())


def test_an_unseeded_battle_starts_from_fresh_entropy_and_then_continues_its_stream():
    """As PettingZoo's and Gymnasium's envs: the first reset without a seed draws one from fresh entropy (two new
    envs start different battles), later unseeded resets continue the env's stream, and a seed repeats a battle."""
    a, b = parallel_env("3m"), parallel_env("3m")
    a.reset()
    b.reset()
    first = a.state()
    assert not np.array_equal(first, b.state())
    a.reset()
    assert not np.array_equal(a.state(), first)
    a.reset(seed=4)
    b.reset(seed=4)
    np.testing.assert_array_equal(a.state(), b.state())


def test_the_aec_face_converts_back_to_a_parallel_env_through_pettingzoos_own_wrapper():
    """Both faces declare themselves parallelizable (as the Pong and MPE faces do), so PettingZoo's
    aec_to_parallel_wrapper takes the AEC face; the converted env then steps the battle as the parallel face does."""
    from pettingzoo.utils.conversions import aec_to_parallel_wrapper

    assert parallel_env("3m").metadata["is_parallelizable"] is True
    converted = aec_to_parallel_wrapper(env("3m"))
    direct = parallel_env("3m")
    got, want = converted.reset(seed=4)[0], direct.reset(seed=4)[0]
    for _ in range(5):
        for agent in want:
            np.testing.assert_array_equal(got[agent]["observation"], want[agent]["observation"])
        actions = {a: int(np.flatnonzero(want[a]["action_mask"])[-1]) for a in direct.agents}
        got, want = converted.step(actions)[0], direct.step(actions)[0]
    assert set(got) == set(want)


def test_the_faces_play_in_real_time():
    """render_fps of every face is one step per SMAX step's game time: smax.h's SMAX_WORLD_STEPS world steps of
    SMAX_DT seconds each (jaxmarl's world_steps_per_env_step = 8 of time_per_step = 1/16 s: 0.5 s, 2 frames/s)."""
    header = (NATIVE_DIR / "smax.h").read_text()
    world_steps = int(re.search(r"#define SMAX_WORLD_STEPS (\d+)", header).group(1))
    dt = float(re.search(r"#define SMAX_DT ([0-9.]+)f", header).group(1))
    fps = 1.0 / (world_steps * dt)
    assert fps == 2.0
    for face in (parallel_env("3m"), env("3m"), vector_env("3m", 2)):
        assert face.metadata["render_fps"] == fps
