"""What the CUDA trainer's host code hands the driver, against a host-memory stand-in for device memory: the reward
moments' start and checkpoint round trip, reward scaling's launches, the host-env rollout's count and CUDA graphs,
and an evaluation batch's uploads and staging launch."""

from __future__ import annotations

import contextlib
import math
import time
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda import host_envs as host_envs_mod
from fastvec.trainer.cuda import matches as matches_mod
from fastvec.trainer.cuda.arena import Arena
from fastvec.trainer.cuda.heads import MOMENT_THREADS, HeadOps, record_reward_scaling
from fastvec.trainer.cuda.plan import pool_row_floats
from fastvec.trainer.settings import Config


class _HostMemory:
    """The driver calls an Arena makes (mem_alloc, memset_d8, memcpy_htod/dtoh), over one host byte buffer."""

    BASE = 1 << 20

    def __init__(self):
        self.memory = bytearray()

    def mem_alloc(self, nbytes):
        self.memory = bytearray(nbytes)
        return _Allocation(self.BASE)

    def memset_d8(self, ptr, value, nbytes):
        self.memory[ptr - self.BASE:ptr - self.BASE + nbytes] = bytes([value]) * nbytes

    def memcpy_htod(self, ptr, value):
        raw = np.ascontiguousarray(value).tobytes()
        self.memory[ptr - self.BASE:ptr - self.BASE + len(raw)] = raw

    def memcpy_dtoh(self, out, ptr):
        out[...] = np.frombuffer(self.memory, out.dtype, out.size, ptr - self.BASE).reshape(out.shape)


class _Allocation(int):
    def free(self):
        pass


class _Launches:
    """Stands in for device.Launcher: logs each launch as (kind, name, threads or grid, args)."""

    def __init__(self, module=None, stream=None):
        self.module, self.stream, self.log = module, stream, []
        self.attributes = {}

    def launch(self, name, threads, *args):
        self.log.append(("launch", name, threads, args))

    def launch_grid(self, name, grid, block, *args):
        self.log.append(("grid", name, (grid, block), args))

    def function(self, name):
        return SimpleNamespace(set_attribute=lambda attribute, value: self.attributes.__setitem__((name, attribute),
                                                                                                  value))


# ------------------------------------------------------------------------------------------------
# Reward normalisation's moments (HeadOps) and its launches (record_reward_scaling)

def _head_ops(norm_reward: bool):
    spec = ref.PolicySpec(obs_size=4, num_actions=3, kind="mlp", hidden=8, layers=1)
    arena = Arena()
    arena.add("reward_moments", (4,), np.float64)
    arena.add("head_nvec", (1,), np.int64)
    cuda = _HostMemory()
    arena.allocate(cuda)
    ops = HeadOps(spec, ref.FlatLayout(ref.param_table(spec)), arena, SimpleNamespace(),
                  SimpleNamespace(norm_reward=norm_reward))
    ops.start(cuda)
    return ops, arena, cuda


def test_reward_moments_start_as_gymnasiums_running_mean_std_and_survive_a_checkpoint():
    """The returns' statistics start as NumpyTrainer's (Gymnasium's RunningMeanStd: mean 0, var 1, count 1e-4), a
    checkpoint carries (mean, var, count), and loading them sets the rewards' scale 1 / sqrt(var + 1e-8)."""
    from gymnasium.wrappers.utils import RunningMeanStd
    start = RunningMeanStd(shape=())
    ops, arena, cuda = _head_ops(True)
    assert ops.reward_norm() == [start.mean, start.var, start.count]
    np.testing.assert_array_equal(arena.get(cuda, "reward_moments")[:3], [start.mean, start.var, start.count])
    ops.load_reward_norm([0.5, 4.0, 321.0])
    assert ops.reward_norm() == [0.5, 4.0, 321.0]
    np.testing.assert_allclose(arena.get(cuda, "reward_moments")[3], 1 / math.sqrt(4.0 + 1e-8), rtol=1e-15)
    ops.load_reward_norm([])  # a checkpoint without reward statistics leaves them as they are
    assert ops.reward_norm() == [0.5, 4.0, 321.0]


def test_without_reward_normalisation_the_checkpoint_holds_the_start_and_loading_changes_nothing():
    from gymnasium.wrappers.utils import RunningMeanStd
    start = RunningMeanStd(shape=())
    ops, arena, cuda = _head_ops(False)
    assert ops.reward_norm() == [start.mean, start.var, start.count]
    ops.load_reward_norm([0.5, 4.0, 321.0])
    assert ops.reward_norm() == [start.mean, start.var, start.count]
    np.testing.assert_array_equal(arena.get(cuda, "reward_moments"), np.zeros(4))  # never written


@pytest.mark.parametrize("norm_obs, norm_reward", [(True, False), (False, True)])
def test_running_statistics_refuse_a_gpu_group_either_kind(norm_obs, norm_reward):
    """train.norm_obs and train.norm_reward each keep statistics that ranks would not share: either one with a
    group of GPUs is refused; neither is fine."""
    from fastvec.trainer.config import ConfigError
    spec = ref.PolicySpec(obs_size=4, num_actions=3, kind="mlp", hidden=8, layers=1, norm_obs=norm_obs)
    layout, group = ref.FlatLayout(ref.param_table(spec)), SimpleNamespace(rank=0, world_size=2)
    with pytest.raises(ConfigError, match="does not share across GPUs"):
        HeadOps(spec, layout, None, SimpleNamespace(), SimpleNamespace(norm_reward=norm_reward), group)
    plain = ref.PolicySpec(obs_size=4, num_actions=3, kind="mlp", hidden=8, layers=1)
    HeadOps(plain, ref.FlatLayout(ref.param_table(plain)), None, SimpleNamespace(),
            SimpleNamespace(norm_reward=False), group)


