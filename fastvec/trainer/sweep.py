"""`fastvec-sweep ENV [--sweep.key=value ...] [--section.key=SPEC ...]`: hyperparameter search over fastvec-train's
config with Optuna (a study in a storage that several processes or machines share, its samplers and pruners).
Trials train back to back in this process; the sweep directory collects each trial's config and metrics."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import fcntl
import gc
import json
import math
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from fastvec.trainer import checkpoint
from fastvec.trainer.config import ConfigError, load_config, to_toml
from fastvec.trainer.sweep_report import Progress, describe_trial, write_report
from fastvec.trainer.sweep_space import SPEC_FORMS, Space, parse_space, split_arguments

USAGE = f"""usage: fastvec-sweep ENV [--sweep.key=value ...] [--section.key=SPEC ...] [--config=PATH]
       fastvec-sweep ENV --report [--sweep.study=NAME] [--sweep.storage=URL]   (best.toml and plots; no trials)
       fastvec-sweep ENV --print-space

Search fastvec-train's config for ENV (a built-in env, PATH.h or gym:ID) with Optuna. Trials train one after
another in this process; start another process (here or on another machine, same --sweep.storage and
--sweep.study) to add workers to the same study.
  --section.key=SPEC    a search-space entry ({SPEC_FORMS}): --train.learning_rate=1e-4:1e-1:log
                        --policy.hidden=32,64,128 --train.bptt_horizon=16:64:16; one value (no ':' or ',')
                        fixes the key for every trial: --train.total_timesteps=200_000
  --sweep.key=value     a setting: objective (score | time_to_target | pareto), metric, target, trial_seconds,
                        trials, timeout, seeds, seed_reduce (mean | worst), sampler (tpe | nsga2 | random),
                        pruner (median | none), storage (an Optuna URL; default sqlite in the sweep dir), study,
                        dir, ...
                        (fastvec-train --help-config lists them with their meanings)
  --config=PATH         a TOML of config values under the command line (e.g. a best.toml to refine)
  --report              write best.toml and the plots from the study's trials so far, run no trial
  --print-space         print the resolved settings and search space, and exit
