"""The JaxMARL baselines comparison's reading of JaxMARL's per-update metrics (episodes counted from its info arrays,
MPE's logged returns brought back to the env's scale), its threshold (JaxMARL's median final window), the ratio with
its bounds, and one run end to end with a stand-in for JaxMARL's worker; no jaxmarl needed."""

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
import jaxmarl_baselines as jb  # noqa: E402
import jaxmarl_scripts as js  # noqa: E402


def info(done, returns, won=None, flat=False):
    """A script's callback metric: (T, E, A) arrays, or (T, E * A) as mappo_rnn_mpe.py hands them."""
    shape = (lambda x: x.reshape(x.shape[0], -1)) if flat else (lambda x: x)
    metric = {"returned_episode": shape(np.asarray(done)), "returned_episode_returns": shape(np.asarray(returns)),
              "update_steps": np.asarray(3)}
    if won is not None:
        metric["returned_won_episode"] = shape(np.asarray(won, np.float32))
    return metric


def test_an_update_counts_the_episodes_that_ended_and_their_mean_over_the_agents():
    # T=2 steps, E=2 envs, A=2 agents: env 0 ends at step 0 (agent returns 1 and 3), env 1 at step 1 (5 and 7)
    done = np.zeros((2, 2, 2), bool)
    done[0, 0], done[1, 1] = True, True
    returns = np.zeros((2, 2, 2))
    returns[0, 0], returns[1, 1] = [1.0, 3.0], [5.0, 7.0]
    returns[0, 1] = [100.0, 100.0]  # a held return of an episode that did not end at this step: not counted
    won = np.zeros((2, 2, 2))
    won[1, 1] = 1.0
    for flat in (False, True):
        rec = js.update_record(info(done, returns, won, flat), 2, 2, 1.5, "none")
        assert rec == {"update": 3, "t": 1.5, "episodes": 2, "return_sum": 2.0 + 6.0, "win_sum": 1.0}
    # MPE's wrapper logs each reward times the agents: its return divided back, no wins
    rec = js.update_record(info(done, returns), 2, 2, 0.0, "agents")
    assert rec["return_sum"] == 4.0 and "win_sum" not in rec


def test_a_script_that_averages_its_metrics_first_is_refused():
    metric = {"returned_episode": np.float32(0.1), "returned_episode_returns": np.float32(-3.0)}
    with pytest.raises(RuntimeError, match="cannot be counted"):
        js.update_record(metric, 128, 16, 0.0, "agents")


def peer_run(seed, rows, train_s):
    """A worker's run: log rows (steps, seconds, episodes, return sum, win sum)."""
    return {"seed": seed, "train_s": train_s, "steps": rows[-1][0], "log": rows}


def test_threshold_is_jaxmarls_median_final_window_and_each_side_is_timed_to_it():
    # three seeds, 10 episodes an update; window 10: the final window is the last update's win rate
    peer = {"runs": [peer_run(1, [[100, 1.0, 10, -1.0, 2.0], [200, 2.0, 10, -1.0, 4.0]], 2.0),
                     peer_run(2, [[100, 1.0, 10, -1.0, 6.0], [200, 2.0, 10, -1.0, 6.0]], 2.5),
                     peer_run(3, [[100, 1.0, 0, 0.0, 0.0], [200, 2.0, 10, -1.0, 8.0]], 3.0)]}
    runs, threshold = jb.peer_side(peer, "win_rate", 10)
    assert threshold == 0.6
    assert [r["final"] for r in runs] == [0.4, 0.6, 0.8]
    assert [(r["reached"], r["time_s"]) for r in runs] == [(False, 2.0), (True, 1.0), (True, 2.0)]
    assert runs[0]["lower_bound"] and len(runs[2]["groups"]) == 1  # an update without episodes adds no group
    fastvec = [{"seed": s, "time_s": t, "lower_bound": b} for s, t, b in [(1, 0.1, False), (2, 0.2, False),
                                                                          (3, 0.9, True)]]
    row = jb.summarize("smax:3s5z", "ippo", {"script": js.SCRIPTS["smax", "ippo"][0]}, runs, threshold, fastvec,
                       10, {})
    assert row["ratio"] == pytest.approx(2.0 / 0.2) and not row["lower_bound"] and not row["upper_bound"]
    assert row["metric"] == "win_rate" and row["fastvec_env"] == "smax:3s5z"
    fastvec[1]["lower_bound"] = True  # fastvec's median seed missed: its time is only a bound
    row = jb.summarize("smax:3s5z", "ippo", {}, runs, threshold, fastvec, 10, {})
    assert row["ratio_text"].startswith("<=")


