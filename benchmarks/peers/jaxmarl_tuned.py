"""The tuned kind of the JaxMARL comparison (jaxmarl_baselines.py --kinds tuned): the shared sweep space mapped onto
JaxMARL's config keys and onto fastvec-train's, each trial timed to the row's threshold by fairness.py's window rule,
a JaxMARL trial stopped when its budget is spent, and one side's sweep kept in a JSON file that a later call resumes.
No JAX and no fastvec import at module level: it loads in the peer's Python and in fastvec's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from fairness import window_means
from jaxmarl_scripts import jaxmarl_version, load_script, peer_config, quiet_wandb, recorded_callbacks, script_paths
from sweep_peer import _plan, _Quiet, best_record, minibatches, space, sweep_settings, sweep_trials

# the fastvec metric a row's threshold is on -> the sum a JaxMARL update record holds of it
RECORD_SUM = {"allies_won": "win_sum", "episode_return": "return_sum"}
# (family, algorithm) -> space entries a JaxMARL script cannot vary, fixed on both sides of its rows:
# mappo_rnn_smax.py's GRU is FC_DIM_SIZE wide but its training loop starts the GRU's state 128 wide, whatever the config
SCRIPT_FIXED = {("smax", "mappo"): {"hidden": 128}}


def team_space(env: str, fixed: dict | None = None) -> dict:
    """The shared space both sides of a team row sweep (sweep_peer.space with a team env's entries)."""
    return space(env, fixed, teams=True)


def team_minibatches(params: dict) -> int:
    """The minibatch count both sides use: sweep_peer's rule (each minibatch >= MIN_MINIBATCH samples of a rollout
    of num_envs x num_steps), at most 16 so that it divides JaxMARL's actors (num_envs x agents, num_envs a multiple
    of 16), which its recurrent scripts split into minibatches."""
    return min(minibatches(params), 16)


def peer_overrides(params: dict) -> dict:
    """The params as JaxMARL config keys (over the script's published yaml): its GRU and its dense layers both
    `hidden` wide."""
    out = {"NUM_ENVS": params["num_envs"], "NUM_STEPS": params["num_steps"],
           "NUM_MINIBATCHES": team_minibatches(params), "UPDATE_EPOCHS": params["update_epochs"],
           "LR": params["learning_rate"], "GRU_HIDDEN_DIM": params["hidden"], "FC_DIM_SIZE": params["hidden"],
           "GAMMA": params["gamma"], "GAE_LAMBDA": params["gae_lambda"], "ANNEAL_LR": params["anneal_lr"],
           "TOTAL_TIMESTEPS": params["total_timesteps"]}
    for name, key in (("ent_coef", "ENT_COEF"), ("clip_eps", "CLIP_EPS")):
        if name in params:
            out[key] = params[name]
    return out


def fastvec_settings(params: dict, agents: int) -> dict:
    """The params as fastvec-train settings {section: {key: value}} (over the scenario's published config): the
    same envs, rollout steps, samples per minibatch (a rollout has num_envs x agents x num_steps), epochs and
    coefficients; its MLPs `hidden` wide, single steps per minibatch row (bptt_horizon 1, as its configs)."""
    samples = params["num_envs"] * agents * params["num_steps"]
    train = {"horizon": params["num_steps"], "bptt_horizon": 1, "minibatch_size": samples // team_minibatches(params),
             "update_epochs": params["update_epochs"], "learning_rate": params["learning_rate"],
             "gamma": params["gamma"], "gae_lambda": params["gae_lambda"], "anneal_lr": params["anneal_lr"],
             "total_timesteps": params["total_timesteps"]}
    if "ent_coef" in params:
        train["ent_coef"] = params["ent_coef"]
    if "clip_eps" in params:
        train["clip_coef"] = train["vf_clip_coef"] = params["clip_eps"]
    return {"env": {"num_envs": params["num_envs"]}, "policy": {"hidden": params["hidden"]}, "train": train}


def window_mean(groups: list, k: int):
    """The mean of the last k finished episodes over groups (steps, seconds, mean, episodes), or None while fewer
    than k have finished: fairness.window_means on the newest groups that hold k."""
    total, first = 0, len(groups)
    while first and total < k:
        first -= 1
        total += groups[first][3]
    return window_means(groups[first:], k)[-1] if total >= k else None


class WindowWatch:
    """A run's watch that hands fastvec-sweep's TrialWatch, at each update that finished episodes, the mean of the
    last `window` of them (fairness.py's rule, by which the fresh seeds are timed) in place of the update's own."""

    def __init__(self, watch, metric: str, window: int):
        self.watch, self.metric, self.window, self.groups = watch, metric, window, []

    def __call__(self, metrics, seconds: float, steps: int) -> bool:
        mean = None
        if metrics and metrics.get("episodes") and metrics.get(self.metric) is not None:
            self.groups.append((steps, seconds, float(metrics[self.metric]), metrics["episodes"]))
            mean = window_mean(self.groups, self.window)
        return self.watch(None if mean is None else {self.metric: mean}, seconds, steps)


class StopTrial(Exception):
    """Raised in a JaxMARL program's callback: the trial's watch has ended it (budget spent, target hit, pruned)."""


class PeerProgram:
    """One trial's JaxMARL program, compiled ahead of time, whose update callback (jaxmarl_baselines.
    recorded_callbacks) appends to `records` and calls on_update. A run is stopped from the callback by raising
    StopTrial there: JAX ends the program and raises its runtime error, caught here."""

    def __init__(self):
        self.records: list = []
        self.compiled = None
        self.compile_s = self.warmup_s = 0.0
        self.num_updates = self.per_update = 0
        self.hook, self.stopped, self.stop_at, self.start = None, False, None, time.perf_counter()

    def clock(self) -> float:
        return time.perf_counter() - self.start

    def on_update(self, record: dict) -> None:
        if self.hook is None or self.stopped:
            return
        if self.hook(record):
            self.stopped, self.stop_at = True, len(self.records)
            raise StopTrial

    def run(self, seed: int, hook) -> float:
        """Train seed until hook(record) says stop or the budget ends; the seconds from the call's start."""
        import jax

        self.records.clear()
        self.hook, self.stopped, self.stop_at = hook, False, None
        self.start = time.perf_counter()
        try:
            jax.block_until_ready(self.compiled(jax.random.PRNGKey(seed)))
        except Exception:  # noqa: BLE001 - JAX's runtime error carrying StopTrial; any other is re-raised
            if not self.stopped:
                raise
        return time.perf_counter() - self.start

    def warm_up(self) -> None:
        """One update run untimed and stopped (the program's first-execution costs out of the trial's time)."""
        t0 = time.perf_counter()
        self.run(0, lambda record: True)
        self.warmup_s = time.perf_counter() - t0


def peer_trial(program: PeerProgram, settings: dict, trial, seed: int, window: int) -> dict:
    """One JaxMARL trial, scored by fastvec-sweep's TrialWatch through WindowWatch: every update's finished episodes
    from the script's callback, timed from the train call's start; stopped in the callback when the watch says so."""
    from fastvec.trainer import sweep as fastvec_sweep

    metric = settings["metric"]
    watch = fastvec_sweep.TrialWatch(_plan(settings), trial, 0, program.num_updates * program.per_update, _Quiet())
    smooth = WindowWatch(watch, metric, window)

    def hook(record):
        n = record["episodes"]
        metrics = {"episodes": n, metric: record[RECORD_SUM[metric]] / n} if n else None
        return smooth(metrics, record["t"], len(program.records) * program.per_update)

    train_s = program.run(seed, hook)
    steps = len(program.records) * program.per_update
    return {**watch.result({"startup": program.compile_s + program.warmup_s, "sps": steps / max(train_s, 1e-9),
                            "seed": seed}),
            "compile_s": round(program.compile_s, 3), "warmup_s": round(program.warmup_s, 3),
            "updates_after_stop": None if program.stop_at is None else len(program.records) - program.stop_at}


def header(row: dict, side: str, threshold: float, metric: str, window: int, trials: int, trial_seconds: float,
           batch: int, seed: int, sampler_seed: int, fixed: dict) -> dict:
    """What a side's sweep file must agree on to be resumed or compared: the row, the objective and the budget.
    fixed: the user's fixed entries, to which the script's own (SCRIPT_FIXED) are added."""
    pinned = SCRIPT_FIXED.get((row["scenario"].split(":")[0], row["algo"]), {})
    clash = {k: fixed[k] for k, v in pinned.items() if k in fixed and fixed[k] != v}
    if clash:
        raise SystemExit(f"--fix {clash}: {row['scenario']} {row['algo']}'s JaxMARL script trains only at {pinned}")
    fixed = {**fixed, **pinned}
    settings = sweep_settings(row["env"], threshold, trial_seconds, metric)
    return {"scenario": row["scenario"], "algo": row["algo"], "side": side, "threshold": threshold, "metric": metric,
            "window": window, "trials": trials, "trial_seconds": trial_seconds, "batch": batch, "seed": seed,
            "sampler_seed": sampler_seed, "fixed": fixed, "settings": settings, "env": row["env"],
            "space": {k: repr(v) for k, v in team_space(row["env"], fixed).items()}}


def run_side(head: dict, out: Path, prepare, train, timeout: float = 0.0, log=print, extra: dict | None = None) -> dict:
    """One side's sweep to `out` (the header, `extra` such as the device, every trial), written after every trial; a
    file of the same header is resumed (its trials replayed, the sweep going on as if never stopped), one of another
    refused."""
    saved: list = []
    head = json.loads(json.dumps(head))  # as the file holds it (lists for tuples)
    if out.exists():
        old = json.loads(out.read_text())
        differ = [k for k in head if old.get(k) != head[k]]
        if differ:
            raise SystemExit(f"{out}: a sweep of other {', '.join(differ)}; give another --out to start a new one")
        saved = old["records"]
    start = time.perf_counter()
    result = {**head, **(extra or {})}

    def write(records):
        result.update(records=records, trials_done=len(records), wall_s=round(time.perf_counter() - start, 2))
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(result, indent=1, default=str))
        os.replace(tmp, out)  # a call killed mid-write keeps the file before
    records = sweep_trials(team_space(head["env"], head["fixed"]), head["settings"], head["trials"], head["batch"],
                           head["sampler_seed"], prepare, train, head["fixed"], timeout, log, saved, write)
    result.update(records=records, trials_done=len(records), finished=len(records) >= head["trials"],
                  startup_s_total=round(sum(r.get("startup", 0.0) for r in records), 2),
                  trained_s_total=round(sum(r.get("seconds", 0.0) for r in records), 2),
                  compile_s_total=round(sum(r.get("compile_s", 0.0) for r in records), 2))
    best = best_record(records)
    if best is not None:
        result["best"] = {k: best[k] for k in ("number", "value", "params", "hit_seconds")}
    write(records)
    return result


