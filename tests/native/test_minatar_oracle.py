"""The MinAtar games (fastvec/native/minatar_*.h) against the `minatar` package (1.0.15), the reference:
both play in lockstep from the same reset, the reference's random draws (sticky actions, spawns, car
speeds, the ball's side) fed to fastvec's step through tests/envs/minatar_draws.h, so every transition
the reference's own play reaches under random and scripted policies gives the same observation,
reward and terminal flag. Each game's run covers its rare events (asserted, so the comparison is not
vacuous): sticky actions that change the action, difficulty ramps, every kind of spawn, refills and
waves, surfacing with a full load of divers."""

import ctypes
import shlex
from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu

minatar = pytest.importorskip("minatar")

DRAWS_ENV = Path(__file__).resolve().parents[1] / "envs" / "minatar_draws.h"
GAMES = {"breakout": 1, "freeway": 2, "asterix": 3, "space_invaders": 4, "seaquest": 5}
TRANSITIONS = 10_000


class Recorder:
    """A numpy RandomState that logs its draws as minatar_draws.h takes them: uniforms as drawn,
    integers minus their lower bound."""

    def __init__(self, seed: int):
        self.rs = np.random.RandomState(seed)
        self.log: list[float] = []

    def rand(self, *size):
        v = self.rs.rand(*size)
        self.log.extend(np.ravel(v).tolist())
        return v

    def randint(self, low, high=None, size=None):
        v = self.rs.randint(low, high, size)
        self.log.extend((np.ravel(v) - (0 if high is None else low)).tolist())
        return v


class Quiet:
    """Draws for a lookahead copy of the reference (no spawns land: every side/kind coin is high)."""

    @staticmethod
    def rand(*size):
        return np.full(size, 0.999) if size else 0.999

    @staticmethod
    def randint(low, high=None, size=None):
        return np.zeros(size, int) if size else 0


def snapshot(game):
    """A copy of a reference game's state for lookahead (its lists of lists and arrays copied)."""
    copy = object.__new__(type(game))
    for key, value in game.__dict__.items():
        if isinstance(value, list):
            value = [x[:] if isinstance(x, list) else x for x in value]
        elif isinstance(value, np.ndarray):
            value = value.copy()
        copy.__dict__[key] = value
    copy.random = Quiet
    return copy


def safe_actions(game, actions, depth=2):
    """The actions after which the reference game survives `depth` steps (no-ops after the first)."""
    safe = []
    for a in actions:
        g = snapshot(game)
        dead = g.act(a)[1]
        for _ in range(depth - 1):
            dead = dead or g.act(0)[1]
        if not dead:
            safe.append(a)
    return safe or list(actions)


def shot_hits(game, horizon=10):
    """Whether a shot fired now kills an alien within `horizon` steps of no-ops (reference lookahead)."""
    g = snapshot(game)
    reward = g.act(5)[0]
    for _ in range(horizon):
        if reward or g.terminal:
            break
        reward += g.act(0)[0]
    return reward > 0


def toward(dx, dy=0):
    """The full-set action that moves by (dx, dy) first in x, no-op when there."""
    if dx:
        return 1 if dx < 0 else 3
    if dy:
        return 2 if dy < 0 else 4
    return 0


