"""The argument structs the trainer's long-argument kernels take by value, as ctypes Structures: field for field
the C typedefs (GaeArgs, GatherArgs and LossArgs in update_args.cu, RolloutArgs and StepSlices in
rollout_common.cu, HostRecordArgs in rollout.cu, SelfPlayArgs, PoolForwardArgs and MatchPlayArgs in selfplay.cu,
MuonSmallArgs in optimizers.cu, TeamInputsArgs in team_rollout.cu); tests/trainer/test_kernel_signatures.py compares
the two.
`pack(struct)` is a launch's argument bytes."""

from __future__ import annotations

import ctypes

P, I32, I64, U64, F32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_float


class GaeArgs(ctypes.Structure):
    """ppo.cu's gae_kernel: GAE (with optional V-trace) over a rollout slot (update_args.cu documents every field)."""

    _fields_ = [("values", P), ("last_value", P), ("rewards", P), ("dones", P), ("new_logp", P), ("old_logp", P),
                ("adv", P), ("returns", P), ("gamma", F32), ("lam", F32), ("gamma_lambda", F32), ("rho_clip", F32),
                ("c_clip", F32), ("T", I32), ("R", I32), ("last_value_stride", I32), ("vtrace", I32)]


class GatherArgs(ctypes.Structure):
    """ppo.cu's gather_minibatch_kernel: a minibatch's sequences out of a rollout slot, and optionally the
    advantages' moments."""

    _fields_ = [("perm", P), ("obs", P), ("starts", P), ("actions", P), ("logp", P), ("values", P), ("adv", P),
                ("returns", P), ("mb_obs", P), ("mb_starts", P), ("mb_actions", P), ("mb_logp", P), ("mb_values", P),
                ("mb_adv", P), ("mb_returns", P), ("mb_src", P), ("partial", P), ("counter", P), ("adv_moments", P),
                ("K", I32), ("Bm", I32), ("R", I32), ("O", I32), ("first", I32), ("action_words", I32),
                ("obs_bytes", I32)]


class LossArgs(ctypes.Structure):
    """ppo.cu's ppo_loss_kernel (a Discrete head) and heads.cu's ppo_loss_head_kernel: the PPO loss and its
    gradient over a minibatch (Y = the decoder's width; kind: heads.HEAD_KINDS, 0 for Discrete)."""

    _fields_ = [("y", P), ("actions", P), ("nvec", P), ("logstd", P), ("old_logp", P), ("old_values", P),
                ("adv", P), ("returns", P), ("adv_moments", P), ("scalars", P), ("dy", P), ("dlogstd", P),
                ("partial", P), ("counter", P), ("new_logp", P), ("src", P), ("weights", P),
                ("clip_coef", F32), ("vf_clip_coef", F32), ("vf_coef", F32), ("n", I32), ("kind", I32), ("D", I32),
                ("Y", I32), ("Bm", I32)]


class RolloutArgs(ctypes.Structure):
    """One rollout slot's buffers, the policy's and the env batch's state: rollout.cu's rollout_step_kernel,
    policy_step_kernel, policy_rollout_warp_kernel and selfplay.cu's selfplay_step_kernel (rollout_common.cu
    documents every field; unused pointers are 0)."""

    _fields_ = [("obs", P), ("starts", P), ("actions", P), ("logp", P), ("values", P), ("rewards", P), ("dones", P),
                ("last_value", P), ("segment_state", P), ("params", P), ("y", P), ("dec_bias", P), ("state", P),
                ("last_state", P), ("slots", P), ("final_obs", P), ("terminated", P), ("truncated", P),
                ("ep_return", P), ("ep_length", P), ("ep_stats", P), ("episode_acc", P), ("scalars", P),
                ("seed_key", U64), ("num_envs", I32), ("R", I32), ("T", I32), ("K", I32), ("reward_clamp", I32),
                ("max_episode_steps", I32)]


