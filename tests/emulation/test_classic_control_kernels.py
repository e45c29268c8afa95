"""The classic-control envs' GPU step (batch_gpu.h's kernels over cartpole/acrobot/mountaincar/
mountaincar_continuous/pendulum.h, and the float32=1 builds of the last three) without a GPU, on
tests/emulation/gpu_on_cpu.cpp: from the same set states (angles and speeds over their whole ranges), every buffer
and every env's state equal the CPU batch's after each step, through terminations, truncations and autoresets. The
device's own arithmetic (fma, the CUDA branches of glibc_math.h) is checked on a GPU by
tests/native/test_classic_control_gpu.py."""

import numpy as np
import pytest
from test_env_step_kernels import ENVS, NO_ERROR, EmulatedBatch, build  # noqa: F401  (build: the harness fixture)

from fastvec import native
from fastvec.native import cpu

KEYS = ["cartpole", "acrobot", "mountaincar", "mountaincarcontinuous", "pendulum"]
FLOAT32_KEYS = ["mountaincar", "mountaincarcontinuous", "pendulum"]  # their float32=1 builds too
for _key in KEYS:  # the harness builds an env by its name in ENVS: (source, defines, max_episode_steps)
    ENVS[f"cc_{_key}"] = (native.source_path(_key), native.resolve_defines(_key, {}), 10)
for _key in FLOAT32_KEYS:
    ENVS[f"cc_{_key}-float32"] = (native.source_path(_key), native.resolve_defines(_key, {"float32": 1}), 10)

STATE_RANGES = {  # (low, high) per state variable: a set state anywhere in these
    "cartpole": ([-2.4, -3, -0.2, -3], [2.4, 3, 0.2, 3]),
    "acrobot": ([-np.pi, -np.pi, -4 * np.pi, -9 * np.pi], [np.pi, np.pi, 4 * np.pi, 9 * np.pi]),
    "mountaincar": ([-1.2, -0.07], [0.6, 0.07]),
    "mountaincarcontinuous": ([-1.2, -0.07], [0.6, 0.07]),
    "pendulum": ([-100.0, -8.0], [100.0, 8.0]),
}
CASES = [("cartpole", "NextStep", "wide"), ("acrobot", "SameStep", "staged_wide"), ("mountaincar", "NextStep", "wide"),
         ("mountaincarcontinuous", "SameStep", "wide"), ("pendulum", "NextStep", "staged_wide"),
         ("mountaincar-float32", "SameStep", "staged_wide"), ("mountaincarcontinuous-float32", "NextStep", "staged_wide"),
         ("pendulum-float32", "SameStep", "wide")]


@pytest.mark.parametrize("key,mode,kernel", CASES)
def test_emulated_gpu_steps_equal_the_cpu_batch_from_set_states(build, key, mode, kernel):  # noqa: F811
    name = f"cc_{key}"
    key = key.removesuffix("-float32")
    path, defines, max_steps = ENVS[name]
    env = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    code, n = native.AUTORESET_CODES[mode], 300
    ref, emu = cpu.CpuBatch(env, n, code, max_steps), EmulatedBatch(build(name), env, n, code, max_steps)
    rng = np.random.default_rng(len(key))
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    ref.reset(seeds, None)
    emu.reset(seeds, None)
    low, high = STATE_RANGES[key]
    ref.set_state(np.arange(n), rng.uniform(low, high, (n, len(low))))
    emu.slots[:n * emu.state_size] = ref.slots[:, :emu.state_size].ravel()  # the same State bytes
    ended = 0
    for t in range(30):
        if env.action_kind == "box":
            actions = rng.uniform(-3, 3, (n, 1, 1)).astype(np.float32)  # beyond the bounds too: the env clips
        else:
            actions = rng.integers(0, env.num_actions, (n, 1, 1))
        ref.step(actions)
        emu.step(actions, kernel)
        for field in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length"):
            np.testing.assert_array_equal(getattr(emu, field), getattr(ref, field), err_msg=f"{field} at step {t}")
        done = ref.terminated | ref.truncated
        if mode == "SameStep":
            np.testing.assert_array_equal(emu.final_obs[done], ref.final_obs[done])
        np.testing.assert_array_equal(emu.slots[:n * emu.state_size].reshape(n, -1), ref.slots[:, :emu.state_size],
                                      err_msg=f"states at step {t}")
        ended += int(done.sum())
    assert emu.error[0] == NO_ERROR
    assert ended > 0
