"""What the CUDA trainer will run, decided once at construction: the sizes (as NumpyTrainer's), the rollout
path, the precision, async and host-env choices (`Plan`), and the arena holding every device tensor they
need (`plan_arena`). `Choices` are the explicit overrides tests and benchmarks pass to force a path."""

from __future__ import annotations

import dataclasses

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, rollout_sizes
from fastvec.trainer.cuda.arena import Arena

# Legend as numpy_trainer.py: T = horizon, N = envs, R = rows = N * agents, O = obs size, I = the policy's input
# (O, then a team's agent id: spec.input_size), A = actions, C = a world-state critic's input, K = bptt_horizon,
# S = T / K segments, Ls = recurrent layers (0 for an MLP), L = layers, H = hidden, W = layer width
# (3H or 2H MinGRU, H MLP), Y = spec.head_size + 1 (the head's columns, then the value), P = parameters,
# Q = S * R sequences, Bm = sequences per minibatch, n = K * Bm rows per minibatch, G = sum-of-squares partial
# blocks, D = action dimensions (a MultiDiscrete or Box head), Wa = action_words(spec) 32-bit words a row's action.

# common.cu's TrainScalars, field for field.
SCALARS_DTYPE = np.dtype([("lr", "f8"), ("stat", "f8", (8,)), ("rollout_steps", "i8"), ("ent_coef", "f4"),
                          ("grad_norm", "f4"), ("clip_scale", "f4"), ("bias_correction1", "f4"),
                          ("bias_correction2", "f4"), ("opt_step", "i4"), ("update", "i4"), ("pad", "i4")])
