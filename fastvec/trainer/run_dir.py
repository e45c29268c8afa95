"""The run directory: a name no other run takes, a new run refused where one already is (unless resumed or
overwritten), and what a resume reads back from it (the newest checkpoint, metrics.jsonl cut back to it)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import sys
import time
from pathlib import Path

from fastvec.trainer import checkpoint
from fastvec.trainer.config import ConfigError, source_sha256, to_toml
from fastvec.trainer.settings import Config

HOLDS_A_RUN = {"config.toml": Path.is_file, "metrics.jsonl": Path.is_file, "checkpoints": Path.is_dir}  # a run's
# What a run writes in its directory (loggers.py's tensorboard/ and wandb_id, self-play's ratings): what
# --overwrite removes; anything else in the directory is left alone.
RUN_FILES = (*HOLDS_A_RUN, "ratings.json", "ratings.png", "tensorboard", "wandb_id")


class TrainingDiverged(ConfigError):
    """A loss or a weight became NaN or infinite: the settings (most often train.learning_rate) made training
    diverge. A ConfigError, so that fastvec-train reports it in one line and a sweep fails just that trial."""


@contextlib.contextmanager
def file_op(operation: str, path):
    """Turn an OSError inside the block into a one-line RunFileError: cannot OPERATION PATH: reason."""
    try:
        yield
    except OSError as err:
        raise checkpoint.file_error(err, operation, path) from None


def default_run_dir(env: str) -> Path:
    """runs/ENV/<time>; a Gymnasium env's name as one directory (gym:ALE/Pong-v5 -> gym-ALE-Pong-v5)."""
    return Path("runs") / env.replace(":", "-").replace("/", "-") / time.strftime("%Y%m%d-%H%M%S")


def new_run_dir(env: str) -> Path:
    """A directory made for this run alone: default_run_dir, or with -2, -3, ... when another run (started the
    same second) made it first. mkdir either creates it or fails, so two processes never get the same one."""
    base = default_run_dir(env)
    with file_op("create the run directory", base.parent):
        base.parent.mkdir(parents=True, exist_ok=True)
    for number in itertools.count(1):
        path = base if number == 1 else base.with_name(f"{base.name}-{number}")
        try:
            with file_op("create the run directory", path):
                path.mkdir()
            return path
        except checkpoint.RunFileError:
            if not path.exists():
                raise
    raise AssertionError("unreachable")


def metrics_rows(path: Path) -> list[tuple[bytes, dict | None]]:
    """metrics.jsonl's lines, each with its row: a whole line's JSON object with an integer update, else None (a
    partial line from a kill or a full disk mid-write, or one that is not a row). No file: no lines."""
    if not path.is_file():
        return []
    with file_op("read", path):
        lines = path.read_bytes().splitlines(keepends=True)
    out = []
    for line in lines:
        try:
            row = json.loads(line) if line.endswith(b"\n") else None
        except ValueError:
            row = None
        out.append((line, row if isinstance(row, dict) and isinstance(row.get("update"), int) else None))
    return out


def metrics_updates(path: Path) -> list[int]:
    """The update numbers of metrics.jsonl's whole rows (none when it is missing)."""
    return [row["update"] for _, row in metrics_rows(path) if row is not None]


def claim(run_dir: Path, config: Config, overwrite: bool = False):
    """Take run_dir for a new run: refuse one that already holds a run (HOLDS_A_RUN) unless overwrite, which
    removes that run's files (RUN_FILES) first; then create config.toml exclusively, so two runs started into
    one directory at the same moment cannot both have it. Returns release(), which gives the directory back
    as it was when the run fails before it logs or saves anything."""
    run_dir = Path(run_dir)
    present = [name for name, kind in HOLDS_A_RUN.items() if kind(run_dir / name)]
    if present and not overwrite:
        raise ConfigError(f"{run_dir} already holds a run ({', '.join(present)}); continue it with "
                          f"--resume={run_dir}, replace it with --overwrite, or give another --run-dir")
    with file_op("create the run directory", run_dir):
        created = not run_dir.exists()
        run_dir.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES if overwrite else ():
        path = run_dir / name
        with file_op("remove (--overwrite)", path):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    config_path = run_dir / "config.toml"
    try:
        fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        if not config_path.is_file():
            raise checkpoint.RunFileError(f"cannot write {config_path}: something other than a file is there; "
                                          f"move it, or give another --run-dir") from None
        raise ConfigError(f"{run_dir}: another run started there at the same moment; give another --run-dir") from None
    except OSError as err:
        raise checkpoint.file_error(err, "write", config_path) from None
    with file_op("write", config_path), os.fdopen(fd, "w") as f:
        f.write(to_toml(config.to_dict()))

    def release() -> None:
        folder = run_dir / "checkpoints"
        if metrics_updates(run_dir / "metrics.jsonl") or checkpoint.candidates(folder):
            return  # the run began: its directory holds a run to resume
        for remove in (lambda: (run_dir / "metrics.jsonl").unlink(missing_ok=True),
                       lambda: shutil.rmtree(folder) if folder.is_dir() else None,
                       lambda: config_path.unlink(missing_ok=True), lambda: created and run_dir.rmdir()):
            with contextlib.suppress(OSError):
                remove()
    return release