Defaults: the [sweep] section of fastvec/configs/ENV.toml (search space, objective, budget) over default.toml's.
The sweep dir gets trials/NNNN/ (trial.toml: the trial's config, config.toml, metrics.jsonl, trial.json),
trials.jsonl, best.toml (run it: fastvec-train ENV --config=SWEEP_DIR/best.toml) and plots/. docs/sweeps.md."""

DIRECTIONS = {"score": ["maximize"], "time_to_target": ["minimize"], "pareto": ["maximize", "minimize"]}
FAILURES_IN_A_ROW = 5  # trials whose config cannot train, one after another, before the sweep stops


def layer(*parts: dict) -> dict:
    """Config overrides {section: {name: value}} merged, later parts over earlier ones."""
    out: dict = {}
    for part in parts:
        for section, values in part.items():
            out.setdefault(section, {}).update(values)
    return out


@dataclasses.dataclass
class Plan:
    """What a sweep runs: ENV, the overrides every trial starts from (a --config file, the sweep's settings, the
    fixed entries), the search space, the resolved base config and the study's place."""

    env: str
    overrides: dict
    space: Space
    base: dict
    sweep_dir: Path
    storage: str
    study: str

    @property
    def settings(self) -> dict:
        return self.base["sweep"]

    @property
    def multi(self) -> bool:
        return self.settings["objective"] == "pareto"

    def trial_config(self, params: dict) -> dict:
        return load_config(self.env, layer(self.overrides, self.space.overrides(params, only=set())))


def make_plan(env: str, settings: dict, entries: dict, config_path: str | None) -> Plan:
    """The Plan for ENV: config defaults < ENV.toml < the values its [sweep] section fixes < --config < the command
    line. The search space is ENV.toml's (and --config's) [sweep] entries with the command line's over them; a
    searched key is searched whatever the layers below say. Problems are ConfigErrors."""
    from fastvec.trainer.cli import config_file
    given = config_file(config_path, env) if config_path else {}
    first = load_config(env, layer(given, {"sweep": settings}))
    name = first["env"]["name"]
    listed = {k: v for k, v in first["sweep"].items() if "." in k}
    if not first["sweep"]["env_space"]:  # only --config's entries and the command line's
        listed = {k: v for k, v in given.get("sweep", {}).items() if "." in k}
    space = parse_space({**listed, **entries}, name)
    # a value that [sweep] fixes sits under --config's, one that the command line fixes over it
    listed_fixed = set(space.fixed) - set(entries)
    overrides = layer(space.overrides(only=listed_fixed), given, {"sweep": settings},
                      space.overrides(only=set(entries)))
    base = load_config(env, overrides)
    s = base["sweep"]
    if s["objective"] == "time_to_target" and s["trial_seconds"] <= 0:
        raise ConfigError("sweep.objective=time_to_target needs a time budget per trial: --sweep.trial_seconds=SECONDS "
                          "(a trial that misses the target then scores trial_seconds x (1 + its shortfall))")
    if s["trials"] == 0 and s["timeout"] == 0:
        raise ConfigError("sweep.trials=0 and sweep.timeout=0 would sweep forever; set --sweep.trials=N or "
                          "--sweep.timeout=SECONDS")
    if base["train"]["gpus"] > 1:
        raise ConfigError(f"train.gpus={base['train']['gpus']}: a sweep trains each trial on one GPU; run one "
                          f"fastvec-sweep process per GPU on the same study (CUDA_VISIBLE_DEVICES=i, docs/sweeps.md)")
    study = s["study"] or f"{name.replace(':', '-').replace('/', '-')}-{s['objective']}"
    sweep_dir = Path(s["dir"] or Path("sweeps") / name.replace(":", "-").replace("/", "-") / study)
    storage = s["storage"] or f"sqlite:///{(sweep_dir / 'study.db').resolve()}"
    return Plan(env, overrides, space, base, sweep_dir, storage, study)


def check_metric(plan: Plan) -> None:
    """sweep.metric is episode_return or a statistic the env reports (a one-env batch says which)."""
    from fastvec.trainer import run
    metric = plan.settings["metric"]
    if metric == "episode_return":
        return
    batch = run.make_batch(plan.base, 1)
    try:
        names = list(batch.env.stat_names)
    finally:
        run.close_batches([batch])
    if metric not in names:
        raise ConfigError(f"sweep.metric={metric!r}: {plan.base['env']['name']} logs episode_return"
                          f"{', ' + ', '.join(names) if names else ''}; use one of them")


# ------------------------------------------------------------------------------------------------
# THE STUDY


def import_optuna():
    try:
        import optuna
    except ImportError:
        raise ImportError("fastvec-sweep needs Optuna: pip install 'fastvec[sweep]' (or pip install optuna)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def open_study(plan: Plan, adopt: bool = False):
    """The Optuna study (created, or joined when the storage holds it), with the sweep's sampler and pruner. A
    study made for other settings (objective, metric, target, trial_seconds, seed_reduce) is refused, or with adopt
    (--report, which runs no trial) its settings replace the plan's."""
    optuna = import_optuna()
    s = plan.settings
    seed = None if s["sampler_seed"] < 0 else s["sampler_seed"]
    if s["sampler"] == "nsga2":
        sampler = optuna.samplers.NSGAIISampler(seed=seed)
    elif s["sampler"] == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)
    if s["pruner"] == "median" and not plan.multi:
        pruner = optuna.pruners.MedianPruner(n_startup_trials=s["prune_startup"],
                                             n_warmup_steps=int(s["prune_warmup"] * s["reports"]))
    else:
        pruner = optuna.pruners.NopPruner()
    try:
        with storage_lock(plan.storage):
            study = create_study(optuna, plan, sampler, pruner, load=adopt)
    except KeyError:  # load_study's: no such study
        raise ConfigError(f"no study {plan.study!r} in {plan.storage}; name it with --sweep.study (and its "
                          f"--sweep.storage)") from None
    except ValueError as err:
        raise ConfigError(f"study {plan.study!r} in {plan.storage}: {err}; use another --sweep.study") from None
    except Exception as err:  # the storage's own errors (a bad URL, an unreachable database, a missing driver)
        if isinstance(err, (ImportError, KeyboardInterrupt)):
            raise
        raise ConfigError(f"sweep.storage={plan.storage!r}: {type(err).__name__}: {str(err).splitlines()[0]}") from None
    made_for = {"env": plan.base["env"]["name"], "objective": s["objective"], "metric": s["metric"],
                "target": s["target"], "trial_seconds": s["trial_seconds"], "seed_reduce": s["seed_reduce"]}
    saved = {k: study.user_attrs[k] for k in made_for if k in study.user_attrs}
    differs = {k: (v, made_for[k]) for k, v in saved.items() if v != made_for[k]}
    if adopt and "env" not in differs:
        plan.settings.update(saved)
        plan.settings.pop("env", None)
    elif differs:
        listed = ", ".join(f"{k} {old!r} (here {new!r})" for k, (old, new) in differs.items())
        raise ConfigError(f"study {plan.study!r} in {plan.storage} was made for {listed}; its trials would not "
                          f"compare with this sweep's: join it with the same settings, or use another --sweep.study")
    for key, value in made_for.items():
        if key not in saved:
            study.set_user_attr(key, value)
    return study


@contextlib.contextmanager
def storage_lock(url: str):
    """For a SQLite storage, an exclusive lock on DB.lock beside its file while this process opens the study:
    processes started together would otherwise race to create the database's tables."""
    if not url.startswith("sqlite:///") or url == "sqlite:///:memory:":
        yield
        return
    path = Path(url[len("sqlite:///"):] + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def create_study(optuna, plan: Plan, sampler, pruner, load: bool = False, attempts: int = 3):
    """optuna.create_study(load_if_exists=True) on the plan's storage (with load, load_study: the study must exist,
    whatever its directions); a database server's transient refusal (several processes creating its tables at
    once) is retried."""
    storage = plan.storage
    if storage.startswith("sqlite:///"):  # several processes on one SQLite file wait for its lock, not fail at once
        storage = optuna.storages.RDBStorage(storage, engine_kwargs={"connect_args": {"timeout": 60}})
    for attempt in range(attempts):
        try:
            if load:
                return optuna.load_study(study_name=plan.study, storage=storage, sampler=sampler, pruner=pruner)
            return optuna.create_study(storage=storage, sampler=sampler, pruner=pruner, study_name=plan.study,
                                       directions=DIRECTIONS[plan.settings["objective"]], load_if_exists=True)
        except Exception as err:
            from sqlalchemy.exc import DBAPIError
            if attempt == attempts - 1 or isinstance(storage, optuna.storages.RDBStorage) \
                    or not isinstance(err, DBAPIError):
                raise
            time.sleep(1.0 + attempt)


# ------------------------------------------------------------------------------------------------
# ONE TRIAL


class TrialWatch:
    """One seed's run of a trial as run.train's watch: records the metric at each log, stops the run when the
    trial's time budget is spent or the target is reached (time_to_target), and reports to the pruner at the first
    log after every 1/reports of the budget (training seconds for a time budget, else steps; seed i's reports follow
    seed i-1's)."""

    def __init__(self, plan: Plan, trial, seed_index: int, total_steps: int, progress):
        s = plan.settings
        self.plan, self.trial, self.progress = plan, trial, progress
        self.metric, self.budget, self.reports = s["metric"], s["trial_seconds"], s["reports"]
        self.target = s["target"] if s["objective"] == "time_to_target" else None
        self.total_steps, self.offset = total_steps, seed_index * self.reports
        self.prunes = s["pruner"] != "none" and not plan.multi
        self.logs: list[tuple[float, int, float]] = []  # (training seconds, steps, metric) of each log with episodes
        self.reported, self.pruned, self.hit = 0, False, None
        self.seconds, self.steps = 0.0, 0

    def __call__(self, metrics, seconds: float, steps: int) -> bool:
        self.seconds, self.steps = seconds, steps
        if metrics is not None and metrics.get(self.metric) is not None:
            self.logs.append((seconds, steps, float(metrics[self.metric])))
            self.progress.running(self.trial.number, seconds, steps, self.logs[-1][2])
            if self.target is not None and self.logs[-1][2] >= self.target:
                self.hit = (seconds, steps)
                if self.prunes:  # at every later point of the budget it stands at the target, for the pruner's
                    for step in range(self.reported + 1, self.reports + 1):  # medians there
                        self.trial.report(self.target - self.logs[-1][2], self.offset + step)
                return True
        spent = bool(self.budget) and seconds >= self.budget
        progress = seconds / self.budget if self.budget else steps / self.total_steps
        due = min(int(progress * self.reports), self.reports)
        # reports go to the pruner only at a log, where the trainer has just waited for the GPU: the run's clock
        # leaves out this call's time, exact while nothing runs on the device
        if not (self.prunes and self.logs) or metrics is None or due <= self.reported:
            return spent
        latest = self.logs[-1][2]
        value = self.target - latest if self.target is not None else latest  # the study's direction: lower is better
        for step in range(self.reported + 1, due + 1):  # for time_to_target: the distance to the target
            self.trial.report(value, self.offset + step)
        self.reported = due
        self.pruned = not spent and bool(self.trial.should_prune())
        return spent or self.pruned

    def result(self, summary: dict) -> dict:
        """This seed's figures: training seconds and steps, start-up, the final score (the metric's mean over the
        logs of the last tenth of the run), the best log, when the target was reached, SPS."""
        end = self.seconds
        tail = [value for seconds, _, value in self.logs if seconds >= 0.9 * end] or [v for *_, v in self.logs[-1:]]
        return {"seed": summary.get("seed"), "seconds": round(end, 4), "steps": self.steps,
                "startup": round(summary["startup"], 4), "sps": round(summary["sps"], 1),
                "score": sum(tail) / len(tail) if tail else None,
                "best": max((v for *_, v in self.logs), default=None), "logs": len(self.logs),
                "hit_seconds": self.hit and round(self.hit[0], 4), "hit_steps": self.hit and self.hit[1],
                "pruned": self.pruned}


def objective_values(settings: dict, results: list[dict]) -> list[float] | None:
    """The trial's objective values from its seeds' results, or None when a seed logged no episode."""
    if any(r["score"] is None for r in results):
        return None
    reduce = settings["seed_reduce"]
    score = reduce_seeds([r["score"] for r in results], reduce, min)
    if settings["objective"] == "score":
        return [score]
    if settings["objective"] == "pareto":
        return [score, reduce_seeds([r["seconds"] for r in results], reduce, max)]
    target, budget = settings["target"], settings["trial_seconds"]
    times = []
    for r in results:
        shortfall = min(max((target - r["best"]) / max(abs(target), 1e-9), 0.0), 1.0)
        times.append(r["hit_seconds"] if r["hit_seconds"] is not None else budget * (1 + shortfall))
    return [reduce_seeds(times, reduce, max)]


def reduce_seeds(values, seed_reduce: str, worst=min) -> float | None:
    """A trial's seeds' figures as one (None values skipped; None if none is left): their mean, or with
    sweep.seed_reduce = worst the worst of them (`worst`: min for a score, max for seconds)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return worst(values) if seed_reduce == "worst" else sum(values) / len(values)


def run_config(config: dict, seed: int, plan: Plan) -> dict:
    """A trial's config as its run trains it: the seed, logs often enough for the pruner and the target's time,
    no checkpoint but the final one (kept only with sweep.keep_checkpoints), no stop at train.target_return."""
    config = copy.deepcopy(config)
    train, s = config["train"], plan.settings
    train["seed"] = seed
    if s["trial_seconds"] > 0:
        train["log_interval"] = min(train["log_interval"], s["trial_seconds"] / (2 * s["reports"]))
    train["checkpoint_interval"], train["checkpoint_seconds"] = 1 << 40, 0.0
    train["stop_at_target"] = False  # a trial trains its budget: the sweep's objective, not the env's target, ends it
    return config


def run_trial(plan: Plan, trial, progress) -> dict:
    """Train one trial (each of its seeds) and return its record: state, values, params, per-seed results."""
    from fastvec.trainer import run
    trial_dir = plan.sweep_dir / "trials" / f"{trial.number:04d}"
    record = {"trial": trial.number, "params": dict(trial.params), "host": socket.gethostname(), "pid": os.getpid()}
    try:
        config = plan.trial_config(trial.params)
    except ConfigError as err:
        return {**record, "state": "FAIL", "error": str(err)}
    runnable = runnable_toml(config, f"fastvec-sweep {plan.env}: study {plan.study}, trial {trial.number}")
    trial.set_user_attr("config", runnable)
    with run.file_op("write", trial_dir / "trial.toml"):
        trial_dir.mkdir(parents=True, exist_ok=True)
        checkpoint.atomic_write_text(trial_dir / "trial.toml", runnable)
    results, seeds = [], plan.settings["seeds"]
    for index in range(seeds):
        seed = config["train"]["seed"] + index
        seed_config = run_config(config, seed, plan)
        steps_per_rollout = seed_config["env"]["num_envs"] * seed_config["train"]["horizon"]
        total = math.ceil(seed_config["train"]["total_timesteps"] / steps_per_rollout) * steps_per_rollout
        watch = TrialWatch(plan, trial, index, total, progress)
        run_dir = trial_dir if seeds == 1 else trial_dir / f"seed-{seed}"
        try:
            summary = run.train(seed_config, run_dir, dashboard=False, watch=watch)
        except ConfigError as err:  # e.g. a minibatch larger than the sampled rollout
            return {**record, "state": "FAIL", "error": str(err), "results": results}
        summary.pop("trainer", None)
        gc.collect()  # the trainer's memory (on the GPU, its arena) goes before the next trial's is allocated
        results.append(watch.result({**summary, "seed": seed}))
        if not plan.settings["keep_checkpoints"]:
            shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        if summary["interrupted"]:
            return {**record, "state": "FAIL", "error": "interrupted", "results": results, "interrupted": True}
        if watch.pruned:
            return {**record, "state": "PRUNED", "results": results}
    values = objective_values(plan.settings, results)
    if values is None:
        return {**record, "state": "FAIL", "results": results,
                "error": f"no episode finished, so no {plan.settings['metric']} was logged; raise the budget"}
    return {**record, "state": "COMPLETE", "values": values, "results": results}


def runnable_toml(config: dict, title: str) -> str:
    """A config as the TOML fastvec-train ENV --config=PATH trains as is (every section but [sweep])."""
    env = config["env"]["name"]
    head = f"# {title}\n# train it: fastvec-train {env} --config=THIS_FILE\n"
    return head + to_toml({section: values for section, values in config.items() if section != "sweep"})


def finish_trial(study, trial, record: dict, sweep_dir: Path, seed_reduce: str = "mean") -> None:
    """Tell the study the trial's outcome and write trial.json and a trials.jsonl line (every process of the
    sweep dir appends whole lines; trial numbers come from the storage, so they never collide). The trial's
    seconds and score (the Pareto plot's) combine its seeds as the objective does (sweep.seed_reduce)."""
    from optuna.trial import TrialState
    summary = {k: v for k, v in record.items() if k != "interrupted"}
    results = record.get("results", [])
    figures = {"seconds": reduce_seeds([r["seconds"] for r in results], seed_reduce, max),
               "score": reduce_seeds([r["score"] for r in results], seed_reduce, min),
               **{k: reduce_seeds([r[k] for r in results], "mean") for k in ("steps", "startup")}}
    for key, value in figures.items():
        trial.set_user_attr(key, value)
    trial.set_user_attr("hit", bool(record.get("results")) and all(r["hit_seconds"] is not None
                                                                    for r in record["results"]))
    if record["state"] == "COMPLETE":
        study.tell(trial, record["values"])
    else:
        if record.get("error"):
            trial.set_user_attr("error", record["error"][:500])
        study.tell(trial, state=TrialState.PRUNED if record["state"] == "PRUNED" else TrialState.FAIL)
    trial_dir = sweep_dir / "trials" / f"{trial.number:04d}"
    trial_dir.mkdir(parents=True, exist_ok=True)
    checkpoint.atomic_write_text(trial_dir / "trial.json", json.dumps(summary, indent=1) + "\n")
    with open(sweep_dir / "trials.jsonl", "a") as log:
        log.write(json.dumps(summary) + "\n")


# ------------------------------------------------------------------------------------------------
# THE COMMAND


def main(argv: list[str] | None = None) -> int:
    """fastvec-sweep. A bad setting, space or storage is one line, `fastvec-sweep: error: ...`, exit status 2."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv)
    except (ConfigError, checkpoint.RunFileError, checkpoint.CheckpointError, ImportError) as err:
        message = str(err)
    except KeyboardInterrupt:
        print("fastvec-sweep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`fastvec-sweep --help | head`): stop quietly, as a shell tool does
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    print(f"fastvec-sweep: error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def _main(argv: list[str]) -> int:
    flags = {arg for arg in argv if arg in ("-h", "--help", "--report", "--print-space")}
    config_path, rest, env = None, [], None
    args = iter(argv)
    for arg in args:
        if arg in flags:
            continue
        if arg == "--config" or arg.startswith("--config="):
            config_path = arg.partition("=")[2] if "=" in arg else next(args, None)
            if not config_path:
                raise ConfigError("--config needs a value: --config=PATH")
        elif not arg.startswith("-") and env is None:
            env = arg
        else:
            rest.append(arg)
    if flags & {"-h", "--help"} or env is None:
        print(USAGE)
        return 0 if flags & {"-h", "--help"} else 2
    settings, entries = split_arguments(rest)
    plan = make_plan(env, settings, entries, config_path)
    if "--print-space" in flags:
        print(f"fastvec-sweep {plan.env}: study {plan.study} in {plan.storage}, sweep dir {plan.sweep_dir}")
        print(to_toml({"sweep": {k: v for k, v in plan.settings.items() if "." not in k}}).split("\n", 1)[1]
              .rsplit("\n# end", 1)[0].rstrip())
        print("search space:\n  " + "\n  ".join(plan.space.describe() or ["(empty: give --section.key=lo:hi)"]))
        print("fixed for every trial:\n  " + "\n  ".join(f"{k} = {v!r}" for k, v in plan.space.fixed.items())
              if plan.space.fixed else "fixed for every trial: (none)")
        return 0
    study = open_study(plan, adopt="--report" in flags)
    if "--report" in flags:
        for line in write_report(plan, study):
            print(line)
        return 0
    if not plan.space.distributions:
        raise ConfigError(f"the search space is empty: give entries as --section.key=SPEC ({SPEC_FORMS}), or in "
                          f"the [sweep] section of {plan.base['env']['name']}.toml")
    check_metric(plan)
    return sweep(plan, study, Progress(plan, study))


def sweep(plan: Plan, study, progress) -> int:
    """Run trials until sweep.trials or sweep.timeout (no trial starts after it), then write the report."""
    s = plan.settings
    start, done, failed_in_a_row, code, trial = time.perf_counter(), 0, 0, 0, None
    try:
        while (not s["trials"] or done < s["trials"]) and (not s["timeout"] or time.perf_counter() - start < s["timeout"]):
            trial = study.ask(plan.space.distributions)
            record = run_trial(plan, trial, progress)
            finish_trial(study, trial, record, plan.sweep_dir, plan.settings["seed_reduce"])
            trial, done = None, done + 1
            progress.finished(describe_trial(plan, record), done, time.perf_counter() - start)
            if record.get("interrupted"):
                progress.note("fastvec-sweep: stopped by Ctrl-C or SIGTERM; the trial in progress is marked failed")
                code = 130
                break
            failed_in_a_row = failed_in_a_row + 1 if record["state"] == "FAIL" else 0
            if failed_in_a_row >= FAILURES_IN_A_ROW:
                raise ConfigError(f"{failed_in_a_row} trials in a row failed; the last: {record.get('error')}")
    except KeyboardInterrupt:  # a second Ctrl-C inside a trial, or one between trials
        if trial is not None:
            from optuna.trial import TrialState
            study.tell(trial, state=TrialState.FAIL)
        progress.note("fastvec-sweep: interrupted; the trial in progress is marked failed")
        code = 130
    finally:
        progress.close()
    for line in write_report(plan, study):
        print(line)
    return code


if __name__ == "__main__":
    sys.exit(main())
