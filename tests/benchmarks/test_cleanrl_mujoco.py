"""The CleanRL MuJoCo comparison's reading of CleanRL's output and its rule: CleanRL's return is fastvec's target,
every seed counted, a fastvec seed that misses it making the ratio a bound."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
import cleanrl_mujoco  # noqa: E402

# As CleanRL's ppo_continuous_action.py prints (numpy arrays of one episode's return, then SPS per iteration).
CLEANRL_OUTPUT = """global_step=1000, episodic_return=[-41.25]
global_step=1050, episodic_return=[-38.5]
SPS: 700
global_step=2000, episodic_return=[-12.]
global_step=2050, episodic_return=[3.5e+01]
SPS: 800
"""


def test_parse_reads_each_episode_and_the_clock_of_the_last_sps():
    parsed = cleanrl_mujoco.parse_cleanrl(CLEANRL_OUTPUT)
    assert [g[0] for g in parsed["groups"]] == [1000, 1050, 2000, 2050]
    assert [g[2] for g in parsed["groups"]] == [-41.25, -38.5, -12.0, 35.0]
    assert parsed["last_sps"] == 800 and parsed["train_s"] == pytest.approx(2050 / 800, abs=1e-3)


def test_summary_targets_cleanrls_median_return_and_bounds_a_missed_seed():
    cleanrl = [{"final_return": r, "train_s": t} for r, t in [(1000.0, 600.0), (1500.0, 620.0), (2000.0, 640.0)]]
    fastvec = [{"time_s": 30.0, "lower_bound": False, "eval_return": 1600.0},
               {"time_s": 50.0, "lower_bound": False, "eval_return": 1550.0},
               {"time_s": 90.0, "lower_bound": True, "eval_return": 900.0}]  # never reached 1500 in its 90 s
    row = cleanrl_mujoco.task_summary("hopper", cleanrl, fastvec, 100)
    assert row["target_return"] == 1500.0 and row["cleanrl_env"] == "Hopper-v4"
    assert row["ratio"] == pytest.approx(620.0 / 50.0, abs=1e-3)
    assert not row["upper_bound"]  # the median seed reached it: the median stays 50 s whatever the missed one needs
    fastvec[1]["lower_bound"] = True
    row = cleanrl_mujoco.task_summary("hopper", cleanrl, fastvec, 100)
    assert row["upper_bound"] and row["ratio_text"].startswith("<=")


def test_command_runs_the_v4_task_with_cleanrls_defaults_otherwise(tmp_path):
    script = tmp_path / "cleanrl" / "ppo_continuous_action.py"
    script.parent.mkdir()
    script.write_text("")
    assert cleanrl_mujoco.script_path(tmp_path) == script
    cmd = cleanrl_mujoco.cleanrl_command("py", script, "Ant-v4", 3, 1_000_000, [])
    assert cmd == ["py", str(script), "--env-id", "Ant-v4", "--seed", "3", "--total-timesteps", "1000000"]
    with pytest.raises(SystemExit, match="ppo_continuous_action.py"):
        cleanrl_mujoco.script_path(tmp_path / "elsewhere")


def test_relative_paths_are_made_absolute_for_cleanrls_own_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "checkout" / "cleanrl").mkdir(parents=True)
    (tmp_path / "checkout" / "cleanrl" / "ppo_continuous_action.py").write_text("")
    script = cleanrl_mujoco.script_path(Path("checkout"))
    assert script == tmp_path / "checkout" / "cleanrl" / "ppo_continuous_action.py"
    assert cleanrl_mujoco.cleanrl_command("venv/bin/python", script, "Ant-v4", 1, 8, [])[0] == \
        str(tmp_path / "venv" / "bin" / "python")
    assert cleanrl_mujoco.cleanrl_command("python3", script, "Ant-v4", 1, 8, [])[0] == "python3"  # found on PATH


def test_one_run_end_to_end_with_a_stand_in_for_cleanrl(tmp_path):
    """Both sides through the script: a stand-in prints CleanRL's lines (seed s returns 4 + s), fastvec trains
    InvertedPendulum on the CPU for 4,096 steps against the median, 5.5."""
    pytest.importorskip("mujoco", reason="fastvec's side trains a MuJoCo task: pip install 'fastvec[mujoco]'")
    fake = tmp_path / "ppo_continuous_action.py"
    fake.write_text("import sys\nargs = dict(zip(sys.argv[1::2], sys.argv[2::2]))\n"
                    "for k in range(1, 121):\n    print(f'global_step={k * 10}, episodic_return=[{4.0 + int(args[\"--seed\"])}]')\n"
                    "print('SPS: 600')\n")
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "peers" / "cleanrl_mujoco.py"), "--cleanrl", str(fake),
                    "--tasks", "invertedpendulum", "--seeds", "1", "2", "--fastvec-device", "cpu",
                    "--fastvec-timesteps", "4096", "--eval-episodes", "2", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=300)
    row = json.loads(out.read_text())["rows"][0]
    assert row["cleanrl_returns"] == [5.0, 6.0] and row["target_return"] == 5.5
    assert row["cleanrl_train_s"] == [2.0, 2.0]
    assert len(row["fastvec"]) == 2 and all(r["seed"] in (1, 2) for r in row["fastvec"])
    assert row["peer_median_s"] == 2.0 and row["ratio"] == pytest.approx(2.0 / row["fastvec_median_s"], rel=1e-2)


def test_cleanrl_only_runs_every_task_and_seed_and_its_file_feeds_fastvecs_side(tmp_path):
    """--cleanrl-only writes CleanRL's runs of every (task, seed) and nothing of fastvec's; --cleanrl-results reads
    them back for the seeds asked, and names a seed the file lacks."""
    fake = tmp_path / "ppo_continuous_action.py"
    fake.write_text("import sys\nargs = dict(zip(sys.argv[1::2], sys.argv[2::2]))\n"
                    "bonus = 100.0 if args['--env-id'] == 'Hopper-v4' else 0.0\n"
                    "for k in range(1, 11):\n"
                    "    print(f'global_step={k * 10}, episodic_return=[{bonus + int(args[\"--seed\"])}]')\n"
                    "print('SPS: 50')\n")
    peer = tmp_path / "peer.json"
    script = str(ROOT / "benchmarks" / "peers" / "cleanrl_mujoco.py")
    subprocess.run([sys.executable, script, "--cleanrl", str(fake), "--cleanrl-only", "--tasks", "hopper", "ant",
                    "--seeds", "1", "2", "--parallel", "4", "--out", str(peer)],
                   check=True, capture_output=True, text=True, timeout=120)
    stored = json.loads(peer.read_text())
    assert "rows" not in stored and "fastvec_settings" not in stored and stored["parallel"] == 4
    assert {t: [(r["seed"], r["final_return"]) for r in runs] for t, runs in stored["cleanrl"].items()} == \
        {"hopper": [(1, 101.0), (2, 102.0)], "ant": [(1, 1.0), (2, 2.0)]}
    runs, how = cleanrl_mujoco.stored_side(peer, "cleanrl", ["ant"], [2])
    assert [r["final_return"] for r in runs["ant"]] == [2.0] and how["parallel"] == 4
    with pytest.raises(SystemExit, match=r"no CleanRL run of hopper on seeds \[3\]"):
        cleanrl_mujoco.stored_side(peer, "cleanrl", ["hopper"], [1, 3])


def test_fastvec_only_runs_feed_the_table_once_cleanrls_target_is_known(tmp_path):
    """--fastvec-only trains with no target and keeps each run's curve; --fastvec-results with --cleanrl-results
    then times those curves to CleanRL's median return, as a run handed the target would have been timed."""
    pytest.importorskip("mujoco", reason="fastvec's side trains a MuJoCo task: pip install 'fastvec[mujoco]'")
    from fairness import seed_time

    script = str(ROOT / "benchmarks" / "peers" / "cleanrl_mujoco.py")
    fv = tmp_path / "fv.json"
    subprocess.run([sys.executable, script, "--fastvec-only", "--tasks", "invertedpendulum", "--seeds", "1", "2",
                    "--fastvec-device", "cpu", "--fastvec-timesteps", "4096", "--eval-episodes", "2",
                    "--out", str(fv)], check=True, capture_output=True, text=True, timeout=300)
    stored = json.loads(fv.read_text())
    runs = stored["fastvec"]["invertedpendulum"]
    assert [r["seed"] for r in runs] == [1, 2] and all(r["groups"] and r["time_s"] is None for r in runs)
    # CleanRL's side: returns between the two seeds' best logged means, so that one crosses sooner than the other
    best = sorted(max(g[2] for g in r["groups"]) for r in runs)
    peer = tmp_path / "peer.json"
    peer.write_text(json.dumps({"cleanrl": {"invertedpendulum": [
        {"seed": s, "final_return": best[0] - 1.0 + k, "train_s": 100.0} for k, s in enumerate([1, 2])]}}))
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, script, "--cleanrl-results", str(peer), "--fastvec-results", str(fv),
                    "--tasks", "invertedpendulum", "--seeds", "1", "2", "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=120)
    row = json.loads(out.read_text())["rows"][0]
    target = row["target_return"]
    assert target == pytest.approx(best[0] - 0.5)
    expected = [seed_time(r["groups"], target, r["train_s"], 100)["time_s"] for r in runs]
    assert row["fastvec_time_to_target_s"] == expected and row["peer_median_s"] == 100.0
    with pytest.raises(SystemExit, match=r"no fastvec run of invertedpendulum on seeds \[3\]"):
        cleanrl_mujoco.stored_side(fv, "fastvec", ["invertedpendulum"], [1, 3])


def test_kept_rows_are_the_other_tasks_each_naming_its_own_sitting(tmp_path):
    older = {"date": "2026-01-02", "machine": "host-a", "note": "first", "rows": [
        {"task": "hopper", "ratio": 100.0}, {"task": "ant", "ratio": 20.0},
        {"task": "halfcheetah", "ratio": 60.0, "sitting": {"date": "2025-12-31", "note": "earlier still"}}]}
    path = tmp_path / "cleanrl_mujoco.json"
    path.write_text(json.dumps(older))
    kept = cleanrl_mujoco.kept_rows(path, ["ant", "walker2d"])
    assert [r["task"] for r in kept] == ["hopper", "halfcheetah"]  # ant is this run's: its old row goes
    assert kept[0]["sitting"] == {"date": "2026-01-02", "machine": "host-a", "note": "first"}
    assert kept[1]["sitting"] == {"date": "2025-12-31", "note": "earlier still"}
