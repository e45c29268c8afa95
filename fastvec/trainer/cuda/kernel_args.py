"""The argument structs the trainer's long-argument kernels take by value, as ctypes Structures: field for field
the C typedefs (RolloutArgs and StepSlices in rollout_common.cu, SelfPlayArgs in selfplay.cu); tests/trainer/
test_kernel_signatures.py compares the two. `pack(struct)` is a launch's argument bytes."""

from __future__ import annotations

import ctypes

P, I32, U64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint64


class RolloutArgs(ctypes.Structure):
    """One rollout slot's buffers, the policy's and the env batch's state: rollout.cu's rollout_step_kernel,
    policy_step_kernel, policy_rollout_warp_kernel and selfplay.cu's selfplay_step_kernel (rollout_common.cu
    documents every field; unused pointers are 0)."""

    _fields_ = [("obs", P), ("starts", P), ("actions", P), ("logp", P), ("values", P), ("rewards", P), ("dones", P),
                ("last_value", P), ("segment_state", P), ("params", P), ("y", P), ("dec_bias", P), ("state", P),
                ("last_state", P), ("slots", P), ("final_obs", P), ("terminated", P), ("truncated", P),
                ("ep_return", P), ("ep_length", P), ("ep_stats", P), ("episode_acc", P), ("scalars", P),
                ("seed_key", U64), ("N", I32), ("R", I32), ("T", I32), ("K", I32), ("reward_clamp", I32),
                ("max_episode_steps", I32)]


class StepSlices(ctypes.Structure):
    """Step t of a rollout slot (rollout_common.cu's step_slices, computed on the host where a kernel takes it): the
    obs and start flags it reads, where the state after it goes, and its slices of the step outputs."""

    _fields_ = [("obs", P), ("starts", P), ("state_out", P), ("obs_next", P), ("actions", P), ("logp", P),
                ("values", P), ("rewards", P), ("dones", P), ("starts_next", P)]


class SelfPlayArgs(ctypes.Structure):
    """What selfplay_step_kernel adds to RolloutArgs: the games, the opponents, the pool, the learner's scores."""

    _fields_ = [("game_obs", P), ("opp_actions", P), ("opp_starts", P), ("game_weights", P), ("pool_table", P),
                ("selfplay_acc", P), ("pool_key", U64), ("seat_offset", I32)]


STRUCTS = {cls.__name__: cls for cls in (RolloutArgs, StepSlices, SelfPlayArgs)}


def pack(struct: ctypes.Structure) -> bytes:
    """The struct's bytes, a kernel's by-value argument (prepare() letter "{size}s", see device.prepare_format)."""
    return bytes(struct)
