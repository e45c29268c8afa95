"""What fastvec-train does once its arguments are parsed: train (a config resolved once, resolve.py; its trainer;
the loop, loop.py) and evaluate a checkpoint (mean return and env stats, optionally a GIF/MP4 of one episode)."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from fastvec.trainer import checkpoint
from fastvec.trainer.agent_inputs import AgentInputs
from fastvec.trainer.config import ConfigError
from fastvec.trainer.loop import train_loop
from fastvec.trainer.protocol import Trainer
from fastvec.trainer.resolve import EnvSource, Resolved, make_batch
# default_run_dir, file_op and repair_metrics stay reachable as run.NAME (sweep.py, tests, benchmarks use them)
from fastvec.trainer.run_dir import (TrainingDiverged, claim, default_run_dir, file_op,  # noqa: F401
                                     repair_metrics, warn_if_source_changed)
from fastvec.trainer.settings import Config


def cuda_trainer_available() -> bool:
    """True when the fused CUDA trainer (fastvec.trainer.cuda) is installed and sees a GPU."""
    try:
        from fastvec.trainer import cuda as cuda_trainer
    except ImportError:
        return False
    return cuda_trainer.available()


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
    """Close the env batches (a GymBatch's envs, an async one's subprocesses; a CpuBatch's close returns at once)."""
    for batch in batches:
        batch.close()


def make_trainer(config: Config | dict | Resolved) -> Trainer:
    """The trainer for a config (resolved here for the device train.device asks for, or already `Resolved`); its
    config records the device chosen, not "auto". With selfplay.enabled its batch is the learner's seats of a
    multi-agent batch and `trainer.selfplay` holds the pool and the evaluations (selfplay.py). On the CUDA trainer,
    train.env_device=cpu steps the env on the CPU (host environments; self-play's opponents then act with NumPy
    beside it), "cuda" steps it, and self-play's opponents, in the rollout graph."""
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    resolved = config
    if not isinstance(resolved, Resolved):
        config = Config.of(config)
        resolved = Resolved(config, resolve_device(config.train.device))
    config, batch, spec = resolved.config, resolved.batch, resolved.spec
    batches = [batch]
    try:
        league = None
        if config.selfplay.enabled:
            from fastvec.trainer.selfplay import SelfPlay
            league = SelfPlay(config)
            batch = league.wrap(batch, spec, on_gpu=config.train.device == "cuda" and config.train.env_device == "cuda")
        if config.train.device == "cuda":  # pragma: no cover - needs a GPU (tests/trainer/test_cuda.py)
            trainer = _cuda_trainer(resolved, batch, league, batches)
        else:
            trainer = NumpyTrainer(config, batch, spec)
    except BaseException:
        close_batches(batches)
        raise
    trainer.selfplay = league
    trainer.env_batches = batches  # closed when the run ends (close_batches)
    return trainer


def _cuda_trainer(resolved: Resolved, batch, league, batches: list):  # pragma: no cover - needs a GPU
    """The CUDA trainer of the learner's `batch`; self-play's one SelfPlayBatch cannot be split, so it is one env
    group; a user's env or a Gymnasium env on the host gets its groups' batches here (added to `batches`; the trainer
    builds built-in ones)."""
    from fastvec.trainer.cuda.trainer import CudaTrainer
    config = resolved.config
    on_host = config.train.env_device == "cpu"
    host_batches = [batch] if league is not None and on_host else None
    if config.env_kind != "builtin" and on_host:
        from fastvec.trainer.cuda.host_envs import env_ranges
        ranges = env_ranges(batch.num_envs, config.train.env_groups, None)
        host_batches = [batch] if len(ranges) == 1 else [resolved.env.batch(hi - lo) for lo, hi in ranges]
        batches += host_batches[1:] if len(ranges) == 1 else host_batches
    return CudaTrainer(config, batch, resolved.spec, host_batches)


def blas_threads(count: int):
    """A context limiting NumPy's BLAS to `count` threads (0: no limit); see train.blas_threads."""
    if count <= 0:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(count, user_api="blas")


def train(config: Config | dict, run_dir: Path, resume: bool = False, dashboard: bool | None = None, watch=None,
          overwrite: bool = False) -> dict:
    """Train per config, writing RUN_DIR/config.toml, metrics.jsonl and checkpoints/. With resume, load the
    newest checkpoint in run_dir and continue; without, run_dir must not hold a run already unless overwrite
    (run_dir.claim). Returns a summary (last metrics, checkpoint path, ...).
    watch(metrics or None, training seconds, trained steps), called after every update (with the log's metrics
    when it logged), ends the run there when it returns True: fastvec-sweep's pruning and trial budgets. Its calls'
    own time is not training time: not in the seconds it is given, the logs' times or the summary's.
    What a stop costs: a checkpoint comes every train.checkpoint_interval updates and every
    train.checkpoint_seconds of training, so kill -9 loses at most the smaller of the two (plus the update in
    progress). SIGTERM and SIGINT (Ctrl-C) stop at the next update boundary and save a checkpoint there, counting
    only the steps the updates trained on; a second Ctrl-C stops at once (a save in progress first), keeping the
    last checkpoint. A NaN or infinite loss or weight stops the run (TrainingDiverged); no such weights are saved.
    --resume takes the newest valid checkpoint by update number (checkpoint.newest_valid), cutting metrics.jsonl
    back."""
    from fastvec.trainer import distributed
    config = Config.of(config)
    launched = distributed.launched()
    # A launcher's ranks each call this; rank 0 alone writes run_dir (the others train in scratch directories).
    writes = not resume and (not launched or distributed.discover().rank == 0)
    release = claim(run_dir, config, overwrite) if writes else None
    try:
        if config.train.gpus > 1 or launched:  # one process per GPU, or one rank of a launcher's job
            return distributed.train(config, run_dir, resume, dashboard, train_one_process)
        return train_one_process(config, run_dir, resume, dashboard, watch)
    except BaseException:
        if release is not None:
            release()
        raise


def train_one_process(config: Config | dict, run_dir: Path, resume: bool, dashboard: bool | None,
                      watch=None) -> dict:
    """The training loop in this process (alone, or as one rank with its process group active)."""
    config = Config.of(config)
    # NumPy's overflow warnings would bury the one line that reports a divergence (the loop checks finiteness).
    with blas_threads(config.train.blas_threads), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        made = time.perf_counter()
        resolved = Resolved(config, resolve_device(config.train.device))
        trainer = make_trainer(resolved)
        try:
            return train_loop(trainer, time.perf_counter() - made, Path(run_dir), resume, dashboard, watch)
        finally:
            close_batches(trainer.env_batches)


def rank_main(argv: list[str] | None = None) -> int:
    """The entry point of one rank that distributed.spawn starts (`--train.gpus=N`)."""
    from fastvec.trainer import distributed
    return distributed.main(argv, train_one_process)


def evaluate(config: Config | dict, path: Path, render: str = "") -> dict:
    """Play eval.episodes episodes (one per env, in parallel, so short episodes are not over-counted)
    with the checkpoint's policy; optionally record one more episode to a GIF/MP4. Returns the means."""
    config = Config.of(config)
    with blas_threads(config.train.blas_threads):
        return _evaluate(config, path, render)


def _evaluate(config: Config, path: Path, render: str) -> dict:
    meta, state = checkpoint.load(path)
    warn_if_source_changed(meta, config, path)
    batch = make_batch(config, config.eval.episodes)
    try:
        return _evaluate_batch(config, path, render, meta, state, batch)
    finally:
        close_batches([batch])


def _evaluate_batch(config: Config, path: Path, render: str, meta: dict, state: dict, batch) -> dict:
    from fastvec.trainer.reference import FlatLayout, param_table, policy_act

    env = config.env.name
    spec = checkpoint.spec_of(meta)
    episodes = config.eval.episodes
    # the env and the sizes must match (each side named with its own); the architecture is the file's
    checkpoint.check_env(meta, env, batch.env.obs_size, batch.env.num_actions, path)
    params = FlatLayout(param_table(spec)).views(state["params"])
    rng = np.random.default_rng(config.train.seed + 1_000_003)
    deterministic = config.eval.deterministic
    seeds = (np.uint64(config.train.seed + 7) << np.uint64(32)) + np.arange(episodes, dtype=np.uint64)
    batch.reset(seeds, None)
    num_agents, inputs = batch.obs.shape[1], AgentInputs(spec, batch)
    rows = episodes * num_agents
    hidden_state = np.zeros((spec.state_layers, rows, spec.hidden), np.float32)
    starts = np.ones(rows, np.float32)
    finished = np.zeros(episodes, bool)
    returns = np.zeros(episodes)
    lengths = np.zeros(episodes)
    stats = np.zeros((episodes, len(batch.env.stat_names)))
    while not finished.all():
        actions, _, _, hidden_state = policy_act(spec, params, inputs.obs().astype(np.float32), starts, hidden_state,
                                                 rng, deterministic, mask=inputs.mask(), world=inputs.world())
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


def record_episode(config: Config, spec, params, path: str, rng, deterministic: bool) -> Path:
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
    env = EnvSource(config)
    batch = env.render_batch()
    try:
        batch.reset(np.array([config.train.seed], np.uint64), None)
        num_agents, inputs = batch.obs.shape[1], AgentInputs(spec, batch)
        state = np.zeros((spec.state_layers, num_agents, spec.hidden), np.float32)
        starts = np.ones(num_agents, np.float32)
        frames = [batch.render(0)]
        for _ in range(config.eval.render_max_frames):
            actions, _, _, state = policy_act(spec, params, inputs.obs().astype(np.float32), starts, state, rng,
                                              deterministic, mask=inputs.mask(), world=inputs.world())
            batch.step(actions.reshape(1, num_agents, *spec.action_shape))
            if batch.terminated[0] or batch.truncated[0]:
                break  # the env has already reset (SAME_STEP), so its next frame belongs to a new episode
            starts[:] = 0
            frames.append(batch.render(0))
    finally:
        close_batches([batch])
    fps = env.frame_rate(batch)
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
