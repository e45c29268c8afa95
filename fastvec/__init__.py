"""fastvec: native vectorized RL environments (CPU and GPU) behind the Gymnasium and PettingZoo
APIs, and a fast PPO trainer. `import fastvec` registers the `fastvec/...` Gymnasium ids."""

from __future__ import annotations

import os

import gymnasium

from fastvec.native import ENVS

__version__ = "0.1.0"
__all__ = ["make_vec", "make_vec_from_source", "ENVS", "__version__"]


# Gymnasium's `reward_threshold` (the return at which a task counts as solved), from the Gymnasium env each
# fastvec env reproduces: CartPole is CartPole-v1 (500 steps, threshold 475.0), and so on for the classic-control
# envs (Pendulum-v1 declares none). Breakout and Pong are fastvec's own games from state (not ALE's pixel games),
# so they have no declared threshold (None).
REWARD_THRESHOLDS = {"fastvec/CartPole": 475.0, "fastvec/Acrobot": -100.0, "fastvec/MountainCar": -110.0,
                     "fastvec/MountainCarContinuous": 90.0}


def _register_gymnasium() -> None:
    # Unversioned ids only: registering a versioned twin would make Gymnasium warn on every make.
    for info in ENVS.values():
        cls = info.gym_id.split("/")[1]
        if info.gym_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=info.gym_id,
            entry_point=f"fastvec.wrappers.gymnasium:{cls}Env",
            vector_entry_point=f"fastvec.wrappers.gymnasium:{cls}VectorEnv",
            max_episode_steps=info.max_episode_steps,
            reward_threshold=REWARD_THRESHOLDS.get(info.gym_id),
        )
    from fastvec.native.mujoco import TASKS  # the MuJoCo tasks: nothing built (nor mujoco imported) until one is made

    for task, steps in TASKS.items():
        gym_id = f"fastvec/{task}-v5"
        if gym_id not in gymnasium.registry:
            gymnasium.register(id=gym_id, entry_point="fastvec.wrappers.mujoco:MujocoEnv",
                               vector_entry_point="fastvec.wrappers.mujoco:MujocoVectorEnv",
                               max_episode_steps=steps, kwargs={"task": task},
                               reward_threshold=gymnasium.spec(f"{task}-v5").reward_threshold)


_register_gymnasium()

from fastvec.pettingzoo import register_pettingzoo  # noqa: E402  (the face itself is imported on first use)

register_pettingzoo()  # pettingzoo.make has no "module:id" syntax, so `import fastvec` registers


def make_vec(env_id: str, num_envs: int = 1, **kwargs):
    """`gymnasium.make_vec` for a fastvec env, accepting the short name (`"Breakout"`) too."""
    if "/" not in env_id:
        env_id = f"fastvec/{env_id}"
    return gymnasium.make_vec(env_id, num_envs=num_envs, **kwargs)


def make_vec_from_source(path: str | os.PathLike, num_envs: int = 1, **kwargs):
    """A `VectorEnv` for a user's env file (see examples/my_env.h); extra keyword arguments that
    are not VectorEnv options become -D defines for the compiler, e.g. `grid_size=8`."""
    from fastvec.wrappers.gymnasium import NativeVectorEnv

    return NativeVectorEnv(num_envs, source=path, **kwargs)
