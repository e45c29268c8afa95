"""The CUDA trainer's host-side bookkeeping without a GPU, against stand-ins for the driver's objects: the
collectors' graphs and train.async's weight hand-over, the host-env rollout's groups and time split, the ranks'
keys and collectives, and how an evaluation groups its bot levels and past selves into batches of games."""

from __future__ import annotations

import contextlib
import time
from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda import actors
from fastvec.trainer.cuda import matches as matches_mod
from fastvec.trainer.cuda.host_envs import HostEnvs
from fastvec.trainer.cuda.plan import pool_row_floats


class _Path:
    """A rollout path that logs what it is asked to do."""

    def __init__(self, log):
        self.log = log
        self.k = SimpleNamespace(stream=SimpleNamespace(handle=77))

    def record(self, slot):
        self.log.append(("record", slot))

    def close(self):
        self.log.append(("path closed",))


class _Graph:
    """Stands in for native.graphs.CudaGraph: logs its capture, launches and close."""

    made = []

    def __init__(self, stream):
        self.stream, self.closed, self.launches = stream, 0, 0
        _Graph.made.append(self)

    @contextlib.contextmanager
    def capture(self):
        self.path_log.append(("capture begins",))
        yield self
        self.path_log.append(("capture ends",))

    def launch(self):
        self.launches += 1

    def close(self):
        self.closed += 1


@pytest.fixture
def graph_log(monkeypatch):
    log = []
    _Graph.made = []
    _Graph.path_log = log
    monkeypatch.setattr(actors, "CudaGraph", _Graph)
    return log


def test_graph_collector_records_the_first_rollout_eagerly_then_captures_one_graph_a_slot(graph_log):
    collector = actors.GraphCollector(_Path(graph_log), graphs=True, slot_count=2)
    collector.collect(0)  # eagerly: cuBLAS and the driver load their kernels outside any capture
    assert graph_log == [("record", 0)] and not _Graph.made
    collector.collect(1)
    collector.collect(0, overlaps=True)
    collector.collect(1)
    assert graph_log == [("record", 0), ("capture begins",), ("record", 1), ("capture ends",),
                         ("capture begins",), ("record", 0), ("capture ends",)]
    assert [g.stream for g in _Graph.made] == [77, 77] and collector.graphs == _Graph.made[::-1]
    assert [g.launches for g in collector.graphs] == [1, 2] and collector.rollouts_run == 4


def test_graph_collector_without_graphs_records_every_rollout(graph_log):
    collector = actors.GraphCollector(_Path(graph_log), graphs=False, slot_count=2)
    for slot in (0, 1, 0):
        collector.collect(slot)
    assert graph_log == [("record", 0), ("record", 1), ("record", 0)] and not _Graph.made
    assert collector.finish_deferred() == 0.0


def test_closing_a_graph_collector_frees_every_slots_graph_and_its_path(graph_log):
    """A trainer's close() must hand each slot's captured graph back to the driver, not leave it to the garbage
    collector: the trainer object may live on (a sweep keeps its trials)."""
    collector = actors.GraphCollector(_Path(graph_log), graphs=True, slot_count=3)
    for slot in (0, 0, 2):
        collector.collect(slot)
    captured = list(_Graph.made)
    assert len(captured) == 2 and collector.graphs[1] is None
    collector.close()
    assert [g.closed for g in captured] == [1, 1]
    assert collector.graphs == [None, None, None] and graph_log[-1] == ("path closed",)


def test_host_collector_defers_an_overlapping_rollout_to_finish_deferred():
    log = []
    collector = actors.HostCollector(_Path(log))
    collector.collect(1)
    assert log == [("record", 1)] and collector.finish_deferred() == 0.0
    collector.collect(0, overlaps=True)
    assert log == [("record", 1)]
    assert collector.finish_deferred() >= 0.0 and log == [("record", 1), ("record", 0)]
    assert collector.finish_deferred() == 0.0  # nothing pending any more
    collector.close()
    assert log[-1] == ("path closed",)


