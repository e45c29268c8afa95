"""Env inputs (issue 19): every seed, step limit, option and action is checked before anything changes,
with a message that shows the value as given; closed envs raise Gymnasium's ClosedEnvironmentError; one
env object is stepped by one thread at a time, and a second thread gets a clear error, never lost steps.

"Unchanged" is checked against a twin: two envs made and reset alike, one of them given the refused call,
must then agree on their RNG state and on the observations of the next reset and steps."""

import re
import threading
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ClosedEnvironmentError

import fastvec
from fastvec import native
from fastvec.pettingzoo import env as aec_env
from fastvec.pettingzoo import parallel_env, vector_env

COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"
U64_MAX = 2**64 - 1
BIG_ACTION = 2**63 + 5  # a uint64 that reads as -9223372036854775803 when cast to int64


def counting(num_envs=1, **kw):
    return fastvec.make_vec_from_source(COUNTING, num_envs, terminate_at=1000, **kw)


# ------------------------------------------------------------------ twins: "nothing changed"
def _rng_state(env) -> dict:
    return env.unwrapped.np_random.bit_generator.state


def assert_vec_twins(a, b, steps=5):
    """a and b (vector envs) are in the same state: same RNG, same next reset (no seed: each env's own
    stream continues) and same next steps."""
    assert _rng_state(a) == _rng_state(b)
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
    actions = np.zeros(a.num_envs, np.int64)
    for t in range(steps):
        actions[:] = t % 2
        np.testing.assert_array_equal(a.step(actions)[0], b.step(actions)[0])


def vec_twins(n=3):
    a, b = (gym.make_vec("fastvec/CartPole", num_envs=n) for _ in range(2))
    for e in (a, b):
        e.reset(seed=11)
        e.step(np.ones(n, np.int64))
    return a, b


def single_twins():
    a, b = (gym.make("fastvec/CartPole") for _ in range(2))
    for e in (a, b):
        e.reset(seed=11)
        e.step(1)
    return a, b


def assert_single_twins(a, b, steps=5):
    assert _rng_state(a) == _rng_state(b)
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
    for t in range(steps):
        np.testing.assert_array_equal(a.step(t % 2)[0], b.step(t % 2)[0])


# ------------------------------------------------------------------ seeds
SCALAR_BAD_SEEDS = [
    (2**64, ValueError, r"seed=18446744073709551616 is out of range \[0, "),
    (-1, ValueError, r"seed=-1 is out of range"),
    (1.5, TypeError, r"seed=1\.5 is not an integer"),
    (2.0, TypeError, r"seed=2\.0 is not an integer"),
    ("abcd", TypeError, r"seed='abcd' is not an integer"),
    (True, TypeError, r"seed=True is not an integer"),
    (np.float64(3.0), TypeError, r"seed=np\.float64\(3\.0\) is not an integer"),
]
LIST_BAD_SEEDS = [  # for 3 envs
    ([1.5, 2, 3], TypeError, r"seed\[0\]=1\.5 is not an integer"),
    ([0, 1, 2.0], TypeError, r"seed\[2\]=2\.0 is not an integer"),
    ([0, 2**64, 1], ValueError, r"seed\[1\]=18446744073709551616 is out of range \[0, 2\*\*64-1\]"),
    ([0, -1, 1], ValueError, r"seed\[1\]=-1 is out of range"),
    ([0, True, 1], TypeError, r"seed\[1\]=True is not an integer"),
    ([0, "1", 2], TypeError, r"seed\[1\]='1' is not an integer"),
    (np.array([0.5, 1.0, 2.0]), TypeError, r"seed\[0\]=0\.5 is not an integer"),
    ({0: 1, 1: 2, 2: 3}, TypeError, r"seed=\{0: 1, 1: 2, 2: 3\} is not an integer"),
    ([0, 1], ValueError, r"length must match num_envs=3"),
    # env i gets seed + i: with 3 envs the last base seed is 2**64 - 3 (env 2 at 2**64 - 1)
    (2**64 - 2, ValueError, r"seed=18446744073709551614 is out of range \[0, 18446744073709551613\]"),
]