def test_the_peers_set_up_is_what_its_first_update_took_beyond_its_median_update():
    log = [[128 * (i + 1), t, 4, -80.0, None] for i, t in enumerate([3.0, 3.5, 4.1, 4.5])]
    assert jb.init_seconds(log) == pytest.approx(2.5)
    assert jb.init_seconds(log[:1]) == 0.0  # one update: nothing to tell its set-up from
    runs, threshold = jb.peer_side({"runs": [peer_run(1, log, 4.6)]}, "return", 4)
    assert threshold == -20.0 and runs[0]["time_s"] == 3.0 and runs[0]["time_after_init_s"] == pytest.approx(0.5)
    row = jb.summarize("mpe:simple_spread", "ippo", {}, runs, threshold,
                       [{"seed": 1, "time_s": 0.25, "lower_bound": False}], 4, {})
    assert row["ratio"] == 12.0 and row["after_peer_init"]["ratio"] == 2.0


def test_mpe_rows_read_the_return_and_a_row_with_no_finished_episode_has_no_threshold():
    peer = {"runs": [peer_run(1, [[2048, 1.0, 16, -320.0, None]], 1.0)]}
    runs, threshold = jb.peer_side(peer, "return", 16)
    assert threshold == -20.0 and runs[0]["reached"]
    runs, threshold = jb.peer_side({"runs": [peer_run(1, [[2048, 1.0, 0, 0.0, None]], 1.0)]}, "return", 16)
    assert threshold is None and "reached" not in runs[0]
    assert jb.peer_side({"error": "timed out"}, "return", 16) == ([], None)


