"""The MPE scenarios' PettingZoo faces (fastvec/wrappers/mpe.py): PettingZoo's own API and seed tests, the
registered ids, each agent's own spaces, and the face against mpe2's parallel_env from the same state (its
observation dicts, rewards, terminations and truncations bit for bit)."""

import importlib

import gymnasium
import numpy as np
import pettingzoo
import pytest
from mpe_oracle import bits, needs_glibc_fma, world_state
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from test_mpe_oracle import SCENARIOS as ORACLE

import fastvec  # noqa: F401  (registers the ids)
from fastvec.native.mpe import SCENARIOS
from fastvec.wrappers.mpe import env, parallel_env, vector_env

mpe2 = pytest.importorskip("mpe2", reason="the MPE oracle is mpe2 (pip install mpe2)")
NAMES = sorted(SCENARIOS)


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", NAMES)
def test_pettingzoo_api_and_seed_tests_pass(name, continuous):
    parallel_api_test(parallel_env(name, continuous_actions=continuous), num_cycles=30)
    api_test(env(name, continuous_actions=continuous), num_cycles=30)
    parallel_seed_test(lambda: parallel_env(name, continuous_actions=continuous))
    seed_test(lambda: env(name, continuous_actions=continuous))


@pytest.mark.parametrize("name", NAMES)
def test_agents_and_spaces_are_mpe2s(name):
    module = importlib.import_module(f"mpe2.{name}_v{SCENARIOS[name].version}")
    for continuous in (False, True):
        ours = pettingzoo.make("parallel", f"fastvec/{name}-v{SCENARIOS[name].version}", continuous_actions=continuous)
        ref = module.parallel_env(continuous_actions=continuous)
        assert ours.possible_agents == ref.possible_agents
        for agent in ref.possible_agents:
            assert ours.observation_space(agent) == ref.observation_space(agent)
            assert ours.action_space(agent) == ref.action_space(agent)
        assert ours.state_space == ref.state_space
        assert ours.metadata["name"] == ref.metadata["name"]
        # The batch's one action space (what the trainer samples and the vector face checks against): the
        # largest agent's, Box(0, 1) in each of its values for continuous actions, Discrete(largest n) else.
        sp = ours.batch.env.spaces
        if continuous:
            dims = max(ref.action_space(a).shape[0] for a in ref.possible_agents)
            assert sp.action_kind == "box" and sp.action_dims == dims
            np.testing.assert_array_equal(sp.action_low, np.zeros(dims, np.float32))
            np.testing.assert_array_equal(sp.action_high, np.ones(dims, np.float32))
        else:
            assert sp.action_kind == "discrete"
            assert sp.nvec.tolist() == [max(ref.action_space(a).n for a in ref.possible_agents)]


def test_keywords_follow_mpe2s():
    e = parallel_env("simple_tag_v3", num_good=2, num_adversaries=2, num_obstacles=0, max_cycles=7)
    assert e.possible_agents == ["adversary_0", "adversary_1", "agent_0", "agent_1"]
    e.reset(seed=0)
    for t in range(7):
        *_, truncations, _ = e.step({a: 0 for a in e.agents})
    assert all(truncations.values()) and e.agents == []
    with pytest.raises(TypeError, match="num_food"):
        parallel_env("simple_tag", num_food=2)
    with pytest.raises(ValueError, match="local_ratio"):
        parallel_env("simple_spread", local_ratio=0.1234)
    with pytest.raises(ValueError, match="Discrete\\(3\\)"):  # the speaker's own space, not the batch's Discrete(5)
        parallel_env("simple_speaker_listener").check_action("speaker_0", 3)
    with pytest.raises(KeyError, match="simple_spread"):
        parallel_env("simple_sprad")
    # discrete actions unless asked, as mpe2's continuous_actions=False: every face alike
    mpe2_default = importlib.import_module("mpe2.simple_spread_v3").parallel_env().action_space("agent_0")
    for face in (parallel_env("simple_spread_v3"), env("simple_spread_v3"), vector_env("simple_spread_v3", 2)):
        space = face.single_action_space if hasattr(face, "single_action_space") else face.action_space("agent_0")
        assert space == mpe2_default == gymnasium.spaces.Discrete(5), type(face).__name__


