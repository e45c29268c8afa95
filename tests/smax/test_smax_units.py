"""The random-unit scenarios' starts (smacv2_*_units, fastvec/native/smax_units.h): placed from jaxmarl's own draws
for a key, fastvec's types, positions, health and observations equal jaxmarl's reset for that key (skipped without
jaxmarl); placed from made-up draws, each distribution's rule (no jaxmarl); drawn by fastvec, the distributions'
shares."""

from pathlib import Path

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, scenario_defines

RANDOM = [name for name, sc in SCENARIOS.items() if sc.random_units]
HEALTH = np.array([45.0, 125.0, 160.0, 150.0, 35.0, 80.0], np.float32)  # jaxmarl's per-type health
UNIT_STATE = 8
DISABLED = 2  # batch.h's FV_DISABLED


def probe(name):
    """start(draws) -> (positions placed, state values, observations) of scenario `name`'s start from `draws`
    (smax_units_probe.h)."""
    import ctypes

    lib = cpu.load(Path(__file__).parent / "smax_units_probe.h", tuple(scenario_defines(name).items()))
    n, units = SCENARIOS[name].allies, lib.num_agents

    def start(surrounded, allies_inside, inside, group, along, outside, reflected, types):
        placed, state = np.zeros((units, 2), np.float32), np.zeros(lib.spaces.state_size)
        obs = np.zeros((units, lib.obs_size), np.float32)
        floats = [np.ascontiguousarray(a, np.float32) for a in (inside, along, outside, reflected)]
        ints = [np.ascontiguousarray(a, np.int32) for a in (group, types)]
        assert floats[0].shape == floats[2].shape == floats[3].shape == (n, 2) and floats[1].shape == (4,)
        ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        lib.lib.smax_probe_start(ctypes.c_int(int(surrounded)), ctypes.c_int(int(allies_inside)), ptr(floats[0]),
                                 ptr(ints[0]), ptr(floats[1]), ptr(floats[2]), ptr(floats[3]), ptr(ints[1]),
                                 ptr(placed), ptr(state), ptr(obs))
        return placed, state, obs
    return start


def jaxmarl_draws(jax, n, key):
    """The random variates of jaxmarl's SMAX.reset(key) in a smacv2 scenario of n units a team, derived as its
    reset and distributions.py derive them: (surrounded, allies_inside, inside, group, along, outside, reflected,
    types)."""
    jnp, random = jax.numpy, jax.random
    key, _, _ = random.split(key, num=3)  # reset: key, team_0_key, team_1_key
    key, pos_key = random.split(key)
    _, type_key = random.split(key)
    key_draw, key_surround, key_reflect = random.split(pos_key, num=3)  # SurroundAndReflectPositionDistribution
    surrounded = random.uniform(key_draw) < 0.5
    key_inside, ally_key, enemy_key = random.split(key_surround, num=3)  # SurroundPositionDistribution
    allies_inside = random.randint(key_inside, shape=(), minval=0, maxval=2)

    def draw_positions(k):  # its draw_positions: the inside team's noise, the groups, t, the outside team's noise
        k, centre_key = random.split(k)
        inside = random.uniform(centre_key, shape=(n, 2), minval=-2, maxval=2)
        k, group_key = random.split(k)
        group = random.categorical(group_key, jnp.log(jnp.ones((4,)) / 4), shape=(n,))
        k, t_key = random.split(k)
        along = random.uniform(t_key, shape=(4, 1), minval=0.0, maxval=1.0)[:, 0]
        k, outside_key = random.split(k)
        outside = random.uniform(outside_key, shape=(n, 2), minval=-2, maxval=2)
        return inside, group, along, outside
    picked = [jnp.where(allies_inside != 0, a, e) for a, e in zip(draw_positions(ally_key), draw_positions(enemy_key))]
    _, ally_pos_key = random.split(key_reflect)  # ReflectPositionDistribution
    reflected = random.uniform(ally_pos_key, shape=(n, 2), minval=jnp.array([0.0, 0.0]), maxval=jnp.array([16, 32]))
    _, ally_type_key = random.split(type_key)  # UniformUnitTypeDistribution: enemy_key, ally_key
    types = random.categorical(ally_type_key, jnp.log(jnp.ones((6,)) / 6), shape=(n,))
    return (surrounded, allies_inside, *picked, reflected, types)


