"""Checkpoints: one .npz file (a zip NumPy reads anywhere) per save, RUN_DIR/checkpoints/update_NNNNNN.npz.

Format (version 1), arrays in the archive:
  meta       uint8 (n,)   UTF-8 JSON: {"format": "fastvec-checkpoint", "version": 1, "env": "breakout",
                          "obs_size": 118, "num_actions": 3, "num_agents": 1,
                          "policy": {"kind", "hidden", "layers", "highway", "action_kind", "action_nvec",
                                     "action_dims", "obs_scale", "norm_obs", "critic", "encoder",
                                     "activation", "agent_ids", "world_size"} (the last ten only where they
                                     differ from OPTIONAL_POLICY_FIELDS, so a discrete policy's as before),
                          "layout": [[name, shape], ...]  (the flat parameter order, shapes (out, in)),
                          "counters": {"global_step", "update", "opt_step"}, "rng": NumPy PCG64 state,
                          "reward_norm": [mean, var, count] of train.norm_reward's returns (only with it),
                          "config": the resolved run config, "time": unix seconds,
                          "env_source": {"path", "sha256"} of a user's env file (only for one)}
  params     float32 (P,) the flat parameters in `layout` order (weights applied as x @ w.T)
  optimizer  float32 (2P,) [Adam m or Muon momentum | Adam v], same layout twice (absent in
                          weights-only files)
A checkpoint written on any device loads on any other: the layout is the contract.
Not saved: the envs' own state and the live recurrent state, so `--resume` restarts the envs from
fresh seeds and a resumed run is not bit-identical to an uninterrupted one (everything else is).

Trust: every file is written whole or not at all (atomic_write: a temporary file in the same directory,
fsync, rename, fsync of the directory). load() checks the structure and that every weight is finite; the
newest checkpoint of a run is the one with the highest update number (its file name, which must agree with
its counters), never the newest modification time, and newest_valid() falls back to the one before it when
a checkpoint fails the checks.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from fastvec.trainer.reference import FlatLayout, PolicySpec, param_table

FORMAT = "fastvec-checkpoint"
VERSION = 1
NAME = re.compile(r"update_(\d+)\.npz")  # a run's checkpoints: RUN_DIR/checkpoints/update_NNNNNN.npz
TEMP = re.compile(r"\..+\.[0-9]+\.[0-9a-f]+\.tmp")  # atomic_write's temporary files (left by a kill)


# PolicySpec's fields that a checkpoint records only when they differ from these defaults.
OPTIONAL_POLICY_FIELDS = {"action_kind": "discrete", "action_nvec": (), "action_dims": 0, "obs_scale": 1.0,
                          "norm_obs": False, "critic": "shared", "encoder": "linear", "activation": "relu",
                          "agent_ids": 0, "world_size": 0}


class CheckpointError(ValueError):
    """A checkpoint that cannot be used here: not a checkpoint, damaged, another version, or another architecture."""


class RunFileError(Exception):
    """A run file that could not be read or written; the message names the operation, the path and the reason."""


def file_error(err: OSError, operation: str, path) -> RunFileError:
    """A one-line RunFileError for err raised while `operation` (e.g. "write") `path`."""
    reason = err.strerror or str(err) or type(err).__name__
    where = err.filename if err.filename and str(err.filename) != str(path) else None
    return RunFileError(f"cannot {operation} {path}: {reason}" + (f" ({where})" if where else ""))


def checkpoint_name(update: int) -> str:
    return f"update_{update:06d}.npz"


# ------------------------------------------------------------------------------------------------
# WRITING: whole or not at all


def fsync_dir(folder: Path) -> None:
    """Make a rename in folder durable (where the file system allows opening a directory)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data) -> Path:
    """Write data (bytes) to path whole or not at all: a temporary file beside it, fsync, rename over path,
    fsync of the directory. A kill leaves either the old file or the new one (and at worst a stray
    `.NAME.PID.HEX.tmp`, which remove_stale_temps clears)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(memoryview(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, text.encode())


def remove_stale_temps(folder: Path) -> None:
    """Delete the temporary files that a killed atomic_write left in folder."""
    if Path(folder).is_dir():
        for stale in Path(folder).iterdir():
            if TEMP.fullmatch(stale.name):
                stale.unlink(missing_ok=True)


def save(path: Path, spec: PolicySpec, env: str, num_agents: int, state: dict, config: dict,
         env_source: dict | None = None, replaceable: bool = False) -> Path:
    """Write a checkpoint atomically (atomic_write) and return its path. env_source: for a user's env file, its
    {"path", "sha256"} as trained on (meta's "env_source"; --resume and --eval warn when the file differs).
    replaceable: taken for time alone (meta's "replaceable"), to be removed once a newer checkpoint is written,
    by this run or by the run that resumes it (replaceable_checkpoints)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    policy = spec.as_dict()
    for name, default in OPTIONAL_POLICY_FIELDS.items():  # at their defaults, a discrete policy's meta is as before
        if policy[name] == default:
            del policy[name]
    meta = {
        "format": FORMAT, "version": VERSION, "env": env,
        "obs_size": policy.pop("obs_size"), "num_actions": policy.pop("num_actions"), "num_agents": num_agents,
        "policy": policy, "layout": [[name, list(shape)] for name, shape in param_table(spec)],
        "counters": state.get("counters", {}), "rng": state.get("rng"), "config": config, "time": time.time(),
    }
    if env_source is not None:
        meta["env_source"] = env_source
    if replaceable:
        meta["replaceable"] = True
    if config.get("train", {}).get("norm_reward") and state.get("reward_norm") is not None:
        meta["reward_norm"] = [float(m) for m in state["reward_norm"]]
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8),
              "params": np.asarray(state["params"], np.float32)}
    if state.get("optimizer") is not None:
        arrays["optimizer"] = np.asarray(state["optimizer"], np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return atomic_write(path, buffer.getbuffer())


# ------------------------------------------------------------------------------------------------
# READING: nothing trusted blindly


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:160] if text else ''}".rstrip(": ")


