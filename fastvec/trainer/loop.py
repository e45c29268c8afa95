"""The training loop either trainer runs in (protocol.Trainer): config.toml, metrics.jsonl and the optional loggers,
checkpoints by update count and by time, the target stop, and the stop that SIGTERM or Ctrl-C asks for (StopRequest)."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np

from fastvec.trainer import checkpoint
from fastvec.trainer.config import declared_by_env, to_toml
from fastvec.trainer.dashboard import Dashboard
from fastvec.trainer.env_defaults import describe
from fastvec.trainer.protocol import Trainer
from fastvec.trainer.run_dir import TrainingDiverged, env_source_record, file_op, resume_state
from fastvec.trainer.settings import Config
from fastvec.trainer.target import Target, target_line


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


def open_loggers(config: Config, run_dir: Path, resume: bool):
    """The optional logger outputs beside metrics.jsonl (loggers.RunLoggers: TensorBoard, Weights & Biases), or
    None when neither train.tensorboard nor train.wandb_project asks for one (loggers.py is then never imported)."""
    if not (config.train.tensorboard or config.train.wandb_project):
        return None
    from fastvec.trainer.loggers import RunLoggers
    return RunLoggers(config.to_dict(), run_dir, resume)


def train_loop(trainer: Trainer, startup: float, run_dir: Path, resume: bool, dashboard: bool | None,
               watch=None) -> dict:
    """The training loop around a made trainer (run.make_trainer; startup: the seconds that took): config.toml,
    metrics.jsonl (and the optional loggers, closed on every way out), checkpoints. Returns run.train's summary."""
    config, env = trainer.config, trainer.config.env.name
    if trainer.rank == 0 and (paths := trainer.describe()):
        print(paths, file=sys.stderr)  # the paths chosen for this config (stderr: stdout stays the log)
    elapsed_before = resume_state(trainer, run_dir, env) if resume else 0.0
    if trainer.selfplay is not None:
        trainer.selfplay.start(trainer, run_dir)
    with file_op("create the run directory", run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)
    with file_op("write", run_dir / "config.toml"):
        checkpoint.atomic_write_text(run_dir / "config.toml", to_toml(config.to_dict()))
    if not resume and watch is None and trainer.rank == 0:  # a sweep's trials: its own report
        for line in describe(config.to_dict(), declared_by_env(env, config.to_dict()["env"])):
            print(f"fastvec-train: {line}")  # what the run is, as the log's first lines (stderr: its problems)
    # Rank 0 alone logs (the other ranks of a multi-GPU run would open the same W&B run and more event files).
    loggers = open_loggers(config, run_dir, resume) if trainer.rank == 0 else None
    try:
        return Loop(trainer, run_dir, startup, elapsed_before, dashboard, loggers, watch).run()
    finally:
        if loggers is not None:
            loggers.close()


