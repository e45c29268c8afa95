"""The CUDA trainer's policy kernels at their edges, built for the CPU (policy_edges_on_cpu.cpp): an element-wise
launch writes exactly its elements, not the one past them, and a categorical distribution whose first logit
dominates the others by far (exp overflows without the max subtracted) keeps finite log-probabilities and gradients."""

from pathlib import Path

import numpy as np
import pytest
from conftest import mingru_layer_case
from test_heads_kernels import DISCRETE, MULTI, build_harness, call, rel_err

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE
from fastvec.trainer.cuda.policy import MLP_ACTIVATIONS

HARNESS = Path(__file__).resolve().parent / "policy_edges_on_cpu.cpp"
GUARD = 7.0  # written past each output; a kernel that leaves it alone stays inside its array


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS)


def guarded(shape, fill=0.0, guard=GUARD) -> np.ndarray:
    """A float32 array of `shape` (a view) at the front of a buffer with one more element, set to `guard`."""
    size = int(np.prod(shape))
    buf = np.full(size + 1, fill, np.float32)
    buf[size] = guard
    return buf


@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("rows, h", [(333, 24), (5, 3), (32, 8)], ids=["ragged-blocks", "under-a-block", "whole-block"])
def test_mlp_layer_kernels_write_exactly_their_rows_times_h_elements(emu, activation, rows, h):
    """mlp_forward_kernel and mlp_backward_kernel on rows * H elements (a partial last block of 256 threads, less
    than a block, exactly one block): the element past the outputs keeps its value, while the element past the
    inputs holds a value that would be written there (a positive output and a gradient of 3)."""
    rng = np.random.default_rng(11)
    count = rows * h
    pre = guarded((rows, h), guard=2.0)
    pre[:count] = rng.standard_normal(count) * 2
    bias = rng.standard_normal(h).astype(np.float32)
    dout = guarded((rows, h), guard=3.0)
    dout[:count] = rng.standard_normal(count)
    out, dpre = guarded((rows, h)), guarded((rows, h))
    call(emu.emu_mlp, np.int64(rows), h, pre, bias, out, dout, dpre, MLP_ACTIVATIONS[activation])
    want = ref.activate(pre[:count].reshape(rows, h) + bias, activation)
    np.testing.assert_allclose(out[:count].reshape(rows, h), want, rtol=0, atol=2.5e-7 if activation == "tanh" else 0)
    assert np.array_equal(dpre[:count].reshape(rows, h),
                          ref.activation_grad(dout[:count].reshape(rows, h), out[:count].reshape(rows, h), activation))
    assert out[count] == GUARD and dpre[count] == GUARD


def test_bias_grad_writes_exactly_its_rows_and_columns(emu):
    """bias_grad_kernel with an MLP layer's activation (dpre written) over rows that do not fill its lanes: dpre's
    element past the rows and db's past the columns keep their values."""
    rng = np.random.default_rng(12)
    rows, cols, blocks = 37, 24, 3
    dout = guarded((rows, cols), guard=3.0)
    dout[:-1] = rng.standard_normal(rows * cols)
    out = guarded((rows, cols), guard=1.0)
    out[:-1] = np.maximum(rng.standard_normal(rows * cols), 0)
    dpre, db = guarded((rows, cols)), guarded((cols,))
    partial, counter = np.zeros(blocks * cols), np.zeros(1, np.uint32)
    call(emu.emu_bias_grad, np.int64(rows), cols, blocks, dout, out, dpre, partial, counter, db,
         MLP_ACTIVATIONS["relu"])
    want = ref.activation_grad(dout[:-1].reshape(rows, cols), out[:-1].reshape(rows, cols), "relu")
    assert np.array_equal(dpre[:-1].reshape(rows, cols), want)
    np.testing.assert_allclose(db[:-1], want.astype(np.float64).sum(0), rtol=0, atol=1e-5 * np.sqrt(rows))
    assert dpre[-1] == GUARD and db[-1] == GUARD


def dominant_first_logits(rng, rows: int, width: int, offsets=(0,)) -> np.ndarray:
    """A decoder output (rows, width): logits near 0, with the first logit of each categorical (at `offsets`) 100
    above the rest in even rows (exp(100) overflows float32) and 100 below in odd rows; the last column, the value,
    a large return (500) that is no logit: a categorical that took it in would overflow or underflow."""
    y = rng.standard_normal((rows, width)).astype(np.float32)
    for o in offsets:
        y[0::2, o] += 100.0
        y[1::2, o] -= 100.0
    y[:, -1] += 500.0
    return y