def load(path: Path) -> tuple[dict, dict]:
    """Read and verify a checkpoint (a file, or a run directory for its newest valid one): (meta, state) where
    state has params, optimizer, counters, rng. A CheckpointError (one line) says what is wrong with it."""
    path = Path(path)
    if path.is_dir():
        _, meta, state, _ = newest_valid(path, purpose="using")
        return meta, state
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [name for name in ("meta", "params") if name not in archive.files]
            if missing:
                raise CheckpointError(f"{path} is not a fastvec checkpoint, or is damaged: it lacks "
                                      f"{' and '.join(missing)}; checkpoints are the .npz files under "
                                      f"RUN_DIR/checkpoints/")
            meta = json.loads(bytes(archive["meta"]).decode())
            state = {"params": archive["params"].copy(),
                     "optimizer": archive["optimizer"].copy() if "optimizer" in archive.files else None}
    except (CheckpointError, MemoryError):
        raise
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path} is a directory, not a checkpoint") from None
    except Exception as err:  # zip, zlib, JSON, UTF-8, .npy header, pickle refusal, I/O: all mean damaged here
        raise CheckpointError(f"{path} is not a fastvec checkpoint, or is damaged ({_first_line(err)}); "
                              f"checkpoints are the .npz files under RUN_DIR/checkpoints/") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a fastvec checkpoint (format "
                              f"{meta.get('format') if isinstance(meta, dict) else None!r})")
    if meta.get("version") != VERSION:
        raise CheckpointError(f"{path} is checkpoint format version {meta.get('version')}, this fastvec reads "
                              f"version {VERSION}; evaluate it with the fastvec release that wrote it")
    problem = _structure_problem(meta, state)
    if problem:
        raise CheckpointError(f"{path} is damaged: {problem}")
    state["counters"] = meta["counters"]
    state["rng"] = meta.get("rng")
    state["reward_norm"] = meta.get("reward_norm")
    return meta, state


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _structure_problem(meta: dict, state: dict) -> str | None:
    """What makes a readable checkpoint unusable: missing or mistyped fields, a layout or array size that
    disagrees with its architecture, non-finite weights or optimizer state; None if nothing."""
    for name, kind in (("env", str), ("obs_size", int), ("num_actions", int), ("num_agents", int),
                       ("policy", dict), ("layout", list), ("counters", dict)):
        if not isinstance(meta.get(name), kind):
            return f"its metadata lacks {name}" if name not in meta else f"its {name} is not a {kind.__name__}"
    counters = meta["counters"]
    for name in ("update", "global_step"):
        if not _is_count(counters.get(name)):
            return f"its counters lack {name}" if name not in counters else f"its counters' {name} is not a count"
    try:
        spec = spec_of(meta)
        table = param_table(spec)
    except (TypeError, ValueError) as err:
        return f"its recorded architecture is not one fastvec builds ({_first_line(err)})"
    size = FlatLayout(table).size
    params, optimizer = state["params"], state["optimizer"]
    if meta["layout"] != [[name, list(shape)] for name, shape in table] or params.shape != (size,):
        return "its parameter layout does not match its recorded architecture"
    if params.dtype != np.float32 or (optimizer is not None and optimizer.dtype != np.float32):
        return "its arrays are not float32"
    if optimizer is not None and optimizer.shape != (2 * size,):
        return f"its optimizer state has shape {optimizer.shape}, not ({2 * size},)"
    for name, values in (("weights", params), ("optimizer state", optimizer)):
        if values is not None and not np.isfinite(values).all():
            bad = int(values.size - np.isfinite(values).sum())
            return f"{bad} of its {values.size:,} {name} are NaN or infinite"
    return None


