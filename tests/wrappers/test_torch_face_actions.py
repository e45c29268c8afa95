"""The torch face's actions: a CPU env takes any torch tensor a policy hands it (with grad, strided, another
dtype, on a GPU) as the NumPy env takes the same values; a GPU env takes torch tensors in place, never through
the host (a stand-in GPU env here; the real one in the `gpu` test)."""

import gc
import weakref
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fastvec.wrappers import torch as torch_face

N = 3


def _pair(env_id):
    make = lambda: gym.make_vec(f"fastvec/{env_id}", num_envs=N)
    envs, plain = torch_face.TorchVectorEnv(make()), make()
    obs, _ = envs.reset(seed=4)
    np.testing.assert_array_equal(obs.numpy(), plain.reset(seed=4)[0])
    return envs, plain


def _same_step(envs, plain, actions, values):
    got, want = envs.step(actions), plain.step(values)
    for tensor, array in zip(got[:4], want[:4]):
        assert isinstance(tensor, torch.Tensor)
        np.testing.assert_array_equal(tensor.numpy(), array)


def test_a_cpu_env_takes_a_policy_output_that_requires_grad():
    """A policy's output still on the autograd graph (requires_grad) steps the env: the face detaches it, where
    NumPy alone refuses such a tensor (`Can't call numpy() on Tensor that requires grad`)."""
    envs, plain = _pair("Pendulum")
    weight = torch.tensor([0.5], requires_grad=True)
    for step in range(3):
        raw = torch.tensor([[1.0], [-2.0], [0.25 * step]])
        actions = raw * weight
        assert actions.requires_grad
        _same_step(envs, plain, actions, raw.numpy() * 0.5)
    assert weight.grad is None, "stepping must not touch the graph"


def test_a_cpu_env_takes_a_leaf_tensor_that_requires_grad():
    envs, plain = _pair("Pendulum")
    actions = torch.full((N, 1), 1.5, requires_grad=True)
    _same_step(envs, plain, actions, np.full((N, 1), 1.5, np.float32))


def test_a_cpu_env_takes_strided_and_other_dtype_tensors():
    """A column of a wider tensor (non-contiguous), int32 and uint8 for Discrete, float64 for Box: each steps as
    the same values given as NumPy."""
    envs, plain = _pair("CartPole")
    wide = torch.tensor([[0, 9], [1, 9], [1, 9]])
    assert not wide[:, 0].is_contiguous()
    _same_step(envs, plain, wide[:, 0], np.array([0, 1, 1]))
    _same_step(envs, plain, torch.tensor([1, 0, 1], dtype=torch.int32), np.array([1, 0, 1], np.int32))
    _same_step(envs, plain, torch.tensor([0, 0, 1], dtype=torch.uint8), np.array([0, 0, 1], np.uint8))
    envs, plain = _pair("Pendulum")
    _same_step(envs, plain, torch.tensor([[0.5], [-1.0], [2.0]], dtype=torch.float64),
               np.array([[0.5], [-1.0], [2.0]]))
    _same_step(envs, plain, torch.tensor([[0.5, 9.0], [-1.0, 9.0], [2.0, 9.0]])[:, :1],
               np.array([[0.5], [-1.0], [2.0]], np.float32))


def test_a_cpu_env_still_takes_numpy_and_lists():
    envs, plain = _pair("CartPole")
    _same_step(envs, plain, np.array([1, 0, 1]), np.array([1, 0, 1]))
    _same_step(envs, plain, [0, 1, 0], [0, 1, 0])


class _StandInGpuEnv(gym.vector.VectorEnv):
    """A GPU env in device mode, as the face sees it: a batch without host arrays; it keeps what step() is given."""

    def __init__(self):
        self.num_envs = N
        self.single_observation_space = self.observation_space = gym.spaces.Box(-1, 1, (N, 1), np.float32)
        self.single_action_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.MultiDiscrete([2] * N)
        self.batch = SimpleNamespace(host_arrays=False, stream_handle=0x5000)
        self.given = []

    def reset(self, *, seed=None, options=None):
        return np.zeros((N, 1), np.float32), {}

    def step(self, actions):
        self.given.append(actions)
        return np.zeros((N, 1), np.float32), np.zeros(N, np.float32), np.zeros(N, bool), np.zeros(N, bool), {}


def test_a_gpu_env_is_handed_the_torch_tensor_itself(monkeypatch):
    """On a GPU env torch actions are taken in place (the env reads them on the device): the face passes the very
    tensor, grad and all, never a host copy. torch's current stream is a stand-in (the default stream: no wait)."""
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: SimpleNamespace(cuda_stream=0))
    base = _StandInGpuEnv()
    envs = torch_face.TorchVectorEnv(base)
    envs.reset(seed=0)
    actions = torch.tensor([1, 0, 1])
    envs.step(actions)
    scores = torch.zeros(N, requires_grad=True)
    envs.step(scores)
    host = np.array([0, 1, 1])
    envs.step(host)
    assert base.given[0] is actions and base.given[1] is scores and base.given[2] is host


