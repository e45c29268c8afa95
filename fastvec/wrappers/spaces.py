"""The Gymnasium spaces of a fastvec env, built from what its env file declares (fastvec/native/spaces.py),
and the checks that bring a user's actions to the batch's layout: kind of dtype and shape here, values
(range, NaN, infinity) in the backends, before anything is stepped."""

from __future__ import annotations

import gymnasium
import numpy as np

from fastvec.native.spaces import EnvSpaces


def _bound(values: np.ndarray, dtype):
    """A Box bound as Gymnasium's own envs write it: a scalar where every element is the same, else the array."""
    if (values == values.flat[0]).all():
        value = values.flat[0]
        return int(value) if np.dtype(dtype).kind == "u" else np.float32(value)
    return values.astype(dtype)


def gym_spaces(compiled) -> tuple[gymnasium.spaces.Box, gymnasium.spaces.Space]:
    """(observation space, action space) of one agent of a compiled env (CPU or GPU build), as Gymnasium
    builds them: Box of float32 or uint8 in OBS_SHAPE with the env file's bounds; Discrete(n),
    MultiDiscrete(nvec) or Box(low, high, (ACTION_DIMS,), float32)."""
    sp: EnvSpaces = compiled.spaces
    dtype = sp.obs_dtype
    low, high = (_bound(b.reshape(sp.obs_shape), dtype) for b in (sp.obs_low, sp.obs_high))
    obs_space = gymnasium.spaces.Box(low, high, sp.obs_shape, dtype)
    if sp.action_kind == "discrete":
        action_space = gymnasium.spaces.Discrete(sp.num_actions)
    elif sp.action_kind == "multi_discrete":
        action_space = gymnasium.spaces.MultiDiscrete(sp.nvec)
    else:
        low, high = (_bound(b, np.float32) for b in (sp.action_low, sp.action_high))
        action_space = gymnasium.spaces.Box(low, high, (sp.action_dims,), np.float32)
    return obs_space, action_space


def _kind_error(sp: EnvSpaces, what: str, dtype) -> TypeError:
    need = "numbers (float32)" if sp.action_kind == "box" else "integers"
    return TypeError(f"{what} must be {need} for {sp.describe()}, got dtype {dtype}")


def check_wide_actions(a: np.ndarray, sp: EnvSpaces) -> None:
    """uint64 actions above 2**63 would read as negative once cast to the batch's int64: refuse them here,
    reporting the value as given (other dtypes are range-checked by the batch itself)."""
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and sp.action_kind != "box":
        flat = sp.first_bad(a)
        if flat is not None:
            raise sp.action_error(flat, a.ravel()[flat], 1)


def clip_beyond_float32(a: np.ndarray, sp: EnvSpaces) -> np.ndarray:
    """Box actions of a wider float dtype (float64) with finite values beyond float32's range, which the batch's
    float32 would hold as infinite and refuse, clipped to the bounds as Gymnasium's envs clip them (NaN and
    infinity are left for the batch to refuse)."""
    if sp.action_kind != "box" or a.dtype.kind != "f" or a.dtype.itemsize <= 4:
        return a
    with np.errstate(invalid="ignore"):
        beyond = np.isfinite(a) & (np.abs(a) > np.finfo(np.float32).max)
    if not beyond.any():
        return a
    return np.where(beyond, np.clip(a.reshape(-1, sp.action_dims), sp.action_low, sp.action_high).reshape(a.shape), a)


def batch_actions(actions, sp: EnvSpaces, num_envs: int) -> np.ndarray:
    """A vector env's actions as an array of num_envs * ACTION_DIMS values in env order, or a TypeError /
    ValueError naming the dtype or shape wanted: (N,) for Discrete (or (N, 1)), (N, D) for the others
    ((N,) too where D is 1)."""
    a = np.asarray(actions)
    if not sp.accepts_dtype(a.dtype):
        raise _kind_error(sp, f"actions (shape ({num_envs},{'' if sp.action_kind == 'discrete' else f' {sp.action_dims}'}))",
                          a.dtype)
    n, d = num_envs, sp.action_dims
    shapes = [(n,), (n, 1)] if sp.action_kind == "discrete" else [(n, d)] + ([(n,)] if d == 1 else [])
    if a.shape not in shapes:
        raise ValueError(f"actions must have shape {' or '.join(map(str, shapes))} for {n} envs of "
                         f"{sp.describe()}, got {a.shape}")
    check_wide_actions(a, sp)
    return clip_beyond_float32(a.reshape(n, d), sp)


def single_action(action, sp: EnvSpaces) -> np.ndarray:
    """One env's action as a (1, ACTION_DIMS) array, or a TypeError / ValueError: an int for Discrete, an
    array of ACTION_DIMS ints (MultiDiscrete) or numbers (Box)."""
    if sp.action_kind == "discrete":
        a = np.asarray([action])
        if a.dtype.kind not in "iu" or a.size != 1:
            raise TypeError(f"action {action!r} is not an integer: actions are ints in [0, {sp.num_actions})")
    else:
        a = np.asarray(action)
        if not sp.accepts_dtype(a.dtype):
            raise _kind_error(sp, f"action {action!r}", a.dtype)
        if a.shape != (sp.action_dims,):
            raise ValueError(f"action {action!r} must have shape ({sp.action_dims},) for {sp.describe()}, got {a.shape}")
    check_wide_actions(a, sp)
    return clip_beyond_float32(a.reshape(1, sp.action_dims), sp)