def spec_of(meta: dict) -> PolicySpec:
    """The architecture recorded in a checkpoint."""
    return PolicySpec(obs_size=meta["obs_size"], num_actions=meta["num_actions"], **meta["policy"])


def describe(spec: PolicySpec) -> str:
    extra = f", highway={str(spec.highway).lower()}" if spec.recurrent else ""
    extra += ", train.norm_obs=true" if spec.norm_obs else ""
    extra += f", policy.critic={spec.critic}" if spec.critic != "shared" else ""
    extra += f", policy.encoder={spec.encoder}" if spec.encoder != "linear" else ""
    extra += f", policy.activation={spec.activation}" if spec.activation != "relu" else ""
    extra += f", policy.agent_id=true ({spec.agent_ids} agents)" if spec.agent_ids else ""
    extra += f", policy.critic_input=world_state ({spec.world_size} values)" if spec.world_size else ""
    actions = {"discrete": spec.num_actions, "multi_discrete": f"MultiDiscrete{list(spec.action_nvec)}",
               "box": f"Box of {spec.action_dims}"}[spec.action_kind]
    return (f"policy.kind={spec.kind}, policy.hidden={spec.hidden}, policy.layers={spec.layers}{extra} "
            f"(obs {spec.obs_size}, actions {actions})")


def check_env(meta: dict, env: str, obs_size: int, num_actions: int, path) -> None:
    """Raise a CheckpointError naming both sides if the checkpoint was trained on another env or its sizes:
    the checkpoint's env and sizes, then this env's (obs_size, num_actions: the env's own)."""
    saved = spec_of(meta)
    if meta["env"] != env or (saved.obs_size, saved.num_actions) != (obs_size, num_actions):
        raise CheckpointError(f"{path} was trained on {meta['env']} (obs {saved.obs_size}, actions "
                              f"{saved.num_actions}), not {env} (obs {obs_size}, actions {num_actions}) with "
                              f"these [env] settings")