def scripted(name, game, rng):
    """A policy that plays on into the late game: tracks the ball, crosses, dodges with lookahead,
    shoots, collects divers and surfaces."""
    if name == "breakout":
        return toward(np.sign(game.ball_x - game.pos)) if rng.random() < 0.9 else int(rng.integers(6))
    if name == "freeway":
        return 2 if rng.random() < 0.8 else int(rng.integers(6))
    if name == "asterix":
        golds = [e for e in game.entities if e is not None and e[3]]
        want = toward(*np.sign([golds[0][0] - game.player_x, golds[0][1] - game.player_y])) if golds else 0
        safe = safe_actions(game, range(5), depth=3)
        return want if want in safe else int(rng.choice(safe))
    if name == "space_invaders":
        cols = np.flatnonzero(game.alien_map.any(axis=0))
        target = cols[np.argmin(np.abs(cols - game.pos))] if len(cols) else game.pos
        want = 5 if game.shot_timer == 0 and target == game.pos else toward(np.sign(target - game.pos))
        if game.alien_map.sum() <= 3:  # the last fast aliens: fire when the shot will hit, else wait under them
            want = 5 if game.shot_timer == 0 and shot_hits(game, 8) else (0 if game.shot_timer == 0 else want)
        near = game.e_bullet_map[6:, max(game.pos - 1, 0):game.pos + 2].any() or game.alien_map[7:].any()
        if not near:  # nothing can reach the cannon within two steps: skip the (slow) lookahead
            return want
        safe = safe_actions(game, [0, 1, 3, 5], depth=1)
        return want if want in safe else int(rng.choice(safe))
    if name == "seaquest":
        if game.diver_count >= 6 or game.oxygen < 40 or (game.diver_count > 0 and game.oxygen < 100):
            want = 2
        elif game.divers:
            d = game.divers[0]
            want = toward(*np.sign([d[0] - game.sub_x, d[1] - game.sub_y]))
        else:
            want = 5 if rng.random() < 0.5 else int(rng.integers(1, 5))
        if want == 2 and game.sub_y == 1 and game.diver_count == 0:  # surfacing with no diver ends the game
            want = 0
        threats = game.e_fish + game.e_subs + game.e_bullets
        if not any(abs(t[0] - game.sub_x) <= 2 and abs(t[1] - game.sub_y) <= 1 for t in threats):
            return want  # nothing can reach the sub within two steps: skip the (slow) lookahead
        safe = safe_actions(game, range(6))
        return want if want in safe else int(rng.choice(safe))
    raise KeyError(name)


def hooked_batch(name, minimal=0, ramping=1, sticky_milli=100):
    defines = (("DIFFICULTY_RAMPING", ramping), ("MA_GAME", GAMES[name]), ("MINIMAL_ACTION_SET", minimal),
               ("STICKY_ACTION_MILLI", sticky_milli))
    env = cpu.load(DRAWS_ENV, defines)
    env.lib.ma_test_feed.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return cpu.CpuBatch(env, 1, native.AUTORESET_CODES["Disabled"], None)


class Lockstep:
    """The reference and the hooked fastvec env, one transition at a time."""

    def __init__(self, name, seed, minimal=0, ramping=1, sticky=0.1, past_end=False):
        self.name, self.past_end = name, past_end
        self.ref = minatar.Environment(name, sticky_action_prob=sticky, difficulty_ramping=bool(ramping))
        self.rec = Recorder(seed)
        self.ref.random = self.ref.env.random = self.rec
        self.batch = hooked_batch(name, minimal, ramping, round(sticky * 1000))
        self.sticky = sticky
        self.action_set = self.ref.minimal_action_set() if minimal else list(range(6))
        assert self.batch.env.num_actions == len(self.action_set)
        self.events = {"sticky_changed": 0, "episodes": 0, "reward": 0.0, "steps": 0}
        self.reset()

    def feed(self):
        draws = np.array(self.rec.log, np.float64)
        self.batch.env.lib.ma_test_feed(draws.ctypes.data, len(draws))
        self.rec.log.clear()

    def check_draws_used(self):
        left = self.batch.env.lib.ma_test_left()
        assert left == 0, f"{self.name}: fastvec took {'more' if left < 0 else 'fewer'} draws than the reference"

    def reset(self):
        self.rec.log.clear()
        self.ref.reset()
        self.ref.last_action = 0  # fastvec starts each episode without a previous action
        self.feed()
        self.batch.reset(None, None)
        self.check_draws_used()
        self.compare(None, None, "reset")

    def compare(self, reward, terminal, what):
        want = self.ref.state().astype(np.uint8)
        got = self.batch.obs[0, 0].reshape(want.shape)
        if not np.array_equal(got, want):
            diff = np.argwhere(got != want)
            raise AssertionError(f"{self.name} {what}: observations differ at (y, x, channel) {diff[:6].tolist()}")
        if reward is None:  # a reset: only the observation
            return
        assert self.batch.rewards[0, 0] == reward, f"{self.name} {what}: reward {self.batch.rewards[0, 0]} != {reward}"
        # the flag's byte itself: a bool array holding 2 is True to bool() but miscounts in sums and comparisons
        assert self.batch.terminated.view(np.uint8)[0] == terminal, f"{self.name} {what}: terminal differs"

    def step(self, index, reset=True):
        chosen = self.action_set[index]
        before = self.ref.last_action
        self.rec.log.clear()
        reward, terminal = self.ref.act(chosen)
        if self.ref.last_action != chosen and before != chosen:
            self.events["sticky_changed"] += 1
        if self.sticky == 0:  # minatar draws for sticky actions at probability 0 too; fastvec does not
            del self.rec.log[0]
        self.feed()
        self.batch.step(np.array([index], np.int64))
        self.check_draws_used()
        self.compare(float(reward), bool(terminal), f"step {self.events['steps']}")
        self.events["steps"] += 1
        self.events["reward"] += reward
        if terminal and reset:
            self.events["episodes"] += 1
            if self.past_end:  # a step past the end changes nothing (fastvec with autoreset off)
                self.step(index, reset=False)
            self.reset()
        return reward, terminal


