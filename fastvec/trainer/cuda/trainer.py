"""The CUDA trainer: NumpyTrainer's algorithm and interface on the GPU, method for method. Every tensor lives in
one arena (plan.py); a whole rollout (rollouts.py, or host_envs.py with the env on the CPU) is one CUDA graph
replay, and a whole update (update.py: GAE, every epoch and minibatch, policy.py's forward and backward, the PPO
loss, optimizers.py's step) another. `CudaTrainer` composes the parts chosen once at construction: the rollout
path and its collector (actors.py), the actor (the learner's stream, or train.async's own), the slots (slots.py),
the update, and the reduction across GPUs (data_parallel.py). Checkpoints are interchangeable with the CPU
trainer's."""

from __future__ import annotations

import time

import numpy as np

from fastvec.trainer import reference as ref, teams
from fastvec.trainer.agent_inputs import AgentInputs
from fastvec.trainer.cuda import device
from fastvec.trainer.cuda.actors import Actor, AsyncActor, GraphCollector, HostCollector
from fastvec.trainer.cuda.cublas import Cublas
from fastvec.trainer.cuda.data_parallel import data_parallel
from fastvec.trainer.cuda.heads import HeadOps
from fastvec.trainer.cuda.device_envs import DeviceEnvs
from fastvec.trainer.cuda.host_envs import HostEnvs
from fastvec.trainer.cuda.optimizers import make_optimizer
from fastvec.trainer.cuda.plan import CUBLAS_WORKSPACE, SCALARS_DTYPE, STAT_NAMES, Choices, Plan, plan_arena, \
    slot_addresses
from fastvec.trainer.cuda.policy import GpuPolicy
from fastvec.trainer.cuda.rollouts import GPU_ENV_ROLLOUTS
from fastvec.trainer.cuda.slots import Counters, Slots, SlotState
from fastvec.trainer.cuda.update import GpuUpdate
from fastvec.trainer.resolve import env_build, make_batch
from fastvec.trainer.settings import Config

# Legend as plan.py's: T = horizon, N = envs, R = rows, O = obs size, K = bptt, P = parameters.