def test_discrete_sampler_takes_a_dominant_first_action_with_log_probability_zero(emu):
    """sample_row on logits whose first is 100 above the rest: action 0 with log-probability ~0 (reference
    sample_actions); 100 below: another action, the first's probability underflowing to 0."""
    rng = np.random.default_rng(13)
    rows, a = 64, 5
    y = dominant_first_logits(rng, rows, a + 1)
    u = rng.uniform(0, 1, rows).astype(np.float32)
    actions, logp = np.zeros(rows, np.int32), np.zeros(rows, np.float32)
    call(emu.emu_sample_row, rows, a, a + 1, y, u, actions, logp)
    want_actions, want_logp = ref.sample_actions(y[:, :a], u)
    assert np.array_equal(actions, want_actions)
    assert (actions[0::2] == 0).all() and (actions[1::2] != 0).all()
    assert np.isfinite(logp).all()
    np.testing.assert_allclose(logp, want_logp, rtol=1e-5, atol=1e-5)


def test_ppo_loss_is_finite_and_the_references_when_the_first_logit_dominates(emu):
    """ppo_loss_kernel (Discrete head) on such logits: new log-probabilities, the logits' gradient and the value
    column's gradient against reference.ppo_loss, all finite."""
    rng = np.random.default_rng(14)
    n, a = 300, DISCRETE.num_actions
    y = dominant_first_logits(rng, n, a + 1)
    actions = rng.integers(0, a, n).astype(np.int32)
    actions[0::4] = 0
    logp_now = ref.action_log_prob(DISCRETE, y[:, :a], actions)
    old_logp = (logp_now + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    _, dlogits, dvalues, _ = ref.ppo_loss(y[:, :a], y[:, -1], actions, old_logp, old_values, adv, returns, 0.2, 0.2,
                                          0.5, 0.01, spec=DISCRETE)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = 0.01
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    dy, new_logp = np.zeros((n, a + 1), np.float32), np.zeros(n, np.float32)
    src = np.arange(n, dtype=np.int32)
    call(emu.emu_ppo_loss, n, a, y, actions, old_logp, old_values, adv, returns, None, scalars, np.float32(0.2),
         np.float32(0.2), np.float32(0.5), dy, None, None, new_logp, src)
    assert np.isfinite(dy).all() and np.isfinite(new_logp).all()
    np.testing.assert_allclose(new_logp, logp_now, rtol=1e-5, atol=1e-5)
    assert rel_err(dy[:, :a], dlogits) <= 1e-5
    assert rel_err(dy[:, a], dvalues) <= 1e-6


def test_multi_discrete_head_is_finite_and_the_references_when_each_first_logit_dominates(emu):
    """heads.cu's MultiDiscrete sampler and ppo_loss_head_kernel with each dimension's first logit far above or
    below the rest: the reference's actions, log-probabilities and gradient, all finite."""
    rng = np.random.default_rng(15)
    n, d, width = 200, len(MULTI.action_nvec), MULTI.head_size + 1
    offsets = np.concatenate([[0], np.cumsum(MULTI.action_nvec)[:-1]])
    y = dominant_first_logits(rng, n, width, offsets)
    key, step = ref.sampling_key(6), 3
    got, logp = np.zeros((n, d), np.int64), np.zeros(n, np.float32)
    call(emu.emu_sample_multi_discrete, n, d, width, y, np.asarray(MULTI.action_nvec, np.int64), np.uint64(key),
         np.int64(step), got, logp)
    dist = y[:, :MULTI.head_size]
    want, _ = ref.sample_head(MULTI, dist, ref.head_uniforms(MULTI, key, n, step))
    assert np.array_equal(got, want) and (got[0::2] == 0).all() and (got[1::2] != 0).all()
    logp_now = ref.action_log_prob(MULTI, dist, got)
    assert np.isfinite(logp).all()
    np.testing.assert_allclose(logp, logp_now, rtol=1e-5, atol=1e-5)

    old_logp = (logp_now + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    _, dlogits, dvalues, _ = ref.ppo_loss(dist, y[:, -1], got, old_logp, old_values, adv, returns, 0.2, 0.2, 0.5,
                                          0.01, spec=MULTI)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = 0.01
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    dy, new_logp = np.zeros((n, width), np.float32), np.zeros(n, np.float32)
    call(emu.emu_ppo_loss_head, n, 1, d, width, y, got, np.asarray(MULTI.action_nvec, np.int64), None, old_logp,
         old_values, adv, returns, None, scalars, np.float32(0.2), np.float32(0.2), np.float32(0.5), dy, None, None,
         None, new_logp, np.arange(n, dtype=np.int32))
    assert np.isfinite(dy).all() and np.isfinite(new_logp).all()
    np.testing.assert_allclose(new_logp, logp_now, rtol=1e-5, atol=1e-5)
    assert rel_err(dy[:, :-1], dlogits) <= 1e-5
    assert rel_err(dy[:, -1], dvalues) <= 1e-6


BF16_GUARD = 0x4321  # bfloat16 bits past a bf16 output


def to_bf16(x) -> np.ndarray:
    """bfloat16 bits (uint16) of float32 x, rounded to nearest, ties to even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def guarded_bf16(size: int) -> np.ndarray:
    buf = np.zeros(size + 1, np.uint16)
    buf[size] = BF16_GUARD
    return buf


@pytest.mark.parametrize("n", [1, 300, 512])
def test_fill_sets_exactly_n_elements(emu, n):
    x = guarded((n,))
    call(emu.emu_fill, x, np.int64(n), np.float32(2.5))
    assert (x[:n] == 2.5).all() and x[n] == GUARD


@pytest.mark.parametrize("with_bf16", [False, True], ids=["fp32", "with-bf16-copy"])
def test_add_bias_adds_each_columns_bias_to_exactly_its_elements(emu, with_bf16):
    """y (rows, cols) += bias over a partial last block: column c gets bias[c]; with a bf16 copy, the copy holds the
    sums rounded to nearest even; nothing past either array changes."""
    rng = np.random.default_rng(16)
    rows, cols = 37, 7
    y = guarded((rows, cols))
    y[:-1] = rng.standard_normal(rows * cols)
    bias = rng.standard_normal(cols).astype(np.float32)
    want = y[:-1].reshape(rows, cols) + bias
    y_bf16 = guarded_bf16(rows * cols) if with_bf16 else None
    call(emu.emu_add_bias, y, bias, np.int64(rows), cols, y_bf16)
    assert np.array_equal(y[:-1].reshape(rows, cols), want) and y[-1] == GUARD
    if with_bf16:
        assert np.array_equal(y_bf16[:-1], to_bf16(want).ravel()) and y_bf16[-1] == BF16_GUARD


def test_to_bf16_rounds_exactly_n_elements_to_nearest_even(emu):
    rng = np.random.default_rng(17)
    n = 300
    src = rng.standard_normal(n).astype(np.float32)
    bits = src.view(np.uint32)
    bits[:8] = (bits[:8] & 0xFFFF0000) | 0x8000  # exact ties: half round up (odd), half stay (even)
    dst = guarded_bf16(n)
    call(emu.emu_to_bf16, np.int64(n), src, dst)
    assert np.array_equal(dst[:n], to_bf16(src)) and dst[n] == BF16_GUARD
    assert ((dst[:8] & 1) == 0).all()  # every tie went to an even value


@pytest.mark.parametrize("highway", [False, True], ids=["mingru", "mingru-highway"])
def test_mingru_layer_kernels_match_the_reference_and_stay_in_their_arrays(emu, highway):
    """mingru_forward_kernel and mingru_backward_kernel over B * H threads (a partial last block): the outputs, the
    state after the last step, dx (with the trainer's dpre @ w added), dw, db and each sequence's bias sums against
    reference.mingru_forward / mingru_backward, and no element past any output array written."""
    c = mingru_layer_case(highway, seed=18)
    steps, b, h, w_rows, x, w, bias, starts, h0, dout, pre = (c.steps, c.b, c.h, c.w_rows, c.x, c.w, c.bias, c.starts,
                                                                c.h0, c.dout, c.pre)
    out_ref, last_ref, dx_ref, dw_ref, db_ref = c.out_ref, c.last_ref, c.dx_ref, c.dw_ref, c.db_ref

    states, out, last = guarded((steps, b, h)), guarded((steps, b, h)), guarded((b, h))
    out_bf16 = guarded_bf16(steps * b * h)
    call(emu.emu_mingru_forward, steps, b, h, int(highway), x, pre, bias, starts, h0, states, out, last, out_bf16)
    assert rel_err(out[:-1].reshape(steps, b, h), out_ref) <= 1e-5
    assert rel_err(last[:-1].reshape(b, h), last_ref) <= 1e-5
    assert np.array_equal(out_bf16[:-1], to_bf16(out[:-1]))
    assert states[-1] == GUARD and out[-1] == GUARD and last[-1] == GUARD and out_bf16[-1] == BF16_GUARD

    dpre, dx, dbias_seq = guarded((steps, b, w_rows)), guarded((steps, b, h)), guarded((b, w_rows))
    call(emu.emu_mingru_backward, steps, b, h, int(highway), dout, x, pre, bias, starts, h0, states, dpre, dx,
         dbias_seq)
    assert dpre[-1] == GUARD and dx[-1] == GUARD and dbias_seq[-1] == GUARD
    rows = dpre[:-1].reshape(-1, w_rows).astype(np.float64)
    assert rel_err(dx[:-1].reshape(steps, b, h) + (rows @ w).reshape(steps, b, h), dx_ref) <= 1e-5
    assert rel_err(rows.T @ x.reshape(-1, h), dw_ref) <= 1e-5
    assert rel_err(rows.sum(0), db_ref) <= 1e-5
    assert rel_err(dbias_seq[:-1].reshape(b, w_rows), rows.reshape(steps, b, w_rows).sum(0)) <= 1e-5
