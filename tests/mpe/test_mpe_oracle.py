"""fastvec's MPE scenarios against mpe2's (the oracle), bit for bit over whole episodes from mpe2's own reset
states, discrete and continuous actions (tests/mpe/mpe_oracle.py's harness): 10,000 transitions per scenario
through mpe2's raw env, and a few episodes through its parallel_env; state access (any utterance observed as mpe2
observes it, goal indices clamped, one env's state touching no other's) and fastvec's own resets."""

import importlib

import numpy as np
import pytest
from mpe_oracle import Scenario, bits, needs_glibc_fma, padded_obs, play, world_state

from fastvec.native import NATIVE_DIR, cpu



def goal_index(world):
    """The goal landmark's index (every agent shares agent 0's goal_a)."""
    return [world.landmarks.index(world.agents[0].goal_a)]


def crypto_goals(world):
    """The goal's and the key's landmark index (the key is that landmark's colour)."""
    key = next(k for k, lm in enumerate(world.landmarks) if lm.color is world.agents[2].key)
    return [world.landmarks.index(world.agents[0].goal_a), key]


SCENARIOS = {
    "simple_spread": Scenario("simple_spread_v3", "mpe_spread.h"),
    "simple_tag": Scenario("simple_tag_v3", "mpe_tag.h"),
    "simple_adversary": Scenario("simple_adversary_v3", "mpe_adversary.h", extra_state=goal_index),
    "simple_push": Scenario("simple_push_v3", "mpe_push.h", extra_state=goal_index),
    "simple_speaker_listener": Scenario("simple_speaker_listener_v4", "mpe_speaker_listener.h",
                                        extra_state=lambda w: [w.landmarks.index(w.agents[0].goal_b)]),
    "simple_reference": Scenario("simple_reference_v3", "mpe_reference.h",
                                 extra_state=lambda w: [w.landmarks.index(a.goal_b) for a in w.agents]),
    "simple_crypto": Scenario("simple_crypto_v3", "mpe_crypto.h", extra_state=crypto_goals),
    "simple_world_comm": Scenario("simple_world_comm_v3", "mpe_world_comm.h"),
}
EPISODES = 200  # per action kind: 2 x 200 x 25 = 10,000 transitions per scenario


@needs_glibc_fma
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2(name, continuous):
    assert play(SCENARIOS[name], continuous, EPISODES) == EPISODES * 25


@needs_glibc_fma
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2_parallel_env(name, continuous):
    assert play(SCENARIOS[name], continuous, 8, seed=1000, public=True) == 8 * 25


@needs_glibc_fma
@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2_from_scattered_worlds(name, continuous):
    """Worlds three times wider than mpe2's resets: the rules' far edges (the prey's capped penalty for leaving
    the screen, distances beyond every reset's, agents out of each other's reach) as mpe2 has them."""
    assert play(SCENARIOS[name], continuous, 10, seed=2000, scatter=3.0) == 10 * 25


# Other values of mpe2's keywords: (scenario, mpe2's keywords, fastvec's defines for them).
KEYWORDS = [
    ("simple_spread", {"N": 4, "local_ratio": 0.25}, {"N": 4, "LOCAL_RATIO_MILLI": 250}),
    ("simple_tag", {"num_good": 2, "num_adversaries": 2, "num_obstacles": 3},
     {"NUM_GOOD": 2, "NUM_ADVERSARIES": 2, "NUM_OBSTACLES": 3}),
    ("simple_adversary", {"N": 3}, {"N": 3}),
    ("simple_reference", {"local_ratio": 0.875}, {"LOCAL_RATIO_MILLI": 875}),
    ("simple_world_comm", {"num_good": 3, "num_adversaries": 3, "num_obstacles": 2, "num_food": 3, "num_forests": 1},
     {"NUM_GOOD": 3, "NUM_ADVERSARIES": 3, "NUM_OBSTACLES": 2, "NUM_FOOD": 3, "NUM_FORESTS": 1}),
]


@needs_glibc_fma
@pytest.mark.parametrize("name,mpe_kwargs,defines", KEYWORDS, ids=[k[0] for k in KEYWORDS])
def test_keywords_match_mpe2(name, mpe_kwargs, defines):
    sc = SCENARIOS[name]
    scenario = Scenario(sc.module, sc.source, mpe_kwargs, defines, sc.extra_state)
    assert play(scenario, False, 20, seed=500) + play(scenario, True, 20, seed=600) == 1000


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_set_state_utterances_are_observed_as_mpe2_observes_them(name):
    """A state whose agents all hold an utterance (a silent agent's is 0 in play, but state access may set any) and
    a velocity: each agent's observation right after set_state is mpe2's observation of that world."""
    sc, n, rng = SCENARIOS[name], 6, np.random.default_rng(3)
    refs = [importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs) for _ in range(n)]
    for k, ref in enumerate(refs):
        ref.reset(seed=k)
        for agent in ref.unwrapped.world.agents:
            agent.state.c = rng.uniform(-1.0, 1.0, ref.unwrapped.world.dim_c)
            agent.state.p_vel = rng.uniform(-1.0, 1.0, 2)
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, n, 2, 25)
    batch.reset(np.arange(n, dtype=np.uint64), None)
    batch.set_state(None, np.stack([world_state(ref.unwrapped.world, sc.extra_state) for ref in refs]))
    agents = list(refs[0].possible_agents)
    want = np.stack([padded_obs({a: ref.observe(a) for a in agents}, agents, env.obs_size) for ref in refs])
    np.testing.assert_array_equal(bits(batch.obs), bits(want))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_set_state_of_one_env_leaves_the_other_envs_observations_alone(name):
    """Setting env 0's state (any values: a world of other envs' states) writes env 0's observations only."""
    sc, n = SCENARIOS[name], 3
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, n, 2, 25)
    batch.reset(np.arange(n, dtype=np.uint64) + 5, None)
    others, states = batch.obs[1:].copy(), batch.get_state()
    batch.set_state([0], states[2:3])
    np.testing.assert_array_equal(batch.obs[1:], others)
    np.testing.assert_array_equal(batch.obs[0], batch.obs[2])


