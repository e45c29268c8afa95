"""The CPU trainer: PPO with the reference math (reference.py) on a fastvec CPU batch. Every tensor is
allocated once up front: parameters, gradients and optimizer state are one flat float32 array each
(named views via FlatLayout), and the rollout buffers are (T, R, ...) arrays reused every rollout."""

from __future__ import annotations

import time

import numpy as np

from fastvec.trainer import reference as ref, teams
from fastvec.trainer.agent_inputs import AgentInputs
from fastvec.trainer.config import rollout_sizes
from fastvec.trainer.settings import Config

# Legend: T = horizon, R = rows = num_envs * agents, I = the policy's input (the obs, then any agent id),
# A = actions, C = a world-state critic's input, K = bptt_horizon, S = T / K segments, Ls = recurrent layers
# (0 for an MLP), H = hidden, P = parameters.


class NumpyTrainer:
    """Owns the policy, optimizer and rollout buffers; `rollout()` fills the buffers from the env batch,
    `update()` runs the PPO epochs on them. The CUDA trainer keeps this interface."""

    device = "cpu"
    rank, world_size = 0, 1  # one process
    gpu_games = None  # self-play's games step on the CPU (selfplay.SelfPlayBatch)
    selfplay = None  # run.make_trainer sets these two (protocol.Trainer)
    env_batches: list = []

    def __init__(self, config: Config | dict, batch, spec: ref.PolicySpec):
        self.config = config = Config.of(config)
        train = config.train
        self.spec, self.batch = spec, batch
        self.num_agents = batch.obs.shape[1]
        self.rows, self.horizon, self.bptt, self.segments, self.samples_per_rollout = rollout_sizes(
            train, batch.num_envs, self.num_agents)
        self.rng = np.random.default_rng(train.seed)
        # train.prio_alpha's draws: the CUDA trainer's counter-based key, so the two draw the same sequences
        self.shuffle_key = ref.shuffle_key(ref.sampling_key(train.seed))
        self.inputs = AgentInputs(spec, batch)  # the agent ids, action masks and world state the policy reads
        # each agent's team (its episode returns are logged per team where a game has several), else None
        self.teams = teams.agent_teams(config.env.name, config.env.params) if config.env_kind == "team" else None

        # MODEL AND OPTIMIZER: one flat array each, named views for the math.
        self.layout = ref.FlatLayout(ref.param_table(spec))
        p = self.layout.size
        self.params = ref.init_params(spec, self.rng, np.float32)  # (P,)
        self.grads = np.zeros(p, np.float32)  # (P,)
        self.opt_state = np.zeros(2 * p, np.float32)  # (2P,): [Adam m or Muon momentum | Adam v]
        self.opt_step = 0
        self.param_views = self.layout.views(self.params)
        self.grad_views = self.layout.views(self.grads)
        self.m_views = self.layout.views(self.opt_state[:p])
        self.v_views = self.layout.views(self.opt_state[p:])
        self.matrix_names = set(self.layout.matrix_names())

        # ROLLOUT BUFFERS: one slot, or two with train.async (the actor fills one while the learner
        # trains on the other); each slot keeps its own segment states, i.e. its own initial state.
        self.async_rollouts = train.async_
        self.slots = [self.new_slot() for _ in range(2 if self.async_rollouts else 1)]
        self.slot_version = [-1] * len(self.slots)  # update_index of the weights that collected each slot
        self.fill_slot = 0  # async: the slot the next rollout goes into
        self.ready_slot = None  # async: a collected slot no update has trained on yet
        self.use_slot(0)
        ls, h = spec.state_layers, spec.hidden
        self.state = np.zeros((ls, self.rows, h), np.float32)  # (Ls, R, H) live recurrent state
        self.next_starts = np.ones(self.rows, np.float32)  # (R,) the first obs after reset starts episodes
        # train.norm_reward: each row's running discounted return and the running moments of those returns
        self.reward_returns = np.zeros(self.rows, np.float64)  # (R,)
        self.reward_moments = (0.0, 1.0, 1e-4)  # (mean, var, count), as Gymnasium's RunningMeanStd starts

        self.global_step = 0
        self.update_index = 0
        # per step with an episode's end: its returns (E, agents), lengths (E,) and stats (E, stats)
        self.finished: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.timing = {"env": 0.0, "inference": 0.0, "update": 0.0}
        seeds = (np.uint64(train.seed) << np.uint64(32)) + np.arange(batch.num_envs, dtype=np.uint64)
        batch.reset(seeds, None)

    def describe(self) -> str:
        """Nothing: the CPU trainer has one path (the CUDA trainer names the paths it chose)."""
        return ""

    def warm_up(self, num_updates: int) -> float:
        """Nothing to prepare before the first update (the CUDA trainer captures its graphs here)."""
        return 0.0

    def act(self, obs, starts, state, mask=None, world=None):
        return ref.policy_act(self.spec, self.param_views, obs, starts, state, self.rng, mask=mask, world=world)

    SLOT_BUFFERS = ("obs", "starts", "actions", "logp", "values", "rewards", "dones", "segment_state", "last_value",
                    "masks", "world")

    def new_slot(self) -> dict:
        t, r, o = self.horizon, self.rows, self.spec.input_size
        ls, h = self.spec.state_layers, self.spec.hidden
        mask, world = self.inputs.mask(), self.inputs.world()
        return {
            "obs": np.zeros((t, r, o), self.batch.obs.dtype),  # (T, R, I) as the env writes them (bytes stay bytes)
            "starts": np.zeros((t, r), np.float32),  # (T, R) 1: obs[t] begins an episode
            "actions": np.zeros((t, r, *self.spec.action_shape), self.spec.action_dtype),  # (T, R, *action_shape)
            "logp": np.zeros((t, r), np.float32),  # (T, R) log mu(a|s), the behaviour policy's
            "values": np.zeros((t, r), np.float32),  # (T, R) V_old(s)
            "rewards": np.zeros((t, r), np.float32),  # (T, R)
            "dones": np.zeros((t, r), np.float32),  # (T, R) 1: episode ended at step t
            "segment_state": np.zeros((self.segments, ls, r, h), np.float32),  # (S, Ls, R, H)
            "last_value": np.zeros(r, np.float32),  # (R,) V(obs after the last step)
            # (T, R, A) uint8 1 = available, the actions sampled from; None: every action is
            "masks": None if mask is None else np.zeros((t, *mask.shape), np.uint8),
            "world": None if world is None else np.zeros((t, *world.shape), np.float32),  # (T, R, C) or None
        }

    def use_slot(self, index: int) -> None:
        """Point the buffer attributes (self.obs, ...) at slot `index`."""
        self.active_slot = index
        for name in self.SLOT_BUFFERS:
            setattr(self, name, self.slots[index][name])

    @property
    def behaviour_version(self) -> int:
        """update_index of the weights that collected the active slot (async: one less than the update's)."""
        return self.slot_version[self.active_slot]

    # ROLLOUT
    def rollout(self) -> None:
        """Fill the rollout buffers the next update trains on.

        Sync: collect with the current weights. Async (train.async), computed sequentially with the exact
        schedule of the overlapped version: rollout j + 1 is collected with the weights update j starts
        from (while, on a GPU, update j runs), so update j >= 1 trains on data from the weights one
        update old. The first call collects two rollouts (the first is what update 0 trains on)."""
        if not self.async_rollouts:
            self.collect(0)
            return
        if self.ready_slot is None:
            self.collect(self.fill_slot)
            self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
        self.collect(self.fill_slot)  # the concurrent rollout, with the weights update `update_index` starts from
        train_slot = self.ready_slot
        self.ready_slot, self.fill_slot = self.fill_slot, 1 - self.fill_slot
        self.use_slot(train_slot)

    def collect(self, slot: int) -> None:
        """Collect `horizon` steps from every env into `slot`, carrying the live recurrent state."""
        self.use_slot(slot)
        self.slot_version[slot] = self.update_index
        batch, k = self.batch, self.bptt
        clamp = self.config.train.reward_clamp
        for t in range(self.horizon):
            t0 = time.perf_counter()
            if t % k == 0:
                self.segment_state[t // k] = self.state
            self.obs[t] = self.inputs.obs()
            self.starts[t] = self.next_starts
            mask, world = self.inputs.mask(), self.inputs.world()
            if mask is not None:
                self.masks[t] = mask
            if world is not None:
                self.world[t] = world
            actions, logp, values, self.state = self.act(self.obs[t], self.starts[t], self.state, mask, world)
            self.actions[t], self.logp[t], self.values[t] = actions, logp, values
            t1 = time.perf_counter()
            batch.step(actions.reshape(batch.num_envs, self.num_agents, *self.spec.action_shape))
            rewards = batch.rewards.reshape(self.rows)
            self.rewards[t] = np.clip(rewards, -1, 1) if clamp else rewards
            done = batch.terminated | batch.truncated  # (N,)
            self.dones[t] = np.repeat(done, self.num_agents)
            self.next_starts = self.dones[t]
            if done.any():
                self.finished.append((batch.episode_return[done].copy(), batch.episode_length[done].copy(),
                                      batch.episode_stats[done].copy()))
            t2 = time.perf_counter()
            self.timing["inference"] += t1 - t0
            self.timing["env"] += t2 - t1
        t0 = time.perf_counter()
        _, _, self.last_value[:], _ = self.act(self.inputs.obs(), self.next_starts, self.state.copy(),
                                               self.inputs.mask(), self.inputs.world())
        if self.config.train.norm_reward:
            self.rewards[:], self.reward_moments = ref.scale_rewards(self.rewards, self.dones, self.reward_returns,
                                                                     self.reward_moments, self.config.train.gamma)
        self.timing["inference"] += time.perf_counter() - t0
        self.global_step += self.horizon * batch.num_envs

    def to_segments(self, x):
        """(T, R, ...) -> (K, S * R, ...): each (segment, row) pair becomes one sequence of length K."""
        s, k = self.segments, self.bptt
        if s == 1:
            return x
        return np.ascontiguousarray(np.swapaxes(x.reshape(s, k, *x.shape[1:]), 0, 1)).reshape(k, s * self.rows, *x.shape[2:])

    def segment_states(self):
        """(S, Ls, R, H) -> (Ls, S * R, H): the state entering each sequence, in to_segments' row order."""
        ls, h = self.spec.state_layers, self.spec.hidden
        return np.swapaxes(self.segment_state, 0, 1).reshape(ls, self.segments * self.rows, h)

    def from_segments(self, x):
        s, k = self.segments, self.bptt
        if s == 1:
            return x
        return np.swapaxes(x.reshape(k, s, self.rows, *x.shape[2:]), 0, 1).reshape(self.horizon, self.rows, *x.shape[2:])

    # GAE
    def advantages(self, ratios=None):
        tc = self.config.train
        return ref.gae(self.values, self.last_value, self.rewards, self.dones, tc.gamma, tc.gae_lambda,
                       ratios, tc.vtrace_rho_clip, tc.vtrace_c_clip).astype(np.float32)

    # UPDATE
    def update(self, num_updates: int) -> dict:
        """PPO epochs over the rollout in minibatches of whole sequence segments; returns mean stats."""
        t_start = time.perf_counter()
        tc = self.config.train
        lr = ref.annealed(tc.learning_rate, self.update_index, num_updates, tc.anneal_lr)
        ent_coef = ref.ent_coef_at(tc.ent_coef, self.update_index, num_updates, tc.anneal_ent)
        advantages = self.advantages()
        returns = advantages + self.values
        seg = {name: self.to_segments(getattr(self, name)) for name in
               ["obs", "starts", "actions", "logp", "values", "masks", "world"] if getattr(self, name) is not None}
        seg_returns = self.to_segments(returns)
        seq_count = self.segments * self.rows
        seg_state = self.segment_states()
        new_logp = seg["logp"].copy()  # for V-trace in later epochs; ratio 1 where a sequence was not drawn
        seqs_per_mb = tc.minibatch_size // self.bptt
        # async: the data is from older weights (sync data never is, even when buffers were filled by hand)
        stale = self.async_rollouts and self.behaviour_version < self.update_index
        if tc.vtrace and stale:  # correct from the first epoch: pi/mu with the current weights
            logits, _, _, _ = ref.policy_forward(self.spec, self.param_views, seg["obs"], seg["starts"], seg_state,
                                                 seg.get("world"))
            logits = logits if "masks" not in seg else ref.mask_logits(logits, seg["masks"])
            new_logp = ref.action_log_prob(self.spec, logits, seg["actions"])
        totals: dict[str, float] = {}
        count = 0
        for epoch in range(tc.update_epochs):
            if tc.vtrace and (epoch > 0 or stale):
                ratios = np.exp(self.from_segments(new_logp) - self.logp)
                advantages = self.advantages(ratios)
                returns = advantages + self.values
                seg_returns = self.to_segments(returns)
            seg_adv = self.to_segments(advantages)
            order, weights = self.epoch_order(seg_adv, epoch, num_updates)
            for start in range(0, seq_count - seqs_per_mb + 1, seqs_per_mb):
                idx = order[start:start + seqs_per_mb]
                mb_weights = None if weights is None else weights[start:start + seqs_per_mb]
                stats = self.minibatch_step(seg, seg_adv, seg_returns, seg_state, idx, lr, ent_coef, new_logp,
                                            mb_weights)
                for key, value in stats.items():
                    totals[key] = totals.get(key, 0.0) + value
                count += 1
        self.update_index += 1
        if self.spec.norm_obs:  # after the epochs: the rollout was collected, and trained on, with the old ones
            ref.update_obs_norm(self.spec, self.param_views, self.obs)
        out = {key: value / max(count, 1) for key, value in totals.items()}
        out.update(learning_rate=lr, ent_coef=ent_coef, explained_variance=ref.explained_variance(self.values, returns))
        self.timing["update"] += time.perf_counter() - t_start
        return out

    def epoch_order(self, seg_adv, epoch: int, num_updates: int):
        """(the epoch's sequences in minibatch order (Q,), their policy-loss weights (Q,) or None): a shuffle of
        every sequence, or with train.prio_alpha > 0 the prioritised draws (reference.prioritized_draws)."""
        tc = self.config.train
        if tc.prio_alpha == 0:
            return self.rng.permutation(seg_adv.shape[1]), None
        beta = ref.prio_beta(tc.prio_beta0, self.update_index, num_updates)
        return ref.prioritized_draws(seg_adv, tc.prio_alpha, beta, self.shuffle_key, self.update_index, epoch)

    def minibatch_step(self, seg, seg_adv, seg_returns, seg_state, idx, lr, ent_coef, new_logp,
                       weights=None) -> dict:
        """One optimizer step on sequences idx (Bm,); weights (Bm,): their policy-loss weights, or None (all 1)."""
        tc = self.config.train
        obs, world, masks = seg["obs"][:, idx], seg.get("world"), seg.get("masks")
        logits, values, _, cache = ref.policy_forward(self.spec, self.param_views, obs, seg["starts"][:, idx],
                                                      seg_state[:, idx], None if world is None else world[:, idx])
        if masks is not None:  # the masked categorical the actions were sampled from
            logits = ref.mask_logits(logits, masks[:, idx])
        adv = seg_adv[:, idx]
        if tc.norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        actions = seg["actions"][:, idx]
        head = {} if self.spec.action_kind == "discrete" else {"spec": self.spec}  # ppo_loss's default: one categorical
        if weights is not None:
            head["pg_weights"] = weights[None, :]  # (1, Bm): each sequence's weight on its K rows
        loss, dlogits, dvalues, stats = ref.ppo_loss(
            logits, values, actions, seg["logp"][:, idx], seg["values"][:, idx], adv, seg_returns[:, idx],
            tc.clip_coef, tc.vf_clip_coef, tc.vf_coef, ent_coef, **head)
        if masks is not None:
            dlogits = ref.mask_logits_grad(dlogits, masks[:, idx])
        if tc.vtrace:
            new_logp[:, idx] = ref.action_log_prob(self.spec, logits, actions)
        self.grads[:] = 0
        ref.policy_backward(self.spec, self.param_views, self.grad_views, dlogits, dvalues, cache)
        stats["grad_norm"] = ref.clip_grad_norm(self.grads, tc.max_grad_norm)
        self.opt_step += 1
        if tc.optimizer == "muon":
            ref.muon_step(self.param_views, self.grad_views, self.m_views, self.v_views, self.matrix_names,
                          self.opt_step, lr, tc.muon_momentum, tc.adam_beta1, tc.adam_beta2, tc.adam_eps)
        else:
            p = self.layout.size
            ref.adam_step(self.params, self.grads, self.opt_state[:p], self.opt_state[p:], self.opt_step, lr,
                          tc.adam_beta1, tc.adam_beta2, tc.adam_eps)
        stats["loss"] = loss
        return stats

    # LOG
    def pop_episodes(self) -> dict | None:
        """Mean return, length and env stats of the episodes finished since the last call (None if none)."""
        if not self.finished:
            return None
        returns = np.concatenate([f[0] for f in self.finished])  # (E, agents)
        lengths = np.concatenate([f[1] for f in self.finished])
        stats = np.concatenate([f[2] for f in self.finished])
        self.finished.clear()
        out = {"episodes": int(len(returns)), "episode_return": float(returns.mean()),
               "episode_length": float(lengths.mean())}
        if self.teams is not None and len(set(self.teams)) > 1:  # a game of teams: each team's mean return too
            labels = np.array(self.teams)
            for team in dict.fromkeys(self.teams):
                out[f"episode_return_{team}"] = float(returns[:, labels == team].mean())
        for i, name in enumerate(self.batch.env.stat_names):
            out[name] = float(stats[:, i].mean())
        return out

    # CHECKPOINT STATE
    def state_dict(self) -> dict:
        return {"params": self.params.copy(), "optimizer": self.opt_state.copy(),
                "counters": {"opt_step": self.opt_step, "update": self.update_index, "global_step": self.global_step},
                "rng": self.rng.bit_generator.state, "reward_norm": [float(m) for m in self.reward_moments]}

    def load_state_dict(self, state: dict) -> None:
        self.params[...] = state["params"]
        if state.get("optimizer") is not None:
            self.opt_state[...] = state["optimizer"]
        counters = state.get("counters", {})
        self.opt_step = counters.get("opt_step", 0)
        self.update_index = counters.get("update", 0)
        self.global_step = counters.get("global_step", 0)
        if state.get("rng"):
            self.rng.bit_generator.state = state["rng"]
        if state.get("reward_norm"):
            self.reward_moments = tuple(float(m) for m in state["reward_norm"])
