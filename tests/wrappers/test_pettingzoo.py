"""The PettingZoo face: PettingZoo's own API, seed, max-cycles and render tests on every game, a
multi-step determinism test, the vector env against SuperSuit's concat of our parallel env (the
oracle for the layout), the self-play hooks, registration, and bad input."""

import re
import types

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.wrappers.vector import DictInfoToList
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, parallel_seed_test, render_test

import fastvec  # noqa: F401  (registers fastvec/<game>-v0 with PettingZoo)
from fastvec import native
from fastvec.pettingzoo import env, parallel_env, vector_env

GAMES = sorted(native.ENVS)


@pytest.mark.parametrize("game", GAMES)
def test_parallel_api(game):
    parallel_api_test(parallel_env(game), num_cycles=300)


@pytest.mark.parametrize("game", GAMES)
def test_aec_api(game):
    api_test(env(game), num_cycles=300)


def test_pong_against_the_bot_is_a_one_agent_parallel_env():
    p = parallel_env("Pong", opponent="bot", difficulty=1)
    assert p.possible_agents == ["left"]
    parallel_api_test(p, num_cycles=300)


@pytest.mark.parametrize("game", GAMES)
def test_parallel_seed(game):
    parallel_seed_test(lambda: parallel_env(game))


@pytest.mark.parametrize("game", ["pong", "cartpole"])
def test_max_cycles(game):
    module = types.SimpleNamespace(parallel_env=lambda **kw: parallel_env(game, **kw),
                                   env=lambda **kw: env(game, **kw))
    max_cycles_test(module)


@pytest.mark.parametrize("game", GAMES)
def test_render(game, monkeypatch):
    """PettingZoo's own render_test, unchanged: every mode in render_modes, "human" (a pygame window; no display
    here, so SDL's dummy driver) included. Before human rendering it failed at its first line,
    env_fn(render_mode="human")."""
    pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    render_test(lambda render_mode=None: env(game, render_mode=render_mode))


def rollout(p, seed, steps, action_seed):
    """Play `steps` steps with random actions, resetting at each game end; return everything seen."""
    rng = np.random.default_rng(action_seed)
    seen = [p.reset(seed=seed)]
    for _ in range(steps):
        if not p.agents:
            seen.append(p.reset())
        seen.append(p.step({a: int(rng.integers(0, 3)) for a in p.agents}))
    return seen


def test_same_seed_same_games_over_many_steps_and_resets():
    """parallel_seed_test stops after one step, so: 3000 steps across several games and resets."""
    a = rollout(parallel_env("Pong", points=2), 7, 3000, 0)
    b = rollout(parallel_env("Pong", points=2), 7, 3000, 0)
    assert sum(1 for s in a if len(s) == 2) > 3  # several games started
    assert data_equivalence(a, b)
    assert not data_equivalence(a, rollout(parallel_env("Pong", points=2), 8, 3000, 0))


def test_game_end_removes_every_agent_with_episode_info():
    p = parallel_env("Pong", points=1, max_cycles=5000)
    p.reset(seed=3)
    rng = np.random.default_rng(0)
    while p.agents:
        obs, rew, term, trunc, info = p.step({a: int(rng.integers(0, 3)) for a in p.agents})
    assert set(term) == {"left", "right"} and all(term.values()) and not any(trunc.values())
    assert sorted(rew.values()) == [-1.0, 1.0]
    winner = max(rew, key=rew.get)
    assert info[winner]["episode_return"] == 1.0 and info[winner][f"{winner}_score"] == 1.0
    assert info["left"]["episode_length"] == info["right"]["episode_length"] > 0
    with pytest.raises(Exception, match="call reset"):
        p.step({"left": 0, "right": 0})


def test_registered_with_pettingzoo():
    p = pettingzoo.make("parallel", "fastvec/pong-v0", max_cycles=7, points=5)
    assert p.max_cycles == 7 and p.possible_agents == ["left", "right"]
    a = pettingzoo.make("aec", "fastvec/pong_v0")
    a.reset(seed=0)
    assert a.agent_selection == "left"
    for game in GAMES:
        assert pettingzoo.make("parallel", f"fastvec/{game}-v0").metadata["name"] == f"fastvec_{game}_v0"