@pytest.mark.parametrize("seed,error,message", SCALAR_BAD_SEEDS + LIST_BAD_SEEDS)
def test_vector_reset_refuses_bad_seeds_and_changes_nothing(seed, error, message):
    a, b = vec_twins(3)
    with pytest.raises(error, match=message):
        a.reset(seed=seed)
    assert_vec_twins(a, b)


@pytest.mark.parametrize("seed,error,message", SCALAR_BAD_SEEDS)
def test_single_reset_refuses_bad_seeds_and_changes_nothing(seed, error, message):
    a, b = single_twins()
    with pytest.raises(error, match=message):
        a.reset(seed=seed)
    assert_single_twins(a, b)


def test_base_seed_whose_per_env_seeds_overflow_is_refused_not_wrapped():
    """seed=2**64-1 for 2 envs once wrapped env 1 to seed 0, so it repeated env 0's seed-0 stream."""
    envs = gym.make_vec("fastvec/CartPole", num_envs=2)
    with pytest.raises(ValueError, match=r"seed=18446744073709551615 is out of range \[0, 18446744073709551614\]"):
        envs.reset(seed=U64_MAX)
    obs, _ = envs.reset(seed=U64_MAX - 1)  # the largest base seed for 2 envs: env 1 gets 2**64 - 1
    one = gym.make("fastvec/CartPole")
    np.testing.assert_array_equal(obs[1], one.reset(seed=U64_MAX)[0])
    np.testing.assert_array_equal(obs[0], one.reset(seed=U64_MAX - 1)[0])
    assert not np.array_equal(obs[1], one.reset(seed=0)[0])


def test_numpy_integer_seeds_are_the_same_seeds():
    ref = gym.make_vec("fastvec/CartPole", num_envs=3).reset(seed=7)[0]
    for seed in (np.int64(7), np.uint64(7), np.int32(7)):
        np.testing.assert_array_equal(gym.make_vec("fastvec/CartPole", num_envs=3).reset(seed=seed)[0], ref)
    seeds = [np.uint64(7), 8, np.int16(9)]
    np.testing.assert_array_equal(gym.make_vec("fastvec/CartPole", num_envs=3).reset(seed=seeds)[0], ref)
    np.testing.assert_array_equal(gym.make_vec("fastvec/CartPole", num_envs=3).reset(seed=np.arange(7, 10))[0], ref)
    single = gym.make("fastvec/CartPole")
    np.testing.assert_array_equal(single.reset(seed=np.int64(8))[0], ref[1])
    np.testing.assert_array_equal(single.reset(seed=np.uint64(U64_MAX))[0], single.reset(seed=U64_MAX)[0])


@pytest.mark.parametrize("seed,error,message", SCALAR_BAD_SEEDS + LIST_BAD_SEEDS)
def test_multi_agent_vector_reset_refuses_bad_seeds(seed, error, message):
    message = message.replace("num_envs=3", "num_games=3")
    a, b = (vector_env("Pong", 3) for _ in range(2))
    for e in (a, b):
        e.reset(seed=11)
    with pytest.raises(error, match=message):
        a.reset(seed=seed)
    assert_vec_twins(a, b)


def test_multi_agent_vector_list_seeds_may_hold_none():
    a = vector_env("Pong", 2)
    first, _ = a.reset(seed=[5, None])
    np.testing.assert_array_equal(first[:2], vector_env("Pong", 1).reset(seed=5)[0])


@pytest.mark.parametrize("seed,error,message", SCALAR_BAD_SEEDS)
def test_parallel_reset_refuses_bad_seeds(seed, error, message):
    a, b = parallel_env("Pong"), parallel_env("Pong")
    for e in (a, b):
        e.reset(seed=11)
    with pytest.raises(error, match=message):
        a.reset(seed=seed)
    for _ in range(5):
        oa, *_ = a.step({"left": 1, "right": 2})
        ob, *_ = b.step({"left": 1, "right": 2})
        np.testing.assert_array_equal(oa["left"], ob["left"])