def play(name, seed, steps, on_step=None, random_share=0.3, **kw):
    """`steps` transitions of lockstep play: episodes alternate between the random policy
    (random_share of them) and the scripted one; on_step(run) may tally events after each."""
    run = Lockstep(name, seed, **kw)
    rng = np.random.default_rng(seed)
    random_episode = rng.random() < random_share
    full = run.action_set == list(range(6))
    for _ in range(steps):
        if random_episode or not full:
            index = int(rng.integers(len(run.action_set)))
        else:
            index = scripted(name, run.ref.env, rng)
        _, terminal = run.step(index)
        if on_step:
            on_step(run)
        if terminal:
            random_episode = rng.random() < random_share
    return run


def test_breakout_matches_the_reference():
    seen = {"sides": set(), "strike": 0}

    def tally(run):
        g = run.ref.env
        seen["sides"].add(g.last_x if run.events["steps"] == 0 else g.ball_dir)
        seen["strike"] += bool(g.strike)

    run = play("breakout", 0, TRANSITIONS, tally)
    assert run.events["episodes"] > 20 and run.events["reward"] > 300 and seen["strike"] > 0
    assert run.events["sticky_changed"] > 100


def test_breakout_clearing_every_brick_refills_the_wall_as_the_reference():
    """A paddle that follows the ball (no sticky actions) clears all 30 bricks about every 360 steps; the wall
    comes back (rows 1 to 3) when the ball next reaches the paddle's row, as minatar's."""
    run, refills, bricks = Lockstep("breakout", 11, sticky=0.0), 0, None
    for _ in range(750):
        g = run.ref.env
        _, terminal = run.step(toward(np.sign(g.ball_x - g.pos)))
        now = run.ref.env.brick_map.sum()
        refills += bricks == 0 and now == 30
        bricks = now
        assert not terminal
    assert refills == 2


def test_breakout_a_ball_through_a_gap_bounces_off_the_top_wall_as_the_reference():
    """A ball rising through a gap in the wall to row 0 turns back down at the top wall, on row 0 (minatar clamps
    its row to 0), and bounces off row 1's bricks back up to the wall again: a path that play reaches rarely (a
    diagonal gap through all three rows). The state is written into both games: fastvec's through its slot's bytes (the
    State of minatar_breakout.h: score, bricks[10] from byte 4, then ball_x, ball_y, ball_dir, last_x, last_y)."""
    run = Lockstep("breakout", 3, sticky=0.0)
    g, slot = run.ref.env, run.batch.slots[0]
    gap = ((1, 2), (2, 1), (3, 0))  # (row, column): the ball's path up from (3, 0), now at (1, 2) heading up-right
    for y, x in gap:
        g.brick_map[y, x] = 0
    g.ball_y, g.ball_x, g.ball_dir, g.last_y, g.last_x, g.strike = 1, 2, 1, 2, 1, False
    bits = (g.brick_map.astype(np.uint16) << np.arange(10, dtype=np.uint16)).sum(1, dtype=np.uint16)  # bit x of y
    slot[4:24] = bits.view(np.uint8)
    slot[24:31] = [g.ball_x, g.ball_y, g.ball_dir, g.last_x, g.last_y, 4, 0]  # pos 4, no strike
    rows = []
    for _ in range(8):
        run.step(0)  # no-op; every transition compared with the reference's
        rows.append(g.ball_y)
    # up to row 0, then along it: the top wall and row 1's bricks turn it back in turn, a brick every other step
    assert rows == [0] * 8 and run.events["reward"] == 3


