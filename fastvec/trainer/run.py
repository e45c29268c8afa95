"""What fastvec-train does once its arguments are parsed: train (with logs, checkpoints, resume) and
evaluate a checkpoint (mean return and env stats, optionally a GIF/MP4 of one episode).

What a stop costs: a checkpoint comes every train.checkpoint_interval updates and every
train.checkpoint_seconds of training, so kill -9 loses at most the smaller of the two (plus the update in
progress). SIGTERM and SIGINT (Ctrl-C) stop at the next update boundary and save a checkpoint there, counting
only the steps the updates trained on; a second Ctrl-C stops at once (a save in progress first), keeping the
last checkpoint. A NaN or infinite loss or weight stops the run (TrainingDiverged); no such weights are saved.
--resume takes the newest valid checkpoint by update number (checkpoint.newest_valid), cutting metrics.jsonl back."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

from fastvec import native
from fastvec.trainer import checkpoint
from fastvec.trainer.config import ConfigError, declared_by_env, env_kind, to_toml
from fastvec.trainer.dashboard import Dashboard
from fastvec.trainer.env_batch import make_batch
from fastvec.trainer.env_defaults import describe
# default_run_dir, file_op and repair_metrics stay reachable as run.NAME (sweep.py, tests, benchmarks use them)
from fastvec.trainer.run_dir import (TrainingDiverged, claim, default_run_dir, env_source_record,  # noqa: F401
                                     file_op, repair_metrics, resume_state, warn_if_source_changed)
from fastvec.trainer.target import Target, target_line


def cuda_trainer_available() -> bool:
    """True when the fused CUDA trainer (fastvec.trainer.cuda) is installed and sees a GPU."""
    try:
        from fastvec.trainer import cuda as cuda_trainer
    except ImportError:
        return False
    return bool(getattr(cuda_trainer, "available", lambda: False)())


def resolve_device(requested: str) -> str:
    """'auto' becomes 'cuda' when the CUDA trainer can run, else 'cpu'; 'cuda' without it is an error."""
    if requested == "auto":
        if cuda_trainer_available():
            return "cuda"
        if shutil.which("nvidia-smi") and importlib.util.find_spec("pycuda") is None:
            print("fastvec-train: an NVIDIA GPU seems present but PyCUDA is not installed, so this run uses the CPU; "
                  "pip install 'fastvec[cuda]' to train on the GPU", file=sys.stderr)
        return "cpu"
    if requested == "cuda" and not cuda_trainer_available():
        try:
            from fastvec.trainer import cuda  # noqa: F401
        except ImportError:
            raise ConfigError("train.device=cuda: this fastvec has no CUDA trainer; use --train.device=cpu") from None
        raise ConfigError("train.device=cuda: the CUDA trainer needs an NVIDIA GPU and PyCUDA "
                          "(pip install 'fastvec[cuda]'), and none answered here; use --train.device=cpu")
    return requested


def close_batches(batches) -> None:
    """Close the batches that hold resources (a GymBatch's envs, an async one's subprocesses); CpuBatches need not."""
    for batch in batches:
        close = getattr(batch, "close", None)
        if close is not None:
            close()


def resolve_env_device(config: dict, device: str) -> None:
    """Record in config the device the run uses (train.device, never "auto") and where its env steps
    (train.env_device): the CPU trainer always steps CPU envs; the CUDA trainer steps Gymnasium envs on the
    host (they have no GPU build), a built-in or user's env file (self-play's games too) where env_device says."""
    train = config["train"]
    train["device"] = device
    kind = env_kind(config)
    if device == "cpu" or kind == "gym":
        train["env_device"] = "cpu"


def make_trainer(config: dict):
    """The trainer for config's device; with selfplay.enabled its batch is the learner's seats of a
    multi-agent batch and `trainer.selfplay` holds the pool and the evaluations (selfplay.py). On the
    CUDA trainer, train.env_device=cpu steps the env on the CPU (host environments; self-play's opponents
    then act with NumPy beside it), "cuda" steps it, and self-play's opponents, in the rollout graph."""
    requested = config["train"]["device"]
    device = resolve_device(requested)
    # The config records the device used, not "auto" (config.toml, checkpoints); Gymnasium envs step on the host.
    resolve_env_device(config, device)
    batch = make_batch(config)
    batches = [batch]
    try:
        from fastvec.trainer.numpy_trainer import NumpyTrainer, cuda_unsupported, make_policy_spec
        spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, getattr(batch.env, "spaces", None))
        if device == "cuda" and (why := cuda_unsupported(spec, config)):
            if requested != "auto":
                raise ConfigError(f"train.device=cuda: {why}; train {config['env']['name']} with --train.device=cpu")
            print(f"fastvec-train: the CUDA trainer cannot train this run ({why}), so it trains on the CPU",
                  file=sys.stderr)
            device = "cpu"
            resolve_env_device(config, device)
            close_batches(batches)
            batch = make_batch(config)
            batches = [batch]
        league = None
        if config["selfplay"]["enabled"]:
            from fastvec.trainer.selfplay import SelfPlay
            league = SelfPlay(config)
            batch = league.wrap(batch, spec, on_gpu=device == "cuda" and config["train"]["env_device"] == "cuda")
        if device == "cuda":  # pragma: no cover - needs a GPU (tests/trainer/test_cuda.py)
            from fastvec.trainer.cuda.trainer import CudaTrainer
            # Self-play's one SelfPlayBatch cannot be split, so it is one env group; a user's env or a
            # Gymnasium env on the host gets its groups' batches here (the CUDA trainer builds built-in ones).
            host_batches = [batch] if league is not None and config["train"]["env_device"] == "cpu" else None
            if env_kind(config) != "builtin" and config["train"]["env_device"] == "cpu":
                from fastvec.trainer.cuda.host_envs import env_ranges
                ranges = env_ranges(batch.num_envs, config["train"]["env_groups"], None)
                host_batches = [batch] if len(ranges) == 1 else [make_batch(config, hi - lo) for lo, hi in ranges]
                batches += host_batches[1:] if len(ranges) == 1 else host_batches
            trainer = CudaTrainer(config, batch, spec, host_batches)
        else:
            trainer = NumpyTrainer(config, batch, spec)
    except BaseException:
        close_batches(batches)
        raise
    trainer.selfplay = league
    trainer.env_batches = batches  # closed when the run ends (close_batches)
    return trainer