# ------------------------------------------------------------------ options
@pytest.mark.parametrize("options", [5, "reset_mask", [1, 2]])
def test_options_must_be_a_dict(options):
    shown = repr(options).replace("[", r"\[").replace("]", r"\]")
    a, b = vec_twins(3)
    with pytest.raises(TypeError, match=rf"options={shown} must be a dict or None"):
        a.reset(seed=3, options=options)
    assert_vec_twins(a, b)
    s, t = single_twins()
    with pytest.raises(TypeError, match=rf"options={shown} must be a dict or None"):
        s.reset(seed=3, options=options)
    assert_single_twins(s, t)
    with pytest.raises(TypeError, match=rf"options={shown} must be a dict or None"):
        parallel_env("Pong").reset(seed=3, options=options)
    with pytest.raises(TypeError, match=rf"options={shown} must be a dict or None"):
        vector_env("Pong", 2).reset(seed=3, options=options)


def test_a_refused_reset_mask_leaves_the_rng_alone():
    """The mask is checked before a seed reseeds anything (it used to reseed np_random, then refuse)."""
    a, b = vec_twins(3)
    with pytest.raises(ValueError, match="reset_mask"):
        a.reset(seed=9, options={"reset_mask": np.ones(2, np.bool_)})
    assert_vec_twins(a, b)


# ------------------------------------------------------------------ max_episode_steps
@pytest.mark.parametrize("limit,error,message", [
    (2**32 + 3, ValueError, r"max_episode_steps=4294967299 is out of range \[1, 2\*\*31-1\]"),  # truncated at 3
    (2**31, ValueError, r"max_episode_steps=2147483648 is out of range \[1, 2\*\*31-1\]"),  # never truncated
    (0, ValueError, r"max_episode_steps=0 is out of range"),
    (-5, ValueError, r"max_episode_steps=-5 is out of range"),
    (3.5, TypeError, r"max_episode_steps=3\.5 is not an integer"),
    (3.0, TypeError, r"max_episode_steps=3\.0 is not an integer"),
    (True, TypeError, r"max_episode_steps=True is not an integer"),
    ("10", TypeError, r"max_episode_steps='10' is not an integer"),
])
def test_max_episode_steps_checked(limit, error, message):
    with pytest.raises(error, match=message):
        gym.make_vec("fastvec/CartPole", num_envs=2, max_episode_steps=limit)
    with pytest.raises(error, match=message):
        counting(2, max_episode_steps=limit)
    with pytest.raises(error, match=message.replace("max_episode_steps", "max_cycles")):
        parallel_env("Pong", max_cycles=limit)
    with pytest.raises(error, match=message.replace("max_episode_steps", "max_cycles")):
        vector_env("Pong", 2, max_cycles=limit)
    envs = counting(2, max_episode_steps=5)
    with pytest.raises(error, match=message):
        envs.set_attr("max_episode_steps", limit)
    assert envs.max_episode_steps == 5


def test_max_episode_steps_at_the_c_limit_and_numpy_ints():
    envs = counting(1, max_episode_steps=2**31 - 1)
    envs.reset(seed=0)
    for _ in range(5):
        *_, trunc, _ = envs.step(np.zeros(1, np.int64))
        assert not trunc.any()
    envs = counting(1, max_episode_steps=np.int64(3))
    assert envs.max_episode_steps == 3 and type(envs.max_episode_steps) is int
    envs.reset(seed=0)
    assert [bool(envs.step(np.zeros(1, np.int64))[3][0]) for _ in range(3)] == [False, False, True]


def test_set_attr_max_episode_steps_takes_effect():
    """It used to set a Python attribute that the batch never read."""
    envs = counting(2, max_episode_steps=100)
    envs.set_attr("max_episode_steps", 2)
    envs.reset(seed=0)
    assert [bool(envs.step(np.zeros(2, np.int64))[3][0]) for _ in range(2)] == [False, True]


def test_registry_refuses_step_limits_the_c_side_cannot_hold():
    with pytest.raises(ValueError, match=r"max_episode_steps=2147483648 is out of range"):
        native.NativeEnvInfo("x.h", "fastvec/X", 2**31)
    assert native.NativeEnvInfo("x.h", "fastvec/X", None).max_episode_steps is None