class StepSlices(ctypes.Structure):
    """Step t of a rollout slot (rollout_common.cu's step_slices, computed on the host where a kernel takes it): the
    obs and start flags it reads, where the state after it goes, and its slices of the step outputs."""

    _fields_ = [("obs", P), ("starts", P), ("state_out", P), ("obs_next", P), ("actions", P), ("logp", P),
                ("values", P), ("rewards", P), ("dones", P), ("starts_next", P), ("masks", P)]


class SelfPlayArgs(ctypes.Structure):
    """What selfplay_step_kernel adds to RolloutArgs: the games, the opponents, the pool, the learner's scores."""

    _fields_ = [("game_obs", P), ("opp_actions", P), ("opp_starts", P), ("game_weights", P), ("pool_table", P),
                ("selfplay_acc", P), ("pool_key", U64), ("seat_offset", I32)]


class HostRecordArgs(ctypes.Structure):
    """rollout.cu's host_record_kernel: a host-stepped env group's outputs as copied up (the *_in arrays) and the
    group's rows of step t's slices."""

    _fields_ = [("obs_in", P), ("rewards_in", P), ("ep_return_in", P), ("ep_stats_in", P), ("ep_length_in", P),
                ("terminated_in", P), ("truncated_in", P), ("obs_next", P), ("rewards", P), ("dones", P),
                ("starts_next", P), ("episode_acc", P), ("n", I32), ("agents", I32), ("obs_size", I32),
                ("num_stats", I32), ("reward_clamp", I32)]


class PoolForwardArgs(ctypes.Structure):
    """selfplay.cu's pool_forward_kernel: the pool snapshots' policy step for a set of game rows."""

    _fields_ = [("pool", P), ("game_weights", P), ("game_obs", P), ("starts", P), ("state", P), ("actions", P),
                ("scalars", P), ("key", U64), ("pool_stride", I64), ("t", I64), ("rows", I32), ("per_game", I32),
                ("seat_offset", I32), ("player_slot", I32), ("deterministic", I32)]


class MatchPlayArgs(ctypes.Structure):
    """selfplay.cu's match_play_kernel: a launch's worth of steps of the evaluation matches (cuda/matches.py)."""

    _fields_ = [("slots", P), ("weights", P), ("staged", P), ("game_weights", P), ("bot_levels", P),
                ("game_obs", P), ("starts", P), ("state", P), ("actions", P), ("scores", P), ("game_steps", P),
                ("remaining", P), ("stride", I64), ("key", U64), ("first_step", I64), ("num_games", I32),
                ("games_per_match", I32), ("games_per_block", I32), ("shared_policies", I32), ("steps", I32),
                ("deterministic", I32), ("max_episode_steps", I32)]


class MuonSmallArgs(ctypes.Structure):
    """optimizers.cu's muon_small_kernel: Muon's whole step for the small matrices, their biases' Adam step."""

    _fields_ = [("table", P), ("params", P), ("grads", P), ("m", P), ("v", P), ("scalars", P), ("momentum", F32),
                ("ns_a", F32), ("ns_b", F32), ("ns_c", F32), ("beta1", F32), ("beta2", F32),
                ("one_minus_beta1", F32), ("one_minus_beta2", F32), ("eps", F32), ("steps", I32)]


class TeamInputsArgs(ctypes.Structure):
    """team_rollout.cu's team_inputs_kernel: a team game's policy inputs (ids, masks, world state) after a step."""

    _fields_ = [("slots", P), ("env_obs", P), ("obs", P), ("masks", P), ("own_masks", P), ("world", P),
                ("world_state", P), ("world_columns", P), ("num_envs", I32), ("agent_ids", I32), ("world_size", I32)]


STRUCTS = {cls.__name__: cls for cls in (GaeArgs, GatherArgs, LossArgs, RolloutArgs, StepSlices, SelfPlayArgs,
                                         HostRecordArgs, PoolForwardArgs, MatchPlayArgs, MuonSmallArgs,
                                         TeamInputsArgs)}


def pack(struct: ctypes.Structure) -> bytes:
    """The struct's bytes, a kernel's by-value argument (prepare() letter "{size}s", see device.prepare_format)."""
    return bytes(struct)