def test_space_invaders_aliens_reaching_the_bottom_end_the_game_as_the_reference():
    """A cannon that never fires and only dodges lets the aliens land: each episode ends with aliens on the
    bottom row beside the cannon, as minatar's."""
    run, rng, landed = Lockstep("space_invaders", 12, sticky=0.0), np.random.default_rng(0), 0
    for _ in range(800):
        g = run.ref.env
        before = snapshot(g)
        _, terminal = run.step(int(rng.choice(safe_actions(g, [0, 1, 3], depth=2))))
        landed += terminal and before.alien_map[9].any() and not before.alien_map[9, before.pos]
    assert landed == 2 and run.events["reward"] == 0


def test_freeway_matches_the_reference():
    hits = []

    def tally(run):
        hits.append(run.ref.env.pos == 9 and run.events["reward"] >= 0)

    run = play("freeway", 1, TRANSITIONS, tally)
    assert run.events["episodes"] >= 3, "episodes end at the time limit"
    assert run.events["reward"] > 20, "crossings redraw every car's speed"
    assert run.events["sticky_changed"] > 100


class HalfDirection:
    """A RandomState whose eight-car direction draws give exactly 0.5 for car 3 (row 4)."""

    def __init__(self, rs):
        self.rs = rs

    def rand(self, *size):
        v = self.rs.rand(*size)
        if size == (8,):
            v[3] = 0.5
        return v

    def randint(self, *args, **kwargs):
        return self.rs.randint(*args, **kwargs)


def test_freeway_a_car_drawn_with_speed_zero_moves_left_every_step_as_the_reference():
    """minatar's direction draw sign(rand() - 0.5) is 0 for a draw of exactly 0.5: that car's speed and timer are 0,
    and minatar moves it one cell left every step (its `car[3] > 0` is false); fastvec's the same. (minatar's frame
    gives such a car the previous car's trail, fastvec's none: row 4's trail channels are left out of the
    comparison, and fastvec's checked empty.)"""
    run = Lockstep("freeway", 3, sticky=0.0)
    run.rec.rs = HalfDirection(run.rec.rs)
    frame = run.ref.state

    def without_row_4_trails():
        state = frame().copy()
        state[4, :, 2:] = 0
        return state

    run.ref.state = without_row_4_trails
    run.reset()
    xs = [run.ref.env.cars[3][0]]
    for _ in range(25):
        run.step(0)  # the chicken stays on the bottom row
        xs.append(run.ref.env.cars[3][0])
        assert not run.batch.obs[0, 0].reshape(10, 10, -1)[4, :, 2:].any()
    assert run.ref.env.cars[3][3] == 0 and (np.diff(xs) % 10 == 9).all()


def test_asterix_matches_the_reference():
    top = {"ramp": 0, "gold": 0, "full": 0}

    def tally(run):
        g = run.ref.env
        top["ramp"] = max(top["ramp"], g.ramp_index)
        top["full"] += all(e is not None for e in g.entities)

    run = play("asterix", 7, TRANSITIONS, tally, random_share=0.05)
    assert run.events["episodes"] > 10 and run.events["reward"] > 100
    assert top["ramp"] >= 6 and top["full"] > 0, top
    assert run.events["sticky_changed"] > 100


def test_space_invaders_matches_the_reference():
    top = {"ramp": 0}

    def tally(run):
        top["ramp"] = max(top["ramp"], run.ref.env.ramp_index)

    run = play("space_invaders", 3, TRANSITIONS, tally)
    assert run.events["episodes"] > 5 and run.events["reward"] > 300
    assert top["ramp"] >= 1, "a cleared wave speeds the next one up"
    assert run.events["sticky_changed"] > 100


def test_seaquest_matches_the_reference():
    seen = {"ramp": 0, "full_load": 0, "subs": 0, "e_bullets": 0}

    def tally(run):
        g = run.ref.env
        seen["ramp"] = max(seen["ramp"], g.ramp_index)
        seen["full_load"] += g.diver_count == -1
        seen["subs"] += len(g.e_subs) > 0
        seen["e_bullets"] += len(g.e_bullets) > 0

    run = play("seaquest", 4, TRANSITIONS, tally)
    assert run.events["episodes"] > 10 and run.events["reward"] > 100
    assert seen["ramp"] >= 3 and seen["subs"] > 0 and seen["e_bullets"] > 0, seen
    assert seen["full_load"] > 0, "surfacing with 6 divers pays for the oxygen left"
    assert run.events["sticky_changed"] > 100