# ------------------------------------------------------------------ the vector env vs SuperSuit
def test_vector_env_matches_supersuit_concat_of_our_parallel_env():
    """Same seeds, same actions: obs, rewards, flags and terminal observations row by row, over
    game ends (points=4) and truncations (max_cycles=300), with SuperSuit as the oracle."""
    ss = pytest.importorskip("supersuit")
    games, steps = 6, 1500
    theirs = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(parallel_env("Pong", points=4, max_cycles=300)),
                                   games, num_cpus=0, base_class="gymnasium")
    ours = vector_env("Pong", games, points=4, max_cycles=300)
    assert ours.num_envs == theirs.num_envs == 2 * games
    assert ours.single_observation_space == theirs.observation_space
    o1, _ = ours.reset(seed=42)
    o2, _ = theirs.reset(seed=42)
    np.testing.assert_array_equal(o1, o2)
    rng = np.random.default_rng(0)
    terminated = truncated = 0
    for _ in range(steps):
        actions = rng.integers(0, 3, ours.num_envs)
        o1, r1, te1, tr1, info1 = ours.step(actions)
        o2, r2, te2, tr2, info2 = theirs.step(actions)
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(te1, te2.astype(bool))
        np.testing.assert_array_equal(tr1, tr2.astype(bool))
        for row in range(ours.num_envs):
            if "terminal_observation" in info2[row]:
                assert info1["_terminal_observation"][row]
                np.testing.assert_array_equal(info1["terminal_observation"][row], info2[row]["terminal_observation"])
                assert info1["final_info"]["episode_return"][row] == info2[row]["episode_return"]
            else:
                assert not info1 or not info1["_terminal_observation"][row]
        terminated += int(te1.sum())
        truncated += int(tr1.sum())
    assert terminated >= 4 and truncated >= 4


def test_vector_layout_seeding_and_num_games_independence():
    a = vector_env("Pong", 3)
    b = vector_env("Pong", 8)
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    np.testing.assert_array_equal(oa, ob[:6])  # game g depends on seed + g only
    for _ in range(50):
        act = np.random.default_rng(1).integers(0, 3, 16)
        oa = a.step(act[:6])[0]
        ob = b.step(act)[0]
    np.testing.assert_array_equal(oa, ob[:6])
    # Seat layout: both rows of a game see the same ball, mirrored in x (egocentric).
    np.testing.assert_array_equal(ob[0::2, 2], -ob[1::2, 2])
    np.testing.assert_array_equal(ob[0::2, 0], ob[1::2, 1])