def blas_threads(count: int):
    """A context limiting NumPy's BLAS to `count` threads (0: no limit); see train.blas_threads."""
    if count <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(count, user_api="blas")


def open_loggers(config: dict, run_dir: Path, resume: bool):
    """The optional logger outputs beside metrics.jsonl (loggers.RunLoggers: TensorBoard, Weights & Biases), or
    None when neither train.tensorboard nor train.wandb_project asks for one (loggers.py is then never imported)."""
    if not (config["train"]["tensorboard"] or config["train"]["wandb_project"]):
        return None
    from fastvec.trainer.loggers import RunLoggers
    return RunLoggers(config, run_dir, resume)


def train(config: dict, run_dir: Path, resume: bool = False, dashboard: bool | None = None, watch=None,
          overwrite: bool = False) -> dict:
    """Train per config, writing RUN_DIR/config.toml, metrics.jsonl and checkpoints/. With resume, load the
    newest checkpoint in run_dir and continue; without, run_dir must not hold a run already unless overwrite
    (run_dir.claim). Returns a summary (last metrics, checkpoint path, ...).
    watch(metrics or None, training seconds, trained steps), called after every update (with the log's metrics
    when it logged), ends the run there when it returns True: fastvec-sweep's pruning and trial budgets. Its calls'
    own time is not training time: not in the seconds it is given, the logs' times or the summary's."""
    from fastvec.trainer import distributed
    launched = distributed.launched()
    # A launcher's ranks each call this; rank 0 alone writes run_dir (the others train in scratch directories).
    release = claim(run_dir, config, overwrite) if not resume and (not launched or distributed.discover().rank == 0) \
        else None
    try:
        if config["train"]["gpus"] > 1 or launched:  # one process per GPU, or one rank of a launcher's job
            return distributed.train(config, run_dir, resume, dashboard, train_one_process)
        return train_one_process(config, run_dir, resume, dashboard, watch)
    except BaseException:
        if release is not None:
            release()
        raise