class Loop:
    """One run of the loop: rollout and update until the step budget, a target, a stop signal or watch ends it;
    a metrics.jsonl line every train.log_interval seconds (and every 5% of the updates), a checkpoint every
    train.checkpoint_interval updates and every train.checkpoint_seconds."""

    def __init__(self, trainer: Trainer, run_dir: Path, startup: float, elapsed_before: float,
                 dashboard: bool | None, loggers, watch=None):
        self.trainer, self.run_dir, self.loggers, self.watch = trainer, run_dir, loggers, watch
        self.train, self.env, self.league = trainer.config.train, trainer.config.env.name, trainer.selfplay
        self.elapsed_before = elapsed_before
        self.source_record = env_source_record(trainer.config)  # a user env file's path and sha256, as trained on
        self.steps_per_update = trainer.horizon * trainer.batch.num_envs * trainer.world_size  # all ranks
        self.num_updates = math.ceil(self.train.total_timesteps / self.steps_per_update)
        self.log_every = max(1, self.num_updates // 20)
        # CUDA: the eager first iteration and the graph captures, as start-up
        self.startup = startup + trainer.warm_up(self.num_updates)
        spec = trainer.spec
        self.board = Dashboard(f"fastvec-train {self.env} ({trainer.device}, {spec.kind} {spec.hidden}x{spec.layers}, "
                               f"{trainer.layout.size:,} params) -> {run_dir}",
                               self.num_updates * self.steps_per_update, enabled=dashboard)
        self.stat_names = trainer.batch.env.stat_names
        self.target = Target(self.train)
        # Several ranks would each decide on their own episodes (and stop apart), so only one process stops at it.
        self.stop_at_target = self.train.stop_at_target and trainer.world_size == 1
        self.reached_stop = False
        self.start_time = time.perf_counter()
        # self-play evaluations: wall time, not training time
        self.eval_before = trainer.timing.get("selfplay_eval", 0.0)
        # The steps the updates trained on: trainer.global_step also counts what rollout() collected for updates
        # still to come (with train.async, one rollout ahead), which a checkpoint must not count.
        self.trained_steps = self.start_step = trainer.global_step
        self.last_log = self.last_save = self.start_time
        self.paused = 0.0  # seconds spent in watch() (a sweep's pruner and its database): not training time
        self.saved_update = trainer.update_index  # the update of the newest checkpoint
        self.replaceable = None  # this run's newest checkpoint by time (off checkpoint_interval): the next replaces it
        # A resumed run's predecessors' checkpoints by time (a kill left them): removed once this run saves one
        self.superseded = checkpoint.replaceable_checkpoints(run_dir / "checkpoints")
        self.update_totals: dict[str, float] = {}
        self.update_count = 0
        self.last_metrics: dict = {}
        self.recent_returns: list[float] = []
        self.ckpt_path = None
        self.metrics_path = run_dir / "metrics.jsonl"
        self.stop = StopRequest()
        self.interrupted = self.saved_at_stop = False

    def write(self, line: str | None) -> None:
        """Append a line to metrics.jsonl; None: flush it to the disk."""
        with file_op("write", self.metrics_path):
            if line is not None:
                self.log_file.write(line)
            self.log_file.flush()
            if line is None:
                os.fsync(self.log_file.fileno())

    def diverged(self, what: str) -> TrainingDiverged:
        last = self.run_dir / "checkpoints" / checkpoint.checkpoint_name(self.saved_update)
        env, run_dir = self.env, self.run_dir
        keep = (f"the last finite checkpoint is {last}: evaluate it with fastvec-train {env} --eval={last}, or "
                f"continue from it with a lower learning rate: fastvec-train {env} --resume={run_dir} "
                f"--train.learning_rate=LOWER") if last.is_file() else "no checkpoint was written"
        return TrainingDiverged(f"training diverged at update {self.trainer.update_index}: {what}; {keep}")

    def save_checkpoint(self, replaceable_next: bool) -> None:
        """Save at this update; a checkpoint taken only for time (replaceable_next) is deleted once the next is
        written. Non-finite weights are never saved: the run stops as diverged, keeping the last finite one."""
        trainer = self.trainer
        self.write(None)  # metrics.jsonl reaches the disk before the checkpoint that it covers
        state = trainer.state_dict()
        for name, label in (("params", "weights"), ("optimizer", "optimizer state")):
            if state.get(name) is not None and not np.isfinite(state[name]).all():
                raise self.diverged(f"its {label} hold NaN or infinite values")
        state["counters"]["global_step"] = self.trained_steps
        state["counters"]["time"] = self.elapsed_before + time.perf_counter() - self.start_time - self.paused
        path = self.run_dir / "checkpoints" / checkpoint.checkpoint_name(trainer.update_index)
        self.stop.saving = True  # a second Ctrl-C now would lose the save the first one asked for
        try:
            with file_op("write", path):
                self.ckpt_path = checkpoint.save(path, trainer.spec, self.env, trainer.num_agents, state,
                                                 trainer.config.to_dict(), self.source_record, replaceable_next)
        finally:
            self.stop.saving = False
        self.last_save, self.saved_update = time.perf_counter(), trainer.update_index
        for old in [self.replaceable, *self.superseded]:  # only once their successor is safely written
            if old is not None and old != self.ckpt_path:
                with file_op("remove the superseded checkpoint", old):
                    old.unlink(missing_ok=True)
        self.superseded = []
        self.replaceable = self.ckpt_path if replaceable_next else None

    def run(self) -> dict:
        trainer, stop = self.trainer, self.stop
        with file_op("open for appending", self.metrics_path):
            self.log_file = open(self.metrics_path, "a")
        with self.log_file:
            try:
                stop.install(sigterm=trainer.rank == 0)
                if trainer.update_index == 0 < self.num_updates:
                    # From the first logged update on, the run holds a checkpoint: --resume can tell removed
                    # checkpoints from a run stopped before its first (run_dir.refuse_unaccounted_history).
                    self.save_checkpoint(replaceable_next=True)
                while trainer.update_index < self.num_updates and stop.signum is None:
                    if self.step():
                        break
                if stop.signum is not None and trainer.update_index < self.num_updates:
                    self.interrupted = True
                    if self.saved_update != trainer.update_index:
                        self.save_checkpoint(replaceable_next=False)
                    self.saved_at_stop = self.saved_update == trainer.update_index  # the stop's update is saved
            except KeyboardInterrupt:  # a second Ctrl-C (or one without the handler): mid-update, nothing
                self.interrupted = True  # consistent to save, so the last checkpoint stands
                self.saved_at_stop = False
            finally:
                stop.restore()
                self.board.close()  # the live display ends before cli.py prints the summary, the stop or an error
        return self.summary()

    def step(self) -> bool:
        """One rollout and its update, then the log, the checkpoint and watch they are due; True: the run ends."""
        trainer, train = self.trainer, self.train
        trainer.rollout()
        if self.stop.signum is not None:
            return True  # this rollout is dropped: no update trained on it
        stats = trainer.update(self.num_updates)
        self.trained_steps += self.steps_per_update
        for key, value in stats.items():
            self.update_totals[key] = self.update_totals.get(key, 0.0) + value
        self.update_count += 1
        final = trainer.update_index >= self.num_updates
        if self.league is not None:
            self.league.after_update(trainer, final)
        now, logged = time.perf_counter(), None
        # every log_interval seconds, and at every 5% of the run: a sub-second GPU run still logs
        # ~20 times, so its last log shows where training ended rather than the whole run's mean
        if now - self.last_log >= train.log_interval or final or trainer.update_index % self.log_every == 0:
            logged = self.log_metrics(now)
        seconds = train.checkpoint_seconds
        on_interval = final or self.reached_stop or trainer.update_index % train.checkpoint_interval == 0
        if (on_interval or self.stop.signum is not None
                or (seconds > 0 and time.perf_counter() - self.last_save >= seconds)):
            self.save_checkpoint(replaceable_next=not on_interval and self.stop.signum is None)
        if self.watch is not None:
            called = time.perf_counter()
            done = self.watch(logged, self.elapsed_before + now - self.start_time - self.paused, self.trained_steps)
            self.paused += time.perf_counter() - called
            if done:
                return True
        return self.reached_stop

    def log_metrics(self, now: float) -> dict:
        """The metrics.jsonl line of the updates since the last one (written, shown, sent to the loggers)."""
        trainer, start_step = self.trainer, self.start_step
        elapsed = now - self.start_time - self.paused
        metrics = {"global_step": self.trained_steps, "time": round(self.elapsed_before + elapsed, 3),
                   "sps": round((self.trained_steps - start_step) / max(elapsed, 1e-9), 1),
                   "update": trainer.update_index}
        if self.league is not None:
            evaluating = trainer.timing.get("selfplay_eval", 0.0) - self.eval_before
            metrics["eval_time"] = round(evaluating, 3)
            metrics["train_sps"] = round((self.trained_steps - start_step) / max(elapsed - evaluating, 1e-9), 1)
        episodes = trainer.pop_episodes()
        metrics.update(episodes or {"episodes": 0, "episode_return": None, "episode_length": None,
                                    **{name: None for name in self.stat_names}})
        if episodes:
            self.recent_returns.append(episodes["episode_return"])
        for key, value in self.update_totals.items():
            prefix = "charts/" if key in ("learning_rate", "ent_coef") else "losses/"
            metrics[prefix + key] = round(value / self.update_count, 6)
        if self.league is not None:
            metrics.update(self.league.metrics())
        metrics["time_split"] = {k: round(v, 3) for k, v in trainer.timing.items()}
        for key, value in metrics.items():  # explained_variance is NaN when the returns are constant: no divergence
            if key.startswith("losses/") and key != "losses/explained_variance" and not math.isfinite(value):
                raise self.diverged(f"{key} is {value}")
        self.write(json.dumps(metrics) + "\n")
        if self.loggers is not None:
            self.loggers.log(metrics)
        self.board.update(metrics, self.stat_names)
        self.reached_stop = self.target.add(metrics) and self.stop_at_target
        self.last_metrics = metrics
        self.update_totals, self.update_count, self.last_log = {}, 0, now
        return metrics

    def summary(self) -> dict:
        """run.train's summary of the run that ended."""
        trainer, run_dir, start_step, trained_steps = self.trainer, self.run_dir, self.start_step, self.trained_steps
        last = run_dir / "checkpoints" / checkpoint.checkpoint_name(self.saved_update)
        ckpt_path = self.ckpt_path
        ckpt_path = last if ckpt_path is None and self.interrupted and last.is_file() else ckpt_path  # resumed from
        target_summary = self.target.summary(stopped=self.reached_stop)
        if target_summary is not None and self.watch is None and trainer.rank == 0:
            print(f"fastvec-train {self.env}: {target_line(target_summary)}")
        elapsed = time.perf_counter() - self.start_time - self.paused
        evaluating = trainer.timing.get("selfplay_eval", 0.0) - self.eval_before
        if self.league is not None and (run_dir / "ratings.json").is_file():
            try:
                from fastvec.trainer.selfplay import plot_ratings
                plot_ratings(run_dir)  # RUN_DIR/ratings.png, the rating curve
            except ImportError:  # matplotlib is optional (fastvec[plot])
                pass
        interrupted, signum = self.interrupted, self.stop.signum
        stopped_by = signal.Signals(signum).name if interrupted and signum else ("SIGINT" if interrupted else None)
        return {"run_dir": run_dir, "checkpoint": ckpt_path, "metrics": self.last_metrics, "elapsed": elapsed,
                "startup": self.startup, "global_step": trainer.global_step, "trained_steps": trained_steps,
                "update": trainer.update_index,
                "sps": (trained_steps - start_step) / max(elapsed, 1e-9), "eval_time": evaluating,
                "train_sps": (trained_steps - start_step) / max(elapsed - evaluating, 1e-9),
                "recent_returns": self.recent_returns, "trainer": trainer, "interrupted": interrupted,
                "target": target_summary,
                "signal": stopped_by,
                "saved_at_stop": interrupted and self.saved_at_stop}
