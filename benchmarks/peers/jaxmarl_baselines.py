"""JaxMARL's own IPPO and MAPPO baselines beside fastvec-train on SMAX 3s5z, 5m_vs_6m and MPE simple_spread, in one
run on one machine: each jaxmarl script (baselines/IPPO, baselines/MAPPO of a user's JaxMARL checkout) trains with
its published yaml config on every seed; the median over its seeds of its last K episodes' win rate (SMAX) or mean
return (MPE) is the row's threshold, and each side's time to it by the same rule is compared. Writes
benchmarks/results/jaxmarl_train.json after every row.

    python benchmarks/peers/jaxmarl_baselines.py --jaxmarl-repo ~/JaxMARL --peer-python ~/venv-jax/bin/python
    python benchmarks/peers/jaxmarl_baselines.py --jaxmarl-repo ~/JaxMARL --scenarios mpe:simple_spread \\
        --algos ippo --seeds 1 --peer-set TOTAL_TIMESTEPS=4096 NUM_ENVS=4 --fastvec-device cpu \\
        --fastvec-set train.total_timesteps=4096

--peer-python: a Python with jaxmarl and what the scripts import (JAX, flax, optax, distrax, hydra-core, omegaconf;
wandb is replaced by a stand-in where it is not installed: the configs log nothing, WANDB_MODE disabled). The
scripts run unchanged, in a process of their own: their `make_train(config)` with the yaml config (the map or env
set per scenario, KEY=VALUE overrides from --peer-set), jitted and compiled ahead of time (compile seconds
reported apart: nothing compiles while a seed trains), then called once per seed. Their per-update metrics reach
the host only through the `jax.experimental.io_callback` each script makes for wandb: the worker wraps that
callback to stamp the host clock and count the update's finished episodes (their episode flags, returns and wins)
before calling the script's own, so every update's time is measured, not interpolated.

The rules both sides are read by are benchmarks/peers/fairness.py's: the mean of the last K (--window) finished
episodes by count, every seed counted (a seed that never reaches the threshold counts as its whole training time,
the ratio then a bound), both sides run to their whole budget. fastvec runs its own published settings
(fastvec/configs/smax.toml, mpe.toml; MAPPO: a critic of the world state) through train_peers.fastvec_run.

Where one process cannot hold a row's seeds (a machine lent for minutes at a time), run the peer alone, a seed at a
time, in the peer's Python, then the comparison on the saved runs:

    PYTHON benchmarks/peers/jaxmarl_baselines.py --peer-worker --jaxmarl-repo R --scenarios smax:3s5z --algos ippo \
        --seeds 1 --out peer_3s5z_ippo_1.json
    python benchmarks/peers/jaxmarl_baselines.py --jaxmarl-repo R --scenarios smax:3s5z --algos ippo --seeds 1 2 3 \
        --peer-results peer_3s5z_ippo_*.json

Kinds (--kinds): `published` as above; `tuned`: each side's best of a sweep with the same budget, at the published
row's threshold (this run's published row, --thresholds-from an earlier output, or --threshold). One sweep per side
(benchmarks/peers/sweep_peer.py's procedure: Optuna's multivariate TPE from the same --sampler-seed, fastvec-sweep's
median pruner and objective time_to_target with a miss scored trial_seconds x (1 + shortfall), --trials trials of
--trial-seconds each in batches of --batch, every trial on --sweep-seed) over one space (jaxmarl_tuned.py: envs,
rollout steps, minibatches, epochs, learning rate and its annealing, width, gamma, lambda, entropy, clip, budget)
mapped onto JaxMARL's keys (NUM_ENVS, NUM_STEPS, NUM_MINIBATCHES, UPDATE_EPOCHS, LR, ANNEAL_LR, GRU_HIDDEN_DIM and
FC_DIM_SIZE, GAMMA, GAE_LAMBDA, ENT_COEF, CLIP_EPS, TOTAL_TIMESTEPS) and onto fastvec-train's. A trial's time to the
threshold is read by fairness.py's window rule on both sides. JaxMARL's trials run in the peer's Python (which then
also needs optuna, and this tree's fastvec importable: its sweep code scores the trials): a batch's programs compile
side by side, ahead of time and not counted, each warmed by one untimed update, then trained from its train call's
start until the trial's watch stops it from the script's callback. Each side's sweep is a file in --sweep-dir,
written after every trial and resumed by the same command (a killed call loses one trial at most). Then each side's
best trains on the fresh --seeds, both compared as a published row is. Split over short device calls:

    PYTHON benchmarks/peers/jaxmarl_baselines.py --sweep-worker peer --jaxmarl-repo R --scenarios smax:3s5z \
        --algos ippo --threshold T --sweep-timeout 300          # again until its file says finished
    python benchmarks/peers/jaxmarl_baselines.py --sweep-worker fastvec --jaxmarl-repo R --scenarios smax:3s5z \
        --algos ippo --threshold T --sweep-timeout 300
    PYTHON benchmarks/peers/jaxmarl_baselines.py --peer-worker --kinds tuned --jaxmarl-repo R --scenarios smax:3s5z \
        --algos ippo --seeds 1 --out peer_tuned_3s5z_ippo_1.json
    python benchmarks/peers/jaxmarl_baselines.py --kinds tuned --jaxmarl-repo R --scenarios smax:3s5z --algos ippo \
        --threshold T --peer-results peer_tuned_3s5z_ippo_*.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))  # fairness, purejaxrl_ppo; train_peers in fastvec's Python
from fairness import WINDOW_EPISODES, final_window_mean, peer_threshold, ratio, seed_time  # noqa: E402
import jaxmarl_tuned  # noqa: E402
from jaxmarl_scripts import (SCRIPTS, jaxmarl_version, load_script, peer_config, quiet_wandb,  # noqa: E402
                             recorded_callbacks, script_paths)
import sweep_peer  # noqa: E402

# scenario -> (family, fastvec env, the scenario's keys in JaxMARL's config, the metric the threshold is on)
SCENARIOS = {
    "smax:3s5z": ("smax", "smax:3s5z", {"MAP_NAME": "3s5z"}, "win_rate"),
    "smax:5m_vs_6m": ("smax", "smax:5m_vs_6m", {"MAP_NAME": "5m_vs_6m"}, "win_rate"),
    "mpe:simple_spread": ("mpe", "simple_spread", {"ENV_NAME": "MPE_simple_spread_v3"}, "return"),
}
ALGOS = ("ippo", "mappo")
# the metric -> fastvec-train's logged key: SMAX's allies_won (a truncated battle neither side's win, as jaxmarl's
# returned_won_episode), and the episode return, the mean over the agents on both sides
FASTVEC_METRIC = {"win_rate": "allies_won", "return": "episode_return"}
# fastvec's published settings per algorithm (docs/teams.md): IPPO is the config as shipped; MAPPO reads the world
# state in its critic, and for MPE trains at the learning rate docs/teams.md measured it with
FASTVEC_ALGO = {
    ("smax", "ippo"): {}, ("mpe", "ippo"): {},
    ("smax", "mappo"): {"policy": {"critic_input": "world_state"}},
    ("mpe", "mappo"): {"policy": {"critic_input": "world_state"}, "train": {"learning_rate": 0.0025}},
}
DIFFERENCES = {
    "smax": "JaxMARL: a GRU of 128 (FC 128), 128 envs; fastvec's smax.toml: MLPs of 64 x 64, 64 envs, agent ids",
    "mpe": "JaxMARL plays its own MPE_simple_spread_v3, fastvec mpe2's simple_spread (JaxMARL's logged returns, "
           "each reward times the number of agents, divided back: the env's per-agent return on both sides); "
           "JaxMARL: a GRU of 128, 10M steps; fastvec's mpe.toml: MLPs of 64 x 64, 1M steps, agent ids",
}


# ---------------------------------------------------------------------------------------------------------------
# The peer's side: runs in --peer-python (JAX, jaxmarl); no fastvec import.

def peer_worker(repo: Path, scenario: str, algo: str, seeds: list[int], overrides: dict, warmup: str) -> dict:
    """Compile the script's train once (ahead of time), warm up, then train each seed over the whole budget,
    recording every update's host time and episodes. warmup: "short" runs a two-update program of the same config
    untimed first (the runtime, the callback path and the device's libraries started), "full" the timed program
    itself once (seed 0: its own first-execution costs out too, for a whole budget's time), "none" nothing."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    family, _, scenario_keys, _ = SCENARIOS[scenario]
    script, config_path = script_paths(repo, family, algo)
    quiet_wandb()
    module = load_script(script)
    config = peer_config(config_path, scenario_keys, overrides)
    import jax

    records: list = []
    start = [time.perf_counter()]
    published, per_update = dict(config), config["NUM_ENVS"] * config["NUM_STEPS"]
    log_scale = "agents" if family == "mpe" else "none"

    def compiled_train(config):
        with recorded_callbacks(records, lambda: time.perf_counter() - start[0], config["NUM_STEPS"],
                                config["NUM_ENVS"], log_scale):
            train = module.make_train(config)  # fills NUM_UPDATES, NUM_ACTORS, MINIBATCH_SIZE in config
            return jax.jit(train).lower(jax.random.PRNGKey(0)).compile()

    t0 = time.perf_counter()
    compiled = compiled_train(config)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if warmup != "none":
        program = compiled if warmup == "full" else compiled_train({**published, "TOTAL_TIMESTEPS": 2 * per_update})
        jax.block_until_ready(program(jax.random.PRNGKey(0)))
    warmup_s = time.perf_counter() - t0
    runs = []
    for seed in seeds:
        records.clear()
        start[0] = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
        train_s = time.perf_counter() - start[0]
        updates = sorted(records, key=lambda r: (r["update"] is None, r["update"]))
        runs.append({"seed": seed, "train_s": round(train_s, 4), "updates": len(updates),
                     "steps": len(updates) * per_update, "sps": round(len(updates) * per_update / train_s),
                     "first_update_s": round(updates[0]["t"], 4) if updates else None,
                     "log": [[(i + 1) * per_update, round(r["t"], 4), r["episodes"], round(r["return_sum"], 4),
                              r.get("win_sum")] for i, r in enumerate(updates)]})
        print(json.dumps({k: v for k, v in runs[-1].items() if k != "log"}), file=sys.stderr, flush=True)
    script_file, config_file = SCRIPTS[family, algo]
    return {"scenario": scenario, "algo": algo, "script": script_file, "config_file": config_file,
            "config": published, "num_updates": int(config["NUM_UPDATES"]), "steps_per_update": per_update,
            "compile_s": round(compile_s, 3), "warmup": warmup, "warmup_s": round(warmup_s, 3), "runs": runs,
            "jax": jax.__version__, "device": str(jax.devices()[0]),
            "jaxmarl": jaxmarl_version(),
            "timing": "each update's time is the host clock at its callback (the script's own io_callback, run "
                      "when the device reaches it), from the call's start; compile excluded (ahead of time)"}


# ---------------------------------------------------------------------------------------------------------------
# The comparison: runs in fastvec's Python.

def peer_groups(run: dict, metric: str) -> list:
    """A peer run's log as fairness.py's groups (steps, seconds, the update's mean of metric, episodes); updates
    without a finished episode add none."""
    column = 3 if metric == "return" else 4  # a log row: steps, seconds, episodes, return sum, win sum
    return [(row[0], row[1], row[column] / row[2], row[2]) for row in run["log"] if row[2]]


def init_seconds(log: list) -> float:
    """What a run's first update took beyond its median update: the script's set-up inside its train call (network
    and optimiser init, env reset, the call's start), which fastvec's timing leaves out as start-up."""
    stamps = [0.0, *(row[1] for row in log)]
    steps = sorted(b - a for a, b in zip(stamps[1:-1], stamps[2:]))
    return max(0.0, stamps[1] - steps[len(steps) // 2]) if steps else 0.0


def peer_side(result: dict, metric: str, window: int,
              threshold: float | None = None) -> tuple[list[dict], float | None]:
    """Each peer seed's final window mean; the threshold (given: a tuned row's, else the median of those); each seed's
    time to it by the window rule, from its train call's start (time_s) and with its set-up left out
    (time_after_init_s)."""
    runs = []
    for run in result.get("runs", []):
        groups = peer_groups(run, metric)
        runs.append({**{k: v for k, v in run.items() if k != "log"}, "groups": groups,
                     "final": final_window_mean(groups, window), "init_s": round(init_seconds(run["log"]), 4)})
    if threshold is None:
        threshold = peer_threshold([r["final"] for r in runs])
    for run in runs:
        if threshold is not None:
            run.update(seed_time(run["groups"], threshold, run["train_s"], window))
            run["time_after_init_s"] = round(run["time_s"] - run["init_s"], 4)
    return runs, threshold


def summarize(scenario: str, algo: str, peer: dict, peer_runs: list[dict], threshold, fastvec: list[dict],
              window: int, extra: dict, kind: str = "published") -> dict:
    """One row: the threshold, each side's seeds, the ratio of the peer's median time over fastvec's with its bound."""
    family, env, _, metric = SCENARIOS[scenario]
    row = {"scenario": scenario, "algo": algo, "kind": kind, "metric": metric, "threshold": threshold,
           "window": window, "fastvec_env": env, "peer_script": peer.get("script"),
           "peer_config_file": peer.get("config_file"), "peer_config": peer.get("config"),
           "peer_compile_s": peer.get("compile_s"), "peer_warmup": peer.get("warmup"),
           "peer_warmup_s": peer.get("warmup_s"), "peer_timing": peer.get("timing"), "peer_device": peer.get("device"),
           "peer_jax": peer.get("jax"),
           "peer_jaxmarl": peer.get("jaxmarl"), "peer_error": peer.get("error"), "peer_command": peer.get("command"),
           "differences": DIFFERENCES[family], **extra}
    keys = ("seed", "reached", "time_s", "lower_bound", "steps_to_threshold", "train_s", "steps", "sps", "final",
            "first_update_s", "init_s", "time_after_init_s", "startup_s", "budget_steps", "capped", "eval", "error",
            "refused")
    row["peer_seeds"] = [{k: r.get(k) for k in keys if k in r} for r in peer_runs]
    row["fastvec_seeds"] = [{k: r.get(k) for k in keys if k in r} for r in fastvec]
    timed = [r for r in fastvec if r.get("time_s") is not None]
    peer_timed = [r for r in peer_runs if r.get("time_s") is not None]
    row.update(ratio([r["time_s"] for r in peer_timed], [r["lower_bound"] for r in peer_timed],
                     [r["time_s"] for r in timed], [r["lower_bound"] for r in timed]))
    # the same with the peer's set-up inside its train call left out, as fastvec's start-up is: the lower figure
    row["after_peer_init"] = ratio([r["time_after_init_s"] for r in peer_timed], [r["lower_bound"] for r in peer_timed],
                                   [r["time_s"] for r in timed], [r["lower_bound"] for r in timed])
    return row


def train_peers():
    """benchmarks/train_peers.py, whose fastvec side (fastvec_run) every training comparison shares; imported in
    fastvec's Python only."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_peers as module
    return module


def fastvec_seeds(scenario: str, algo: str, seeds: list[int], args, threshold, run_root: Path,
                  tuned: dict | None = None) -> tuple[list, dict]:
    """fastvec-train's runs of a row (its published settings for the algorithm, --fastvec-set on top, a tuned row's
    best settings on top of those), each over its whole budget; (runs, settings)."""
    from fastvec.trainer.sweep import layer

    peers = train_peers()

    family, env, _, metric = SCENARIOS[scenario]
    settings = layer(FASTVEC_ALGO[family, algo], peers.fastvec_settings(args.fastvec_set, env), tuned or {})
    runs = []
    for seed in seeds:
        result = peers.fastvec_run(env, seed, args.fastvec_device, threshold, args.max_seconds, args.eval_episodes,
                                   None, run_root, settings, args.window, metric=FASTVEC_METRIC[metric])
        result["final"] = result.get("final_return")
        if "eval_episodes" in result:
            result["eval"] = {"episodes": result["eval_episodes"], "episode_return": result["eval_return"],
                              FASTVEC_METRIC[metric]: result["eval_metric"]}
        runs.append({k: v for k, v in result.items() if k not in ("groups", "final_return")})
    return runs, settings


def saved_peer(paths: list[Path], scenario: str, algo: str, kind: str = "published") -> dict | None:
    """The peer's runs of (scenario, algo, kind) from saved worker JSONs (--peer-results: --peer-worker's output,
    e.g. one seed a file where a device call cannot hold every seed), merged by seed; None where no file has that
    row. A seed found twice is an error, as are files of different configs."""
    found = [json.loads(Path(p).read_text()) for p in paths]
    found = [f for f in found if (f.get("scenario"), f.get("algo"), f.get("kind", "published")) == (scenario, algo,
                                                                                                     kind)]
    if not found:
        return None
    if any(f.get("config") != found[0].get("config") for f in found):
        raise SystemExit(f"--peer-results: the files of {scenario} {algo} ran different configs; give one config's")
    runs = sorted((r for f in found for r in f["runs"]), key=lambda r: r["seed"])
    seeds = [r["seed"] for r in runs]
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise SystemExit(f"--peer-results: {scenario} {algo} has seed(s) {twice} in more than one file")
    return {**found[0], "runs": runs, "command": "--peer-results " + " ".join(map(str, paths)),
            "compile_s": [f.get("compile_s") for f in found], "warmup_s": [f.get("warmup_s") for f in found]}


def peer_run(args, scenario: str, algo: str, out: Path, kind: str = "published") -> dict:
    """The worker for one row in --peer-python, its JSON or the error that stopped it."""
    cmd = [args.peer_python, str(Path(__file__).resolve()), "--peer-worker", "--jaxmarl-repo", str(args.jaxmarl_repo),
           "--scenarios", scenario, "--algos", algo, "--kinds", kind, "--seeds", *map(str, args.seeds),
           "--peer-warmup", args.peer_warmup, "--sweep-dir", str(args.sweep_dir), "--out", str(out)]
    if args.peer_set:
        cmd += ["--peer-set", *args.peer_set]
    return train_peers().subprocess_json(cmd, out, args.peer_timeout)


def fastvec_sweep(head: dict, args) -> dict:
    """fastvec-train's side of a tuned row's sweep: each trial the scenario's published settings for the algorithm
    (--fastvec-set on top) under the trial's, logging every update, timed by the same window rule."""
    from fastvec.native.batches import team_source
    from fastvec.trainer.sweep import layer

    peers = train_peers()
    family, env, _, _ = SCENARIOS[head["scenario"]]
    agents = len(team_source(env, {"enemy": "heuristic"} if family == "smax" else {})[2])
    base = layer(FASTVEC_ALGO[family, head["algo"]], peers.fastvec_settings(args.fastvec_set, env))
    run_root = Path(tempfile.mkdtemp(prefix="jaxmarl_sweep-"))

    def train(params, _, trial):
        overrides = layer(base, jaxmarl_tuned.fastvec_settings(params, agents),
                          {"train": {"device": args.fastvec_device, "log_interval": 0.0}})
        return sweep_peer.fastvec_settings_trial(
            env, overrides, head["settings"], trial, head["seed"], run_root,
            wrap=lambda watch: jaxmarl_tuned.WindowWatch(watch, head["metric"], head["window"]))

    out = sweep_path(args.sweep_dir, head["scenario"], head["algo"], "fastvec")
    return jaxmarl_tuned.run_side(head, out, lambda points: [None] * len(points), train, args.sweep_timeout,
                                  lambda line: print(line, file=sys.stderr, flush=True),
                                  {"device": args.fastvec_device, "fastvec_base": base, "agents": agents})


def sweep_path(sweep_dir: Path, scenario: str, algo: str, side: str) -> Path:
    """Where one side's sweep of a tuned row is kept (and resumed from)."""
    return Path(sweep_dir) / f"{scenario.replace(':', '_')}_{algo}_{side}.json"


def sweep_head(args, scenario: str, algo: str, side: str, threshold: float) -> dict:
    """The header of one side's sweep of a row (jaxmarl_tuned.header) from the command line's budget, with the
    settings each side's trials train under (--peer-set, --fastvec-set), so that a sweep resumes only under them."""
    family, env, _, metric = SCENARIOS[scenario]
    row = {"scenario": scenario, "algo": algo, "env": env}
    head = jaxmarl_tuned.header(row, side, threshold, FASTVEC_METRIC[metric], args.window, args.trials,
                                args.trial_seconds, args.batch, args.sweep_seed, args.sampler_seed,
                                sweep_peer.parse_fixed(args.fix))
    return {**head, "peer_set": args.peer_set, "fastvec_set": args.fastvec_set}


def sweep_run(args, scenario: str, algo: str, side: str, threshold: float) -> dict:
    """One side's sweep of a row: the sweep worker in its Python (the peer's or this one), resuming its file in
    --sweep-dir; the file's record, or the error that stopped the worker."""
    out = sweep_path(args.sweep_dir, scenario, algo, side)
    if out.exists():  # a finished sweep of this budget is read, not run again
        saved = json.loads(out.read_text())
        head = json.loads(json.dumps(sweep_head(args, scenario, algo, side, threshold)))
        if saved.get("finished") and all(saved.get(k) == v for k, v in head.items()):
            return {**saved, "command": f"{out} (finished)"}
    cmd = [args.peer_python if side == "peer" else sys.executable, str(Path(__file__).resolve()), "--sweep-worker",
           side, "--jaxmarl-repo", str(args.jaxmarl_repo), "--scenarios", scenario, "--algos", algo,
           "--threshold", repr(threshold), "--window", str(args.window), "--trials", str(args.trials),
           "--trial-seconds", str(args.trial_seconds), "--batch", str(args.batch), "--sweep-seed", str(args.sweep_seed),
           "--sampler-seed", str(args.sampler_seed), "--sweep-dir", str(args.sweep_dir),
           "--sweep-timeout", str(args.sweep_timeout), "--fastvec-device", args.fastvec_device]
    for flag, items in (("--fix", args.fix), ("--peer-set", args.peer_set), ("--fastvec-set", args.fastvec_set)):
        if items:
            cmd += [flag, *items]
    result = train_peers().subprocess_json(cmd, out, args.peer_timeout)
    if "error" in result and out.exists():  # a worker stopped part way: its file holds the trials it finished
        return {**json.loads(out.read_text()), "error": result["error"]}
    return result


def row_threshold(args, scenario: str, algo: str, rows: list[dict]) -> float | None:
    """A tuned row's threshold: --threshold, else the published row's of this run or of --thresholds-from's file."""
    if args.threshold is not None:
        return args.threshold
    earlier = json.loads(args.thresholds_from.read_text())["rows"] if args.thresholds_from else []
    for row in [*rows, *earlier]:
        if (row["scenario"], row["algo"], row["kind"]) == (scenario, algo, "published"):
            return row["threshold"]
    return None


def tuned_row(args, scenario: str, algo: str, threshold: float | None, run_root: Path) -> dict:
    """A tuned row: each side's sweep to the row's threshold with the same budget (resumed from --sweep-dir), each
    side's best trained on the fresh --seeds, compared as a published row is at the same threshold."""
    family, env, _, metric = SCENARIOS[scenario]
    if threshold is None:
        return summarize(scenario, algo, {}, [], None, [], args.window, {
            "sweep_error": f"no threshold for {scenario} {algo}: run --kinds published first (in this run or a "
                           "file given as --thresholds-from), or give --threshold"}, "tuned")
    sweeps = {side: sweep_run(args, scenario, algo, side, threshold) for side in ("peer", "fastvec")}
    extra = {"sweeps": jaxmarl_tuned.compare_sweeps(sweeps["peer"], sweeps["fastvec"])}
    unfinished = [f"{side}: {s.get('error') or 'unfinished'} ({s.get('trials_done', 0)} of {args.trials} trials; "
                  "run again to resume)" if not s.get("finished") else f"{side}: no trial completed"
                  for side, s in sweeps.items() if not s.get("finished") or "best" not in s]
    if unfinished:
        return summarize(scenario, algo, {}, [], threshold, [], args.window,
                         {**extra, "sweep_error": "; ".join(unfinished)}, "tuned")
    peer = saved_peer(args.peer_results, scenario, algo, "tuned")
    if peer is None:
        with tempfile.TemporaryDirectory() as tmp:
            peer = peer_run(args, scenario, algo, Path(tmp) / "peer.json", "tuned")
    peer_runs, _ = peer_side(peer, metric, args.window, threshold)
    agents = sweeps["fastvec"]["agents"]
    best = jaxmarl_tuned.fastvec_settings(sweeps["fastvec"]["best"]["params"], agents)
    fastvec, settings = fastvec_seeds(scenario, algo, args.seeds, args, threshold, run_root, best)
    extra.update(fastvec_settings=settings, fastvec_command=train_peers().fastvec_command(env, args.fastvec_device,
                                                                                          settings))
    return summarize(scenario, algo, peer, peer_runs, threshold, fastvec, args.window, extra, "tuned")


def published_row(args, scenario: str, algo: str, run_root: Path) -> dict:
    """A published row: JaxMARL's yaml on every seed, its median final window the threshold, fastvec's published
    settings timed to it."""
    family, env, _, metric = SCENARIOS[scenario]
    peer = saved_peer(args.peer_results, scenario, algo)
    if peer is None:
        with tempfile.TemporaryDirectory() as tmp:
            peer = peer_run(args, scenario, algo, Path(tmp) / "peer.json")
    peer_runs, threshold = peer_side(peer, metric, args.window)
    fastvec, settings = fastvec_seeds(scenario, algo, args.seeds, args, threshold, run_root)
    return summarize(scenario, algo, peer, peer_runs, threshold, fastvec, args.window,
                     {"fastvec_settings": settings,
                      "fastvec_command": train_peers().fastvec_command(env, args.fastvec_device, settings)})


def worker(args) -> None:
    """--peer-worker and --sweep-worker: one row's part, in the Python it runs in."""
    from purejaxrl_ppo import parse_overrides

    scenario, algo = args.scenarios[0], args.algos[0]
    overrides = parse_overrides(args.peer_set)
    if args.sweep_worker:
        if args.threshold is None:
            raise SystemExit("--sweep-worker needs the row's --threshold (its published row's, in "
                             "benchmarks/results/jaxmarl_train.json)")
        args.sweep_dir.mkdir(parents=True, exist_ok=True)
        sys.path.insert(1, str(ROOT))  # this tree's fastvec (its sweep scores the trials), where none is installed
        head = sweep_head(args, scenario, algo, args.sweep_worker, args.threshold)
        if args.sweep_worker == "fastvec":
            fastvec_sweep(head, args)
        else:
            jaxmarl_tuned.peer_sweep(args.jaxmarl_repo, SCENARIOS[scenario], head, overrides,
                                     sweep_path(args.sweep_dir, scenario, algo, "peer"), args.sweep_timeout,
                                     lambda line: print(line, file=sys.stderr, flush=True))
        return
    kind = args.kinds[0]
    if kind == "tuned":  # the peer's best of its sweep, on the fresh seeds
        path = sweep_path(args.sweep_dir, scenario, algo, "peer")
        sweep = json.loads(path.read_text()) if path.exists() else {}
        if not sweep.get("finished") or "best" not in sweep:
            raise SystemExit(f"{path}: no finished sweep with a best trial; run its --sweep-worker peer first")
        overrides = {**overrides, **jaxmarl_tuned.peer_overrides(sweep["best"]["params"])}
    result = peer_worker(args.jaxmarl_repo, scenario, algo, args.seeds, overrides, args.peer_warmup)
    args.out.write_text(json.dumps({**result, "kind": kind}))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jaxmarl-repo", type=Path, required=True, help="a checkout of JaxMARL (its baselines/)")
    parser.add_argument("--peer-python", default=sys.executable, help="a Python with jaxmarl and the scripts' imports")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    parser.add_argument("--kinds", nargs="+", default=["published"], choices=["published", "tuned"],
                        help="published: each side's published settings; tuned: each side's best of a sweep with "
                             "the same budget (after published: its threshold is the published row's)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--window", type=int, default=WINDOW_EPISODES, help="K: the last K finished episodes")
    parser.add_argument("--peer-set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override the JaxMARL configs' keys, every row (e.g. TOTAL_TIMESTEPS=4096 NUM_ENVS=4)")
    parser.add_argument("--fastvec-set", nargs="*", default=[], metavar="[ENV:]SECTION.KEY=VALUE",
                        help="change fastvec's config, every row or one env's (e.g. train.total_timesteps=4096)")
    parser.add_argument("--fastvec-device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--max-seconds", type=float, default=None, help="a safety cap on each fastvec run")
    parser.add_argument("--peer-warmup", default="short", choices=["short", "full", "none"],
                        help="untimed before the seeds: a two-update program (short), the whole program once (full)")
    parser.add_argument("--peer-timeout", type=float, default=7200.0,
                        help="seconds for one row's peer process (and for one side's sweep process)")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "jaxmarl_train.json")
    parser.add_argument("--peer-results", type=Path, nargs="*", default=[], metavar="JSON",
                        help="the peer's saved runs (--peer-worker's output) for the rows they hold: not run again")
    parser.add_argument("--peer-worker", action="store_true",
                        help="run only the peer, in this Python: the first --scenarios, --algos and --kinds, JSON to "
                             "--out (tuned: the best of the peer's sweep in --sweep-dir)")
    tuned = parser.add_argument_group("tuned", "one sweep per side with the same budget (sweep_peer.py's procedure)")
    tuned.add_argument("--trials", type=int, default=16, help="trials per side")
    tuned.add_argument("--trial-seconds", type=float, default=30.0, help="training seconds per trial (both sides)")
    tuned.add_argument("--batch", type=int, default=4, help="trials asked at once (the peer compiles them together)")
    tuned.add_argument("--sampler-seed", type=int, default=0, help="both sides' sampler seed")
    tuned.add_argument("--sweep-seed", type=int, default=0, help="the training seed of every trial (not in --seeds)")
    tuned.add_argument("--fix", nargs="*", default=[], metavar="NAME=VALUE",
                       help="take NAME out of the space at VALUE on both sides, e.g. total_timesteps=1000000")
    tuned.add_argument("--sweep-dir", type=Path, default=RESULTS / "jaxmarl_sweeps",
                       help="each side's sweep file, written after every trial and resumed from")
    tuned.add_argument("--sweep-timeout", type=float, default=0.0,
                       help="a sweep process starts no batch of trials after this many seconds (0: none)")
    tuned.add_argument("--threshold", type=float, default=None,
                       help="the tuned rows' threshold (default: the published row's of this run or --thresholds-from)")
    tuned.add_argument("--thresholds-from", type=Path, default=None, metavar="JSON",
                       help="an earlier run's output whose published rows give the tuned rows' thresholds")
    tuned.add_argument("--sweep-worker", choices=["peer", "fastvec"], default=None,
                       help="run one side's sweep of the first --scenarios and --algos, in this Python (peer: "
                            "--peer-python's, with fastvec and optuna importable), to its file in --sweep-dir")
    args = parser.parse_args(argv)
    if args.peer_worker or args.sweep_worker:  # one row's part
        worker(args)
        return
    for scenario in args.scenarios:
        for algo in args.algos:
            script_paths(args.jaxmarl_repo, SCENARIOS[scenario][0], algo)
    if "tuned" in args.kinds and args.sweep_seed in args.seeds:
        parser.error(f"--sweep-seed {args.sweep_seed} is in --seeds: a tuned row's best trains on fresh seeds")
    # the space needs optuna, which only a tuned row (or a fixed value of it) asks for
    unknown = set(sweep_peer.parse_fixed(args.fix)) - set(jaxmarl_tuned.team_space("smax:3s5z")) if args.fix else ()
    if unknown:
        parser.error(f"--fix {sorted(unknown)}: not in the space; choose from "
                     f"{', '.join(jaxmarl_tuned.team_space('smax:3s5z'))}")
    start = time.perf_counter()
    out = {"benchmark": "jaxmarl_baselines", "date": date.today().isoformat(), "machine": platform.node(),
           "cpus": len(os.sched_getaffinity(0)),
           "command": shlex.join(["python", "benchmarks/peers/jaxmarl_baselines.py",
                                  *(sys.argv[1:] if argv is None else argv)]),
           "fastvec_device": args.fastvec_device, "seeds": args.seeds, "window": args.window,
           "peer_set": args.peer_set, "fastvec_set": args.fastvec_set,
           "sweep": {"trials": args.trials, "trial_seconds": args.trial_seconds, "batch": args.batch,
                     "sampler_seed": args.sampler_seed, "seed": args.sweep_seed, "fix": args.fix},
           "rule": f"threshold: the median over JaxMARL's seeds of the mean win rate (SMAX) or return (MPE, the mean "
                   f"over the agents) of its last {args.window} finished episodes at the end of its budget (a tuned "
                   "row: its published row's); each side's time to it by the same window rule (fairness.py), a "
                   "seed that never reaches it counted as its whole training time; ratio: JaxMARL's median over "
                   "fastvec's", "rows": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    run_root = Path(tempfile.mkdtemp(prefix="jaxmarl_baselines-"))
    for kind in args.kinds:
        for scenario in args.scenarios:
            for algo in args.algos:
                if kind == "published":
                    row = published_row(args, scenario, algo, run_root)
                else:
                    row = tuned_row(args, scenario, algo, row_threshold(args, scenario, algo, out["rows"]), run_root)
                out["rows"].append(row)
                threshold = row["threshold"]
                print(f"{scenario:<18} {algo:<6} {kind:<9} {row['metric']} "
                      f"{threshold if threshold is None else round(threshold, 3)} | JaxMARL {row['peer_median_s']} s | "
                      f"fastvec {row['fastvec_median_s']} s | {row['ratio_text']}x"
                      + "".join(f" | {k}: {row[k]}" for k in ("peer_error", "sweep_error") if row.get(k)), flush=True)
                out["wall_s"] = round(time.perf_counter() - start, 1)
                args.out.write_text(json.dumps(out, indent=1, default=str) + "\n")  # a cut-short run keeps its rows
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
