"""The rollout paths with the env on the GPU, each enqueueing one whole horizon (NumpyTrainer.collect) and the
bootstrap value into a rollout slot on the actor's stream: `GemmRollout` (cuBLAS GEMMs for the policy, then
the env step kernel), `ThreadRollout` (policy_step_kernel: policy, sampling and env step fused, a thread per
env, a launch a step), `WarpRollout` (policy_rollout_warp_kernel: a warp per env, the horizon in one launch),
`SelfPlayRollout` and `TeamRollout` (a team game's agent ids, action masks and world state: team_rollout.cu)."""

from __future__ import annotations

import math
import sys

import numpy as np

from fastvec.trainer.cuda.device import module_int
from fastvec.trainer.cuda.heads import record_reward_scaling
from fastvec.trainer.cuda.kernel_args import (PoolForwardArgs, RolloutArgs, SelfPlayArgs, StepSlices, TeamInputsArgs,
                                              pack)
from fastvec.trainer.cuda.plan import Plan, policy_inputs, pool_row_floats, transforms_obs, warp_scratch_floats, \
    warp_weight_floats
from fastvec.trainer.selfplay import draw_opponents, selfplay_keys


class GpuEnvRollout:
    """What every GPU-env path shares: the arena, the actor's stream (launcher k, cuBLAS blas) and the weights
    it collects with (arena name `params`), the sampling key, the slot addresses (slot(name, slot, offset)), and
    each slot's RolloutArgs, the env-stepping kernels' argument (args(slot))."""

    batch_scratch = ("final_obs", "ep_return")  # the arena's terminal obs and returns of every row the env steps

    def __init__(self, plan: Plan, spec, layout, arena, policy, slot, train: dict, seed_key: int,
                 max_episode_steps: int):
        self.plan, self.spec, self.layout, self.arena, self.policy, self.slot = plan, spec, layout, arena, policy, slot
        self.seed_key, self.reward_clamp, self.max_episode_steps = seed_key, train.reward_clamp, max_episode_steps
        self.train = train
        self.packed_args: dict[int, bytes] = {}
        self.packed_steps: dict[tuple[int, int], bytes] = {}

    def add_tensors(self, arena) -> None:
        """The GPU-env paths use the shared rollout tensors only (plan_arena)."""

    def start(self, cuda, actor) -> None:
        """Once the arena is allocated: the actor's launcher, cuBLAS and weights (arena name) to collect with."""
        self.cuda = cuda
        self.k, self.blas, self.params = actor

    def close(self) -> None:
        """The trainer frees the graphs and the arena."""

    def reset_envs(self, k) -> None:
        """Reset every env with the arena's seeds; the obs go to step T of the last rollout slot (the first
        rollout copies them to its step 0)."""
        plan = self.plan
        k.launch("fv_reset_kernel", plan.num_envs, np.int32(plan.num_envs), self.arena.ptr("slots"),
                 self.arena.ptr("seeds"), 0, self.slot("obs", plan.slot_count - 1,
                                                       plan.horizon * plan.rows * self.spec.obs_size))

    def record(self, slot: int) -> None:
        """Enqueue a rollout into `slot`, starting from the obs after the previous rollout (step T of the other
        slot; of the same one without train.async), then (train.norm_reward) its reward scaling."""
        plan, k = self.plan, self.k
        t_len, r = plan.horizon, plan.rows
        previous = (slot + 1) % plan.slot_count
        for name, width, item in self.carried():
            self.cuda.memcpy_dtod_async(self.slot(name, slot), self.slot(name, previous, t_len * r * width),
                                        r * width * item, k.stream)
        self.record_steps(slot)
        k.launch_grid("advance_rollout_kernel", 1, 1, self.arena.ptr("scalars"), np.int32(t_len))
        record_reward_scaling(k, self.arena, plan, self.train, self.slot("rewards", slot), self.slot("dones", slot))

    def carried(self) -> list[tuple[str, int, int]]:
        """(slot buffer, row width, item bytes) of what a rollout starts from, step T of the previous one: the start
        flags and plan.policy_inputs (the obs, a team's masks and world-state critic input)."""
        return [("starts", 1, 4), *policy_inputs(self.spec, self.plan)]

    def world(self, slot: int, t: int) -> int:
        """Step t's world-state critic input (R, C) in `slot`, or 0 without that critic."""
        c, r = self.spec.critic_input_size, self.plan.rows
        return self.slot("world", slot, t * r * c) if self.spec.world_size else 0

    def save_segment_state(self, slot: int, t: int) -> None:
        """At a segment's first step, the live recurrent state into segment_state[t / K] (the update's start)."""
        ls, r, h, kk = self.spec.state_layers, self.plan.rows, self.spec.hidden, self.plan.bptt
        if t % kk == 0 and ls:
            self.cuda.memcpy_dtod_async(self.slot("segment_state", slot, (t // kk) * ls * r * h),
                                        self.arena.ptr("state"), ls * r * h * 4, self.k.stream)

    def args(self, slot: int) -> bytes:
        """The packed RolloutArgs of `slot` (rollout_common.cu): the slot's buffers whole, the actor's weights, the
        env batch's state. Built at the slot's first rollout: the arena's addresses never change."""
        packed = self.packed_args.get(slot)
        if packed is None:
            a, plan, buf = self.arena, self.plan, lambda name: self.slot(name, slot)
            final_obs, ep_return = self.batch_scratch
            packed = self.packed_args[slot] = pack(RolloutArgs(
                obs=buf("obs"), starts=buf("starts"), actions=buf("actions"), logp=buf("logp"), values=buf("values"),
                rewards=buf("rewards"), dones=buf("dones"), last_value=buf("last_value"),
                segment_state=buf("segment_state"), params=a.ptr(self.params), y=buf("r_y"),
                dec_bias=a.ptr(self.params, self.layout.offsets["dec.b"][0]), state=a.ptr("state"),
                last_state=a.ptr("last_state"), slots=a.ptr("slots"), final_obs=a.ptr(final_obs),
                terminated=a.ptr("terminated"), truncated=a.ptr("truncated"), ep_return=a.ptr(ep_return),
                ep_length=a.ptr("ep_length"), ep_stats=a.ptr("ep_stats"), episode_acc=a.ptr("episode_acc"),
                scalars=a.ptr("scalars"), seed_key=self.seed_key, num_envs=plan.num_envs, R=plan.rows, T=plan.horizon,
                K=plan.bptt, reward_clamp=self.reward_clamp, max_episode_steps=self.max_episode_steps))
        return packed

    def step_args(self, slot: int, t: int) -> bytes:
        """The packed StepSlices of step t of `slot` (rollout_common.cu's step_slices; t = T: the bootstrap's obs,
        starts and state_out, last_state, with step T - 1's outputs, which it does not write). Built once a step."""
        packed = self.packed_steps.get((slot, t))
        if packed is None:
            plan, a = self.plan, self.arena
            r, o, per_row = plan.rows, self.spec.input_size, math.prod(self.spec.action_shape)  # (T, R[, D]) actions
            step = min(t, plan.horizon - 1)
            buf = lambda name, offset: self.slot(name, slot, offset)  # noqa: E731
            packed = self.packed_steps[(slot, t)] = pack(StepSlices(
                obs=buf("obs", t * r * o), starts=buf("starts", t * r),
                state_out=a.ptr("last_state" if t == plan.horizon else "state"),
                obs_next=self.obs_next(slot, step), actions=buf("actions", step * r * per_row),
                logp=buf("logp", step * r), values=buf("values", step * r), rewards=buf("rewards", step * r),
                dones=buf("dones", step * r), starts_next=buf("starts", (step + 1) * r),
                masks=buf("masks", step * r * self.spec.num_actions) if plan.masked else 0))
        return packed

    def obs_next(self, slot: int, step: int) -> int:
        """Where the env step `step` writes its observations: the slot's obs[step + 1]."""
        return self.slot("obs", slot, (step + 1) * self.plan.rows * self.spec.input_size)


class GemmRollout(GpuEnvRollout):
    """The policy as GEMMs (any size), then one env step launch that samples the actions from the decoder's
    output (adding its bias) and steps every env: rollout_step_staged_kernel (each block's slots and obs
    staged in shared memory) for large observations, rollout_step_kernel in place for small ones."""

    name = "gemm"

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        obs_item = module_int(cuda, self.k.module, "fv_obs_bytes")
        stage_threads = module_int(cuda, self.k.module, "rollout_stage_threads")
        obs_bytes = self.spec.obs_size * obs_item * self.plan.num_agents
        staged = stage_threads > 0 and obs_bytes > self.plan.choices.stage_min_obs_bytes
        self.step_kernel = ("rollout_step_staged_kernel", stage_threads) if staged else ("rollout_step_kernel", 256)

    def describe(self) -> str:
        return f"GEMM-path policy, {self.step_kernel[0]} for the env" + (" (bf16)" if self.plan.rollout_bf16 else "")

    def record_steps(self, slot: int) -> None:
        spec, a, k, plan = self.spec, self.arena, self.k, self.plan
        t_len, r, o, h, ls = plan.horizon, plan.rows, spec.input_size, spec.hidden, spec.state_layers
        state = [a.ptr("state", layer * r * h) for layer in range(ls)] or [0] * spec.layers
        last_state = [a.ptr("last_state", layer * r * h) for layer in range(ls)] or [0] * spec.layers
        acts = [a.ptr("r_act", (i % 2) * r * h) for i in range(spec.layers + 1)]
        pres = [a.ptr("r_pre")] * spec.layers
        hs = [0] * spec.layers  # the rollout keeps no per-step MinGRU states
        acts_bf16 = None
        if plan.rollout_bf16:  # the weights this rollout collects with, in bfloat16
            p = self.layout.size
            k.launch("to_bf16_kernel", p, np.int64(p), a.ptr(self.params), a.ptr(f"{self.params}_bf16"))
            acts_bf16 = [a.ptr("r_act_bf16", i * r * h) for i in range(spec.layers)]
        y = self.slot("r_y", slot)
        x0 = a.ptr("r_x0") if transforms_obs(spec) or plan.obs_bytes else 0  # the encoder reads floats
        for t in range(t_len):
            self.save_segment_state(slot, t)
            self.policy.forward(k, self.blas, r, 1, self.slot("obs", slot, t * r * o), self.slot("starts", slot, t * r),
                                state, state, acts, pres, hs, y, self.params, acts_bf16, dec_bias=False, x0=x0,
                                obs_bytes=plan.obs_bytes, world=self.world(slot, t))
            self.step_envs(slot, t)
        # Bootstrap: V(obs[T]) with the live state, which stays as it is (last_state is scratch).
        self.policy.forward(k, self.blas, r, 1, self.slot("obs", slot, t_len * r * o),
                            self.slot("starts", slot, t_len * r), state, last_state, acts, pres, hs, y, self.params,
                            acts_bf16, x0=x0, obs_bytes=plan.obs_bytes, world=self.world(slot, t_len))

    def step_envs(self, slot: int, t: int) -> None:
        """Sample step t's actions from the slot's decoder output r_y (R, Y) (adding its bias) and step every env."""
        name, threads = self.step_kernel
        self.k.launch_shared(name, self.plan.num_envs, threads, 0, self.args(slot), self.step_args(slot, t),
                             np.int32(t))


class ThreadRollout(GpuEnvRollout):
    """policy_step_kernel, a launch a step: a thread per env runs the policy (every weight in shared memory),
    samples and steps its env; the launch after the last step computes the bootstrap value."""

    name = "thread"

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        self.shared = (self.layout.size + 3) // 4 * 16 + 4 * self.spec.hidden * self.plan.fused_block
        self.k.function("policy_step_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                            self.shared)

    def describe(self) -> str:
        return f"fused policy step, a thread per env (policy_step_kernel, {self.plan.fused_block} threads a block)"

    def record_steps(self, slot: int) -> None:
        plan = self.plan
        for t in range(plan.horizon + 1):  # step T: the bootstrap value, with the state after it into last_state
            if t < plan.horizon:
                self.save_segment_state(slot, t)
            self.k.launch_shared("policy_step_kernel", plan.num_envs, plan.fused_block, self.shared, self.args(slot),
                                 self.step_args(slot, t), np.int32(t), np.int32(t == plan.horizon))


class WarpRollout(GpuEnvRollout):
    """policy_rollout_warp_kernel: a warp per env runs all T + 1 policy steps (the last the bootstrap) in one
    launch, or one launch a step with Choices(warp_launch="step") (same kernel, same results)."""

    name = "warp"

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        spec, plan = self.spec, self.plan
        function = self.k.function("policy_rollout_warp_kernel")
        # a wide policy's registers may allow fewer threads a block than planned
        fits = function.get_attribute(cuda.function_attribute.MAX_THREADS_PER_BLOCK) // 32 * 32
        plan.fused_block = min(plan.fused_block, fits)
        self.shared = 4 * (warp_weight_floats(spec, self.layout)
                           + plan.fused_block // 32 * warp_scratch_floats(spec, plan.num_agents))
        function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared)

    def describe(self) -> str:
        return (f"fused policy step, a warp per env (policy_rollout_warp_kernel, {self.plan.fused_block} threads a "
                f"block, one launch a {self.plan.choices.warp_launch})")

    def record_steps(self, slot: int) -> None:
        plan = self.plan
        t_len = plan.horizon
        per_step = plan.choices.warp_launch == "step"
        for t0, steps in ([(t, 1) for t in range(t_len + 1)] if per_step else [(0, t_len + 1)]):
            self.k.launch_shared("policy_rollout_warp_kernel", plan.num_envs * 32, plan.fused_block, self.shared,
                                 self.args(slot), np.int32(t0), np.int32(steps))


class SelfPlayRollout(GemmRollout):
    """Self-play with the games on the GPU (selfplay.cu): the rollout's rows are the learner's seats (game g: seat
    g % A), whose policy runs as GemmRollout's; each step pool_forward_kernel acts for every other seat with the
    snapshot its game plays (the pool's weights are arena rows), and selfplay_step_kernel steps the games, records
    the learner's seat and, where a game ends, its score and its next opponent. sync_pool mirrors the host's
    OpponentPool (selfplay.py) into the arena between rollouts; selfplay.SelfPlayBatch is the host twin."""

    name = "selfplay"
    POOL_BLOCK = 128  # pool_forward_kernel's threads per block
    batch_scratch = ("game_final_obs", "game_ep_return")  # every seat's, the games'

    def __init__(self, *args):
        super().__init__(*args)
        plan = self.plan
        self.seats, self.pool_slots = plan.env_agents, plan.pool_slots
        self.opp_rows = plan.num_envs * (self.seats - 1)
        self.stride = pool_row_floats(self.layout)
        self.opponent_key, self.pool_key = selfplay_keys(self.seed_key)
        self.slot_pid: dict[int, int] = {}  # pool slot -> OpponentPool id of the snapshot in it
        self.warned_full = False

    def matches(self, config):
        """Evaluation games on the GPU in this rollout's env build (cuda/matches.py)."""
        from fastvec.trainer.cuda.matches import GpuMatches
        return GpuMatches(self.spec)

    def add_tensors(self, arena) -> None:
        n, agents, o, q = self.plan.num_envs, self.seats, self.spec.obs_size, max(self.opp_rows, 1)
        arena.add("pool", (self.pool_slots, self.stride), np.float32, "(M, P4) the snapshots' flat weights")
        arena.add("pool_table", (2 + self.pool_slots,), np.int32, "members, latest_prob bits, members' pool slots")
        arena.add("game_weights", (n,), np.int32, "(N,) the pool slot each game's opponents play")
        arena.add("game_obs", (n, agents, o), np.float32, "(N, A, O) every seat's obs (OBS_T elements)")
        arena.add("game_final_obs", (n, agents, o), np.float32, "(N, A, O) batch-layer scratch (terminal obs)")
        arena.add("game_ep_return", (n, agents), np.float32, "(N, A) finished episodes' returns, every seat")
        arena.add("opp_actions", (q,), np.int32, "(N * (A - 1),) the opponents' actions this step")
        arena.add("opp_starts", (q,), np.float32, "(N * (A - 1),) 1: an opponent row begins a game")
        arena.add("opp_state", (max(self.spec.state_layers, 1), q, self.spec.hidden), np.float32,
                  "(Ls, N * (A - 1), H) the opponents' recurrent state")
        arena.add("selfplay_acc", (2,), np.float64, "games finished, sum of the learner's scores")

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        a = self.arena
        self.selfplay_args = pack(SelfPlayArgs(
            game_obs=a.ptr("game_obs"), opp_actions=a.ptr("opp_actions"), opp_starts=a.ptr("opp_starts"),
            game_weights=a.ptr("game_weights"), pool_table=a.ptr("pool_table"), selfplay_acc=a.ptr("selfplay_acc"),
            pool_key=self.pool_key, seat_offset=0))
        self.shared = 4 * self.spec.hidden * self.POOL_BLOCK
        self.k.function("pool_forward_kernel").set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                             self.shared)

    def describe(self) -> str:
        return (f"self-play on the GPU ({self.seats} seats a game, {self.pool_slots} pool slots): the learner's policy "
                f"as GEMMs{' (bf16)' if self.plan.rollout_bf16 else ''}, the opponents' a thread per seat")

    def reset_envs(self, k) -> None:
        a, plan = self.arena, self.plan
        n = plan.num_envs
        k.launch("fv_reset_kernel", n, np.int32(n), a.ptr("slots"), a.ptr("seeds"), 0, a.ptr("game_obs"))
        k.launch("selfplay_gather_kernel", n, np.int32(n), np.int32(0), a.ptr("game_obs"),
                 self.slot("obs", plan.slot_count - 1, plan.horizon * plan.rows * self.spec.obs_size))
        k.launch("fill_kernel", max(self.opp_rows, 1), a.ptr("opp_starts"), np.int64(max(self.opp_rows, 1)),
                 np.float32(1.0))

    def step_envs(self, slot: int, t: int) -> None:
        a, k = self.arena, self.k
        if self.opp_rows:
            args = PoolForwardArgs(a.ptr("pool"), a.ptr("game_weights"), a.ptr("game_obs"), a.ptr("opp_starts"),
                                   a.ptr("opp_state"), a.ptr("opp_actions"), a.ptr("scalars"), key=self.opponent_key,
                                   pool_stride=self.stride, t=t, rows=self.opp_rows, per_game=self.seats - 1,
                                   seat_offset=0, player_slot=-1, deterministic=0)
            k.launch_shared("pool_forward_kernel", self.opp_rows, self.POOL_BLOCK, self.shared, pack(args))
        k.launch("selfplay_step_kernel", self.plan.num_envs, self.args(slot), self.selfplay_args, np.int32(t))

    def sync_pool(self, pool) -> None:
        """Mirror `pool` (an OpponentPool) into the arena, between rollouts: snapshots that no game plays and
        that left the pool free their slots; new members are copied into free slots (a member that finds none,
        while evicted snapshots still play their last games, leaves the pool again, and where that would leave
        the pool empty the newest snapshot in a slot stays a member); the member table is
        rewritten. At the first call every game draws its opponent (draw_opponents at step -1, as a reset)."""
        cuda, a = self.cuda, self.arena
        self.k.stream.synchronize()  # the actor's rollouts read the pool
        first = not self.slot_pid
        playing = set() if first else {self.slot_pid[int(s)] for s in np.unique(a.get(cuda, "game_weights"))}
        pool.prune(playing)
        self.slot_pid = {s: pid for s, pid in self.slot_pid.items() if pid in pool.policies}
        placed = set(self.slot_pid.values())
        for pid in [p for p in pool.members if p not in placed]:
            free = [s for s in range(self.pool_slots) if s not in self.slot_pid]
            if not free:
                pool.forget(pid)
                if not pool.members:  # pool_size 1: the snapshot it replaced, still played so still in a slot,
                    pool.members.append(max(self.slot_pid.values()))  # stays (the kernels need a member to draw)
                if not self.warned_full:
                    print(f"fastvec-train: warning: all {self.pool_slots} pool slots hold snapshots that games "
                          f"still play; a snapshot was skipped", file=sys.stderr)
                    self.warned_full = True
                continue
            self.slot_pid[free[0]] = pid
            cuda.memcpy_htod(a.ptr("pool", free[0] * self.stride), np.ascontiguousarray(pool.policies[pid].params))
        slot_of = {pid: s for s, pid in self.slot_pid.items()}
        members = [slot_of[pid] for pid in pool.members]
        table = np.zeros(2 + self.pool_slots, np.int32)
        table[0], table[1] = len(members), np.float32(pool.latest_prob).view(np.int32)
        table[2:2 + len(members)] = members
        a.set(cuda, "pool_table", table)
        if first:
            n = self.plan.num_envs
            a.set(cuda, "game_weights", draw_opponents(self.pool_key, np.arange(n), n, -1, members, pool.latest_prob))

    def pop_score_sums(self) -> tuple[int, float]:
        """(games finished, sum of the learner's scores) since the last call."""
        self.k.stream.synchronize()
        games, total = self.arena.get(self.cuda, "selfplay_acc")
        self.cuda.memset_d8(self.arena.ptr("selfplay_acc"), 0, 16)
        return int(games), float(total)


class TeamRollout(GemmRollout):
    """A team game (MPE, SMAX) in the rollout graph: GemmRollout's policy and env step, whose observations go to a
    scratch (env_obs), then team_inputs_kernel (team_rollout.cu) writes the slot's next step as
    agent_inputs.AgentInputs reads a CPU batch: each row's obs with its agent's one-hot id, its action mask (the
    env's ACTION_MASK, or each agent's own actions) and a world-state critic's input (the env's WORLD_STATE_SIZE
    values, or every agent's own obs). use_inputs(an AgentInputs of the game's CPU batch) gives the static tables."""

    name = "team"

    def use_inputs(self, inputs) -> None:
        """Each agent's own action mask (agents, A) where the env has no ACTION_MASK but its agents' spaces differ,
        and the world state's columns of the env's obs (MPE), from AgentInputs; None where the env needs neither."""
        agents = self.plan.num_agents
        self.own_masks = None if inputs.static_mask is None else np.ascontiguousarray(inputs.static_mask[:agents])
        self.world_columns = None if inputs.columns is None else np.ascontiguousarray(inputs.columns, np.int32)
        self.packed_inputs: dict[tuple[int, int], bytes] = {}

    def add_tensors(self, arena) -> None:
        spec, plan = self.spec, self.plan
        arena.add("env_obs", (plan.rows, spec.obs_size), np.float32, "(R, O) the env step's observations (OBS_T)")
        if spec.world_size and self.world_columns is None:
            arena.add("team_world_state", (plan.num_envs, spec.world_size), np.float32, "(N, W) the env's world state")
        if self.own_masks is not None:
            arena.add("own_masks", self.own_masks.shape, np.uint8, "(agents, A) each agent's own actions")
        if self.world_columns is not None:
            arena.add("world_columns", self.world_columns.shape, np.int32, "(W,) the world state's obs entries")

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        if self.own_masks is not None:
            self.arena.set(cuda, "own_masks", self.own_masks)
        if self.world_columns is not None:
            self.arena.set(cuda, "world_columns", self.world_columns)

    def describe(self) -> str:
        return "team games in the rollout graph: " + super().describe()

    def reset_envs(self, k) -> None:
        plan = self.plan
        k.launch("fv_reset_kernel", plan.num_envs, np.int32(plan.num_envs), self.arena.ptr("slots"),
                 self.arena.ptr("seeds"), 0, self.arena.ptr("env_obs"))
        self.team_inputs(k, plan.slot_count - 1, plan.horizon)

    def obs_next(self, slot: int, step: int) -> int:
        return self.arena.ptr("env_obs")

    def step_envs(self, slot: int, t: int) -> None:
        super().step_envs(slot, t)
        self.team_inputs(self.k, slot, t + 1)

    def team_inputs(self, k, slot: int, t: int) -> None:
        """team_inputs_kernel: step t of `slot` (obs, masks, world) from env_obs and the games' state."""
        packed = self.packed_inputs.get((slot, t))
        if packed is None:
            spec, plan, a = self.spec, self.plan, self.arena
            r = plan.rows
            optional = lambda name: a.ptr(name) if name in a.entries else 0  # noqa: E731
            packed = self.packed_inputs[(slot, t)] = pack(TeamInputsArgs(
                slots=a.ptr("slots"), env_obs=a.ptr("env_obs"), obs=self.slot("obs", slot, t * r * spec.input_size),
                masks=self.slot("masks", slot, t * r * spec.num_actions) if plan.masked else 0,
                own_masks=optional("own_masks"), world=self.world(slot, t),
                world_state=optional("team_world_state"), world_columns=optional("world_columns"),
                num_envs=plan.num_envs, agent_ids=int(bool(spec.agent_ids)), world_size=spec.world_size))
        k.launch("team_inputs_kernel", self.plan.num_envs, packed)


GPU_ENV_ROLLOUTS = {"gemm": GemmRollout, "thread": ThreadRollout, "warp": WarpRollout, "selfplay": SelfPlayRollout,
                    "team": TeamRollout}