# ------------------------------------------------------------------ actions
def test_big_unsigned_actions_reported_as_given():
    msg = rf"action {BIG_ACTION} out of range for Discrete\(2\) at env 1"
    a, b = vec_twins(3)
    with pytest.raises(ValueError, match=msg):
        a.step(np.array([0, BIG_ACTION, 1], np.uint64))
    assert_vec_twins(a, b)
    s, t = single_twins()
    with pytest.raises(ValueError, match=rf"action {BIG_ACTION} out of range for Discrete\(2\)"):
        s.step(np.uint64(BIG_ACTION))
    assert_single_twins(s, t)
    with pytest.raises(ValueError, match=rf"action {BIG_ACTION} out of range"):
        _reset_then(vector_env("Pong", 1)).step(np.array([0, BIG_ACTION], np.uint64))
    ok = gym.make_vec("fastvec/CartPole", num_envs=3)
    ok.reset(seed=0)
    ok.step(np.array([0, 1, 1], np.uint64))  # in range: fine


def _reset_then(e):
    e.reset(seed=0)
    return e


def test_sb3_big_unsigned_actions_reported_as_given():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    envs = FastvecVecEnv("fastvec/CartPole", 3)
    envs.reset()
    with pytest.raises(ValueError, match=rf"action {BIG_ACTION} out of range for Discrete\(2\) at env 2"):
        envs.step(np.array([0, 1, BIG_ACTION], np.uint64))
    envs.step(np.array([0, 1, 1], np.uint64))


@pytest.mark.parametrize("action,message", [(1.0, "action 1.0 is not an integer"),
                                            (True, "action True is not an integer"),
                                            ("1", "action '1' is not an integer")])
def test_single_env_action_types(action, message):
    s, t = single_twins()
    with pytest.raises(TypeError, match=message):
        s.step(action)
    assert_single_twins(s, t)


@pytest.mark.parametrize("name,given", [("fastvec/Pendulum", np.zeros(4, np.float32)),
                                        ("fastvec/Pendulum", np.zeros((8, 2), np.float32)),
                                        ("fastvec/CartPole", np.zeros(4, np.int64))])
def test_wrong_action_shape_names_the_action_space_shape(name, given):
    """The message names the vector action_space's own shape (Pendulum's is (8, 1)) and the others accepted."""
    envs = gym.make_vec(name, 8)
    envs.reset(seed=0)
    accepted = [envs.action_space.shape, (8,) if len(envs.action_space.shape) == 2 else (8, 1)]
    with pytest.raises(ValueError, match=r"actions must have shape " + r" or ".join(
            re.escape(str(shape)) for shape in accepted) + re.escape(f" for 8 envs of {envs.single_action_space}, got {given.shape}")):
        envs.step(given)
    for shape in accepted:  # every shape the message names is taken
        envs.step(np.zeros(shape, given.dtype))


def test_wrong_device_action_shape_names_every_shape_taken():
    """The GPU batch's shape check, run without a GPU: Pendulum's (N, 1, 1) layout takes (N,), (N, 1) and
    (N, 1, 1), and the message names all three (the Gymnasium space's (N, 1) among them)."""
    from types import SimpleNamespace

    from fastvec.native.cuda import CudaBatch
    batch = SimpleNamespace(_action_axes=(8, 1, 1), num_envs=8,
                            env=SimpleNamespace(spaces=SimpleNamespace(describe=lambda: "Box(-2.0, 2.0, (1,), float32)")))
    with pytest.raises(ValueError, match=re.escape("must have shape (8,) or (8, 1) or (8, 1, 1) for 8 envs of Box(")):
        CudaBatch._kept_axes(batch, (4,))
    assert CudaBatch._kept_axes(batch, (8, 1)) in ([0, 1], [0, 2])


# ------------------------------------------------------------------ closed envs
@pytest.mark.parametrize("make", [lambda **kw: gym.make_vec("fastvec/CartPole", num_envs=2, **kw),
                                  lambda **kw: vector_env("Pong", 2, **kw)], ids=["vector_env", "multi_agent"])