class CudaTrainer:
    """Owns the arena and the parts; `rollout()` collects through the collector, `update()` enqueues the update.
    `batch` describes the env (num_envs, env.obs_size/num_actions/num_agents/stat_names); with the env on the GPU
    it is compiled from the same source. With train.env_device = "cpu" the env is `batch` itself (a CpuBatch, or
    self-play's SelfPlayBatch) when there is one env group, else host_batches, or CpuBatches made here; a MuJoCo
    task with train.env_device = "cuda" is `batch` itself, on MuJoCo Warp (device_envs.py).
    `choices` forces a path where tests and benchmarks need one (plan.Choices)."""

    device = "cuda"

    def __init__(self, config: Config | dict, batch, spec: ref.PolicySpec, host_batches: list | None = None,
                 choices: Choices = Choices()):
        self.config = config = Config.of(config)  # run.make_trainer adds selfplay and env_batches (protocol.Trainer)
        self.spec, self.batch, train = spec, batch, config.train
        # the env is a batch stepped outside the module: on the host, or (a batch on the GPU) a MuJoCo task on MuJoCo
        # Warp (device_envs.py)
        self.device_env = getattr(batch, "device", "cpu") == "cuda"
        self.host_env = train.env_device == "cpu" or self.device_env
        # A host batch's agents per env are its obs' (self-play's SelfPlayBatch shows the learner's seat only).
        num_agents = batch.obs.shape[1] if self.host_env else batch.env.num_agents
        selfplay_seats = batch.env.num_agents if config.selfplay.enabled and not self.host_env else 0
        self.layout = ref.FlatLayout(ref.param_table(spec))
        # a team game's inputs besides its obs (the agent ids, action masks and world state, as NumpyTrainer's)
        team = config.env_kind == "team"
        self.inputs = AgentInputs(spec, batch) if self.host_env or team else None
        masked = self.inputs is not None and self.inputs.mask() is not None
        # each agent's team (its episode returns are logged per team where a game has several), else None
        self.teams = teams.agent_teams(config.env.name, config.env.params) if config.env_kind == "team" else None
        plan = self.plan = Plan.make(train, spec, self.layout, batch.num_envs, num_agents, self.host_env, choices,
                                     selfplay_seats, config.selfplay.pool_size, masked, team)
        self.num_envs, self.num_agents, self.rows, self.horizon, self.bptt = (
            plan.num_envs, plan.num_agents, plan.rows, plan.horizon, plan.bptt)
        self.segments, self.sequences, self.async_rollouts = plan.segments, plan.sequences, plan.async_rollouts
        self.rng = np.random.default_rng(train.seed)  # only for the initial weights, as NumpyTrainer's
        self.reduction = data_parallel()
        self.group, self.rank, self.world_size = self.reduction.group, self.reduction.rank, self.reduction.world_size
        self.seed_key = self.reduction.rank_key(ref.sampling_key(train.seed))
        self.shuffle_key = ref.shuffle_key(self.seed_key)
        self.counters = Counters(SlotState([-1] * plan.slot_count))
        self.slots = Slots(self.counters.slots, plan.async_rollouts)
        t0 = time.perf_counter()
        self._build(host_batches)
        self._start()
        self.startup_time = time.perf_counter() - t0

    def _build(self, host_batches: list | None) -> None:
        """The module, the arena (the shared tensors, then the optimizer's and the rollout path's own), and the
        parts that enqueue work on it: the policy, optimizer, rollout path, actor, collector and update."""
        plan, spec, train = self.plan, self.spec, self.config.train
        cuda = self.cuda = device.init()
        self.stream = cuda.Stream()  # the learner's (and, without train.async, the actor's too)
        env_source, defines, self.max_episode_steps = env_build(self.config, self.batch)  # user env file, gym stub
        defines.update(plan.policy_defines(spec))  # the policy kernels' -D sizes (head width, fused step, self-play)
        self.k = device.Launcher(device.load_module(env_source, tuple(sorted(defines.items()))), self.stream)
        obs_item = device.module_int(cuda, self.k.module, "fv_obs_bytes")  # sizeof(OBS_T); host envs upload floats
        plan.obs_bytes = self.obs_bytes = obs_item == 1 and plan.rollout not in ("host", "team")  # team: floats
        self.arena = plan_arena(plan, spec, self.layout, device.module_int(cuda, self.k.module, "fv_slot_size"),
                                len(self.batch.env.stat_names))
        self.policy = GpuPolicy(spec, self.layout, self.arena, plan)
        self.optimizer = make_optimizer(train, self.layout, self.arena, plan.choices.muon_small_shared_max)
        args = (plan, spec, self.layout, self.arena, self.policy, slot_addresses(self.arena), train, self.seed_key)
        if self.device_env:
            self.rollout_path = DeviceEnvs(*args, self.batch, self.timing)
        elif self.host_env:
            self.rollout_path = HostEnvs(*args, self.batch, host_batches, self.timing)
        else:
            self.rollout_path = GPU_ENV_ROLLOUTS[plan.rollout](*args, self.max_episode_steps)
            if plan.rollout == "team":
                self.rollout_path.use_inputs(self.inputs)
        self.gpu_games = self.rollout_path if plan.rollout == "selfplay" else None  # self-play's games on the GPU
        self.optimizer.add_tensors(self.arena)
        self.rollout_path.add_tensors(self.arena)
        self.arena.allocate(cuda)
        self.heads = HeadOps(spec, self.layout, self.arena, plan, train, self.group)
        self.heads.start(cuda)
        self.blas = Cublas(self.stream, self.arena.ptr("cublas_workspace"), CUBLAS_WORKSPACE, plan.precision)
        self.actor = AsyncActor(cuda, self.k.module, self.arena, plan.precision, self.stream, self.layout.size) \
            if plan.async_rollouts else Actor(self.k, self.blas, self.stream)
        self.collector = HostCollector(self.rollout_path) if self.host_env else \
            GraphCollector(self.rollout_path, plan.choices.graphs, plan.slot_count)
        self.optimizer.start(cuda, self.k, plan.precision)
        self.updater = GpuUpdate(plan, spec, self.layout, self.arena, train, (self.k, self.blas, self.stream), cuda,
                                 self.policy, self.optimizer, self.heads, self.reduction, self.shuffle_key)
        self.scalars_host = cuda.pagelocked_empty(SCALARS_DTYPE.itemsize, np.uint8)  # pinned: read back per update
        self.episode_acc_host = cuda.pagelocked_empty(self.arena.entries["episode_acc"][1], np.float64)

    def _start(self) -> None:
        """MODEL AND OPTIMIZER: the reference's initial weights for this seed (as the CPU trainer's), the scalars.
        ENV: reset every env with seeds (seed << 32) + i, as NumpyTrainer (rank r's envs continue the numbering at
        r * N, so ranks never replay each other's episodes); obs go to step T of the last rollout slot, which the
        first rollout copies to its step 0, and starts[T] = 1 (every env begins an episode). Rollouts alternate
        between the slots, each starting where the other one ended."""
        cuda, plan, train, arena = self.cuda, self.plan, self.config.train, self.arena
        arena.set(cuda, "params", ref.init_params(self.spec, self.rng, np.float32))
        self.reduction.broadcast_params(arena, self.layout.size, self.stream)
        scalars = np.zeros((), SCALARS_DTYPE)
        scalars["lr"], scalars["ent_coef"], scalars["clip_scale"] = train.learning_rate, train.ent_coef, 1.0
        arena.set(cuda, "scalars", np.frombuffer(scalars.tobytes(), np.uint8))
        self.k.launch("fill_kernel", plan.mb_rows, arena.ptr("ones"), np.int64(plan.mb_rows), np.float32(1.0))
        n_env, rows, last = plan.num_envs, plan.rows, plan.slot_count - 1
        seeds = (np.uint64(train.seed) << np.uint64(32)) + np.uint64(self.rank * n_env) \
            + np.arange(n_env, dtype=np.uint64)
        arena.set(cuda, "seeds", seeds)
        actor = (self.actor.k, self.actor.blas, self.actor.params)
        if self.host_env:
            self.rollout_path.start(cuda, actor, seeds, lambda count: make_batch(self.config, count))
        else:
            self.rollout_path.start(cuda, actor)
            self.rollout_path.reset_envs(self.k)
        self.k.launch("fill_kernel", rows, self._slot("starts", last, plan.horizon * rows), np.int64(rows),
                      np.float32(1.0))
        self.stream.synchronize()

    def describe(self) -> str:
        """The paths chosen at construction, for the start-up log."""
        plan = self.plan
        extras = [("bf16 MinGRU activations", plan.bf16_acts), ("async rollouts", plan.async_rollouts),
                  (f"{self.world_size} GPUs", self.group), ("no CUDA graphs", not plan.choices.graphs)]
        return "; ".join([f"CUDA trainer: {self.rollout_path.describe()}", self.optimizer.describe(), plan.precision]
                         + [text for text, on in extras if on])

    # COUNTERS (slots.Counters, which the warm-up saves and puts back whole)
    global_step = property(lambda self: self.counters.global_step,
                           lambda self, value: setattr(self.counters, "global_step", value))
    update_index = property(lambda self: self.counters.update_index,
                            lambda self, value: setattr(self.counters, "update_index", value))
    opt_step = property(lambda self: self.counters.opt_step,
                        lambda self, value: setattr(self.counters, "opt_step", value))
    timing = property(lambda self: self.counters.timing)
    active_slot = property(lambda self: self.counters.slots.active, doc="the rollout slot the next update trains on")

    @property
    def behaviour_version(self) -> int:
        """update_index of the weights that collected the slot the next update trains on (as NumpyTrainer's)."""
        return self.counters.slots.version[self.active_slot]

    # ROLLOUT
    def rollout(self) -> None:
        """Fill the rollout buffers the next update trains on, as NumpyTrainer.rollout. Sync: collect with the
        current weights and wait for it. Async (slots.Slots): launch the rollout that runs while the next update
        does, with the weights that update starts from, and return without waiting: update() waits on the GPU (an
        event) for the slot it trains on. Host envs: the CPU steps the env, so the overlapping rollout is collected
        by the next update() after it has launched its own graph (actors.HostCollector)."""
        t0 = time.perf_counter()
        self.collector.finish_deferred()  # a rollout() without an update() in between
        for slot, overlaps in self.slots.rollouts():
            self.collect(slot, overlaps)
        if not self.async_rollouts:
            self.stream.synchronize()
        self.timing["rollout"] += time.perf_counter() - t0  # async: launching only; the GPU time overlaps

    def collect(self, slot: int, overlaps: bool = False) -> None:
        """Enqueue one rollout into `slot` on the actor's stream, with the weights of update `update_index`
        (the actor's hand-over: async's copy, ordered against the learner by events)."""
        self.counters.slots.version[slot] = self.update_index
        self.actor.hand_over()
        self.global_step += self.horizon * self.num_envs * self.world_size  # all ranks step in lockstep
        self.collector.collect(slot, overlaps)

    # GAE
    def advantages(self, vtrace: bool = False) -> None:
        """Enqueue NumpyTrainer.advantages over the active slot into adv_returns (V-trace: with new_logp's ratios);
        update() runs it itself (update.GpuUpdate.gae)."""
        self.updater.slot = self.active_slot
        self.updater.gae(vtrace)

    # UPDATE
    def update(self, num_updates: int) -> dict:
        """PPO epochs over the active rollout slot (update.GpuUpdate: one graph replay on the learner's stream);
        returns the update's mean stats. Async: it runs on the GPU while the actor collects the next rollout, and
        only the learner is waited for."""
        t0 = time.perf_counter()
        tc = self.config.train
        lr = ref.annealed(tc.learning_rate, self.update_index, num_updates, tc.anneal_lr)
        ent_coef = ref.ent_coef_at(tc.ent_coef, self.update_index, num_updates, tc.anneal_ent)
        if self.updater.new_schedule(num_updates):  # the schedule kernel keeps them from here on
            scalars = self.scalars().copy()
            scalars["lr"], scalars["ent_coef"] = lr, ent_coef
            self._write_scalars(scalars)
        self.updater.enqueue(num_updates, self.active_slot, self.slots.stale(self.update_index))
        collecting = self.collector.finish_deferred()  # async host envs: the CPU steps while the GPU learns
        self.timing["rollout"] += collecting
        t0 += collecting
        # Read the stats back behind the update only (async: not behind the actor's rollout), into pinned memory.
        self.cuda.memcpy_dtoh_async(self.scalars_host, self.arena.ptr("scalars"), self.stream)
        self.stream.synchronize()
        scalars = np.frombuffer(self.scalars_host.tobytes(), SCALARS_DTYPE)[0]
        self.update_index += 1
        self.opt_step = int(scalars["opt_step"])
        count = max(float(scalars["stat"][6]), 1.0)
        out = {name: float(scalars["stat"][i]) / count for i, name in enumerate(STAT_NAMES)}
        out["loss"] = out["policy_loss"] + tc.vf_coef * out["value_loss"] - ent_coef * out["entropy"]
        out.update(learning_rate=lr, ent_coef=ent_coef, explained_variance=float(scalars["stat"][7]))
        self.timing["update"] += time.perf_counter() - t0
        return out

    def minibatch_step(self, first: int) -> None:
        """Enqueue NumpyTrainer.minibatch_step for sequences perm[first : first + Bm] of the active slot."""
        self.updater.slot = self.active_slot
        self.updater.minibatch_step(first)

    # LOG
    def pop_episodes(self) -> dict | None:
        """Mean return, length and env stats of the episodes finished since the last call (None if none).
        Async: includes the episodes of the rollout collected during the last update."""
        self._synchronize()
        self.cuda.memcpy_dtoh_async(self.episode_acc_host, self.arena.ptr("episode_acc"), self.stream)
        self.stream.synchronize()
        acc = self.episode_acc_host.copy()
        if acc[0] == 0:
            return None
        # Zeroed on the learner's stream: ahead of every later rollout (async: the actor waits for it, collect).
        self.cuda.memset_d8_async(self.arena.ptr("episode_acc"), 0, self.arena.nbytes("episode_acc"), self.stream)
        names = ("episode_return", "episode_length", *self.batch.env.stat_names)  # acc[1], acc[2], acc[3:3 + S]
        out = {"episodes": int(acc[0]), **{name: float(acc[1 + i] / acc[0]) for i, name in enumerate(names)}}
        if self.teams is not None and len(set(self.teams)) > 1:  # a game of teams: each team's mean return too
            agent_sums, labels = acc[1 + len(names):], np.array(self.teams)  # each agent's sum of returns
            for team in dict.fromkeys(self.teams):
                members = labels == team
                out[f"episode_return_{team}"] = float(agent_sums[members].sum() / (acc[0] * members.sum()))
        return out

    # CHECKPOINT STATE (checkpoint.py's format: the CPU trainer loads it, and vice versa)
    def state_dict(self) -> dict:
        self._synchronize()
        scalars = self.scalars()
        return {"params": self.arena.get(self.cuda, "params"), "optimizer": self.arena.get(self.cuda, "opt_state"),
                "counters": {"opt_step": int(scalars["opt_step"]), "update": self.update_index,
                             "global_step": self.global_step, "rollout_steps": int(scalars["rollout_steps"])},
                "rng": None, "reward_norm": self.heads.reward_norm()}

    def load_state_dict(self, state: dict) -> None:
        self._synchronize()  # async: the actor may still be collecting (with its own copy of the weights)
        self.arena.set(self.cuda, "params", state["params"])
        if state.get("optimizer") is not None:
            self.arena.set(self.cuda, "opt_state", state["optimizer"])
        self.heads.load_reward_norm(state.get("reward_norm"))
        counters = state.get("counters", {})
        self.update_index = counters.get("update", 0)
        self.global_step = counters.get("global_step", 0)
        scalars = self.scalars().copy()
        scalars["opt_step"] = counters.get("opt_step", 0)
        scalars["update"] = self.update_index
        scalars["rollout_steps"] = counters.get("rollout_steps",
                                                self.global_step // max(self.num_envs * self.world_size, 1))
        self._write_scalars(scalars)
        self.updater.captured_for = None  # the next update() re-reads the learning rate

    # START-UP AND SHUT-DOWN
    def warm_up(self, num_updates: int) -> float:
        """The first iterations' one-off work at start-up (returns its seconds): a rollout and an update eagerly (cuBLAS
        and the driver load their kernels), then captured as graphs and replayed (uploaded); three with train.async
        (both slots' graphs). Then every arena byte and counter is put back: training starts exactly where it would
        have (bitwise: the tests check). A no-op with host envs, several GPUs, without graphs, or once begun."""
        t0 = time.perf_counter()
        if self.host_env or self.group or not self.plan.choices.graphs or self.collector.rollouts_run:
            return 0.0
        cuda, arena = self.cuda, self.arena
        self._synchronize()
        saved = cuda.mem_alloc(arena.size)
        cuda.memcpy_dtod(saved, arena.base, arena.size)
        counters = self.counters.snapshot()  # the async slots' roles too
        for _ in range(3 if self.async_rollouts else 2):
            self.rollout()
            self.update(num_updates)
        self._synchronize()
        cuda.memcpy_dtod(arena.base, saved, arena.size)
        cuda.Context.synchronize()
        saved.free()
        self.counters.restore(counters)
        return time.perf_counter() - t0

    def close(self) -> None:
        """Free graphs, cuBLAS and the arena now (also done at garbage collection)."""
        self._synchronize()
        self.collector.close()
        self.updater.close()
        self.blas.close()
        self.actor.close()
        self.optimizer.close()
        if self.arena.allocation is not None:
            self.arena.allocation.free()
            self.arena.allocation = None

    # DEVICE STATE
    @property
    def params(self) -> np.ndarray:
        """A host copy of the flat float32 parameters (P,), as NumpyTrainer.params (self-play snapshots it)."""
        self._synchronize()
        return self.arena.get(self.cuda, "params")

    def last_values(self) -> np.ndarray:
        """V(obs after the last step) (R,) of the rollout the next update trains on, the GAE's bootstrap."""
        self._synchronize()
        if self.plan.fused_block:
            return self.arena.get(self.cuda, "last_value" if self.active_slot == 0 else "last_value@1")
        return self.arena.get(self.cuda, "r_y" if self.active_slot == 0 else "r_y@1")[:, self.spec.head_size].copy()

    def scalars(self) -> np.ndarray:
        """The device scalars (synchronous read, after the learner and the actor)."""
        self._synchronize()
        raw = self.arena.get(self.cuda, "scalars")
        return np.frombuffer(raw.tobytes(), SCALARS_DTYPE)[0]

    def _write_scalars(self, scalars) -> None:
        self._synchronize()
        self.arena.set(self.cuda, "scalars", np.frombuffer(np.asarray(scalars, SCALARS_DTYPE).tobytes(), np.uint8))

    def _slot(self, name: str, slot: int | None = None, offset_elements: int = 0) -> int:
        """Device address of rollout buffer `name` (plan.SLOT_BUFFERS) of rollout slot `slot` (default: the one
        the next update trains on)."""
        return slot_addresses(self.arena)(name, self.active_slot if slot is None else slot, offset_elements)

    def _synchronize(self) -> None:
        """Wait for the learner and the actor (one stream without train.async)."""
        self.stream.synchronize()
        if self.actor.stream is not self.stream:
            self.actor.stream.synchronize()