@pytest.mark.parametrize("name", SCENARIOS)
def test_metadata_is_mpe2s(name):
    """A scenario's parallel and AEC envs carry mpe2's metadata: its name (with the version), that it is
    parallelizable (PettingZoo's conversions read it), its render modes and frame rate."""
    ref = importlib.import_module(f"mpe2.{name}_v{SCENARIOS[name].version}").parallel_env().metadata
    for face in (parallel_env(name), env(name)):
        got = face.metadata
        assert {k: got[k] for k in ref} == ref, type(face).__name__


@pytest.mark.parametrize("ratio", [0.0, 1.0, 0, 1, -0.001, 1.001, 0.0005])
def test_local_ratio_keywords_take_mpe2s_range_both_ends_included(ratio):
    """local_ratio is a proportion in [0, 1], both ends included as mpe2 asserts them, in thousandths (fastvec's
    define): simple_spread and simple_reference take what mpe2 takes and refuse the rest, naming the keyword."""
    for name in ("simple_spread", "simple_reference"):
        module = importlib.import_module(f"mpe2.{name}_v3")
        try:
            module.parallel_env(local_ratio=ratio)
            takes = 0 <= ratio * 1000 == round(ratio * 1000) <= 1000
        except AssertionError:
            takes = False
        if takes:
            parallel_env(name, local_ratio=ratio).close()
        else:
            with pytest.raises(ValueError, match=rf"local_ratio={ratio!r} for {name}: a proportion in \[0, 1\]"):
                parallel_env(name, local_ratio=ratio)


@needs_glibc_fma
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", NAMES)
def test_face_matches_mpe2s_parallel_env(name, continuous):
    """Two episodes per scenario through both faces, from mpe2's reset state set into fastvec's game."""
    sc = ORACLE[name]
    module = importlib.import_module(f"mpe2.{sc.module}")
    rng = np.random.default_rng(5)
    for seed in (3, 4):
        ref = module.parallel_env(continuous_actions=continuous, local_ratio=0.25) if SCENARIOS[name].local_ratio \
            else module.parallel_env(continuous_actions=continuous)
        ours = parallel_env(name, continuous_actions=continuous,
                            **({"local_ratio": 0.25} if SCENARIOS[name].local_ratio else {}))
        want, _ = ref.reset(seed=seed)
        ours.reset(seed=seed)
        ours.batch.set_state(None, world_state(ref.unwrapped.world, sc.extra_state)[None])
        got = {a: o for a, o in zip(ours.possible_agents, ours._agent_obs())}
        while True:
            assert set(got) == set(want)
            for a in want:
                np.testing.assert_array_equal(bits(got[a]), bits(want[a]), err_msg=f"{name} {a}")
            if not ref.agents:
                break
            actions = {a: ref.action_space(a).sample() for a in ref.agents}
            if continuous:
                actions = {a: rng.random(v.shape).astype(np.float32) for a, v in actions.items()}
            want, w_rew, w_term, w_trunc, _ = ref.step(actions)
            got, g_rew, g_term, g_trunc, _ = ours.step(actions)
            assert {a: np.float32(r) for a, r in w_rew.items()} == g_rew
            assert (w_term, w_trunc) == (g_term, g_trunc)
        assert ours.agents == [] and ours.state().shape == ours.state_space.shape


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", ["simple_speaker_listener", "simple_world_comm"])
def test_vector_env_rows_are_the_padded_parallel_games(name, continuous):
    """Game g of vector_env(seed=s) is parallel_env's game of seed s + g for a whole episode: each row its agent's
    observation padded with zeros, its reward, the episode's end; an agent's own action padded to the largest space
    does what it does in its own space."""
    games = 3
    vec = vector_env(name, games, continuous_actions=continuous)
    singles = [parallel_env(name, continuous_actions=continuous) for _ in range(games)]
    agents = vec.possible_agents
    rows, _ = vec.reset(seed=10)
    want = [s.reset(seed=10 + g)[0] for g, s in enumerate(singles)]
    for t in range(25):
        for g in range(games):
            for i, a in enumerate(agents):
                row = rows[g * len(agents) + i]
                np.testing.assert_array_equal(row[: len(want[g][a])], want[g][a], err_msg=f"step {t} game {g} {a}")
                assert not row[len(want[g][a]):].any()
        own = [{a: s.action_space(a).sample() for a in agents} for s in singles]
        actions = np.zeros((games * len(agents), *vec.single_action_space.shape), vec.single_action_space.dtype)
        for g in range(games):
            for i, a in enumerate(agents):
                actions[g * len(agents) + i, ...] = np.pad(own[g][a], (0, actions.shape[1] - len(own[g][a]))) \
                    if continuous else own[g][a]
        rows, rewards, terminated, truncated, _ = vec.step(actions)
        results = [s.step(own[g]) for g, s in enumerate(singles)]
        want = [r[0] for r in results]
        for g in range(games):
            for i, a in enumerate(agents):
                assert rewards[g * len(agents) + i] == results[g][1][a]
                assert truncated[g * len(agents) + i] == results[g][3][a] == (t == 24)
    assert vec.metadata["name"] == singles[0].metadata["name"]