def test_device_arrays_of_a_cpu_env_are_refused_naming_the_fix(make):
    """array_type='device' (views of GPU buffers) needs device='cuda'; on a CPU env it is refused, saying so,
    as is an array type that is neither 'numpy' nor 'device'."""
    with pytest.raises(ValueError, match=r"array_type='device' needs (a GPU env|GPU games): pass device='cuda'"):
        make(array_type="device")
    with pytest.raises(ValueError, match=r"array_type='torch' is not one of 'numpy', 'device'"):
        make(array_type="torch")
    make(array_type="numpy").close()


@pytest.mark.parametrize("entry_point", ["CartPoleVectorEnv", "PongVectorEnv", "Breakout-MinAtarVectorEnv"])
def test_a_vector_entry_point_made_bare_is_one_env_as_gymnasiums_make_vec(entry_point):
    """The Gymnasium vector entry points take num_envs=1 by default, as gymnasium.make_vec does: one env, the
    same as make_vec's of the same id and seed."""
    from fastvec.wrappers import gymnasium as faces
    envs = getattr(faces, entry_point)()
    oracle = gym.make_vec(f"fastvec/{entry_point.removesuffix('VectorEnv')}")
    assert envs.num_envs == oracle.num_envs == 1
    np.testing.assert_array_equal(envs.reset(seed=3)[0], oracle.reset(seed=3)[0])
    envs.close()


def test_the_multi_agent_vector_envs_seed_list_with_nones_reseeds_only_the_given_games():
    """reset(seed=[None, 5, None]) after the first reset: game 1 starts as a game seeded with 5 does, games 0 and 2
    continue their own streams as a reset without a seed would (SyncVectorEnv's rule for a list with None)."""
    a, b = vector_env("simple_spread", 3), vector_env("simple_spread", 3)
    a.reset(seed=1)
    b.reset(seed=1)
    obs, _ = a.reset(seed=[None, 5, None])
    rows = obs.reshape(3, -1, obs.shape[-1])
    continued = b.reset()[0].reshape(3, -1, obs.shape[-1])
    seeded = vector_env("simple_spread", 3).reset(seed=[0, 5, 0])[0].reshape(3, -1, obs.shape[-1])
    np.testing.assert_array_equal(rows[[0, 2]], continued[[0, 2]])
    np.testing.assert_array_equal(rows[1], seeded[1])
    assert not np.array_equal(rows[1], continued[1])
    for game in (0, 2):  # a continued stream: neither its first episode's start again nor any fixed seed's
        assert not np.array_equal(rows[game], seeded[game])
        assert not np.array_equal(rows[game], vector_env("simple_spread", 3).reset(seed=1)[0].reshape(rows.shape)[game])


def test_closed_single_env():
    env = gym.make("fastvec/CartPole", render_mode="rgb_array")
    env.reset(seed=0)
    env.close()
    for call in (lambda: env.reset(), lambda: env.reset(seed=1), lambda: env.step(0), lambda: env.render()):
        with pytest.raises(ClosedEnvironmentError, match="closed"):
            call()
    env.close()  # idempotent


def test_closed_vector_envs():
    envs = gym.make_vec("fastvec/CartPole", num_envs=2, render_mode="rgb_array")
    envs.reset(seed=0)
    envs.close()
    for call in (lambda: envs.reset(), lambda: envs.step(np.zeros(2, np.int64)), lambda: envs.render()):
        with pytest.raises(ClosedEnvironmentError):
            call()
    multi = vector_env("Pong", 2, render_mode="rgb_array")
    multi.reset(seed=0)
    multi.close()
    for call in (lambda: multi.reset(), lambda: multi.step(np.zeros(4, np.int64)), lambda: multi.render()):
        with pytest.raises(ClosedEnvironmentError):
            call()
    envs.close()  # idempotent, as Gymnasium's vector envs
    multi.close()


def test_closed_pettingzoo_envs():
    par = parallel_env("Pong", render_mode="rgb_array")
    par.reset(seed=0)
    par.close()
    for call in (lambda: par.reset(), lambda: par.step({"left": 0, "right": 0}), lambda: par.render()):
        with pytest.raises(ClosedEnvironmentError):
            call()
    aec = aec_env("Pong", render_mode="rgb_array")
    aec.reset(seed=0)
    aec.close()
    for call in (lambda: aec.reset(), lambda: aec.render()):
        with pytest.raises(ClosedEnvironmentError):
            call()
    par.close()  # idempotent
    aec.close()


