"""The CUDA trainer's teams (MPE, SMAX; their games stepped on the host) against the NumPy trainer: the plan's team
buffers (no GPU), then on the device a rollout whose observations with agent ids, action masks and world states are
the CPU batch's fed the GPU's actions, whose actions are the reference's masked categorical's with the counter
uniforms, and whose update equals NumpyTrainer's on the same data; and short `fastvec-train` runs that learn. The
kernels alone are tests/emulation/test_teams_kernels.py's. Every @pytest.mark.gpu test is skipped without a GPU."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_cuda import (F32_TOL, FixedOrders, _cuda_or_skip, load_numpy_trainer, rel_err, rollout_buffers,
                       start_async_update)

from fastvec.trainer import cli, reference as ref, run
from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import make_batch
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.resolve import cuda_unsupported, make_policy_spec
from fastvec.trainer.settings import Config

# name -> (scenario, [policy] overrides): agent ids in every case (both configs'); simple_speaker_listener's
# agents have action spaces of their own (its speaker 3 actions of the listener's 5: a static mask) and
# observations of their own sizes (padded); SMAX's masks are the game's available actions.
CASES = {"simple_spread": ("simple_spread", {}),
         "simple_spread-world_state": ("simple_spread", {"critic_input": "world_state"}),
         "simple_speaker_listener-world_state": ("simple_speaker_listener", {"critic_input": "world_state"}),
         "smax-3m": ("smax:3m", {}),
         "smax-3m-world_state": ("smax:3m", {"critic_input": "world_state"})}


def team_config(name: str, policy: dict, epochs: int = 1, **train) -> Config:
    """The scenario's shipped config (mpe.toml, smax.toml), small: 12 envs (in two groups on the host), 16 steps."""
    return Config.of(load_config(name, {"env": {"num_envs": 12}, "policy": {"hidden": 16, **policy},
                                        "train": {"horizon": 16, "update_epochs": epochs, "device": "cuda",
                                                  "env_device": "cpu", "env_groups": 2, "seed": 3, "minibatch_size": 96,
                                                  "log_interval": 0.0, **train}}))


def agents_of(config: Config) -> int:
    batch = make_batch(config, 1)
    try:
        return batch.obs.shape[1]
    finally:
        batch.close()


def spec_of(config: Config):
    batch = make_batch(config, 2)
    try:
        world = world_state_size(batch) if config.policy.critic_input == "world_state" else 0
        return make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces,
                                batch.obs.shape[1], world)
    finally:
        batch.close()


# ------------------------------------------------------------------------------------------------
# The plan (no GPU)


@pytest.mark.parametrize("case", ["simple_speaker_listener-world_state", "smax-3m-world_state"])
def test_plan_keeps_a_teams_masks_and_world_state_per_step_and_per_minibatch_row(case):
    """The rollout slot keeps each step's masks (uint8) and world-state critic input beside its obs (with the
    agent id: the policy's input I), step T too (the next rollout's first); the update gathers them per row; the
    host envs stage them with the step outputs. The CUDA trainer takes the config (team games on the host)."""
    from fastvec.trainer.cuda.host_envs import HostEnvs
    from fastvec.trainer.cuda.plan import Choices, Plan, plan_arena
    config = team_config(*CASES[case])
    spec = spec_of(config)
    assert cuda_unsupported(spec, config) is None
    layout = ref.FlatLayout(ref.param_table(spec))
    plan = Plan.make(config.train, spec, layout, 12, 3 if "smax" in case else 2, True, Choices(), masked=True)
    t, r, n = plan.horizon, plan.rows, plan.mb_rows
    arena = plan_arena(plan, spec, layout, 64, 2)
    assert spec.agent_ids == plan.num_agents and spec.input_size == spec.obs_size + plan.num_agents
    expected = {"obs": ((t + 1, r, spec.input_size), np.float32), "masks": ((t + 1, r, spec.num_actions), np.uint8),
                "world": ((t + 1, r, spec.world_size + spec.agent_ids), np.float32),
                "mb_obs": ((n, spec.input_size), np.float32), "mb_masks": ((n, spec.num_actions), np.uint8),
                "mb_world": ((n, spec.critic_input_size), np.float32)}
    for name, (shape, dtype) in expected.items():
        assert arena.entries[name][1:3] == (shape, np.dtype(dtype)), name
    batch = make_batch(config)
    try:
        host = HostEnvs(plan, spec, layout, arena, None, None, config.train, 0, batch, None, {})
        layout_6, _ = host.staging_layout(6)
    finally:
        batch.close()
    assert layout_6["masks"][1:] == ((6 * plan.num_agents, spec.num_actions), np.dtype(np.uint8))
    assert layout_6["world"][1:] == ((6 * plan.num_agents, spec.critic_input_size), np.dtype(np.float32))
    assert layout_6["obs"][1] == (6 * plan.num_agents, spec.input_size)