@pytest.mark.parametrize("name", sorted(GAMES))
def test_minimal_action_set_and_no_ramping_match_the_reference(name):
    """MinAtar/<Game>-v1's minimal action set (agent action i is the set's i-th), difficulty_ramping=False
    and another sticky-action probability, under random play; a step past an episode's end changes nothing."""
    run = play(name, 5, 1000, minimal=1, ramping=0, sticky=0.25, past_end=True)
    assert run.events["steps"] == 1000 + run.events["episodes"]
    assert run.events["episodes"] > 0 or name == "freeway"  # Freeway's episodes last 2,501 steps


def test_without_sticky_actions_the_chosen_action_is_played():
    run = play("breakout", 6, 1000, sticky=0.0)
    assert run.events["sticky_changed"] == 0 and run.events["episodes"] > 10


@pytest.mark.parametrize("name", sorted(GAMES))
def test_rgb_array_frames_are_minatars(name):
    """Each 16 x 16 cell takes minatar's rgb_array colour (its highest set channel in seaborn's
    cubehelix palette, black where none), scaled to 0..255: frames every 10 steps of play until every
    channel that can be a cell's highest has been drawn (each one's colour compared; Space Invaders' aliens always
    carry a direction channel above their own)."""
    import seaborn

    run, rng, drawn = play(name, 7, 60), np.random.default_rng(7), set()
    channels = run.ref.state().shape[-1]
    palette = np.array([(0, 0, 0)] + seaborn.color_palette("cubehelix", channels))
    for step in range(3000):
        if step % 10 == 0:
            top = np.amax(run.ref.state() * np.arange(1, channels + 1), axis=2)
            want = np.rint(palette[top] * 255).astype(np.uint8)
            frame = run.batch.render(0)
            assert frame.shape == (160, 160, 3)
            np.testing.assert_array_equal(frame, np.repeat(np.repeat(want, 16, axis=0), 16, axis=1))
            drawn |= set(np.unique(top).tolist())
            if len(drawn) == channels + 1:
                break
        full = run.action_set == list(range(6))
        run.step(scripted(name, run.ref.env, rng) if full else int(rng.integers(len(run.action_set))))
    never_top = {2} if name == "space_invaders" else set()
    assert drawn == set(range(channels + 1)) - never_top, f"channels never drawn: {set(range(channels + 1)) - drawn}"


@pytest.mark.parametrize("name", sorted(GAMES))
def test_gymnasium_spaces_are_minatars_and_pass_the_env_checker(name):
    """Box(0, 1, (10, 10, C), uint8) (minatar's bool grid as 0s and 1s) and Discrete over the minimal
    set (MinAtar/<Game>-v1, the default; the full set's six actions: the oracle runs above); Gymnasium's
    env checker passes."""
    import gymnasium
    from gymnasium.spaces import Box, Discrete
    from gymnasium.utils.env_checker import check_env

    import fastvec  # noqa: F401  (registers fastvec/<Game>-MinAtar)

    ref = minatar.Environment(name)
    env = gymnasium.make(f"fastvec/{name.title().replace('_', '')}-MinAtar", render_mode="rgb_array").unwrapped
    assert env.observation_space == Box(0, 1, tuple(ref.state_shape()), np.uint8)
    assert env.action_space == Discrete(len(ref.minimal_action_set()))
    check_env(env, skip_render_check=False)
    env.close()


def shipped_batch(key, n, **params):
    env = cpu.load(native.source_path(key), tuple(sorted(native.resolve_defines(key, params).items())))
    batch = cpu.CpuBatch(env, n, native.AUTORESET_CODES["Disabled"], None)
    batch.reset(np.arange(n, dtype=np.uint64) + 1000, None)
    return batch


def test_shipped_builds_draw_with_minatars_probabilities():
    """The shipped builds draw from fastvec's generator (the oracle feeds minatar's draws instead):
    the ball starts on either side, cars get speeds 1..5 and both directions evenly, and the previous
    action repeats with the sticky probability."""
    n = 8192
    breakout = shipped_batch("breakout-minatar", n).obs.reshape(n, 10, 10, 4)
    left = breakout[:, 3, 0, 1].mean()
    assert breakout[:, 3, 0, 1].sum() + breakout[:, 3, 9, 1].sum() == n and abs(left - 0.5) < 0.02
    freeway = shipped_batch("freeway-minatar", n).obs.reshape(n, 10, 10, 7)
    trails = freeway[:, 1:9, :, 2:].sum(axis=(0, 1, 2))  # one trail per car, on its speed's channel
    np.testing.assert_allclose(trails / trails.sum(), 0.2, atol=0.01)
    right = (freeway[:, 1:9, 9, 2:].sum(axis=-1)).mean()  # cars start at x = 0: a right-mover's trail wraps to 9
    assert abs(right - 0.5) < 0.01
    for milli in (100, 300):
        b = shipped_batch("breakout-minatar", n, sticky_action_milli=milli)
        b.step(np.full(n, 2, np.int64))  # right: the paddle stays where the previous action (no-op) repeats
        stayed = b.obs.reshape(n, 10, 10, 4)[:, 9, 4, 0].mean()
        assert abs(stayed - milli / 1000) < 0.015, (milli, stayed)


