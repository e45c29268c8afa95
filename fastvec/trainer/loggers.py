"""Optional logger outputs beside metrics.jsonl: TensorBoard (train.tensorboard) and Weights & Biases
(train.wandb_project), each metrics row logged under CleanRL's metric names with step = global_step."""

import importlib
import json
import numbers
import secrets
import string
import time
from pathlib import Path

INSTALL_HINT = "pip install 'fastvec[logging]'"

# fastvec's metrics.jsonl names -> CleanRL's (ppo.py); the losses/ and charts/learning_rate keys already match
CLEANRL_NAMES = {"episode_return": "charts/episodic_return", "episode_length": "charts/episodic_length",
                 "sps": "charts/SPS"}
STEP_KEY = "global_step"  # the x axis: TensorBoard's step, and W&B's step metric (as CleanRL's synced runs have it)
TENSORBOARD_DIR = "tensorboard"  # RUN_DIR/tensorboard: the event files
WANDB_ID_FILE = "wandb_id"  # RUN_DIR/wandb_id: the W&B run a resumed fastvec run continues


def scalars(row: dict, prefix: str = "") -> dict[str, float]:
    """The numeric scalars of one metrics row under CleanRL's names: nested dicts flattened with "/", None,
    strings, bools and anything else that is not a real number left out, global_step (the step) too."""
    out = {}
    for key, value in row.items():
        name = prefix + str(key)
        if isinstance(value, dict):
            out.update(scalars(value, name + "/"))
        elif isinstance(value, numbers.Real) and not isinstance(value, bool) and name != STEP_KEY:
            out[CLEANRL_NAMES.get(name, name)] = float(value)
    return out


def _import(module: str, option: str):
    """The optional package module needs for option, or an ImportError that names the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{option} needs the {module.split('.')[0]} package: {INSTALL_HINT} (or pip install "
                          f"{module.split('.')[0]}); importing {module} failed: {err}") from None


class _TensorBoard:
    """Scalar events under RUN_DIR/tensorboard, written with the tensorboard package's own EventFileWriter as
    simple_value summaries: what torch.utils.tensorboard's SummaryWriter.add_scalar writes, without torch."""

    def __init__(self, run_dir: Path, resume: bool):
        self.event_pb2 = _import("tensorboard.compat.proto.event_pb2", "train.tensorboard=true")
        self.summary_pb2 = _import("tensorboard.compat.proto.summary_pb2", "train.tensorboard=true")
        writer = _import("tensorboard.summary.writer.event_file_writer", "train.tensorboard=true")
        self.run_dir = run_dir
        self.writer = writer.EventFileWriter(str(run_dir / TENSORBOARD_DIR))
        self.purge_pending = resume

    def purge_step(self, step: int) -> int:
        """The step from which a resumed run's earlier event files are stale: one past the last row that
        metrics.jsonl kept (run.py cuts it back to the checkpoint before training resumes), 0 when it kept none
        (the run starts over); the first new row's own step when there is no metrics.jsonl to go by."""
        try:
            with open(self.run_dir / "metrics.jsonl") as f:
                lines = f.readlines()
        except OSError:
            return step
        kept = 0
        for line in lines:
            try:
                row_step = json.loads(line).get(STEP_KEY)
            except (ValueError, AttributeError):
                continue
            if isinstance(row_step, int) and row_step < step:
                kept = max(kept, row_step + 1)
        return kept

    def log(self, values: dict[str, float], step: int) -> None:
        wall_time = time.time()
        Event, Summary = self.event_pb2.Event, self.summary_pb2.Summary
        if self.purge_pending:
            # a resumed run's first event: SessionLog START, at which TensorBoard drops the earlier files' later steps
            # at steps >= its step (SummaryWriter(purge_step=...) writes the same), so the curves lose the points
            # the killed run logged after its checkpoint
            self.purge_pending = False
            start = self.event_pb2.SessionLog(status=self.event_pb2.SessionLog.START)
            self.writer.add_event(Event(step=self.purge_step(step), wall_time=wall_time, session_log=start))
        summary = Summary(value=[Summary.Value(tag=tag, simple_value=value) for tag, value in values.items()])
        self.writer.add_event(Event(step=step, wall_time=wall_time, summary=summary))
        self.writer.flush()  # every row reaches the disk, as metrics.jsonl's do (a log interval is seconds apart)

    def close(self) -> None:
        self.writer.close()