@pytest.mark.parametrize("name", NAMES)
def test_rgb_array_frames_draw_every_entity(name):
    """A white frame with a disc per entity; moving the world moves the discs."""
    e = parallel_env(name, render_mode="rgb_array")
    e.reset(seed=0)
    first = e.render()
    assert first.shape == (256, 256, 3) and first.dtype == np.uint8 and (first != 255).any(axis=2).sum() > 20
    state = e.batch.get_state()
    state[0, :2] += 0.3  # agent 0's position
    e.batch.set_state(None, state)
    assert not np.array_equal(e.render(), first)


def test_an_unseeded_game_starts_from_fresh_entropy_and_a_pickled_one_plays_on_alike():
    """As mpe2's envs: the first reset without a seed draws one from fresh entropy (two new games differ). A copy
    (SuperSuit's cloudpickle) of a continuous-action game in progress keeps its keywords and plays on as the
    original: the same observations, rewards and global state for the same actions."""
    import pickle

    a, b = parallel_env("simple_speaker_listener"), parallel_env("simple_speaker_listener")
    a.reset()
    b.reset()
    assert not np.array_equal(a.state(), b.state())
    game = parallel_env("simple_speaker_listener", continuous_actions=True, max_cycles=9)
    game.reset(seed=3)
    rng = np.random.default_rng(0)

    def actions(p):
        return {agent: rng.uniform(0, 1, p.action_space(agent).shape).astype(np.float32) for agent in p.agents}

    game.step(actions(game))
    copy = pickle.loads(pickle.dumps(game))
    assert copy.continuous_actions and copy.max_cycles == 9 and copy.agents == game.agents
    assert copy.action_space("speaker_0") == game.action_space("speaker_0") == gymnasium.spaces.Box(0, 1, (3,))
    while game.agents:
        act = actions(game)
        ours, theirs = game.step(act), copy.step(act)
        for got, want in zip(ours[:2], theirs[:2]):
            for agent in want:
                np.testing.assert_array_equal(got[agent], want[agent])
        np.testing.assert_array_equal(game.state(), copy.state())
    assert copy.agents == []


@pytest.mark.parametrize("name", ["simple_spread", "simple_spread_v3", "Simple_Spread", "fastvec/simple_spread-v3",
                                  "simple_spread-v3", "mpe/simple_spread_v3"])
def test_a_scenario_is_found_by_name_or_id(name):
    from fastvec.native.mpe import scenario_key

    assert scenario_key(name) == "simple_spread"
    with pytest.raises(KeyError, match="unknown MPE scenario 'fastvec/simple_sprint-v3'"):
        scenario_key("fastvec/simple_sprint-v3")
