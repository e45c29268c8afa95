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
