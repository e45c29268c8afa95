"""fastvec's SMAX env file on its own (no jaxmarl): its spaces per scenario and what its episodes keep true."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu

DISABLED = 2  # batch.h's FV_DISABLED: this test resets itself


@pytest.mark.parametrize("mp, allies, enemies", [(0, 3, 3), (3, 5, 6), (6, 6, 8)])
def test_spaces(mp, allies, enemies):
    env = cpu.load(NATIVE_DIR / "smax.h", (("MAP", mp),))
    n = allies + enemies
    assert env.num_agents == n
    assert env.obs_size == 13 * (n - 1) + 10  # jaxmarl's unit_list observation
    sizes = [env.lib.fv_agent_action_size(a) for a in range(n)]
    assert sizes == [5 + enemies] * allies + [5 + allies] * enemies


def test_random_episodes_stay_on_the_map_and_end():
    env = cpu.load(NATIVE_DIR / "smax.h", (("MAP", 0),))
    batch = cpu.CpuBatch(env, 64, DISABLED, 101)
    batch.reset(np.arange(64, dtype=np.uint64), None)
    rng = np.random.default_rng(0)
    ended = np.zeros(64, np.bool_)
    for _ in range(101):
        batch.step(rng.integers(0, 8, (64, 6, 1)))
        state = batch.get_state()[:, : 8 * 6].reshape(64, 6, 8)
        assert ((state[..., :2] >= 0) & (state[..., :2] <= 32)).all()
        assert ((state[..., 2] > 0) == (state[..., 4] != 0)).all()  # alive exactly while health is left
        assert ((batch.obs >= -1) & (batch.obs <= 1)).all()
        ended |= batch.terminated | batch.truncated
    assert ended.all()
