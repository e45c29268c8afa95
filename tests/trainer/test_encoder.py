"""policy.encoder=relu: an MLP whose encoder output passes a ReLU (with policy.layers=1, PureJaxRL's and CleanRL's
network) trains end to end on the CPU trainer (checkpoint, --resume, --eval read it back); the CUDA trainer takes it
on its GEMM path (test_cuda_heads.py compares it with the CPU trainer), refusing it by name only for self-play with
the games on the GPU; a MinGRU with one (JaxMARL's Dense-ReLU before its GRU) trains and plans alike."""

from __future__ import annotations

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda.plan import Choices, Plan
from fastvec.trainer.resolve import cuda_unsupported, make_policy_spec
from fastvec.trainer.settings import Config

SMALL = ["--policy.kind=mlp", "--policy.encoder=relu", "--policy.layers=1", "--policy.hidden=16",
         "--train.horizon=16", "--train.bptt_horizon=8", "--env.num_envs=8", "--train.minibatch_size=64",
         "--train.total_timesteps=2048", "--train.device=cpu", "--train.log_interval=0",
         "--train.checkpoint_interval=4"]


def test_a_relu_encoder_trains_resumes_and_evaluates_on_the_cpu(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["cartpole", *SMALL, f"--run-dir={run_dir}"]) == 0
    assert 'encoder = "relu"' in (run_dir / "config.toml").read_text()
    meta, _ = checkpoint.load(run_dir)
    assert checkpoint.spec_of(meta).encoder == "relu"  # the policy --eval and --resume rebuild
    assert cli.main(["cartpole", f"--resume={run_dir}", "--train.total_timesteps=4096"]) == 0
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=4"]) == 0
    assert "mean return" in capsys.readouterr().out


def test_a_checkpoint_without_the_field_has_a_linear_encoder(tmp_path):
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=8, layers=1)
    state = {"params": ref.init_params(spec, np.random.default_rng(0)),
             "counters": {"update": 0, "global_step": 0, "opt_step": 0}}
    path = checkpoint.save(tmp_path / "c.npz", spec, "cartpole", 1, state, load_config("cartpole"))
    meta, _ = checkpoint.load(path)
    assert "encoder" not in meta["policy"]  # at its default, the meta is as before the field existed
    assert checkpoint.spec_of(meta).encoder == "linear"


def test_the_cuda_trainer_takes_a_relu_encoder_on_the_gemm_path():
    """(test_critic.py: and refuses it, by name, only for self-play with the games on the GPU.)"""
    config = load_config("cartpole", {"policy": {"kind": "mlp", "encoder": "relu"}})
    spec = make_policy_spec(config, 4, 2)
    assert spec.encoder == "relu" and cuda_unsupported(spec, config) is None
    plan = Plan.make(Config.of(config).train, spec, ref.FlatLayout(ref.param_table(spec)), 24, 1, False,
                     Choices(rollout="warp"))
    assert plan.rollout == "gemm" and plan.fused_block == 0  # the fused kernels read a linear encoder


def test_a_mingru_with_a_relu_encoder_trains_on_the_cpu_and_takes_the_gemm_path(tmp_path):
    mingru = [a for a in SMALL if a not in ("--policy.kind=mlp", "--policy.layers=1")] + ["--policy.kind=mingru"]
    run_dir = tmp_path / "run"
    assert cli.main(["cartpole", *mingru, f"--run-dir={run_dir}"]) == 0
    meta, _ = checkpoint.load(run_dir)
    spec = checkpoint.spec_of(meta)
    assert (spec.kind, spec.encoder) == ("mingru", "relu")
    assert "policy.encoder=relu" in checkpoint.describe(spec)
    config = load_config("cartpole", {"policy": {"kind": "mingru", "encoder": "relu"}})
    spec = make_policy_spec(config, 4, 2)
    assert cuda_unsupported(spec, config) is None
    plan = Plan.make(Config.of(config).train, spec, ref.FlatLayout(ref.param_table(spec)), 24, 1, False,
                     Choices(rollout="warp"))
    assert plan.rollout == "gemm" and plan.fused_block == 0  # the fused kernels read a linear encoder
