"""What the training loop (run.py, loop.py) uses of a trainer: `Trainer`, which NumpyTrainer (numpy_trainer.py) and
CudaTrainer (cuda/trainer.py) both are. Every member is always there; where one does not apply it is a no-op."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from fastvec.trainer.reference import FlatLayout, PolicySpec
    from fastvec.trainer.selfplay import SelfPlay
    from fastvec.trainer.settings import Config


class Trainer(Protocol):
    """A PPO trainer over one env batch: `rollout()` collects, `update()` trains on what it collected."""

    config: Config  # the run's config, as resolved for this trainer (train.device and train.env_device chosen)
    device: str  # "cpu" or "cuda"
    spec: PolicySpec
    layout: FlatLayout
    batch: Any  # the env batch (its num_envs, env.stat_names)
    horizon: int
    num_agents: int
    rank: int  # this process's rank among world_size training processes (0 and 1 alone)
    world_size: int
    update_index: int
    global_step: int  # agent steps collected (with train.async, one rollout ahead of the updates)
    timing: dict[str, float]  # seconds per phase, for the log's time_split
    selfplay: SelfPlay | None  # self-play's pool and evaluations (selfplay.enabled), set by run.make_trainer
    env_batches: list  # the env batches the run closes when it ends, set by run.make_trainer
    gpu_games: Any  # self-play's games on the GPU (cuda/rollouts.py's SelfPlayRollout), else None
    params: np.ndarray  # the flat weights (a host copy on the GPU)

    def describe(self) -> str:
        """The paths chosen for this config, for the start-up log ("": there was no choice)."""

    def warm_up(self, num_updates: int) -> float:
        """Work done once before the first update (the CUDA trainer's graph captures); returns its seconds."""

    def rollout(self) -> None: ...

    def update(self, num_updates: int) -> dict[str, float]: ...

    def pop_episodes(self) -> dict | None:
        """The episodes finished since the last call: their mean return, length and stats, or None."""

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...