def test_reward_scaling_runs_returns_then_moments_then_scale_over_the_rollouts_t_times_r_rewards():
    arena = SimpleNamespace(ptr=lambda name: {"reward_returns": 0x100, "reward_seen": 0x200,
                                              "reward_moments": 0x300}[name])
    plan, k = SimpleNamespace(horizon=5, rows=7), _Launches()
    record_reward_scaling(k, arena, plan, SimpleNamespace(norm_reward=False, gamma=0.9), 0x10, 0x20)
    assert k.log == []
    record_reward_scaling(k, arena, plan, SimpleNamespace(norm_reward=True, gamma=0.9), 0x10, 0x20)
    assert [(kind, name, threads) for kind, name, threads, _ in k.log] == [
        ("launch", "reward_returns_kernel", 7), ("grid", "reward_moments_kernel", (1, MOMENT_THREADS)),
        ("launch", "reward_scale_kernel", 35)]
    returns, moments, scale = (args for _, _, _, args in k.log)
    assert returns == (5, 7, 0x10, 0x20, 0.9, 0x100, 0x200)
    assert [type(x) for x in returns[:2]] == [np.int32, np.int32] and type(returns[4]) is np.float64
    assert moments == (35, 0x200, 0x300) and type(moments[0]) is np.int64
    assert scale == (35, 0x10, 0x300) and type(scale[0]) is np.int64


# ------------------------------------------------------------------------------------------------
# The host-env rollout: every piece eager in the first rollout, then one graph a piece

class _Graph:
    """Stands in for native.graphs.CudaGraph: a capture runs what it records, a launch counts."""

    def __init__(self, stream):
        self.stream, self.launches, self.captured = stream, 0, False

    @contextlib.contextmanager
    def capture(self):
        yield self
        self.captured = True

    def launch(self):
        self.launches += 1

    def close(self):
        pass


def _rollout_host(monkeypatch, horizon: int, groups: int):
    monkeypatch.setattr(host_envs_mod, "CudaGraph", _Graph)
    host = host_envs_mod.HostEnvs.__new__(host_envs_mod.HostEnvs)
    host.plan = SimpleNamespace(horizon=horizon, num_agents=1, slot_count=2, choices=SimpleNamespace(graphs=True))
    host.k, host.train, host.arena = SimpleNamespace(stream=SimpleNamespace(handle=9)), \
        SimpleNamespace(norm_reward=False), None
    host.action_shape, host.timing, host.graphs, host.rollouts_run = (), {"env": 0.0, "wait": 0.0}, {}, 0
    host.inputs = lambda g: []
    host.slot = lambda name, slot, offset=0: 0
    enqueued = []
    host.carry_in = lambda slot: enqueued.append(("carry", slot))
    host.infer = lambda g, t, slot: enqueued.append(("infer", g["index"], t, slot))
    host.record_step = lambda g, t, slot: enqueued.append(("record", g["index"], t, slot))
    host.bootstrap = lambda slot: enqueued.append(("bootstrap", slot))
    host.groups = []
    for i in range(groups):
        batch = SimpleNamespace(step=lambda actions: None, rewards=np.zeros((2, 1), np.float32),
                                episode_return=np.zeros((2, 1), np.float32), episode_stats=np.zeros((2, 1)),
                                episode_length=np.zeros(2), terminated=np.zeros(2, bool), truncated=np.zeros(2, bool))
        views = {"rewards": np.zeros(2, np.float32), "ep_return": np.zeros(2, np.float32),
                 "ep_stats": np.zeros((2, 1)), "ep_length": np.zeros(2), "terminated": np.zeros(2, bool),
                 "truncated": np.zeros(2, bool)}
        host.groups.append({"index": i, "batch": batch, "views": views, "rows": 2, "envs": 2,
                            "actions": np.zeros(2, np.int32),
                            "event": SimpleNamespace(record=lambda stream: None, synchronize=lambda: None)})
    return host, enqueued


def test_each_group_waits_for_its_actions_and_hands_the_gpu_the_env_step_just_taken(monkeypatch):
    """Per step and group: wait for the group's event, step its batch with the actions, put the step's inputs and
    outcomes into its pinned views, enqueue the record (and next policy step), and record the event again unless
    that was the last step (the next rollout's start records it)."""
    horizon, groups = 3, 2
    host, log = _rollout_host(monkeypatch, horizon, groups)
    host.plan.choices.graphs = False
    for i, g in enumerate(host.groups):
        g["event"] = SimpleNamespace(record=lambda stream, i=i: log.append(("event", i, stream.handle)),
                                     synchronize=lambda i=i: log.append(("wait", i)))
        g["obs"] = np.zeros((2, 3), np.float32)

        def step(actions, g=g, i=i):
            log.append(("step", i))
            g["obs"] += 1
            g["batch"].rewards[...] = g["obs"][:, :1] * 10

        g["batch"].step = step
        g["views"]["obs"] = np.zeros((2, 3), np.float32)
    host.inputs = lambda g: [("obs", 3, g["obs"])]
    seen = []
    host.record_step = lambda g, t, slot: (log.append(("record", g["index"], t, slot)), seen.append(
        (g["index"], t, g["views"]["obs"].copy(), g["views"]["rewards"].copy())))
    host.record(1)
    expected = [("carry", 1), ("infer", 0, 0, 1), ("event", 0, 9), ("infer", 1, 0, 1), ("event", 1, 9)]
    for t in range(horizon):
        for g in range(groups):
            expected += [("wait", g), ("step", g), ("record", g, t, 1)] + [("event", g, 9)] * (t + 1 < horizon)
    assert log == expected + [("bootstrap", 1)]
    for g, t, obs, rewards in seen:
        np.testing.assert_array_equal(obs, np.full((2, 3), t + 1.0))
        np.testing.assert_array_equal(rewards, np.full(2, 10.0 * (t + 1)))


