"""fastvec's classic-control envs against Gymnasium's own (the oracle): CartPole-v1, Acrobot-v1, MountainCar-v0,
MountainCarContinuous-v0 and Pendulum-v1. Each episode starts from one state set through `unwrapped.state` on both
envs, takes the same actions (random and scripted policies that reach every boundary and ending) and is never
re-synchronised: observations, rewards (Gymnasium's float64 reward rounded to fastvec's float32), terminated and
truncated agree bit for bit to the episode's end. Also: spaces, specs, parameters, reset ranges, state access."""

import gymnasium as gym
import numpy as np
import pytest
from test_glibc_math import needs_glibc_fma

import fastvec  # registers fastvec/...
from fastvec import native

# id: (Gymnasium's id, registry key, keyword arguments for Gymnasium's env, the same for fastvec's)
ENVS = {
    "CartPole": ("CartPole-v1", "cartpole", {}, {}),
    "Acrobot": ("Acrobot-v1", "acrobot", {}, {}),
    "MountainCar": ("MountainCar-v0", "mountaincar", {}, {}),
    "MountainCarContinuous": ("MountainCarContinuous-v0", "mountaincarcontinuous", {}, {}),
    "Pendulum": ("Pendulum-v1", "pendulum", {}, {}),
}


# The whole-episode tests are skipped where Gymnasium's libm is not glibc's FMA build (glibc_math.h's oracle).


def make_fastvec(name: str, **params) -> gym.Env:
    return gym.make(f"fastvec/{name}", **params)


def bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def play(name: str, starts, policy, seed: int = 0, gym_kwargs=None, fastvec_kwargs=None, gym_attrs=None) -> dict:
    """Episodes from each start state in lockstep; returns counts of transitions and of the endings seen."""
    gym_id, _, default_gym_kwargs, default_fv_kwargs = ENVS[name]
    ref = gym.make(gym_id, **(gym_kwargs or default_gym_kwargs))
    for attr, value in (gym_attrs or {}).items():  # settings Gymnasium takes as attributes, not make() keywords
        setattr(ref.unwrapped, attr, value)
    env = make_fastvec(name, **(fastvec_kwargs or default_fv_kwargs))
    rng = np.random.default_rng(seed)
    counts = {"transitions": 0, "terminated": 0, "truncated": 0}
    for k, start in enumerate(starts):
        ref.reset(seed=k)
        env.reset(seed=k)
        ref.unwrapped.state = np.array(start, np.float64)
        env.unwrapped.state = np.array(start, np.float64)
        np.testing.assert_array_equal(env.unwrapped.state, ref.unwrapped.state)
        for t in range(100_000):
            action = policy(ref.unwrapped.state, rng)
            r_obs, r_rew, r_term, r_trunc, _ = ref.step(action)
            obs, rew, term, trunc, _ = env.step(action)
            where = f"{name} episode {k} from {list(start)}, step {t}"
            np.testing.assert_array_equal(bits(obs), bits(r_obs), err_msg=where)
            assert bits(rew) == bits(r_rew), where
            assert (term, trunc) == (r_term, r_trunc), where
            counts["transitions"] += 1
            if term or trunc:
                counts["terminated" if term else "truncated"] += 1
                break
    return counts


def uniform(rng, low, high, n, size=None):
    return [rng.uniform(low, high, size) for _ in range(n)]


@needs_glibc_fma
def test_cartpole_whole_episodes():
    rng = np.random.default_rng(1)
    starts = uniform(rng, -0.05, 0.05, 6, 4) + [[2.35, 1.0, 0.0, 0.0], [0.0, 0.0, 0.2, 0.5], [-2.3, -1.5, -0.1, -1.0]]
    balance = play("CartPole", starts, lambda s, r: int(s[2] + 0.5 * s[3] + 0.01 * s[0] + 0.1 * s[1] > 0))
    random = play("CartPole", starts, lambda s, r: int(r.integers(2)), seed=2)
    push = play("CartPole", starts[:4], lambda s, r: 1)
    sutton = play("CartPole", starts[:3], lambda s, r: int(r.integers(2)), gym_kwargs={"sutton_barto_reward": True},
                  fastvec_kwargs={"sutton_barto_reward": 1})  # rewards 0 and -1
    assert balance["truncated"] >= 5 and random["terminated"] == len(starts) and push["terminated"] == 4
    assert sutton["terminated"] == 3
    assert balance["transitions"] + random["transitions"] + push["transitions"] >= 3000