@pytest.mark.gpu
def test_a_cpu_env_takes_cuda_tensors_from_a_gpu_policy():
    """A policy on the GPU stepping a CPU env: its CUDA action tensor is copied to the host by the face (NumPy
    cannot read device memory)."""
    envs, plain = _pair("CartPole")
    actions = torch.tensor([1, 0, 1], device="cuda")
    _same_step(envs, plain, actions, np.array([1, 0, 1]))
    envs, plain = _pair("Pendulum")
    actions = torch.full((N, 1), 0.75, device="cuda", requires_grad=True) * 2
    _same_step(envs, plain, actions, np.full((N, 1), 1.5, np.float32))


class _DeviceBuffer:
    """A GPU env's output buffer as the face reads it (a DeviceArray's pointer, shape, dtype and strides)."""

    def __init__(self, ptr, shape=(N, 1)):
        self.ptr, self.shape, self.dtype, self.strides = ptr, shape, np.dtype(np.float32), None

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.ptr, False), "shape": self.shape, "typestr": "<f4", "strides": None, "version": 3}


class _StandInDeviceOutputs(_StandInGpuEnv):
    """A GPU env in device mode whose outputs are device buffers: the same ones every step (its persistent
    buffers), or new ones each step where made with copy=True; copy=None: an env with no `copy` attribute (as the
    MuJoCo face's), whose device outputs are its batch's own buffers. Its info carries a host array too."""

    def __init__(self, copy):
        super().__init__()
        self.fresh, self.made, self.buffers = bool(copy), 0, []
        if copy is not None:
            self.copy = copy

    def _outputs(self, count=4):
        self.made += 1
        base = 0x7000_0000 + (0x1000 * self.made if self.fresh else 0)
        out = [_DeviceBuffer(base + k * 0x100, shape) for k, shape in enumerate([(N, 1), (N,), (N,), (N,)][:count])]
        self.buffers.append([weakref.ref(b) for b in out])
        return out

    def reset(self, *, seed=None, options=None):
        return self._outputs(1)[0], {}

    def step(self, actions):
        obs, rew, term, trunc = self._outputs()
        return obs, rew, term, trunc, {"length": np.arange(N)}


@pytest.fixture
def stand_in_views(monkeypatch):
    """torch's views of device buffers, stood in for (torch here has no CUDA): each keeps its buffer alive, as a
    torch tensor made through __cuda_array_interface__ does; host arrays are marked as such."""
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: SimpleNamespace(cuda_stream=0))
    views = []

    def view(x):
        if isinstance(x, np.ndarray):
            return ("host", x)
        views.append(("view", x.ptr, x))
        return views[-1]

    monkeypatch.setattr(torch_face, "as_tensor", view)
    return views


@pytest.mark.parametrize("copy", [False, None])
def test_a_gpu_envs_buffers_are_viewed_once(stand_in_views, copy):
    """On a GPU env the face makes one torch view per env buffer and hands the same view back every step (the
    buffer is overwritten in place, so the view shows each step's values), also for an env that has no `copy`
    setting. Host arrays (an info entry) are converted every time."""
    envs = torch_face.TorchVectorEnv(_StandInDeviceOutputs(copy))
    first = envs.reset(seed=0)[0]
    steps = [envs.step(torch.zeros(N, dtype=torch.int64)) for _ in range(3)]
    assert len(stand_in_views) == 4, "one view per buffer: obs (reset and step share it), rewards, term, trunc"
    assert all(step[k] is steps[0][k] for step in steps for k in range(4)) and steps[0][0] is first
    assert [v[1] for v in stand_in_views] == [0x7000_0000, 0x7000_0100, 0x7000_0200, 0x7000_0300]
    for step in steps:
        kind, array = step[4]["length"]
        assert kind == "host" and array.tolist() == list(range(N))


def test_a_copying_gpu_envs_outputs_each_get_a_view_and_are_let_go(stand_in_views):
    """An env made with copy=True hands new buffers every step: each gets its own view, and the face keeps none of
    them, so a step's buffers are freed once the user drops that step's tensors (no memory held per step)."""
    base = _StandInDeviceOutputs(True)
    envs = torch_face.TorchVectorEnv(base)
    first = envs.reset(seed=0)[0]
    steps = [envs.step(torch.zeros(N, dtype=torch.int64)) for _ in range(3)]
    assert len(stand_in_views) == 1 + 4 * 3, "a view of every new buffer"
    assert len({id(step[0]) for step in steps} | {id(first)}) == 4
    assert all(ref() is not None for refs in base.buffers for ref in refs), "the user's tensors keep theirs"
    stand_in_views.clear()
    del first, steps
    gc.collect()
    assert all(ref() is None for refs in base.buffers for ref in refs), "the face must not keep old steps' buffers"
