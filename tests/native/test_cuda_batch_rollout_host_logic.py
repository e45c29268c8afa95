"""CudaBatch.rollout's and the device mode's host-side logic without a GPU: which step counts and policies are
refused, what the fused random rollout and the policy loop enqueue, the random stream carried across calls, the
graph cache per (policy, steps), and the poll for bad actions every 64 steps (stand-in kernels)."""

from types import SimpleNamespace

import numpy as np
import pytest

from fastvec.native import cuda
from fastvec.native.cuda import CudaBatch

# The Gymnasium face documents that a bad device action is reported "within 64 steps".
POLL = 64


class _Kernel:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def prepared_async_call(self, grid, block, stream, *args):
        self.calls.append((self.name, args))


_CAPTURED = []  # the stand-in graphs captured, in order


class _Graph:
    def __init__(self, stream):
        self.launches = 0

    def capture(self):
        _CAPTURED.append(self)
        return _Capture()

    def launch(self):
        self.launches += 1


class _Capture:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _batch(monkeypatch, *, numpy=False, validate=False):
    """A CudaBatch of 3 envs whose kernels, graphs and error poll are recorders: no GPU."""
    monkeypatch.setattr(cuda, "graphs", SimpleNamespace(CudaGraph=_Graph))
    _CAPTURED.clear()
    b = CudaBatch.__new__(CudaBatch)
    calls = []
    b.calls, b.polls = calls, []
    b.num_envs, b.numpy, b.validate, b.stream = 3, numpy, validate, "stream"
    b.stream_handle, b.autoreset_code, b._max_episode_steps = 0x5000, 0, 0
    b._rollout_fn, b._step_fn = _Kernel("rollout", calls), _Kernel("step", calls)
    b._rollout_grid = b._step_grid = b._grid = (1, 1)
    b._rollout_block = b._step_block = b._block = (256, 1, 1)
    b._slots_ptr, b._error_ptr, b._outputs, b._observe_ptrs = 0x100, 0x200, [0x300 + k for k in range(9)], None
    b.env = SimpleNamespace(action_dtype=np.dtype(np.int64), action_kind="discrete", device_index=0)
    b._action_axes = (3, 1, 1)
    b.dev = SimpleNamespace(actions=SimpleNamespace(ptr=0x400))
    b.random_key, b.random_step, b._graphs, b._steps = 0x5EED, 0, {}, 0
    b._poll_errors = lambda: b.polls.append(b.calls.__len__())
    return b


@pytest.mark.parametrize("steps", [0, -1, -64, 0.5])
@pytest.mark.parametrize("policy", ["random", lambda t, batch: None])
def test_rollout_refuses_a_step_count_below_one_and_enqueues_nothing(monkeypatch, steps, policy):
    b = _batch(monkeypatch)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        b.rollout(policy, steps)
    assert b.calls == [] and b.random_step == 0 and _CAPTURED == []


def test_rollout_of_one_step_is_accepted(monkeypatch):
    b = _batch(monkeypatch)
    assert b.rollout("random", 1) is None
    assert [name for name, _ in b.calls] == ["rollout"]
    assert b.random_step == 1


def test_rollout_refuses_an_unknown_policy_name_or_a_non_callable(monkeypatch):
    b = _batch(monkeypatch)
    with pytest.raises(ValueError, match="use 'random' or a callable"):
        b.rollout("greedy", 4)
    with pytest.raises(TypeError, match="got int"):
        b.rollout(3, 4)
    assert b.calls == []


def test_the_random_rollout_is_one_launch_and_its_stream_goes_on_across_calls(monkeypatch):
    """rollout("random", k): one fused launch with k steps, starting at the policy step where the last call
    stopped, so two calls of 5 and 3 steps draw the actions of steps 0..4 and then 5..7."""
    b = _batch(monkeypatch)
    b.rollout("random", 5)
    b.rollout("random", 3)
    assert [(name, args[1], args[3]) for name, args in b.calls] == [("rollout", 5, 0), ("rollout", 3, 5)]
    assert all(args[0] == 3 and args[2] == np.uint64(0x5EED) for _, args in b.calls)
    assert b.random_step == 8


def test_a_policy_rollout_without_a_graph_calls_the_policy_then_steps_once_per_step(monkeypatch):
    b = _batch(monkeypatch)
    seen = []
    policy = lambda t, batch: (seen.append(t), batch.calls.append(("policy", (t,))))
    b.rollout(policy, 3, graph=False)
    assert seen == [0, 1, 2]
    assert [name for name, _ in b.calls] == ["policy", "step"] * 3
    assert b.random_step == 0 and _CAPTURED == []


def test_a_graph_rollout_captures_once_per_policy_and_step_count_and_replays(monkeypatch):
    """graph=True: the loop is captured once per (policy, steps), the callable running only at capture; a later
    call with the same pair replays the graph, another step count captures a new one."""
    b = _batch(monkeypatch)
    seen = []
    policy = lambda t, batch: seen.append(t)
    b.rollout(policy, 2)
    b.rollout(policy, 2)
    assert seen == [0, 1] and len(_CAPTURED) == 1 and _CAPTURED[0].launches == 2
    b.rollout(policy, 3)
    assert seen == [0, 1, 0, 1, 2] and len(_CAPTURED) == 2 and _CAPTURED[1].launches == 1


def test_device_mode_polls_for_bad_actions_once_every_64_steps(monkeypatch):
    """Device mode (no validate) looks for a bad action after the step that brings the count since the last look
    to 64, counting every step of a rollout, and starts counting again from zero."""
    b = _batch(monkeypatch)
    policy = lambda t, batch: None
    b.rollout(policy, POLL - 1, graph=False)
    assert b.polls == []
    b.rollout("random", 1)
    assert len(b.polls) == 1
    b.rollout("random", POLL - 1)
    assert len(b.polls) == 1
    b.rollout("random", POLL + 5)  # past the count in one call: one look, the count starts again
    assert len(b.polls) == 2
    b.rollout("random", POLL - 1)  # the 5 past the count are not carried over
    assert len(b.polls) == 2
    b.rollout("random", 1)
    assert len(b.polls) == 3


def test_validate_mode_synchronises_after_every_rollout_instead_of_polling(monkeypatch):
    b = _batch(monkeypatch, validate=True)
    syncs = []
    b.synchronize = lambda: syncs.append(True)
    for _ in range(3):
        assert b.rollout("random", POLL) is None
    assert len(syncs) == 3 and b.polls == []
