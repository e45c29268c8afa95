"""Self-play with the games and the frozen opponents on the GPU (trainer/cuda/rollouts.py's SelfPlayRollout,
selfplay.cu): its rollouts equal the host twin (selfplay.SelfPlayBatch fed the learner's actions) step for step
with swaps at game ends, only learner rows reach the update, the device pool follows the host pool, the GPU
evaluation games equal the CPU ones, and fastvec-train runs it end to end."""

import copy
import json

import numpy as np
import pytest

from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.settings import Config
from fastvec.trainer.selfplay import (
    Policy,
    SelfPlayBatch,
    play_bot,
    play_match,
    selfplay_keys,
)

pytestmark = pytest.mark.gpu


def gpu_selfplay_config(**train):
    return load_config("pong", {"env": {"num_envs": 96, "points": 1},
                                "policy": {"kind": "mingru", "hidden": 16, "layers": 2},
                                "selfplay": {"enabled": True, "pool_size": 3, "latest_prob": 0.4, "eval_interval": 0},
                                "train": {"device": "cuda", "env_device": "cuda", "horizon": 128, "bptt_horizon": 16,
                                          "minibatch_size": 96 * 32, "async": False, "precision": "fp32",
                                          "seed": 5, **train}})


def random_policy(spec, seed, label, scale=2.0):
    params = ref.init_params(spec, np.random.default_rng(seed), np.float32)
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    views["dec.w"][...] = np.random.default_rng(seed + 1).normal(0, scale, views["dec.w"].shape)
    return Policy(spec, params, label)


def slot_buffers(trainer):
    suffix = "" if trainer.active_slot == 0 else "@1"
    return {name: trainer.arena.get(trainer.cuda, name + suffix)
            for name in ["obs", "starts", "actions", "rewards", "dones"]}


def game_opponents(trainer):
    """The pool id each game's opponents play, read from the device."""
    path = trainer.rollout_path
    return np.array([path.slot_pid[int(s)] for s in trainer.arena.get(trainer.cuda, "game_weights")])


def test_any_multi_agent_env_of_the_contract_plays_on_the_gpu(tmp_path):
    """A user's 3-player env file (the learner on seat g % 3, two opponent seats a game, each reward the
    seat's own action): its GPU self-play rollouts equal SelfPlayBatch's, and the game scores, which depend on
    the opponents' actions, equal the twin's."""
    from test_selfplay import THREE_SEATS

    from fastvec.trainer import run

    source = tmp_path / "three_seats.h"
    source.write_text(THREE_SEATS)
    config = load_config(str(source), {"env": {"num_envs": 40}, "policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                       "selfplay": {"enabled": True, "pool_size": 2, "eval_interval": 0},
                                       "train": {"device": "cuda", "env_device": "cuda", "horizon": 16,
                                                 "bptt_horizon": 16, "minibatch_size": 320, "precision": "fp32"}})
    trainer = run.make_trainer(config)
    league = trainer.selfplay
    league.pool.add(random_policy(trainer.spec, 7, "r0"))
    twin_pool = copy.deepcopy(league.pool)
    league.start(trainer, tmp_path)
    assert trainer.plan.rollout == "selfplay" and trainer.plan.env_agents == 3 and trainer.rows == 40
    twin = SelfPlayBatch(run.make_batch(config), twin_pool, selfplay_keys(trainer.seed_key))
    twin.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(40, dtype=np.uint64), None)
    for _ in range(2):
        trainer.rollout()
        buf = slot_buffers(trainer)
        for t in range(16):
            np.testing.assert_array_equal(buf["obs"][t], twin.obs[:, 0])
            twin.step(buf["actions"][t].astype(np.int64).reshape(40, 1))
            np.testing.assert_array_equal(buf["rewards"][t], np.clip(twin.rewards[:, 0], -1, 1)
                                          if config["train"]["reward_clamp"] else twin.rewards[:, 0])
        np.testing.assert_array_equal(game_opponents(trainer), twin.opponent)
        trainer.update(num_updates=4)
    assert league.games.pop_score_sums() == twin.pop_score_sums()
    trainer.close()