def train_one_process(config: dict, run_dir: Path, resume: bool, dashboard: bool | None, watch=None) -> dict:
    """The training loop in this process (alone, or as one rank with its process group active)."""
    # NumPy's overflow warnings would bury the one line that reports a divergence (_train_loop checks finiteness).
    with blas_threads(config["train"]["blas_threads"]), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if watch is None:  # the four-argument call that stand-ins for _train (tests/trainer/test_distributed.py) take
            return _train(config, run_dir, resume, dashboard)
        return _train(config, run_dir, resume, dashboard, watch)


def rank_main(argv: list[str] | None = None) -> int:
    """The entry point of one rank that distributed.spawn starts (`--train.gpus=N`)."""
    from fastvec.trainer import distributed
    return distributed.main(argv, train_one_process)


class StopRequest:
    """SIGTERM and SIGINT while training: the first asks the loop to stop at the next update boundary, where it
    saves a checkpoint (`signum` says which came); a second SIGINT after a first SIGINT (a second Ctrl-C) stops
    at once (KeyboardInterrupt), except during a checkpoint save (`saving`), which it lets finish: the loop stops
    right after it. A SIGINT after a SIGTERM is the same stop (a wrapper that forwards Ctrl-C as SIGTERM sends
    both). A signal that is ignored (SIG_IGN: a rank that leaves Ctrl-C to rank 0) stays ignored; sigterm=False
    leaves SIGTERM as it is (the ranks other than rank 0, which the launcher stops)."""

    def __init__(self):
        self.signum: int | None = None
        self.previous: dict = {}
        self.saving = False

    def install(self, sigterm: bool = True) -> "StopRequest":
        if threading.current_thread() is not threading.main_thread():
            return self  # signal handlers belong to the main thread; Ctrl-C then stops at once
        for sig in (signal.SIGINT, signal.SIGTERM) if sigterm else (signal.SIGINT,):
            previous = signal.getsignal(sig)
            if previous is not signal.SIG_IGN:
                self.previous[sig] = previous
                signal.signal(sig, self.handle)
        return self

    def handle(self, signum, frame) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT and not self.saving:
            raise KeyboardInterrupt
        self.signum = self.signum or signum

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)
        self.previous = {}


def _train(config: dict, run_dir: Path, resume: bool, dashboard: bool | None, watch=None) -> dict:
    made = time.perf_counter()
    trainer = make_trainer(config)
    try:
        return _train_with(trainer, made, config, Path(run_dir), resume, dashboard, watch)
    finally:
        close_batches(getattr(trainer, "env_batches", []))