def test_plan_without_masks_or_world_state_adds_neither():
    from fastvec.trainer.cuda.plan import Choices, Plan, plan_arena
    config = team_config("simple_spread", {})
    spec = spec_of(config)
    layout = ref.FlatLayout(ref.param_table(spec))
    plan = Plan.make(config.train, spec, layout, 12, 3, True, Choices())
    entries = plan_arena(plan, spec, layout, 64, 0).entries
    assert not {"masks", "world", "mb_masks", "mb_world"} & set(entries)


@pytest.mark.parametrize("forced", ["auto", "warp", "thread"])
def test_plan_steps_team_games_on_the_gpu_with_the_gemm_policy_and_team_inputs(forced):
    """A team game on the GPU takes TeamRollout whatever path is asked for (the fused kernels read no ids, masks or
    world state), its rollout GEMMs in bf16 with train.precision=bf16 as the GEMM path's."""
    from fastvec.trainer.cuda.plan import Choices, Plan
    from fastvec.trainer.cuda.rollouts import GPU_ENV_ROLLOUTS, TeamRollout
    config = team_config("smax:3m", {"kind": "mingru", "critic": "shared", "encoder": "linear"}, env_device="cuda",
                         precision="bf16")
    spec = spec_of(config)
    plan = Plan.make(config.train, spec, ref.FlatLayout(ref.param_table(spec)), 12, 3, False, Choices(rollout=forced),
                     masked=True, team=True)
    assert (plan.rollout, plan.fused_block, plan.rollout_bf16) == ("team", 0, True)
    assert GPU_ENV_ROLLOUTS[plan.rollout] is TeamRollout


@pytest.mark.parametrize("name", ["simple_spread", "smax:3m"])
def test_the_trainers_module_compiles_with_a_team_game(name):
    """nvcc (no GPU needed) builds the CUDA trainer's module with the game, as CudaTrainer loads it: the trainer's
    code names nothing a game defines (MPE's N, SMAX's MAP...)."""
    import shutil
    from pathlib import Path

    from fastvec.native import NATIVE_DIR, gpu
    from fastvec.trainer.cuda.device import CUDA_DIR, module_source
    from fastvec.trainer.resolve import env_build
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    config = team_config(name, {"critic_input": "world_state"}, env_device="cuda")
    source, defines, _ = env_build(config, None)
    defines["POLICY_HEAD_SIZE"] = spec_of(config).head_size
    cubin = gpu.compile_cubin(module_source(Path(source)), include_dirs=[CUDA_DIR, NATIVE_DIR, Path(source).parent],
                              defines=defines, arch="sm_90", name=f"trainer-test-{name.replace(':', '_')}",
                              env_path=Path(source))
    assert len(cubin) > 0


# ------------------------------------------------------------------------------------------------
# The whole trainer against NumpyTrainer (GPU)


def masked(dist, mask):
    return dist if mask is None else ref.mask_logits(dist, mask)