@pytest.mark.parametrize("is_async", [False, True])
def test_gpu_selfplay_rollouts_equal_the_host_twin(tmp_path, is_async):
    """Three rollouts (eager, captured, replayed; updates between them): every learner obs, reward, done and
    start equals, bit for bit, SelfPlayBatch's (the CPU build of Pong, the pool's snapshots acting with the
    same counter-based draws) fed the trainer's learner actions; the games' opponents agree after each rollout
    (swaps happen only where a game ended, in both); the rollout's rows are the learner's seats alone."""
    from fastvec.trainer import run
    config = gpu_selfplay_config(**{"async": is_async})
    trainer = run.make_trainer(config)
    league = trainer.selfplay
    assert trainer.plan.rollout == "selfplay" and trainer.rows == 96 and trainer.num_agents == 1
    for i in range(2):  # three distinct snapshots in the pool
        league.pool.add(random_policy(trainer.spec, 40 + i, f"r{i}"))
    twin_pool = copy.deepcopy(league.pool)
    league.start(trainer, tmp_path)
    twin = SelfPlayBatch(run.make_batch(config), twin_pool, selfplay_keys(trainer.seed_key))
    twin.reset((np.uint64(5) << np.uint64(32)) + np.arange(96, dtype=np.uint64), None)
    np.testing.assert_array_equal(game_opponents(trainer), twin.opponent)
    ends = swaps = 0
    for k in range(3):
        before = twin.opponent.copy()
        trainer.rollout()
        buf = slot_buffers(trainer)
        assert buf["obs"].shape == (129, 96, 8)  # (T + 1, learner rows, O): no opponent row
        for t in range(128):
            np.testing.assert_array_equal(buf["obs"][t], twin.obs[:, 0], err_msg=f"rollout {k} step {t}")
            twin.step(buf["actions"][t].astype(np.int64).reshape(96, 1))
            done = (twin.terminated | twin.truncated).astype(np.float32)
            np.testing.assert_array_equal(buf["rewards"][t], np.clip(twin.rewards[:, 0], -1, 1))
            np.testing.assert_array_equal(buf["dones"][t], done)
            np.testing.assert_array_equal(buf["starts"][t + 1], done)
            ends += int(done.sum())
        np.testing.assert_array_equal(buf["obs"][128], twin.obs[:, 0])
        if not is_async:  # (async: the device has collected one rollout ahead)
            np.testing.assert_array_equal(game_opponents(trainer), twin.opponent)
        swaps += int((twin.opponent != before).sum())
        trainer.update(num_updates=10)
    assert ends > 20 and swaps > 5 and len(set(twin.opponent.tolist())) >= 2  # the draws were exercised
    games, total = league.games.pop_score_sums()
    assert (games >= ends if is_async else games == ends) and 0 <= total <= games
    trainer.close()


def test_the_device_pool_follows_the_host_pool(tmp_path):
    """Snapshots every update through a pool of 3: the device table lists the pool's members (newest last),
    every game plays a live snapshot whose weights are the device row, and slots are reused."""
    from fastvec.trainer import run
    config = gpu_selfplay_config(horizon=32, minibatch_size=96 * 16)
    config["selfplay"]["refresh_interval"] = 1
    trainer = run.make_trainer(config)
    league = trainer.selfplay
    league.start(trainer, tmp_path)
    path = trainer.rollout_path
    for _ in range(12):
        trainer.rollout()
        trainer.update(num_updates=20)
        league.after_update(trainer, final=False)
        table = trainer.arena.get(trainer.cuda, "pool_table")
        members = [path.slot_pid[int(s)] for s in table[2:2 + table[0]]]
        assert members == league.pool.members and np.float32(0.4).view(np.int32) == table[1]
        pool = trainer.arena.get(trainer.cuda, "pool")
        for slot in set(trainer.arena.get(trainer.cuda, "game_weights").tolist()):
            pid = path.slot_pid[slot]
            np.testing.assert_array_equal(pool[slot, :trainer.layout.size], league.pool.policies[pid].params)
    assert league.pool.next_id > path.pool_slots  # more snapshots than slots: slots were reused
    trainer.close()