def test_closed_sb3_and_torch_envs():
    pytest.importorskip("stable_baselines3")
    from fastvec.wrappers.sb3 import FastvecVecEnv

    envs = FastvecVecEnv("fastvec/CartPole", 2, render_mode="rgb_array")
    envs.reset()
    envs.close()
    for call in (lambda: envs.reset(), lambda: envs.step(np.zeros(2, np.int64)), lambda: envs.get_images()):
        with pytest.raises(ClosedEnvironmentError):
            call()
    with pytest.raises(RuntimeError):  # still a RuntimeError, as before
        envs.step(np.zeros(2, np.int64))
    envs.close()  # idempotent
    pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv

    tenvs = TorchVectorEnv(gym.make_vec("fastvec/CartPole", num_envs=2))
    tenvs.reset(seed=0)
    tenvs.close()
    for call in (lambda: tenvs.reset(), lambda: tenvs.step(np.zeros(2, np.int64))):
        with pytest.raises(ClosedEnvironmentError):
            call()


# ------------------------------------------------------------------ one thread at a time
class BlockingActions:
    """Actions that hold the step that reads them until released: a step in progress, on demand."""

    def __init__(self, actions):
        self.actions, self.entered, self.release = np.asarray(actions), threading.Event(), threading.Event()

    def __array__(self, dtype=None, copy=None):
        self.entered.set()
        assert self.release.wait(10)
        return self.actions if dtype is None else self.actions.astype(dtype)


def _while_stepping(step, actions, calls):
    """Run step(blocker) in a thread; while it is inside, run each of calls and collect what they raise."""
    blocker, result = BlockingActions(actions), {}
    worker = threading.Thread(target=lambda: result.setdefault("out", step(blocker)))
    worker.start()
    assert blocker.entered.wait(10)
    errors = []
    for call in calls:
        try:
            call()
            errors.append(None)
        except RuntimeError as err:
            errors.append(err)
    blocker.release.set()
    worker.join(10)
    assert "out" in result  # the first thread's step completed
    return errors


TWO_THREADS = "stepped from two threads at once; use one env object per thread"


def test_vector_env_refuses_a_second_thread():
    envs = gym.make_vec("fastvec/CartPole", num_envs=2)
    envs.reset(seed=0)
    errors = _while_stepping(envs.step, [0, 1], [lambda: envs.step(np.zeros(2, np.int64)), lambda: envs.reset()])
    assert all(e is not None and TWO_THREADS in str(e) for e in errors), errors
    envs.step(np.zeros(2, np.int64))  # usable afterwards: the lock was released


def test_single_env_refuses_a_second_thread():
    env = gym.make("fastvec/CartPole").unwrapped
    env.reset(seed=0)
    # (an action array of shape (1,): NumPy reads a 0-d __array__ inside a list as a scalar, not an array)
    errors = _while_stepping(env.step, [1], [lambda: env.step(0), lambda: env.reset()])
    assert all(e is not None and TWO_THREADS in str(e) for e in errors), errors
    env.step(0)


def test_multi_agent_vector_env_refuses_a_second_thread():
    envs = vector_env("Pong", 1)
    envs.reset(seed=0)
    errors = _while_stepping(envs.step, [0, 1], [lambda: envs.step(np.zeros(2, np.int64)), lambda: envs.reset()])
    assert all(e is not None and TWO_THREADS in str(e) for e in errors), errors


def test_parallel_env_refuses_a_second_thread():
    par = parallel_env("Pong")
    par.reset(seed=0)

    class BlockingDict(dict):
        def __iter__(self):
            self.entered.set()
            assert self.release.wait(10)
            return super().__iter__()

    actions = BlockingDict(left=0, right=1)
    actions.entered, actions.release = threading.Event(), threading.Event()
    worker = threading.Thread(target=par.step, args=(actions,))
    worker.start()
    assert actions.entered.wait(10)
    with pytest.raises(RuntimeError, match=TWO_THREADS):
        par.step({"left": 0, "right": 0})
    with pytest.raises(RuntimeError, match=TWO_THREADS):
        par.reset()
    actions.release.set()
    worker.join(10)
    par.step({"left": 0, "right": 0})