def repair_metrics(path: Path, update: int) -> None:
    """Cut metrics.jsonl back to the checkpoint a run resumes from: keep the whole lines of updates <= update;
    drop those past it (a killed run logged them after its last checkpoint, and the resumed run logs them
    again) and a partial line (a kill or a full disk mid-write). Rewritten atomically, only if needed."""
    rows = metrics_rows(path)
    keep = [line for line, row in rows if row is not None and row["update"] <= update]
    if len(keep) != len(rows):
        with file_op("rewrite", path):
            checkpoint.atomic_write(path, b"".join(keep))


def env_source_record(config: Config) -> dict | None:
    """What checkpoints record of a user's env file: {"path", "sha256"} (None for other envs)."""
    if config.env_kind != "source":
        return None
    return {"path": config.env.source, "sha256": source_sha256(config.env.source)}


def warn_if_source_changed(meta: dict, config: Config, path) -> None:
    """One warning line when the env file a checkpoint was trained on (meta's env_source) differs from the one
    configured now: the same content under another path (the file moved) is fine; other content may change the
    env's rules, so it is named (both paths, both hashes) but not refused: the sizes are checked anyway."""
    saved, now = meta.get("env_source"), env_source_record(config)
    if not isinstance(saved, dict) or now is None or saved.get("sha256") == now["sha256"]:
        return
    print(f"fastvec-train: warning: the env file {now['path']} (sha256 {now['sha256'][:12]}...) differs from the "
          f"one {path} was trained on ({saved.get('path')}, sha256 {str(saved.get('sha256'))[:12]}...); its sizes "
          f"match, so it runs, but the env's rules may have changed", file=sys.stderr)


def resume_state(trainer, run_dir: Path, env: str) -> float:
    """Load the newest valid checkpoint of run_dir into trainer (checkpoint.newest_valid: by update number,
    verified, compatible with this env and policy; newer ones that fail are set aside as NAME.rejected with one
    warning line), clear the temporary files of an interrupted save, and cut metrics.jsonl back to it. Without
    any checkpoint, training starts over only when nothing was logged (refuse_unaccounted_history). Returns the
    training seconds so far."""
    folder = run_dir / "checkpoints"
    with file_op("clean up", folder):
        checkpoint.remove_stale_temps(folder)
        checkpoint.remove_stale_temps(run_dir)
    elapsed = 0.0
    if checkpoint.candidates(folder):
        chosen, meta, state, rejected = checkpoint.newest_valid(
            folder, lambda meta, path: checkpoint.check_compatible(meta, trainer.spec, env, path))
        warn_if_source_changed(meta, trainer.config, chosen)
        for path, _ in rejected:
            if checkpoint.NAME.fullmatch(path.name):
                with file_op("set aside", path):
                    os.replace(path, path.with_name(path.name + ".rejected"))
        trainer.load_state_dict(state)
        elapsed = float(state["counters"].get("time", 0.0))
    else:
        refuse_unaccounted_history(run_dir)
    repair_metrics(run_dir / "metrics.jsonl", trainer.update_index)
    return elapsed


def refuse_unaccounted_history(run_dir: Path) -> None:
    """--resume of a run with no checkpoint: from its first logged update on a run always holds one (it saves
    update 0 before training), so logged updates without one mean its checkpoints were removed; starting over
    would drop them, so the resume is refused, naming what is missing. With nothing logged it starts over."""
    folder = run_dir / "checkpoints"
    logged = metrics_updates(run_dir / "metrics.jsonl")
    if logged:
        missing = f"{folder} is missing" if not folder.is_dir() else f"{folder} holds no checkpoint"
        raise ConfigError(f"--resume={run_dir}: {missing}, but metrics.jsonl logs updates up to {max(logged)}; "
                          f"resuming would drop them and start over. Put the checkpoints back, or start a new run "
                          f"(--overwrite, or another --run-dir)")
    print(f"fastvec-train: warning: {run_dir} has no checkpoint yet (stopped before its first); training "
          f"starts over from update 0", file=sys.stderr)