@pytest.mark.parametrize("name", RANDOM)
def test_starts_placed_from_jaxmarls_draws_equal_jaxmarls_resets(name):
    """For 1,024 keys, jaxmarl's draws for the key placed by fastvec: the unit types and the positions placed
    (jaxmarl's distributions' for the key) bit for bit; the start (health, the push apart, every agent's
    observation) as jaxmarl's reset for the key, within smax_oracle's tolerance of XLA's push apart."""
    smax = pytest.importorskip("jaxmarl.environments.smax", reason="the oracle is jaxmarl 0.2.0's SMAX")
    jax = pytest.importorskip("jax")
    from smax_oracle import POSITION_ATOL, check_obs
    env = smax.SMAX(scenario=smax.map_name_to_scenario(name))
    n, units, episodes = env.num_allies, env.num_agents, 1024
    keys = jax.random.split(jax.random.PRNGKey(3), episodes)
    obs, state = jax.jit(jax.vmap(env.reset))(keys)  # batches of 128 and more: smax.h's form of the push apart

    def distributions(key):  # what reset draws from them: its keys split as it splits them
        key, _, _ = jax.random.split(key, num=3)
        key, pos_key = jax.random.split(key)
        _, type_key = jax.random.split(key)
        return env.position_generator.generate(pos_key), env.unit_type_generator.generate(type_key)
    want_placed, want_types = (np.asarray(a) for a in jax.jit(jax.vmap(distributions))(keys))
    np.testing.assert_array_equal(want_types, np.asarray(state.unit_types))
    draws = [np.asarray(a) for a in jax.jit(jax.vmap(lambda k: jaxmarl_draws(jax, n, k)))(keys)]
    want_obs = np.stack([np.asarray(obs[a]) for a in env.agents], 1)
    start = probe(name)
    exact = 0
    for e in range(episodes):
        placed, values, got_obs = start(*(d[e] for d in draws))
        where = f"{name} key {e}"
        np.testing.assert_array_equal(placed.view(np.uint32), want_placed[e].view(np.uint32), err_msg=where)
        np.testing.assert_array_equal(values[-units:], want_types[e], err_msg=where)
        got = values[: UNIT_STATE * units].reshape(units, UNIT_STATE)
        np.testing.assert_array_equal(got[:, 2:5], np.stack([np.asarray(state.unit_health[e]),
                                      np.zeros(units), np.ones(units)], 1), err_msg=where)  # full health, ready
        pos = np.asarray(state.unit_positions[e])
        np.testing.assert_allclose(got[:, :2], pos, rtol=0, atol=POSITION_ATOL, err_msg=where)
        check_obs(got_obs, want_obs[e], where)
        exact += (got[:, :2].astype(np.float32) == pos).all() and (got_obs == want_obs[e]).all()
    # every branch of the distributions compared: both placements, both inside teams, every type
    surrounded, allies_inside = draws[0], draws[1] != 0
    assert 0.4 < surrounded.mean() < 0.6 and 0.3 < allies_inside[surrounded].mean() < 0.7
    assert set(want_types.ravel()) == set(range(6))
    # XLA's own order of the push's sums (smax_oracle's tolerance) touches crowded starts only: surrounded, 20 units
    # a team inside 4 x 4 touch one start in seven (1 in 500 of 5 units); a wrong formula would touch most
    assert exact >= (0.8 if n == 20 else 0.97) * episodes, exact


def made_up_draws(n):
    """Draws with the units far enough apart that pushing moves none."""
    grid = np.array([[x, y] for x in (-1.8, 0.0, 1.8) for y in (-1.8, 0.0, 1.8)], np.float32)[:n]
    return dict(inside=grid, group=np.arange(n) % 4, along=np.array([0.0, 0.25, 0.5, 0.125], np.float32),
                outside=grid[::-1], reflected=np.stack([np.arange(n) * 3.0 + 1.0, np.arange(n) * 6.0 + 2.0], 1),
                types=np.arange(n) % 6)


def test_each_placement_follows_jaxmarls_rule():
    """smacv2_5_units placed from made-up draws: surrounded, the inside team at the centre plus its offsets and the
    outside team on its groups' corner-to-centre lines (corners (0, 0), (0, 32), (32, 0), (32, 32)) at t of the way
    plus its offsets; reflected, the allies at their draws and the enemies mirrored in x = 16; every enemy the
    type of the ally of its index, at that type's full health."""
    start, d, n = probe("smacv2_5_units"), made_up_draws(5), 5
    corners = np.array([[0, 0], [0, 32], [32, 0], [32, 32]], np.float32)
    t = d["along"][d["group"]][:, None]
    on_lines = (t * np.float32(16) + (np.float32(1) - t) * corners[d["group"]]) + d["outside"]
    np.testing.assert_allclose(on_lines[1] - d["outside"][1], [4, 28])  # (0, 32) a quarter of the way to (16, 16)
    for allies_inside in (1, 0):
        _, values, _ = start(1, allies_inside, **d)
        pos = values[: UNIT_STATE * 2 * n].reshape(2 * n, UNIT_STATE)[:, :2].astype(np.float32)
        inside, outside = (pos[:n], pos[n:]) if allies_inside else (pos[n:], pos[:n])
        np.testing.assert_array_equal(inside, np.float32(16) + d["inside"])
        np.testing.assert_array_equal(outside, on_lines)
    _, values, _ = start(0, 1, **d)
    units = values[: UNIT_STATE * 2 * n].reshape(2 * n, UNIT_STATE)
    np.testing.assert_array_equal(units[:n, :2], d["reflected"])
    np.testing.assert_array_equal(units[n:, 0], 32 - d["reflected"][:, 0])
    np.testing.assert_array_equal(units[n:, 1], d["reflected"][:, 1])
    np.testing.assert_array_equal(values[-2 * n:], np.tile(d["types"], 2))
    np.testing.assert_array_equal(units[:, 2], HEALTH[np.tile(d["types"], 2)])


