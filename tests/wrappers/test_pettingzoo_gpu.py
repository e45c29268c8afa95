"""fastvec.pettingzoo.vector_env on the GPU with array_type="device" (GPU machines only): the same games as the
CPU vector env step for step, bit for bit, with device actions by row, by (game, agent) and per seat; the arrays
it returns are views of the GPU buffers (zero-copy into PyTorch); bad device actions raise at the next
synchronisation."""

import numpy as np
import pytest

from fastvec.pettingzoo import vector_env

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_device_vector_env_equals_the_cpu_one_step_for_step():
    games = 96
    cpu = vector_env("Pong", games, points=1)
    gpu = vector_env("Pong", games, device="cuda", array_type="device", points=1)
    obs_c, _ = cpu.reset(seed=7)
    obs_g, _ = gpu.reset(seed=7)
    np.testing.assert_array_equal(host(obs_g), obs_c)
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(400):
        acts = rng.integers(0, 3, cpu.num_envs)
        if t % 3 == 0:  # by row, a torch tensor on the GPU
            given = torch.as_tensor(acts, device="cuda")
        elif t % 3 == 1:  # (games, agents), int32
            given = torch.as_tensor(acts.reshape(games, 2), dtype=torch.int32, device="cuda")
        else:  # per seat, each its own strided view of one tensor
            both = torch.as_tensor(acts.reshape(games, 2), device="cuda")
            given = {"left": both[:, 0], "right": both[:, 1]}
        obs_c, rew_c, term_c, trunc_c, info_c = cpu.step(acts)
        obs_g, rew_g, term_g, trunc_g, info_g = gpu.step(given)
        np.testing.assert_array_equal(host(obs_g), obs_c, err_msg=f"step {t}")
        np.testing.assert_array_equal(host(rew_g), rew_c.astype(np.float32))
        np.testing.assert_array_equal(host(term_g), term_c)
        np.testing.assert_array_equal(host(trunc_g), trunc_c)
        done = term_c | trunc_c
        np.testing.assert_array_equal(host(info_g["_final_obs"]), done)
        if done.any():
            ends += int(done.sum())
            final = host(info_g["final_obs"])
            for r in np.flatnonzero(done):
                np.testing.assert_array_equal(final[r], info_c["final_obs"][r])
            for key in ["episode_return", "episode_length", "left_score", "right_score"]:
                np.testing.assert_array_equal(host(info_g["final_info"][key])[done],
                                              info_c["final_info"][key][done].astype(host(info_g["final_info"][key]).dtype))
    assert ends > 0
    cpu.close()
    gpu.close()


def test_device_arrays_are_views_of_the_gpu_buffers_and_bad_actions_raise():
    from fastvec.native.spaces import ActionError
    envs = vector_env("Pong", 8, device="cuda", array_type="device")
    obs, _ = envs.reset(seed=1)
    assert obs.__cuda_array_interface__["data"][0] == envs.batch.dev.obs.ptr
    assert torch.as_tensor(obs, device="cuda").data_ptr() == envs.batch.dev.obs.ptr
    obs2, rewards, term, trunc, _ = envs.step(torch.zeros(16, dtype=torch.int64, device="cuda"))
    assert obs2.ptr == obs.ptr and rewards.shape == (16,) and term.shape == (16,) and trunc.shape == (16,)
    bad = torch.zeros(16, dtype=torch.int64, device="cuda")
    bad[5] = 3
    envs.step(bad)
    with pytest.raises(ActionError, match="out of range"):
        envs.batch.synchronize()
    envs.step({"left": torch.zeros(8, dtype=torch.int64, device="cuda"),
               "right": torch.ones(8, dtype=torch.int64, device="cuda")})
    envs.batch.synchronize()  # usable again
    with pytest.raises(TypeError, match="integers"):
        envs.step({"left": torch.zeros(8, device="cuda"), "right": torch.zeros(8, device="cuda")})
    envs.close()


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_per_seat_device_actions_of_every_integer_width_are_read_whole(dtype):
    """A seat's actions as any integer tensor reach the games as their values: in range they play as the same
    int64 actions do; out of range they raise, also where only a high byte is set (256: a value read from
    its low byte would be action 0)."""
    from fastvec.native.spaces import ActionError
    games = 8
    envs = vector_env("Pong", games, device="cuda", array_type="device")
    reference = vector_env("Pong", games, device="cuda", array_type="device")
    envs.reset(seed=3)
    reference.reset(seed=3)
    rng = np.random.default_rng(4)
    for _ in range(20):
        acts = rng.integers(0, 3, (games, 2))
        obs, *_ = envs.step({"left": torch.as_tensor(acts[:, 0], device="cuda").to(dtype),
                             "right": torch.as_tensor(acts[:, 1], device="cuda").to(dtype)})
        want, *_ = reference.step(torch.as_tensor(acts.reshape(-1), device="cuda"))
        np.testing.assert_array_equal(host(obs), host(want))
    bad_value = 256 if torch.iinfo(dtype).max >= 256 else (-1 if torch.iinfo(dtype).min < 0 else 255)
    bad = torch.zeros(games, dtype=dtype, device="cuda")
    bad[3] = bad_value
    envs.step({"left": bad, "right": torch.zeros(games, dtype=dtype, device="cuda")})
    with pytest.raises(ActionError, match="out of range"):
        envs.batch.synchronize()
    envs.close()
    reference.close()
