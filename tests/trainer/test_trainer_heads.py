"""NumpyTrainer on every action head: a Box env and a MultiDiscrete env learn in seconds, runs repeat bitwise,
byte observations stay bytes in the rollout and replay exactly, checkpoints carry the heads and normalisation
through --eval, --eval.render and --resume, and the CUDA trainer's refusal names what it lacks."""

from pathlib import Path

import numpy as np
import pytest

from fastvec.trainer import checkpoint, run
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import cuda_unsupported

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
BOX, MULTI, BYTES = (str(ENVS_DIR / f"{name}.h") for name in ("box_point", "multi_discrete", "random_walk"))
SMALL = {"policy": {"kind": "mlp", "hidden": 16, "layers": 1},
         "train": {"device": "cpu", "horizon": 32, "bptt_horizon": 8, "minibatch_size": 256, "update_epochs": 4,
                   "optimizer": "adam", "learning_rate": 0.01, "ent_coef": 0.0, "seed": 5}}


def config_for(env: str, num_envs: int = 16, **train) -> dict:
    return load_config(env, {"env": {"num_envs": num_envs}, "policy": dict(SMALL["policy"]),
                             "train": {**SMALL["train"], **train}})


def train(config: dict, updates: int):
    trainer = run.make_trainer(config)
    rewards = []
    for _ in range(updates):
        trainer.rollout()
        rewards.append(float(trainer.rewards.mean()))  # raw rewards: no train.norm_reward here
        trainer.update(updates)
    return trainer, rewards


def test_a_box_env_learns_its_gaussian_head():
    """box_point pays (-x^2 - 0.01 force^2) * gain, the gain (action 1) clipped to [0, 1]: a random policy loses
    about 1 per step, a learnt one pushes its gain below 0 (clipped to 0) or x to 0 and loses almost nothing."""
    trainer, rewards = train(config_for(BOX, norm_reward=False), 40)
    assert trainer.actions.dtype == np.float32 and trainer.actions.shape[-1] == 2
    assert trainer.spec.action_kind == "box" and "dec.logstd" in trainer.param_views
    first, last = np.mean(rewards[:3]), np.mean(rewards[-3:])
    assert first < -0.2 and last > 0.2 * first, (first, last)


def test_a_multi_discrete_env_learns_each_dimension():
    """multi_discrete pays 10 * a0 + a1 per step (a0 < 3, a1 < 5) for 4 steps: 48 at random, 96 at best."""
    trainer, rewards = train(config_for(MULTI), 25)
    assert trainer.actions.dtype == np.int64 and trainer.actions.shape[-1] == 2
    first, last = rewards[0], np.mean(rewards[-3:])  # the first rollout is the initial, near-uniform policy's
    assert first < 13.5 and last > 21, (first, last)
    assert trainer.pop_episodes()["episode_return"] > 84


@pytest.mark.parametrize("env", [BOX, MULTI], ids=["box", "multi_discrete"])
def test_runs_repeat_bitwise(env):
    """Same config and seed: the same weights, observation statistics and reward moments, bit for bit."""
    config = config_for(env, 8, norm_obs=True, norm_reward=True)
    (a, _), (b, _) = train(config, 3), train(config_for(env, 8, norm_obs=True, norm_reward=True), 3)
    np.testing.assert_array_equal(a.params, b.params)
    np.testing.assert_array_equal(a.opt_state, b.opt_state)
    assert a.reward_moments == b.reward_moments and a.param_views["obs_norm.count"][0] > 3 * 32 * 8


