"""Checkpoints: one .npz file (a zip NumPy reads anywhere) per save, under RUN_DIR/checkpoints/.

Format (version 1), arrays in the archive:
  meta       uint8 (n,)   UTF-8 JSON: {"format": "fastvec-checkpoint", "version": 1, "env": "breakout",
                          "obs_size": 118, "num_actions": 3, "num_agents": 1,
                          "policy": {"kind", "hidden", "layers", "highway", ...},
                          "layout": [[name, shape], ...]  (the flat parameter order, shapes (out, in)),
                          "counters": {"global_step", "update", "opt_step"}, "rng": NumPy PCG64 state,
                          "config": the resolved run config, "time": unix seconds}
  params     float32 (P,) the flat parameters in `layout` order (weights applied as x @ w.T)
  optimizer  float32 (2P,) [Adam m or Muon momentum | Adam v], same layout twice (absent in
                          weights-only files)
A checkpoint written on any device loads on any other: the layout is the contract.
Not saved: the envs' own state and the live recurrent state, so `--resume` restarts the envs from
fresh seeds and a resumed run is not bit-identical to an uninterrupted one (everything else is).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from fastvec.trainer.reference import FlatLayout, PolicySpec, param_table

FORMAT = "fastvec-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be used here: not a checkpoint, another version, or another architecture."""


def save(path: Path, spec: PolicySpec, env: str, num_agents: int, state: dict, config: dict) -> Path:
    """Write a checkpoint atomically (temp file, then rename) and return its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    policy = spec.as_dict()
    meta = {
        "format": FORMAT, "version": VERSION, "env": env,
        "obs_size": policy.pop("obs_size"), "num_actions": policy.pop("num_actions"), "num_agents": num_agents,
        "policy": policy, "layout": [[name, list(shape)] for name, shape in param_table(spec)],
        "counters": state.get("counters", {}), "rng": state.get("rng"), "config": config, "time": time.time(),
    }
    arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8),
              "params": np.asarray(state["params"], np.float32)}
    if state.get("optimizer") is not None:
        arrays["optimizer"] = np.asarray(state["optimizer"], np.float32)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    return path


def load(path: Path) -> tuple[dict, dict]:
    """Read a checkpoint: (meta, state) where state has params, optimizer, counters, rng."""
    path = Path(path)
    if path.is_dir():
        path = latest(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(bytes(archive["meta"]).decode())
            state = {"params": archive["params"].copy(),
                     "optimizer": archive["optimizer"].copy() if "optimizer" in archive.files else None}
    except (OSError, KeyError, ValueError) as err:
        raise CheckpointError(f"{path} is not a fastvec checkpoint ({err}); checkpoints are the .npz files "
                              f"under RUN_DIR/checkpoints/") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a fastvec checkpoint (format {meta.get('format')!r})")
    if meta.get("version") != VERSION:
        raise CheckpointError(f"{path} is checkpoint format version {meta.get('version')}, this fastvec reads "
                              f"version {VERSION}; evaluate it with the fastvec release that wrote it")
    state["counters"] = meta.get("counters", {})
    state["rng"] = meta.get("rng")
    spec = spec_of(meta)
    expected = [[name, list(shape)] for name, shape in param_table(spec)]
    if meta["layout"] != expected or state["params"].shape != (FlatLayout(param_table(spec)).size,):
        raise CheckpointError(f"{path}: its parameter layout does not match its recorded architecture; "
                              f"the file is damaged or from an incompatible fastvec")
    return meta, state


def spec_of(meta: dict) -> PolicySpec:
    """The architecture recorded in a checkpoint."""
    return PolicySpec(obs_size=meta["obs_size"], num_actions=meta["num_actions"], **meta["policy"])


def describe(spec: PolicySpec) -> str:
    extra = f", highway={str(spec.highway).lower()}" if spec.recurrent else ""
    return (f"policy.kind={spec.kind}, policy.hidden={spec.hidden}, policy.layers={spec.layers}{extra} "
            f"(obs {spec.obs_size}, actions {spec.num_actions})")


def check_compatible(meta: dict, spec: PolicySpec, env: str, path) -> None:
    """Raise a CheckpointError naming the difference if the checkpoint cannot drive this env/policy."""
    saved = spec_of(meta)
    if meta["env"] != env or (saved.obs_size, saved.num_actions) != (spec.obs_size, spec.num_actions):
        raise CheckpointError(f"{path} was trained on {meta['env']} (obs {saved.obs_size}, actions "
                              f"{saved.num_actions}), not {env} (obs {spec.obs_size}, actions {spec.num_actions})")
    if saved != spec:
        raise CheckpointError(f"{path} holds another architecture: {describe(saved)}; this run asks for "
                              f"{describe(spec)}. Pass the checkpoint's policy settings on the command line, "
                              f"or start a fresh run")


def latest(run_dir: Path) -> Path:
    """The newest checkpoint in RUN_DIR/checkpoints (or in the directory itself)."""
    run_dir = Path(run_dir)
    folder = run_dir / "checkpoints" if (run_dir / "checkpoints").is_dir() else run_dir
    files = sorted(folder.glob("*.npz"), key=lambda p: p.stat().st_mtime)
    files = [f for f in files if not f.name.endswith(".tmp.npz")]
    if not files:
        raise CheckpointError(f"no checkpoint (*.npz) in {folder}")
    return files[-1]
