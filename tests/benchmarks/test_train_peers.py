"""benchmarks/train_peers.py's fastvec side on the CPU: a tiny run is timed to its threshold and evaluated, and a
device the trainer refuses is recorded with its message instead of stopping the benchmark."""

import math

import pytest


@pytest.fixture(scope="module")
def train_peers(load_benchmark):
    return load_benchmark("train_peers")


@pytest.mark.parametrize("threshold, reached", [(-1e9, True), (1e9, False)])
def test_tiny_cpu_run_times_the_threshold_and_evaluates(train_peers, tmp_path, threshold, reached):
    res = train_peers.fastvec_run("pendulum", 1, "cpu", threshold, max_seconds=30.0, eval_episodes=8,
                                  total_timesteps=16_384, run_root=tmp_path)
    assert res["reached"] is reached
    assert res["steps"] >= 16_384 and res["eval_episodes"] == 8 and math.isfinite(res["eval_return"])
    if reached:  # Pendulum's first episodes end after 200 steps: the first log with returns is the crossing
        assert res["steps_to_threshold"] == res["curve"][0][0] and res["time_to_threshold_s"] <= res["train_s"]
    else:
        assert res["time_to_threshold_s"] is None


def test_refused_device_is_recorded(train_peers, tmp_path):
    from fastvec.trainer.run import cuda_trainer_available
    if cuda_trainer_available():
        pytest.skip("the CUDA trainer runs here: nothing is refused")
    res = train_peers.fastvec_run("acrobot", 1, "cuda", -100.0, 5.0, 8, 4096, tmp_path)
    assert "train.device=cuda" in res["refused"] and "eval_return" not in res