def test_gpu_evaluation_games_equal_the_cpu_ones():
    """Deterministic play (argmax, no draws): one GPU batch of every bot level and two past selves gives the
    CPU's scores game for game; sampled play: a match's scores do not depend on what else shares its batch."""
    from fastvec.trainer.cuda.matches import GpuMatches
    config = gpu_selfplay_config()
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=16, layers=2, highway=True)
    a, b, c = random_policy(spec, 1, "a"), random_policy(spec, 2, "b", scale=1.0), random_policy(spec, 3, "c")
    matches = GpuMatches(spec)
    bots, pasts = matches.evaluate(config, a, [0, 1, 2, 3, 4], [b, c], 32, seed=9, deterministic=True)
    for level in range(5):
        np.testing.assert_array_equal(bots[level], play_bot(config, a, level, 32, seed=9, deterministic=True),
                                      err_msg=f"level {level}")
    for opponent, scores in zip([b, c], pasts):
        np.testing.assert_array_equal(scores, play_match(config, a, opponent, 32, seed=9, deterministic=True))
    assert matches.last_steps > 0 and len({float(s.mean()) for s in bots.values()}) > 1  # the levels differ
    bots, pasts = matches.evaluate(config, a, [0, 2, 4], [b, c], 64, seed=4)
    np.testing.assert_array_equal(bots[2], matches.play_bot(config, a, 2, 64, seed=4))
    np.testing.assert_array_equal(pasts[1], matches.play_match(config, a, c, 64, seed=4))
    assert set(np.unique(pasts[1])) <= {0.0, 0.5, 1.0}


def test_gpu_evaluation_without_per_game_levels_builds_one_module_a_level(monkeypatch):
    """An env whose bot level is a compile-time constant only (no FV_BOT_LEVELS): one batch per level and one
    for the past selves, the same scores as the CPU's."""
    from fastvec.trainer.cuda import matches as matches_mod
    real = matches_mod.module_int
    monkeypatch.setattr(matches_mod, "module_int",
                        lambda cuda, module, name: 0 if name == "match_bot_levels" else real(cuda, module, name))
    config = gpu_selfplay_config()
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=16, layers=2, highway=True)
    a, b = random_policy(spec, 1, "a"), random_policy(spec, 2, "b", scale=1.0)
    bots, pasts = matches_mod.GpuMatches(spec).evaluate(config, a, [0, 4], [b], 24, seed=2, deterministic=True)
    for level in (0, 4):
        np.testing.assert_array_equal(bots[level], play_bot(config, a, level, 24, seed=2, deterministic=True))
    np.testing.assert_array_equal(pasts[0], play_match(config, a, b, 24, seed=2, deterministic=True))