@needs_glibc_fma
def test_acrobot_whole_episodes():
    rng = np.random.default_rng(3)
    hanging = uniform(rng, -0.1, 0.1, 4, 4)
    anywhere = [np.r_[rng.uniform(-np.pi, np.pi, 2), rng.uniform(-13, 13), rng.uniform(-29, 29)] for _ in range(3)]
    edges = [[np.pi - 1e-9, -np.pi + 1e-9, 4 * np.pi, -9 * np.pi], [0.0, 0.0, 0.0, 0.0]]  # wrap and bound at once
    pump = play("Acrobot", hanging + anywhere + edges, lambda s, r: 2 if s[3] > 0 else 0)  # swings up: terminates
    random = play("Acrobot", hanging[:1] + edges, lambda s, r: int(r.integers(3)), seed=4)  # 500 steps: truncated
    nips = play("Acrobot", hanging[:2], lambda s, r: 2 if s[3] > 0 else 0, gym_attrs={"book_or_nips": "nips"},
                fastvec_kwargs={"nips": 1})
    assert pump["terminated"] >= 7 and random["truncated"] >= 1 and nips["transitions"] >= 2
    assert pump["transitions"] + random["transitions"] + nips["transitions"] >= 1500


@needs_glibc_fma
def test_mountaincar_whole_episodes():
    rng = np.random.default_rng(5)
    starts = [[x, 0.0] for x in uniform(rng, -0.6, -0.4, 6)] + [[-1.19, -0.06], [0.49, 0.069], [0.5, -0.01]]
    pump = play("MountainCar", starts, lambda s, r: 2 if s[1] >= 0 else 0)  # reaches the flag
    left = play("MountainCar", starts[:3], lambda s, r: 0)  # rests against the left wall, truncated
    random = play("MountainCar", starts[:3], lambda s, r: int(r.integers(3)), seed=6)
    goal = play("MountainCar", starts[:4], lambda s, r: 2 if s[1] >= 0 else 0, gym_kwargs={"goal_velocity": 0.01},
                fastvec_kwargs={"goal_velocity_micro": 10_000})
    assert pump["terminated"] == len(starts) and goal["terminated"] == 4
    assert left["truncated"] == 3 and random["truncated"] == 3
    assert sum(c["transitions"] for c in (pump, left, random, goal)) >= 1500


@needs_glibc_fma
def test_mountaincar_continuous_whole_episodes():
    rng = np.random.default_rng(7)
    starts = [[x, 0.0] for x in uniform(rng, -0.6, -0.4, 4)] + [[-1.19, -0.06], [0.44, 0.07], [0.45, 0.0]]

    def pump(s, r):  # full push along the velocity, beyond the bounds half the time (clipped to +-1)
        return np.array([(1.0 if s[1] >= 0 else -1.0) * r.uniform(0.5, 1.5)], np.float32)

    pushed = play("MountainCarContinuous", starts, pump)
    random = play("MountainCarContinuous", starts[:2], lambda s, r: r.uniform(-1.2, 1.2, 1).astype(np.float32), seed=8)
    left = play("MountainCarContinuous", starts[4:5], lambda s, r: np.array([-0.9], np.float32))
    assert pushed["terminated"] == len(starts) and random["truncated"] == 2 and left["truncated"] == 1
    assert sum(c["transitions"] for c in (pushed, random, left)) >= 2500


