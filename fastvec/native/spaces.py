"""An env's spaces as its build declares them (spaces.h, read back from the CPU library or the GPU module):
the action space's kind, sizes and bounds, the observation's shape and bounds, the state size; and the
checks and error messages for bad actions that the CPU and GPU backends share."""

from __future__ import annotations

import dataclasses

import numpy as np

# ACTION_SPACE's values in fastvec.h (FV_DISCRETE, FV_MULTI_DISCRETE, FV_BOX).
ACTION_KINDS = {0: "discrete", 1: "multi_discrete", 2: "box"}
MAX_OBS_DIMS = 8  # spaces.h's FV_MAX_OBS_DIMS


# The sizes a build declares (batch.h's fv_obs_size, ...): the constant of the env file that sets each, and
# its least value. batch.h returns them as C ints, so a value past 2**31-1 reads back negative.
DECLARED_SIZES = {"obs_size": ("OBS_SIZE", 1), "num_agents": ("NUM_AGENTS", 1), "num_stats": ("NUM_STATS", 0),
                  "render_width": ("RENDER_W", 1), "render_height": ("RENDER_H", 1), "slot_size": ("State", 1)}


def check_declared_sizes(name: str, ints: dict[str, int]) -> None:
    """A ValueError naming the constant of the first size in `ints` that cannot size an array."""
    for key, (constant, least) in DECLARED_SIZES.items():
        value = ints.get(key)
        if value is None or value >= least:
            continue
        if key == "slot_size":
            raise ValueError(f"{name}: sizeof(State) does not fit in a C int (it reads back as {value}): "
                             f"keep State under 2 GiB")
        raise ValueError(f"{name}: {constant} reads back as {value}; it must be at least {least} "
                         f"and at most 2**31-1 (a C int)")


class ActionError(ValueError):
    """An action that may not reach the env (out of range for a discrete space, NaN or infinite for a
    Box); the batch was not stepped."""


@dataclasses.dataclass(frozen=True, eq=False)
class EnvSpaces:
    """Per agent: the action space (kind, nvec for the discrete kinds, low/high for Box, float32) and the
    observation space (shape, dtype, low/high per element); state_size: the float64 values of the env's
    state access (fastvec.h's STATE_SIZE), -1 where the env has none."""

    name: str
    action_kind: str
    nvec: np.ndarray
    action_low: np.ndarray
    action_high: np.ndarray
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    obs_low: np.ndarray
    obs_high: np.ndarray
    state_size: int

    @classmethod
    def from_arrays(cls, name: str, kind: int, obs_size: int, obs_dtype, ndim: int, shape: np.ndarray,
                    obs_low: np.ndarray, obs_high: np.ndarray, nvec: np.ndarray, action_low: np.ndarray,
                    action_high: np.ndarray, state_size: int) -> EnvSpaces:
        """The spaces from what spaces.h's fv_spaces fills in; a ValueError names what the env file got wrong."""
        if kind not in ACTION_KINDS:
            raise ValueError(f"{name}: ACTION_SPACE is {kind}, not FV_DISCRETE, FV_MULTI_DISCRETE or FV_BOX")
        if not 1 <= ndim <= MAX_OBS_DIMS:
            raise ValueError(f"{name}: OBS_SHAPE has {ndim} axes; fastvec takes 1 to {MAX_OBS_DIMS}")
        obs_shape = tuple(int(s) for s in shape[:ndim])
        if int(np.prod(obs_shape)) != obs_size or min(obs_shape) < 1:
            raise ValueError(f"{name}: OBS_SHAPE {obs_shape} does not hold OBS_SIZE={obs_size} elements")
        if len(nvec) < 1:
            raise ValueError(f"{name}: ACTION_DIMS must be at least 1")
        if state_size != -1 and state_size < 1:  # -1: the env declares no state access
            raise ValueError(f"{name}: STATE_SIZE is {state_size}; it must be at least 1 (the float64 values of "
                             f"env_get_state) and at most 2**31-1")
        kind_name = ACTION_KINDS[kind]
        if kind_name != "box" and (nvec < 1).any():
            raise ValueError(f"{name}: every discrete action count must be at least 1, got {nvec.tolist()}")
        if kind_name == "box" and not (action_low <= action_high).all():
            raise ValueError(f"{name}: ACTION_LOW {action_low.tolist()} is above ACTION_HIGH {action_high.tolist()}")
        return cls(name, kind_name, nvec.astype(np.int64), action_low.astype(np.float32),
                   action_high.astype(np.float32), obs_shape, np.dtype(obs_dtype), obs_low.astype(np.float32),
                   obs_high.astype(np.float32), int(state_size))

    @property
    def action_dims(self) -> int:
        return len(self.nvec)

    @property
    def action_dtype(self) -> np.dtype:
        """What env_step receives: float32 for Box, int64 for the discrete kinds."""
        return np.dtype(np.float32 if self.action_kind == "box" else np.int64)

    @property
    def num_actions(self) -> int:
        """Discrete(n)'s n; 0 for the other kinds."""
        return int(self.nvec[0]) if self.action_kind == "discrete" else 0

    def describe(self) -> str:
        """The action space as Gymnasium prints it: Discrete(3), MultiDiscrete([3 4]), Box(-2.0, 2.0, (1,), float32)."""
        if self.action_kind == "discrete":
            return f"Discrete({self.num_actions})"
        if self.action_kind == "multi_discrete":
            return f"MultiDiscrete({self.nvec})"
        low, high = (b[0] if (b == b[0]).all() else b for b in (self.action_low, self.action_high))
        return f"Box({low}, {high}, ({self.action_dims},), float32)"

    def accepts_dtype(self, dtype: np.dtype) -> bool:
        """Whether actions of this dtype are of the space's kind: integers for the discrete kinds;
        floats (or integers, which convert exactly enough) for Box."""
        return dtype.kind in ("iuf" if self.action_kind == "box" else "iu")

    def first_bad(self, actions: np.ndarray) -> int | None:
        """The flat index of the first value of actions (..., ACTION_DIMS) that may not reach env_step, or None."""
        flat = actions.reshape(-1, self.action_dims)
        if self.action_kind == "box":
            bad = ~np.isfinite(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, np.bool_)
        else:
            bad = (flat < 0) | (flat >= self.nvec)
        if not bad.any():
            return None
        return int(np.flatnonzero(bad.ravel())[0])

    def action_error(self, flat: int, value, num_agents: int, where: str = "") -> ActionError:
        """The error for value `value` at flat index `flat` of actions (N, num_agents, ACTION_DIMS)."""
        env, rest = divmod(int(flat), num_agents * self.action_dims)
        agent, dim = divmod(rest, self.action_dims)
        at = f"env {env}" + (f", agent {agent}" if num_agents > 1 else "")
        if self.action_kind == "discrete":
            return ActionError(f"action {value} out of range for {self.describe()} at {at}{where}")
        at += f", dimension {dim}"
        if self.action_kind == "multi_discrete":
            return ActionError(f"action {value} out of range for {self.describe()} at {at} (dimension {dim} takes "
                               f"0 to {self.nvec[dim] - 1}){where}")
        return ActionError(f"action {value} at {at} is not a finite number: actions of {self.name}'s "
                           f"{self.describe()} must be finite (a finite one outside the bounds is clipped by the "
                           f"env){where}")