@pytest.mark.gpu
@pytest.mark.parametrize("env_device", ["cuda", "cpu"], ids=["games-on-gpu", "games-on-host"])
@pytest.mark.parametrize("case", list(CASES))
def test_team_rollout_and_update_match_numpy(case, env_device):
    """ROLLOUT (the games in the rollout graph, rollouts.TeamRollout; or on the host in two env groups): the slot's
    obs (the agent's id appended), masks and world state at every step are AgentInputs' of a CPU batch reset with
    the same seeds and fed the GPU's actions (bit for bit from the host; within 1e-6 from the GPU's build of the
    game, whose float arithmetic may round otherwise, with the masks and done flags exact); every action is available;
    the actions are reference.policy_act's with the counter uniforms (mask_logits, masked_uniforms, inverse CDF:
    all but a uniform on a CDF boundary within float rounding), log-probs and values the reference's within float32
    rounding. UPDATE: NumpyTrainer on the same buffers (masks and world state too) in the CUDA trainer's sequence
    order: one epoch of one minibatch is one gradient, within 1e-5; two epochs of two minibatches within 1e-4."""
    _cuda_or_skip()
    from fastvec.trainer.reference import sequence_order
    name, policy = CASES[case]
    for epochs, tol in [(1, F32_TOL), (2, 1e-4)]:
        config = team_config(name, policy, epochs, env_device=env_device)
        rows = config.env.num_envs * agents_of(config)
        config = config.replace("train", minibatch_size=config.train.horizon * rows // epochs)
        gpu_tr = run.make_trainer(config)
        try:
            cpu_config = config.replace("train", device="cpu")
            cpu_tr = NumpyTrainer(cpu_config, make_batch(cpu_config), gpu_tr.spec)
            compare_one_update(gpu_tr, cpu_tr, gpu_tr.spec, config, epochs, tol, sequence_order)
        finally:
            gpu_tr.close()
            run.close_batches(gpu_tr.env_batches)


def same(got, want, exact: bool) -> bool:
    return bool(np.array_equal(got, want)) if exact else rel_err(got, want) <= 1e-6


def compare_one_update(gpu_tr, cpu_tr, spec, config, epochs, tol, sequence_order):
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    t_len, rows = gpu_tr.horizon, gpu_tr.rows
    exact = config.train.env_device == "cpu"  # the host's batches are the CPU's
    if exact:
        assert gpu_tr.plan.rollout == "host" and len(gpu_tr.rollout_path.groups) == 2
    else:
        assert gpu_tr.plan.rollout == "team"
    assert np.array_equal(a.get(cuda, "params"), cpu_tr.params)  # same seed, same initial weights
    gpu_tr.rollout()
    buf = rollout_buffers(gpu_tr)
    buf["obs"] = a.get(cuda, "obs")
    masks = a.get(cuda, "masks") if gpu_tr.plan.masked else None
    world = a.get(cuda, "world") if spec.world_size else None
    batch, agents = cpu_tr.batch, gpu_tr.num_agents
    batch.reset((np.uint64(config.train.seed) << np.uint64(32)) + np.arange(batch.num_envs, dtype=np.uint64), None)
    inputs = AgentInputs(spec, batch)
    assert (masks is not None) == (inputs.mask() is not None)
    for t in range(t_len + 1):
        assert same(buf["obs"][t], inputs.obs(), exact), t
        if masks is not None:
            assert np.array_equal(masks[t], inputs.mask()), t
        if world is not None:
            assert same(world[t], inputs.world(), exact), t
        if t == t_len:
            break
        if masks is not None:
            assert masks[t][np.arange(rows), buf["actions"][t]].all(), t  # only available actions are taken
        batch.step(buf["actions"][t].astype(np.int64).reshape(batch.num_envs, agents))
        assert np.array_equal(buf["dones"][t], np.repeat(batch.terminated | batch.truncated, agents)), t
        assert same(buf["rewards"][t], batch.rewards.reshape(rows), exact), t
    views = cpu_tr.layout.views(cpu_tr.params)
    dist, values, _, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len],
                                            np.zeros((0, rows, spec.hidden), np.float32),
                                            None if world is None else world[:t_len])
    dist = masked(dist, None if masks is None else masks[:t_len])
    actions = buf["actions"].astype(np.int64)
    assert rel_err(buf["values"], values) <= F32_TOL
    assert rel_err(buf["logp"], ref.action_log_prob(spec, dist, actions)) <= F32_TOL
    drawn = np.stack([ref.sample_head(spec, dist[t], ref.masked_uniforms(ref.policy_uniforms(gpu_tr.seed_key, rows, t))
                                      if masks is not None else ref.policy_uniforms(gpu_tr.seed_key, rows, t))[0]
                      for t in range(t_len)])
    assert np.mean(actions == drawn) > 0.999

    load_numpy_trainer(cpu_tr, buf, gpu_tr.last_values())
    if masks is not None:
        cpu_tr.masks[...] = masks[:t_len]
    if world is not None:
        cpu_tr.world[...] = world[:t_len]
    cpu_tr.rng = FixedOrders([sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, 0, e) for e in range(epochs)])
    stats_gpu, stats_cpu = gpu_tr.update(num_updates=10), cpu_tr.update(num_updates=10)
    if epochs == 1:  # the only minibatch's gradient, every parameter's, clipped (the GPU keeps the clip scale)
        grads = a.get(cuda, "grads") * gpu_tr.scalars()["clip_scale"]
        assert rel_err(grads, cpu_tr.grads) <= F32_TOL
        ids = cpu_tr.layout.views(grads)["enc.w"][:, spec.obs_size:]  # the agent ids' columns learn
        assert np.abs(ids).max() > 0
    assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= tol
    assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= tol
    for key in ["policy_loss", "value_loss", "entropy", "grad_norm", "explained_variance"]:
        floor = 1.0 if key in ("policy_loss", "explained_variance") else 1e-2
        assert abs(stats_gpu[key] - stats_cpu[key]) <= tol * max(abs(stats_cpu[key]), floor), key