def test_a_rollout_carries_in_the_previous_slots_last_step(monkeypatch):
    """obs[0], starts[0] (and a team's masks[0], world[0]) of a slot are obs[T] ... of the slot before it."""
    host, _ = _rollout_host(monkeypatch, 4, 1)
    host.plan = SimpleNamespace(horizon=4, rows=6, slot_count=2, masked=True)
    host.spec = SimpleNamespace(input_size=5, num_actions=7, world_size=2, critic_input_size=9)
    host.slot = lambda name, slot, offset=0: (name, slot, offset)
    copies = []
    host.cuda = SimpleNamespace(memcpy_dtod_async=lambda dst, src, nbytes, stream: copies.append((dst, src, nbytes)))
    del host.carry_in
    for slot_count, slot, previous in ((2, 0, 1), (2, 1, 0), (1, 0, 0)):  # two slots with train.async, else one
        host.plan.slot_count = slot_count
        del copies[:]
        host.carry_in(slot)
        assert copies == [((name, slot, 0), (name, previous, 4 * 6 * width), 6 * width * item)
                          for name, width, item in [("starts", 1, 4), ("obs", 5, 4), ("masks", 7, 1),
                                                    ("world", 9, 4)]]


def test_a_groups_encoder_input_and_world_rows_start_at_its_first_row(monkeypatch):
    host, _ = _rollout_host(monkeypatch, 4, 1)
    host.plan = SimpleNamespace(horizon=4, rows=6)
    host.slot = lambda name, slot, offset=0: (name, slot, offset)
    host.arena = SimpleNamespace(ptr=lambda name, offset=0: (name, offset))
    host.spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mlp", hidden=8, layers=1, norm_obs=True)
    assert host.x0(2) == ("r_x0", 2 * 5) and host.world(1, 3, 2) == 0  # no world-state critic
    host.spec = SimpleNamespace(input_size=5, world_size=2, critic_input_size=9, norm_obs=False, obs_scale=1.0,
                                encoder="linear", obs_bytes=False)
    assert host.world(1, 3, 2) == ("world", 1, (3 * 6 + 2) * 9) and host.x0(2) == 0


def test_closing_host_envs_frees_every_captured_graph_once(monkeypatch):
    host, _ = _rollout_host(monkeypatch, 1, 1)
    for slot in (0, 1, 0):
        host.record(slot)
    graphs = list(host.graphs.values())
    closed = []
    for g in graphs:
        g.close = lambda g=g: closed.append(g)
    host.close()
    assert closed == graphs and len(graphs) == 2 * 3 and host.graphs is None
    host.close()  # twice: nothing left to free
    assert len(closed) == len(graphs)


def test_host_env_rollouts_run_eagerly_first_then_capture_each_slots_pieces_once_and_replay_them(monkeypatch):
    """The first rollout enqueues every piece eagerly (cuBLAS and the driver load their kernels outside any
    capture); each later rollout into a slot whose pieces are not captured yet captures them (running the
    enqueues once, inside the capture) and launches them; after that a slot's rollout only launches graphs.
    rollouts_run counts the rollouts, which the trainer's warm-up asks."""
    horizon, groups = 2, 2
    host, enqueued = _rollout_host(monkeypatch, horizon, groups)
    one_rollout = lambda slot: ([("carry", slot), ("infer", 0, 0, slot), ("infer", 1, 0, slot)]  # noqa: E731
                                + [("record", g, t, slot) for t in range(horizon) for g in range(groups)]
                                + [("bootstrap", slot)])
    host.record(0)
    assert enqueued == one_rollout(0) and host.graphs == {} and host.rollouts_run == 1
    pieces = 2 + horizon * groups + 1  # starts, steps, bootstrap
    for run, slot in enumerate((1, 0), start=2):
        del enqueued[:]
        host.record(slot)
        assert enqueued == one_rollout(slot) and host.rollouts_run == run  # captured now
        mine = [g for key, g in host.graphs.items() if key[0] == slot]
        assert len(mine) == pieces and all(g.captured and g.launches == 1 and g.stream == 9 for g in mine)
    del enqueued[:]
    host.record(1)
    assert enqueued == [] and host.rollouts_run == 4  # replayed
    assert sorted(g.launches for g in host.graphs.values()) == [1] * pieces + [2] * pieces


def test_host_env_rollouts_without_graphs_enqueue_every_piece_every_time(monkeypatch):
    host, enqueued = _rollout_host(monkeypatch, 1, 1)
    host.plan.choices.graphs = False
    for slot in (0, 1, 0):
        host.record(slot)
    assert len(enqueued) == 3 * 4 and host.graphs == {} and host.rollouts_run == 3


# ------------------------------------------------------------------------------------------------
# An evaluation batch (MatchBatch): its games' uploads and the weights' staging launch

MODULE_INTS = {"fv_num_agents": 2, "match_staged_floats": 40, "fv_slot_size": 24, "match_group_floats": 76,
               "match_game_floats": 19, "match_rows_per_warp": 1, "match_slices": 1}


def _match_batch(monkeypatch, opponents: int, deterministic: bool = True):
    """A MatchBatch of bot levels 0 and 5 and `opponents` past selves, 3 games each, over stand-ins."""
    monkeypatch.setattr(matches_mod, "module_int", lambda cuda, module, name: MODULE_INTS[name])
    monkeypatch.setattr(device, "Launcher", _Launches)
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=8, layers=1)
    layout = ref.FlatLayout(ref.param_table(spec))
    cuda = _HostMemory()
    dev = SimpleNamespace(get_attribute=lambda attribute: {"sms": 132, "block": 227 << 10, "sm": 228 << 10}[attribute])
    cuda.Context = SimpleNamespace(get_device=lambda: dev)
    cuda.device_attribute = SimpleNamespace(MULTIPROCESSOR_COUNT="sms", MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="block",
                                            MAX_SHARED_MEMORY_PER_MULTIPROCESSOR="sm")
    cuda.function_attribute = SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="dynamic shared")
    owner = SimpleNamespace(cuda=cuda, spec=spec, stream=SimpleNamespace(synchronize=lambda: None))
    weights = np.random.default_rng(1).normal(size=(1 + opponents, pool_row_floats(layout))).astype(np.float32)
    levels, rows = [0, 5] + [-1] * opponents, [0, 0] + list(range(1, 1 + opponents))
    games, seed = 3, 7
    env = Config.of(load_config("pong", {"selfplay": {"enabled": True}}))
    batch = matches_mod.MatchBatch(owner, "module", env, levels, rows, weights, games, seed, deterministic)
    return batch, cuda, weights, levels, games, seed