# minatar_asterix.h's State, as C lays it out (the first bytes of the slot)
ASTERIX = np.dtype([("score", "i4"), ("ramp_index", "i4"), ("ramp_timer", "i2"), ("ent_on", "i1", 8),
                    ("ent_x", "i1", 8), ("ent_right", "i1", 8), ("ent_gold", "i1", 8), ("player_x", "i1"),
                    ("player_y", "i1"), ("spawn_speed", "i1"), ("spawn_timer", "i1"), ("move_speed", "i1"),
                    ("move_timer", "i1"), ("last_action", "i1"), ("terminal", "i1")], align=True)


def test_asterix_last_ramp_reaches_a_spawn_every_step_as_the_reference():
    """From the ramp's second-to-last stage (spawns every 2 steps, moves every step, 8 ramps done, written into both
    games), the next ramp makes spawns come every step, as minatar's does; the games agree to the end."""
    run = Lockstep("asterix", 3, sticky=0.0)
    state = run.batch.slots[:, :ASTERIX.itemsize].view(ASTERIX)[:, 0]
    g = run.ref.env
    assert state["spawn_speed"][0] == g.spawn_speed == 10 and state["ramp_timer"][0] == g.ramp_timer == 100
    values = {"spawn_speed": 2, "spawn_timer": 2, "move_speed": 1, "move_timer": 1, "ramp_index": 8, "ramp_timer": 3}
    for key, value in values.items():
        state[key], g.__dict__[key] = value, value
    rng, speeds = np.random.default_rng(4), set()
    for _ in range(40):
        _, terminal = run.step(scripted("asterix", run.ref.env, rng))
        if terminal:
            break
        speeds.add(run.ref.env.spawn_speed)
    assert speeds == {2, 1}, speeds


# minatar_space_invaders.h's State, as C lays it out (alien rows as bit masks, bit x for column x)
SPACE_INVADERS = np.dtype([("score", "i4"), ("ramp_index", "i4"), ("alien", "u2", 10), ("f_bullet", "u2", 10),
                           ("e_bullet", "u2", 10), ("pos", "i1"), ("alien_dir", "i1"), ("move_interval", "i1"),
                           ("alien_move_timer", "i1"), ("alien_shot_timer", "i1"), ("shot_timer", "i1"),
                           ("last_action", "i1"), ("terminal", "i1")], align=True)


@pytest.mark.parametrize("interval", [7, 6])
def test_space_invaders_last_alien_of_a_wave_at_the_ramps_end_as_the_reference(interval):
    """One alien left (written into both games) with the aliens' move interval at 7 or at its floor of 6: clearing
    it speeds the next wave up to 6, and no further, as minatar's does; the games agree to the end."""
    run = Lockstep("space_invaders", 8, sticky=0.0)
    state = run.batch.slots[:, :SPACE_INVADERS.itemsize].view(SPACE_INVADERS)[:, 0]
    g = run.ref.env
    assert (state["alien"][0][:4] == 0xFC).all() and g.alien_map[:4, 2:8].all()
    assert state["move_interval"][0] == g.enemy_move_interval == 12
    state["alien"][0][:], g.alien_map[:] = 0, 0
    state["alien"][0][2], g.alien_map[2, g.pos] = 1 << int(g.pos), 1
    state["move_interval"][0], g.enemy_move_interval = interval, interval
    state["ramp_index"][0], g.ramp_index = 12 - interval, 12 - interval
    rng, cleared = np.random.default_rng(2), 0
    for _ in range(60):
        _, terminal = run.step(scripted("space_invaders", run.ref.env, rng))
        if terminal:
            break
        cleared += run.ref.env.alien_map.sum() == 24 and run.ref.env.enemy_move_interval == 6
    assert cleared > 0