@pytest.mark.gpu
@pytest.mark.parametrize("env_device", ["cuda", "cpu"], ids=["games-on-gpu", "games-on-host"])
def test_async_team_updates_match_numpy_async_with_vtrace(env_device):
    """train.async with V-trace on smax:3m with the world-state critic: each update (one epoch) matches
    NumpyTrainer's on the same slot data (masks and world state too), starting weights and order, V-trace's ratios
    from the masked categorical's log-probs under the weights the update starts from (the stale data's)."""
    _cuda_or_skip()
    config = team_config("smax:3m", {"critic_input": "world_state"}, env_device=env_device, vtrace=True,
                         **{"async": True})
    gpu_tr = run.make_trainer(config)
    try:
        cpu_config = config.replace("train", device="cpu")
        cpu_tr = NumpyTrainer(cpu_config, make_batch(cpu_config), gpu_tr.spec)
        cuda, a = gpu_tr.cuda, gpu_tr.arena
        for k in range(4):
            _, _, sampling_rng = start_async_update(gpu_tr, cpu_tr, k, 1)
            suffix = "" if gpu_tr.active_slot == 0 else "@1"
            cpu_tr.masks[...] = a.get(cuda, "masks" + suffix)[:gpu_tr.horizon]
            cpu_tr.world[...] = a.get(cuda, "world" + suffix)[:gpu_tr.horizon]
            stats_gpu, stats_cpu = gpu_tr.update(num_updates=10), cpu_tr.update(num_updates=10)
            cpu_tr.rng = sampling_rng
            assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= 1e-4, k
            for key in ["policy_loss", "value_loss", "entropy", "approx_kl", "grad_norm"]:
                assert abs(stats_gpu[key] - stats_cpu[key]) <= 1e-4 * max(abs(stats_cpu[key]), 1e-2), (k, key)
    finally:
        gpu_tr.close()
        run.close_batches(gpu_tr.env_batches)


