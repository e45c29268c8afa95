"""Teams of agents on the CPU trainer: fastvec-train's names for the MPE scenarios and SMAX, their configs and
errors, the policy's inputs (agent ids, each agent's own actions, the world state as mpe2's state()), masks kept
from the rollout for the update, per-team returns and SMAX's win rate in the log, which device trains them, and
simple_spread learning past a random policy's return."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli
from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
from fastvec.trainer.config import ConfigError, help_text, load_config
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.resolve import cuda_unsupported, make_batch, make_policy_spec, on_device
from fastvec.trainer.settings import Config

SMALL = {"env": {"num_envs": 4}, "policy": {"hidden": 8},
         "train": {"horizon": 8, "minibatch_size": 32, "total_timesteps": 64, "log_interval": 0.0}}


def small(name: str, **sections) -> Config:
    overrides = {section: dict(values) for section, values in SMALL.items()}
    for section, values in sections.items():
        overrides.setdefault(section, {}).update(values)
    return Config.of(load_config(name, overrides))


def spec_for(config: Config, batch):
    return make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces,
                            batch.obs.shape[1], world_state_size(batch))


# ---------------------------------------------------------------------------------------------- names and configs


@pytest.mark.parametrize("given,name,limit", [("simple_spread", "simple_spread", 25),
                                              ("fastvec/simple_spread-v3", "simple_spread", 25),
                                              ("Simple_Tag_v3", "simple_tag", 25), ("smax:3m", "smax:3m", 101),
                                              ("fastvec/smax_2s3z-v0", "smax:2s3z", 101)])
def test_team_envs_by_name_take_their_familys_config_and_step_limit(given, name, limit):
    config = Config.of(load_config(given))
    assert (config.env.name, config.env_kind, config.step_limit) == (name, "team", limit)
    assert config.policy.agent_id  # mpe.toml's and smax.toml's


@pytest.mark.parametrize("env,overrides,message", [
    ("smax:4m", {}, "unknown SMAX scenario '4m'"),
    ("simple_spread", {"env": {"M": 3}}, "unknown keyword(s) ['M'] for simple_spread; its keywords are: N"),
    ("simple_spread", {"env": {"N": 0}}, "N=0 for simple_spread must be an int in [1, 16]"),
    ("simple_spread", {"env": {"max_cycles": 50}}, "--env.max_episode_steps=50"),
    ("smax:3m", {"env": {"N": 3}}, "smax:3m takes the [env] keywords enemy"),
    ("smax:3m", {"env": {"enemy": "bots"}}, "enemy='bots'"),
    ("smax:3m", {"env": {"attack_mode": "weakest"}}, "attack_mode='weakest' is not one of ['closest', 'random']"),
    ("smax:3m", {"env": {"enemy": "agents", "attack_mode": "random"}}, "it needs enemy='heuristic'"),
    ("simple_spread", {"policy": {"critic_input": "global"}}, "policy.critic_input='global': use local or world_state"),
    ("simple_spread", {"policy": {"critic_input": "world_state", "critic": "shared"}}, "--policy.critic=separate"),
    ("simple_spread", {"policy": {"critic_input": "world_state"}, "train": {"norm_obs": True}},
     "--train.norm_obs=false"),
    ("pong", {"policy": {"agent_id": True}, "selfplay": {"enabled": True}}, "--policy.agent_id=false"),
    ("simple_spread", {"policy": {"agent_id": 1}}, "policy.agent_id"),
])
def test_team_config_errors_name_the_problem_and_the_fix(env, overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(env, overrides)
    assert message in str(err.value)


def test_help_config_lists_a_team_envs_keywords():
    text = help_text(load_config("simple_spread", {"env": {"N": 4}}))
    assert "simple_spread's keywords (fastvec-train --list names the others):\n    N = 4" in text
    assert 'enemy = "heuristic"' in help_text(load_config("smax:3m"))


def test_a_misspelt_team_env_gets_a_suggestion(capsys):
    assert cli.main(["simple_sprad"]) == 2
    assert "did you mean 'simple_spread'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- the policy's inputs


def test_each_row_reads_its_observation_then_its_agent_id():
    config = small("simple_spread")
    batch = make_batch(config)
    batch.reset(np.arange(4, dtype=np.uint64), None)
    spec = spec_for(config, batch)
    assert (spec.obs_size, spec.agent_ids, spec.input_size) == (18, 3, 21)
    obs = AgentInputs(spec, batch).obs()
    assert obs.shape == (12, 21)
    np.testing.assert_array_equal(obs[:, :18], batch.obs.reshape(12, 18))
    np.testing.assert_array_equal(obs[:, 18:], np.tile(np.eye(3, dtype=np.float32), (4, 1)))
    off = make_policy_spec(small("simple_spread", policy={"agent_id": False}), 18, 5, batch.env.spaces, 3)
    assert AgentInputs(off, batch).obs().shape == (12, 18)


def test_agents_with_fewer_actions_have_the_rest_masked_out():
    """simple_speaker_listener: the speaker's Discrete(3), the listener's Discrete(5) (mpe2's spaces)."""
    config = small("simple_speaker_listener")
    batch = make_batch(config)
    mask = AgentInputs(spec_for(config, batch), batch).mask()
    np.testing.assert_array_equal(mask[:2], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert mask.shape == (8, 5)
    spread = small("simple_spread")
    assert AgentInputs(spec_for(spread, make_batch(spread)), make_batch(spread)).mask() is None  # all alike


def test_the_world_state_of_an_mpe_game_is_mpe2s_state():
    """Every agent's own observation concatenated (MpeParallelEnv.state(), mpe2's), agents of different sizes."""
    mpe_faces = pytest.importorskip("fastvec.wrappers.mpe")
    config = small("simple_adversary", policy={"kind": "mlp", "critic": "separate", "critic_input": "world_state"})
    game = mpe_faces.parallel_env("simple_adversary")
    game.reset(seed=3)
    for _ in range(3):
        game.step({agent: game.action_space(agent).sample() for agent in game.agents})
    spec = spec_for(config, game.batch)
    assert spec.world_size == len(game.state()) == 8 + 10 + 10
    world = AgentInputs(spec, game.batch).world()
    assert world.shape == (3, 28 + 3)
    for agent in range(3):
        np.testing.assert_array_equal(world[agent, :28], game.state())
        np.testing.assert_array_equal(world[agent, 28:], np.eye(3)[agent])


class MaskedBatch:
    """A CPU batch with what the SMAX batch adds: an action_mask (N, agents, A) uint8 and a world_state (N, 7),
    fresh random ones after every reset and step (at least one action available per row)."""

    def __init__(self, batch, seed=0):
        self.inner, self.rng = batch, np.random.default_rng(seed)
        self.refresh()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def refresh(self):
        n, a, k = self.inner.num_envs, self.inner.obs.shape[1], self.inner.env.num_actions
        self.action_mask = (self.rng.random((n, a, k)) < 0.5).astype(np.uint8)
        self.action_mask[..., 4] = 1
        self.world_state = self.rng.standard_normal((n, 7)).astype(np.float32)

    def reset(self, seeds, mask):
        self.inner.reset(seeds, mask)
        self.refresh()

    def step(self, actions):
        ended = self.inner.step(actions)
        self.refresh()
        return ended


def test_masks_and_world_state_reach_the_rollout_and_the_update():
    config = small("simple_spread", policy={"kind": "mlp", "critic": "separate", "critic_input": "world_state"})
    batch = MaskedBatch(make_batch(config))
    spec = spec_for(config, batch)
    assert spec.world_size == 7
    trainer = NumpyTrainer(config, batch, spec)
    trainer.rollout()
    t, r = np.meshgrid(np.arange(trainer.horizon), np.arange(trainer.rows), indexing="ij")
    assert trainer.masks[t, r, trainer.actions].all()  # every action taken was available
    assert 0 < trainer.masks.mean() < 1 and trainer.world.shape == (8, 12, 7 + 3)
    stats = trainer.update(1)
    assert np.isfinite(stats["loss"]) and np.isfinite(trainer.params).all()


def test_smax_agents_take_only_the_actions_its_batch_says_are_available():
    """SMAX's batch.action_mask (jaxmarl's get_avail_actions: attacks on units in range only) is kept with each step
    and every action taken is available; the world state is the batch's (12 values a unit), then the agent id.
    With every unit an agent (--env.enemy=agents), both teams' returns are logged."""
    config = small("smax:3m", env={"enemy": "agents"}, train={"horizon": 16, "bptt_horizon": 16, "minibatch_size": 96},
                   policy={"kind": "mlp", "critic": "separate", "critic_input": "world_state"})
    batch = make_batch(config)
    trainer = NumpyTrainer(config, batch, spec_for(config, batch))
    assert trainer.spec.world_size == 72 and trainer.world.shape == (16, 24, 72 + 6)
    assert trainer.teams == ["allies"] * 3 + ["enemies"] * 3
    masks = []
    for _ in range(3):
        trainer.rollout()
        t, r = np.meshgrid(np.arange(16), np.arange(24), indexing="ij")
        assert trainer.masks[t, r, trainer.actions].all()
        masks.append(trainer.masks.copy())
        trainer.update(3)
    masks = np.concatenate(masks)
    assert masks[..., 5:].any() and not masks[..., 5:].all()  # attacks were sometimes available, sometimes not


# ---------------------------------------------------------------------------------------------- runs


def test_a_competitive_scenario_logs_each_teams_return(tmp_path):
    """simple_tag: 3 adversaries and 1 prey; episode_return is the mean over all four agents."""
    run_dir = tmp_path / "tag"
    assert cli.main(["simple_tag", "--env.num_envs=8", "--train.horizon=50", "--train.minibatch_size=400",
                     "--train.total_timesteps=800", f"--run-dir={run_dir}"]) == 0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    logged = [row for row in rows if row["episodes"]]
    assert logged
    for row in logged:
        mean = (3 * row["episode_return_adversaries"] + row["episode_return_agents"]) / 4
        assert row["episode_return"] == pytest.approx(mean, rel=1e-5, abs=1e-5)


def test_a_cooperative_scenario_logs_no_team_column(tmp_path):
    """simple_spread: every agent is on one team, whose mean return is episode_return itself; the log has that
    column alone, as for a single-agent env."""
    run_dir = tmp_path / "spread"
    assert cli.main(["simple_spread", "--env.num_envs=8", "--train.horizon=50", "--train.minibatch_size=400",
                     "--train.total_timesteps=800", f"--run-dir={run_dir}"]) == 0
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert any(row["episodes"] for row in rows)
    assert not [key for row in rows for key in row if key.startswith("episode_return_")]


def test_smax_trains_and_evaluates_with_its_win_rate(tmp_path, capsys):
    """smax.toml: the allies against jaxmarl's heuristic enemy, the three allies the agents."""
    assert Config.of(load_config("smax:3m")).env.params["enemy"] == "heuristic"
    run_dir = tmp_path / "smax"
    assert cli.main(["smax:3m", "--env.num_envs=8", "--train.horizon=32", "--train.minibatch_size=192",
                     "--train.total_timesteps=512", f"--run-dir={run_dir}"]) == 0
    meta, _ = checkpoint.load(checkpoint.latest(run_dir))
    assert meta["num_agents"] == 3
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all(0 <= row["allies_won"] <= 1 for row in rows if row["episodes"])
    capsys.readouterr()
    assert cli.main(["smax:3m", f"--eval={run_dir}", "--eval.episodes=4"]) == 0
    assert "allies_won" in capsys.readouterr().out


def test_on_a_gpu_machine_a_team_env_trains_on_the_cuda_trainer_with_its_games_where_env_device_says():
    """The CUDA trainer trains teams with the games in the rollout graph (train.env_device=cuda, the default) or on
    the host; agent ids and world states of a multi-agent env that is not a team game are the host path's."""
    for name in ("simple_spread", "smax:3m"):
        for env_device in ("cuda", "cpu"):
            config = on_device(small(name, policy={"critic_input": "world_state"},
                                         train={"env_device": env_device}), "cuda")
            assert (config.train.device, config.train.env_device) == ("cuda", env_device)
            batch = make_batch(config, 2)
            try:
                spec = spec_for(config, batch)
            finally:
                batch.close()
            assert spec.agent_ids == 3 and spec.world_size > 0
            assert cuda_unsupported(spec, config) is None
    selfplay = small("smax:3m", selfplay={"enabled": True}, policy={"agent_id": False})
    assert "self-play" in cuda_unsupported(make_policy_spec(selfplay, 8, 9), selfplay)
    pong = Config.of(load_config("pong", {"policy": {"agent_id": True}}))
    spec = make_policy_spec(pong, 8, 3, agents=2)
    assert "--train.env_device=cpu" in cuda_unsupported(spec, pong.replace("train", env_device="cuda"))
    assert cuda_unsupported(spec, pong.replace("train", env_device="cpu")) is None


def random_return(config: Config, episodes: int = 512) -> float:
    """The mean episode return of uniformly random actions (the oracle a trained policy must beat)."""
    batch = make_batch(config, episodes)
    batch.reset(np.arange(episodes, dtype=np.uint64) + 99, None)
    rng, returns = np.random.default_rng(5), np.full(episodes, np.nan)
    while np.isnan(returns).any():
        batch.step(rng.integers(0, batch.env.num_actions, batch.obs.shape[:2]))
        done = (batch.terminated | batch.truncated) & np.isnan(returns)
        returns[done] = batch.episode_return[done].mean(1)
    return float(returns.mean())


def test_simple_spread_learns_past_a_random_policy(tmp_path, capsys):
    """mpe.toml's IPPO, 250K steps (about 30 s on 2 cores): the checkpoint's mean return over 256 evaluation
    episodes beats random actions' (about -26.3) by a margin."""
    baseline = random_return(Config.of(load_config("simple_spread")))
    run_dir = tmp_path / "spread"
    assert cli.main(["simple_spread", "--train.total_timesteps=250_000", f"--run-dir={run_dir}"]) == 0
    capsys.readouterr()
    assert cli.main(["simple_spread", f"--eval={run_dir}", "--eval.episodes=256"]) == 0
    trained = float(capsys.readouterr().out.split("mean return ")[1].split()[0])
    assert trained > baseline + 2.0, (trained, baseline)


@pytest.mark.parametrize("env_id,obs,actions", [("CartPole-v1", 4, 2), ("Acrobot-v1", 6, 3)])
def test_a_batch_without_agent_spaces_gives_its_one_agent_the_batch_obs_and_action_sizes(env_id, obs, actions):
    """A Gymnasium batch has no compiled env to declare AGENT_SPACES: its one agent observes the batch's obs_size
    values and picks among its num_actions, and the world state (all agents' observations) is obs values wide."""
    from fastvec.native.gym_batch import GymBatch
    from fastvec.trainer.agent_inputs import agent_sizes

    batch = GymBatch(env_id, 2)
    try:
        assert agent_sizes(batch, "obs") == [obs]
        assert agent_sizes(batch, "action") == [actions]
        assert world_state_size(batch) == obs
    finally:
        batch.close()