def test_byte_observations_stay_bytes_and_replay_exactly():
    """random_walk's uint8 observations: the rollout keeps the env's bytes (no float copy), the policy scales them
    by 1/255, and re-running the policy over the stored bytes gives back the log-probs recorded while acting."""
    trainer = run.make_trainer(config_for(BYTES, 6))
    assert trainer.spec.obs_scale == pytest.approx(1 / 255)
    trainer.rollout()
    assert trainer.obs.dtype == np.uint8 and trainer.obs.max() > 1
    dist, _, _, _ = ref.policy_forward(trainer.spec, trainer.param_views, trainer.to_segments(trainer.obs),
                                       trainer.to_segments(trainer.starts), trainer.segment_states())
    logp = ref.action_log_prob(trainer.spec, dist, trainer.to_segments(trainer.actions))
    np.testing.assert_allclose(trainer.from_segments(logp), trainer.logp, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("env", ["pendulum", MULTI], ids=["box", "multi_discrete"])
def test_checkpoints_evaluate_render_and_resume(env, tmp_path):
    """A run with both normalisations (pendulum: a Box env whose episodes always end): the checkpoint records the
    head and the statistics; --eval plays it with them, --eval.render writes a GIF, and --resume continues from
    the saved weights, statistics and reward moments."""
    config = config_for(env, 16, norm_obs=True, norm_reward=True, total_timesteps=16 * 32 * 10)
    config["eval"].update(episodes=4, render_max_frames=20)
    result = run.train(config, tmp_path / "run", dashboard=False)
    trainer = result["trainer"]
    meta, state = checkpoint.load(result["checkpoint"])
    assert meta["policy"]["action_kind"] == trainer.spec.action_kind != "discrete" and meta["policy"]["norm_obs"]
    assert checkpoint.spec_of(meta) == trainer.spec
    assert state["reward_norm"] == list(trainer.reward_moments)
    np.testing.assert_array_equal(state["params"], trainer.params)
    for deterministic in (True, False):
        config["eval"]["deterministic"] = deterministic
        evaluated = run.evaluate(config, result["checkpoint"], render=str(tmp_path / "episode.gif"))
        assert evaluated["episodes"] == 4 and (tmp_path / "episode.gif").stat().st_size > 0
    config["train"]["total_timesteps"] = 16 * 32 * 11
    resumed = run.train(config, tmp_path / "run", resume=True, dashboard=False)["trainer"]
    assert resumed.update_index == 11 and resumed.reward_moments[2] > trainer.reward_moments[2]


def test_the_cuda_trainer_refuses_what_only_the_cpu_trainer_trains():
    def spec(env, **train):
        config = config_for(env, 2, **train)
        trainer_batch = run.make_batch(config, 2)
        from fastvec.trainer.resolve import make_policy_spec
        return make_policy_spec(config, trainer_batch.env.obs_size, trainer_batch.env.num_actions,
                                trainer_batch.env.spaces), config

    assert cuda_unsupported(*spec(BOX, norm_obs=True, norm_reward=True)) is None
    assert cuda_unsupported(*spec(MULTI)) is None
    assert cuda_unsupported(*spec(BOX, env_device="cpu")) is None  # host envs sample every head too
    assert cuda_unsupported(*spec(MULTI, env_device="cpu")) is None
    assert cuda_unsupported(*spec(BYTES)) is None  # bytes scaled by 1/255 in the encoder's input
    normalised, config = spec("cartpole", norm_obs=True)
    config["train"].update(gpus=2, device="cuda")  # a CUDA run's config (a CPU one refuses several GPUs itself)
    assert "--train.gpus=1" in cuda_unsupported(normalised, config)
    assert cuda_unsupported(*spec("cartpole")) is None
    assert cuda_unsupported(*spec("breakout-minatar")) is None  # 0/1 bytes: nothing to scale


def test_auto_device_trains_on_the_cpu_what_the_cuda_trainer_refuses(monkeypatch, capsys):
    """train.device=auto where the CUDA trainer runs (patched in: no GPU here) but refuses the run (self-play on the
    GPU with a separate critic): the CPU trainer trains it, config records "cpu", and a line on stderr says why; an
    explicit train.device=cuda stays an error naming the refusal."""
    from fastvec.trainer.config import ConfigError
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    monkeypatch.setattr(run, "resolve_device", lambda requested: "cuda" if requested == "auto" else requested)

    def selfplay(device):
        return load_config("pong", {"env": {"num_envs": 8}, "selfplay": {"enabled": True},
                                    "policy": {**SMALL["policy"], "kind": "mlp", "critic": "separate"},
                                    "train": {**SMALL["train"], "device": device, "env_device": "cuda"}})

    trainer = run.make_trainer(selfplay("auto"))
    try:
        assert isinstance(trainer, NumpyTrainer) and trainer.config.train.device == "cpu"
        assert trainer.config.train.env_device == "cpu"
        assert "policy.critic=shared" in capsys.readouterr().err
        trainer.rollout()  # it trains
    finally:
        run.close_batches(trainer.env_batches)
    with pytest.raises(ConfigError, match="train.device=cuda: .*policy.critic=shared"):
        run.make_trainer(selfplay("cuda"))