class _WandB:
    """A W&B run in project, its id kept in RUN_DIR/wandb_id so that a resumed fastvec run continues it."""

    def __init__(self, config: dict, run_dir: Path, resume: bool):
        wandb = _import("wandb", f"train.wandb_project={config['train']['wandb_project']!r}")
        id_file = run_dir / WANDB_ID_FILE
        run_id = id_file.read_text().strip() if resume and id_file.is_file() else ""
        fresh = not run_id
        if fresh:
            run_id = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(12))
        name = f"{config.get('env', {}).get('name', 'fastvec')}-{run_dir.resolve().name}"
        project = config["train"]["wandb_project"]
        try:
            self.run = wandb.init(project=project, dir=str(run_dir), config=config, id=run_id, resume="allow",
                                  mode=config["train"].get("wandb_mode") or None, name=name)
        except wandb.errors.Error as err:  # no API key, the server out of reach, ...: one line, not a traceback
            from fastvec.trainer.config import ConfigError
            reason = " ".join(str(err).split())
            raise ConfigError(f"train.wandb_project={project!r}: W&B could not start the run: {reason} (log in with "
                              f"`wandb login`, or use --train.wandb_mode=offline and `wandb sync` the run's "
                              f"{run_dir / 'wandb'} later)") from None
        self.wandb = wandb
        if fresh:  # kept once the run has started
            from fastvec.trainer import checkpoint
            checkpoint.atomic_write_text(id_file, run_id + "\n")
        self.run.define_metric(STEP_KEY)
        self.run.define_metric("*", step_metric=STEP_KEY)

    def log(self, values: dict[str, float], step: int) -> None:
        # global_step as a logged value, not wandb's own step: a resumed run may log steps the killed one
        # already reached, which wandb.log(step=...) would drop; W&B's charts use it as their x axis
        self.run.log({**values, STEP_KEY: step})

    def close(self) -> None:
        self.run.finish()
        # finish() returns before wandb's service process has written the run's files (in offline mode the .wandb
        # file can still hold only its header); teardown waits for the service to write them and stop
        self.wandb.teardown()


class RunLoggers:
    """The logger outputs config asks for (train.tensorboard, train.wandb_project): opened at construction, which
    raises ImportError naming fastvec[logging] when a package is missing; with neither on it imports nothing and
    log() does nothing. log(row) takes one metrics.jsonl row; close() flushes and closes (twice is harmless)."""

    def __init__(self, config: dict, run_dir: Path, resume: bool):
        train = config["train"]
        run_dir = Path(run_dir)
        self.outputs: list = []
        self.rows = 0
        if not (train.get("tensorboard") or train.get("wandb_project")):
            return
        missing = []  # every missing package in one error, before anything is opened
        if train.get("tensorboard"):
            try:
                _import("tensorboard.summary.writer.event_file_writer", "train.tensorboard=true")
            except ImportError as err:
                missing.append(str(err))
        if train.get("wandb_project"):
            try:
                _import("wandb", f"train.wandb_project={train['wandb_project']!r}")
            except ImportError as err:
                missing.append(str(err))
        if missing:
            raise ImportError("; ".join(missing))
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            if train.get("wandb_project"):  # first: the one that can fail to start (no API key, no network)
                self.outputs.append(_WandB(config, run_dir, resume))
            if train.get("tensorboard"):
                self.outputs.append(_TensorBoard(run_dir, resume))
        except BaseException:
            self.close()
            raise

    def log(self, row: dict) -> None:
        if not self.outputs:
            return
        step = row.get(STEP_KEY)
        step = int(step) if isinstance(step, numbers.Real) and not isinstance(step, bool) else self.rows
        self.rows += 1
        values = scalars(row)
        for output in self.outputs:
            output.log(values, step)

    def close(self) -> None:
        outputs, self.outputs = self.outputs, []
        errors = []
        for output in outputs:
            try:
                output.close()
            except Exception as err:  # the others still close
                errors.append(err)
        if errors:
            raise errors[0]

    def __enter__(self) -> "RunLoggers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