@pytest.mark.parametrize("name", ["simple_adversary", "simple_speaker_listener", "simple_reference"])
def test_set_state_clamps_a_goal_index_into_the_landmarks(name):
    """A goal index past either end of the landmarks reads back (and plays) as the nearest landmark's index."""
    sc = SCENARIOS[name]
    ref = importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs)
    ref.reset(seed=0)
    state = world_state(ref.unwrapped.world, sc.extra_state)
    goals, last = len(sc.extra_state(ref.unwrapped.world)), len(ref.unwrapped.world.landmarks) - 1
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, 4, 2, 25)
    batch.reset(np.arange(4, dtype=np.uint64), None)
    states = np.repeat(state[None], 4, axis=0)
    states[:, -goals:] = np.array([[-3.0], [99.0], [0.0], [last]])
    batch.set_state(None, states)
    want = np.broadcast_to(np.array([[0.0], [last], [0.0], [last]]), (4, goals))
    np.testing.assert_array_equal(batch.get_state()[:, -goals:], want)
    np.testing.assert_array_equal(batch.obs[0], batch.obs[2])
    np.testing.assert_array_equal(batch.obs[1], batch.obs[3])


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2_reset_distribution(name):
    """fastvec's own resets (the lockstep tests start from mpe2's) against mpe2's reset_world: every state value
    (positions, velocities, utterances, goals) over 3,000 resets of each has mpe2's range and mean, and a goal
    drawn among k landmarks takes every one of them."""
    sc, n = SCENARIOS[name], 3000
    ref = importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs)
    theirs = []
    for k in range(n):
        ref.reset(seed=k)
        theirs.append(world_state(ref.unwrapped.world, sc.extra_state))
    theirs = np.array(theirs)
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, n, 2, 25)
    batch.reset(np.arange(n, dtype=np.uint64) + 77, None)
    ours = batch.get_state()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours.min(0), theirs.min(0), atol=0.01, err_msg=f"{name}: smallest values")
    np.testing.assert_allclose(ours.max(0), theirs.max(0), atol=0.01, err_msg=f"{name}: largest values")
    np.testing.assert_allclose(ours.mean(0), theirs.mean(0), atol=0.06, err_msg=f"{name}: mean values")
    for column in np.flatnonzero((theirs == np.round(theirs)).all(0) & (theirs.max(0) > theirs.min(0))):
        assert set(np.unique(ours[:, column])) == set(np.unique(theirs[:, column])), (name, column)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_scenario_compiles_without_warnings(name, env_warnings):
    """Both action kinds' builds of every scenario compile without a warning (-Wall at -O3): no array indexed past
    its end, no value used uninitialised."""
    from fastvec.native import mpe

    for continuous in (False, True):
        defines, _ = mpe.scenario_defines(name, continuous, {})
        assert env_warnings(NATIVE_DIR / SCENARIOS[name].source, defines) == "", continuous


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_set_state_frames_draw_each_entity_at_mpe2s_size(name):
    """With one entity at the centre and every other moved out of view, the frame holds one disc whose width across
    its centre row is the diameter of mpe2's entity (its `size`, at the frame's 256 / 3 pixels per unit), centred in
    the 256 x 256 frame."""
    sc = SCENARIOS[name]
    ref = importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs)
    ref.reset(seed=0)
    world = ref.unwrapped.world
    entities = world.agents + world.landmarks
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, 1, 2, 25)
    batch.reset(np.zeros(1, np.uint64), None)
    scale = 256 / 3.0
    for e, entity in enumerate(entities):
        for k, other in enumerate(entities):
            other.state.p_pos = np.array([0.0, 0.0] if k == e else [10.0, 10.0 + k])
        batch.set_state(None, world_state(world, sc.extra_state)[None])
        frame = batch.render(0)
        assert frame.shape == (256, 256, 3)  # square, as the world it draws
        drawn = (frame != 255).any(axis=2)
        rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
        width = drawn[128].sum()  # the centre row
        assert abs(width - 2 * entity.size * scale) <= 2, (name, e, entity.name, width, entity.size)
        assert abs(len(rows) - 2 * entity.size * scale) <= 2, (name, e, entity.name, len(rows))
        # the world's origin at the frame's centre
        assert abs(rows.mean() - 127.5) <= 1 and abs(cols.mean() - 127.5) <= 1, (name, e, rows.mean(), cols.mean())


@needs_glibc_fma
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_matches_mpe2_with_silent_agents(name, monkeypatch):
    """Continuous actions where a third of the agents act all zeros in a step (a speaker then says nothing: in
    simple_crypto its reward term is 0, not its distance to the goal word), against mpe2, bit for bit."""
    import mpe_oracle

    sample = mpe_oracle.sample_actions

    def with_silences(rng, spaces, continuous, episodes, dims):
        out = sample(rng, spaces, continuous, episodes, dims)
        out[rng.random(out.shape[:2]) < 1 / 3] = 0.0
        return out

    monkeypatch.setattr(mpe_oracle, "sample_actions", with_silences)
    assert play(SCENARIOS[name], True, 20, seed=700) == 20 * 25