def compare_sweeps(peer: dict, fastvec: dict) -> dict:
    """What a tuned row says of its two sweeps: each one's budget, trials, totals and best, whether the budgets were
    equal (the same header but the side, as many trials done) and whether their first batch tried the same points."""
    keep = ("trials", "trials_done", "finished", "trial_seconds", "batch", "seed", "sampler_seed", "startup_s_total",
            "trained_s_total", "compile_s_total", "wall_s", "best", "error", "command")
    sides = {"peer": peer, "fastvec": fastvec}
    out = {side: {k: s.get(k) for k in keep if k in s} for side, s in sides.items()}
    same = [k for k in ("threshold", "metric", "window", "trials", "trial_seconds", "batch", "seed", "sampler_seed",
                        "fixed", "settings", "space") if peer.get(k) != fastvec.get(k)]
    out["equal_budget"] = not same and peer.get("trials_done") == fastvec.get("trials_done")
    if same:
        out["differ"] = same
    firsts = [[r["params"] for r in s.get("records", [])[:peer.get("batch") or 1]] for s in (peer, fastvec)]
    out["same_first_points"] = firsts[0] == firsts[1]
    return out


def peer_sweep(repo: Path, scenario: tuple, head: dict, overrides: dict, out: Path, timeout: float, log) -> dict:
    """JaxMARL's side of a tuned row's sweep (run_side): a batch's programs (the script's make_train
    at the trial's settings over its yaml and `overrides`) compiled ahead of time side by side in threads, each then
    warmed up by one untimed update and trained as one trial, stopped from its callback when the trial's watch says
    so. scenario: jaxmarl_baselines.SCENARIOS's entry. Needs fastvec and optuna importable beside jaxmarl
    (fastvec-sweep's TrialWatch scores the trials)."""
    import logging
    from concurrent.futures import ThreadPoolExecutor

    import jax

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    logging.getLogger("jax._src.callback").setLevel(logging.CRITICAL)  # a stopped trial's callback error is the stop
    family, _, scenario_keys, _ = scenario
    script, config_path = script_paths(repo, family, head["algo"])
    quiet_wandb()
    module = load_script(script)
    log_scale = "agents" if family == "mpe" else "none"

    def program(params):
        config = peer_config(config_path, scenario_keys, {**overrides, **peer_overrides(params)})
        built = PeerProgram()
        t0 = time.perf_counter()
        try:
            with recorded_callbacks(built.records, built.clock, config["NUM_STEPS"], config["NUM_ENVS"], log_scale,
                                    built.on_update):
                built.compiled = jax.jit(module.make_train(config)).lower(jax.random.PRNGKey(0)).compile()
        except Exception as err:  # noqa: BLE001 - a point the script cannot build: the trial fails, the sweep goes on
            raise RuntimeError(f"{script.name} did not build at {params}: {type(err).__name__}: {err}") from err
        built.compile_s = time.perf_counter() - t0
        built.num_updates, built.per_update = int(config["NUM_UPDATES"]), config["NUM_ENVS"] * config["NUM_STEPS"]
        return built

    def prepare(points):
        with ThreadPoolExecutor(len(points)) as pool:
            futures = [pool.submit(program, params) for params in points]
            return [f.exception() or f.result() for f in futures]

    def train(params, built, trial):
        built.warm_up()
        return peer_trial(built, head["settings"], trial, head["seed"], head["window"])

    return run_side(head, out, prepare, train, timeout, log,
                    {"jax": jax.__version__, "device": str(jax.devices()[0]), "jaxmarl": jaxmarl_version()})
