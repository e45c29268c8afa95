"""The rollout paths with the env on the GPU, each enqueueing one whole horizon (NumpyTrainer.collect) and the
bootstrap value into a rollout slot on the actor's stream: `GemmRollout` (cuBLAS GEMMs for the policy, then
the env step kernel), `ThreadRollout` (policy_step_kernel: policy, sampling and env step fused, a thread per
env, a launch a step) and `WarpRollout` (policy_rollout_warp_kernel: a warp per env, the horizon in one launch)."""

from __future__ import annotations

import numpy as np

from fastvec.trainer.cuda.plan import Plan, warp_scratch_floats, warp_weight_floats


def module_int(cuda, module, name: str) -> int:
    """A `__device__ const int` of a compiled module (sizes the host needs)."""
    value = np.empty(1, np.int32)
    cuda.memcpy_dtoh(value, module.get_global(name)[0])
    return int(value[0])


class GpuEnvRollout:
    """What every GPU-env path shares: the arena, the actor's stream (launcher k, cuBLAS blas) and the weights
    it collects with (arena name `params`), the sampling key, and the slot addresses (slot(name, slot, offset))."""

    def __init__(self, plan: Plan, spec, layout, arena, policy, slot, train: dict, seed_key: int,
                 max_episode_steps: int):
        self.plan, self.spec, self.layout, self.arena, self.policy, self.slot = plan, spec, layout, arena, policy, slot
        self.seed_key, self.reward_clamp, self.max_episode_steps = seed_key, train["reward_clamp"], max_episode_steps

    def add_tensors(self, arena) -> None:
        """The GPU-env paths use the shared rollout tensors only (plan_arena)."""

    def start(self, cuda, actor) -> None:
        """Once the arena is allocated: the actor's launcher, cuBLAS and weights (arena name) to collect with."""
        self.cuda = cuda
        self.k, self.blas, self.params = actor

    def close(self) -> None:
        """The trainer frees the graphs and the arena."""

    def record(self, slot: int) -> None:
        """Enqueue a rollout into `slot`, starting from the obs after the previous rollout (step T of the other
        slot; of the same one without train.async)."""
        plan, k = self.plan, self.k
        t_len, r, o = plan.horizon, plan.rows, self.spec.obs_size
        previous = (slot + 1) % plan.slot_count
        self.cuda.memcpy_dtod_async(self.slot("obs", slot), self.slot("obs", previous, t_len * r * o), r * o * 4,
                                    k.stream)
        self.cuda.memcpy_dtod_async(self.slot("starts", slot), self.slot("starts", previous, t_len * r), r * 4,
                                    k.stream)
        self.record_steps(slot)
        k.launch_grid("advance_rollout_kernel", 1, 1, self.arena.ptr("scalars"), np.int32(t_len))

    def save_segment_state(self, slot: int, t: int) -> None:
        """At a segment's first step, the live recurrent state into segment_state[t / K] (the update's start)."""
        ls, r, h, kk = self.spec.state_layers, self.plan.rows, self.spec.hidden, self.plan.bptt
        if t % kk == 0 and ls:
            self.cuda.memcpy_dtod_async(self.slot("segment_state", slot, (t // kk) * ls * r * h),
                                        self.arena.ptr("state"), ls * r * h * 4, self.k.stream)

    def env_outputs(self, slot: int, step: int) -> tuple:
        """The env step kernels' common arguments after the policy's: step `step`'s outputs and the batch state."""
        a, r, o = self.arena, self.plan.rows, self.spec.obs_size
        return (a.ptr("slots"), self.slot("obs", slot, (step + 1) * r * o), a.ptr("final_obs"),
                self.slot("actions", slot, step * r), self.slot("logp", slot, step * r),
                self.slot("values", slot, step * r), self.slot("rewards", slot, step * r),
                self.slot("dones", slot, step * r), self.slot("starts", slot, (step + 1) * r),
                a.ptr("terminated"), a.ptr("truncated"), a.ptr("ep_return"), a.ptr("ep_length"), a.ptr("ep_stats"),
                a.ptr("episode_acc"), a.ptr("scalars"))


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
        t_len, r, o, h, ls = plan.horizon, plan.rows, spec.obs_size, spec.hidden, spec.state_layers
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
        for t in range(t_len):
            self.save_segment_state(slot, t)
            self.policy.forward(k, self.blas, r, 1, self.slot("obs", slot, t * r * o), self.slot("starts", slot, t * r),
                                state, state, acts, pres, hs, y, self.params, acts_bf16, dec_bias=False)
            name, threads = self.step_kernel
            k.launch_shared(name, plan.num_envs, threads, 0, np.int32(plan.num_envs), a.ptr("slots"), y,
                            a.ptr(self.params, self.layout.offsets["dec.b"][0]), *self.env_outputs(slot, t)[1:],
                            np.int32(t), np.uint64(self.seed_key), np.int32(self.reward_clamp),
                            np.int32(self.max_episode_steps))
        # Bootstrap: V(obs[T]) with the live state, which stays as it is (last_state is scratch).
        self.policy.forward(k, self.blas, r, 1, self.slot("obs", slot, t_len * r * o),
                            self.slot("starts", slot, t_len * r), state, last_state, acts, pres, hs, y, self.params,
                            acts_bf16)


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
        a, k, plan = self.arena, self.k, self.plan
        t_len, r, o, n_env = plan.horizon, plan.rows, self.spec.obs_size, plan.num_envs
        for t in range(t_len + 1):
            bootstrap = t == t_len
            if not bootstrap:
                self.save_segment_state(slot, t)
            step = min(t, t_len - 1)  # the bootstrap writes no step outputs; any valid pointers do
            k.launch_shared("policy_step_kernel", n_env, plan.fused_block, self.shared, np.int32(n_env),
                            a.ptr(self.params), self.slot("obs", slot, t * r * o), self.slot("starts", slot, t * r),
                            a.ptr("state"), a.ptr("last_state" if bootstrap else "state"), np.int32(bootstrap),
                            self.slot("last_value", slot), *self.env_outputs(slot, step), np.int32(t),
                            np.uint64(self.seed_key), np.int32(self.reward_clamp), np.int32(self.max_episode_steps))


class WarpRollout(GpuEnvRollout):
    """policy_rollout_warp_kernel: a warp per env runs all T + 1 policy steps (the last the bootstrap) in one
    launch, or one launch a step with Choices(warp_launch="step") (same kernel, same results)."""

    name = "warp"

    def start(self, cuda, actor) -> None:
        super().start(cuda, actor)
        spec, plan = self.spec, self.plan
        self.shared = 4 * (warp_weight_floats(spec, self.layout)
                           + plan.fused_block // 32 * warp_scratch_floats(spec, plan.num_agents))
        self.k.function("policy_rollout_warp_kernel").set_attribute(
            cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared)

    def describe(self) -> str:
        return (f"fused policy step, a warp per env (policy_rollout_warp_kernel, {self.plan.fused_block} threads a "
                f"block, one launch a {self.plan.choices.warp_launch})")

    def record_steps(self, slot: int) -> None:
        a, k, plan = self.arena, self.k, self.plan
        t_len, n_env = plan.horizon, plan.num_envs
        buf = lambda name: self.slot(name, slot)  # noqa: E731
        per_step = plan.choices.warp_launch == "step"
        for t0, steps in ([(t, 1) for t in range(t_len + 1)] if per_step else [(0, t_len + 1)]):
            k.launch_shared("policy_rollout_warp_kernel", n_env * 32, plan.fused_block, self.shared, np.int32(n_env),
                            np.int32(t_len), np.int32(plan.bptt), np.int32(t0), np.int32(steps), a.ptr(self.params),
                            buf("obs"), buf("starts"), a.ptr("state"), a.ptr("last_state"), buf("last_value"),
                            buf("segment_state"), a.ptr("slots"), a.ptr("final_obs"), buf("actions"), buf("logp"),
                            buf("values"), buf("rewards"), buf("dones"), a.ptr("terminated"), a.ptr("truncated"),
                            a.ptr("ep_return"), a.ptr("ep_length"), a.ptr("ep_stats"), a.ptr("episode_acc"),
                            a.ptr("scalars"), np.uint64(self.seed_key), np.int32(self.reward_clamp),
                            np.int32(self.max_episode_steps))


GPU_ENV_ROLLOUTS = {"gemm": GemmRollout, "thread": ThreadRollout, "warp": WarpRollout}
