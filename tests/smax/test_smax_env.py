"""fastvec's SMAX env file on its own (no jaxmarl): its spaces per scenario (the registry's team sizes) and what its
episodes keep true."""

import numpy as np
import pytest

from fastvec.native import NATIVE_DIR, cpu
from fastvec.native.smax import SCENARIOS, TIME_LIMIT, scenario_defines

DISABLED = 2  # batch.h's FV_DISABLED: this test resets itself


def load(name):
    return cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name).items()))


@pytest.mark.parametrize("name", SCENARIOS)
def test_spaces(name):
    env, sc = load(name), SCENARIOS[name]
    n = sc.allies + sc.enemies
    assert env.num_agents == len(sc.agents) == n
    assert env.obs_size == 13 * (n - 1) + 10  # jaxmarl's unit_list observation
    sizes = [env.lib.fv_agent_action_size(a) for a in range(n)]
    assert sizes == [5 + sc.enemies] * sc.allies + [5 + sc.allies] * sc.enemies


def test_unknown_scenario_names_the_choices():
    with pytest.raises(KeyError, match="3s5z_vs_3s6z"):
        scenario_defines("3s5z_vs_3s7z")


def test_random_episodes_stay_on_the_map_and_end():
    env = load("3m")
    batch = cpu.CpuBatch(env, 64, DISABLED, TIME_LIMIT)
    batch.reset(np.arange(64, dtype=np.uint64), None)
    rng = np.random.default_rng(0)
    ended = np.zeros(64, np.bool_)
    for _ in range(TIME_LIMIT):
        batch.step(rng.integers(0, 8, (64, 6, 1)))
        state = batch.get_state()[:, : 8 * 6].reshape(64, 6, 8)
        assert ((state[..., :2] >= 0) & (state[..., :2] <= 32)).all()
        assert ((state[..., 2] > 0) == (state[..., 4] != 0)).all()  # alive exactly while health is left
        assert ((batch.obs >= -1) & (batch.obs <= 1)).all()
        ended |= batch.terminated | batch.truncated
    assert ended.all()