@pytest.mark.parametrize("name", RANDOM)
def test_resets_draw_types_and_placements_in_jaxmarls_shares(name):
    """4,000 resets: each ally's type uniform among the six, its enemy's the same; surrounded in half of them, the
    allies inside in half of those; every unit's observation shows its own type, at full health."""
    sc, episodes = SCENARIOS[name], 4000
    n, units = sc.allies, sc.allies + sc.enemies
    lib = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name).items()))
    batch = cpu.CpuBatch(lib, episodes, DISABLED, 101)
    batch.reset(np.arange(episodes, dtype=np.uint64), None)
    values = batch.get_state()
    types = values[:, -units:].astype(int)
    np.testing.assert_array_equal(types[:, :n], types[:, n:])
    shares = np.bincount(types[:, :n].ravel(), minlength=6) / (episodes * n)
    assert (np.abs(shares - 1 / 6) < 0.02).all(), shares
    obs = batch.obs.reshape(episodes, units, -1)
    np.testing.assert_array_equal(obs[..., -6:].argmax(-1), types)
    np.testing.assert_array_equal(obs[..., -10], 1.0)  # own health fraction
    # a unit may start off the map (a corner's group, its offset outwards): its own position beyond [-1, 1], within
    # the declared bounds
    assert (obs[..., -9:-7] > 1).any() and (lib.spaces.obs_low <= obs).all() and (obs <= lib.spaces.obs_high).all()
    pos = values[:, : UNIT_STATE * units].reshape(episodes, units, UNIT_STATE)[..., :2]
    centred = (np.abs(pos - 16) < 5).all(-1)  # the inside team's square of 4, give or take the crowd's pushes
    allies_inside, enemies_inside = centred[:, :n].all(1), centred[:, n:].all(1)  # both: the outside team's
    surrounded = allies_inside | enemies_inside  # groups near the centre, a few
    only_allies, only_enemies = (allies_inside & ~enemies_inside).sum(), (enemies_inside & ~allies_inside).sum()
    assert abs(surrounded.mean() - 0.5) < 0.04 and abs(only_allies / (only_allies + only_enemies) - 0.5) < 0.06
    mirrored = np.isclose(pos[:, :n, 0] + pos[:, n:, 0], 32, atol=1e-5) & (pos[:, :n, 1] == pos[:, n:, 1])
    assert mirrored[~surrounded].mean() > 0.9 and not mirrored[surrounded].all(1).any()  # but the pushed ones
    assert (pos[~surrounded][:, :n, 0] < 16 + 1.5).all()  # the allies on the left half


def test_surrounded_resets_spread_the_outside_team_evenly_over_the_four_corners():
    """jaxmarl's four groups, uniform: in surrounded resets the outside team's units come from each map corner's
    direction a quarter of the time (a unit counted where its offset from the centre is clear of the noise)."""
    name, episodes = "smacv2_5_units", 4000
    n = SCENARIOS[name].allies
    lib = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name).items()))
    batch = cpu.CpuBatch(lib, episodes, DISABLED, 101)
    batch.reset(np.arange(episodes, dtype=np.uint64) + 50_000, None)
    pos = batch.get_state()[:, : UNIT_STATE * 2 * n].reshape(episodes, 2 * n, UNIT_STATE)[..., :2] - 16
    centred = (np.abs(pos) < 5).all(-1)
    allies_inside, enemies_inside = centred[:, :n].all(1), centred[:, n:].all(1)
    outside = np.concatenate([pos[allies_inside & ~enemies_inside, n:], pos[enemies_inside & ~allies_inside, :n]])
    clear = outside[(np.abs(outside) > 5).all(-1)]  # t < 0.65 or so: the corner's side of both axes
    assert len(clear) > 3000
    corner = (clear[:, 0] > 0) * 2 + (clear[:, 1] > 0)  # (0, 0), (0, 32), (32, 0), (32, 32)
    shares = np.bincount(corner, minlength=4) / len(clear)
    assert (np.abs(shares - 0.25) < 0.03).all(), shares
