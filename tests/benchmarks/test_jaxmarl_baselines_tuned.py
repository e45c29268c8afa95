"""The JaxMARL comparison's tuned kind: the shared space maps onto JaxMARL's keys and fastvec-train's alike, a sweep
stopped part way resumes as if never stopped, a JaxMARL trial is timed to the threshold by the window rule and
stopped from its callback (a stand-in script, no jaxmarl), and a tuned row end to end: both sides' sweeps with the
same budget and first points, each side's best trained on every fresh seed."""

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "benchmarks" / "peers"
sys.path.insert(0, str(PEERS))
import jaxmarl_baselines as jb  # noqa: E402
import jaxmarl_tuned as jt  # noqa: E402
from sweep_peer import _plan, _Quiet  # noqa: E402

AGENTS = {"smax:3s5z": 8, "smax:5m_vs_6m": 5, "mpe:simple_spread": 3}
# every entry but the learning rate fixed: a trial's outcome is then a function of its sampled learning rate
FIXED = {"num_envs": 16, "num_steps": 4, "minibatches": 1, "update_epochs": 1, "hidden": 8, "gamma": 0.99,
         "gae_lambda": 0.9, "anneal_lr": False, "ent_coef": 0.01, "clip_eps": 0.2, "total_timesteps": 3200}


def test_agents_are_the_teams_fastvec_trains():
    from fastvec.native.batches import team_source
    for scenario, agents in AGENTS.items():
        family, env, _, _ = jb.SCENARIOS[scenario]
        assert len(team_source(env, {"enemy": "heuristic"} if family == "smax" else {})[2]) == agents


def test_the_space_maps_onto_jaxmarls_keys_and_fastvecs_alike():
    from fastvec.trainer.config import load_config
    from fastvec.trainer.sweep import layer

    space = jt.team_space("smax:3s5z")
    assert {"clip_eps", "ent_coef", "hidden", "total_timesteps"} <= set(space)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    edge = {**study.ask(space).params, "num_envs": 16, "num_steps": 128, "minibatches": 32}  # 48 actors at most
    for params in [edge, *(study.ask(space).params for _ in range(40))]:
        peer = jt.peer_overrides(params)
        for scenario, agents in AGENTS.items():
            family, env, _, _ = jb.SCENARIOS[scenario]
            settings = jt.fastvec_settings(params, agents)
            config = load_config(env, layer(jb.FASTVEC_ALGO[family, "mappo"], settings))
            train = config["train"]
            actors = peer["NUM_ENVS"] * agents  # JaxMARL's recurrent scripts split their actors into minibatches
            assert actors % peer["NUM_MINIBATCHES"] == 0
            assert train["minibatch_size"] == actors * peer["NUM_STEPS"] // peer["NUM_MINIBATCHES"]
            assert (config["env"]["num_envs"], train["horizon"], train["update_epochs"]) == (
                peer["NUM_ENVS"], peer["NUM_STEPS"], peer["UPDATE_EPOCHS"])
            assert (train["learning_rate"], train["gamma"], train["gae_lambda"], train["ent_coef"],
                    train["clip_coef"], train["anneal_lr"], train["total_timesteps"]) == (
                peer["LR"], peer["GAMMA"], peer["GAE_LAMBDA"], peer["ENT_COEF"], peer["CLIP_EPS"],
                peer["ANNEAL_LR"], peer["TOTAL_TIMESTEPS"])
            assert config["policy"]["hidden"] == peer["GRU_HIDDEN_DIM"] == peer["FC_DIM_SIZE"]
            assert config["policy"]["critic_input"] == "world_state"


def test_a_width_jaxmarls_mappo_smax_cannot_vary_is_fixed_on_both_sides():
    row = {"scenario": "smax:3s5z", "algo": "mappo", "env": "smax:3s5z"}
    head = jt.header(row, "peer", 0.5, "allies_won", 100, 2, 1.0, 1, 0, 0, {"num_envs": 64})
    assert head["fixed"] == {"num_envs": 64, "hidden": 128} and "hidden" not in head["space"]
    ippo = jt.header({**row, "algo": "ippo"}, "peer", 0.5, "allies_won", 100, 2, 1.0, 1, 0, 0, {})
    assert ippo["fixed"] == {} and "hidden" in ippo["space"]
    with pytest.raises(SystemExit, match="hidden"):
        jt.header(row, "fastvec", 0.5, "allies_won", 100, 2, 1.0, 1, 0, 0, {"hidden": 64})