# ------------------------------------------------------------------------------------------------
# The host-env rollout's time split (metrics' time_split: wait, env)

WAIT, STEP = 0.02, 0.01  # seconds a group's actions take to arrive, and its batch's step


def _host_group(envs: int):
    class Event:
        def record(self, stream):
            pass

        def synchronize(self):
            time.sleep(WAIT)

    def step(actions):
        assert actions.shape == (envs, 1)
        time.sleep(STEP)

    batch = SimpleNamespace(step=step, rewards=np.ones((envs, 1), np.float32),
                            episode_return=np.zeros((envs, 1), np.float32), episode_stats=np.zeros((envs, 2)),
                            episode_length=np.zeros(envs), terminated=np.zeros(envs, bool),
                            truncated=np.zeros(envs, bool))
    views = {"rewards": np.zeros(envs, np.float32), "ep_return": np.zeros(envs, np.float32),
             "ep_stats": np.zeros((envs, 2)), "ep_length": np.zeros(envs), "terminated": np.zeros(envs, bool),
             "truncated": np.zeros(envs, bool)}
    return {"batch": batch, "views": views, "rows": envs, "envs": envs, "actions": np.zeros(envs, np.int32),
            "event": Event()}


def test_host_rollout_time_split_counts_waiting_for_actions_and_stepping_the_env_apart():
    """Each step of each group: the wait for its actions (the event) is `wait`, the batch's step and the copies
    `env`; together they are within the rollout's wall time."""
    horizon, groups = 3, 2
    host = HostEnvs.__new__(HostEnvs)
    host.plan = SimpleNamespace(horizon=horizon, num_agents=1)
    host.k = SimpleNamespace(stream=None)
    host.groups = [_host_group(3), _host_group(2)]
    host.action_shape = ()
    host.timing = {"env": 0.0, "wait": 0.0}
    host.inputs = lambda g: []
    segments = []
    host.segment = lambda key, enqueue: segments.append(key)
    host.finish = lambda slot: segments.append(("finish", slot))
    t0 = time.perf_counter()
    host.record(1)
    wall = time.perf_counter() - t0
    steps = horizon * groups
    assert host.timing["wait"] >= steps * WAIT and host.timing["env"] >= steps * STEP
    assert host.timing["wait"] + host.timing["env"] <= wall
    assert host.timing["wait"] < wall - steps * STEP + 1e-9  # the env's steps are not counted as waiting
    assert segments[:2] == [(1, "start", 0), (1, "start", 1)] and segments[-1] == ("finish", 1)
    assert segments[2:-1] == [(1, g, t) for t in range(horizon) for g in range(groups)]



def test_a_new_host_rollout_starts_its_time_split_at_zero_beside_the_trainers_other_times():
    """metrics.jsonl's time_split shows the trainer's timing dict: building the host-env path adds its `env` and
    `wait` shares at zero and keeps what the trainer had counted."""
    timing = {"rollout": 2.5, "update": 1.25}
    plan = SimpleNamespace(num_envs=6, num_agents=1)
    spec = SimpleNamespace(action_kind="discrete", action_shape=(), action_dtype=np.int32)
    batch = SimpleNamespace(env=SimpleNamespace(stat_names=["score"]), num_envs=6)
    train = SimpleNamespace(reward_clamp=False, env_groups=2)
    host = HostEnvs(plan, spec, None, None, None, None, train, 0, batch, None, timing)
    assert timing == {"rollout": 2.5, "update": 1.25, "env": 0.0, "wait": 0.0}
    assert host.timing is timing and host.ranges == [(0, 3), (3, 6)]

# ------------------------------------------------------------------------------------------------
# An evaluation's batches of games (GpuMatches.evaluate's plan)

