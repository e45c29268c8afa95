"""The CUDA trainer's action heads and running normalisation (heads.cu, normalize.cu): the PPO loss launch for
the policy's head, the minibatch's encoder input, the observation statistics' update after each update, reward
scaling after each rollout, and the reward moments a checkpoint carries (as NumpyTrainer's state_dict)."""

from __future__ import annotations

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError
from fastvec.trainer.cuda.kernel_args import LossArgs, pack
from fastvec.trainer.cuda.plan import Plan, transforms_obs

HEAD_KINDS = {"multi_discrete": 1, "box": 2}  # heads.cu's HEAD_MULTI_DISCRETE, HEAD_BOX
MOMENT_THREADS = 256  # normalize.cu's MOMENT_THREADS
REWARD_MOMENTS_START = (0.0, 1.0, 1e-4)  # NumpyTrainer.reward_moments' start (Gymnasium's RunningMeanStd)


def record_reward_scaling(k, arena, plan: Plan, train: dict, rewards: int, dones: int) -> None:
    """train.norm_reward: normalize.scale_rewards on the rollout just recorded (NumpyTrainer.collect's last step),
    enqueued on k's stream (the actor's) by the rollout paths: the slot's rewards (T, R) divided by the running std
    of the rows' discounted returns, given its dones (T, R). Nothing without train.norm_reward."""
    if not train.norm_reward:
        return
    t_len, r = plan.horizon, plan.rows
    k.launch("reward_returns_kernel", r, np.int32(t_len), np.int32(r), rewards, dones, np.float64(train.gamma),
             arena.ptr("reward_returns"), arena.ptr("reward_seen"))
    k.launch_grid("reward_moments_kernel", 1, MOMENT_THREADS, np.int64(t_len * r), arena.ptr("reward_seen"),
                  arena.ptr("reward_moments"))
    k.launch("reward_scale_kernel", t_len * r, np.int64(t_len * r), rewards, arena.ptr("reward_moments"))


class HeadOps:
    """Enqueues an update's head-dependent and normalisation steps over the arena's tensors (the rollout paths
    enqueue record_reward_scaling), and carries the reward moments in and out of checkpoints."""

    def __init__(self, spec: ref.PolicySpec, layout: ref.FlatLayout, arena, plan: Plan, train: dict, group=None):
        self.norm_reward = bool(train.norm_reward)  # plan.norm_reward: the arena holds its state
        if group is not None and (spec.norm_obs or self.norm_reward):
            raise ConfigError("train.norm_obs and train.norm_reward keep one set of running statistics, which the "
                              "CUDA trainer does not share across GPUs; train on one GPU or turn them off")
        self.spec, self.layout, self.arena, self.plan, self.train = spec, layout, arena, plan, train

    def start(self, cuda) -> None:
        """Once the arena is allocated: the MultiDiscrete head's counts and the reward moments' start."""
        self.cuda = cuda
        if self.spec.action_kind == "multi_discrete":
            self.arena.set(cuda, "head_nvec", np.asarray(self.spec.action_nvec, np.int64))
        if self.norm_reward:
            self.arena.set(cuda, "reward_moments", np.array([*REWARD_MOMENTS_START, 0.0]))

    def param(self, name: str) -> int:
        return self.arena.ptr("params", self.layout.offsets[name][0])

    # UPDATE
    def loss(self, k, norm_adv: bool, stats: bool, scatter: bool, weights: int = 0) -> None:
        """reference.ppo_loss over the minibatch's decoder output y into dy (and dlogstd for a Box head): ppo.cu's
        ppo_loss_kernel for a Discrete head, heads.cu's ppo_loss_head_kernel for the others. norm_adv: with the
        advantages' moments (adv_moments); stats: add the loss terms to the update's statistics; scatter: write
        each row's log-probability to new_logp (V-trace); weights: the address of the minibatch's sequences'
        importance weights (Bm,) (pg_weights, train.prio_alpha), or 0."""
        spec, a, tc, n = self.spec, self.arena, self.train, self.plan.mb_rows
        kind = HEAD_KINDS.get(spec.action_kind, 0)  # 0: a Discrete head, ppo.cu's kernel
        args = LossArgs(
            y=a.ptr("y"), actions=a.ptr("mb_actions"), old_logp=a.ptr("mb_logp"), old_values=a.ptr("mb_values"),
            adv=a.ptr("mb_adv"), returns=a.ptr("mb_returns"), adv_moments=a.ptr("adv_moments") if norm_adv else 0,
            scalars=a.ptr("scalars"), dy=a.ptr("dy"), partial=a.ptr("block_partial") if stats else 0,
            counter=a.ptr("reduce_counter") if stats else 0, new_logp=a.ptr("new_logp") if scatter else 0,
            src=a.ptr("mb_src") if scatter else 0, clip_coef=tc.clip_coef, vf_clip_coef=tc.vf_clip_coef,
            vf_coef=tc.vf_coef, n=n, kind=kind, D=spec.action_shape[0] if kind else 0, Y=spec.head_size + 1,
            weights=weights, Bm=self.plan.seqs_per_mb)
        if spec.action_kind == "box":
            args.logstd, args.dlogstd = self.param("dec.logstd"), a.ptr("dlogstd")
        elif spec.action_kind == "multi_discrete":
            args.nvec = a.ptr("head_nvec")
        k.launch("ppo_loss_head_kernel" if kind else "ppo_loss_kernel", n, pack(args))

    def encode_minibatch(self, k, policy) -> None:
        """The gathered minibatch observations become the encoder's input in place (reference.encoder_input with
        the current statistics), so the encoder's weight gradient multiplies what the forward did."""
        if transforms_obs(self.spec):
            policy.encode(k, self.arena.ptr("mb_obs"), self.arena.ptr("mb_obs"), self.plan.mb_rows)

    def update_obs_norm(self, k, obs: int) -> None:
        """normalize.update_obs_norm after the epochs: the rollout's T * R observations at obs merged into the
        layout's statistics (NumpyTrainer.update's last step)."""
        if not self.spec.norm_obs:
            return
        count, o, norm = self.plan.horizon * self.plan.rows, self.spec.input_size, self.param("obs_norm.mean")
        k.launch_grid("obs_norm_update_kernel", o, MOMENT_THREADS, np.int64(count), np.int32(o),
                      np.int32(self.plan.rows), np.int32(self.plan.obs_bytes), obs, np.float64(self.spec.obs_scale),
                      norm)
        k.launch_grid("obs_norm_count_kernel", 1, 1, np.int64(count), np.int32(o), norm)

    # CHECKPOINT STATE
    def reward_norm(self) -> list[float]:
        """The reward moments (mean, var, count) as NumpyTrainer's state_dict holds them."""
        if not self.norm_reward:
            return list(REWARD_MOMENTS_START)
        return [float(m) for m in self.arena.get(self.cuda, "reward_moments")[:3]]

    def load_reward_norm(self, moments) -> None:
        if self.norm_reward and moments:
            mean, var, count = (float(m) for m in moments)
            self.arena.set(self.cuda, "reward_moments", np.array([mean, var, count, 1.0 / np.sqrt(var + 1e-8)]))