def synthetic_train(settings, window=8, updates=50, per_update=64):
    """A trial without a trainer: 16 episodes an update, each returning -30 + 1000 lr u at update u, fed to
    TrialWatch through WindowWatch as both sides' trials are."""
    from fastvec.trainer import sweep as fastvec_sweep

    def train(params, program, trial):
        assert program is None
        watch = fastvec_sweep.TrialWatch(_plan(settings), trial, 0, updates * per_update, _Quiet())
        smooth = jt.WindowWatch(watch, "episode_return", window)
        for u in range(1, updates + 1):
            value = -30.0 + 1000.0 * params["learning_rate"] * u
            if smooth({"episodes": 16, "episode_return": value}, 0.1 * u, u * per_update):
                break
        return watch.result({"startup": 0.0, "sps": 1.0, "seed": 0})
    return train


def test_a_sweep_stopped_part_way_resumes_as_if_never_stopped(tmp_path):
    """14 trials in batches of 4 (past the sampler's 10 random ones): killed after trial 6, mid-batch, and run
    again on its file, the sweep asks the same points, scores them alike and ends as the uninterrupted one."""
    row = {"scenario": "mpe:simple_spread", "algo": "ippo", "env": "simple_spread"}
    head = jt.header(row, "peer", -20.0, "episode_return", 8, 14, 2.0, 4, 0, 0, FIXED)
    train = synthetic_train(head["settings"])
    whole = jt.run_side(head, tmp_path / "whole.json", lambda points: [None] * len(points), train, log=lambda s: None)

    def killed(params, program, trial):
        if trial.number == 6:
            raise KeyboardInterrupt
        return train(params, program, trial)

    out = tmp_path / "resumed.json"
    with pytest.raises(KeyboardInterrupt):
        jt.run_side(head, out, lambda points: [None] * len(points), killed, log=lambda s: None)
    assert len(json.loads(out.read_text())["records"]) == 6  # every finished trial was written as it ended
    resumed = jt.run_side(head, out, lambda points: [None] * len(points), train, log=lambda s: None)
    assert resumed["finished"] and resumed["trials_done"] == 14
    assert [(r["params"], r["state"], r["value"]) for r in resumed["records"]] == [
        (r["params"], r["state"], r["value"]) for r in whole["records"]]
    assert resumed["best"] == whole["best"]
    assert len({r["params"]["learning_rate"] for r in whole["records"]}) == 14
    with pytest.raises(SystemExit, match="sampler_seed"):  # a file of another sweep is not resumed
        jt.run_side({**head, "sampler_seed": 1}, out, lambda points: [None] * len(points), train)


def test_two_sweeps_are_equal_budgets_only_with_one_header_and_as_many_trials_done():
    row = {"scenario": "mpe:simple_spread", "algo": "ippo", "env": "simple_spread"}
    heads = {side: jt.header(row, side, -20.0, "episode_return", 8, 4, 2.0, 2, 0, 0, FIXED)
             for side in ("peer", "fastvec")}
    records = [{"params": {"learning_rate": lr}} for lr in (0.1, 0.2, 0.3)]
    peer, fastvec = ({**heads[side], "trials_done": 3, "records": records} for side in ("peer", "fastvec"))
    both = jt.compare_sweeps(peer, fastvec)
    assert both["equal_budget"] and both["same_first_points"] and "differ" not in both
    assert not jt.compare_sweeps(peer, {**fastvec, "trials_done": 2})["equal_budget"]
    other = jt.compare_sweeps(peer, {**fastvec, "trial_seconds": 4.0, "records": records[::-1]})
    assert not other["equal_budget"] and other["differ"] == ["trial_seconds"] and not other["same_first_points"]


