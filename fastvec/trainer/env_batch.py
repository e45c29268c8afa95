"""The env a config trains, made: the batch a training run steps on the host (a built-in env, a team env, a user's
env file or a Gymnasium id; run.py's trainers, self-play's training and evaluation games, --eval), what a GPU build
of it compiles (env_build); where its episodes are truncated is Config.step_limit."""

from __future__ import annotations

from pathlib import Path

from fastvec.native import resolve_defines, source_path
from fastvec.native.batches import load_batch
from fastvec.trainer import teams
from fastvec.trainer.config import ConfigError, source_defines
from fastvec.trainer.settings import Config


def make_batch(config: Config | dict, num_envs: int | None = None, render: bool = False):
    """A host batch of the configured env in SAME_STEP autoreset: a built-in env, a team env (teams.load) or a user's
    env file (env.source, its -D defines from [env]) as a CpuBatch (native.batches.load_batch) stepped by
    train.env_threads threads, or a Gymnasium id (env.gym_id) as a GymBatch (native/gym_batch.py) over Gymnasium's own vector env, except
    fastvec's MuJoCo tasks (fastvec/Hopper-v5, ...), made as a MujocoHostBatch (native/mujoco/host_batch.py) over
    the C batch itself. A Gymnasium env the trainer cannot train, or whose make refuses the [env] arguments, is a
    ConfigError."""
    config = Config.of(config)
    env, threads = config.env, config.train.env_threads
    num_envs = num_envs or env.num_envs
    if config.env_kind == "team":
        return teams.load(env.name, dict(env.params), num_envs, config.step_limit, threads)
    if config.env_kind in ("builtin", "source"):
        source, params = (env.name, dict(env.params)) if config.env_kind == "builtin" else \
            (Path(env.source), source_defines(env.source, env.params))
        return load_batch(source, num_envs, params, max_episode_steps=config.step_limit, threads=threads)
    gym_id, limit = env.gym_id, env.max_episode_steps
    task = mujoco_task(gym_id)
    if task is not None:
        batch = _mujoco_batch(task, num_envs, env.params, limit, threads)
        if render:
            from fastvec.wrappers.mujoco import Frames
            batch.frames = Frames(task, batch.mj, "rgb_array", {})
        return batch
    import gymnasium

    from fastvec.native.gym_batch import GymBatch, SpaceError
    make_args = {**env.params, **({"max_episode_steps": limit} if limit > 0 else {})}
    try:
        return GymBatch(gym_id, num_envs, make_args, env.gym_vectorization, render=render)
    except SpaceError as err:
        raise ConfigError(str(err)) from None
    except TypeError as err:  # gymnasium.make's error for an argument the env does not take
        raise ConfigError(f"gym:{gym_id} refused its [env] arguments {dict(env.params)}: {err}") from None
    except (gymnasium.error.Error, ImportError) as err:  # e.g. DependencyNotInstalled (Box2D, ALE)
        raise ConfigError(f"gym:{gym_id} could not be made: {err}") from None


def mujoco_task(gym_id: str) -> str | None:
    """The fastvec MuJoCo task that Gymnasium id `gym_id` registers (fastvec/Hopper-v5 -> Hopper), or None."""
    from fastvec.native.mujoco.host_batch import GYM_IDS
    return GYM_IDS.get(gym_id.lower()) if gym_id else None


def _mujoco_batch(task: str, num_envs: int, params: dict, limit: int, threads: int):
    from fastvec.native.mujoco.host_batch import MujocoHostBatch, gym_id
    try:
        return MujocoHostBatch(task, num_envs, max_episode_steps=limit if limit > 0 else None, threads=threads,
                               **params)
    except ImportError as err:  # no mujoco package
        raise ConfigError(f"{gym_id(task)}: {err}") from None
    except (TypeError, ValueError, FileNotFoundError) as err:  # a keyword the task does not take, a bad value
        raise ConfigError(f"{gym_id(task)} refused its [env] arguments {dict(params)}: {err}") from None


def env_build(config: Config, batch) -> tuple[Path, dict, int]:
    """What a GPU build of config's env compiles (the CUDA trainer's module): (the env source, its -D defines, its
    step limit, 0 for none). A built-in env's registered file, a user's env file (env.source), or for a Gymnasium
    env, which steps on the host, a stub of its sizes (batch.env's; gym_batch.host_stub_source) that the host-env
    kernels are compiled around."""
    env = config.env
    if config.env_kind == "builtin":
        return source_path(env.name), resolve_defines(env.name, dict(env.params)), config.step_limit
    if config.env_kind == "source":
        return Path(env.source), source_defines(env.source, env.params), config.step_limit
    if config.env_kind == "team":
        source, defines, _ = teams.build(env.name, dict(env.params))
        return source, defines, config.step_limit
    from fastvec.native.cpu import cache_dir
    from fastvec.native.gym_batch import host_stub_source
    return host_stub_source(batch.env, cache_dir()), {}, 0