@pytest.mark.parametrize("opponents", [0, 2])
def test_an_evaluation_batch_uploads_its_games_and_stages_every_weight_row(monkeypatch, opponents):
    """games g = match g // games: seeds (seed << 32) + the game's index in its match, the match's bot level and
    weights row; every seat starts an episode; no score yet; then match_reset_kernel over the N games and
    match_stage_kernel over (1 + opponents) rows of MATCH_STAGED floats each."""
    batch, cuda, weights, levels, games, seed = _match_batch(monkeypatch, opponents)
    rows, stride = [0, 0] + list(range(1, 1 + opponents)), weights.shape[1]
    n, a = games * len(levels), batch.arena
    assert (batch.num_games, batch.games, batch.stride, batch.max_steps) == (n, games, stride, 20000)
    assert list(a.get(cuda, "seeds")) == [(seed << 32) + g % games for g in range(n)]
    assert list(a.get(cuda, "bot_levels")) == [level for level in levels for _ in range(games)]
    assert list(a.get(cuda, "game_weights")) == [row for row in rows for _ in range(games)]
    np.testing.assert_array_equal(a.get(cuda, "weights"), weights)
    np.testing.assert_array_equal(a.get(cuda, "starts"), np.ones(2 * n, np.float32))
    assert np.isnan(a.get(cuda, "scores")).all() and list(a.get(cuda, "remaining")) == [n]
    reset, stage = batch.k.log
    assert reset == ("launch", "match_reset_kernel", n, (n, a.ptr("slots"), a.ptr("seeds"), a.ptr("bot_levels"),
                                                          a.ptr("game_obs")))
    staged = MODULE_INTS["match_staged_floats"]
    assert stage == ("launch", "match_stage_kernel", (1 + opponents) * staged,
                     (1 + opponents, a.ptr("weights"), stride, a.ptr("staged")))
    assert a.get(cuda, "staged").shape == (1 + opponents, staged)
    assert batch.k.attributes == {("match_play_kernel", "dynamic shared"): batch.layout[3]}
    dev_args = (132, 227 << 10, 228 << 10)
    assert batch.layout == matches_mod.play_layout(len(levels), games, opponents > 0, staged,
                                                   *(MODULE_INTS[name] for name in (
                                                       "match_group_floats", "match_game_floats", "fv_num_agents",
                                                       "match_rows_per_warp", "match_slices")), *dev_args)
    assert batch.layout[1] == 1 + (opponents > 0)  # the player's weights, and one opponent's, in shared memory
    assert type(batch.blocks) is int and batch.blocks == len(levels) * -(-games // batch.layout[0])


# ------------------------------------------------------------------------------------------------
# The host-env rollout's pieces: a group's policy step, its step's record and the bootstrap, on its rows

_NAMES = ["state", "last_state", "r_act", "r_pre", "r_x0", "scalars", "episode_acc", "params", "host_in"]
_SLOT_NAMES = ["segment_state", "obs", "starts", "r_y", "actions", "masks", "logp", "values", "rewards", "dones",
               "world"]


def _addr(name, offset=0):
    """A stand-in arena address: each tensor in its own 16 MiB, 4 bytes an element."""
    return ((1 + _NAMES.index(name)) << 24) + 4 * offset


def _slot_addr(name, slot, offset=0):
    return ((64 + 4 * _SLOT_NAMES.index(name) + slot) << 24) + 4 * offset


class _Policy:
    def __init__(self):
        self.calls = []

    def forward(self, k, blas, rows, steps, obs, starts, state_in, state_out, acts, pres, hs, y, params, **kw):
        self.calls.append(dict(rows=rows, steps=steps, obs=obs, starts=starts, state_in=state_in,
                               state_out=state_out, acts=acts, pres=pres, hs=hs, y=y, params=params, **kw))


def _piece_host(spec, masked=False):
    """HostEnvs of 8 rows (one agent an env) in groups of 3 and 5 rows, horizon 4, bptt 2, with stand-ins."""
    host = host_envs_mod.HostEnvs.__new__(host_envs_mod.HostEnvs)
    host.spec, host.layout = spec, ref.FlatLayout(ref.param_table(spec))
    host.plan = SimpleNamespace(horizon=4, rows=8, bptt=2, num_agents=1, masked=masked, slot_count=2)
    host.arena = SimpleNamespace(ptr=_addr)
    host.slot = _slot_addr
    host.k, host.blas, host.params, host.policy = _Launches(stream=SimpleNamespace(handle=3)), "blas", "params", \
        _Policy()
    host.seed_key, host.reward_clamp = 0xABCDEF, True
    host.action_shape = () if spec.action_kind == "discrete" else tuple(spec.action_shape)
    copies = []
    host.cuda = SimpleNamespace(
        memcpy_dtod_async=lambda dst, src, nbytes, stream: copies.append(("dtod", dst, src, nbytes, stream.handle)),
        memcpy_dtoh_async=lambda dst, src, stream: copies.append(("dtoh", dst, src, stream.handle)),
        memcpy_htod_async=lambda dst, src, stream: copies.append(("htod", dst, src, stream.handle)))
    host.groups = [{"index": i, "row0": row0, "rows": rows, "envs": rows, "actions": f"pinned actions {i}",
                    "pinned": f"pinned {i}", "dev_in": _addr("host_in", 1000 * i),
                    "dev": {name: _addr("host_in", 1000 * i + 100 * j) for j, name in enumerate(
                        ["obs", "rewards", "ep_return", "ep_stats", "ep_length", "terminated", "truncated", "masks",
                         "world"])},
                    "views": {"ep_stats": np.zeros((rows, 3))}}
                   for i, (row0, rows) in enumerate([(0, 3), (3, 5)])]
    return host, copies


def _check_forward(call, spec, host, g, t, slot, state_out_name):
    r, h, o, ny, row0 = 8, spec.hidden, spec.input_size, spec.head_size + 1, g["row0"]
    assert (call["rows"], call["steps"], call["params"]) == (g["rows"], 1, "params")
    assert call["obs"] == _slot_addr("obs", slot, (t * r + row0) * o)
    assert call["starts"] == _slot_addr("starts", slot, t * r + row0)
    layers = spec.state_layers
    assert call["state_in"] == [_addr("state", layer * r * h + row0 * h) for layer in range(layers)]
    assert call["state_out"] == [_addr(state_out_name, layer * r * h + row0 * h) for layer in range(layers)]
    assert call["acts"] == [_addr("r_act", (i % 2) * r * h + row0 * h) for i in range(spec.layers + 1)]
    width = host.layout.offsets["layer0.w"][1][0]
    for pre in call["pres"]:  # scratch inside r_pre (R, W), the group's rows wherever they start
        assert _addr("r_pre") <= pre and pre + 4 * g["rows"] * width <= _addr("r_pre", r * width)
    assert call["hs"] == [0] * spec.layers and call["y"] == _slot_addr("r_y", slot, row0 * ny)
    assert call["x0"] == 0 and call["world"] == 0  # raw observations, no world-state critic


@pytest.mark.parametrize("t", [0, 1, 2])
def test_a_groups_policy_step_reads_and_writes_its_rows_of_step_t(t):
    """infer: at a segment's first step the group's live state is saved into the segment's (S, Ls, R, H) rows;
    the forward reads obs[t] and starts[t] of the group's rows and writes r_y's; host_sample_kernel samples the
    group's actions, log-probs and values at step t; the actions go down to the group's pinned buffer."""
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mingru", hidden=8, layers=2)
    host, copies = _piece_host(spec, masked=True)
    g, slot, r, h = host.groups[1], 1, 8, 8
    host.infer(g, t, slot)
    saved = [c for c in copies if c[0] == "dtod"]
    if t % 2 == 0:
        assert saved == [("dtod", _slot_addr("segment_state", slot, (((t // 2) * 2 + layer) * r + 3) * h),
                          _addr("state", layer * r * h + 3 * h), 5 * h * 4, 3) for layer in range(2)]
    else:
        assert saved == []
    assert all(type(address) is int for c in saved for address in c[1:3])  # device addresses are whole numbers
    [call] = host.policy.calls
    _check_forward(call, spec, host, g, t, slot, "state")
    [(kind, name, threads, args)] = host.k.log
    assert (kind, name, threads) == ("launch", "host_sample_kernel", 5)
    row = t * r + 3
    assert args == (5, 3, _slot_addr("r_y", slot, 3 * 4), 0, _slot_addr("masks", slot, row * 3),
                    _slot_addr("actions", slot, row), _slot_addr("logp", slot, row), _slot_addr("values", slot, row),
                    _addr("scalars"), t, 0xABCDEF)
    assert [type(x) for x in (args[0], args[1], args[9], args[10])] == [np.int32, np.int32, np.int32, np.uint64]
    assert copies[-1] == ("dtoh", "pinned actions 1", _slot_addr("actions", slot, row), 3)


def test_a_box_groups_policy_step_samples_with_the_layouts_log_stds():
    spec = ref.PolicySpec(obs_size=5, num_actions=0, kind="mlp", hidden=8, layers=1, action_kind="box",
                          action_dims=2)
    host, copies = _piece_host(spec)
    g = host.groups[1]
    host.infer(g, 3, 0)
    [(_, _, _, args)] = host.k.log
    row = 3 * 8 + 3
    assert args[3] == _addr("params", host.layout.offsets["dec.logstd"][0]) and args[4] == 0  # no masks
    assert args[5] == _slot_addr("actions", 0, row * 2)
    assert copies == [("dtoh", "pinned actions 1", _slot_addr("actions", 0, row * 2), 3)]  # no state to save
    assert host.policy.calls[0]["state_in"] == [0]


def test_a_groups_step_record_lands_in_step_t_and_obs_of_t_plus_1_then_the_next_policy_step():
    from fastvec.trainer.cuda.kernel_args import HostRecordArgs, pack
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mingru", hidden=8, layers=1)
    host, copies = _piece_host(spec, masked=True)
    g, r = host.groups[1], 8
    steps = []
    host.infer = lambda g, t, slot: steps.append((g["index"], t, slot))
    host.record_step(g, 1, 0)
    dev = g["dev"]
    args = HostRecordArgs(dev["obs"], dev["rewards"], dev["ep_return"], dev["ep_stats"], dev["ep_length"],
                          dev["terminated"], dev["truncated"], _slot_addr("obs", 0, (2 * r + 3) * 5),
                          _slot_addr("rewards", 0, r + 3), _slot_addr("dones", 0, r + 3),
                          _slot_addr("starts", 0, 2 * r + 3), _addr("episode_acc"), n=5, agents=1, obs_size=5,
                          num_stats=3, reward_clamp=1)
    assert host.k.log == [("launch", "host_record_kernel", 5 * 5, (pack(args),))]
    assert copies == [("htod", _addr("host_in", 1000), "pinned 1", 3),
                      ("dtod", _slot_addr("masks", 0, (2 * r + 3) * 3), dev["masks"], 5 * 3, 3)]
    assert steps == [(1, 2, 0)]
    host.record_step(g, 2, 0)
    host.record_step(g, 3, 0)  # the last step: no policy step after it (the bootstrap's forward is the next)
    assert steps == [(1, 2, 0), (1, 3, 0)]


def test_the_bootstrap_runs_each_group_on_obs_of_t_into_scratch_state_then_advances_the_rollout():
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mingru", hidden=8, layers=2)
    host, copies = _piece_host(spec)
    host.bootstrap(1)
    assert len(host.policy.calls) == 2 and copies == []
    for call, g in zip(host.policy.calls, host.groups):
        _check_forward(call, spec, host, g, 4, 1, "last_state")  # obs[T], starts[T]; the state kept
    assert host.k.log == [("grid", "advance_rollout_kernel", (1, 1), (_addr("scalars"), 4))]
    assert type(host.k.log[0][3][1]) is np.int32


def test_an_mlp_bootstrap_has_no_state_to_read_or_keep():
    spec = ref.PolicySpec(obs_size=5, num_actions=3, kind="mlp", hidden=8, layers=2)
    host, _ = _piece_host(spec)
    host.bootstrap(0)
    assert [(c["state_in"], c["state_out"]) for c in host.policy.calls] == [([0, 0], [0, 0])] * 2


# ------------------------------------------------------------------------------------------------
# The update's head-dependent launches (HeadOps.loss, encode_minibatch, update_obs_norm)

class _Addresses:
    """A stand-in arena: each tensor name its own 16 MiB on first use, 4 bytes an element."""

    def __init__(self):
        self.names = []

    def ptr(self, name, offset=0):
        if name not in self.names:
            self.names.append(name)
        return ((1 + self.names.index(name)) << 24) + 4 * offset


_HEADS = {"discrete": dict(num_actions=4), "multi_discrete": dict(num_actions=0, action_nvec=(3, 2, 5)),
          "box": dict(num_actions=0, action_dims=3)}


@pytest.mark.parametrize("kind", list(_HEADS))
@pytest.mark.parametrize("norm_adv, stats, scatter, weights", [(True, True, True, 0x77), (False, False, False, 0)])
def test_the_loss_launch_hands_the_heads_kernel_the_minibatch_and_the_asked_extras(kind, norm_adv, stats, scatter,
                                                                                   weights):
    """A Discrete head runs ppo.cu's ppo_loss_kernel, the others heads.cu's ppo_loss_head_kernel with their kind,
    D action dimensions and the decoder's width Y = head size + 1; the advantages' moments, the statistics'
    partials and the V-trace scatter only when asked (else null); a Box head's log-stds from the layout."""
    from fastvec.trainer.cuda.heads import HEAD_KINDS
    from fastvec.trainer.cuda.kernel_args import LossArgs, pack
    spec = ref.PolicySpec(obs_size=6, kind="mlp", hidden=8, layers=1, action_kind=kind, **_HEADS[kind])
    layout, a = ref.FlatLayout(ref.param_table(spec)), _Addresses()
    train = SimpleNamespace(norm_reward=False, clip_coef=0.2, vf_clip_coef=0.3, vf_coef=0.5)
    ops = HeadOps(spec, layout, a, SimpleNamespace(mb_rows=96, seqs_per_mb=12), train)
    k = _Launches()
    if weights:
        ops.loss(k, norm_adv, stats, scatter, weights)
    else:  # no importance weights: the V-trace scatter pass (update.py) leaves them out
        ops.loss(k, norm_adv, stats, scatter)
    head = {"discrete": 0, "multi_discrete": 1, "box": 2}[kind]
    assert HEAD_KINDS.get(kind, 0) == head
    expected = LossArgs(
        y=a.ptr("y"), actions=a.ptr("mb_actions"), old_logp=a.ptr("mb_logp"), old_values=a.ptr("mb_values"),
        adv=a.ptr("mb_adv"), returns=a.ptr("mb_returns"), adv_moments=a.ptr("adv_moments") if norm_adv else 0,
        scalars=a.ptr("scalars"), dy=a.ptr("dy"), partial=a.ptr("block_partial") if stats else 0,
        counter=a.ptr("reduce_counter") if stats else 0, new_logp=a.ptr("new_logp") if scatter else 0,
        src=a.ptr("mb_src") if scatter else 0, clip_coef=0.2, vf_clip_coef=0.3, vf_coef=0.5, n=96, kind=head,
        D={"discrete": 0, "multi_discrete": 3, "box": 3}[kind], Y={"discrete": 5, "multi_discrete": 11, "box": 4}[kind],
        weights=weights, Bm=12,
        nvec=a.ptr("head_nvec") if kind == "multi_discrete" else 0,
        logstd=a.ptr("params", layout.offsets["dec.logstd"][0]) if kind == "box" else 0,
        dlogstd=a.ptr("dlogstd") if kind == "box" else 0)
    assert k.log == [("launch", "ppo_loss_head_kernel" if head else "ppo_loss_kernel", 96, (pack(expected),))]


@pytest.mark.parametrize("norm_obs, obs_scale", [(True, 1.0), (False, 0.5), (False, 1.0)])
def test_the_minibatch_is_encoded_in_place_only_when_the_policy_transforms_observations(norm_obs, obs_scale):
    spec = ref.PolicySpec(obs_size=6, num_actions=3, kind="mlp", hidden=8, layers=1, norm_obs=norm_obs,
                          obs_scale=obs_scale)
    a, calls = _Addresses(), []
    ops = HeadOps(spec, ref.FlatLayout(ref.param_table(spec)), a, SimpleNamespace(mb_rows=96),
                  SimpleNamespace(norm_reward=False))
    ops.encode_minibatch("k", SimpleNamespace(encode=lambda *args: calls.append(args)))
    transforms = norm_obs or obs_scale != 1.0
    assert calls == [("k", a.ptr("mb_obs"), a.ptr("mb_obs"), 96)] * transforms


@pytest.mark.parametrize("norm_obs", [True, False])
def test_observation_statistics_merge_the_rollouts_t_times_r_rows_into_the_layouts(norm_obs):
    """obs_norm_update_kernel: a block of MOMENT_THREADS per input feature over the rollout's T * R rows (their
    obs_bytes-strided rows of I features, times obs_scale), into the layout's mean and var; then the count."""
    spec = ref.PolicySpec(obs_size=6, num_actions=3, kind="mlp", hidden=8, layers=1, norm_obs=norm_obs,
                          obs_scale=0.25)
    layout, a = ref.FlatLayout(ref.param_table(spec)), _Addresses()
    plan = SimpleNamespace(horizon=16, rows=32, obs_bytes=1)
    ops = HeadOps(spec, layout, a, plan, SimpleNamespace(norm_reward=False))
    k = _Launches()
    ops.update_obs_norm(k, 0x5000)
    if not norm_obs:
        assert k.log == []
        return
    norm = a.ptr("params", layout.offsets["obs_norm.mean"][0])
    assert k.log == [("grid", "obs_norm_update_kernel", (6, MOMENT_THREADS), (512, 6, 32, 1, 0x5000, 0.25, norm)),
                     ("grid", "obs_norm_count_kernel", (1, 1), (512, 6, norm))]
    update, count = k.log[0][3], k.log[1][3]
    assert [type(x) for x in update[:4]] == [np.int64, np.int32, np.int32, np.int32] and type(update[5]) is np.float64
    assert [type(x) for x in count[:2]] == [np.int64, np.int32]


# ------------------------------------------------------------------------------------------------
# An evaluation's play: launches of PLAY_STEPS steps until every game has a score

def test_a_batch_plays_steps_from_first_step_with_its_games_layout_and_reads_back_its_results(monkeypatch):
    """play(): match_play_kernel over the batch's blocks with MatchPlayArgs (its arrays, the weights' row stride,
    the seed's key, games per match and block, policies in shared memory, steps, the env's step limit);
    remaining(), steps() and scores() read the arena."""
    from fastvec.trainer.cuda.kernel_args import MatchPlayArgs, pack
    batch, cuda, weights, levels, games, seed = _match_batch(monkeypatch, opponents=2, deterministic=False)
    a, (per_block, in_shared, threads, shared) = batch.arena, batch.layout
    batch.k.log.clear()
    launched = []
    batch.k.launch_shared = lambda name, n, block, nbytes, *args: launched.append((name, n, block, nbytes, args))
    batch.play(2048)
    batch.play(0, steps=7)
    n = games * len(levels)
    expected = [MatchPlayArgs(*(a.ptr(name) for name in matches_mod.MATCH_PLAY_ARRAYS), stride=weights.shape[1],
                              key=ref.sampling_key(seed), first_step=first, num_games=n, games_per_match=games,
                              games_per_block=per_block, shared_policies=in_shared, steps=steps, deterministic=0,
                              max_episode_steps=20000)
                for first, steps in ((2048, matches_mod.PLAY_STEPS), (0, 7))]
    got = [MatchPlayArgs.from_buffer_copy(args[0]) for *_, args in launched]
    for field, _ in MatchPlayArgs._fields_:
        assert [getattr(g, field) for g in got] == [getattr(e, field) for e in expected], field
    assert launched == [("match_play_kernel", batch.blocks * threads, threads, shared, (pack(e),)) for e in expected]
    a.set(cuda, "remaining", np.array([3], np.int32))
    a.set(cuda, "game_steps", np.arange(n, dtype=np.int32) * 2)
    scores = np.linspace(-1, 1, n).astype(np.float32)
    a.set(cuda, "scores", scores)
    assert batch.remaining() == 3 and type(batch.remaining()) is int
    assert batch.steps() == 2 * (n - 1) and type(batch.steps()) is int
    np.testing.assert_array_equal(batch.scores(), scores.astype(np.float64))
    assert batch.scores().dtype == np.float64
    a.set(cuda, "game_steps", np.zeros(n, np.int32))
    assert batch.steps() == 0  # no game has ended yet


def test_closing_a_batch_waits_for_its_stream_and_frees_its_memory_once_allocated(monkeypatch):
    batch, *_ = _match_batch(monkeypatch, opponents=0)
    log = []
    batch.stream = SimpleNamespace(synchronize=lambda: log.append("synchronize"))
    batch.arena.allocation = SimpleNamespace(free=lambda: log.append("free"))
    batch.close()
    assert log == ["synchronize", "free"]
    batch.arena.allocation = None  # MatchBatch's own failure path: close() before the arena is allocated
    batch.close()
    assert log == ["synchronize", "free", "synchronize"]


class _PlayedBatch:
    """Stands in for MatchBatch in evaluate()'s loop: its games need `launches` launches to all have a score."""

    def __init__(self, launches, max_steps=0):
        self.left, self.max_steps, self.firsts, self.layout, self.closed = launches, max_steps, [], (4, 1, 64, 0), 0

    def play(self, first_step):
        self.firsts.append(first_step)
        self.left -= 1

    def remaining(self):
        return 5 * max(self.left, 0)

    def steps(self):
        return 100 * len(self.firsts)

    def scores(self):
        return np.full(3, float(len(self.firsts)))

    def close(self):
        self.closed += 1


def _gpu_matches(monkeypatch, batches):
    matches = matches_mod.GpuMatches.__new__(matches_mod.GpuMatches)
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=8, layers=1)
    matches.spec, matches.layout = spec, ref.FlatLayout(ref.param_table(spec))
    matches.stride, matches.modules, matches.cuda = pool_row_floats(matches.layout), {}, None
    syncs = []
    matches.stream = SimpleNamespace(synchronize=lambda: syncs.append(len(syncs)))
    matches.last_steps, matches.history = 0, []
    matches.module = lambda env_config, defines=None: "module"
    monkeypatch.setattr(matches_mod, "module_int", lambda cuda, module, name: {  # no per-game bot level
        "match_bot_levels": 0, "fv_num_agents": 1}[name])
    made = iter(batches)
    monkeypatch.setattr(matches_mod, "MatchBatch", lambda *args, **kw: next(made))
    config = load_config("pong", {"selfplay": {"enabled": True}})
    player = SimpleNamespace(params=ref.init_params(spec, np.random.default_rng(0), np.float32))
    return matches, config, player, syncs


def test_evaluation_plays_each_batch_until_its_games_all_have_a_score(monkeypatch):
    """Launch after launch (each PLAY_STEPS steps on from the last, the stream synchronised between) every batch
    with games left plays; a finished batch plays no more; the longest game's steps and the launches are kept."""
    quick, slow = _PlayedBatch(1), _PlayedBatch(3)
    slow.remaining = lambda: int(slow.left > 0)  # one game left still plays on
    matches, config, player, syncs = _gpu_matches(monkeypatch, [quick, slow])
    t0 = time.perf_counter()
    bots, pasts = matches.evaluate(config, player, [0, 4], [], 3, seed=1)
    assert 0 <= matches.history[-1]["seconds"] <= time.perf_counter() - t0 + 1e-3
    assert matches.history[-1]["games_per_block"] == [4, 4] and matches.history[-1]["policies_in_shared"] == [1, 1]
    step = matches_mod.PLAY_STEPS
    assert quick.firsts == [0] and slow.firsts == [0, step, 2 * step] and syncs == [0, 1, 2]
    assert list(bots) == [0, 4] and list(bots[0]) == [1.0] * 3 and list(bots[4]) == [3.0] * 3 and pasts == []
    assert matches.last_steps == 300 and matches.history[-1]["launches"] == 3
    assert matches.history[-1]["games"] == 6 and matches.history[-1]["seconds"] >= 0
    assert quick.closed == slow.closed == 1


def test_evaluation_stops_with_an_error_once_games_outlast_the_envs_step_limit(monkeypatch):
    """A batch still without every score a launch past max_steps + PLAY_STEPS steps is a kernel bug: evaluate
    raises rather than loop forever, and still closes its batches; one at the limit plays on."""
    step = matches_mod.PLAY_STEPS
    at_limit = _PlayedBatch(3, max_steps=2 * step)  # 3 launches = max_steps + PLAY_STEPS: no error
    matches, config, player, _ = _gpu_matches(monkeypatch, [at_limit])
    matches.evaluate(config, player, [0], [], 3, seed=1)
    assert at_limit.firsts == [0, step, 2 * step]
    stuck = _PlayedBatch(10, max_steps=2 * step)
    matches, config, player, _ = _gpu_matches(monkeypatch, [stuck])
    with pytest.raises(RuntimeError, match=f"30 evaluation games have no score after {4 * step} steps, past the "
                                           f"env's step limit {2 * step}"):
        matches.evaluate(config, player, [0], [], 3, seed=1)
    assert len(stuck.firsts) == 4 and stuck.closed == 1
    unlimited = _PlayedBatch(6, max_steps=0)  # no step limit: plays until done
    matches, config, player, _ = _gpu_matches(monkeypatch, [unlimited])
    matches.evaluate(config, player, [0], [], 3, seed=1)
    assert len(unlimited.firsts) == 6


def test_play_match_and_play_bot_are_evaluate_with_one_opponent_or_one_level(monkeypatch):
    matches = matches_mod.GpuMatches.__new__(matches_mod.GpuMatches)
    calls = []

    def evaluate(config, player, levels, opponents, games, seed, deterministic=False):
        calls.append((config, player, levels, opponents, games, seed, deterministic))
        return {level: f"bot {level}" for level in levels}, [f"past {o}" for o in opponents]

    matches.evaluate = evaluate
    assert matches.play_match("cfg", "me", "them", 6, seed=2) == "past them"
    assert matches.play_bot("cfg", "me", 3, 6, seed=2, deterministic=True) == "bot 3"
    assert matches.play_bot("cfg", "me", 4, 6, seed=2) == "bot 4"
    assert calls == [("cfg", "me", [], ["them"], 6, 2, False), ("cfg", "me", [3], [], 6, 2, True),
                     ("cfg", "me", [4], [], 6, 2, False)]


def test_evaluation_is_sampled_unless_asked_deterministic(monkeypatch):
    made = []
    matches, config, player, _ = _gpu_matches(monkeypatch, [])
    monkeypatch.setattr(matches_mod, "MatchBatch", lambda *args: made.append(args) or _PlayedBatch(1))
    matches.evaluate(config, player, [0], [], 3, seed=1)
    matches.evaluate(config, player, [0], [], 3, seed=1, deterministic=True)
    assert [args[-1] for args in made] == [False, True]
    assert made[0][5].shape == (1, matches.stride)  # the player's weights row only


def test_an_evaluation_with_nothing_to_play_returns_no_scores(monkeypatch):
    matches, config, player, syncs = _gpu_matches(monkeypatch, [])
    matches.last_steps = 7
    assert matches.evaluate(config, player, [], [], 3, seed=1) == ({}, [])
    assert matches.last_steps == 0 and matches.history[-1]["games"] == 0 and syncs == []


def test_a_new_gpu_matches_has_played_nothing_and_builds_each_env_and_defines_once(monkeypatch):
    """GpuMatches: no steps or history yet; module() compiles an env build with the policy's defines and any
    given ones once per (env, defines), and prepare() builds the per-game bot level build ahead."""
    from fastvec.trainer.cuda.plan import policy_defines
    loads = []
    monkeypatch.setattr(device, "init", lambda: SimpleNamespace(Stream=lambda: "stream"))
    monkeypatch.setattr(device, "load_module", lambda source, defines: loads.append(dict(defines)) or len(loads))
    monkeypatch.setattr(matches_mod, "env_build", lambda env_config, batch: (
        "source", {"ENV": env_config.to_dict()["env"]["pong_bot"]}, 100))
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=8, layers=1)
    matches = matches_mod.GpuMatches(spec)
    assert (matches.last_steps, matches.history, matches.modules, matches.stream) == (0, [], {}, "stream")
    assert matches.stride == pool_row_floats(matches.layout)
    config = Config.of(load_config("pong", {"selfplay": {"enabled": True}}))
    first = matches.module(config)
    assert matches.module(config) == first == 1 and matches.module(config, {}) == 1
    assert loads == [{"ENV": 0, **policy_defines(spec)}]
    bot = config.replace("env", pong_bot=1)
    assert matches.module(bot, {"BOT_LEVEL": 3}) == 2 and matches.module(bot, {"BOT_LEVEL": 3}) == 2
    assert loads[1] == {"ENV": 1, **policy_defines(spec), "BOT_LEVEL": 3}
    matches.prepare(bot)  # the per-game level build: the bot switched off, BOT_LEVEL -1
    assert loads[2] == {"ENV": 0, **policy_defines(spec), "BOT_LEVEL": -1} and len(loads) == 3
    matches.prepare(config.replace("selfplay", bot_level_param=""))  # no level parameter: nothing to prepare
    assert len(loads) == 3
