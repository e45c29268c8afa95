"""JaxMARL's baseline scripts (baselines/IPPO, baselines/MAPPO of a JaxMARL checkout) as a peer's program: their
paths and published yaml configs, the config as hydra reads it, wandb quieted, the script loaded as a module, and
the io_callback each script logs through wrapped so that every update's finished episodes reach the host with its
clock. Runs in the peer's Python (JAX, jaxmarl); no fastvec import."""

from __future__ import annotations

import sys
import threading
import types
from contextlib import contextmanager
from pathlib import Path

# (family, algorithm) -> the JaxMARL script and its published config, relative to a checkout. IPPO on MPE is the
# recurrent script: ippo_ff_mpe.py averages its metrics before its callback, so its episodes cannot be counted.
SCRIPTS = {
    ("smax", "ippo"): ("baselines/IPPO/ippo_rnn_smax.py", "baselines/IPPO/config/ippo_rnn_smax.yaml"),
    ("smax", "mappo"): ("baselines/MAPPO/mappo_rnn_smax.py", "baselines/MAPPO/config/mappo_homogenous_rnn_smax.yaml"),
    ("mpe", "ippo"): ("baselines/IPPO/ippo_rnn_mpe.py", "baselines/IPPO/config/ippo_rnn_mpe.yaml"),
    ("mpe", "mappo"): ("baselines/MAPPO/mappo_rnn_mpe.py", "baselines/MAPPO/config/mappo_homogenous_rnn_mpe.yaml"),
}


def script_paths(repo: Path, family: str, algo: str) -> tuple[Path, Path]:
    """The JaxMARL script and yaml config of (family, algo) in a checkout; errors say what was looked for."""
    script, config = (Path(repo) / p for p in SCRIPTS[family, algo])
    for path in (script, config):
        if not path.is_file():
            raise SystemExit(f"--jaxmarl-repo {repo}: no {path.relative_to(repo)} there; give a checkout of "
                             "github.com/FLAIROx/JaxMARL (its baselines/ are not in the pip package)")
    return script, config


def peer_config(config_path: Path, scenario_keys: dict, overrides: dict) -> dict:
    """The script's config as hydra gives it (OmegaConf's yaml reading, so 1e7 is a float), the scenario's keys and
    the overrides on top; interpolations left unresolved (only the wandb keys have any)."""
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(OmegaConf.load(config_path), resolve=False)
    unknown = [k for k in overrides if k not in config]
    if unknown:
        raise SystemExit(f"--peer-set {unknown}: not in {config_path.name}; its keys: {', '.join(config)}")
    return {**config, **scenario_keys, **overrides}


def quiet_wandb() -> None:
    """wandb as the scripts' callbacks call it with WANDB_MODE disabled: a disabled run where wandb is installed,
    else a stand-in module whose log() does nothing."""
    try:
        import wandb
    except ImportError:
        sys.modules["wandb"] = types.SimpleNamespace(log=lambda *a, **k: None, init=lambda *a, **k: None)
        return
    wandb.init(mode="disabled")


def load_script(path: Path):
    """The JaxMARL script as a module (its hydra main is not run)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"jaxmarl_baseline_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def update_record(metric: dict, num_steps: int, num_envs: int, now: float, log_scale: str) -> dict:
    """One update's finished episodes from the metric a script hands its callback: its info arrays per step, env
    and agent ((T, E, A) or (T, E * A)); an episode ends where agent 0's returned_episode is set; its return is the
    mean over the agents, its win agent 0's returned_won_episode (the same for every ally). log_scale "agents":
    the wrapper logged each reward times the number of agents (MPELogWrapper, "as per the on-policy codebase";
    training uses the env's own), divided back here so that the return is the env's."""
    import numpy as np

    def per_agent(key):
        x = np.asarray(metric[key])
        if x.size % (num_steps * num_envs) or x.size < num_steps * num_envs:
            raise RuntimeError(f"the script's callback gets {key} of shape {x.shape}, not one value per step, env "
                               "and agent: its episodes cannot be counted (a script that averages its metrics "
                               "first, such as ippo_ff_mpe.py, cannot be read)")
        return x.reshape(num_steps, num_envs, -1)

    done = per_agent("returned_episode")[:, :, 0].astype(bool)
    returns = per_agent("returned_episode_returns")
    record = {"update": int(np.asarray(metric["update_steps"])) if "update_steps" in metric else None, "t": now,
              "episodes": int(done.sum()),
              "return_sum": float(returns.mean(-1)[done].sum()) / (returns.shape[-1] if log_scale == "agents" else 1)}
    if "returned_won_episode" in metric:
        record["win_sum"] = float(per_agent("returned_won_episode")[:, :, 0][done].sum())
    return record


_TRACING = threading.local()  # the records, clock and shapes of the program this thread is tracing
_PATCH = {"depth": 0, "original": None, "lock": threading.Lock()}


@contextmanager
def recorded_callbacks(records: list, clock, num_steps: int, num_envs: int, log_scale: str, on_update=None):
    """jax.experimental.io_callback wrapped while a script is traced in this thread: each update's callback first
    appends its update_record (host clock now) and calls on_update(record) if given (an exception there ends the
    program: the script's callback is not run), then runs the script's own callback. Programs traced in other
    threads at the same time keep their own records."""
    import jax.experimental

    with _PATCH["lock"]:
        if not _PATCH["depth"]:
            _PATCH["original"] = jax.experimental.io_callback
            jax.experimental.io_callback = _stamped_io_callback
        _PATCH["depth"] += 1
    _TRACING.target = (records, clock, num_steps, num_envs, log_scale, on_update)
    try:
        yield
    finally:
        _TRACING.target = None
        with _PATCH["lock"]:
            _PATCH["depth"] -= 1
            if not _PATCH["depth"]:
                jax.experimental.io_callback = _PATCH["original"]


def _stamped_io_callback(callback, result_shape_dtypes, *args, **kwargs):
    target, original = getattr(_TRACING, "target", None), _PATCH["original"]
    if target is None:  # traced outside recorded_callbacks (another thread's program): as JAX's own
        return original(callback, result_shape_dtypes, *args, **kwargs)
    records, clock, num_steps, num_envs, log_scale, on_update = target

    def stamped(*values, **named):
        records.append(update_record(values[0], num_steps, num_envs, clock(), log_scale))
        if on_update is not None:
            on_update(records[-1])
        return callback(*values, **named)
    return original(stamped, result_shape_dtypes, *args, **kwargs)


def jaxmarl_version() -> str | None:
    try:
        import jaxmarl
    except ImportError:  # a stand-in checkout's scripts need not import it
        return None
    return getattr(jaxmarl, "__version__", None) or str(Path(jaxmarl.__file__).parent)
