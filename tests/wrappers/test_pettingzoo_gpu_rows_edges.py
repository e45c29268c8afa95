"""The PettingZoo vector env on the GPU (array_type="device") past one block of 256 threads: per-seat device
actions reach every game and every game's flags reach both of its rows (game_rows.cu's grids), against the CPU
vector env step for step. GPU machines only."""

import numpy as np
import pytest

from fastvec.pettingzoo import vector_env

pytestmark = pytest.mark.gpu


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_per_seat_actions_and_row_flags_reach_the_game_past_a_block_of_256():
    """257 games: the seat kernel's grid needs a second block for game 256 alone (its stale action would move its
    paddle wrongly), and 514 rows need three blocks of the rows kernel."""
    torch = pytest.importorskip("torch")
    games = 257
    cpu = vector_env("Pong", games, points=1)
    gpu = vector_env("Pong", games, device="cuda", array_type="device", points=1)
    obs_c, _ = cpu.reset(seed=11)
    obs_g, _ = gpu.reset(seed=11)
    np.testing.assert_array_equal(host(obs_g), obs_c)
    rng = np.random.default_rng(2)
    ends = 0
    for t in range(150):
        acts = rng.integers(0, 3, (games, 2))
        acts[-1] = (t % 3, (t + 1) % 3)  # the last game's actions change every step
        obs_c, rew_c, term_c, trunc_c, _ = cpu.step(acts.reshape(-1))
        seats = torch.as_tensor(acts, device="cuda")
        obs_g, rew_g, term_g, trunc_g, _ = gpu.step({"left": seats[:, 0], "right": seats[:, 1]})
        np.testing.assert_array_equal(host(obs_g), obs_c, err_msg=f"step {t}")
        np.testing.assert_array_equal(host(rew_g), rew_c.astype(np.float32))
        np.testing.assert_array_equal(host(term_g), term_c)
        np.testing.assert_array_equal(host(trunc_g), trunc_c)
        ends += int((term_c | trunc_c).sum())
    assert ends > 0
    cpu.close()
    gpu.close()
