"""One hyperparameter sweep procedure for both sides of a training comparison: an Optuna TPE search of one shared
space (envs, steps per rollout, minibatches, epochs, learning rate, width, gamma, lambda, entropy, annealing, budget),
mapped onto PureJaxRL-style PPO's settings (--side peer) or onto fastvec-train's config (--side fastvec).

    python benchmarks/peers/sweep_peer.py pendulum --side peer --trials 16 --trial-seconds 2 --out peer.json
    python benchmarks/peers/sweep_peer.py pendulum --side fastvec --device cuda --trials 16 --trial-seconds 2

Both sides get what fastvec-sweep gives a trial (fastvec/trainer/sweep.py, whose code scores both): the objective
time_to_target (training seconds to the first log whose mean return since the previous log reaches the threshold;
a miss scores trial_seconds x (1 + shortfall)), logs every trial_seconds / (2 x reports) seconds, its median
pruner and its multivariate TPE sampler with constant liar, one seed per trial. The two sides' samplers start from
the same seed, so their first (random) trials try the same points. Trials are asked in batches (--batch): the peer
compiles a batch's programs in parallel threads, then trains them one at a time; its compile and warm-up are not
counted against a trial's seconds, and are reported. Writes the best trial's params and each side's settings.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import shutil
import sys
import tempfile
import time
import types
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairness import CLASSIC, MINATAR, fastvec_env_overrides, peer_family  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
MIN_MINIBATCH = 32  # samples; a sampled minibatch count that would make them fewer is lowered, on both sides
TOTALS = {"minatar": [2_500_000, 5_000_000, 10_000_000], "default": [250_000, 500_000, 1_000_000, 2_000_000],
          "teams": [1_000_000, 2_000_000, 5_000_000, 10_000_000]}


def space(env: str, fixed: dict | None = None, teams: bool = False) -> dict:
    """The shared search space, {name: optuna distribution}, without the names `fixed` holds. teams: a team env's
    (JaxMARL's PPO scripts): their clip range too, and budgets of their order (10M steps published)."""
    import optuna.distributions as d
    entries = {
        "num_envs": d.CategoricalDistribution([16, 32, 64, 128, 256, 512, 1024, 2048]),
        "num_steps": d.CategoricalDistribution([8, 16, 32, 64, 128]),
        "minibatches": d.CategoricalDistribution([1, 2, 4, 8, 16, 32]),
        "update_epochs": d.IntDistribution(1, 8),
        "learning_rate": d.FloatDistribution(1e-4, 3e-2, log=True),
        "hidden": d.CategoricalDistribution([32, 64, 128, 256]),
        "gamma": d.CategoricalDistribution([0.9, 0.95, 0.975, 0.99, 0.995]),
        "gae_lambda": d.FloatDistribution(0.8, 0.99),
        "anneal_lr": d.CategoricalDistribution([True, False]),
        "total_timesteps": d.CategoricalDistribution(TOTALS["minatar" if env in MINATAR else "default"]),
    }
    if peer_family(env) != "continuous":  # a Gaussian policy's entropy bonus is 0 on both sides' published configs
        entries["ent_coef"] = d.FloatDistribution(1e-4, 0.05, log=True)
    if teams:
        entries["total_timesteps"] = d.CategoricalDistribution(TOTALS["teams"])
        entries["clip_eps"] = d.CategoricalDistribution([0.05, 0.1, 0.2, 0.3])
    return {name: dist for name, dist in entries.items() if name not in (fixed or {})}


def minibatches(params: dict) -> int:
    """The minibatch count both sides use: the sampled one, lowered until a minibatch holds >= MIN_MINIBATCH."""
    return max(1, min(params["minibatches"], params["num_envs"] * params["num_steps"] // MIN_MINIBATCH))


def peer_overrides(params: dict) -> dict:
    """The params as PureJaxRL settings (over its published family config)."""
    out = {"NUM_ENVS": params["num_envs"], "NUM_STEPS": params["num_steps"], "NUM_MINIBATCHES": minibatches(params),
           "UPDATE_EPOCHS": params["update_epochs"], "LR": params["learning_rate"], "HIDDEN": params["hidden"],
           "GAMMA": params["gamma"], "GAE_LAMBDA": params["gae_lambda"], "ANNEAL_LR": params["anneal_lr"],
           "TOTAL_TIMESTEPS": params["total_timesteps"]}
    if "ent_coef" in params:
        out["ENT_COEF"] = params["ent_coef"]
    return out


def fastvec_settings(params: dict, base_bptt: int = 16) -> dict:
    """The params as fastvec-train settings {section: {key: value}} (over fastvec/configs/ENV.toml); its sequence
    segments are the config's bptt_horizon, shortened to divide the rollout's horizon and the minibatch."""
    horizon = params["num_steps"]
    minibatch = params["num_envs"] * horizon // minibatches(params)
    train = {"horizon": horizon, "bptt_horizon": math.gcd(base_bptt, horizon, minibatch), "minibatch_size": minibatch,
             "update_epochs": params["update_epochs"], "learning_rate": params["learning_rate"],
             "gamma": params["gamma"], "gae_lambda": params["gae_lambda"], "anneal_lr": params["anneal_lr"],
             "total_timesteps": params["total_timesteps"]}
    if "ent_coef" in params:
        train["ent_coef"] = params["ent_coef"]
    return {"env": {"num_envs": params["num_envs"]}, "policy": {"hidden": params["hidden"]}, "train": train}


def sweep_settings(env: str, threshold: float, trial_seconds: float, metric: str = "episode_return") -> dict:
    """fastvec-sweep's [sweep] defaults (fastvec/configs/default.toml) with the objective time_to_target on metric."""
    from fastvec.trainer.config import load_config
    settings = dict(load_config(env)["sweep"])
    settings.update(objective="time_to_target", metric=metric, target=threshold,
                    trial_seconds=trial_seconds, seeds=1, seed_reduce="mean")
    return {k: v for k, v in settings.items() if "." not in k}


class _Quiet:
    """fastvec-sweep's progress display, silenced (this script prints a line per trial)."""

    def running(self, *args):
        pass


def _plan(settings: dict):
    return types.SimpleNamespace(settings=settings, multi=False)


def fastvec_trial(env: str, params: dict, settings: dict, trial, seed: int, device: str, run_root: Path) -> dict:
    """One trial of fastvec-train, scored by fastvec-sweep's TrialWatch (its logs, pruning, budget)."""
    from fastvec.trainer import sweep as fastvec_sweep
    from fastvec.trainer.config import load_config

    base = load_config(env, {"env": fastvec_env_overrides(env)})
    overrides = fastvec_sweep.layer({"env": fastvec_env_overrides(env)},
                                    fastvec_settings(params, base["train"]["bptt_horizon"]),
                                    {"train": {"device": device}})
    return fastvec_settings_trial(env, overrides, settings, trial, seed, run_root)


def fastvec_settings_trial(env: str, overrides: dict, settings: dict, trial, seed: int, run_root: Path,
                           wrap=None) -> dict:
    """One trial of fastvec-train with these config overrides, scored by fastvec-sweep's TrialWatch; wrap(watch), if
    given, is the watch run.train calls (e.g. one that hands TrialWatch a smoothed metric)."""
    from fastvec.trainer import run
    from fastvec.trainer import sweep as fastvec_sweep
    from fastvec.trainer.config import load_config

    plan = _plan(settings)
    config = fastvec_sweep.run_config(load_config(env, overrides), seed, plan)
    per_rollout = config["env"]["num_envs"] * config["train"]["horizon"]
    total = math.ceil(config["train"]["total_timesteps"] / per_rollout) * per_rollout
    watch = fastvec_sweep.TrialWatch(plan, trial, 0, total, _Quiet())
    summary = run.train(config, Path(tempfile.mkdtemp(prefix=f"trial{trial.number}-", dir=run_root)), dashboard=False,
                        watch=wrap(watch) if wrap else watch)
    close = getattr(summary.pop("trainer"), "close", None)
    if close is not None:
        close()
    gc.collect()  # the trainer's memory (the GPU arena) goes before the next trial's is allocated
    return {**watch.result({**summary, "seed": seed}), "startup_s": round(summary["startup"], 3)}


def compile_peer(env: str, params: dict, chunk_steps: int):
    """The peer's program for params, compiled and warmed up (not timed against the trial)."""
    import purejaxrl_ppo
    gymnax_id = {**CLASSIC, **MINATAR}[env][0]
    peer = purejaxrl_ppo.Peer(gymnax_id, purejaxrl_ppo.config_for(gymnax_id, peer_overrides(params)), chunk_steps,
                              eval_episodes=0)
    peer.warm_up()
    return peer


def peer_trial(peer, settings: dict, trial, seed: int) -> dict:
    """One trial of the peer, scored by fastvec-sweep's TrialWatch, which sees logs as run.py makes them: every
    trial_seconds / (2 x reports) seconds and every twentieth of the updates, each the mean return of the episodes
    finished since the previous log."""
    from fastvec.trainer import sweep as fastvec_sweep

    plan = _plan(settings)
    watch = fastvec_sweep.TrialWatch(plan, trial, 0, peer.num_updates * peer.steps_per_update, _Quiet())
    interval = min(1.0, settings["trial_seconds"] / (2 * settings["reports"]))
    log_every = max(1, peer.num_updates // 20)
    since = {"sum": 0.0, "episodes": 0, "last": 0.0, "update": 0}

    def on_update(steps, seconds, mean, count):
        since["update"] += 1
        if count:
            since["sum"] += mean * count
            since["episodes"] += count
        final = since["update"] >= peer.num_updates
        if not (seconds - since["last"] >= interval or final or since["update"] % log_every == 0):
            return watch(None, seconds, steps)
        n = since["episodes"]
        metrics = {"episodes": n, "episode_return": since["sum"] / n if n else None}
        since.update(sum=0.0, episodes=0, last=seconds)
        return watch(metrics, seconds, steps)

    res = peer.train(seed, eval_episodes=False, on_update=on_update)
    return {**watch.result({"startup": peer.compile_s + peer.warmup_s, "sps": res["sps"], "seed": seed}),
            "compile_s": round(peer.compile_s, 3), "warmup_s": round(peer.warmup_s, 3)}


def new_study(settings: dict, sampler_seed: int):
    """The study fastvec-sweep makes for these settings: multivariate TPE with constant liar from sampler_seed, and
    its median pruner."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    sampler = optuna.samplers.TPESampler(seed=sampler_seed, multivariate=True, constant_liar=True)
    pruner = optuna.pruners.MedianPruner(n_startup_trials=settings["prune_startup"],
                                         n_warmup_steps=int(settings["prune_warmup"] * settings["reports"]))
    return optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner)


def _tell(study, trial, state: str, value) -> None:
    import optuna
    if state == "COMPLETE":
        study.tell(trial, value)
    else:
        study.tell(trial, state=getattr(optuna.trial.TrialState, state))


def replay(study, distributions: dict, saved: list[dict], batch: int, trials: int, fixed: dict) -> list:
    """A saved sweep's trials told to a new study in the order they were asked (batches of `batch`) and told, their
    pruner reports first: the sampler's state and history are then the saved sweep's, so the sweep goes on as if
    never stopped. Returns the asked trials of a batch the saved sweep left part done."""
    told, pending = 0, []
    while told < len(saved):
        for trial in [study.ask(distributions) for _ in range(min(batch, trials - told))]:
            if told == len(saved):
                pending.append(trial)
                continue
            record = saved[told]
            if {**fixed, **trial.params} != record["params"]:
                raise SystemExit(f"the saved sweep's trial {record['number']} tried {record['params']}, this one's "
                                 f"sampler asks {trial.params}: it ran another space, sampler seed or batch; give a "
                                 "new output file")
            for step, value in sorted((int(k), v) for k, v in record.get("reports", {}).items()):
                trial.report(value, step)
            _tell(study, trial, record["state"], record.get("value"))
            told += 1
    return pending


def sweep_trials(distributions: dict, settings: dict, trials: int, batch: int, sampler_seed: int, prepare, train,
                 fixed: dict | None = None, timeout: float = 0.0, log=print, saved: list[dict] = (),
                 on_record=None) -> list[dict]:
    """The sweep both sides get: Optuna asks `batch` trials at a time from the shared space; prepare(params list)
    makes their programs (an exception for a point that cannot build), train(params, program, trial) trains each
    and returns its TrialWatch result, scored by fastvec-sweep's objective_values. saved: a stopped sweep's records,
    replayed first; on_record(records) after every trial (a killed process loses one trial at most). timeout: no
    batch starts after this many seconds (0: none), as fastvec-sweep's sweep.timeout. Returns every record."""
    import optuna
    from fastvec.trainer import sweep as fastvec_sweep
    from fastvec.trainer.config import ConfigError

    fixed = dict(fixed or {})
    study = new_study(settings, sampler_seed)
    records, start = list(saved), time.perf_counter()
    pending = replay(study, distributions, records, batch, trials, fixed)
    while len(records) < trials and not (timeout and time.perf_counter() - start >= timeout):
        asked = pending or [study.ask(distributions) for _ in range(min(batch, trials - len(records)))]
        pending = []
        programs = prepare([{**fixed, **t.params} for t in asked])
        for trial, program in zip(asked, programs):
            params = {**fixed, **trial.params}
            record = {"number": trial.number, "params": params}
            try:
                if isinstance(program, BaseException):
                    raise program
                result = train(params, program, trial)
            except (ConfigError, RuntimeError, ValueError, MemoryError) as err:  # this point cannot train
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                records.append({**record, "state": "FAIL", "error": f"{type(err).__name__}: {err}"[:500]})
                log(f"trial {trial.number}: FAIL {records[-1]['error']}")
                if on_record:
                    on_record(records)
                continue
            values = fastvec_sweep.objective_values(settings, [result])
            reports = study.get_trials(deepcopy=False)[trial.number].intermediate_values
            state = "PRUNED" if result["pruned"] else "FAIL" if values is None else "COMPLETE"
            _tell(study, trial, state, values[0] if values else None)
            records.append({**record, "state": state, "value": values[0] if values else None, **result,
                            "reports": {str(k): v for k, v in sorted(reports.items())}})
            log(f"trial {trial.number}: {state} value {values[0] if values else None} hit {result['hit_seconds']} "
                f"s, {result['seconds']} s trained, best log {result['best']}, startup {result['startup']:.2f} s")
            if on_record:
                on_record(records)
        programs = None
        gc.collect()
    return records


def best_record(records: list[dict]) -> dict | None:
    """The completed trial of the lowest objective (the first of equals), or None."""
    done = [r for r in records if r["state"] == "COMPLETE"]
    return min(done, key=lambda r: r["value"]) if done else None


def run_sweep(env: str, side: str, trials: int, trial_seconds: float, batch: int = 4, seed: int = 1,
              sampler_seed: int = 0, device: str = "cuda", fixed: dict | None = None, chunk_steps: int = 20_000,
              timeout: float = 0.0, log=print) -> dict:
    """Sweep env's shared space on one side; returns the study's record (every trial, the best). timeout: no batch
    starts after this many seconds (0: none), as fastvec-sweep's sweep.timeout."""
    gymnax_id, threshold = {**CLASSIC, **MINATAR}[env]
    if threshold is None:
        raise SystemExit(f"{env} has no return threshold: the time_to_target sweep needs one")
    fixed = dict(fixed or {})
    settings = sweep_settings(env, threshold, trial_seconds)
    distributions = space(env, fixed)
    start = time.perf_counter()
    run_root = Path(tempfile.mkdtemp(prefix=f"sweep-{env}-"))

    def prepare(points):
        if side != "peer":
            return [None] * len(points)
        with ThreadPoolExecutor(len(points)) as pool:  # the batch's programs compiled side by side
            futures = [pool.submit(compile_peer, env, params, chunk_steps) for params in points]
            return [f.exception() or f.result() for f in futures]

    def train(params, program, trial):
        return (peer_trial(program, settings, trial, seed) if side == "peer" else
                fastvec_trial(env, params, settings, trial, seed, device, run_root))

    records = sweep_trials(distributions, settings, trials, batch, sampler_seed, prepare, train, fixed, timeout, log)
    best = best_record(records)
    out = {"env": env, "gymnax_id": gymnax_id, "side": side, "threshold": threshold, "trials": trials,
           "trials_done": len(records), "timeout": timeout,
           "batch": batch, "seed": seed, "sampler_seed": sampler_seed, "device": device if side == "fastvec" else None,
           "settings": settings, "fixed": fixed, "space": {k: repr(v) for k, v in distributions.items()},
           "records": records, "wall_s": round(time.perf_counter() - start, 2),
           "startup_s_total": round(sum(r.get("startup", 0.0) for r in records), 2),
           "trained_s_total": round(sum(r.get("seconds", 0.0) for r in records), 2)}
    if side == "peer":
        out["compile_s_total"] = round(sum(r.get("compile_s", 0.0) for r in records), 2)
    if best is not None:
        out["best"] = {"number": best["number"], "value": best["value"], "params": best["params"],
                       "hit_seconds": best["hit_seconds"]}
        if side == "peer":
            out["best"]["overrides"] = peer_overrides(best["params"])
        else:  # with the config's own segment length, as the trial trained it
            from fastvec.trainer.config import load_config
            out["best"]["settings"] = fastvec_settings(best["params"], load_config(env)["train"]["bptt_horizon"])
    shutil.rmtree(run_root, ignore_errors=True)
    return out


def parse_fixed(items: list[str]) -> dict:
    """--fix NAME=VALUE items (JSON values) as {name: value}."""
    fixed = {}
    for item in items:
        name, _, text = item.partition("=")
        if not text:
            raise SystemExit(f"--fix {item!r}: use NAME=VALUE, e.g. num_envs=64")
        fixed[name] = json.loads(text.lower() if text in ("True", "False") else text)
    return fixed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env", help="a fastvec env with a threshold: " +
                        ", ".join(e for e, (_, t) in {**CLASSIC, **MINATAR}.items() if t is not None))
    parser.add_argument("--side", choices=["peer", "fastvec"], required=True)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--trial-seconds", type=float, default=2.0, help="training seconds per trial (both sides)")
    parser.add_argument("--batch", type=int, default=4, help="trials asked at once (the peer compiles them together)")
    parser.add_argument("--seed", type=int, default=1, help="the training seed of every trial")
    parser.add_argument("--sampler-seed", type=int, default=0)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="fastvec's trainer")
    parser.add_argument("--chunk-steps", type=int, default=20_000, help="the peer's env steps between host checks")
    parser.add_argument("--timeout", type=float, default=0.0, help="start no batch of trials after this many seconds")
    parser.add_argument("--fix", nargs="*", default=[], metavar="NAME=VALUE",
                        help="take NAME out of the space at VALUE (both sides alike), e.g. total_timesteps=20000")
    parser.add_argument("--out", default="", help="JSON path (default benchmarks/results/sweep_peer_ENV_SIDE.json)")
    args = parser.parse_args(argv)
    fixed = parse_fixed(args.fix)
    unknown = set(fixed) - set(space(args.env))
    if unknown:
        raise SystemExit(f"--fix {sorted(unknown)}: not in the space; choose from {', '.join(space(args.env))}")
    result = run_sweep(args.env, args.side, args.trials, args.trial_seconds, args.batch, args.seed,
                       args.sampler_seed, args.device, fixed, args.chunk_steps, args.timeout,
                       log=lambda line: print(line, file=sys.stderr, flush=True))
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"sweep_peer_{args.env}_{args.side}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    best = result.get("best")
    summary = "none completed" if best is None else f"trial {best['number']}: {best['value']:.3f}"
    print(f"{args.env} {args.side}: {args.trials} trials in {result['wall_s']} s; best {summary}; wrote {out}")


if __name__ == "__main__":
    main()
