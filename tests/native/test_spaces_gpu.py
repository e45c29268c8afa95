"""Box and MultiDiscrete actions on the GPU backend (PyCUDA): the spaces a GPU build declares are the CPU
build's; seeded trajectories equal the CPU's; actions are read in place (zero copy) from torch tensors of
every dtype and stride the device takes and from DeviceArrays; bad values raise at the next synchronisation
(at once with validate=True, before stepping for host arrays); state access and the fused random rollout.
Marked `gpu`: skipped without PyCUDA and a CUDA GPU."""

from pathlib import Path

import numpy as np
import pytest

import fastvec
from fastvec.native.spaces import ActionError

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
BOX, MULTI = str(ENVS_DIR / "box_point.h"), str(ENVS_DIR / "multi_discrete.h")

pytestmark = pytest.mark.gpu


def _pair(source: str, n: int, seed: int = 3, **kwargs):
    """A GPU env and its CPU twin, reset with the same seed."""
    gpu = fastvec.make_vec_from_source(source, n, device="cuda", **kwargs)
    cpu = fastvec.make_vec_from_source(source, n, max_episode_steps=kwargs.get("max_episode_steps"))
    gpu.reset(seed=seed)
    cpu.reset(seed=seed)
    return gpu, cpu


def _get(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


@pytest.mark.parametrize("source", [BOX, MULTI])
def test_gpu_spaces_and_trajectories_equal_the_cpu(source):
    gpu, cpu = _pair(source, 333, max_episode_steps=9)
    assert gpu.single_action_space == cpu.single_action_space
    assert gpu.single_observation_space == cpu.single_observation_space
    cpu.action_space.seed(0)
    ended = 0
    for _ in range(40):
        actions = cpu.action_space.sample()
        if source == BOX:
            actions *= 1.5  # beyond the bounds too: the env clips
        ours, theirs = gpu.step(actions), cpu.step(actions)
        for a, b in zip(ours[:4], theirs[:4]):
            np.testing.assert_array_equal(a, b)
        ended += int((theirs[2] | theirs[3]).sum())
    assert ended > 0
    if source == BOX:
        np.testing.assert_array_equal(gpu.get_state(), cpu.get_state())


def test_box_actions_are_read_in_place_from_torch_in_every_dtype_and_stride():
    torch = pytest.importorskip("torch")
    n = 500
    dev, ref = _pair(BOX, n, array_type="device")
    gen = torch.Generator(device="cuda").manual_seed(0)
    wide = torch.rand((n, 4), device="cuda", generator=gen) * 6 - 3
    for actions in (wide[:, :2].contiguous(), wide[:, :2].double(), wide[:, 1:3],  # float32, float64, strided
                    wide[:, :2].t().contiguous().t()):  # dimension-major
        obs, *_ = dev.step(actions)
        expected = ref.step(actions.float().cpu().numpy())[0]
        np.testing.assert_array_equal(obs.get(), expected)
    b = dev.unwrapped.batch
    b.random_actions(0)  # a DeviceArray of the env's own layout (N, 1, 2) float32
    drawn = b.dev.actions.get()
    assert drawn.shape == (n, 1, 2) and drawn.dtype == np.float32
    obs, *_ = dev.step(b.dev.actions)
    np.testing.assert_array_equal(obs.get(), ref.step(drawn.reshape(n, 2))[0])
    with pytest.raises(TypeError, match=r"float32 or float64 for Box"):
        dev.step(wide[:, :2].half())
    with pytest.raises(TypeError, match=r"float32 or float64"):
        dev.step(torch.zeros((n, 2), dtype=torch.int64, device="cuda"))
    with pytest.raises(ValueError, match=r"shape \(500, 2\)"):
        dev.step(wide[:, :3])


def test_multi_discrete_actions_are_read_in_place_from_torch_in_every_dtype_and_stride():
    torch = pytest.importorskip("torch")
    n = 500
    dev, ref = _pair(MULTI, n, array_type="device")
    gen = torch.Generator(device="cuda").manual_seed(1)
    wide = torch.stack([torch.randint(0, 3, (n,), device="cuda", generator=gen),
                        torch.randint(0, 5, (n,), device="cuda", generator=gen),
                        torch.randint(0, 3, (n,), device="cuda", generator=gen)], dim=1)
    for actions in (wide[:, :2].contiguous(), wide[:, :2].int(), wide[:, :2].to(torch.uint8), wide[:, :2]):
        obs, rewards, *_ = dev.step(actions)
        expected = ref.step(actions.long().cpu().numpy())
        np.testing.assert_array_equal(obs.get(), expected[0])
        np.testing.assert_array_equal(rewards.get(), expected[1])
    with pytest.raises(TypeError, match="integers for MultiDiscrete"):
        dev.step(wide[:, :2].float())


@pytest.mark.parametrize("source,bad,message", [
    (BOX, (5, 1, float("nan")), r"action nan at env 5, dimension 1 is not a finite number"),
    (BOX, (7, 0, float("-inf")), r"action -inf at env 7, dimension 0 is not a finite number"),
    (MULTI, (3, 0, 7), r"action 7 out of range for MultiDiscrete\(\[3 5\]\) at env 3, dimension 0"),
    (MULTI, (9, 1, -2), r"action -2 out of range for MultiDiscrete\(\[3 5\]\) at env 9, dimension 1"),
])
def test_bad_device_actions_are_reported_at_the_next_synchronisation(source, bad, message):
    torch = pytest.importorskip("torch")
    n = 64
    dtype = torch.float32 if source == BOX else torch.int64
    dev, _ = _pair(source, n, array_type="device")
    actions = torch.zeros((n, 2), dtype=dtype, device="cuda")
    actions[bad[0], bad[1]] = bad[2]
    dev.step(actions)  # no wait: the check runs on the GPU
    with pytest.raises(ActionError, match=message + ".*checked on the GPU"):
        dev.synchronize()
    dev.step(torch.zeros((n, 2), dtype=dtype, device="cuda"))
    dev.synchronize()  # reported once, then cleared
    strict, _ = _pair(source, n, array_type="device", validate=True)
    with pytest.raises(ActionError, match=message):
        strict.step(actions)
    host, ref = _pair(source, n)  # host arrays: checked before anything is stepped
    with pytest.raises(ActionError, match=message):
        host.step(actions.cpu().numpy())
    good = np.zeros((n, 2), np.float32 if source == BOX else np.int64)
    np.testing.assert_array_equal(host.step(good)[0], ref.step(good)[0])


@pytest.mark.parametrize("array_type", ["numpy", "device"])
def test_gpu_state_access_equals_the_cpu(array_type):
    gpu, cpu = _pair(BOX, 100, array_type=array_type)
    np.testing.assert_array_equal(gpu.get_state(), cpu.get_state())
    values, idx = np.array([[0.5, -1.0], [4.0, 2.0]]), [7, 99]
    gpu.set_state(values, indices=idx)
    cpu.set_state(values, indices=idx)
    np.testing.assert_array_equal(gpu.get_state(idx), values)
    actions = np.ones((100, 2), np.float32)
    for a, b in zip(gpu.step(actions)[:4], cpu.step(actions)[:4]):
        np.testing.assert_array_equal(_get(a), b)
    np.testing.assert_array_equal(gpu.get_state(), cpu.get_state())


@pytest.mark.parametrize("source", [BOX, MULTI])
def test_fused_random_rollout_with_box_and_multi_discrete_actions_equals_eager_steps(source):
    n, steps = 777, 30
    fused, _ = _pair(source, n, seed=11, array_type="device")
    eager, _ = _pair(source, n, seed=11, array_type="device")
    fused.rollout("random", steps)
    b, drawn = eager.unwrapped.batch, []
    for t in range(steps):
        b.random_actions(t)
        drawn.append(b.dev.actions.get())
        eager.step(b.dev.actions)
    for name in ("slots", "obs", "rewards", "terminated", "truncated", "done", "episode_return", "episode_length"):
        np.testing.assert_array_equal(getattr(fused.unwrapped.batch.dev, name).get(), getattr(b.dev, name).get(), name)
    drawn = np.array(drawn).reshape(-1, 2)
    space = eager.single_action_space
    assert all(a in space for a in drawn[:1000].astype(space.dtype))


def test_torch_wrapper_on_a_gpu_box_env():
    torch = pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv

    envs = TorchVectorEnv(fastvec.make_vec_from_source(BOX, 256, device="cuda", array_type="device"))
    obs, _ = envs.reset(seed=0)
    assert obs.is_cuda and obs.shape == (256, 3)
    obs, rew, *_ = envs.step(torch.full((256, 2), 0.25, device="cuda"))
    assert torch.equal(obs[:, 2], torch.full((256,), 0.25, device="cuda")) and rew.is_cuda
