"""What the CUDA trainer counts, and which rollout slot each rollout fills and each update trains on: `Counters`
(steps, updates, optimizer steps, seconds per phase, the slots' roles: one object, which the warm-up saves and puts
back) and `Slots`, the state machine of train.async's two slots (the actor fills one while the learner trains on the
other; without train.async every rollout and update use slot 0)."""

from __future__ import annotations

import copy
import dataclasses


@dataclasses.dataclass
class SlotState:
    """The slots' roles. version: update_index of the weights that collected each slot; active: the slot the next
    update trains on; fill: (async) the slot the next rollout goes into; ready: (async) a collected slot no update
    has trained on yet."""

    version: list[int]
    active: int = 0
    fill: int = 0
    ready: int | None = None


@dataclasses.dataclass
class Counters:
    """Everything training counts: agent steps collected (with train.async one rollout ahead of the updates),
    updates finished, optimizer steps, seconds per phase (the log's time split), and the slots' roles."""

    slots: SlotState
    global_step: int = 0
    update_index: int = 0
    opt_step: int = 0
    timing: dict = dataclasses.field(default_factory=lambda: {"rollout": 0.0, "update": 0.0})

    def snapshot(self) -> Counters:
        return copy.deepcopy(self)

    def restore(self, saved: Counters) -> None:
        """Put back every count `saved` holds, in place: the rollout paths and the slot machine hold these objects."""
        self.global_step, self.update_index, self.opt_step = saved.global_step, saved.update_index, saved.opt_step
        self.timing.clear()
        self.timing.update(saved.timing)
        self.slots.__dict__.update(copy.deepcopy(saved.slots.__dict__))


class Slots:
    """Which slot each rollout fills. Sync (one slot): every rollout collects slot 0 and the update trains on it.
    Async (two slots): the first rollout() collects two rollouts (update 0 trains on the first); every rollout()
    collects the one that overlaps the next update, with the weights that update starts from."""

    def __init__(self, state: SlotState, async_rollouts: bool):
        self.state, self.async_rollouts = state, async_rollouts

    def rollouts(self) -> list[tuple[int, bool]]:
        """The slots the next rollout() collects into, in order, each with whether it overlaps the next update;
        moves `active` to the slot that update trains on."""
        s = self.state
        if not self.async_rollouts:
            return [(0, False)]
        planned = []
        if s.ready is None:
            planned.append((s.fill, False))
            s.ready, s.fill = s.fill, 1 - s.fill
        planned.append((s.fill, True))
        s.active = s.ready
        s.ready, s.fill = s.fill, 1 - s.fill
        return planned

    def stale(self, update_index: int) -> bool:
        """Whether the active slot was collected with weights older than the next update's (async only), so
        V-trace corrects from the first epoch (as NumpyTrainer's)."""
        return self.async_rollouts and self.state.version[self.state.active] < update_index
