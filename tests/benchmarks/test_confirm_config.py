"""benchmarks/confirm_config.py on the CPU: a case's config is ENV.toml < its TOML < its values < the seed, and a
tiny run reports its first log at the target and an evaluation over the episodes asked for."""

import pytest


@pytest.fixture(scope="module")
def confirm(load_benchmark):
    return load_benchmark("confirm_config")


def test_a_case_layers_the_toml_its_values_and_the_seed(confirm, tmp_path):
    toml = tmp_path / "best.toml"
    toml.write_text('[env]\nname = "cartpole"\nnum_envs = 16\n[train]\nlearning_rate = 0.01\nseed = 9\n')
    config = confirm.case_config("cartpole", str(toml), ["train.learning_rate=0.02", "policy.hidden=8"], 3, 12)
    assert config["env"]["num_envs"] == 16 and config["train"]["learning_rate"] == 0.02
    assert config["policy"]["hidden"] == 8 and config["train"]["seed"] == 3 and config["eval"]["episodes"] == 12
    shipped = confirm.case_config("cartpole", "-", [], 1, 12)
    assert shipped["env"]["num_envs"] != 16  # cartpole.toml's own
    with pytest.raises(SystemExit, match="SECTION.KEY=VALUE"):
        confirm.case_config("cartpole", "-", ["learning_rate=0.02"], 1, 12)


@pytest.mark.parametrize("target", [1.0, 1e9])
def test_a_tiny_run_reports_the_target_and_its_evaluation(confirm, tmp_path, target):
    values = ["train.device=cpu", "train.total_timesteps=4096", "env.num_envs=8", "policy.hidden=8",
              "train.horizon=16", "train.bptt_horizon=8", "train.minibatch_size=64", "train.log_interval=0"]
    r = confirm.one_run("cartpole", "tiny", "-", values, 1, "episode_return", target, 8, tmp_path)
    assert r["steps"] >= 4096 and r["eval_episodes"] == 8 and r["curve"]
    first = next((p for p in r["curve"] if p["episode_return"] >= target), None)
    assert r["target_s"] == (first and first["time"]) and (r["target_s"] is None) == (target == 1e9)
    assert r["last_log"] == r["curve"][-1]["episode_return"] and r["train_s"] >= r["curve"][-1]["time"]
    assert not (tmp_path / "tiny-s1" / "checkpoints").exists()