def _train_with(trainer, made: float, config: dict, run_dir: Path, resume: bool, dashboard: bool | None,
                watch=None) -> dict:
    """The training loop around a made trainer (make_trainer): config.toml, metrics.jsonl (and the optional
    loggers, closed on every way out), checkpoints."""
    env = config["env"]["name"]
    startup = time.perf_counter() - made  # kernels compiled (or loaded from the disk cache), arena, env reset
    if hasattr(trainer, "describe") and getattr(trainer, "rank", 0) == 0:
        print(trainer.describe(), file=sys.stderr)  # the paths chosen for this config (stderr: stdout stays the log)
    elapsed_before = resume_state(trainer, run_dir, env) if resume else 0.0
    league = getattr(trainer, "selfplay", None)
    if league is not None:
        league.start(trainer, run_dir)
    with file_op("create the run directory", run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
    with file_op("write", run_dir / "config.toml"):
        checkpoint.atomic_write_text(run_dir / "config.toml", to_toml(config))
    if not resume and watch is None and getattr(trainer, "rank", 0) == 0:  # a sweep's trials: its own report
        for line in describe(config, declared_by_env(env, config["env"])):
            print(f"fastvec-train: {line}")  # what the run is, as the log's first lines (stderr: its problems)
    # Rank 0 alone logs (the other ranks of a multi-GPU run would open the same W&B run and more event files).
    loggers = open_loggers(config, run_dir, resume) if getattr(trainer, "rank", 0) == 0 else None
    try:
        return _train_loop(trainer, startup, elapsed_before, league, config, run_dir, dashboard, loggers, watch)
    finally:
        if loggers is not None:
            loggers.close()


def _train_loop(trainer, startup: float, elapsed_before: float, league, config: dict, run_dir: Path,
                dashboard: bool | None, loggers, watch=None) -> dict:
    env = config["env"]["name"]
    source_record = env_source_record(config)  # a user env file's path and sha256, as trained on

    tc = config["train"]
    steps_per_update = trainer.horizon * trainer.batch.num_envs * getattr(trainer, "world_size", 1)  # all ranks
    num_updates = math.ceil(tc["total_timesteps"] / steps_per_update)
    log_every = max(1, num_updates // 20)
    if hasattr(trainer, "warm_up"):  # CUDA: the eager first iteration and the graph captures, as start-up
        startup += trainer.warm_up(num_updates)
    board = Dashboard(f"fastvec-train {env} ({trainer.device}, {trainer.spec.kind} {trainer.spec.hidden}x"
                      f"{trainer.spec.layers}, {trainer.layout.size:,} params) -> {run_dir}",
                      num_updates * steps_per_update, enabled=dashboard)
    stat_names = trainer.batch.env.stat_names
    target = Target(tc, stat_names)
    # Several ranks would each decide on their own episodes (and stop apart), so only one process stops at it.
    stop_at_target = tc["stop_at_target"] and getattr(trainer, "world_size", 1) == 1
    reached_stop = False
    start_time = time.perf_counter()
    eval_before = trainer.timing.get("selfplay_eval", 0.0)  # self-play evaluations: wall time, not training time
    # The steps the updates trained on: trainer.global_step also counts what rollout() collected for updates
    # still to come (with train.async, one rollout ahead), which a checkpoint must not count.
    trained_steps = start_step = trainer.global_step
    last_log = last_save = start_time
    paused = 0.0  # seconds spent in watch() (a sweep's pruner and its database): not training time
    saved_update = trainer.update_index  # the update of the newest checkpoint
    replaceable = None  # this run's newest checkpoint by time (off checkpoint_interval): the next one replaces it
    update_totals: dict[str, float] = {}
    update_count = 0
    last_metrics: dict = {}
    recent_returns: list[float] = []
    ckpt_path = None
    metrics_path = run_dir / "metrics.jsonl"

    def log(line: str | None) -> None:
        with file_op("write", metrics_path):
            if line is not None:
                log_file.write(line)
            log_file.flush()
            if line is None:
                os.fsync(log_file.fileno())

    def diverged(what: str) -> TrainingDiverged:
        last = run_dir / "checkpoints" / checkpoint.checkpoint_name(saved_update)
        keep = (f"the last finite checkpoint is {last}: evaluate it with fastvec-train {env} --eval={last}, or "
                f"continue from it with a lower learning rate: fastvec-train {env} --resume={run_dir} "
                f"--train.learning_rate=LOWER") if last.is_file() else "no checkpoint was written"
        return TrainingDiverged(f"training diverged at update {trainer.update_index}: {what}; {keep}")

    def save_checkpoint(replaceable_next: bool):
        """Save at this update; a checkpoint taken only for time (replaceable_next) is deleted once the next is
        written. Non-finite weights are never saved: the run stops as diverged, keeping the last finite one."""
        nonlocal ckpt_path, replaceable, saved_update, last_save
        log(None)  # metrics.jsonl reaches the disk before the checkpoint that it covers
        state = trainer.state_dict()
        for name, label in (("params", "weights"), ("optimizer", "optimizer state")):
            if state.get(name) is not None and not np.isfinite(state[name]).all():
                raise diverged(f"its {label} hold NaN or infinite values")
        state["counters"]["global_step"] = trained_steps
        state["counters"]["time"] = elapsed_before + time.perf_counter() - start_time - paused
        path = run_dir / "checkpoints" / checkpoint.checkpoint_name(trainer.update_index)
        stop.saving = True  # a second Ctrl-C now would lose the save the first one asked for
        try:
            with file_op("write", path):
                ckpt_path = checkpoint.save(path, trainer.spec, env, trainer.num_agents, state, config, source_record)
        finally:
            stop.saving = False
        last_save, saved_update = time.perf_counter(), trainer.update_index
        if replaceable is not None and replaceable != ckpt_path:  # only once its successor is safely written
            with file_op("remove the superseded checkpoint", replaceable):
                replaceable.unlink(missing_ok=True)
        replaceable = ckpt_path if replaceable_next else None

    stop = StopRequest()
    interrupted = saved_at_stop = False
    with file_op("open for appending", metrics_path):
        log_file = open(metrics_path, "a")
    with log_file:
        try:
            stop.install(sigterm=getattr(trainer, "rank", 0) == 0)
            if trainer.update_index == 0 < num_updates:
                # From the first logged update on, the run holds a checkpoint: --resume can tell removed
                # checkpoints from a run stopped before its first (run_dir.refuse_unaccounted_history).
                save_checkpoint(replaceable_next=True)
            while trainer.update_index < num_updates and stop.signum is None:
                trainer.rollout()
                if stop.signum is not None:
                    break  # this rollout is dropped: no update trained on it
                stats = trainer.update(num_updates)
                trained_steps += steps_per_update
                for key, value in stats.items():
                    update_totals[key] = update_totals.get(key, 0.0) + value
                update_count += 1
                final = trainer.update_index >= num_updates
                if league is not None:
                    league.after_update(trainer, final)
                now, logged = time.perf_counter(), None
                # every log_interval seconds, and at every 5% of the run: a sub-second GPU run still logs
                # ~20 times, so its last log shows where training ended rather than the whole run's mean
                if now - last_log >= tc["log_interval"] or final or trainer.update_index % log_every == 0:
                    elapsed = now - start_time - paused
                    metrics = {"global_step": trained_steps, "time": round(elapsed_before + elapsed, 3),
                               "sps": round((trained_steps - start_step) / max(elapsed, 1e-9), 1),
                               "update": trainer.update_index}
                    if league is not None:
                        evaluating = trainer.timing.get("selfplay_eval", 0.0) - eval_before
                        metrics["eval_time"] = round(evaluating, 3)
                        metrics["train_sps"] = round((trained_steps - start_step) / max(elapsed - evaluating, 1e-9), 1)
                    episodes = trainer.pop_episodes()
                    metrics.update(episodes or {"episodes": 0, "episode_return": None, "episode_length": None,
                                                **{name: None for name in stat_names}})
                    if episodes:
                        recent_returns.append(episodes["episode_return"])
                    for key, value in update_totals.items():
                        prefix = "charts/" if key in ("learning_rate", "ent_coef") else "losses/"
                        metrics[prefix + key] = round(value / update_count, 6)
                    if league is not None:
                        metrics.update(league.metrics())
                    metrics["time_split"] = {k: round(v, 3) for k, v in trainer.timing.items()}
                    for key, value in metrics.items():  # (explained_variance is NaN when the returns are constant)
                        if key.startswith("losses/") and "loss" in key and not math.isfinite(value):
                            raise diverged(f"{key} is {value}")
                    log(json.dumps(metrics) + "\n")
                    if loggers is not None:
                        loggers.log(metrics)
                    board.update(metrics, stat_names)
                    reached_stop = target.add(metrics) and stop_at_target
                    last_metrics = logged = metrics
                    update_totals, update_count, last_log = {}, 0, now
                seconds = tc["checkpoint_seconds"]
                on_interval = final or reached_stop or trainer.update_index % tc["checkpoint_interval"] == 0
                if (on_interval or stop.signum is not None
                        or (seconds > 0 and time.perf_counter() - last_save >= seconds)):
                    save_checkpoint(replaceable_next=not on_interval and stop.signum is None)
                if watch is not None:
                    called = time.perf_counter()
                    done = watch(logged, elapsed_before + now - start_time - paused, trained_steps)
                    paused += time.perf_counter() - called
                    if done:
                        break
                if reached_stop:
                    break
            if stop.signum is not None and trainer.update_index < num_updates:
                interrupted = True
                if saved_update != trainer.update_index:
                    save_checkpoint(replaceable_next=False)
                saved_at_stop = saved_update == trainer.update_index  # the stop's update is the one saved
        except KeyboardInterrupt:  # a second Ctrl-C (or one without the handler): mid-update, nothing consistent
            interrupted = True  # to save, so the last checkpoint stands
            saved_at_stop = False
        finally:
            stop.restore()
            board.close()  # the live display ends before cli.py prints the summary, the stop message or an error
    last = run_dir / "checkpoints" / checkpoint.checkpoint_name(saved_update)
    ckpt_path = last if ckpt_path is None and interrupted and last.is_file() else ckpt_path  # the one resumed from
    target_summary = target.summary(stopped=reached_stop)
    if target_summary is not None and watch is None and getattr(trainer, "rank", 0) == 0:
        print(f"fastvec-train {env}: {target_line(target_summary)}")

    elapsed = time.perf_counter() - start_time - paused
    evaluating = trainer.timing.get("selfplay_eval", 0.0) - eval_before
    if league is not None and (run_dir / "ratings.json").is_file():
        try:
            from fastvec.trainer.selfplay import plot_ratings
            plot_ratings(run_dir)  # RUN_DIR/ratings.png, the rating curve
        except ImportError:  # matplotlib is optional (fastvec[plot])
            pass
    return {"run_dir": run_dir, "checkpoint": ckpt_path, "metrics": last_metrics, "elapsed": elapsed,
            "startup": startup, "global_step": trainer.global_step, "trained_steps": trained_steps,
            "update": trainer.update_index,
            "sps": (trained_steps - start_step) / max(elapsed, 1e-9), "eval_time": evaluating,
            "train_sps": (trained_steps - start_step) / max(elapsed - evaluating, 1e-9), "recent_returns": recent_returns,
            "trainer": trainer, "interrupted": interrupted, "target": target_summary,
            "signal": signal.Signals(stop.signum).name if interrupted and stop.signum else (
                "SIGINT" if interrupted else None),
            "saved_at_stop": interrupted and saved_at_stop}


def evaluate(config: dict, path: Path, render: str = "") -> dict:
    """Play eval.episodes episodes (one per env, in parallel, so short episodes are not over-counted)
    with the checkpoint's policy; optionally record one more episode to a GIF/MP4. Returns the means."""
    with blas_threads(config["train"]["blas_threads"]):
        return _evaluate(config, path, render)


def _evaluate(config: dict, path: Path, render: str) -> dict:
    meta, state = checkpoint.load(path)
    warn_if_source_changed(meta, config, path)
    batch = make_batch(config, config["eval"]["episodes"])
    try:
        return _evaluate_batch(config, path, render, meta, state, batch)
    finally:
        close_batches([batch])


def _evaluate_batch(config: dict, path: Path, render: str, meta: dict, state: dict, batch) -> dict:
    from fastvec.trainer.reference import FlatLayout, param_table, policy_act

    env = config["env"]["name"]
    spec = checkpoint.spec_of(meta)
    episodes = config["eval"]["episodes"]
    # the env and the sizes must match (each side named with its own); the architecture is the file's
    checkpoint.check_env(meta, env, batch.env.obs_size, batch.env.num_actions, path)
    params = FlatLayout(param_table(spec)).views(state["params"])
    rng = np.random.default_rng(config["train"]["seed"] + 1_000_003)
    deterministic = config["eval"]["deterministic"]
    seeds = (np.uint64(config["train"]["seed"] + 7) << np.uint64(32)) + np.arange(episodes, dtype=np.uint64)
    batch.reset(seeds, None)
    num_agents = batch.obs.shape[1]
    rows = episodes * num_agents
    hidden_state = np.zeros((spec.state_layers, rows, spec.hidden), np.float32)
    starts = np.ones(rows, np.float32)
    finished = np.zeros(episodes, bool)
    returns = np.zeros(episodes)
    lengths = np.zeros(episodes)
    stats = np.zeros((episodes, len(batch.env.stat_names)))
    while not finished.all():
        actions, _, _, hidden_state = policy_act(spec, params, batch.obs.reshape(rows, -1).astype(np.float32),
                                                 starts, hidden_state, rng, deterministic)
        batch.step(actions.reshape(episodes, num_agents, *spec.action_shape))
        done = batch.terminated | batch.truncated
        first = done & ~finished
        returns[first] = batch.episode_return[first].mean(1)
        lengths[first] = batch.episode_length[first]
        stats[first] = batch.episode_stats[first]
        finished |= done
        starts = np.repeat(done, num_agents).astype(np.float32)
    result = {"env": env, "checkpoint": str(path), "episodes": episodes, "episode_return": float(returns.mean()),
              "episode_return_std": float(returns.std()), "episode_length": float(lengths.mean())}
    for i, name in enumerate(batch.env.stat_names):
        result[name] = float(stats[:, i].mean())
    if render:
        result["render"] = str(record_episode(config, spec, params, render, rng, deterministic))
    return result


def record_episode(config: dict, spec, params, path: str, rng, deterministic: bool) -> Path:
    """Play one episode in one env, rendering every step, and write it as a GIF or MP4."""
    from fastvec.trainer.reference import policy_act
    try:
        import imageio.v3 as iio
    except ImportError:
        raise ImportError("writing a GIF/MP4 needs imageio: pip install 'fastvec[plot]' (or pip install imageio; "
                          "MP4 also needs imageio-ffmpeg)") from None
    path = Path(path)
    if path.suffix.lower() not in (".gif", ".mp4"):
        raise ConfigError(f"eval.render={str(path)!r}: give a path ending in .gif or .mp4")
    batch = make_batch(config, 1, render=True)
    try:
        batch.reset(np.array([config["train"]["seed"]], np.uint64), None)
        num_agents = batch.obs.shape[1]
        state = np.zeros((spec.state_layers, num_agents, spec.hidden), np.float32)
        starts = np.ones(num_agents, np.float32)
        frames = [batch.render(0)]
        for _ in range(config["eval"]["render_max_frames"]):
            actions, _, _, state = policy_act(spec, params, batch.obs.reshape(num_agents, -1).astype(np.float32),
                                              starts, state, rng, deterministic)
            batch.step(actions.reshape(1, num_agents, *spec.action_shape))
            if batch.terminated[0] or batch.truncated[0]:
                break  # the env has already reset (SAME_STEP), so its next frame belongs to a new episode
            starts[:] = 0
            frames.append(batch.render(0))
    finally:
        close_batches([batch])
    info = native.ENVS.get(config["env"]["name"]) if env_kind(config) == "builtin" else None
    fps = info.render_fps if info is not None else getattr(batch.env, "render_fps", 30)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        iio.imwrite(path, np.stack(frames), duration=1000 / fps, loop=0)
    else:
        try:
            iio.imwrite(path, np.stack(frames), fps=fps, codec="libx264")
        except Exception as err:  # imageio names the missing backend in its own words
            raise RuntimeError(f"writing {path} failed ({err}); MP4 needs imageio-ffmpeg: "
                               f"pip install imageio-ffmpeg, or write a .gif") from None
    return path
