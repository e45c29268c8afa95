"""The fused rollout kernels' bootstrap step in a game of two agents (Pong with both paddles policy agents), built
for the CPU by rollout_bootstrap_on_cpu.cpp: policy_rollout_warp_kernel (a warp per env) and policy_step_kernel (a
thread per env) write each agent's own V(obs[T]) to last_value and its state after the step to last_state, as
reference.policy_forward computes them (the GAE's bootstrap). tests/trainer/test_cuda_two_seat_bootstrap.py checks
the same through the trainer on a GPU."""

import re
from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness, call, rel_err

from fastvec import native
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE, policy_defines, warp_scratch_floats, warp_weight_floats

HARNESS = Path(__file__).resolve().parent / "rollout_bootstrap_on_cpu.cpp"
CUDA_DIR = Path(ref.__file__).parent / "cuda"
SHARED_FLOAT4S = 1 << 16  # the emulation's static shared memory, more than either kernel takes below
SPECS = {"mingru-highway-48": ref.PolicySpec(obs_size=8, num_actions=3, kind="mingru", hidden=48, layers=2,
                                             highway=True),
         "mlp-32": ref.PolicySpec(obs_size=8, num_actions=3, kind="mlp", hidden=32, layers=2)}
AGENTS, ENVS, T, K, BLOCK = 2, 20, 4, 2, 256


@pytest.fixture(scope="module", params=list(SPECS))
def built(request, tmp_path_factory):
    spec = SPECS[request.param]
    assert (warp_weight_floats(spec, ref.FlatLayout(ref.param_table(spec)))
            + BLOCK // 32 * warp_scratch_floats(spec, AGENTS)) <= 4 * SHARED_FLOAT4S
    parts = tmp_path_factory.mktemp("rollout_parts")
    (parts / "rollout.cu").write_text(re.sub(r"extern __shared__ float4 (\w+)\[\];",
                                             rf"static float4 \1[{SHARED_FLOAT4S}];",
                                             (CUDA_DIR / "rollout.cu").read_text()))
    defines = {"PONG_BOT": 0, "BOT_LEVEL": -1, "POINTS": 1, **policy_defines(spec), "POLICY_HEAD_SIZE": 3}
    emu = build_harness(tmp_path_factory, HARNESS,
                        [f"-iquote{parts}", f"-I{native.NATIVE_DIR}", f'-DENV="{native.source_path("pong")}"',
                         *[f"-D{k}={v}" for k, v in defines.items()]])
    emu.emu_num_agents.restype = int
    assert emu.emu_num_agents() == AGENTS
    return spec, emu


def bootstrap_inputs(spec, seed):
    """Random weights (biases away from 0), a (T + 1, R, O) obs buffer and start flags (some rows starting an
    episode at step T), and a random live state."""
    rng = np.random.default_rng(seed)
    rows = ENVS * AGENTS
    params = ref.init_params(spec, rng, np.float32)
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    for name, view in views.items():
        if name.endswith(".b"):
            view[...] = rng.normal(0, 0.5, view.shape)
    views["dec.w"][...] = rng.normal(0, 1.0, views["dec.w"].shape)
    obs = rng.uniform(-1, 1, (T + 1, rows, spec.obs_size)).astype(np.float32)
    starts = (rng.uniform(0, 1, (T + 1, rows)) < 0.25).astype(np.float32)
    state = rng.normal(0, 1, (max(spec.state_layers, 1), rows, spec.hidden)).astype(np.float32)
    return params, views, obs, starts, state


@pytest.mark.parametrize("kernel", ["warp", "thread"])
def test_bootstrap_step_writes_each_agents_own_value_and_state(built, kernel):
    spec, emu = built
    params, views, obs, starts, state = bootstrap_inputs(spec, 3)
    rows = ENVS * AGENTS
    last_state = np.full_like(state, np.nan)
    last_value = np.full(rows + 1, 7.0, np.float32)  # one past the rows: left alone
    scalars = np.frombuffer(np.zeros((), SCALARS_DTYPE).tobytes(), np.uint8).copy()
    live = state.copy()
    fn = emu.emu_warp_bootstrap if kernel == "warp" else emu.emu_thread_bootstrap
    call(fn, ENVS, BLOCK, T, K, params, obs, starts, live, last_state, last_value, scalars)
    _, values, after, _ = ref.policy_forward(spec, views, obs[T:], starts[T:], state[:spec.state_layers])
    assert rel_err(last_value[:rows], values[0]) <= 1e-5
    assert last_value[rows] == 7.0
    assert np.abs(values[0][0::2] - values[0][1::2]).max() > 0.1  # the agents' values differ
    assert np.array_equal(live, state)  # the live state is the next rollout's: untouched
    if spec.state_layers:
        assert rel_err(last_state, after) <= 1e-5