@needs_glibc_fma
def test_pendulum_whole_episodes():
    rng = np.random.default_rng(9)
    starts = [np.r_[rng.uniform(-np.pi, np.pi), rng.uniform(-1, 1)] for _ in range(3)] + [[1000.0, 7.9], [-50.0, -8.0]]
    random = play("Pendulum", starts, lambda s, r: r.uniform(-3, 3, 1).astype(np.float32))  # beyond +-2: clipped
    spin = play("Pendulum", starts[:2], lambda s, r: np.array([2.0], np.float32))  # speed clipped at 8
    heavy = play("Pendulum", starts[:1], lambda s, r: r.uniform(-2, 2, 1).astype(np.float32), seed=10,
                 gym_kwargs={"g": 9.81}, fastvec_kwargs={"g_milli": 9810})
    assert random["truncated"] == len(starts) and spin["truncated"] == 2 and heavy["truncated"] == 1
    assert sum(c["transitions"] for c in (random, spin, heavy)) >= 1600


@pytest.mark.parametrize("name", ENVS)
def test_spaces_and_spec_match_gymnasium(name):
    gym_id = ENVS[name][0]
    env, ref = make_fastvec(name), gym.make(gym_id)
    assert env.observation_space == ref.observation_space
    assert env.action_space == ref.action_space
    key = ENVS[name][1]
    assert native.ENVS[key].max_episode_steps == gym.spec(gym_id).max_episode_steps
    assert gym.spec(f"fastvec/{name}").reward_threshold == gym.spec(gym_id).reward_threshold


@pytest.mark.parametrize("name", ENVS)
def test_reset_draws_gymnasiums_ranges_and_observation(name):
    """Reset states fill Gymnasium's reset ranges, and the first observation is Gymnasium's for that state."""
    low, high = {"CartPole": ([-0.05] * 4, [0.05] * 4), "Acrobot": ([-0.1] * 4, [0.1] * 4),
                 "MountainCar": ([-0.6, 0.0], [-0.4, 0.0]), "MountainCarContinuous": ([-0.6, 0.0], [-0.4, 0.0]),
                 "Pendulum": ([-np.pi, -1.0], [np.pi, 1.0])}[name]
    env, ref = make_fastvec(name), gym.make(ENVS[name][0]).unwrapped
    ref.reset(seed=0)
    states = []
    for seed in range(200):
        obs, _ = env.reset(seed=seed)
        state = env.unwrapped.state
        states.append(state)
        ref.state = state.astype(np.float32) if name == "Acrobot" else state  # Acrobot's reset state is float32
        expected = ref._get_obs() if name == "Pendulum" else ref._get_ob() if name == "Acrobot" else ref.state
        np.testing.assert_array_equal(bits(obs), bits(expected))
    states = np.array(states)
    assert np.all(states >= np.array(low)) and np.all(states <= np.array(high))
    spread = states.max(0) - states.min(0)
    assert np.all(spread >= 0.9 * (np.array(high) - np.array(low)))
    if name == "Acrobot":
        np.testing.assert_array_equal(states, states.astype(np.float32))


def test_state_round_trip_and_vector_state_access():
    envs = fastvec.make_vec("MountainCar", 3)
    envs.reset(seed=0)
    values = np.array([[-0.5, 0.01], [0.3, -0.02], [-1.2, 0.0]])
    envs.set_state(values)
    np.testing.assert_array_equal(envs.get_state(), values)
    obs, *_ = envs.step(np.array([1, 1, 1]))
    np.testing.assert_array_equal(obs, envs.get_state().astype(np.float32))


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="g_milli"):
        native.resolve_defines("pendulum", {"g_milli": -1})
    assert native.resolve_defines("pendulum", {})["G_MILLI"] == 10_000
    assert native.resolve_defines("acrobot", {"nips": 1})["NIPS"] == 1


@pytest.mark.parametrize("name", ["Acrobot", "MountainCar", "MountainCarContinuous", "Pendulum"])
def test_rgb_array_frames_have_gymnasiums_size_and_show_the_state(name):
    pytest.importorskip("pygame")  # Gymnasium's renderer, for the frame size
    ref = gym.make(ENVS[name][0], render_mode="rgb_array")
    ref.reset(seed=0)
    env = make_fastvec(name, render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    assert first.shape == ref.render().shape and first.dtype == np.uint8
    assert len(np.unique(first.reshape(-1, 3), axis=0)) >= 2  # more than the background
    state = env.unwrapped.state
    state[0] += 1.0  # another angle or position: another picture
    env.unwrapped.state = state
    assert not np.array_equal(env.render(), first)
