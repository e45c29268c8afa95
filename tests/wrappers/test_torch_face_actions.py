"""The torch face's actions: a CPU env takes any torch tensor a policy hands it (with grad, strided, another
dtype, on a GPU) as the NumPy env takes the same values; a GPU env takes torch tensors in place, never through
the host (a stand-in GPU env here; the real one in the `gpu` test)."""

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
