"""policy.activation=tanh and policy.encoder=tanh (CleanRL's continuous actor-critic: two tanh layers of 64): the
reference's tanh layers against finite differences, the CPU trainer end to end (checkpoint, --resume, --eval read it
back), the CUDA trainer's GEMM path (the fused kernels are ReLU's), a MinGRU's refusal of tanh layers (its encoder
may be tanh), and a run config saved before these keys existed still resumes."""

from __future__ import annotations

import numpy as np
import pytest

from fastvec.trainer import checkpoint, cli
from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, load_config, read_run_config
from fastvec.trainer.config_text import RUN_CONFIG_END, RUN_CONFIG_HEAD
from fastvec.trainer.cuda.plan import fused_kernels_run
from fastvec.trainer.resolve import cuda_unsupported, make_policy_spec

SMALL = ["--policy.kind=mlp", "--policy.encoder=tanh", "--policy.activation=tanh", "--policy.layers=1",
         "--policy.hidden=16", "--train.horizon=16", "--train.bptt_horizon=8", "--env.num_envs=8",
         "--train.minibatch_size=64", "--train.total_timesteps=2048", "--train.device=cpu", "--train.log_interval=0",
         "--train.checkpoint_interval=4"]


@pytest.mark.parametrize("encoder,activation", [("tanh", "tanh"), ("linear", "tanh"), ("relu", "tanh"),
                                                ("tanh", "relu")])
def test_tanh_layers_backward_matches_finite_differences(encoder, activation):
    spec = ref.PolicySpec(obs_size=3, num_actions=2, kind="mlp", hidden=5, layers=2, encoder=encoder, activation=activation)
    rng = np.random.default_rng(0)
    layout = ref.FlatLayout(ref.param_table(spec))
    flat = ref.init_params(spec, rng, np.float64) + rng.normal(0, 0.3, layout.size)
    obs, starts = rng.normal(0, 1, (2, 4, 3)), np.zeros((2, 4))
    state = np.zeros((0, 4, 5))
    weights = rng.normal(0, 1, (2, 4, 3))  # a random linear function of the decoder output: the loss

    def loss(p):
        logits, values, _, _ = ref.policy_forward(spec, layout.views(p), obs, starts, state)
        return float((logits * weights[..., :2]).sum() + (values * weights[..., 2]).sum())

    views = layout.views(flat)
    _, _, _, cache = ref.policy_forward(spec, views, obs, starts, state)
    grads = np.zeros_like(flat)
    ref.policy_backward(spec, views, layout.views(grads), weights[..., :2], weights[..., 2], cache)
    eps = 1e-6
    for i in rng.choice(layout.size, 40, replace=False):
        bump = np.zeros_like(flat)
        bump[i] = eps
        assert abs((loss(flat + bump) - loss(flat - bump)) / (2 * eps) - grads[i]) < 1e-6, i
    hidden = ref.stack_forward(spec, views, "", obs, 1 - starts, state)[2][0]
    assert (hidden < 0).any() == (activation == "tanh")  # tanh's outputs are signed, ReLU's are not


def test_tanh_trains_resumes_and_evaluates_on_the_cpu(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["cartpole", *SMALL, f"--run-dir={run_dir}"]) == 0
    text = (run_dir / "config.toml").read_text()
    assert 'activation = "tanh"' in text and 'encoder = "tanh"' in text
    meta, _ = checkpoint.load(run_dir)
    spec = checkpoint.spec_of(meta)
    assert (spec.encoder, spec.activation) == ("tanh", "tanh")
    assert "policy.activation=tanh" in checkpoint.describe(spec)
    assert cli.main(["cartpole", f"--resume={run_dir}", "--train.total_timesteps=4096"]) == 0
    assert cli.main(["cartpole", f"--eval={run_dir}", "--eval.episodes=4"]) == 0
    assert "mean return" in capsys.readouterr().out


def test_a_checkpoint_without_the_field_has_relu_layers(tmp_path):
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=8, layers=1)
    state = {"params": ref.init_params(spec, np.random.default_rng(0)),
             "counters": {"update": 0, "global_step": 0, "opt_step": 0}}
    path = checkpoint.save(tmp_path / "c.npz", spec, "cartpole", 1, state, load_config("cartpole"))
    meta, _ = checkpoint.load(path)
    assert "activation" not in meta["policy"] and checkpoint.spec_of(meta).activation == "relu"


def test_the_cuda_trainer_takes_tanh_on_the_gemm_path_only():
    config = load_config("cartpole", {"policy": {"kind": "mlp", "activation": "tanh"}})
    spec = make_policy_spec(config, 4, 2)
    assert spec.activation == "tanh" and cuda_unsupported(spec, config) is None
    assert not fused_kernels_run(spec)  # the fused rollout kernels hard-code ReLU layers
    relu = make_policy_spec(load_config("cartpole", {"policy": {"kind": "mlp"}}), 4, 2)
    assert fused_kernels_run(relu)


def test_a_mingru_with_tanh_layers_is_a_config_error():
    with pytest.raises(ConfigError, match="policy.activation=tanh is for an MLP policy; add --policy.kind=mlp"):
        load_config("cartpole", {"policy": {"kind": "mingru", "activation": "tanh"}})
    assert load_config("cartpole", {"policy": {"kind": "mingru", "encoder": "tanh"}})["policy"]["encoder"] == "tanh"


def test_a_run_config_saved_before_the_newer_policy_keys_still_reads(tmp_path):
    """A marked config.toml written before policy.activation, policy.agent_id and policy.critic_input existed: the
    keys take their defaults (what those runs did) instead of the file counting as damaged."""
    from fastvec.trainer.config_text import to_toml
    config = load_config("cartpole")
    text = to_toml(config)
    assert text.startswith(RUN_CONFIG_HEAD) and text.rstrip().endswith(RUN_CONFIG_END)
    old = "\n".join(line for line in text.splitlines()
                    if not line.split("=")[0].strip() in ("activation", "agent_id", "critic_input")) + "\n"
    path = tmp_path / "config.toml"
    path.write_text(old)
    saved = read_run_config(path)
    assert "activation" not in saved["policy"] and "agent_id" not in saved["policy"]