def check_compatible(meta: dict, spec: PolicySpec, env: str, path) -> None:
    """Raise a CheckpointError naming the difference if the checkpoint cannot drive this env/policy (spec: the
    run's policy for this env, so its sizes are the env's)."""
    check_env(meta, env, spec.obs_size, spec.num_actions, path)
    saved = spec_of(meta)
    if saved != spec:
        raise CheckpointError(f"{path} holds another architecture: {describe(saved)}; this run asks for "
                              f"{describe(spec)}. Pass the checkpoint's policy settings on the command line, "
                              f"or start a fresh run")


# ------------------------------------------------------------------------------------------------
# CHOOSING: the newest valid checkpoint


def checkpoint_folder(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    return run_dir / "checkpoints" if (run_dir / "checkpoints").is_dir() else run_dir


def replaceable_checkpoints(folder: Path) -> list[Path]:
    """The checkpoints in `folder` saved for time alone (save's replaceable): what a killed run leaves of those it
    would have removed itself. Only their meta is read; a file that cannot be read is not one of them."""
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not NAME.fullmatch(path.name):
            continue
        try:
            with np.load(path, allow_pickle=False) as archive:
                meta = json.loads(bytes(archive["meta"]).decode())
        except Exception:  # damaged or foreign: resume's own checks deal with it, never removed here
            continue
        if isinstance(meta, dict) and meta.get("replaceable") is True:
            found.append(path)
    return found


def candidates(run_dir: Path) -> list[tuple[int | None, Path]]:
    """The checkpoints of RUN_DIR/checkpoints (or of the directory itself), newest first: update_NNNNNN.npz by
    update number (never by modification time), then any other *.npz by modification time (update None)."""
    folder = checkpoint_folder(run_dir)
    if not folder.is_dir():
        return []
    numbered, others = [], []
    for path in folder.iterdir():
        match = NAME.fullmatch(path.name)
        if match:
            numbered.append((int(match.group(1)), path))
        elif path.suffix == ".npz" and not TEMP.fullmatch(path.name):
            others.append((None, path))
    numbered.sort(key=lambda item: item[0], reverse=True)
    others.sort(key=lambda item: item[1].stat().st_mtime, reverse=True)
    return numbered + others


def newest_valid(run_dir: Path, accept=None, purpose: str = "resuming from"):
    """The newest checkpoint of run_dir that loads, verifies (load) and that accept(meta, path) does not refuse
    (it raises a CheckpointError, e.g. check_compatible): (path, meta, state, rejected), rejected being the
    newer ones passed over as [(path, reason)], each named in one warning line on stderr. A CheckpointError
    when there is none."""
    folder = checkpoint_folder(run_dir)
    found = candidates(run_dir)
    rejected: list[tuple[Path, str]] = []
    for update, path in found:
        try:
            meta, state = load(path)
            if update is not None and meta["counters"]["update"] != update:
                raise CheckpointError(f"{path} is damaged or renamed: its counters say update "
                                      f"{meta['counters']['update']}, its name update {update}")
            if accept is not None:
                accept(meta, path)
        except CheckpointError as err:
            rejected.append((path, str(err)))
            continue
        if rejected:
            skipped = "; ".join(reason for _, reason in rejected)
            print(f"fastvec-train: warning: skipped {len(rejected)} newer checkpoint{'s' * (len(rejected) > 1)} "
                  f"({skipped}); {purpose} {path}", file=sys.stderr)
        return path, meta, state, rejected
    if not found:
        raise CheckpointError(f"no checkpoint (*.npz) in {folder}")
    others = len(rejected) - 1
    more = f" (and {others} older checkpoint{'s' * (others > 1)} rejected too)" if others else ""
    raise CheckpointError(f"no usable checkpoint in {folder}: {rejected[0][1]}{more}")


def latest(run_dir: Path) -> Path:
    """The newest valid checkpoint of RUN_DIR/checkpoints (or of the directory itself), by update number."""
    return newest_valid(run_dir, purpose="using")[0]
