"""The MinAtar games' `score` statistic, which the trainer logs and the sweep can target: at each episode's
end it is the episode's return (the sum of its rewards, counted from zero at the reset). And each game's header,
compiled without -D, plays as the registry's build with its default parameters."""

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu

GAMES = ["breakout-minatar", "freeway-minatar", "asterix-minatar", "seaquest-minatar", "spaceinvaders-minatar"]


@pytest.mark.parametrize("game", GAMES)
def test_the_score_at_an_episodes_end_is_its_return(game):
    env = cpu.load(native.source_path(game), tuple(sorted(native.resolve_defines(game, {}).items())))
    n = 16
    batch = cpu.CpuBatch(env, n, native.AUTORESET_CODES["SameStep"], 300)
    batch.reset(np.arange(n, dtype=np.uint64) + 3, None)
    rng = np.random.default_rng(0)
    returns, ends, rewarded = np.zeros(n), 0, 0
    for _ in range(1200):
        batch.step(rng.integers(0, env.num_actions, (n, 1, 1)))
        returns += batch.rewards[:, 0]
        done = batch.terminated | batch.truncated
        for i in np.flatnonzero(done):
            assert batch.episode_stats[i, 0] == returns[i] == batch.episode_return[i, 0], (game, i)
            rewarded += returns[i] > 0
        ends += int(done.sum())
        returns[done] = 0
    assert ends > 0 and rewarded > 0


@pytest.mark.parametrize("game", GAMES)
def test_a_bare_header_plays_as_the_registrys_defaults(game):
    """Compiled without -D (as a user's own nvcc or make_vec_from_source would): the same episodes as the
    registry's build, long enough for the difficulty ramps (2,000 steps of 16 envs)."""
    n, rng, same_step = 16, np.random.default_rng(2), native.AUTORESET_CODES["SameStep"]
    bare = cpu.CpuBatch(cpu.load(native.source_path(game), ()), n, same_step, None)
    registry = cpu.CpuBatch(cpu.load(native.source_path(game), tuple(native.resolve_defines(game, {}).items())), n,
                            same_step, None)
    for b in (bare, registry):
        b.reset(np.arange(n, dtype=np.uint64), None)
    for _ in range(2000):
        actions = rng.integers(0, registry.env.num_actions, (n, 1))
        bare.step(actions)
        registry.step(actions)
        np.testing.assert_array_equal(bare.obs, registry.obs)
        np.testing.assert_array_equal(bare.rewards, registry.rewards)


@pytest.mark.parametrize("game", GAMES)
def test_each_game_compiles_without_warnings(game, env_warnings):
    """The game's registry build compiles without a warning (-Wall at -O3): no row, column or table indexed past its
    end, no value used uninitialised."""
    assert env_warnings(native.source_path(game), native.resolve_defines(game, {})) == ""
