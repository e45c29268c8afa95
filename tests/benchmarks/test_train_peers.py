"""benchmarks/train_peers.py on the CPU: a tiny fastvec run logs every update's episodes and is timed to its
threshold by the window rule, a seed that never crosses stays in the row as its whole training time (the ratio a
bound), and a device the trainer refuses is recorded with its message instead of stopping the benchmark."""

import json
import math

import pytest


@pytest.fixture(scope="module")
def train_peers(load_benchmark):
    return load_benchmark("train_peers")


@pytest.mark.parametrize("threshold, reached", [(-1e9, True), (1e9, False)])
def test_tiny_cpu_run_times_the_threshold_and_evaluates(train_peers, tmp_path, threshold, reached):
    res = train_peers.fastvec_run("pendulum", 1, "cpu", threshold, max_seconds=30.0, eval_episodes=8,
                                  total_timesteps=16_384, run_root=tmp_path, window=8)
    assert res["reached"] is reached and not res["capped"]
    assert res["steps"] == res["budget_steps"] >= 16_384  # the whole budget, reached or not
    assert res["eval_episodes"] == 8 and math.isfinite(res["eval_return"])
    # Pendulum's episodes are 200 steps, 32 envs: the first log with episodes holds 32, more than the window
    assert res["groups"][0][3] == 32
    assert sum(g[3] for g in res["groups"]) == 32 * (res["steps"] // 32 // 200)
    if reached:
        assert res["steps_to_threshold"] == res["groups"][0][0] and res["time_s"] == res["groups"][0][1]
    else:
        assert res["time_to_threshold_s"] is None and res["time_s"] == res["train_s"] and res["lower_bound"]


def test_a_run_is_timed_on_the_metric_its_threshold_names(train_peers, tmp_path):
    """SMAX's threshold is a win rate: the groups hold each update's mean of allies_won, a fraction, not the return."""
    res = train_peers.fastvec_run("smax:3m", 1, "cpu", 2.0, max_seconds=60.0, eval_episodes=4, total_timesteps=4096,
                                  run_root=tmp_path, window=8, metric="allies_won")
    assert res["groups"] and all(0.0 <= g[2] <= 1.0 for g in res["groups"])
    # a mean of wins over an update's episodes: a whole number of them (the logged means are rounded to 1e-3)
    assert all(abs(g[2] * g[3] - round(g[2] * g[3])) <= 1e-3 * g[3] for g in res["groups"])
    assert not res["reached"] and res["lower_bound"]  # a win rate never reaches 2
    assert 0.0 <= res["eval_metric"] <= 1.0 and res["eval_episodes"] == 4
    assert res["eval_metric"] != res["eval_return"]  # the evaluation's win rate, not its return


def test_refused_device_is_recorded(train_peers, tmp_path):
    from fastvec.trainer.run import cuda_trainer_available
    if cuda_trainer_available():
        pytest.skip("the CUDA trainer runs here: nothing is refused")
    res = train_peers.fastvec_run("acrobot", 1, "cuda", -100.0, 5.0, 8, 4096, tmp_path)
    assert "train.device=cuda" in res["refused"] and "eval_return" not in res


def run(seed, time_s, reached, groups=()):
    return {"seed": seed, "time_s": time_s, "reached": reached, "lower_bound": not reached, "train_s": time_s,
            "eval_return": -150.0, "groups": list(groups), "final_return": None}


def test_every_seed_counts_and_a_missed_one_makes_the_ratio_a_lower_bound(train_peers):
    fastvec = [run(1, 0.2, True), run(2, 0.3, True), run(3, 0.4, True)]
    peer = {"runs": [run(1, 2.0, True), run(2, 9.0, False), run(3, 9.5, False)], "compile_s": 10.0}
    row = train_peers.summarize("pendulum", "published", -200.0, fastvec, peer, 100, {})
    assert len(row["peer_seeds"]) == 3  # the seeds that never crossed are not dropped
    assert row["ratio"] == pytest.approx(9.0 / 0.3) and row["lower_bound"] and row["ratio_text"] == ">=30.00"
    peer["runs"][1] = run(2, 3.0, True)  # now the miss is above the median: an exact ratio
    row = train_peers.summarize("pendulum", "published", -200.0, fastvec, peer, 100, {})
    assert row["ratio_text"] == "10.00" and not row["lower_bound"]


def test_same_return_reads_both_sides_by_the_window(train_peers):
    # each group (steps, seconds, mean, episodes); window 2: fastvec ends at 5, the peer at 3, so the common return is
    # 3, which fastvec's window reaches at 0.2 s and the peer's at 1.5 s
    fastvec = [run(1, 0.3, False, [(1, 0.1, 1.0, 2), (2, 0.2, 3.0, 2), (3, 0.3, 5.0, 2)])]
    peer = [run(1, 2.0, False, [(1, 1.0, 1.0, 2), (2, 1.5, 3.0, 2), (3, 2.0, 3.0, 2)])]
    for r in (*fastvec, *peer):
        r["final_return"] = train_peers.final_window_mean(r["groups"], 2)
    same = train_peers.same_return(fastvec, peer, 2)
    assert (same["return"], same["fastvec_s"], same["peer_s"]) == (3.0, [0.2], [1.5])
    assert same["ratio"] == pytest.approx(7.5) and same["ratio_text"] == "7.50"
    assert same["fastvec_missed"] == [False] and same["peer_missed"] == [False]
    low = run(2, 0.4, False, [(1, 0.1, 1.0, 2), (2, 0.2, 1.0, 2), (3, 0.4, 1.0, 2)])  # ends at 1: never at 3
    low["final_return"] = train_peers.final_window_mean(low["groups"], 2)
    same = train_peers.same_return([*fastvec, low], peer, 2)  # fastvec's median final (5 + 1) / 2 is the peer's 3
    assert same["return"] == 3.0 and same["fastvec_s"] == [0.2, 0.4] and same["fastvec_missed"] == [False, True]


def test_merge_summarises_each_row_over_the_seeds_of_every_file(train_peers, tmp_path):
    """Seed 1 in one file, seeds 2 and 3 in another: the merged row is summarize's over all three (the ratio a
    bound once a missed peer seed is the median); a seed in both files, or rows of different settings, refused."""
    settings = {"train": {"learning_rate": 0.005}}

    def output(name, fastvec, peer):
        row = train_peers.summarize("pendulum", "published", -200.0, fastvec, {"runs": peer, "compile_s": 3.0}, 100,
                                    {"fastvec_settings": settings, "fastvec_command": "fastvec-train pendulum"})
        path = tmp_path / name
        path.write_text(json.dumps({"date": "2026-12-05", "gpu": "H", "window": 100, "fastvec_device": "cuda",
                                    "command": name, "commit": "abc", "seeds": [r["seed"] for r in fastvec],
                                    "rows": [row], "skipped": [], "wall_s": 10.0}))
        return str(path)

    one = output("one.json", [run(1, 0.2, True)], [run(1, 2.0, True)])
    two = output("two.json", [run(2, 0.3, True), run(3, 0.4, True)], [run(2, 9.0, False), run(3, 9.5, False)])
    merged = train_peers.merge([one, two], str(tmp_path / "all.json"))
    (row,) = merged["rows"]
    assert [s["seed"] for s in row["fastvec_seeds"]] == [1, 2, 3] and len(row["peer_seeds"]) == 3
    assert row["ratio"] == pytest.approx(9.0 / 0.3) and row["ratio_text"] == ">=30.00"
    assert row["fastvec_command"] == "fastvec-train pendulum" and merged["seeds"] == [1, 2, 3]
    assert [m["command"] for m in merged["merged_from"]] == ["one.json", "two.json"] and merged["wall_s"] == 20.0
    with pytest.raises(SystemExit, match=r"seed\(s\) \[1\] in more than one file"):
        train_peers.merge([one, one], str(tmp_path / "dup.json"))
    settings["train"]["learning_rate"] = 0.01
    other = output("other.json", [run(4, 0.2, True)], [run(4, 2.0, True)])
    with pytest.raises(SystemExit, match="different fastvec_settings"):
        train_peers.merge([one, other], str(tmp_path / "bad.json"))