class _Batch:
    """Stands in for MatchBatch: every game of match m scores a value that names the match (100 + a bot level,
    or minus the opponent's weight row)."""

    made = []

    def __init__(self, owner, module, env_config, levels, rows, weights, games, seed, deterministic):
        self.module, self.env, self.levels, self.rows, self.games = module, env_config, levels, rows, games
        self.weights, self.closed, self.layout, self.max_steps = weights.copy(), False, (4, 1, 64, 0), 0
        _Batch.made.append(self)

    def play(self, first_step):
        pass

    def remaining(self):
        return 0

    def steps(self):
        return 9

    def scores(self):
        return np.repeat([100.0 + level if level >= 0 else -float(row) for level, row in zip(self.levels, self.rows)],
                         self.games)

    def close(self):
        self.closed = True


def _evaluate(monkeypatch, per_game_levels: bool, levels, opponents: int, games: int = 3):
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=8, layers=1)
    matches = matches_mod.GpuMatches.__new__(matches_mod.GpuMatches)
    matches.spec, matches.layout = spec, ref.FlatLayout(ref.param_table(spec))
    matches.stride, matches.modules, matches.cuda = pool_row_floats(matches.layout), {}, None
    matches.stream = SimpleNamespace(synchronize=lambda: None)
    matches.last_steps, matches.history = 0, []
    built = []

    def module(env_config, defines=None):
        env = env_config.to_dict()["env"]
        key = ("bot" if env["pong_bot"] else "two seats", env["bot_level"] if env["pong_bot"] else None,
               tuple(sorted((defines or {}).items())))
        built.append(key)
        return key

    def module_int(cuda, module, name):
        if name == "match_bot_levels":
            return int(per_game_levels and module[2] == (("BOT_LEVEL", -1),))
        assert name == "fv_num_agents"
        return 1 if module[0] == "bot" else 2

    matches.module = module
    monkeypatch.setattr(matches_mod, "module_int", module_int)
    _Batch.made = []
    monkeypatch.setattr(matches_mod, "MatchBatch", _Batch)
    config = load_config("pong", {"selfplay": {"enabled": True}})
    params = lambda seed: ref.init_params(spec, np.random.default_rng(seed), np.float32)  # noqa: E731
    player = SimpleNamespace(params=params(1))
    others = [SimpleNamespace(params=params(2 + i)) for i in range(opponents)]
    bots, pasts = matches.evaluate(config, player, levels, others, games, seed=5)
    return matches, built, bots, pasts, player, others


@pytest.mark.parametrize("opponents", [0, 2])
def test_an_env_with_per_game_bot_levels_plays_every_level_and_past_self_in_one_batch(monkeypatch, opponents):
    matches, built, bots, pasts, player, others = _evaluate(monkeypatch, True, [0, 3, 5], opponents)
    assert len(_Batch.made) == 1 and built == [("two seats", None, (("BOT_LEVEL", -1),))]
    batch = _Batch.made[0]
    assert batch.levels == [0, 3, 5] + [-1] * opponents and batch.rows == [0, 0, 0] + [1, 2][:opponents]
    assert batch.env.to_dict()["env"]["pong_bot"] == 0 and batch.closed
    np.testing.assert_array_equal(batch.weights[0, :matches.layout.size], player.params)
    for i, other in enumerate(others):
        np.testing.assert_array_equal(batch.weights[1 + i, :matches.layout.size], other.params)
    assert {level: list(s) for level, s in bots.items()} == {0: [100.0] * 3, 3: [103.0] * 3, 5: [105.0] * 3}
    assert [list(s) for s in pasts] == [[-1.0] * 3, [-2.0] * 3][:opponents]
    assert matches.history[-1]["games_per_block"] == [4] and matches.last_steps == 9


