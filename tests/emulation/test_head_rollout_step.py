"""rollout_step_kernel (the GEMM path's policy step) with a MultiDiscrete and a Box head, built for the CPU by
head_rollout_on_cpu.cpp: every agent's action, log-probability and value come from its decoder row plus the decoder
bias, drawn as heads.sample_head draws them with the step's counter uniforms (streams.head_uniforms)."""

import ctypes
from pathlib import Path

import numpy as np
import pytest
from test_heads_kernels import build_harness, call, rel_err

from fastvec import native
from fastvec.trainer import heads
from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE
from fastvec.trainer.streams import head_uniforms, sampling_key

HARNESS = Path(__file__).resolve().parent / "head_rollout_on_cpu.cpp"
ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
# name: (env file, defines, the policy head of the env's action space, agents, observation size)
CASES = {"multi_discrete": ("multi_discrete.h", {"AGENTS": 2},
                            {"action_kind": "multi_discrete", "action_nvec": (3, 5)}, 2, 2),
         "box_point": ("box_point.h", {}, {"action_kind": "box", "action_dims": 2}, 1, 3)}
ENVS = 5


@pytest.fixture(scope="module", params=list(CASES))
def built(request, tmp_path_factory):
    env_file, defines, head, agents, obs_size = CASES[request.param]
    spec = ref.PolicySpec(obs_size=obs_size, num_actions=0, kind="mlp", hidden=8, layers=1, **head)
    flags = [f"-I{native.NATIVE_DIR}", f"-I{ENVS_DIR}", f'-DENV="{ENVS_DIR / env_file}"',
             *[f"-D{k}={v}" for k, v in {**defines, "POLICY_HEAD_SIZE": spec.head_size}.items()]]
    lib = build_harness(tmp_path_factory, HARNESS, flags)
    lib.emu_head_y.restype = lib.emu_slot_size.restype = int
    assert lib.emu_head_y() == spec.head_size + 1
    return spec, agents, lib


@pytest.mark.parametrize("rows,horizon,t", [(5, 4, 0), (5, 4, 1), (5, 4, 3), (3, 2, 2)])
def test_step_ts_action_slice_is_its_rows_of_the_actions_buffer(built, rows, horizon, t):
    """rollout_common.cu's step_slices for an env whose actions are values (Box, MultiDiscrete): step t's actions
    at t * R rows of the (T, R, dims) buffer of the env's action type, not t * R int32s."""
    spec, _, lib = built
    lib.emu_action_slice_bytes.restype = ctypes.c_longlong
    row_bytes = spec.action_shape[0] * np.dtype(spec.action_dtype).itemsize
    assert lib.emu_action_slice_bytes(rows, horizon, t) == t * rows * row_bytes


def test_each_agents_draw_and_value_take_its_decoder_row_plus_the_decoder_bias(built):
    """The actions, log-probabilities and values the step writes are heads.sample_head's on (y + dec_bias) (a Box
    head's log-stds after the bias) and (y + dec_bias)'s value column, for every agent of every env over steps
    with the bias far from 0 (the GEMM leaves the bias to this kernel); and those actions reach the env (its rewards
    and observations show them) and its episode ends reach the done flags."""
    spec, agents, lib = built
    rows, head_y = ENVS * agents, spec.head_size + 1
    rng, key = np.random.default_rng(4), sampling_key(21)
    slots = np.zeros((ENVS, lib.emu_slot_size()), np.uint8)
    env_obs = np.zeros((rows, spec.obs_size), np.float32)
    call(lib.emu_reset, ENVS, slots, np.arange(ENVS, dtype=np.uint64) + 3, env_obs)
    scalars = np.zeros(SCALARS_DTYPE.itemsize, np.uint8)
    terminated, truncated = np.zeros(ENVS, np.uint8), np.zeros(ENVS, np.uint8)
    ep_return, ep_length = np.zeros(rows, np.float32), np.zeros(ENVS, np.int32)
    ep_stats, acc = np.zeros((ENVS, 1), np.float32), np.zeros(3 + 1 + agents)
    dims = len(spec.action_shape) and spec.action_shape[0]
    actions = np.zeros((rows, dims), spec.action_dtype)
    logp, values = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    rewards, dones, starts = (np.zeros(rows, np.float32) for _ in range(3))
    logstd_width = spec.action_dims if spec.action_kind == "box" else 0
    returns = np.zeros(rows)
    for t in range(5):
        y = (rng.standard_normal((rows, head_y)) * 2).astype(np.float32)
        bias = rng.uniform(1.0, 3.0, head_y + logstd_width) * rng.choice([-1, 1], head_y + logstd_width)
        bias[head_y:] = rng.uniform(-1.0, 0.5, logstd_width)  # a Box head's log-stds
        bias = bias.astype(np.float32)
        final_obs = np.zeros((rows, spec.obs_size), np.float32)
        call(lib.emu_rollout_step, ENVS, t, y, bias, slots, final_obs, terminated, truncated, ep_return, ep_length,
             ep_stats, acc, scalars, np.uint64(key), 1000, env_obs, actions, logp, values, rewards, dones, starts,
             None)
        out = y + bias[:head_y]
        dist = out[:, :spec.head_size]
        if logstd_width:
            dist = np.concatenate([dist, np.broadcast_to(bias[head_y:], (rows, logstd_width))], axis=1)
        want, want_logp = heads.sample_head(spec, dist, head_uniforms(spec, key, rows, t))
        if spec.action_kind == "box":
            assert rel_err(actions, want) <= 1e-5, t
        else:
            assert np.array_equal(actions, want), t
        assert rel_err(logp, want_logp) <= 1e-5, t
        assert np.array_equal(values, out[:, spec.head_size]), t
        if spec.action_kind == "multi_discrete":  # reward 10 * a0 + a1; every episode ends after its 4th step
            assert np.array_equal(rewards, 10 * actions[:, 0] + actions[:, 1]), t
            assert np.array_equal(dones, np.full(rows, float(t == 3), np.float32)), t
            assert np.array_equal(starts, dones), t
            returns += rewards
            if t == 3:  # every env's episode ended: the accumulators hold them
                by_agent = returns.reshape(ENVS, agents)
                assert acc[0] == ENVS and acc[2] == 4 * ENVS
                assert acc[1] == pytest.approx(by_agent.mean(1).sum()) and np.allclose(acc[3:3 + agents], by_agent.sum(0))
                assert acc[-1] == 0  # the env has no statistics: nothing after the agents' sums
        else:  # the observation shows the gain, action 1 clipped to [0, 1] (no episode ends this soon)
            assert np.array_equal(env_obs[:, 2], np.clip(actions[:, 1], 0, 1)), t
            assert not dones.any(), t


