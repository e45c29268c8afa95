"""The env batch a training run steps on the host for a config: a built-in env, a user's env file or a
Gymnasium id (run.py's trainers, self-play's training and evaluation games, --eval)."""

from __future__ import annotations

from pathlib import Path

from fastvec import native
from fastvec.native.batches import make_batch as make_env_batch
from fastvec.trainer.config import ConfigError, env_kind, env_params, source_defines, step_limit


def make_batch(config: dict, num_envs: int | None = None, render: bool = False):
    """A host batch of the configured env in SAME_STEP autoreset: a built-in env (native.batches.make_batch) or a
    user's env file (env.source, its -D defines from [env]) as a CpuBatch stepped by train.env_threads threads, or
    a Gymnasium id (env.gym_id) as a GymBatch (native/gym_batch.py) over Gymnasium's own vector env. A Gymnasium
    env the trainer cannot train, or whose make refuses the [env] arguments, is a ConfigError."""
    num_envs = num_envs or config["env"]["num_envs"]
    kind, threads = env_kind(config), config["train"]["env_threads"]
    if kind == "builtin":
        return make_env_batch(config["env"]["name"], num_envs, env_params(config), threads, step_limit(config))
    if kind == "source":
        compiled = native.cpu.load(Path(config["env"]["source"]), tuple(sorted(source_defines(config).items())))
        if threads > 0:
            compiled.lib.fv_set_num_threads(threads)
        return native.cpu.CpuBatch(compiled, num_envs, native.AUTORESET_CODES["SameStep"], step_limit(config) or None)
    import gymnasium

    from fastvec.native.gym_batch import GymBatch, SpaceError
    gym_id, limit = config["env"]["gym_id"], config["env"]["max_episode_steps"]
    if limit == 0:
        raise ConfigError(f"env.max_episode_steps=0 (never truncate) is not available for gym:{gym_id}: its "
                          "registration's TimeLimit applies; give a step count (> 0) or -1 (the registration's)")
    make_args = {**env_params(config), **({"max_episode_steps": limit} if limit > 0 else {})}
    try:
        return GymBatch(gym_id, num_envs, make_args, config["env"]["gym_vectorization"], render=render)
    except SpaceError as err:
        raise ConfigError(str(err)) from None
    except TypeError as err:  # gymnasium.make's error for an argument the env does not take
        raise ConfigError(f"gym:{gym_id} refused its [env] arguments {env_params(config)}: {err}") from None
    except (gymnasium.error.Error, ImportError) as err:  # e.g. DependencyNotInstalled (Box2D, ALE)
        raise ConfigError(f"gym:{gym_id} could not be made: {err}") from None