@pytest.mark.gpu
@pytest.mark.parametrize("env_device", ["cuda", "cpu"], ids=["games-on-gpu", "games-on-host"])
def test_each_teams_return_is_logged(env_device):
    """simple_tag (adversaries chasing agents): pop_episodes' episode_return and each team's
    (episode_return_adversaries, episode_return_agents) are the means over the episodes a CPU batch fed the same
    actions finished (rollout.cu's per-agent sums), as NumpyTrainer.pop_episodes logs them."""
    _cuda_or_skip()
    from fastvec.trainer import teams
    config = team_config("simple_tag", {}, horizon=32, env_device=env_device)
    gpu_tr = run.make_trainer(config)
    try:
        gpu_tr.rollout()
        actions = rollout_buffers(gpu_tr)["actions"]
        batch = make_batch(config)
        batch.reset((np.uint64(config.train.seed) << np.uint64(32)) + np.arange(batch.num_envs, dtype=np.uint64), None)
        finished = []
        for t in range(gpu_tr.horizon):
            batch.step(actions[t].astype(np.int64).reshape(batch.num_envs, -1))
            done = batch.terminated | batch.truncated
            finished += list(batch.episode_return[done])
        returns = np.array(finished, np.float64)
        labels = np.array(teams.agent_teams(config.env.name, config.env.params))
        assert len(returns) == config.env.num_envs  # every game ends once (25 steps) in 32
        logged = gpu_tr.pop_episodes()
        assert logged["episodes"] == len(returns)
        assert logged["episode_return"] == pytest.approx(returns.mean(), rel=1e-5, abs=1e-5)
        for team in ("adversaries", "agents"):
            want = returns[:, labels == team].mean()
            assert logged[f"episode_return_{team}"] == pytest.approx(want, rel=1e-5, abs=1e-5), team
    finally:
        gpu_tr.close()
        run.close_batches(gpu_tr.env_batches)


@pytest.mark.gpu
def test_gpu_checkpoint_of_a_team_plays_on_the_cpu_trainer(tmp_path, capsys):
    """A CUDA-trained SMAX checkpoint (games on the GPU; agent ids, masks, world-state critic) is the CPU trainer's
    layout: its evaluation runs and reports the win rate."""
    _cuda_or_skip()
    run_dir = tmp_path / "smax"
    assert cli.main(["smax:3m", "--train.device=cuda", "--policy.critic_input=world_state", "--env.num_envs=16",
                     "--train.horizon=32", "--train.minibatch_size=384", "--train.total_timesteps=4096",
                     f"--run-dir={run_dir}"]) == 0
    capsys.readouterr()
    assert cli.main(["smax:3m", f"--eval={run_dir}", "--eval.episodes=8"]) == 0
    assert "allies_won" in capsys.readouterr().out


def logged(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.gpu
@pytest.mark.parametrize("env_device", ["cuda", "cpu"], ids=["games-on-gpu", "games-on-host"])
@pytest.mark.parametrize("name,steps,key,margin", [("simple_spread", 400_000, "episode_return", 2.0),
                                                   ("smax:3m", 1_000_000, "allies_won", 0.2)])
def test_a_short_cuda_run_of_a_team_improves_its_return(tmp_path, name, steps, key, margin, env_device):
    """The shipped config (mpe.toml, smax.toml) on the CUDA trainer, logged every update: the mean over the last
    quarter of the run of the return (simple_spread) or win rate (smax:3m, against jaxmarl's heuristic enemy) beats
    the first three updates' (a nearly untrained policy's) by a margin (the CPU trainer's smax:3m wins half its
    battles at 600K steps, docs/teams.md)."""
    _cuda_or_skip()
    run_dir = tmp_path / "run"
    assert cli.main([name, "--train.device=cuda", f"--train.env_device={env_device}",
                     f"--train.total_timesteps={steps}", "--train.log_interval=0", f"--run-dir={run_dir}"]) == 0
    rows = [row for row in logged(run_dir) if row.get("episodes")]
    assert len(rows) >= 12
    first = float(np.mean([row[key] for row in rows[:3]]))
    last = float(np.mean([row[key] for row in rows[-(len(rows) // 4):]]))
    assert last > first + margin, (first, last)