# minatar_seaquest.h's State, as C lays it out: the counters, the object arrays (496 bytes), then the sub's and the
# timers' bytes
SEAQUEST = np.dtype([("score", "i4"), ("ramp_index", "i4"), ("oxygen", "i4"), ("diver_count", "i4"),
                     ("objects", "u1", 496), ("counts", "i1", 5), ("sub_x", "i1"), ("sub_y", "i1"),
                     ("sub_right", "i1"), ("surface", "i1"), ("shot_timer", "i1"), ("last_action", "i1"),
                     ("e_spawn_speed", "i1"), ("e_spawn_timer", "i1"), ("d_spawn_timer", "i1"), ("move_speed", "i1"),
                     ("terminal", "i1")], align=True)


@pytest.mark.parametrize("spawn,move,ramp", [(3, 2, 17), (2, 2, 18), (1, 2, 19)])
def test_seaquest_surfacing_at_the_ramps_end_as_the_reference(spawn, move, ramp):
    """The sub one row under the surface with a diver aboard, the ramp at one of its last stages (enemies moving at
    their floor of 2, spawning every 3 or 2 steps) or past them (written into both games): surfacing ramps the spawns
    one step faster, to every step and no further, and leaves the moves at 2, as minatar's does; the games agree to
    the end."""
    run = Lockstep("seaquest", 9, sticky=0.0)
    state = run.batch.slots[:, :SEAQUEST.itemsize].view(SEAQUEST)[:, 0]
    g = run.ref.env
    assert state["e_spawn_speed"][0] == g.e_spawn_speed == 20 and state["move_speed"][0] == g.move_speed == 5
    assert state["oxygen"][0] == g.oxygen == 200 and state["sub_x"][0] == g.sub_x and state["surface"][0] == 1
    values = {"e_spawn_speed": spawn, "move_speed": move, "ramp_index": ramp, "diver_count": 1, "sub_y": 1,
              "surface": 0}
    for key, value in values.items():
        state[key], g.__dict__[key] = value, value
    run.step(2)  # up: surfaces with the diver
    assert (run.ref.env.e_spawn_speed, run.ref.env.move_speed, run.ref.env.surface) == (max(spawn - 1, 1), 2, True)
    rng = np.random.default_rng(5)
    for _ in range(40):
        if run.step(scripted("seaquest", run.ref.env, rng))[1]:
            break


ASTERIX_COUNTERS = ("spawn_speed", "spawn_timer", "move_speed", "move_timer", "ramp_index", "ramp_timer")


@pytest.mark.parametrize("spawn,move,ramp", [(1, 2, 8), (1, 3, 9), (3, 1, 9), (2, 1, 8), (4, 2, 5)])
def test_asterix_ramps_stop_at_their_floors_as_the_reference(spawn, move, ramp):
    """The difficulty ramp one step from its next stage (written into both games) with the spawn interval or the move
    interval already at its floor of 1 (the other above it, so the ramp still runs) and the ramp index odd or even
    (moves speed up at odd ones only): after the stage, and after the one 101 steps later, each interval is
    minatar's, the floors held; the counters and the games agree step by step."""
    run = Lockstep("asterix", 11, sticky=0.0)
    state = run.batch.slots[:, :ASTERIX.itemsize].view(ASTERIX)[:, 0]
    g = run.ref.env
    values = {"spawn_speed": spawn, "spawn_timer": 1, "move_speed": move, "move_timer": 1, "ramp_index": ramp,
              "ramp_timer": 0}
    for key, value in values.items():
        state[key], g.__dict__[key] = value, value
    rng, stages = np.random.default_rng(spawn + move), set()
    for _ in range(230):
        _, terminal = run.step(scripted("asterix", g, rng))
        if terminal:
            break
        assert [int(state[k][0]) for k in ASTERIX_COUNTERS] == [int(getattr(g, k)) for k in ASTERIX_COUNTERS]
        stages.add((g.spawn_speed, g.move_speed, g.ramp_index))
    assert g.spawn_speed >= 1 and g.move_speed >= 1
    assert len(stages) >= 2, stages


class OnTheEdge(Recorder):
    """A Recorder whose uniforms are, half the time, exactly `edge` (the sticky-action probability)."""

    def __init__(self, seed: int, edge: float):
        super().__init__(seed)
        self.edge, self.coin, self.drawn = edge, np.random.default_rng(seed), []

    def rand(self, *size):
        v = self.edge if not size and self.coin.random() < 0.5 else self.rs.rand(*size)
        self.log.extend(np.ravel(v).tolist())
        self.drawn.extend(np.ravel(v).tolist())
        return v


