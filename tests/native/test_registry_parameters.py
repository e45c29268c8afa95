"""The built-in envs' parameters as users meet them: each is accepted at both ends of its range and refused
just outside naming the range; the ranges are what the parameters mean (a 0/1 switch, a probability in
thousandths, the bot's documented levels, Gymnasium's physical bounds) and the defaults Gymnasium's own."""

import re

import numpy as np
import pytest
from gymnasium.envs.classic_control import Continuous_MountainCarEnv, MountainCarEnv, PendulumEnv

from fastvec import native

PARAMS = [(env, key) for env, info in native.ENVS.items() for key in info.params]


@pytest.mark.parametrize("env,key", PARAMS, ids=[f"{e}-{k}" for e, k in PARAMS])
def test_a_parameter_is_taken_at_both_ends_of_its_range_and_refused_past_them(env, key):
    spec = native.ENVS[env].params[key]
    assert spec.low <= spec.default <= spec.high
    assert native.resolve_defines(env, {})[key.upper()] == spec.default
    for value in (spec.low, spec.high):
        assert native.resolve_defines(env, {key: value})[key.upper()] == value
        assert native.resolve_defines(env, {key: np.int64(value)})[key.upper()] == value
    for value in (spec.low - 1, spec.high + 1):
        with pytest.raises(ValueError, match=rf"{key}={value} for '{env}' is out of range \[{spec.low}, {spec.high}\]"):
            native.resolve_defines(env, {key: value})
    with pytest.raises(TypeError, match=rf"{key}=0.5 for '{env}' must be an int in \[{spec.low}, {spec.high}\]"):
        native.resolve_defines(env, {key: 0.5})


def test_switches_are_zero_or_one_and_probabilities_thousandths():
    for env, key in PARAMS:
        spec = native.ENVS[env].params[key]
        if spec.doc.startswith("1:"):
            assert (spec.low, spec.high) == (0, 1) and spec.default in (0, 1), (env, key)
            assert native.resolve_defines(env, {key: True})[key.upper()] == 1
        if "probability, in thousandths" in spec.doc:
            assert (spec.low, spec.high) == (0, 1000), (env, key)
        levels = re.search(r"(\d+) \(easy\) to (\d+) \(hard\)", spec.doc)
        if levels:
            assert (spec.low, spec.high) == tuple(map(int, levels.groups())), (env, key)


def test_classic_control_parameters_are_gymnasiums_in_integer_units():
    for env, cls in (("mountaincar", MountainCarEnv), ("mountaincarcontinuous", Continuous_MountainCarEnv)):
        spec = native.ENVS[env].params["goal_velocity_micro"]
        reference = cls()
        assert spec.default == round(reference.goal_velocity * 1e6)
        assert (spec.low, spec.high) == (round(-reference.max_speed * 1e6), round(reference.max_speed * 1e6))
    assert native.ENVS["pendulum"].params["g_milli"].default == round(PendulumEnv().g * 1000)


def test_an_unknown_parameter_is_refused_naming_the_known_ones():
    with pytest.raises(TypeError, match=r"unknown keyword\(s\) \['frame_skip'\] for fastvec env 'breakout'; "
                                        r"its parameters are: frameskip"):
        native.resolve_defines("breakout", {"frame_skip": 2})
    with pytest.raises(KeyError, match="unknown fastvec env 'nope'"):
        native.resolve_defines("nope", {})