def test_the_match_kernels_policy_step_is_the_thread_forward():
    """One step of match_play_kernel (a group of warps per seat role of four games, the staged weights in shared memory)
    against pool_forward_kernel (a thread per row) on the same reset games, random states, starts and draws: the
    same sampled actions and, bit for bit, the same new recurrent states (hidden 48: a warp of 32 units and one
    of 16); the step counts of a played-out evaluation are each game's own."""
    from fastvec.trainer.cuda import device
    from fastvec.trainer.cuda.kernel_args import PoolForwardArgs, pack
    from fastvec.trainer.cuda.matches import GpuMatches, MatchBatch
    config = gpu_selfplay_config()
    spec = ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=48, layers=2, highway=True)
    matches = GpuMatches(spec)
    cuda = matches.cuda
    two_seats = Config.of({**config, "env": {**config["env"], "pong_bot": 0}})
    module = matches.module(two_seats, {"BOT_LEVEL": -1})
    n, agents, rng = 300, 2, np.random.default_rng(0)
    rows, stride = n * agents, matches.stride
    weights = np.zeros((3, stride), np.float32)
    for i in range(3):
        weights[i, :matches.layout.size] = random_policy(spec, 20 + i, f"w{i}", scale=1.5).params
    batch = MatchBatch(matches, module, two_seats, [-1], [2], weights, n, seed=5, deterministic=False)
    assert batch.layout[1] == 2  # both policies in shared memory
    starts = (rng.random(rows) < 0.3).astype(np.float32)
    state = rng.normal(0, 1, (2, rows, 48)).astype(np.float32)
    batch.arena.set(cuda, "starts", starts)
    batch.arena.set(cuda, "state", state)
    matches.stream.synchronize()
    obs = batch.arena.get(cuda, "game_obs")
    allocations = {name: cuda.to_device(np.ascontiguousarray(x)) for name, x in [
        ("weights", weights), ("game_weights", np.full(n, 2, np.int32)), ("obs", obs), ("starts", starts),
        ("state", state), ("actions", np.zeros(rows, np.int32))]}
    gpu = {name: int(allocation) for name, allocation in allocations.items()}
    k, block = device.Launcher(module, matches.stream), 128
    k.function("pool_forward_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    4 * 48 * block)
    args = PoolForwardArgs(gpu["weights"], gpu["game_weights"], gpu["obs"], gpu["starts"], gpu["state"],
                           gpu["actions"], 0, key=batch.key, pool_stride=stride, t=7, rows=rows, per_game=agents,
                           seat_offset=0, player_slot=0, deterministic=0)
    k.launch_shared("pool_forward_kernel", rows, block, 4 * 48 * block, pack(args))
    batch.play(7, 1)
    matches.stream.synchronize()
    thread_state = cuda.from_device_like(allocations["state"], state)
    thread_actions = cuda.from_device_like(allocations["actions"], np.zeros(rows, np.int32))
    np.testing.assert_array_equal(batch.arena.get(cuda, "state"), thread_state)
    np.testing.assert_array_equal(batch.arena.get(cuda, "actions"), thread_actions)
    assert len(np.unique(thread_actions)) == 3 and not np.array_equal(thread_state, state)
    for allocation in allocations.values():
        allocation.free()
    batch.close()
    a, b = random_policy(spec, 1, "a"), random_policy(spec, 2, "b", scale=1.0)
    matches.evaluate(config, a, [0, 4], [b], 16, seed=3)
    steps = matches.history[-1]["steps"]
    assert matches.last_steps == steps > 0 and matches.history[-1]["launches"] >= 1


def test_fastvec_train_selfplay_on_the_gpu(tmp_path):
    """fastvec-train pong --selfplay.enabled=true on the CUDA trainer steps the games on the GPU (async, bf16):
    snapshots join the pool, evaluations run (on the GPU), ratings.json and the training-game scores are logged."""
    from fastvec.trainer import checkpoint, run
    config = gpu_selfplay_config(total_timesteps=96 * 32 * 4, horizon=32, minibatch_size=96 * 16, precision="bf16",
                                 log_interval=0.0, **{"async": True})
    config["selfplay"].update(refresh_interval=1, eval_interval=2, eval_games=16, eval_past=1)
    summary = run.train(config, tmp_path / "sp", dashboard=False)
    trainer = summary["trainer"]
    assert trainer.plan.rollout == "selfplay" and trainer.selfplay.matches is not None
    pool = trainer.selfplay.pool
    assert [pool.policies[p].label for p in pool.members] == ["u2", "u3", "u4"]
    _, state = checkpoint.load(summary["checkpoint"])
    assert np.array_equal(state["params"], trainer.params)
    assert "selfplay/score_bot4" in summary["metrics"] and (tmp_path / "sp" / "ratings.json").exists()
    rows = [json.loads(line) for line in (tmp_path / "sp" / "metrics.jsonl").read_text().splitlines()]
    assert sum(row["selfplay/train_games"] for row in rows) > 0