def test_each_row_names_a_script_of_the_checkout_and_fastvecs_published_settings(tmp_path):
    for (family, algo), (script, config) in js.SCRIPTS.items():
        assert script.startswith(f"baselines/{algo.upper()}/") and config.endswith(".yaml")
        assert (family, algo) in jb.FASTVEC_ALGO
    assert jb.FASTVEC_ALGO["smax", "mappo"]["policy"]["critic_input"] == "world_state"
    assert not jb.FASTVEC_ALGO["smax", "ippo"]
    with pytest.raises(SystemExit, match="baselines/IPPO/ippo_rnn_smax.py"):
        js.script_paths(tmp_path, "smax", "ippo")
    for path in js.SCRIPTS["mpe", "mappo"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert js.script_paths(tmp_path, "mpe", "mappo") == tuple(tmp_path / p for p in js.SCRIPTS["mpe", "mappo"])


def test_the_scripts_callback_is_stamped_and_still_called():
    """recorded_callbacks with JAX: a scan of three updates whose io_callback hands a (T, E, A) metric, as
    JaxMARL's scripts do; each update is recorded in order and the script's own callback still runs."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    seen, records = [], []

    def step(carry, _):
        metric = {"returned_episode": jnp.ones((2, 1, 1), bool), "returned_episode_returns": jnp.full((2, 1, 1), carry),
                  "update_steps": carry}
        jax.experimental.io_callback(lambda m: seen.append(int(m["update_steps"])), None, metric)
        return carry + 1, None

    with js.recorded_callbacks(records, lambda: 7.0, 2, 1, "none"):
        program = jax.jit(lambda: jax.lax.scan(step, 0, None, 3)[0])
        jax.block_until_ready(program())
    assert seen == [0, 1, 2]
    assert [(r["update"], r["episodes"], r["return_sum"], r["t"]) for r in records] == [
        (0, 2, 0.0, 7.0), (1, 2, 2.0, 7.0), (2, 2, 4.0, 7.0)]


STAND_IN = """#!{python}
import json, sys
args = sys.argv[2:]
seeds = [int(s) for s in args[args.index("--seeds") + 1:args.index("--peer-warmup")]]
out = args[args.index("--out") + 1]
runs = [{{"seed": s, "train_s": 2.0, "updates": 2, "steps": 256, "sps": 128, "first_update_s": 1.0,
          "log": [[128, 1.0, 8, -8.0 * 25, None], [256, 2.0, 8, -8.0 * (20 + s), None]]}} for s in seeds]
json.dump({{"script": "baselines/IPPO/ippo_rnn_mpe.py", "config": {{"NUM_ENVS": 4}}, "compile_s": 1.0,
           "warmup": "short", "warmup_s": 0.5, "runs": runs, "device": "stand-in"}}, open(out, "w"))
"""


def test_one_run_end_to_end_with_a_stand_in_for_jaxmarls_worker(tmp_path, monkeypatch):
    """Both sides through the script: a stand-in worker (seed s ends at a return of -(20 + s)) and fastvec-train's
    simple_spread on the CPU for a few thousand steps against the median, -21.5; a published row needs no optuna
    (the sweep's extra), so it runs where optuna cannot be imported."""
    monkeypatch.setitem(sys.modules, "optuna", None)
    for path in js.SCRIPTS["mpe", "ippo"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    python = tmp_path / "peer-python"
    python.write_text(STAND_IN.format(python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out.json"
    jb.main(["--jaxmarl-repo", str(tmp_path), "--peer-python", str(python), "--scenarios", "mpe:simple_spread",
             "--algos", "ippo", "--seeds", "1", "2", "--window", "8", "--fastvec-device", "cpu", "--fastvec-set",
             "train.total_timesteps=2048", "--eval-episodes", "2", "--out", str(out)])
    row = json.loads(out.read_text())["rows"][0]
    assert row["threshold"] == -21.5 and row["metric"] == "return" and row["peer_device"] == "stand-in"
    assert [(s["seed"], s["final"], s["reached"], s["time_s"]) for s in row["peer_seeds"]] == [
        (1, -21.0, True, 2.0), (2, -22.0, False, 2.0)]
    assert [s["seed"] for s in row["fastvec_seeds"]] == [1, 2]
    assert all(s["steps"] >= 2048 and s["time_s"] is not None for s in row["fastvec_seeds"])
    assert row["fastvec_command"].startswith("fastvec-train simple_spread --train.device=cpu")
    assert row["peer_median_s"] == 2.0 and row["ratio"] == pytest.approx(2.0 / row["fastvec_median_s"], rel=1e-2)
    assert os.path.basename(row["peer_script"]) == "ippo_rnn_mpe.py"


def test_saved_peer_runs_are_merged_by_seed_and_a_seed_twice_is_refused(tmp_path):
    def saved(name, seeds, config=None, scenario="smax:3s5z"):
        path = tmp_path / name
        path.write_text(json.dumps({"scenario": scenario, "algo": "ippo", "config": config or {"NUM_ENVS": 128},
                                    "compile_s": 1.0, "runs": [{"seed": s, "train_s": 1.0, "log": []} for s in seeds]}))
        return path

    files = [saved("b.json", [3]), saved("a.json", [2, 1]), saved("mpe.json", [1], scenario="mpe:simple_spread")]
    merged = jb.saved_peer(files, "smax:3s5z", "ippo")
    assert [r["seed"] for r in merged["runs"]] == [1, 2, 3] and merged["compile_s"] == [1.0, 1.0]
    assert jb.saved_peer(files, "smax:3s5z", "mappo") is None
    with pytest.raises(SystemExit, match=r"seed\(s\) \[2\]"):
        jb.saved_peer([*files, saved("c.json", [2])], "smax:3s5z", "ippo")
    with pytest.raises(SystemExit, match="different configs"):
        jb.saved_peer([*files, saved("d.json", [4], {"NUM_ENVS": 4})], "smax:3s5z", "ippo")