def test_concurrent_steps_never_lose_steps():
    """Two threads hammer one env: every step either happens whole or is refused, so each env's count
    equals the number of steps that returned (it used to fall behind: steps lost in a data race)."""
    envs = counting(20_000, max_episode_steps=None)
    envs.reset(seed=0)
    done, start = [0, 0], threading.Barrier(2)

    def hammer(k):
        actions = np.zeros(envs.num_envs, np.int64)
        start.wait()
        for _ in range(100):
            try:
                envs.step(actions)
                done[k] += 1
            except RuntimeError as err:
                assert TWO_THREADS in str(err)

    threads = [threading.Thread(target=hammer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    obs = envs.step(np.zeros(envs.num_envs, np.int64))[0]
    assert (obs[:, 0] == sum(done) + 1).all(), (sum(done), np.unique(obs[:, 0]))


def test_the_vector_envs_construction_arguments_are_checked_naming_the_choices():
    """num_envs is a positive int (not a bool or float, at most batch.h's C int); autoreset_mode an AutoresetMode or
    its value string, as Gymnasium's vector envs take it; render_mode None or rgb_array; array_type numpy or
    device. Each refusal names what is taken."""
    from gymnasium.vector import AutoresetMode

    for bad in (0, -1, True, 1.5, 2**31):
        with pytest.raises(ValueError, match=rf"num_envs must be a positive int \(at most 2\*\*31-1\), got {bad!r}"):
            gym.make_vec("fastvec/CartPole", num_envs=bad)
    for mode in AutoresetMode:
        envs = gym.make_vec("fastvec/CartPole", num_envs=1, autoreset_mode=mode.value)
        assert envs.metadata["autoreset_mode"] is mode and envs.autoreset_mode is mode
    choices = "AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED"
    with pytest.raises(ValueError, match=rf"autoreset_mode='same_step' is not one of {choices}"):
        gym.make_vec("fastvec/CartPole", num_envs=1, autoreset_mode="same_step")
    with pytest.raises(ValueError, match="render_mode='human' is not supported by a vector env; use None or 'rgb_array'"):
        gym.make_vec("fastvec/CartPole", num_envs=1, render_mode="human")
    with pytest.raises(ValueError, match="array_type='jax' is not one of 'numpy', 'device'"):
        gym.make_vec("fastvec/CartPole", num_envs=1, array_type="jax")


def test_a_multi_discrete_envs_actions_of_one_value_per_env_are_refused_naming_its_shape():
    """MultiDiscrete([3 5]) takes (N, 2) actions: an (N,) int64 array, the dtype and shape a Discrete env takes
    unchecked, is refused naming the shape wanted, nothing stepped."""
    envs = fastvec.make_vec_from_source(Path(__file__).resolve().parents[1] / "envs" / "multi_discrete.h", 3)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape("actions must have shape (3, 2) for 3 envs of MultiDiscrete([3 5]), "
                                                   "got (3,)")):
        envs.step(np.zeros(3, np.int64))
    envs.step(np.zeros((3, 2), np.int64))


def test_disabled_autoreset_names_at_most_ten_of_the_envs_to_reset():
    """Stepping a DISABLED vector env whose envs ended names the first ten of them in the error (not every one of a
    large batch), and a partial reset of those envs lets it step on."""
    from gymnasium.vector import AutoresetMode

    envs = gym.make_vec("fastvec/CartPole", num_envs=12, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=1)
    envs.reset(seed=0)
    envs.step(np.zeros(12, np.int64))  # every episode truncated after one step
    with pytest.raises(RuntimeError, match=re.escape("envs [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] ended and autoreset_mode "
                                                     "is DISABLED")):
        envs.step(np.zeros(12, np.int64))
    envs.reset(options={"reset_mask": np.ones(12, np.bool_)})
    envs.step(np.zeros(12, np.int64))


def test_disabled_autoreset_a_partial_reset_clears_only_the_masked_envs_flags():
    """Under DISABLED, a reset_mask reset of some of the ended envs leaves the others still to be reset: stepping
    names exactly those, and once they are reset too the batch steps on."""
    from gymnasium.vector import AutoresetMode

    envs = gym.make_vec("fastvec/CartPole", num_envs=4, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=1)
    envs.reset(seed=0)
    envs.step(np.zeros(4, np.int64))  # every episode truncated after one step
    envs.reset(options={"reset_mask": np.array([True, False, True, False])})
    with pytest.raises(RuntimeError, match=re.escape("envs [1, 3] ended and autoreset_mode is DISABLED")):
        envs.step(np.zeros(4, np.int64))
    envs.reset(options={"reset_mask": np.array([False, True, False, True])})
    _, _, _, trunc, _ = envs.step(np.zeros(4, np.int64))
    assert trunc.tolist() == [True] * 4
    envs.close()


# ------------------------------------------------------------------ the device-array step's copy choice
class _HostBatchAsDevice:
    """The CPU batch handing out its own buffers as a GPU batch hands out its device arrays (host_arrays False):
    the face's device-array step, whose copy choice is the face's own, runs over it without a GPU."""

    host_arrays = False

    def __init__(self, batch):
        self._batch = batch

    def __getattr__(self, name):
        return getattr(self._batch, name)

    @property
    def done(self):
        return self._batch.terminated | self._batch.truncated

    def step(self, actions):
        return self._batch.step(np.asarray(actions, np.int64).reshape(self._batch.actions.shape))


@pytest.mark.parametrize("copy", [True, False])
def test_the_device_array_step_hands_out_copies_exactly_when_copy_is_set(monkeypatch, copy):
    """With device arrays, copy=True returns arrays of their own (the next step leaves them as they were:
    Gymnasium's copy contract), copy=False the batch's own buffers (the next step writes them); CartPole's
    reset obs and step obs, rewards, terminations and truncations alike."""
    from fastvec.wrappers import gymnasium as face

    real = face.load_batch
    monkeypatch.setattr(face, "load_batch", lambda *a, **kw: _HostBatchAsDevice(real(*a, **{**kw, "device": "cpu"})))
    envs = fastvec.make_vec("CartPole", 4, device="cuda", array_type="device", copy=copy)
    inner = envs.batch._batch
    first, _ = envs.reset(seed=7)
    assert np.shares_memory(first, inner.obs) is not copy
    obs, rewards, terminated, truncated, _ = envs.step(np.ones(4, np.int64))
    outputs = (obs, rewards, terminated, truncated)
    buffers = (inner.obs.reshape(4, -1), inner.rewards.reshape(4), inner.terminated, inner.truncated)
    for got, buffer in zip(outputs, buffers):
        np.testing.assert_array_equal(got, buffer)
        assert np.shares_memory(got, buffer) is not copy
    kept = [np.array(a, copy=True) for a in outputs]
    for _ in range(12):  # pushed right until every pole falls: the flags change too
        envs.step(np.ones(4, np.int64))
    assert not np.array_equal(inner.obs.reshape(4, -1), kept[0])
    for got, before in zip(outputs, kept):
        if copy:
            np.testing.assert_array_equal(got, before)
    if not copy:
        np.testing.assert_array_equal(outputs[0], inner.obs.reshape(4, -1))
    envs.close()


def test_the_largest_env_and_game_counts_pass_the_count_check():
    """2**31-1 (batch.h's C int) is the largest count taken: the vector faces' count checks let it through (the
    next check, render_mode, is the one that refuses here, so nothing that large is built) and refuse 2**31."""
    human = "render_mode='human' is not supported by a vector env"
    with pytest.raises(ValueError, match=human):
        vector_env("Pong", 2**31 - 1, render_mode="human")
    with pytest.raises(ValueError, match=human):
        gym.make_vec("fastvec/CartPole", num_envs=2**31 - 1, render_mode="human")
    with pytest.raises(ValueError, match=r"num_games must be a positive int \(at most 2\*\*31-1\), got 2147483648"):
        vector_env("Pong", 2**31, render_mode="human")
    with pytest.raises(ValueError, match=r"num_envs must be a positive int \(at most 2\*\*31-1\), got 2147483648"):
        gym.make_vec("fastvec/CartPole", num_envs=2**31, render_mode="human")