def test_seat_hooks_feed_each_seat_from_its_own_policy():
    envs = vector_env("Pong", 5)
    assert envs.possible_agents == ["left", "right"]
    np.testing.assert_array_equal(envs.agent_rows("left"), [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(envs.agent_rows("right"), [1, 3, 5, 7, 9])
    np.testing.assert_array_equal(envs.agent_of_row, [0, 1] * 5)
    twin = vector_env("Pong", 5)
    obs, _ = envs.reset(seed=1)
    twin.reset(seed=1)
    rng = np.random.default_rng(2)
    for _ in range(100):
        seats = envs.by_agent(obs)
        left = (seats["left"][:, 3] > seats["left"][:, 0]).astype(np.int64) + 1  # policy A: a tracker
        right = rng.integers(0, 3, 5)  # policy B: random
        flat = np.empty(10, np.int64)
        flat[envs.agent_rows("left")], flat[envs.agent_rows("right")] = left, right
        out = envs.step({"left": left, "right": right})
        np.testing.assert_array_equal(out[0], twin.step(flat)[0])
        obs = out[0]


def test_terminal_observation_as_supersuit_list_infos():
    envs = DictInfoToList(vector_env("Pong", 2, points=1))
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5000):
        obs, rew, term, trunc, infos = envs.step(rng.integers(0, 3, 4))
        if term.any():
            break
    assert isinstance(infos, list) and len(infos) == 4
    for row in np.flatnonzero(term):
        assert infos[row]["terminal_observation"].shape == (8,)
        assert infos[row]["final_info"]["episode_return"] == rew[row]


def test_vector_env_render_frames_per_row():
    envs = vector_env("Pong", 3, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    assert len(frames) == 6 and frames[4].shape == (240, 320, 3)
    np.testing.assert_array_equal(frames[4], frames[5])  # two seats, one game


# ------------------------------------------------------------------ bad input
def test_parallel_env_refuses_bad_actions():
    p = parallel_env("Pong")
    p.reset(seed=0)
    with pytest.raises(KeyError, match="unknown agent.*'middle'.*live agents are \\['left', 'right'\\]"):
        p.step({"left": 0, "right": 0, "middle": 1})
    with pytest.raises(ValueError, match="no action for agent.*'right'"):
        p.step({"left": 0})
    with pytest.raises(ValueError, match="action 3 out of range for Discrete\\(3\\) for agent 'right'"):
        p.step({"left": 0, "right": 3})
    with pytest.raises(ValueError, match="action -1 out of range"):
        p.step({"left": np.int32(-1), "right": 0})
    with pytest.raises(TypeError, match="action 1.5 for agent 'left' must be an int"):
        p.step({"left": 1.5, "right": 0})
    with pytest.raises(KeyError, match="unknown agent 'middle'"):
        p.observation_space("middle")
    p.step({"left": np.int64(1), "right": np.array(2)})  # numpy ints and 0-d arrays are fine


def test_vector_env_refuses_bad_actions():
    envs = vector_env("Pong", 4)
    envs.reset(seed=0)
    bad = np.zeros(8, np.int64)
    bad[5] = 7
    with pytest.raises(ValueError, match="action 7 out of range for Discrete\\(3\\) at index 5 \\(row 5: game 2, agent 'right'\\)"):
        envs.step(bad)
    with pytest.raises(ValueError, match="shape \\(8,\\)"):
        envs.step(np.zeros(4, np.int64))
    with pytest.raises(TypeError, match="integers"):
        envs.step(np.zeros(8))
    with pytest.raises(KeyError, match="unknown agent.*'middle'"):
        envs.step({"left": np.zeros(4, int), "right": np.zeros(4, int), "middle": np.zeros(4, int)})
    with pytest.raises(ValueError, match="no actions for agent.*'right'"):
        envs.step({"left": np.zeros(4, int)})
    with pytest.raises(ValueError, match="actions\\['right'\\] must have shape \\(4,\\)"):
        envs.step({"left": np.zeros(4, int), "right": np.zeros(8, int)})
    with pytest.raises(ValueError, match="out of range"):
        envs.step({"left": np.zeros(4, int), "right": np.full(4, 3)})


def test_bad_keywords():
    with pytest.raises(KeyError, match="unknown fastvec env 'tennis'"):
        parallel_env("Tennis")
    with pytest.raises(TypeError, match=r"^NativeParallelEnv.__init__\(\) got an unexpected keyword argument 'speed' .*points"):
        parallel_env("Pong", speed=3)
    with pytest.raises(ValueError, match="render_mode='ansi' is not supported"):
        parallel_env("Pong", render_mode="ansi")
    with pytest.raises(ValueError, match="render_mode='human' is not supported by a vector env"):
        vector_env("Pong", 2, render_mode="human")
    with pytest.raises(ValueError, match="max_cycles must be a positive int"):
        vector_env("Pong", 2, max_cycles=0)
    with pytest.raises(ValueError, match="num_games must be a positive int"):
        vector_env("Pong", 0)
    with pytest.raises(ValueError, match="difficulty=3 sets the scripted bot's level: pass opponent='bot'"):
        parallel_env("Pong", difficulty=3)
    with pytest.raises(ValueError, match="opponent='human' is not supported"):
        vector_env("Pong", 2, opponent="human")
    with pytest.raises(ValueError, match="device='tpu' is not supported"):
        vector_env("Pong", 2, device="tpu")


# ------------------------------------------------------------------ the GPU backend
@pytest.mark.gpu
def test_gpu_vector_env_plays_the_cpu_games_bit_for_bit():
    """The CPU build is the oracle: same seeds and actions, over game ends and truncations."""
    games = 300
    ours = {d: vector_env("Pong", games, device=d, points=3, max_cycles=500) for d in ("cpu", "cuda")}
    outs = {d: e.reset(seed=9)[0] for d, e in ours.items()}
    np.testing.assert_array_equal(outs["cpu"], outs["cuda"])
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(1200):
        actions = rng.integers(0, 3, 2 * games)
        c, g = ours["cpu"].step(actions), ours["cuda"].step(actions)
        for x, y in zip(c[:4], g[:4]):
            np.testing.assert_array_equal(x, y)
        if c[4]:
            rows = c[4]["_final_obs"]
            np.testing.assert_array_equal(rows, g[4]["_final_obs"])
            np.testing.assert_array_equal(np.stack(c[4]["final_obs"][rows]), np.stack(g[4]["final_obs"][rows]))
            for key in ("episode_return", "episode_length", "left_score", "right_score", "paddle_hits"):
                np.testing.assert_array_equal(c[4]["final_info"][key], g[4]["final_info"][key])
            ended += int(rows.sum())
    assert ended > 100
    with pytest.raises(ValueError, match="out of range"):
        ours["cuda"].step(np.full(2 * games, 3))


@pytest.mark.parametrize("name,face,agents", [
    ("fastvec/pong-v0", "NativeParallelEnv", ["left", "right"]), ("Pong", "NativeParallelEnv", ["left", "right"]),
    ("fastvec/simple_spread-v3", "MpeParallelEnv", ["agent_0", "agent_1", "agent_2"]),
    ("simple_spread", "MpeParallelEnv", ["agent_0", "agent_1", "agent_2"]),
    ("fastvec/smax_3m-v0", "SmaxParallelEnv", ["ally_0", "ally_1", "ally_2"])])
def test_the_face_takes_every_fastvec_game_by_name_or_pettingzoo_id(name, face, agents):
    """fastvec.pettingzoo's parallel_env, env and vector_env make the game a PettingZoo id names (as
    pettingzoo.make does after `import fastvec`), a built-in game, an MPE or a SMAX scenario alike."""
    import pettingzoo

    import fastvec.pettingzoo as fp
    par = fp.parallel_env(name)
    assert type(par).__name__ == face and par.possible_agents == agents
    par.close()
    aec = fp.env(name)
    aec.reset(seed=0)
    assert aec.possible_agents == agents
    aec.close()
    vec = fp.vector_env(name, 2)
    assert vec.num_envs == 2 * len(agents)
    vec.close()
    if name.startswith("fastvec/"):
        made = pettingzoo.make("parallel", name)  # the registry's way to the same game
        assert made.possible_agents == agents
        made.close()


@pytest.mark.parametrize("name, agents", [
    ("Pong", ["left", "right"]), ("fastvec/pong-v0", ["left", "right"]),
    ("simple_push", ["adversary_0", "agent_0"]), ("fastvec/simple_push-v3", ["adversary_0", "agent_0"]),
    ("smax_3m", [f"ally_{i}" for i in range(3)]), ("fastvec/smax_3m-v0", [f"ally_{i}" for i in range(3)]),
    ("FASTVEC/SMAX_3m-v0", [f"ally_{i}" for i in range(3)])])
def test_the_pettingzoo_faces_names_reach_each_kind_of_game_by_name_or_id(name, agents):
    """fastvec.pettingzoo's parallel_env, env and vector_env take every fastvec game by name or PettingZoo id:
    a built-in game, an MPE scenario, a SMAX scenario (its heuristic enemies by default: the allies play)."""
    from fastvec import pettingzoo as fpz

    for make in (fpz.parallel_env, fpz.env):
        game = make(name)
        assert game.possible_agents == agents, (make.__name__, name)
        game.close()
    vec = fpz.vector_env(name, 2)
    assert vec.num_envs == 2 * len(agents)
    vec.close()


def test_vector_env_takes_box_actions_per_agent_by_dict_as_by_array():
    """A game of Box actions (MPE's continuous simple_spread, Box(0, 1, (5,))): each agent's (num_games, 5)
    actions by name step the games as the same rows in one array; one value per game is refused."""
    from fastvec.wrappers.mpe import vector_env as mpe_vector_env

    by_dict, by_array = (mpe_vector_env("simple_spread_v3", 2, continuous_actions=True) for _ in range(2))
    for envs in (by_dict, by_array):
        envs.reset(seed=3)
    actions = np.random.default_rng(0).random((2, 3, 5)).astype(np.float32)  # game, agent, value
    obs_dict = by_dict.step({agent: actions[:, i] for i, agent in enumerate(by_dict.possible_agents)})[0]
    obs_array = by_array.step(actions.reshape(6, 5))[0]
    np.testing.assert_array_equal(obs_dict, obs_array)
    with pytest.raises(ValueError, match=r"actions\['agent_0'\] must have shape \(2, 5\)"):
        by_dict.step({agent: actions[:, 0, 0] for agent in by_dict.possible_agents})


def test_a_pickled_parallel_env_carries_the_game_in_progress():
    """A copy of a parallel env (SuperSuit's cloudpickle, multiprocessing) plays on as the original: the same agents,
    observations, rewards, ends and infos for the same actions, and the same next game from an unseeded reset; a
    copy of a closed env is closed."""
    import pickle

    from gymnasium.error import ClosedEnvironmentError

    p = parallel_env("Pong", points=1, max_cycles=400)
    p.reset(seed=5)
    rng = np.random.default_rng(2)
    for _ in range(30):
        p.step({a: int(rng.integers(0, 3)) for a in p.agents})
    q = pickle.loads(pickle.dumps(p))
    assert q.agents == p.agents == ["left", "right"] and q.max_cycles == 400
    steps = 0
    while p.agents:
        actions = {a: int(rng.integers(0, 3)) for a in p.agents}
        assert data_equivalence(q.step(actions), p.step(actions))
        steps += 1
    assert q.agents == [] and steps > 1
    assert data_equivalence(q.reset(), p.reset())  # no seed: both continue the same stream
    p.close()
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        pickle.loads(pickle.dumps(p)).reset()


def test_an_unseeded_parallel_env_starts_from_fresh_entropy():
    """The first reset without a seed draws one from fresh entropy, as PettingZoo's own envs: two new CartPole games
    start from different states (Gymnasium's reset noise), and a later unseeded reset continues the stream."""
    a, b = parallel_env("CartPole"), parallel_env("CartPole")
    first = a.reset()[0]["agent_0"]
    assert not np.array_equal(first, b.reset()[0]["agent_0"])
    assert not np.array_equal(a.reset()[0]["agent_0"], first)


def test_vector_env_hooks_and_calls_out_of_order_are_refused():
    """Stepping before the first reset raises ResetNeeded; the seat hooks refuse an unknown seat (naming the seats)
    and an array of another length than num_envs; render() without a render mode warns and gives None; a closed
    env refuses to reset."""
    from gymnasium.error import ClosedEnvironmentError, ResetNeeded

    envs = vector_env("Pong", 3)
    with pytest.raises(ResetNeeded, match=r"call reset\(\) before step\(\)"):
        envs.step(np.zeros(6, np.int64))
    envs.reset(seed=0)
    with pytest.raises(KeyError, match=r"unknown agent 'middle'; this game's agents are \['left', 'right'\]"):
        envs.agent_rows("middle")
    for rows in (5, 7):
        with pytest.raises(ValueError, match=f"expected an array with num_envs=6 rows, got {rows}"):
            envs.by_agent(np.zeros(rows))
    seats = envs.by_agent(np.arange(6))
    assert list(seats) == ["left", "right"] and seats["right"].tolist() == [1, 3, 5]
    with pytest.warns(UserWarning, match="render_mode='rgb_array'"):
        assert envs.render() is None
    envs.close()
    with pytest.raises(ClosedEnvironmentError, match="closed"):
        envs.reset()


def test_a_box_agents_non_finite_action_is_refused_naming_its_dimension_and_agent():
    """A continuous MPE game's action with NaN in one dimension is refused before anything steps, the message naming
    the dimension and the agent (one agent's action: env 0, no agent index)."""
    from fastvec.pettingzoo import parallel_env as any_parallel_env

    p = any_parallel_env("simple_spread", continuous_actions=True, N=2)
    p.reset(seed=0)
    bad = np.array([0.5, 0.5, np.nan, 0.5, 0.5], np.float32)
    with pytest.raises(ValueError, match=re.escape("action nan at env 0, dimension 2 is not a finite number")
                       + r".*\(for agent 'agent_1'\)$"):
        p.step({"agent_0": np.full(5, 0.5, np.float32), "agent_1": bad})
    p.step({"agent_0": np.full(5, 0.5, np.float32), "agent_1": np.full(5, 0.5, np.float32)})
