"""benchmarks/roofline.py: the bytes an env's GPU step moves, from its header's sizes, against slots_gpu.h's own
count by hand (CartPole: 108 bytes, 76 with float32=1), and the trainer's FLOPs (8 per parameter an agent step) and
fractions from a measurement written by hand."""

import json
import shutil

import pytest


@pytest.fixture(scope="module")
def roofline(load_benchmark):
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    return load_benchmark("roofline")


def test_cartpoles_step_moves_the_bytes_slots_gpu_h_counts(roofline):
    assert roofline.step_bytes(roofline.env_sizes("cartpole", {})) == 108
    assert roofline.step_bytes(roofline.env_sizes("cartpole", {"float32": 1})) == 76


def test_a_byte_observation_and_a_larger_state_count_at_their_sizes(roofline):
    sizes = roofline.env_sizes("breakout-minatar", {})
    assert sizes["obs_bytes"] == 10 * 10 * 4  # uint8 cells, four channels
    # the action, the State and the book read and written, the reward, the observation
    assert roofline.step_bytes(sizes) == 8 + 2 * sizes["state_bytes"] + 2 * 8 + 4 + 400


def test_the_trainers_flops_and_fractions(roofline, tmp_path):
    rows = [{"hidden": 128, "layers": 2, "params": 100_000, "optimizer": "muon", "is_async": False,
             "sps": 50e6, "rollout_sps": 100e6, "update_sps": 80e6},
            {"hidden": 128, "layers": 2, "params": 100_000, "optimizer": "muon", "is_async": True,
             "sps": 60e6, "rollout_sps": 1e9, "update_sps": 70e6}]
    (tmp_path / "train_speed_scaling.json").write_text(json.dumps({"rows": rows}))
    sync, overlapped = roofline.trainer_rows(tmp_path, bf16_flops=1e15)
    assert sync["flops_per_step"] == 800_000 and sync["tflops"] == pytest.approx(40.0)
    assert sync["fraction"] == pytest.approx(0.04)
    assert sync["rollout_fraction"] == pytest.approx(2e5 * 100e6 / 1e15)
    assert sync["update_fraction"] == pytest.approx(6e5 * 80e6 / 1e15)
    assert overlapped["rollout_fraction"] is None and overlapped["update_fraction"] is None  # async overlaps them