STAT_NAMES = ["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "grad_norm"]
NORM_BLOCKS = 128  # G: fixed grid of the gradient-norm reduction (a fixed grid keeps the sum order fixed)
BIAS_GRAD_BLOCKS = 128  # the most blocks of bias_grad_kernel (fixed per config, so its sum order is too)
GATHER_UNROLL = 8  # ppo.cu's GATHER_UNROLL: observation elements a thread of gather_minibatch_kernel copies at once
GATHER_MAX_BLOCKS = 1024  # of gather_minibatch_kernel's 256-thread blocks (device.THREADS)
CUBLAS_WORKSPACE = 32 << 20
SHARED_LIMIT = 227 * 1024  # dynamic shared memory per block on Hopper (sm_90)
MAX_ACTIONS = 64  # policy.cu's MAX_ACTIONS: the sampler keeps a row's CDF in registers
# The rollout buffers an update reads: with train.async there are two copies ("rollout slots"; the second's
# arena names end in "@1"), one filled by the actor while the learner trains on the other. r_y holds the
# GEMM path's bootstrap value, last_value the fused path's.
SLOT_BUFFERS = ("obs", "starts", "actions", "logp", "values", "rewards", "dones", "segment_state", "last_value", "r_y",
                "masks", "world")
ROLLOUT_PATHS = ("auto", "thread", "warp", "gemm")


def action_words(spec: ref.PolicySpec) -> int:
    """Wa: a row's action in 32-bit words: 1 (Discrete, int32), D (Box, float32) or 2D (MultiDiscrete, int64, the
    env's ACT_T, so the env step reads the rollout's actions in place)."""
    return {"discrete": 1, "box": spec.action_dims, "multi_discrete": 2 * len(spec.action_nvec)}[spec.action_kind]


def gather_threads(rows: int, obs_size: int) -> int:
    """Threads of gather_minibatch_kernel for a minibatch of rows x obs_size observations: one a row at least,
    and one per GATHER_UNROLL observation elements (up to GATHER_MAX_BLOCKS blocks), so that a small minibatch's
    copy runs on the whole GPU rather than on its rows' few blocks. The kernel indexes a minibatch's observation
    elements in 32 bits."""
    if rows * obs_size >= 2**32:
        raise ConfigError(f"a minibatch of {rows:,} rows of {obs_size:,} observation values is over 2^32 values: "
                          "lower train.minibatch_size")
    return max(rows, min(-(-rows * obs_size // GATHER_UNROLL), GATHER_MAX_BLOCKS * 256))


def transforms_obs(spec: ref.PolicySpec) -> bool:
    """Whether the encoder's input differs from the observations (reference.encoder_input: norm_obs or a scale)."""
    return spec.norm_obs or spec.obs_scale != 1


def policy_inputs(spec: ref.PolicySpec, plan: "Plan") -> list[tuple[str, int, int]]:
    """(rollout slot buffer, row width, item bytes) of what a step's policy reads besides its state and start flags:
    the obs (with a team's agent ids: spec.input_size), then a team's action masks and world-state critic input."""
    return [("obs", spec.input_size, 4)] + [("masks", spec.num_actions, 1)] * plan.masked \
        + [("world", spec.critic_input_size, 4)] * bool(spec.world_size)


def fused_kernels_run(spec: ref.PolicySpec) -> bool:
    """Whether rollout.cu's per-thread and per-warp policy steps and selfplay.cu's opponents can run spec: they
    implement the Discrete head of a shared actor-critic with a linear encoder on raw observations."""
    return (spec.action_kind == "discrete" and not transforms_obs(spec) and spec.critic == "shared"
            and spec.encoder == "linear" and spec.activation == "relu")


def slot_addresses(arena):
    """slot(name, slot, offset_elements) -> the device address of rollout buffer `name` (SLOT_BUFFERS) of rollout
    slot `slot` (slot 1's copies are named "name@1"). A closure over the arena alone: the rollout paths hold it
    without holding the trainer, so a dropped trainer is freed at once (not by the cycle collector, which may
    run while another trainer captures a graph, where freeing pinned memory is an error)."""
    return lambda name, slot, offset_elements=0: arena.ptr(name if slot == 0 else f"{name}@{slot}", offset_elements)


@dataclasses.dataclass(frozen=True)
class Choices:
    """Overrides of the automatic choices, for tests and benchmarks that measure or check one path.
    rollout: "auto", or the policy step of a GPU-env rollout: "thread" (policy_step_kernel, a thread per env),
    "warp" (policy_rollout_warp_kernel, a warp per env), "gemm" (cuBLAS GEMMs and a separate env step).
    warp_launch: "horizon" (the warp kernel runs all T + 1 steps in one launch) or "step" (one a step).
    graphs: False runs every rollout and update eagerly (no CUDA graphs).
    mlp_bias_fused_max: an MLP layer's backward and bias gradient share one launch up to this many n x H
    elements (above, the one-launch form's fixed grid is latency-bound and a ones-row GEMM is faster).
    muon_small_shared_max: matrices whose Newton-Schulz needs at most this much shared memory take Muon's
    step in muon_small_kernel; larger ones a chain of GEMMs on a stream of their own.
    stage_min_obs_bytes: the GEMM path's env step stages slots and obs in shared memory above this many
    obs bytes per env (large observations are written coalesced from shared memory).
    warp_block: the most threads a block of the warp-per-env rollout (32 per env, so a multiple of 32); 0:
    WARP_BLOCK, or with train.async ASYNC_WARP_BLOCK (either lowered where the kernel's registers allow fewer)."""

    rollout: str = "auto"
    warp_launch: str = "horizon"
    graphs: bool = True
    mlp_bias_fused_max: int = 1 << 21
    muon_small_shared_max: int = SHARED_LIMIT - 1024
    stage_min_obs_bytes: int = 64
    warp_block: int = 0

    def __post_init__(self):
        if self.rollout not in ROLLOUT_PATHS:
            raise ValueError(f"Choices(rollout={self.rollout!r}): use one of {', '.join(ROLLOUT_PATHS)}")
        if self.warp_launch not in ("horizon", "step"):
            raise ValueError(f"Choices(warp_launch={self.warp_launch!r}): use 'horizon' or 'step'")
        if self.warp_block < 0 or self.warp_block % 32:  # a warp an env: a block of whole warps, never split
            raise ValueError(f"Choices(warp_block={self.warp_block!r}): use 0 (automatic) or a multiple of 32")


@dataclasses.dataclass
class Plan:
    """The sizes and paths of one CudaTrainer (see the legend above for the letters)."""

    num_envs: int  # N
    num_agents: int
    rows: int  # R
    horizon: int  # T
    bptt: int  # K
    segments: int  # S
    samples_per_rollout: int
    seqs_per_mb: int  # Bm
    sequences: int  # Q
    minibatches: int
    mb_rows: int  # n
    precision: str  # "fp32", "tf32" or "bf16" GEMM inputs
    bf16_acts: bool  # bf16 MinGRU updates keep the layers' GEMM operands and results in bfloat16
    env_agents: int  # agents per env in the env's build (self-play: the seats; rows are the learner's alone)
    pool_slots: int  # self-play on the GPU: snapshots the arena holds (the pool's, and evicted ones still played)
    host_env: bool  # the env is CPU batches stepped beside the GPU (train.env_device = "cpu")
    async_rollouts: bool  # train.async: the actor's rollout overlaps the learner's update
    slot_count: int  # rollout slots: 2 with train.async, else 1
    rollout: str  # "thread", "warp", "gemm", "selfplay", "team" or "host": how a rollout steps the policy and the env
    fused_block: int  # threads per block of the fused policy step (0 unless rollout is thread or warp)
    rollout_bf16: bool  # the GEMM-path rollout forward in bf16 too (as the update's: same numbers, half the bytes)
    choices: Choices
    norm_reward: bool = False  # train.norm_reward: rewards scaled at the end of every rollout (cuda/normalize.py)
    masked: bool = False  # a team's action masks: the rollout keeps each step's, the sampler and the loss apply them
    obs_bytes: bool = False  # the GPU env's observations are bytes (OBS_T unsigned char; set once its build loads)
    prio: bool = False  # train.prio_alpha > 0: each epoch's sequences are prioritised draws (prio.cu), weighted

    @classmethod
    def make(cls, train: dict, spec: ref.PolicySpec, layout: ref.FlatLayout, num_envs: int, num_agents: int,
             host_env: bool, choices: Choices, selfplay_seats: int = 0, pool_size: int = 0,
             masked: bool = False, team: bool = False) -> Plan:
        """selfplay_seats > 0: self-play with the games on the GPU (that many seats a game, the learner's
        alone in the rollout's rows, a pool of pool_size snapshots): the learner's forward as GEMMs, the
        opponents' as selfplay.cu's. masked: the env's agents have action masks (agent_inputs.AgentInputs.mask).
        team: a team game (MPE, SMAX), on the GPU the GEMM path with team_rollout.cu's inputs (rollouts.TeamRollout)."""
        if max((spec.num_actions, *spec.action_nvec)) > MAX_ACTIONS:
            raise ConfigError(f"the CUDA trainer samples from at most {MAX_ACTIONS} actions a dimension, this env has "
                              f"{max((spec.num_actions, *spec.action_nvec))}; use --train.device=cpu")
        if selfplay_seats and not fused_kernels_run(spec):
            raise ConfigError("self-play with the games on the GPU plays Discrete heads with a shared critic and a "
                              "linear encoder on unnormalised observations; use --train.env_device=cpu, or turn "
                              "train.norm_obs off, policy.critic=shared and policy.encoder=linear")
        if selfplay_seats:
            num_agents = 1
            if spec.hidden % 4 or spec.hidden > 128:
                raise ConfigError(f"self-play with the games on the GPU runs the opponents' policy a thread per "
                                  f"seat, which needs policy.hidden a multiple of 4 and at most 128 (it is "
                                  f"{spec.hidden}); use --train.env_device=cpu (games and opponents on the CPU)")
        rows, horizon, bptt, segments, samples = rollout_sizes(train, num_envs, num_agents)
        seqs_per_mb = train.minibatch_size // bptt
        sequences = segments * rows
        bf16_acts = train.precision == "bf16" and spec.recurrent
        if host_env:
            rollout, block = "host", 0
        elif selfplay_seats:
            rollout, block = "selfplay", 0
        elif team:
            rollout, block = "team", 0
        else:
            warp_block = choices.warp_block or (ASYNC_WARP_BLOCK if train.async_ else WARP_BLOCK)
            rollout, block = fused_rollout_kernel(spec, layout, num_envs, num_agents, choices.rollout, warp_block)
        return cls(num_envs=num_envs, num_agents=num_agents, rows=rows, horizon=horizon, bptt=bptt,
                   segments=segments, samples_per_rollout=samples, seqs_per_mb=seqs_per_mb, sequences=sequences,
                   minibatches=sequences // seqs_per_mb, mb_rows=bptt * seqs_per_mb, precision=train.precision,
                   bf16_acts=bf16_acts, env_agents=selfplay_seats or num_agents,
                   pool_slots=2 * pool_size + 2 if selfplay_seats else 0, host_env=host_env,
                   async_rollouts=bool(train.async_),
                   slot_count=2 if train.async_ else 1, rollout=rollout, fused_block=block,
                   rollout_bf16=bf16_acts and rollout in ("gemm", "selfplay", "team"), choices=choices,
                   norm_reward=bool(train.norm_reward), masked=masked, prio=train.prio_alpha > 0)

    def policy_defines(self, spec: ref.PolicySpec) -> dict:
        """The -D sizes the policy kernels compiled into the env's module need (the fused step's, self-play's, and
        rollout.cu's decoder width POLICY_HEAD_SIZE)."""
        fused = policy_defines(spec) if self.fused_block or self.rollout == "selfplay" else {}
        return {**fused, "POLICY_HEAD_SIZE": spec.head_size}


def policy_defines(spec: ref.PolicySpec) -> dict:
    """The -D sizes of rollout.cu's per-thread and per-warp policy kernels (and selfplay.cu's) for `spec`."""
    return {"POLICY_HIDDEN": spec.hidden, "POLICY_LAYERS": spec.layers, "POLICY_MINGRU": int(spec.recurrent),
            "POLICY_HIGHWAY": int(spec.highway)}


def pool_row_floats(layout: ref.FlatLayout) -> int:
    """A row of self-play's snapshot buffers: the flat parameters rounded up to 16 bytes (the thread-per-row
    forward reads its weights with float4 loads)."""
    return (layout.size + 3) // 4 * 4


# The fused policy step: from here on a thread per env (a launch a step) beats a warp per env (one launch for
# the horizon), which keeps more of the GPU busy when there are few envs.
FUSED_THREAD_MIN_ENVS = 24576
FUSED_MAX_BLOCK = 256  # the fused policy step uses ~170 registers per thread at hidden 64
# The warp-per-env rollout: 8 envs a block. With train.async 16, so that the rollout's blocks sit on half as many
# SMs and the update's small kernels find room beside them (each block is resident for the whole horizon).
WARP_BLOCK = 256
ASYNC_WARP_BLOCK = 512


def warp_weight_floats(spec: ref.PolicySpec, layout: ref.FlatLayout) -> int:
    """rollout.cu's S_TOTAL rounded up to 4: the flat parameters plus one padding float per matrix column."""
    return (layout.size + spec.obs_size + (spec.layers + 1) * spec.hidden + 3) // 4 * 4


def warp_scratch_floats(spec: ref.PolicySpec, num_agents: int) -> int:
    """rollout.cu's WARP_SCRATCH: per warp, two (H,) activation buffers and the agents' decoder rows."""
    return 2 * spec.hidden + num_agents * (spec.num_actions + 1)


def fused_rollout_kernel(spec: ref.PolicySpec, layout: ref.FlatLayout, num_envs: int, num_agents: int,
                         forced: str = "auto", warp_block: int = WARP_BLOCK) -> tuple[str, int]:
    """(path, threads per block) of a GPU-env rollout's policy step: ("thread", block) for policy_step_kernel
    (a thread per env, a launch a step) from FUSED_THREAD_MIN_ENVS envs on, ("warp", block) for
    policy_rollout_warp_kernel (a warp per env, the whole horizon in one launch) below, or ("gemm", 0) where
    every weight does not fit a block's shared memory (or `forced` says so), or the policy has a MultiDiscrete
    or Box head, a separate critic or a ReLU encoder, or transforms its observations (the fused kernels implement the
    Discrete head of a shared actor-critic with a linear encoder on raw observations)."""
    if not fused_kernels_run(spec):
        return "gemm", 0
    if forced == "gemm" or spec.hidden % 4 or spec.hidden > 128 or spec.num_actions > MAX_ACTIONS:
        return "gemm", 0
    kind = forced if forced in ("thread", "warp") else "thread" if num_envs >= FUSED_THREAD_MIN_ENVS else "warp"
    if kind == "thread":
        param_bytes = (layout.size + 3) // 4 * 16
        block = min(FUSED_MAX_BLOCK, (SHARED_LIMIT - param_bytes) // (4 * spec.hidden) // 32 * 32)
    else:
        block = min(warp_block, (SHARED_LIMIT - warp_weight_floats(spec, layout) * 4)
                    // (4 * warp_scratch_floats(spec, num_agents)) * 32)
    return (kind, block) if block >= 32 else ("gemm", 0)


def plan_arena(plan: Plan, spec: ref.PolicySpec, layout: ref.FlatLayout, slot_size: int, num_stats: int) -> Arena:
    """Every device tensor the trainer's shared paths use, with its shape. The optimizer and the host envs
    add their own tensors (Muon.add_tensors, HostEnvs.add_tensors) before the arena is allocated."""
    a = Arena()
    _add_model_and_env(a, plan, spec, layout, slot_size, num_stats)
    _add_rollout(a, plan, spec, layout)
    _add_update(a, plan, spec, layout)
    return a


def _sizes(plan: Plan, spec: ref.PolicySpec, layout: ref.FlatLayout) -> tuple:
    """The letters of the legend above, as plan_arena's parts use them."""
    return (plan.horizon, plan.rows, plan.num_envs, plan.segments, spec.input_size, spec.hidden, spec.state_layers,
            spec.layers, spec.head_size + 1, action_words(spec), layout.offsets["layer0.w"][1][0], layout.size,
            plan.mb_rows, plan.seqs_per_mb, plan.sequences)


def _add_model_and_env(a: Arena, plan: Plan, spec: ref.PolicySpec, layout: ref.FlatLayout, slot_size: int,
                       num_stats: int) -> None:
    t, r, n_env, s, o, h, ls, layers, y, aw, w, p, n, bm, q = _sizes(plan, spec, layout)
    f32, i32 = np.float32, np.int32
    # model and optimizer: flat, in reference.FlatLayout order
    a.add("params", (p,), f32, "flat parameters")
    a.add("grads", (p,), f32, "flat gradients")
    a.add("opt_state", (2 * p,), f32, "[Adam m or Muon momentum | Adam v]")
    a.add("scalars", (SCALARS_DTYPE.itemsize,), np.uint8, "TrainScalars (lr, counters, stats)")
    a.add("norm_partial", (NORM_BLOCKS,), f32, "(G,) partial sums of squared gradients")
    a.add("cublas_workspace", (CUBLAS_WORKSPACE,), np.uint8, "cuBLAS workspace (fixed, for capture)")
    # env
    a.add("slots", (n_env, slot_size), np.uint8, "(N, sizeof(fv_slot)) simulator state")
    a.add("seeds", (n_env,), np.uint64, "(N,) reset seeds")
    a.add("final_obs", (r, spec.obs_size), f32, "(R, O) batch-layer scratch (terminal obs)")
    a.add("terminated", (n_env,), np.uint8, "(N,)")
    a.add("truncated", (n_env,), np.uint8, "(N,)")
    a.add("ep_return", (r,), f32, "(R,) finished episodes' returns where done")
    a.add("ep_length", (n_env,), i32, "(N,)")
    a.add("ep_stats", (n_env, max(num_stats, 1)), f32, "(N, stats)")
    a.add("episode_acc", (3 + num_stats + plan.num_agents,), np.float64,
          "episodes, sum return, sum length, sum stats, each agent's sum return (rollout.cu's record_outcome)")


def _add_rollout(a: Arena, plan: Plan, spec: ref.PolicySpec, layout: ref.FlatLayout) -> None:
    t, r, n_env, s, o, h, ls, layers, y, aw, w, p, n, bm, q = _sizes(plan, spec, layout)
    f32, i32 = np.float32, np.int32
    # rollout buffers, as NumpyTrainer's
    a.add("obs", (t + 1, r, o), f32, "(T+1, R, I); slot T: obs after the last step")
    a.add("starts", (t + 1, r), f32, "(T+1, R) 1: obs[t] begins an episode")
    if spec.action_kind == "discrete":
        a.add("actions", (t, r), i32, "(T, R)")
    else:  # the env's ACT_T, as NumpyTrainer's (T, R, D) actions
        a.add("actions", (t, r, *spec.action_shape), spec.action_dtype, "(T, R, D) the env's action type")
    a.add("logp", (t, r), f32, "(T, R) log pi_old(a|s)")
    a.add("values", (t, r), f32, "(T, R) V_old(s)")
    a.add("rewards", (t, r), f32, "(T, R)")
    a.add("dones", (t, r), f32, "(T, R) 1: episode ended at step t")
    a.add("adv_returns", (2, t, r), f32, "(2, T, R) advantages, then returns = advantages + values")
    a.add("last_value", (r,), f32, "(R,) V(obs[T]), the bootstrap (fused path)")
    a.add("new_logp", (t, r), f32, "(T, R) log pi_new(a|s), for V-trace")
    a.add("segment_state", (s, max(ls, 1), r, h), f32, "(S, Ls, R, H) state entering each segment")
    a.add("state", (max(ls, 1), r, h), f32, "(Ls, R, H) live recurrent state")
    a.add("last_state", (max(ls, 1), r, h), f32, "(Ls, R, H) scratch: state after the bootstrap step")
    # rollout activations (one step of R rows)
    a.add("r_act", (2, r, h), f32, "(2, R, H) layer inputs/outputs, ping-pong")
    a.add("r_pre", (r, w), f32, "(R, W) pre-activations (bfloat16 in its first half with rollout_bf16)")
    if plan.rollout_bf16:
        a.add("r_act_bf16", (layers, r, h), np.uint16, "(L, R, H) bfloat16 copies of each layer's input")
    a.add("r_y", (r, y), f32, "(R, Y) decoder output; after the rollout, the bootstrap values")
    if plan.masked:  # slot T: the masks with obs[T], the next rollout's first
        a.add("masks", (t + 1, r, spec.num_actions), np.uint8, "(T+1, R, A) 1 = available, the actions sampled from")
    if spec.world_size:
        a.add("world", (t + 1, r, spec.critic_input_size), f32, "(T+1, R, C) the world-state critic's input")


def _add_update(a: Arena, plan: Plan, spec: ref.PolicySpec, layout: ref.FlatLayout) -> None:
    t, r, n_env, s, o, h, ls, layers, y, aw, w, p, n, bm, q = _sizes(plan, spec, layout)
    f32, i32 = np.float32, np.int32
    # update: minibatch inputs (K, Bm, ...) rows
    a.add("perm", (q,), i32, "(Q,) this epoch's sequence order (train.prio_alpha: its draws)")
    if plan.prio:
        a.add("prio_weight", (q,), f32, "(Q,) the importance weight of each draw in perm")
        a.add("prio_scratch", (3, q), np.float64,
              "(3, Q) prio_kernel's: the priorities, their running sums, each draw's unnormalised weight")
    a.add("mb_obs", (n, o), f32, "(K, Bm, I)")
    if plan.masked:
        a.add("mb_masks", (n, spec.num_actions), np.uint8, "(K, Bm, A) the minibatch's action masks")
    if spec.world_size:
        a.add("mb_world", (n, spec.critic_input_size), f32, "(K, Bm, C) the minibatch's world-state critic input")
    a.add("mb_starts", (n,), f32, "(K, Bm)")
    a.add("mb_actions", (n, aw), i32, "(K, Bm, Wa) each row's action as 32-bit words")
    a.add("mb_logp", (n,), f32, "(K, Bm)")
    a.add("mb_values", (n,), f32, "(K, Bm)")
    a.add("mb_adv", (n,), f32, "(K, Bm)")
    a.add("mb_returns", (n,), f32, "(K, Bm)")
    a.add("mb_src", (n,), i32, "(K, Bm) rollout index t * R + r of each row")
    a.add("mb_state", (max(ls, 1), bm, h), f32, "(Ls, Bm, H) state entering each sequence")
    a.add("mb_state_out", (bm, h), f32, "(Bm, H) scratch: state after the sequence")
    a.add("adv_moments", (2,), f32, "minibatch advantage mean, std")
    a.add("sums_partial", (NORM_BLOCKS, 5, 2), np.float64, "(G, k, 2) per-block sums and sums of squares")
    a.add("block_partial", (max(BIAS_GRAD_BLOCKS * max(w, y, h), 5 * -(-n // 256), 2 * GATHER_MAX_BLOCKS),),
          np.float64,
          "per-block partial sums of the one-launch reductions (common.cu's last_block)")
    a.add("ones", (n,), f32, "(n,) ones: unmasked bias gradients are ones (1, n) @ dout (n, cols) GEMMs")
    a.add("reduce_counter", (1,), np.uint32, "blocks done in the running one-launch reduction (0 between)")
    # update: activations kept for the backward
    a.add("act", (layers + 1, n, h), f32, "(L+1, n, H) encoder output, then each layer's output")
    act_dtype = np.uint16 if plan.bf16_acts else f32  # uint16: bfloat16 bits
    a.add("pre", (layers, n, w), act_dtype, "(L, n, W) pre-activations (without the bias)")
    a.add("hseq", (max(ls, 1), n, h), act_dtype, "(Ls, n, H) MinGRU states")
    if spec.critic != "shared":
        a.add("critic_act", (layers + 1, n, h), f32, "(L+1, n, H) a separate critic's encoder and layer outputs")
    a.add("y", (n, y), f32, "(n, Y) decoder output")
    if spec.action_kind == "box":
        a.add("dlogstd", (n, spec.action_dims), f32, "(n, D) each row's loss gradient into dec.logstd")
    if spec.action_kind == "multi_discrete":
        a.add("head_nvec", (len(spec.action_nvec),), np.int64, "(D,) the MultiDiscrete head's counts")
    if transforms_obs(spec) or plan.obs_bytes:
        a.add("r_x0", (r, o), f32, "(R, I) the rollout forward's encoder input (reference.encoder_input)")
    if plan.norm_reward:  # normalize.scale_rewards' running state
        a.add("reward_returns", (r,), np.float64, "(R,) each row's running discounted return")
        a.add("reward_seen", (t, r), np.float64, "(T, R) scratch: the returns of the last rollout")
        a.add("reward_moments", (4,), np.float64, "the returns' running mean, var, count; then the rewards' scale")
    a.add("dy", (n, y), f32, "(n, Y) loss gradient")
    a.add("dact", (2, n, h), f32, "(2, n, H) layer gradients, ping-pong")
    a.add("dpre", (n, w), act_dtype, "(n, W)")
    if plan.bf16_acts:
        a.add("act_bf16", (layers, n, h), np.uint16, "(L, n, H) bfloat16 copies of each layer's input")
        a.add("params_bf16", (p,), np.uint16, "(P,) bfloat16 copy of the weights (minibatch)")
    a.add("dbias_seq", (bm, w), f32, "(Bm, W) per-sequence sums of a MinGRU layer's dpre")
    if plan.async_rollouts:  # the second rollout slot, and the actor's own weights and cuBLAS workspace
        for name in (name for name in SLOT_BUFFERS if name in a.entries):
            _, shape, dtype, doc = a.entries[name]
            a.add(f"{name}@1", shape, dtype, "rollout slot 1: " + doc)
        a.add("actor_params", (p,), f32, "the weights the actor collects with (copied when an update starts)")
        if plan.rollout_bf16:
            a.add("actor_params_bf16", (p,), np.uint16, "(P,) their bfloat16 copy (each rollout)")
        a.add("actor_cublas_workspace", (CUBLAS_WORKSPACE,), np.uint8, "the actor stream's cuBLAS workspace")
