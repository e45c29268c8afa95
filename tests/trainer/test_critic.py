"""policy.critic: a separate critic trains end to end on the CPU trainer (checkpoint, --resume, --eval read it back);
the CUDA trainer takes it (test_cuda_heads.py compares it with the CPU trainer) except for self-play with the games
on the GPU, which it refuses by name; a MinGRU with one is a clear config error."""

from __future__ import annotations

import pytest

from fastvec.trainer import cli
from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.resolve import cuda_unsupported, make_policy_spec

SMALL = ["--policy.kind=mlp", "--policy.critic=separate", "--policy.hidden=16", "--train.horizon=16",
         "--train.bptt_horizon=8", "--env.num_envs=8", "--train.minibatch_size=64", "--train.total_timesteps=2048",
         "--train.device=cpu", "--train.log_interval=0", "--train.checkpoint_interval=4"]


def test_a_separate_critic_trains_resumes_and_evaluates_on_the_cpu(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["cartpole", *SMALL, f"--run-dir={run_dir}"]) == 0
    saved = (run_dir / "config.toml").read_text()
    assert 'critic = "separate"' in saved
    assert cli.main(["cartpole", f"--resume={run_dir}", "--train.total_timesteps=4096"]) == 0
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=4"]) == 0
    assert "mean return" in capsys.readouterr().out


@pytest.mark.parametrize("option,refusal", [({"critic": "separate"}, "policy.critic=shared"),
                                           ({"encoder": "relu"}, "policy.encoder=linear")])
def test_the_cuda_trainer_takes_each_mlp_option_except_for_selfplay_on_the_gpu(option, refusal):
    """policy.critic=separate and policy.encoder=relu (test_encoder.py) alike."""
    config = load_config("cartpole", {"policy": {"kind": "mlp", **option}})
    assert cuda_unsupported(make_policy_spec(config, 4, 2), config) is None
    pong = load_config("pong", {"policy": {"kind": "mlp", **option}, "selfplay": {"enabled": True}})
    assert refusal in cuda_unsupported(make_policy_spec(pong, 8, 3), pong)
    pong["train"]["env_device"] = "cpu"  # self-play with the games and opponents on the CPU
    assert cuda_unsupported(make_policy_spec(pong, 8, 3), pong) is None


def test_a_mingru_with_a_separate_critic_is_a_config_error():
    with pytest.raises(ConfigError, match="policy.critic=separate is for an MLP policy; add --policy.kind=mlp"):
        load_config("cartpole", {"policy": {"kind": "mingru", "critic": "separate"}})
