"""The MPE oracle's harness: one mpe2 scenario and fastvec's env file for it stepped in lockstep from the same
states. Each episode: mpe2 resets with a seed, its world (positions, velocities, utterances, the scenario's goals)
is set into fastvec's env through state access, then both take the same random actions (discrete or continuous)
to max_cycles; observations, rewards (mpe2's float64 rounded to fastvec's float32), terminations and truncations
must agree bit for bit at every step. The bulk of the episodes step mpe2's raw env (its world step, rewards and
observations, without PettingZoo's AEC bookkeeping around them, which costs twice as much); `public=True` steps
its parallel_env, the whole public path (clipping, truncation)."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu

mpe2 = pytest.importorskip("mpe2", reason="the MPE oracle is mpe2 (pip install mpe2)")

DISABLED = 2  # batch.h's FV_DISABLED: the test resets each episode itself


def _glibc_fma() -> bool:
    """tests/native/test_glibc_math.py's check: this machine's libm is the build glibc_exp.h reproduces."""
    path = Path(__file__).parents[1] / "native" / "test_glibc_math.py"
    spec = importlib.util.spec_from_file_location("glibc_math_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.glibc_fma()


needs_glibc_fma = pytest.mark.skipif(not _glibc_fma(), reason="mpe2's exp/log1p bits here come from a libm other than "
                                     "glibc's FMA build, which glibc_exp.h (and so fastvec's MPE physics) reproduces")


@dataclasses.dataclass(frozen=True)
class Scenario:
    """mpe2's module name and keywords, fastvec's env file and defines, and the goals' state values."""

    module: str
    source: str
    mpe_kwargs: dict = dataclasses.field(default_factory=dict)
    defines: dict = dataclasses.field(default_factory=dict)
    extra_state: Callable = lambda world: []


def bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def world_state(world, extra: Callable) -> np.ndarray:
    """mpe_common.h's state values of mpe2's world: per agent pos, vel, utterance; per landmark pos; extras."""
    values = []
    for agent in world.agents:
        values += [*agent.state.p_pos, *agent.state.p_vel, *np.asarray(agent.state.c, np.float64)]
    for landmark in world.landmarks:
        values += list(landmark.state.p_pos)
    return np.array(values + list(extra(world)), np.float64)


def sample_actions(rng, spaces: list, continuous: bool, episodes: int, dims: int) -> np.ndarray:
    """(episodes, agents, dims) actions, each agent's in its own space (the rest 0): ints, or float32 in
    [0, 1] with exact 0s and 1s among them."""
    out = np.zeros((episodes, len(spaces), dims), np.float32 if continuous else np.int64)
    for i, space in enumerate(spaces):
        if continuous:
            a = rng.random((episodes, space.shape[0])).astype(np.float32)
            a[rng.random(a.shape) < 0.1] = 0.0
            a[rng.random(a.shape) < 0.1] = 1.0
            out[:, i, : space.shape[0]] = a
        else:
            out[:, i, 0] = rng.integers(space.n, size=episodes)
    return out


def padded_obs(obs: dict, agents: list, size: int) -> np.ndarray:
    out = np.zeros((len(agents), size), np.float32)
    for i, agent in enumerate(agents):
        out[i, : len(obs[agent])] = obs[agent]
    return out


def play(scenario: Scenario, continuous: bool, episodes: int, seed: int = 0, public: bool = False,
         scatter: float = 1.0) -> int:
    """Run `episodes` episodes of both in lockstep (fastvec's as one batch); returns the transitions compared.
    `scatter` > 1 spreads mpe2's reset world that many times wider (every entity's position, raw env only) before
    both start from it: agents beyond the screen's edge, far from each other and from the landmarks."""
    module = importlib.import_module(f"mpe2.{scenario.module}")
    kwargs = {"max_cycles": 25, **scenario.mpe_kwargs, "continuous_actions": continuous}
    max_cycles = kwargs["max_cycles"]
    make = module.parallel_env if public else module.raw_env
    refs = [make(**kwargs) for _ in range(episodes)]
    env = cpu.load(NATIVE_DIR / scenario.source,
                   tuple(sorted({**scenario.defines, "CONTINUOUS_ACTIONS": int(continuous)}.items())))
    batch = cpu.CpuBatch(env, episodes, DISABLED, max_cycles)
    batch.reset(np.arange(episodes, dtype=np.uint64), None)
    agents = list(refs[0].possible_agents)
    spaces = [refs[0].action_space(a) for a in agents]
    assert env.num_agents == len(agents)
    assert env.obs_size == max(refs[0].observation_space(a).shape[0] for a in agents)
    if public:
        ref_obs = [ref.reset(seed=seed + k)[0] for k, ref in enumerate(refs)]
    else:
        for k, ref in enumerate(refs):
            ref.reset(seed=seed + k)
            world = ref.unwrapped.world
            for entity in world.agents + world.landmarks:
                entity.state.p_pos = entity.state.p_pos * scatter
        ref_obs = [{a: ref.observe(a) for a in agents} for ref in refs]
    states = np.stack([world_state(ref.unwrapped.world, scenario.extra_state) for ref in refs])
    batch.set_state(None, states)
    np.testing.assert_array_equal(batch.get_state(), states)
    rng = np.random.default_rng(seed)
    for t in range(max_cycles + 1):
        want = np.stack([padded_obs(obs, agents, env.obs_size) for obs in ref_obs])
        where = f"{scenario.module} continuous={continuous} seeds {seed}.. step {t}"
        np.testing.assert_array_equal(bits(batch.obs), bits(want), err_msg=where)
        if t == max_cycles:
            break
        actions = sample_actions(rng, spaces, continuous, episodes, env.action_dims)
        batch.step(actions)
        rewards = np.zeros((episodes, len(agents)))
        ends = np.zeros((episodes, 2), np.bool_)
        for k, ref in enumerate(refs):
            act = [actions[k, i, : s.shape[0]] if continuous else int(actions[k, i, 0]) for i, s in enumerate(spaces)]
            if public:
                obs, rew, terms, truncs, _ = ref.step(dict(zip(agents, act)))
                ends[k] = terms[agents[0]], truncs[agents[0]]
                assert all(terms[a] == ends[k, 0] and truncs[a] == ends[k, 1] for a in agents), where
            else:
                ref.current_actions = act
                ref._execute_world_step()
                obs, rew = {a: ref.observe(a) for a in agents}, ref.rewards
                ends[k] = False, t + 1 >= max_cycles  # SimpleEnv.step: truncated at max_cycles, never terminated
            ref_obs[k] = obs
            rewards[k] = [rew[a] for a in agents]
        np.testing.assert_array_equal(bits(batch.rewards), bits(rewards), err_msg=where)
        np.testing.assert_array_equal(np.stack([batch.terminated, batch.truncated], 1), ends, err_msg=where)
    return episodes * max_cycles