def test_an_env_without_per_game_bot_levels_builds_one_bot_module_a_level_and_one_for_the_past_selves(monkeypatch):
    matches, built, bots, pasts, _, _ = _evaluate(monkeypatch, False, [0, 3], 2)
    assert built[0] == ("two seats", None, (("BOT_LEVEL", -1),))  # asked, and it keeps no per-game level
    assert [(b.module[:2], b.levels, b.rows) for b in _Batch.made] == [
        (("bot", 0), [0], [0]), (("bot", 3), [3], [0]), (("two seats", None), [-1, -1], [1, 2])]
    assert [b.env.to_dict()["env"]["pong_bot"] for b in _Batch.made] == [1, 1, 0] and all(b.closed for b in _Batch.made)
    assert {level: list(s) for level, s in bots.items()} == {0: [100.0] * 3, 3: [103.0] * 3}
    assert [list(s) for s in pasts] == [[-1.0] * 3, [-2.0] * 3]
    assert matches.history[-1]["games_per_block"] == [4, 4, 4]


# ------------------------------------------------------------------------------------------------
# train.async's actor: its own stream, launcher, cuBLAS handle and copy of the weights

def test_an_async_actor_copies_the_weights_between_the_learners_update_and_its_next(monkeypatch):
    """hand_over: the actor's stream waits for the learner's, copies all P float32 weights into actor_params, and
    the learner's stream waits for that copy; the actor's cuBLAS handle works in its own workspace."""
    log = []

    class Event:
        def __init__(self):
            self.name = f"event{len([e for e in log if e[0] == 'event'])}"
            log.append(("event", self.name))

        def make_wait(self, waiter, producer):
            log.append(("wait", self.name, waiter, producer))

    class Blas:
        def __init__(self, stream, workspace, nbytes, precision):
            log.append(("cublas", stream.handle, workspace, nbytes, precision))

        def close(self):
            log.append(("cublas closed",))

    from fastvec.trainer.cuda import device
    from fastvec.trainer.cuda.plan import CUBLAS_WORKSPACE
    monkeypatch.setattr(actors, "Event", Event)
    monkeypatch.setattr(actors, "Cublas", Blas)
    monkeypatch.setattr(device, "Launcher", lambda module, stream: SimpleNamespace(module=module, stream=stream))
    cuda = SimpleNamespace(Stream=lambda: SimpleNamespace(handle=11),
                           memcpy_dtod_async=lambda dst, src, nbytes, stream: log.append(
                               ("copy", dst, src, nbytes, stream.handle)))
    arena = SimpleNamespace(ptr=lambda name: {"actor_params": 0x1000, "params": 0x2000,
                                              "actor_cublas_workspace": 0x3000}[name])
    actor = actors.AsyncActor(cuda, "module", arena, "bf16", SimpleNamespace(handle=22), param_count=1234)
    assert actor.params == "actor_params" and actor.k.stream.handle == actor.stream.handle == 11
    assert ("cublas", 11, 0x3000, CUBLAS_WORKSPACE, "bf16") in log
    first = len(log)
    actor.hand_over()
    learner_done, weights_taken = log[1][1], log[2][1]
    assert log[first:] == [("wait", learner_done, 11, 22), ("copy", 0x1000, 0x2000, 1234 * 4, 11),
                           ("wait", weights_taken, 22, 11)]
    actor.close()
    assert log[-1] == ("cublas closed",)


def test_the_learners_own_actor_hands_nothing_over_and_leaves_its_handle_open():
    blas = SimpleNamespace(close=lambda: pytest.fail("the trainer closes its own handle"))
    actor = actors.Actor("k", blas, "stream")
    assert actor.params == "params" and (actor.k, actor.blas, actor.stream) == ("k", blas, "stream")
    actor.hand_over()
    actor.close()


# ------------------------------------------------------------------------------------------------
# Host envs' groups and ranks' keys

