"""Which streams are made to wait for which when GPU arrays change hands: a consumer of a DeviceArray (DLPack,
__cuda_array_interface__), the envs reading another library's array, and torch's current stream after a
TorchVectorEnv step. Recorded without a GPU where the logic is plain Python; the torch face on a GPU (`gpu`)."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

import fastvec
from fastvec.native import device_array
from fastvec.native.device_array import DeviceArray, device_view

OURS, THEIRS = 0x5000, 0x6000  # stream handles


class _Recorder:
    def __init__(self):
        self.waits = []

    def make_wait(self, waiter, producer):
        self.waits.append((waiter, producer))


@pytest.fixture
def waits(monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(device_array, "stream_event", lambda: recorder)
    return recorder.waits


def _array(stream=OURS):
    return DeviceArray(0x10000, (4, 3), np.float32, None, stream, 0)


@pytest.mark.parametrize("consumer,expected", [
    (THEIRS, [(THEIRS, OURS)]),  # another stream waits for the work that writes the array
    (OURS, []),  # our own stream is ordered already
    (None, []), (1, []),  # the legacy default stream: ordered with our blocking stream already
    (-1, []),  # the consumer asks for no ordering
])
def test_a_dlpack_consumer_waits_only_where_its_stream_is_another(waits, consumer, expected):
    capsule = _array().__dlpack__(stream=consumer)
    assert type(capsule).__name__ == "PyCapsule"
    assert waits == expected


def test_the_cuda_array_interface_names_our_stream_and_the_legacy_one_as_1():
    """CAI v3 forbids 0 for a stream: the legacy default stream is 1."""
    assert _array().__cuda_array_interface__["stream"] == OURS
    assert _array(stream=0).__cuda_array_interface__["stream"] == 1


def test_envs_reading_a_device_array_of_another_stream_wait_for_it(waits):
    a = _array(stream=THEIRS)
    assert device_view(a, OURS, 0) == (a.ptr, (4, 3), None, np.dtype(np.float32))
    assert waits == [(OURS, THEIRS)]
    waits.clear()
    device_view(_array(stream=OURS), OURS, 0)
    assert waits == []


class _CaiArray:
    def __init__(self, stream):
        self.__cuda_array_interface__ = {"shape": (5,), "typestr": "<i8", "data": (0x20000, False), "version": 3,
                                         "strides": (16,), **({} if stream is None else {"stream": stream})}


@pytest.mark.parametrize("stream,expected", [(THEIRS, [(OURS, THEIRS)]), (OURS, []), (1, []), (None, [])])
def test_envs_reading_a_cuda_array_interface_wait_for_its_stream_unless_ordered_already(waits, stream, expected):
    assert device_view(_CaiArray(stream), OURS, 0) == (0x20000, (5,), (16,), np.dtype(np.int64))
    assert waits == expected


@pytest.mark.gpu
def test_a_torch_side_stream_waits_for_the_envs_step_and_the_default_stream_does_not(monkeypatch):
    """After reset/step, torch's current stream is ordered after the env's: a side stream by an event wait (so its
    reads of the views see the step's values), torch's default stream and the env's own stream without one (both
    ordered already)."""
    torch = pytest.importorskip("torch")
    from fastvec.native import graphs
    from fastvec.wrappers import torch as torch_face

    waits = []

    class RecordingEvent(graphs.Event):
        def make_wait(self, waiter, producer):
            waits.append((waiter, producer))
            super().make_wait(waiter, producer)

    monkeypatch.setattr(torch_face, "graphs", SimpleNamespace(Event=RecordingEvent))
    n = 64
    envs = torch_face.TorchVectorEnv(fastvec.make_vec("CartPole", n, device="cuda", array_type="device"))
    ref = fastvec.make_vec("CartPole", n, device="cuda")
    handle = envs.unwrapped.batch.stream_handle
    obs, _ = envs.reset(seed=3)
    ref.reset(seed=3)
    assert waits == []  # torch's default stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        actions = torch.ones(n, dtype=torch.int64, device="cuda")
        obs, *_ = envs.step(actions)
        assert waits == [(side.cuda_stream, handle)]
        seen = obs.clone()  # on the side stream, after the step
    side.synchronize()
    np.testing.assert_array_equal(seen.cpu().numpy(), ref.step(np.ones(n, np.int64))[0])
    waits.clear()
    with torch.cuda.stream(torch.cuda.ExternalStream(handle)):
        envs.step(torch.zeros(n, dtype=torch.int64, device="cuda"))
    assert waits == []  # the env's own stream
    envs.close()
    ref.close()


class _DeviceModeEnv(gym.vector.VectorEnv):
    """A stand-in for a GPU env in device mode: its batch's stream and host-free arrays, NumPy outputs."""

    def __init__(self):
        self.num_envs = 2
        self.single_observation_space = self.observation_space = gym.spaces.Box(-1, 1, (2, 1), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([2, 2])
        self.batch = SimpleNamespace(host_arrays=False, stream_handle=OURS)

    def reset(self, *, seed=None, options=None):
        return np.zeros((2, 1), np.float32), {}

    def step(self, actions):
        return np.zeros((2, 1), np.float32), np.zeros(2, np.float32), np.zeros(2, bool), np.zeros(2, bool), {}


@pytest.mark.parametrize("current,expected", [(THEIRS, [(THEIRS, OURS)]), (0, []), (OURS, [])])
def test_torch_face_orders_only_a_side_stream_after_the_envs(monkeypatch, current, expected):
    """TorchVectorEnv's reset and step make torch's current stream wait for the env's stream where it is a side
    stream; torch's default stream (0) and the env's own stream are ordered already. The stream and the event are
    stand-ins: no GPU."""
    torch = pytest.importorskip("torch")
    from fastvec.wrappers import torch as torch_face

    recorder = _Recorder()
    monkeypatch.setattr(torch_face, "graphs", SimpleNamespace(Event=lambda: recorder))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: SimpleNamespace(cuda_stream=current))
    envs = torch_face.TorchVectorEnv(_DeviceModeEnv())
    envs.reset(seed=0)
    envs.step(np.zeros(2, np.int64))
    assert recorder.waits == expected * 2