# The published contract of every built-in env: its Gymnasium id, step limit, frame rate (the speed of every
# video a user records) and each parameter's (default, low, high). A run config or a sweep range written
# against these stays valid: a changed default changes an unchanged config's game, a narrowed range refuses it.
CONTRACT = {
    "cartpole": ("fastvec/CartPole", 500, 50, {"float32": (0, 0, 1), "sutton_barto_reward": (0, 0, 1)}),
    "breakout": ("fastvec/Breakout", 10000, 15, {"frameskip": (4, 1, 8)}),
    "pong": ("fastvec/Pong", 20000, 30, {"points": (21, 1, 99), "return_bonus_milli": (0, 0, 1000),
                                         "pong_bot": (0, 0, 1), "bot_level": (2, 0, 4)}),
    "acrobot": ("fastvec/Acrobot", 500, 15, {"nips": (0, 0, 1), "float32": (0, 0, 1)}),
    "mountaincar": ("fastvec/MountainCar", 200, 30, {"goal_velocity_micro": (0, -70000, 70000),
                                                     "float32": (0, 0, 1)}),
    "mountaincarcontinuous": ("fastvec/MountainCarContinuous", 999, 30, {"goal_velocity_micro": (0, -70000, 70000),
                                                                         "float32": (0, 0, 1)}),
    "pendulum": ("fastvec/Pendulum", 200, 30, {"g_milli": (10000, 0, 1000000), "float32": (0, 0, 1)}),
    **{f"{game.lower()}-minatar": (f"fastvec/{game}-MinAtar", None, 20,
                                   {"sticky_action_milli": (100, 0, 1000), "difficulty_ramping": (1, 0, 1),
                                    "minimal_action_set": (1, 0, 1)})
       for game in ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")},
}


def test_the_registry_is_the_published_contract():
    assert sorted(native.ENVS) == sorted(CONTRACT)
    for env, (gym_id, limit, fps, params) in CONTRACT.items():
        info = native.ENVS[env]
        assert (info.gym_id, info.max_episode_steps, info.render_fps) == (gym_id, limit, fps), env
        assert {k: (p.default, p.low, p.high) for k, p in info.params.items()} == params, env


@pytest.mark.parametrize("env", sorted(CONTRACT))
def test_the_published_ranges_are_taken_and_refused_past_their_ends(env):
    _, _, _, params = CONTRACT[env]
    assert native.resolve_defines(env, {}) == {k.upper(): d for k, (d, _, _) in params.items()}
    for key, (_, low, high) in params.items():
        assert native.resolve_defines(env, {key: low})[key.upper()] == low
        assert native.resolve_defines(env, {key: high})[key.upper()] == high
        for value in (low - 1, high + 1):
            with pytest.raises(ValueError, match=rf"out of range \[{low}, {high}\]"):
                native.resolve_defines(env, {key: value})


@pytest.mark.parametrize("env", sorted(CONTRACT))
def test_gymnasium_registrations_carry_the_published_limit_and_frame_rate(env):
    import gymnasium

    import fastvec  # noqa: F401  (registers the ids)

    gym_id, limit, fps, _ = CONTRACT[env]
    assert gymnasium.spec(gym_id).max_episode_steps == limit
    e = gymnasium.make(gym_id, render_mode="rgb_array")
    try:
        assert e.metadata["render_fps"] == fps
    finally:
        e.close()


def test_seeds_for_a_batch_are_gymnasiums_seed_plus_i_or_one_per_env():
    """check_seeds, as every face's reset takes seeds (SyncVectorEnv's rules): None seeds nothing; an int seeds
    env i with seed + i and must leave room below 2**64; a list, tuple or array holds one int or None per env
    (its length Gymnasium's message); sets, floats, bools and negative seeds are refused before anything."""
    base, seeds, given = native.check_seeds(None, 3)
    assert base is None and seeds.tolist() == [0, 0, 0] and given.tolist() == [False] * 3
    base, seeds, given = native.check_seeds(np.int64(7), 3)
    assert base == 7 and seeds.dtype == np.uint64 and seeds.tolist() == [7, 8, 9] and given.all()
    assert native.check_seeds(np.array(5), 2)[1].tolist() == [5, 6]  # a 0-d array is its value
    top = 2**64 - 3
    assert native.check_seeds(top, 3)[1].tolist() == [top, top + 1, top + 2]
    with pytest.raises(ValueError, match=r"with 3 envs seed must be at most 2\*\*64 - 3"):
        native.check_seeds(top + 1, 3)
    assert native.check_seeds(2**64 - 1, 1)[1].tolist() == [2**64 - 1]
    with pytest.raises(ValueError, match=r"seed=-1 is out of range \[0, 2\*\*64-1\]$"):
        native.check_seeds(-1, 1)
    base, seeds, given = native.check_seeds([4, None, np.uint64(2**64 - 1)], 3)
    assert base is None and seeds.tolist() == [4, 0, 2**64 - 1] and given.tolist() == [True, False, True]
    assert native.check_seeds((1, 2), 2, unit="game")[1].tolist() == [1, 2]
    assert native.check_seeds(np.array([3, 4]), 2)[1].tolist() == [3, 4]
    with pytest.raises(ValueError, match="the length must match num_games=2 but got length=3"):
        native.check_seeds([1, 2, 3], 2, unit="game")
    with pytest.raises(ValueError, match=r"seed\[1\]=-2 is out of range"):
        native.check_seeds([1, -2], 2)
    for bad in ({1, 2}, 1.0, True, "3"):
        with pytest.raises(TypeError, match="is not an integer"):
            native.check_seeds(bad, 2)
    with pytest.raises(TypeError, match=r"seed\[0\]=True is not an integer"):
        native.check_seeds([True, 1], 2)


def test_define_values_reach_the_compiler_only_as_numbers_or_one_line_strings():
    ok = {"N": 3, "X": 0.5, "Y": np.int32(2), "Z": np.float32(1.5), "NAME": "foo_bar", "_U2": "-1"}
    assert native.check_define_names(ok) == ok
    for name in ("2X", "A-B", "A B", ""):
        with pytest.raises(ValueError, match="is not a C identifier"):
            native.check_define_names({name: 1})
    with pytest.raises(TypeError, match=r"X=True: a define's value is a number; pass 1 for True"):
        native.check_define_names({"X": True})
    with pytest.raises(TypeError, match="pass 0 for "):
        native.check_define_names({"X": np.bool_(False)})
    for bad in (None, [1], b"1"):
        with pytest.raises(TypeError, match=r"a define's value is an int, a float or a string of C \(e.g. X=1\)"):
            native.check_define_names({"X": bad})
    for bad in (float("nan"), float("inf"), np.float64(-np.inf)):
        with pytest.raises(ValueError, match="must be finite"):
            native.check_define_names({"X": bad})
    for bad in ("", "   ", "a\nb", "a\tb", "\x7f"):
        with pytest.raises(ValueError, match="must be non-empty and on one line"):
            native.check_define_names({"X": bad})


def test_step_limits_are_none_or_a_positive_c_int():
    assert native.check_step_limit(None) is None
    assert native.check_step_limit(1) == 1 and native.check_step_limit(np.int64(2**31 - 1)) == 2**31 - 1
    for bad in (0, -1, 2**31):
        with pytest.raises(ValueError, match=rf"max_episode_steps={bad} is out of range \[1, 2\*\*31-1\]"):
            native.check_step_limit(bad)
    for bad in (1.0, True, "5"):
        with pytest.raises(TypeError, match=r"limit=.* is not an integer"):
            native.check_step_limit(bad, "limit")


def test_an_env_source_is_a_built_in_name_or_a_file_and_anything_else_is_refused(tmp_path):
    """A built-in name (any case) is its registered file; a path to a file is that file; a directory or nothing
    there is refused saying which."""
    mine = tmp_path / "mine.h"
    mine.write_text("/* an env file */\n")
    assert native.source_path("CartPole") == native.NATIVE_DIR / native.ENVS["cartpole"].source
    assert native.source_path(str(mine)) == native.source_path(mine) == mine.resolve()
    mine.unlink()
    with pytest.raises(FileNotFoundError, match=r"mine\.h.* not found: an env source is a built-in env"):
        native.source_path(mine)
    with pytest.raises(FileNotFoundError, match="is a directory, not an env file"):
        native.source_path(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'/dev/null' is a character device, not an env file: an env source"):
        native.source_path("/dev/null")
    import os
    os.mkfifo(tmp_path / "pipe.h")
    with pytest.raises(FileNotFoundError, match=r"pipe\.h' is a named pipe, not an env file"):
        native.source_path(tmp_path / "pipe.h")
    assert native.source_path("breakout-minatar") == native.NATIVE_DIR / "minatar_breakout.h"


def test_reset_seeded_reseeds_the_given_envs_continues_the_others_and_leaves_the_unmasked_alone():
    """reset_seeded, the faces' reset with check_seeds' split: within the mask (None: every env) an env given a seed
    starts as a fresh env reset with that seed, one given None starts from its own stream's next draws (as a reset
    without seeds), and an env outside the mask keeps its state, given a seed or not; all given or none given too."""
    from fastvec.native import cpu

    env = cpu.load(native.source_path("cartpole"), ())
    n = 4

    def batch_after(seeds, *resets):
        b = cpu.CpuBatch(env, n, 0, None)
        b.reset(np.asarray(seeds, np.uint64), None)
        for mask in resets:
            b.reset(None, None if mask is None else np.asarray(mask))
        return b.get_state()

    start = [1, 2, 3, 4]
    fresh = {s: batch_after([s] * n)[0] for s in (10, 12, 13)}
    cases = [  # (seeds given, mask): per env, the state expected (a fresh seed's, "next": its stream's, "kept")
        ([10, None, 12, None], [True, True, False, False], [fresh[10], "next", "kept", "kept"]),
        ([10, None, 12, None], None, [fresh[10], "next", fresh[12], "next"]),
        ([None, 10, None, 12], [False, True, True, False], ["kept", fresh[10], "next", "kept"]),
        ([10, None, 12, 13], [False, True, False, True], ["kept", "next", "kept", fresh[13]]),
        ([10, 10, 12, 13], [True, False, True, False], [fresh[10], "kept", fresh[12], "kept"]),
        ([None] * 4, [True, False, False, True], ["next", "kept", "kept", "next"]),
        ([None] * 4, None, ["next"] * 4),
        ([10, 12, 13, 10], None, [fresh[10], fresh[12], fresh[13], fresh[10]]),
    ]
    for seed, mask, want in cases:
        _, seeds, given = native.check_seeds(seed, n)
        b = cpu.CpuBatch(env, n, 0, None)
        b.reset(np.asarray(start, np.uint64), None)
        native.reset_seeded(b, seeds, given, None if mask is None else np.asarray(mask))
        kept, nxt = batch_after(start), batch_after(start, None)
        expected = np.stack([{"kept": kept, "next": nxt}[w][i] if isinstance(w, str) else w for i, w in enumerate(want)])
        np.testing.assert_array_equal(b.get_state(), expected, err_msg=f"seed={seed} mask={mask}")
