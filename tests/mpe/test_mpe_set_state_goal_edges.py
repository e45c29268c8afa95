"""State access's goal index at and one past each end of the landmarks (simple_adversary, simple_speaker_listener,
simple_reference): it plays as the nearest landmark's, as mpe2 plays that goal, observations and one step's rewards."""

import importlib

import numpy as np
import pytest
from mpe_oracle import bits, needs_glibc_fma, padded_obs, world_state
from test_mpe_oracle import SCENARIOS

from fastvec.native import NATIVE_DIR, cpu

CLAMPED = ["simple_adversary", "simple_speaker_listener", "simple_reference"]


def set_goal(name, world, g):
    """mpe2's goal (every goal of the scenario) set to landmark g."""
    if name == "simple_adversary":
        for agent in world.agents:
            agent.goal_a = world.landmarks[g]
    elif name == "simple_speaker_listener":
        world.agents[0].goal_b = world.landmarks[g]
    else:
        for agent in world.agents:
            agent.goal_b = world.landmarks[g]


def goal_cases(name):
    """(fastvec's batch with each env's state holding one goal value, mpe2's envs holding the goal it plays as,
    the goal values and their landmark indices)."""
    sc = SCENARIOS[name]
    probe = importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs)
    probe.reset(seed=0)
    last = len(probe.unwrapped.world.landmarks) - 1
    values = np.array([-1.0, 0.0, *range(1, last + 1), last + 1.0, 99.0])
    landmarks = np.clip(values, 0, last).astype(int)
    refs = []
    for g in landmarks:
        ref = importlib.import_module(f"mpe2.{sc.module}").raw_env(**sc.mpe_kwargs)
        ref.reset(seed=0)
        set_goal(name, ref.unwrapped.world, int(g))
        refs.append(ref)
    states = np.stack([world_state(ref.unwrapped.world, sc.extra_state) for ref in refs])
    goals = len(sc.extra_state(refs[0].unwrapped.world))
    states[:, -goals:] = values[:, None]
    env = cpu.load(NATIVE_DIR / sc.source, tuple(sorted({**sc.defines, "CONTINUOUS_ACTIONS": 0}.items())))
    batch = cpu.CpuBatch(env, len(values), 2, 25)
    batch.reset(np.arange(len(values), dtype=np.uint64), None)
    batch.set_state(None, states)
    return env, batch, refs, values, landmarks, goals


@pytest.mark.parametrize("name", CLAMPED)
def test_set_state_goal_one_past_either_end_reads_back_and_is_observed_as_the_nearest_landmark(name):
    env, batch, refs, values, landmarks, goals = goal_cases(name)
    np.testing.assert_array_equal(batch.get_state()[:, -goals:], np.repeat(landmarks[:, None], goals, 1))
    agents = list(refs[0].possible_agents)
    want = np.stack([padded_obs({a: ref.observe(a) for a in agents}, agents, env.obs_size) for ref in refs])
    np.testing.assert_array_equal(bits(batch.obs), bits(want), err_msg=f"goal values {values}")


@needs_glibc_fma
@pytest.mark.parametrize("name", CLAMPED)
def test_set_state_goal_one_past_either_end_is_rewarded_as_mpe2_rewards_the_nearest_landmark(name):
    env, batch, refs, values, landmarks, goals = goal_cases(name)
    agents = list(refs[0].possible_agents)
    batch.step(np.zeros((len(values), env.num_agents, env.action_dims), np.int64))
    for ref in refs:
        ref.current_actions = [0] * len(agents)
        ref._execute_world_step()
    want = np.array([[ref.rewards[a] for a in agents] for ref in refs])
    np.testing.assert_array_equal(bits(batch.rewards), bits(want), err_msg=f"goal values {values}")
    want = np.stack([padded_obs({a: ref.observe(a) for a in agents}, agents, env.obs_size) for ref in refs])
    np.testing.assert_array_equal(bits(batch.obs), bits(want), err_msg=f"goal values {values}")