def test_host_sample_draws_a_groups_rows_with_their_own_row_and_step_counters(built):
    """host_sample_kernel (host environments: the draw before the host steps the group) on a group starting at row
    row0, in blocks the rows do not fill: row row0 + j's action and log-probability are heads.sample_head's with
    the uniforms of global row row0 + j at step rollout_steps + t, its value the decoder row's value column; nothing
    after the group's rows is written."""
    spec, _, lib = built
    rows, row0, t, head_y = 7, 5, 2, spec.head_size + 1
    rng, key = np.random.default_rng(8), sampling_key(33)
    y = (rng.standard_normal((rows, head_y)) * 2).astype(np.float32)
    logstd = rng.uniform(-1.0, 0.5, max(spec.action_dims, 1)).astype(np.float32)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["rollout_steps"] = 11
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    dims = spec.action_shape[0]
    actions = np.full((rows + 1, dims), -5, spec.action_dtype)
    logp, values = np.full(rows + 1, 7.0, np.float32), np.full(rows + 1, 7.0, np.float32)
    call(lib.emu_host_sample, 4, rows, row0, y, logstd, actions, logp, values, scalars, t, np.uint64(key))
    dist = y[:, :spec.head_size]
    if spec.action_kind == "box":
        dist = np.concatenate([dist, np.broadcast_to(logstd, (rows, spec.action_dims))], axis=1)
    want, want_logp = heads.sample_head(spec, dist, head_uniforms(spec, key, row0 + rows, 11 + t)[row0:])
    assert rel_err(actions[:rows], want) <= 1e-5 if spec.action_kind == "box" else np.array_equal(actions[:rows], want)
    assert rel_err(logp[:rows], want_logp) <= 1e-5
    assert np.array_equal(values[:rows], y[:, spec.head_size])
    assert (actions[rows] == -5).all() and logp[rows] == 7.0 and values[rows] == 7.0


@pytest.mark.parametrize("clamp", [0, 1])
def test_host_record_copies_the_groups_outcome_and_adds_its_finished_episodes(built, clamp):
    """host_record_kernel (the host's step outputs copied up): the next observations as given, the rewards (clamped
    to [-1, 1] with train.reward_clamp), every row's done and next-start flag from its env's terminated or truncated,
    and the accumulators: finished episodes, the sum of their mean-over-agents returns, of their lengths, of each
    statistic, and each agent's sum of returns. No observation past the group's is copied."""
    spec, agents, lib = built
    n, stats = 9, 2
    rows = n * agents
    rng = np.random.default_rng(9 + clamp)
    obs_in = rng.standard_normal((rows + 1, spec.obs_size)).astype(np.float32)  # a row of another array after
    rewards_in = (rng.standard_normal(rows) * 3).astype(np.float32)
    ep_return = (rng.standard_normal(rows) * 5).astype(np.float32)
    ep_stats = rng.standard_normal((n, stats)).astype(np.float32)
    ep_length = rng.integers(1, 50, n).astype(np.int32)
    terminated, truncated = (rng.random(n) < 0.4).astype(np.uint8), (rng.random(n) < 0.3).astype(np.uint8)
    terminated[0], truncated[0], terminated[1], truncated[1] = 1, 0, 0, 1  # each kind of ending at least once
    obs_next = np.zeros_like(obs_in)  # the group's rows, then a row past them: left alone
    rewards, dones, starts = (np.full(rows, 5.0, np.float32) for _ in range(3))
    acc = np.zeros(3 + stats + agents + 1)
    call(lib.emu_host_record, n, obs_in, rewards_in, ep_return, ep_stats, ep_length, terminated, truncated, obs_next,
         rewards, dones, starts, acc, stats, clamp)
    done = (terminated | truncated).astype(bool)
    assert np.array_equal(obs_next[:rows], obs_in[:rows]) and (obs_next[rows:] == 0).all()
    assert np.array_equal(rewards, np.clip(rewards_in, -1, 1) if clamp else rewards_in)
    assert np.array_equal(dones, np.repeat(done, agents).astype(np.float32)) and np.array_equal(starts, dones)
    per_agent = ep_return.reshape(n, agents)[done]
    assert acc[0] == done.sum() and acc[2] == ep_length[done].sum()
    assert acc[1] == pytest.approx(per_agent.mean(1).sum(), rel=1e-6)
    assert np.allclose(acc[3:3 + stats], ep_stats[done].sum(0), rtol=1e-6)
    assert np.allclose(acc[3 + stats:3 + stats + agents], per_agent.sum(0), rtol=1e-6) and acc[-1] == 0