STAND_IN_SCRIPT = """
import jax
import jax.experimental
import jax.numpy as jnp


def make_train(config):
    config["NUM_UPDATES"] = int(config["TOTAL_TIMESTEPS"]) // config["NUM_STEPS"] // config["NUM_ENVS"]
    steps, envs = config["NUM_STEPS"], config["NUM_ENVS"]

    def train(rng):
        def update(u, _):
            done = jnp.zeros((steps, envs, 3), bool).at[-1].set(True)
            value = jnp.float32(-30.0) + jnp.float32(1000.0 * config["LR"]) * (u + 1).astype(jnp.float32)
            # MPE's log wrapper: each agent's reward times the 3 agents
            metric = {"returned_episode": done, "returned_episode_returns": jnp.full((steps, envs, 3), 3 * value),
                      "update_steps": u}
            jax.experimental.io_callback(lambda m: None, None, metric)
            return u + 1, None
        return jax.lax.scan(update, 0, None, config["NUM_UPDATES"])[0]
    return train
"""


def stand_in_checkout(tmp_path):
    for path in jb.SCRIPTS["mpe", "ippo"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(STAND_IN_SCRIPT if path.endswith(".py") else "")
    return tmp_path


def test_a_jaxmarl_trial_is_timed_by_the_window_rule_and_stopped_in_its_callback(tmp_path, monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setattr(jt, "peer_config", lambda path, keys, overrides: {**keys, **overrides})
    row = {"scenario": "mpe:simple_spread", "algo": "ippo", "env": "simple_spread"}
    window = 24  # 16 episodes an update: the window holds the last update's and half the one before
    head = jt.header(row, "peer", -20.0, "episode_return", window, 2, 30.0, 2, 0, 0, FIXED)
    result = jt.peer_sweep(stand_in_checkout(tmp_path), jb.SCENARIOS["mpe:simple_spread"], head, {},
                           tmp_path / "peer.json", 0.0, lambda line: None)
    assert result["trials_done"] == 2 and json.loads((tmp_path / "peer.json").read_text())["finished"]
    for record in result["records"]:
        increment = np.float32(1000.0 * record["params"]["learning_rate"])
        values = [np.float32(-30.0) + increment * np.float32(u) for u in range(1, 51)]
        means = [None] + [(16 * float(b) + 8 * float(a)) / window for a, b in zip(values, values[1:])]
        hit = next((u for u, m in enumerate(means, 1) if m is not None and m >= -20.0), None)
        assert record["state"] == "COMPLETE" and record["compile_s"] > 0
        if hit is None:  # a miss: the whole budget trained, scored as fastvec-sweep scores one
            assert record["hit_seconds"] is None and record["steps"] == 3200 and record["updates_after_stop"] is None
            assert record["value"] == pytest.approx(30.0 * (1 + (-20.0 - means[-1]) / 20.0), rel=1e-5)
        else:  # stopped at the update that crossed: no update ran after it
            assert record["hit_steps"] == record["steps"] == hit * 64 and record["updates_after_stop"] == 0
            assert record["value"] == record["hit_seconds"] > 0


WRAPPER = """#!{python}
import json, sys
sys.path.insert(0, {peers!r})
import jaxmarl_baselines, jaxmarl_tuned
sys.path.insert(0, {tests!r})
from test_jaxmarl_baselines_tuned import synthetic_train


def peer_sweep(repo, scenario, head, overrides, out, timeout, log):
    # JaxMARL's trials stood in for; the procedure, budget and file are the real ones
    return jaxmarl_tuned.run_side(head, out, lambda points: [None] * len(points),
                                  synthetic_train(head["settings"]), timeout, log)


def peer_worker(repo, scenario, algo, seeds, overrides, warmup):
    # seed s ends at a return of -(19 + s) (seed 3 misses -21), 16 episodes an update
    runs = [{{"seed": s, "train_s": 2.0, "updates": 2, "steps": 128, "sps": 64, "first_update_s": 1.0,
             "log": [[64, 1.0, 16, -16 * 25.0, None], [128, 2.0, 16, -16 * (19.0 + s), None]]}} for s in seeds]
    return {{"scenario": scenario, "algo": algo, "script": "baselines/IPPO/ippo_rnn_mpe.py", "config": overrides,
            "compile_s": 1.0, "warmup": warmup, "warmup_s": 0.5, "runs": runs, "device": "stand-in"}}


jaxmarl_tuned.peer_sweep = peer_sweep if {sweeps} else None
jaxmarl_baselines.peer_worker = peer_worker
jaxmarl_baselines.main(sys.argv[2:])
"""


def test_a_tuned_row_end_to_end_with_a_stand_in_for_jaxmarl(tmp_path):
    """Both sweeps through the script (JaxMARL's trials stood in for, fastvec-train's simple_spread on the CPU), then
    each side's best on three fresh seeds against the given threshold."""
    repo = stand_in_checkout(tmp_path / "jaxmarl")
    python = tmp_path / "peer-python"
    stand_in = dict(python=sys.executable, peers=str(PEERS), tests=str(Path(__file__).parent))
    python.write_text(WRAPPER.format(sweeps=True, **stand_in))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    out, sweeps = tmp_path / "out.json", tmp_path / "sweeps"
    fix = [f"{k}={json.dumps(v)}" for k, v in {**FIXED, "total_timesteps": 2048}.items()]
    argv = ["--jaxmarl-repo", str(repo), "--peer-python", str(python), "--scenarios", "mpe:simple_spread",
            "--algos", "ippo", "--kinds", "tuned", "--threshold", "-21", "--window", "8", "--trials", "2",
            "--batch", "2", "--trial-seconds", "0.5", "--fix", *fix, "--sweep-dir", str(sweeps),
            "--fastvec-device", "cpu", "--eval-episodes", "2", "--out", str(out)]
    jb.main([*argv, "--seeds", "1", "2", "3"])
    row = json.loads(out.read_text())["rows"][0]
    assert row["kind"] == "tuned" and row["threshold"] == -21.0 and not row.get("sweep_error")
    sw = row["sweeps"]
    assert sw["equal_budget"] and sw["same_first_points"]
    for side in ("peer", "fastvec"):
        assert (sw[side]["trials_done"], sw[side]["trial_seconds"], sw[side]["sampler_seed"]) == (2, 0.5, 0)
        saved = json.loads((sweeps / f"mpe_simple_spread_ippo_{side}.json").read_text())
        assert sw[side]["best"]["params"] == min(saved["records"], key=lambda r: r["value"])["params"]
    # each side's best is what its fresh seeds trained
    assert row["peer_config"] == jt.peer_overrides(sw["peer"]["best"]["params"])
    fastvec_best = jt.fastvec_settings(sw["fastvec"]["best"]["params"], 3)
    assert row["fastvec_settings"]["train"] == {**row["fastvec_settings"]["train"], **fastvec_best["train"]}
    # every fresh seed counted: the peer's third missed (its whole training time, a bound), the median is seed 2's
    assert [(s["seed"], s["reached"], s["time_s"]) for s in row["peer_seeds"]] == [
        (1, True, 2.0), (2, True, 2.0), (3, False, 2.0)]
    assert [s["seed"] for s in row["fastvec_seeds"]] == [1, 2, 3]
    assert all(s["steps"] >= 2048 for s in row["fastvec_seeds"])
    assert row["peer_median_s"] == 2.0 and not row["peer_median_is_bound"]
    for seed in row["fastvec_seeds"]:  # a fastvec seed that missed counts its whole training time, as a bound
        assert seed["lower_bound"] == (not seed["reached"])
        assert seed["reached"] or seed["time_s"] == pytest.approx(seed["train_s"], abs=1e-3)
    # run again: the finished sweeps of this budget are read, not run (a peer Python that cannot sweep)
    python.write_text(WRAPPER.format(sweeps=False, **stand_in))
    jb.main([*argv, "--seeds", "1"])
    again = json.loads(out.read_text())["rows"][0]
    assert not again.get("sweep_error") and again["peer_config"] == row["peer_config"]
    assert all(again["sweeps"][side]["command"].endswith("(finished)") for side in ("peer", "fastvec"))


def test_a_tuned_row_without_a_threshold_says_how_to_get_one(tmp_path):
    repo = stand_in_checkout(tmp_path)
    out = tmp_path / "out.json"
    jb.main(["--jaxmarl-repo", str(repo), "--scenarios", "mpe:simple_spread", "--algos", "ippo", "--kinds", "tuned",
             "--out", str(out)])
    row = json.loads(out.read_text())["rows"][0]
    assert "--kinds published first" in row["sweep_error"] and row["ratio"] is None
    with pytest.raises(SystemExit):  # the sweep's seed trains no fresh seed
        jb.main(["--jaxmarl-repo", str(repo), "--scenarios", "mpe:simple_spread", "--kinds", "tuned",
                 "--seeds", "0", "1", "--out", str(out)])
