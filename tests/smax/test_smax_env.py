"""fastvec's SMAX env file on its own (no jaxmarl): its spaces per scenario (the registry's team sizes) and what its
episodes keep true."""

import shutil
import subprocess

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


@pytest.mark.parametrize("name", ["3m", "5m_vs_6m", "6h_vs_8z"])
def test_heuristic_enemies_leave_the_allies_the_agents(name):
    sc = SCENARIOS[name]
    env = cpu.load(NATIVE_DIR / "smax.h", tuple(scenario_defines(name, "heuristic").items()))
    n = sc.allies + sc.enemies
    assert env.num_agents == sc.allies and sc.agent_names("heuristic") == sc.agents[: sc.allies]
    assert env.obs_size == 13 * (n - 1) + 10 and env.num_actions == 5 + sc.enemies  # the allies' space
    assert env.spaces.state_size == 16 * n + 4 * sc.enemies  # units, draws, the enemies' policy states
    with pytest.raises(ValueError, match="heuristic"):
        scenario_defines(name, "scripted")


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


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("name", ["3m", "25m", "27m_vs_30m"])
def test_the_gpu_env_module_and_the_trainers_compile(name, tmp_path):
    """The crowded scenarios' observations (129-168 KB an env) do not fit a block's shared memory: their staged
    kernels are never launched, and must still compile, in the env module and in the trainer's."""
    from fastvec.native.gpu import NVCC_FLAGS
    from fastvec.trainer.cuda.device import CUDA_DIR
    shutil.copyfile(NATIVE_DIR / "smax.h", tmp_path / "fastvec_env.h")
    units = {"env": '#include "fastvec_env.h"\n#include "batch.h"\n#include "batch_gpu.h"\n',
             "trainer": '#include "fastvec_env.h"\n#include "batch.h"\n#include "kernels.cu"\n#include "rollout.cu"\n'
                        '#include "selfplay.cu"\n'}
    defines = [f"-D{key}={value}" for key, value in scenario_defines(name).items()]
    for unit, text in units.items():
        (tmp_path / f"{unit}.cu").write_text(text)
        cmd = ["nvcc", "--cubin", "-arch=sm_90", *NVCC_FLAGS, *defines, f"-I{tmp_path}", f"-I{CUDA_DIR}",
               f"-I{NATIVE_DIR}", str(tmp_path / f"{unit}.cu"), "-o", str(tmp_path / f"{unit}.cubin")]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        assert proc.returncode == 0, (unit, proc.stderr[-2000:])


def test_action_masks_and_world_state_go_with_the_returned_observation():
    """batch.action_mask (N, A, NUM_ACTIONS) uint8 and batch.world_state (N, WORLD_STATE_SIZE) float32 after every
    reset and step are those of the state whose observation the batch returns: after an autoreset, the new
    episode's. Recomputed from scratch (set_state of the same state) they come out the same."""
    env = load("5m_vs_6m")
    n, agents, actions = 32, 11, 5 + 6
    batch = cpu.CpuBatch(env, n, 1, 20)  # SameStep: ended envs hand out the next episode's first observation
    assert env.action_mask and env.world_state_size == 12 * agents
    batch.reset(np.arange(n, dtype=np.uint64), None)
    assert batch.action_mask.shape == (n, agents, actions) and batch.action_mask.dtype == np.uint8
    assert batch.world_state.shape == (n, 12 * agents) and batch.world_state.dtype == np.float32
    # a first state: every unit alive and out of the others' range, so moves and stop, no attacks
    assert (batch.action_mask[..., :5] == 1).all() and not batch.action_mask[..., 5:].any()
    rng, ended, attacks = np.random.default_rng(1), 0, 0
    for _ in range(60):
        # available actions, mostly: the mask a policy would apply
        logits = np.where(batch.action_mask, rng.random(batch.action_mask.shape), -1.0)
        batch.step(logits.argmax(-1))
        ended += int((batch.terminated | batch.truncated).sum())
        attacks += int(batch.action_mask[..., 5:].sum())
        mask, world = batch.action_mask.copy(), batch.world_state.copy()
        batch.set_state(None, batch.get_state())
        np.testing.assert_array_equal(batch.action_mask, mask)
        np.testing.assert_array_equal(batch.world_state, world)
        alive = batch.get_state()[:, : 8 * agents].reshape(n, agents, 8)[..., 4] != 0
        np.testing.assert_array_equal(mask[..., 0], alive)  # moves while alive
        assert (mask[..., 4] == 1).all()  # stop always
        assert not mask[:, 5:, 5 + 5:].any()  # enemies attack 5 allies: their sixth attack is beyond their space
    assert ended > 0 and attacks > 0


def test_masked_reset_refreshes_only_the_reset_envs():
    env = load("3m")
    batch = cpu.CpuBatch(env, 4, DISABLED, TIME_LIMIT)
    batch.reset(np.arange(4, dtype=np.uint64), None)
    batch.action_mask[:] = 7  # marks what a refresh leaves alone
    batch.reset(None, np.array([False, True, False, True]))
    assert (batch.action_mask[[0, 2]] == 7).all() and (batch.action_mask[[1, 3]] <= 1).all()


def test_envs_without_the_hooks_hand_out_none():
    from fastvec.native.batches import load_batch

    batch = load_batch("cartpole", 2)
    assert (batch.env.action_mask, batch.env.world_state_size) == (False, 0)
    batch.reset(None, None)
    batch.step(np.zeros(2, np.int64))
    assert batch.action_mask is None and batch.world_state is None
