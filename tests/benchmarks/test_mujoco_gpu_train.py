"""benchmarks/mujoco_gpu_train.py run on the NumPy trainer (--device cpu) with tiny budgets: the target is the
median of the host side's final window means, each side's time to it is read by the fairness rule (never past its
training time), the ratio is the host's median over the other's, and a refusal is recorded, not raised."""

import json
import statistics
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import mujoco_gpu_train  # noqa: E402


def test_the_target_is_the_host_sides_median_and_each_time_is_read_by_the_window_rule(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert mujoco_gpu_train.main(["--device", "cpu", "--tasks", "InvertedPendulum", "--seeds", "1", "2",
                                  "--cpu-set", "train.total_timesteps=4096", "--gpu-set", "train.total_timesteps=4096",
                                  "env.num_envs=16", "train.minibatch_size=64", "--eval-episodes", "2", "--window", "5",
                                  "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["gpu_shape"]["env.num_envs"] == 16 and data["gpu_shape"]["train.horizon"] == 16  # over GPU_SHAPE
    row = data["rows"][0]
    host, gpu = row["host"], row["gpu"]
    assert row["target"] == pytest.approx(statistics.median(host["final_return"]))
    for s in (host, gpu):
        assert not s["errors"] and len(s["seconds_to_target"]) == 2
        assert all(t <= total + 1e-9 for t, total in zip(s["seconds_to_target"], s["train_s"]))
        assert all(t == total for t, total, hit in zip(s["seconds_to_target"], s["train_s"], s["reached"]) if not hit)
        assert s["bound"] == (not all(s["reached"]))
    assert row["faster"] == pytest.approx(host["median_s"] / gpu["median_s"], rel=1e-2)
    assert "InvertedPendulum: target" in capsys.readouterr().out


def test_a_side_the_trainer_refuses_is_recorded_with_its_reason(tmp_path):
    out = tmp_path / "m.json"
    assert mujoco_gpu_train.main(["--device", "cpu", "--tasks", "InvertedPendulum", "--seeds", "1",
                                  "--cpu-set", "train.total_timesteps=2048", "--gpu-set", "env.num_envs=0",
                                  "--eval-episodes", "1", "--out", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["gpu"]["errors"] and "num_envs" in row["gpu"]["errors"][0] and row["faster"] is None
