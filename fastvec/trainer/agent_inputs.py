"""What a policy every agent of a multi-agent batch shares reads besides its observation, per row (env * agents +
agent): the agent's one-hot id (policy.agent_id), its available actions (the batch's action_mask, or the actions
of its own space where the env declares AGENT_SPACES) and a world-state critic's input (policy.critic_input)."""

from __future__ import annotations

import numpy as np

from fastvec.trainer import reference as ref


def agent_sizes(batch, what: str) -> list[int]:
    """Each agent's own observation ("obs") or Discrete action count ("action"): fastvec.h's AGENT_SPACES (the MPE
    scenarios' and SMAX's), else the batch's for every agent (a batch without a compiled env: one agent)."""
    agents = batch.obs.shape[1]
    lib = getattr(batch.env, "lib", None)
    size = getattr(lib, f"fv_agent_{what}_size", None)
    if size is None:
        return [batch.env.obs_size if what == "obs" else batch.env.num_actions] * agents
    return [int(size(a)) for a in range(agents)]


def world_state_size(batch) -> int:
    """The width of a game's world state: the batch's world_state (SMAX's), else every agent's own observation
    concatenated (mpe2's state())."""
    world = getattr(batch, "world_state", None)
    return int(world.shape[1]) if world is not None else sum(agent_sizes(batch, "obs"))


class AgentInputs:
    """The policy's inputs from a batch's current outputs, for spec: `obs()` (R, I), `mask()` (R, A) uint8 or None
    (every action available), `world()` (R, C) or None (no world-state critic)."""

    def __init__(self, spec: ref.PolicySpec, batch):
        n, a = batch.num_envs, batch.obs.shape[1]
        self.batch, self.rows, self.use_world = batch, n * a, bool(spec.world_size)
        # the ids in the observation's dtype, scaled so that the encoder reads 1 (bytes: 255 of a 1/255 scale)
        self.ids = ref.agent_onehot(n, a, batch.obs.dtype, round(1 / spec.obs_scale)) if spec.agent_ids else None
        self.world_ids = ref.agent_onehot(n, a) if spec.world_size and spec.agent_ids else None
        self.static_mask = None  # (R, A): the actions of each agent's own space, where they differ
        if spec.action_kind == "discrete":
            sizes = agent_sizes(batch, "action")
            if min(sizes) < spec.num_actions:
                own = (np.arange(spec.num_actions) < np.array(sizes)[:, None]).astype(np.uint8)  # (A agents, A)
                self.static_mask = np.tile(own, (n, 1))
        self.columns = None  # world_state from the observations: each agent's own values, in agent order
        if spec.world_size and getattr(batch, "world_state", None) is None:
            o = batch.obs.shape[2]
            self.columns = np.concatenate([agent * o + np.arange(size)
                                           for agent, size in enumerate(agent_sizes(batch, "obs"))])

    def obs(self) -> np.ndarray:
        """(R, I): each row's observation, then its agent id."""
        obs = self.batch.obs.reshape(self.rows, -1)
        return obs if self.ids is None else np.concatenate([obs, self.ids], axis=1)

    def mask(self) -> np.ndarray | None:
        """(R, A) uint8, 1 = available: the batch's action_mask where it has one, else each agent's own space."""
        mask = getattr(self.batch, "action_mask", None)
        return self.static_mask if mask is None else mask.reshape(self.rows, -1)

    def world(self) -> np.ndarray | None:
        """(R, C) float32: each row's game's world state, then its agent id; None without a world-state critic."""
        if not self.use_world:
            return None
        n, agents = self.batch.num_envs, self.batch.obs.shape[1]
        state = self.batch.world_state if self.columns is None else \
            self.batch.obs.reshape(n, -1)[:, self.columns]  # (N, W)
        rows = np.repeat(np.asarray(state, np.float32), agents, axis=0)
        return rows if self.world_ids is None else np.concatenate([rows, self.world_ids], axis=1)