def test_env_groups_split_the_batch_as_array_split_or_as_the_given_batches():
    from fastvec.trainer.cuda.host_envs import env_ranges
    assert env_ranges(10, 3, None) == [(0, 4), (4, 7), (7, 10)]
    assert env_ranges(10, 1, None) == [(0, 10)] == env_ranges(10, 0, None)
    assert env_ranges(3, 5, None) == [(0, 1), (1, 2), (2, 3)]  # no empty group
    assert env_ranges(12, 4, None) == [(0, 3), (3, 6), (6, 9), (9, 12)]
    batches = [SimpleNamespace(num_envs=n) for n in (2, 7, 1)]
    assert env_ranges(10, 2, batches) == [(0, 2), (2, 9), (9, 10)]  # the batches' sizes win over env_groups
    with pytest.raises(ValueError, match="host_batches hold 10 envs, the trainer's batch 11"):
        env_ranges(11, 3, batches)


def test_each_rank_samples_with_a_key_of_its_own_and_rank_0_with_the_single_gpus():
    from fastvec.trainer.cuda.data_parallel import DataParallel, SingleGpu, data_parallel
    from fastvec.trainer.cuda import nccl
    key = ref.sampling_key(5)
    keys = [DataParallel(SimpleNamespace(rank=r, world_size=8)).rank_key(key) for r in range(8)]
    assert keys[0] == SingleGpu().rank_key(key) == key
    assert len(set(keys)) == 8 and all(0 <= k < 2 ** 64 for k in keys)
    assert keys == [DataParallel(SimpleNamespace(rank=r, world_size=8)).rank_key(key) for r in range(8)]
    assert DataParallel(SimpleNamespace(rank=3, world_size=8)).rank_key(ref.sampling_key(6)) != keys[3]
    single = data_parallel()
    assert isinstance(single, SingleGpu) and (single.rank, single.world_size, single.group) == (0, 1, None)
    group = SimpleNamespace(rank=2, world_size=4)
    nccl.set_active_group(group)
    try:
        parallel = data_parallel()
    finally:
        nccl.set_active_group(None)
    assert isinstance(parallel, DataParallel) and not parallel.moments_in_gather
    assert (parallel.group, parallel.rank, parallel.world_size) == (group, 2, 4)


def test_data_parallel_broadcasts_rank_0s_weights_and_averages_the_whole_gradient():
    calls = []
    group = SimpleNamespace(rank=1, world_size=2, broadcast=lambda *a: calls.append(("broadcast", *a)),
                            average=lambda *a: calls.append(("average", *a)))
    from fastvec.trainer.cuda.data_parallel import DataParallel, SingleGpu
    arena = SimpleNamespace(ptr=lambda name: {"params": 0x100, "grads": 0x200}[name])
    stream = SimpleNamespace(handle=9)
    for reduction in (SingleGpu(), DataParallel(group)):
        reduction.broadcast_params(arena, 321, stream)
        reduction.record_grad_average(arena, 321, stream)
    assert calls == [("broadcast", 0x100, 321, 9), ("average", 0x200, 321, 9)]  # alone: nothing to share


def test_an_evaluation_block_grows_to_cudas_1024_threads_and_never_past_them():
    """Matches too many for every block to be resident at once: the blocks take as many games as a block of at most
    1024 threads holds (two seats a game, a warp a seat: 16 games, 32 warps)."""
    from fastvec.trainer.cuda.matches import play_layout
    small = dict(group_floats=4 * (2 * 8 + 3), game_floats=2 * 8 + 2 + 1, agents=2, rows_per_warp=1, slices=1,
                 sm_count=1, shared_per_block=1 << 20, shared_per_sm=1 << 20)
    games_per_block, in_shared, threads, shared = play_layout(400, 64, True, 300, **small)
    assert (games_per_block, in_shared, threads) == (16, 2, 1024)
    assert shared == 4 * 2 * 300 + 4 * (32 * small["group_floats"] + 16 * small["game_floats"] + 1)
    assert play_layout(400, 64, True, 300, **{**small, "slices": 2})[:3] == (8, 2, 1024)
    assert play_layout(400, 64, True, 300, **{**small, "slices": 3})[:3] == (5, 2, 960)