@pytest.mark.parametrize("sticky", [0.5, 0.25])
def test_breakout_a_sticky_draw_equal_to_the_probability_plays_the_chosen_action(sticky):
    """minatar repeats the previous action when rand() < the sticky probability: a draw of exactly the probability
    (a dyadic one, which numpy's 53-bit uniforms can hit) plays the chosen action; draws below it repeat."""
    run = Lockstep("breakout", 12, sticky=sticky)
    run.rec = run.ref.random = run.ref.env.random = OnTheEdge(12, sticky)
    rng, played_on_edge = np.random.default_rng(12), 0
    for _ in range(300):
        chosen, before, first = int(rng.integers(6)), run.ref.last_action, len(run.rec.drawn)
        run.step(chosen)  # the step's first uniform is minatar's sticky draw
        played_on_edge += run.rec.drawn[first] == sticky and chosen != before
    assert run.events["sticky_changed"] > 20 and played_on_edge > 20, (run.events, played_on_edge)


SEAQUEST_COUNTERS = ("e_spawn_speed", "move_speed", "ramp_index", "oxygen", "diver_count")


@pytest.mark.parametrize("spawn,move,ramp", [(1, 2, 19), (1, 3, 18), (1, 3, 17), (4, 2, 21), (2, 3, 15)])
def test_seaquest_ramp_counters_after_surfacing_are_minatars(spawn, move, ramp):
    """Surfacing with a diver aboard from ramp stages at and around the floors (spawns every step, moves every 2
    steps; odd and even ramp indices, written into both games): the spawn and move intervals, the ramp index (minatar's
    difficulty_ramp()), the oxygen and the diver count are minatar's after the surfacing and at each step after."""
    run = Lockstep("seaquest", 13, sticky=0.0)
    state = run.batch.slots[:, :SEAQUEST.itemsize].view(SEAQUEST)[:, 0]
    g = run.ref.env
    values = {"e_spawn_speed": spawn, "move_speed": move, "ramp_index": ramp, "diver_count": 1, "sub_y": 1,
              "surface": 0}
    for key, value in values.items():
        state[key], g.__dict__[key] = value, value
    rng = np.random.default_rng(spawn * move)
    for t in range(12):
        _, terminal = run.step(2 if t == 0 else scripted("seaquest", g, rng))
        if terminal:
            break
        assert [int(state[k][0]) for k in SEAQUEST_COUNTERS] == [int(getattr(g, k)) for k in SEAQUEST_COUNTERS], t
    assert run.events["steps"] >= 1 and g.difficulty_ramp() >= ramp


@pytest.fixture(params=["default", "avx2"])
def other_target(request, monkeypatch):
    """Builds for another target than this machine's whole one. default: the compiler's default target (no AVX2):
    the games' per-cell observation writes, which GPUs run. avx2: this machine's target without AVX-512 (CC with
    -mno-avx512f): the AVX2 row stores, which a build on an AVX-512 machine never takes."""
    if request.param == "default":
        monkeypatch.setenv("FASTVEC_NATIVE_ARCH", "0")
    else:
        cc = cpu.find_compiler()
        if "__AVX2__" not in cpu.native_arch(cc)[1]:  # the macros of this machine's whole target
            pytest.skip("this processor (or compiler) has no AVX2")
        monkeypatch.setenv("CC", shlex.join([*cc, "-mno-avx512f"]))
    yield
    monkeypatch.undo()


@pytest.mark.parametrize("name,seed", [("space_invaders", 3), ("breakout", 0)])
def test_other_target_builds_observe_as_the_reference(other_target, name, seed):
    """Both builds' observation writes put every object on minatar's channel (Space Invaders' enemy bullets on 5,
    friendly ones on 4, aliens on 1 and 2 or 3 by direction; Breakout's ball, trail, paddle and bricks)."""
    seen = {"e_bullet": 0, "f_bullet": 0}

    def tally(run):
        state = run.ref.state()
        if name == "space_invaders":
            seen["e_bullet"] += bool(state[..., 5].any())
            seen["f_bullet"] += bool(state[..., 4].any())

    run = play(name, seed, 1500, tally)
    assert run.events["episodes"] >= 1
    if name == "space_invaders":
        assert seen["e_bullet"] > 100 and seen["f_bullet"] > 100, seen
