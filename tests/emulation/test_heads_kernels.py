"""The CUDA trainer's MultiDiscrete and Box heads and its running normalisation (fastvec/trainer/cuda/heads.cu,
normalize.cu, and ppo.cu's gather of multi-word actions and byte observations) without a GPU: built for the CPU by
tests/emulation/heads_on_cpu.cpp and compared with the NumPy reference (heads.py, normalize.py, reference.py) on
random inputs. tests/trainer/test_cuda_heads.py checks the same kernels, and the whole trainer, on the device.
Skipped without a C++20 compiler or CUDA's headers (common.cu's bfloat16 type)."""

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import minibatch_sources

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import BIAS_GRAD_BLOCKS, SCALARS_DTYPE, gather_threads
from fastvec.trainer.cuda.policy import MLP_ACTIVATIONS

HARNESS = Path(__file__).resolve().parent / "heads_on_cpu.cpp"
CUDA_DIR = Path(ref.__file__).parent / "cuda"
HEAD_KINDS = {"multi_discrete": 1, "box": 2}
BOX = ref.PolicySpec(obs_size=3, num_actions=0, action_kind="box", action_dims=3)
MULTI = ref.PolicySpec(obs_size=3, num_actions=0, action_kind="multi_discrete", action_nvec=(3, 5, 2))
DISCRETE = ref.PolicySpec(obs_size=3, num_actions=5)


def cuda_include() -> Path | None:
    nvcc = shutil.which("nvcc")
    for root in ([Path(nvcc).resolve().parent.parent] if nvcc else []) + [Path("/usr/local/cuda")]:
        if (root / "include" / "cuda_bf16.h").is_file():
            return root / "include"
    return None


def build_harness(tmp_path_factory, harness: Path, flags=(), cuda_headers: bool = True, load: bool = True):
    """A CPU-emulation harness (a .cpp including the trainer's .cu files through cuda_on_cpu.h) built as a shared
    library with the trainer's kernel directory (and CUDA's headers, for bf16) on the include path, plus flags;
    skipped where there is no C++20 compiler or no CUDA headers. Loaded, or (load=False) its path."""
    cxx, include = shutil.which("g++") or shutil.which("c++"), cuda_include() if cuda_headers else None
    if cxx is None or (cuda_headers and include is None):
        pytest.skip("no C++ compiler or no CUDA headers")
    out = tmp_path_factory.mktemp(harness.stem) / "emu.so"
    cmd = [cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-ffp-contract=off", f"-I{CUDA_DIR}",
           *([f"-I{include}"] if include else []), *flags, str(harness), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode and "barrier" in proc.stderr:
        pytest.skip(f"{cxx} has no C++20 <barrier>")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ctypes.CDLL(str(out)) if load else out


def asan_runtime() -> str:
    """The C++ compiler's AddressSanitizer runtime (libasan.so), to preload into a child that loads a harness built
    with -fsanitize=address; skipped where there is no compiler or no runtime."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    runtime = subprocess.run([cxx, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip(f"{cxx} has no AddressSanitizer runtime")
    return runtime


def run_under_asan(runtime: str, code: str, *args) -> None:
    """`python -c code args...` with libasan preloaded (so NumPy's buffers have red zones too): it must print ok
    and exit 0, or the assertion shows AddressSanitizer's report."""
    env = dict(os.environ, LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0")
    child = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                           timeout=120, env=env)
    report = [line for line in child.stderr.splitlines() if "ERROR: AddressSanitizer" in line or " #" in line][:8]
    assert child.returncode == 0 and child.stdout.strip() == "ok", (child.returncode, report or child.stderr[-2000:])


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS)


def call(fn, *args) -> None:
    """fn(*args) with each argument as its C type: arrays by address, NumPy scalars by their width, ints as int."""
    types = {np.int64: ctypes.c_longlong, np.uint64: ctypes.c_ulonglong, np.float64: ctypes.c_double,
             np.float32: ctypes.c_float, np.int32: ctypes.c_int}
    converted = []
    for x in args:
        if isinstance(x, np.ndarray):
            assert x.flags.c_contiguous
            converted.append(ctypes.c_void_p(x.ctypes.data))
        elif x is None:
            converted.append(ctypes.c_void_p(0))
        elif type(x) in types:
            converted.append(types[type(x)](x))
        else:
            converted.append(ctypes.c_int(x))
    fn.restype = None
    fn(*converted)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@pytest.mark.parametrize("spec", [BOX, MULTI], ids=["box", "multi_discrete"])
def test_samplers_draw_the_reference_actions_from_the_counter_uniforms(emu, spec):
    rng = np.random.default_rng(1)
    rows, d, step, key = 600, spec.action_shape[0], 9, ref.sampling_key(4)
    y = rng.standard_normal((rows, spec.head_size + 1)).astype(np.float32)
    logp = np.zeros(rows, np.float32)
    if spec.action_kind == "box":
        logstd = (rng.standard_normal(d) * 0.5).astype(np.float32)
        got = np.zeros((rows, d), np.float32)
        call(emu.emu_sample_box, rows, d, spec.head_size + 1, y, logstd, np.uint64(key), np.int64(step), got, logp)
        dist = np.concatenate([y[:, :d], np.broadcast_to(logstd, (rows, d))], -1)
    else:
        got = np.zeros((rows, d), np.int64)
        call(emu.emu_sample_multi_discrete, rows, d, spec.head_size + 1, y, np.asarray(spec.action_nvec, np.int64),
             np.uint64(key), np.int64(step), got, logp)
        dist = y[:, :spec.head_size]
    want, _ = ref.sample_head(spec, dist, ref.head_uniforms(spec, key, rows, step))
    if spec.action_kind == "box":  # float32 exp and the Box-Muller in double: within a few ulps
        assert rel_err(got, want) <= 1e-6
    else:
        assert np.array_equal(got, want)
    assert rel_err(logp, ref.action_log_prob(spec, dist, got)) <= 1e-6


@pytest.mark.parametrize("spec", [BOX, MULTI, DISCRETE], ids=["box", "multi_discrete", "discrete"])
def test_ppo_loss_head_kernel_matches_ppo_loss(emu, spec):
    """dy (head columns, value), a Box head's per-row log-std gradient, the five statistics (finished by the last
    block) and the V-trace scatter, against reference.ppo_loss(spec=...) with normalised advantages; a Discrete
    head through ppo.cu's ppo_loss_kernel, which shares the per-row policy and value terms and the statistics."""
    rng = np.random.default_rng(2)
    n, d, width = 700, (spec.action_shape or (1,))[0], spec.head_size + 1
    y = rng.standard_normal((n, width)).astype(np.float32)
    logstd = (rng.standard_normal(d) * 0.3).astype(np.float32)
    if spec.action_kind == "box":
        dist = np.concatenate([y[:, :d], np.broadcast_to(logstd, (n, d))], -1)
        actions = (y[:, :d] + np.exp(logstd) * rng.standard_normal((n, d))).astype(np.float32)
    elif spec.action_kind == "multi_discrete":
        dist = y[:, :spec.head_size]
        actions = np.stack([rng.integers(0, m, n) for m in spec.action_nvec], -1).astype(np.int64)
    else:
        dist = y[:, :spec.head_size]
        actions = rng.integers(0, spec.num_actions, n).astype(np.int32)
    old_logp = (ref.action_log_prob(spec, dist, actions) + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = (rng.standard_normal(n) * 2 + 0.5).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    moments = np.array([adv.astype(np.float64).mean(), adv.astype(np.float64).std()], np.float32)
    adv_n = ((adv - moments[0]) / (moments[1] + np.float32(1e-8))).astype(np.float32)
    _, dlogits, dvalues, stats = ref.ppo_loss(dist, y[:, -1], actions, old_logp, old_values, adv_n, returns, 0.2, 0.2,
                                             0.5, 0.01, spec=spec)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = 0.01
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    dy, dlogstd, new_logp = np.zeros((n, width), np.float32), np.zeros((n, d), np.float32), np.zeros(n, np.float32)
    src = rng.permutation(n).astype(np.int32)
    blocks = -(-n // 256)
    clips = (np.float32(0.2), np.float32(0.2), np.float32(0.5))
    if spec.action_kind == "discrete":
        call(emu.emu_ppo_loss, n, spec.num_actions, y, actions, old_logp, old_values, adv, returns, moments, scalars,
             *clips, dy, np.zeros(5 * blocks), np.zeros(1, np.uint32), new_logp, src)
    else:
        call(emu.emu_ppo_loss_head, n, HEAD_KINDS[spec.action_kind], d, width, y,
             np.ascontiguousarray(actions.view(np.int32)), np.asarray(spec.action_nvec or (1,), np.int64), logstd,
             old_logp, old_values, adv, returns, moments, scalars, *clips, dy, dlogstd, np.zeros(5 * blocks),
             np.zeros(1, np.uint32), new_logp, src)
    assert rel_err(dy[:, :spec.head_size], dlogits[:, :spec.head_size]) <= 1e-5
    assert rel_err(dy[:, -1], dvalues) <= 1e-6
    if spec.action_kind == "box":
        assert rel_err(dlogstd, dlogits[:, d:]) <= 1e-5
    scattered = np.empty(n, np.float32)
    scattered[src] = ref.action_log_prob(spec, dist, actions)
    assert rel_err(new_logp, scattered) <= 1e-6
    got = np.frombuffer(scalars.tobytes(), SCALARS_DTYPE)[0]["stat"]
    for i, key in enumerate(["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"]):
        assert abs(got[i] - stats[key]) <= 1e-5 * max(abs(stats[key]), 1.0), key


def byte_rollout(rng, t_len, rows, size):
    """Byte observations (T, R, O) and the float rollout buffer holding them as the trainer does: each step's
    R * O bytes at its float offset t * R * O (rollout.cu's step_obs)."""
    raw = rng.integers(0, 256, (t_len, rows, size)).astype(np.uint8)
    buf = np.zeros((t_len, rows, size), np.float32)
    buf.view(np.uint8).reshape(t_len, rows * size * 4)[:, :rows * size] = raw.reshape(t_len, rows * size)
    return raw, buf


@pytest.mark.parametrize("threads", ["rows", "planned", "surplus"])
@pytest.mark.parametrize("obs_bytes", [0, 1], ids=["float-obs", "byte-obs"])
def test_gather_copies_multi_word_actions_and_byte_observations(emu, obs_bytes, threads):
    """On a thread a row, on the trainer's count (plan.gather_threads: here 93 threads for 20 rows, the observations
    copied grid-stride) and on more threads than elements."""
    rng = np.random.default_rng(3)
    t_len, r, o, kk, bm, first = 8, 6, 37, 4, 5, 3
    raw, buf = byte_rollout(rng, t_len, r, o)
    obs = buf if obs_bytes else rng.standard_normal((t_len, r, o)).astype(np.float32)
    perm = rng.permutation((t_len // kk) * r).astype(np.int32)
    src = minibatch_sources(perm, first, bm, r, kk).reshape(-1)
    for actions in [rng.standard_normal((t_len, r, 2)).astype(np.float32),
                    rng.integers(-2**40, 2**40, (t_len, r, 3)).astype(np.int64)]:
        words = actions.itemsize * actions.shape[-1] // 4
        rows_in = [rng.standard_normal((t_len, r)).astype(np.float32) for _ in range(5)]  # starts logp values adv ret
        n = kk * bm
        mb_obs, mb_actions, mb_src = np.zeros((n, o), np.float32), np.zeros((n, words), np.int32), np.zeros(n, np.int32)
        mb_rows = [np.zeros(n, np.float32) for _ in range(5)]
        count = {"rows": n, "planned": gather_threads(n, o), "surplus": 3 * n * o}[threads]
        call(emu.emu_gather, np.int64(count), kk, bm, r, o, first, words, obs_bytes, perm, obs, rows_in[0],
             np.ascontiguousarray(actions.view(np.int32)), *rows_in[1:], mb_obs, mb_rows[0], mb_actions, *mb_rows[1:],
             mb_src)
        assert np.array_equal(mb_src, src)
        want_obs = raw.reshape(-1, o)[src].astype(np.float32) if obs_bytes else obs.reshape(-1, o)[src]
        assert np.array_equal(mb_obs, want_obs)
        assert np.array_equal(mb_actions.view(actions.dtype), actions.reshape(t_len * r, -1)[src])
        for got, want in zip(mb_rows, rows_in):
            assert np.array_equal(got, want.reshape(-1)[src])


def test_the_gather_finishes_the_minibatchs_advantage_moments(emu):
    """With adv_moments, gather_minibatch_kernel also leaves the gathered advantages' float32 mean and population std
    (NumPy's in float64), summed over its blocks (here 6 of 256 threads) and finished by the last one."""
    rng = np.random.default_rng(17)
    t_len, r, o, kk, bm, first = 16, 100, 3, 8, 180, 10
    perm = rng.permutation((t_len // kk) * r).astype(np.int32)
    rows_in = [rng.standard_normal((t_len, r)).astype(np.float32) for _ in range(5)]  # starts logp values adv ret
    rows_in[3] = rows_in[3] * 2 + 0.7
    n = kk * bm
    outs = [np.zeros((n, o), np.float32)] + [np.zeros(n, np.float32) for _ in range(6)] + [np.zeros(n, np.int32)]
    outs[2] = np.zeros(n, np.int32)
    moments, blocks = np.zeros(2, np.float32), -(-n // 256)
    call(emu.emu_gather_moments, np.int64(n), kk, bm, r, o, first, perm,
         rng.standard_normal((t_len, r, o)).astype(np.float32), rows_in[0], np.zeros((t_len, r), np.int32),
         *rows_in[1:], *outs, np.zeros(2 * blocks), np.zeros(1, np.uint32), moments)
    mb_adv = outs[5].astype(np.float64)
    assert np.array_equal(outs[5], rows_in[3].reshape(-1)[outs[7]]) and blocks == 6
    np.testing.assert_allclose(moments, [mb_adv.mean(), mb_adv.std()], rtol=2e-6)


@pytest.mark.parametrize("rows, cols, blocks", [(2048, 128, 32), (1000, 7, 3), (37, 300, 5), (4096, 64, BIAS_GRAD_BLOCKS)])
@pytest.mark.parametrize("masked", [None, "relu", "tanh"], ids=["plain", "relu", "tanh"])
def test_bias_grad_sums_columns_and_writes_the_masked_gradient(emu, rows, cols, blocks, masked):
    """policy.cu's bias_grad_kernel: db = the column sums of dout (with out: of dpre = reference.activation_grad of
    dout at the layer's output, which it writes), summed in double over blocks of rows, so within float32 rounding
    of NumPy's float64 sums; dpre exactly."""
    rng = np.random.default_rng(rows + cols)
    dout = rng.standard_normal((rows, cols)).astype(np.float32)
    out = rng.standard_normal((rows, cols)).astype(np.float32) if masked else None
    if masked == "tanh":
        out = np.tanh(out)  # a tanh layer's outputs lie in (-1, 1)
    dpre, db = np.zeros((rows, cols), np.float32), np.zeros(cols, np.float32)
    partial, counter = np.zeros(blocks * cols), np.zeros(1, np.uint32)
    call(emu.emu_bias_grad, np.int64(rows), cols, blocks, dout, out if masked else None, dpre if masked else None, partial,
         counter, db, MLP_ACTIVATIONS[masked or "relu"])
    want = ref.activation_grad(dout, out, masked) if masked else dout
    if masked:
        assert np.array_equal(dpre, want)
    np.testing.assert_allclose(db, want.astype(np.float64).sum(axis=0), rtol=0, atol=1e-5 * np.sqrt(rows))
    assert counter[0] == 0  # the finishing block resets the counter for the next launch


@pytest.mark.parametrize("activation", ["relu", "tanh"])
def test_mlp_layer_kernels_match_the_reference(emu, activation):
    """mlp_forward_kernel is reference.mlp_forward's activate(pre + b) (tanh within a float32 ulp or two: CUDA's tanhf
    against NumPy's), mlp_backward_kernel its activation_grad of dout at that output, exactly."""
    rng = np.random.default_rng(5)
    rows, h = 333, 24
    pre = (rng.standard_normal((rows, h)) * 2).astype(np.float32)
    bias, dout = rng.standard_normal(h).astype(np.float32), rng.standard_normal((rows, h)).astype(np.float32)
    out, dpre = np.zeros((rows, h), np.float32), np.zeros((rows, h), np.float32)
    call(emu.emu_mlp, np.int64(rows), h, pre, bias, out, dout, dpre, MLP_ACTIVATIONS[activation])
    want = ref.activate(pre + bias, activation)
    np.testing.assert_allclose(out, want, rtol=0, atol=2.5e-7 if activation == "tanh" else 0)
    assert np.array_equal(dpre, ref.activation_grad(dout, out, activation))
    assert (out < 0).any() == (activation == "tanh")


@pytest.mark.parametrize("obs_bytes", [0, 1], ids=["float-obs", "byte-obs"])
def test_observation_statistics_and_encoder_input_match_normalize(emu, obs_bytes):
    """obs_norm_update_kernel + obs_norm_count_kernel are normalize.update_obs_norm over two rollouts (bytes times
    1/255); encode_obs_kernel is reference.encoder_input with the statistics after them."""
    rng = np.random.default_rng(4)
    t_len, rows, o = 16, 20, 3
    scale = 1 / 255 if obs_bytes else 1.0
    spec = ref.PolicySpec(obs_size=o, num_actions=2, kind="mlp", hidden=8, layers=1, norm_obs=True, obs_scale=scale)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng))
    for _ in range(2):
        if obs_bytes:
            raw, obs = byte_rollout(rng, t_len, rows, o)
        else:
            raw = obs = (rng.standard_normal((t_len, rows, o)) * [1, 5, 0.1] + [0, 3, -2]).astype(np.float32)
        norm = np.concatenate([views["obs_norm.mean"], views["obs_norm.var"], views["obs_norm.count"]])
        call(emu.emu_obs_norm, np.int64(t_len * rows), o, rows, obs_bytes, obs, np.float64(scale), norm)
        ref.update_obs_norm(spec, views, raw)
        assert np.array_equal(norm, np.concatenate([views["obs_norm.mean"], views["obs_norm.var"],
                                                    views["obs_norm.count"]]))
    step = obs[3] if not obs_bytes else obs[3:]  # a step's rows, at the step's float address
    x = np.zeros((rows, o), np.float32)
    call(emu.emu_encode_obs, np.int64(rows), o, obs_bytes, np.ascontiguousarray(step), np.float32(scale), norm, x)
    assert np.array_equal(x, ref.encoder_input(spec, views, raw[3]))


def assert_scale_rewards_matches_reference(emu, rollouts, gamma):
    """The kernel over consecutive (rewards, dones) rollouts: its scaled rewards and carried returns the
    reference's bit for bit, its moments within 1e-12, state carried from one rollout to the next on both sides."""
    t_len, rows = rollouts[0][0].shape
    returns, moments = np.zeros(rows), (0.0, 1.0, 1e-4)
    k_returns, k_seen, k_moments = np.zeros(rows), np.zeros((t_len, rows)), np.array([0.0, 1.0, 1e-4, 0.0])
    for rewards, dones in rollouts:
        got = rewards.copy()
        call(emu.emu_scale_rewards, t_len, rows, got, dones, np.float64(gamma), k_returns, k_seen, k_moments)
        want, moments = ref.scale_rewards(rewards, dones, returns, moments, gamma)
        assert np.array_equal(k_returns, returns)
        assert rel_err(k_moments[:3], moments) <= 1e-12
        assert np.array_equal(got, want)


def test_reward_scaling_matches_scale_rewards_across_rollouts(emu):
    rng = np.random.default_rng(5)
    t_len, rows = 32, 50
    rollouts = [((rng.standard_normal((t_len, rows)) * scale).astype(np.float32),
                 (rng.random((t_len, rows)) < 0.05).astype(np.float32)) for scale in (1.0, 50.0, 0.01)]
    assert_scale_rewards_matches_reference(emu, rollouts, 0.97)


def test_statistics_of_values_far_from_zero_are_the_references_two_pass_moments(emu):
    """Observations around 1000 spread by 0.01 and returns around 1e5 spread by a few hundredths: the kernels'
    variances are normalize.merge_moments' (NumPy's two-pass var), with none of the cancellation of a one-pass
    sum of squares, which at these means is off by more than the spread itself."""
    rng = np.random.default_rng(6)
    t_len, rows, o = 7, 13, 2  # 91 values: a mean that is no exact power-of-two fraction of the sum
    spec = ref.PolicySpec(obs_size=o, num_actions=2, kind="mlp", hidden=8, layers=1, norm_obs=True)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng))
    views["obs_norm.mean"][...] = 1000  # statistics already near the data, as after many rollouts
    views["obs_norm.var"][...] = 1e-4
    obs = (1000 + rng.standard_normal((t_len, rows, o)) * 0.01).astype(np.float32)
    norm = np.concatenate([views["obs_norm.mean"], views["obs_norm.var"], views["obs_norm.count"]])
    call(emu.emu_obs_norm, np.int64(t_len * rows), o, rows, 0, obs, np.float64(1.0), norm)
    ref.update_obs_norm(spec, views, obs)
    assert 1e-5 < views["obs_norm.var"].min() < 1e-3
    assert np.array_equal(norm, np.concatenate([views["obs_norm.mean"], views["obs_norm.var"],
                                                views["obs_norm.count"]]))
    returns, moments = np.full(rows, 1e5), (1e5, 1e-3, 1.0)
    k_returns, k_seen, k_moments = returns.copy(), np.zeros((t_len, rows)), np.array([1e5, 1e-3, 1.0, 0.0])
    rewards = (rng.standard_normal((t_len, rows)) * 0.01).astype(np.float32)
    dones = np.zeros((t_len, rows), np.float32)
    call(emu.emu_scale_rewards, t_len, rows, rewards.copy(), dones, np.float64(1.0), k_returns, k_seen, k_moments)
    _, moments = ref.scale_rewards(rewards, dones, returns, moments, 1.0)
    assert 1e-4 < moments[1] < 1e-2
    assert abs(k_moments[1] - moments[1]) <= 1e-8 * moments[1] and np.array_equal(k_returns, returns)


@pytest.mark.parametrize("constant_returns", [False, True], ids=["spread", "constant"])
def test_explained_variance_kernels_match_the_reference(emu, constant_returns):
    """ppo.cu's explained variance (sums_partial_kernel, explained_variance_finish_kernel) of biased value predictions
    is reference.explained_variance of them: 1 - var(returns - values) / var(returns), NaN for constant returns."""
    n, blocks, rng = 3000, 8, np.random.default_rng(4)
    returns = np.full(n, 1.5, np.float32) if constant_returns else (rng.standard_normal(n) * 2 + 1).astype(np.float32)
    values = (returns * 0.7 + rng.standard_normal(n) * 0.5 - 0.8).astype(np.float32)  # off by a mean of about 1
    adv_returns = np.stack([returns - values, returns])
    scalars = np.frombuffer(np.zeros((), SCALARS_DTYPE).tobytes(), np.uint8).copy()
    call(emu.emu_explained_variance, np.int64(n), blocks, adv_returns, np.zeros(blocks * 4), scalars)
    got, want = scalars.view(SCALARS_DTYPE)[0]["stat"][7], ref.explained_variance(values, returns)
    if constant_returns:
        assert np.isnan(got) and np.isnan(want)
    else:
        assert 0.3 < want < 0.9 and abs(got - want) < 1e-6  # NumPy's variances of float32 are float32


@pytest.mark.parametrize("vtrace", [False, True], ids=["gae", "vtrace"])
def test_gae_kernel_matches_the_reference_over_every_step(emu, vtrace):
    """ppo.cu's gae_kernel (a thread a row, backward over T) gives reference.gae's advantages at every step, the
    last one (bootstrapped from the strided last values) included, and returns = advantages + values; episode ends
    cut the bootstrap; with V-trace the ratios are exp(new_logp - old_logp), clipped."""
    t_len, rows, gamma, lam, rng = 9, 37, 0.97, 0.9, np.random.default_rng(8)
    values, rewards = (rng.standard_normal((2, t_len, rows))).astype(np.float32)
    dones = (rng.random((t_len, rows)) < 0.2).astype(np.float32)
    decoder = rng.standard_normal((rows, 3)).astype(np.float32)  # the value column of a (R, 3) output
    new_logp, old_logp = (rng.standard_normal((2, t_len, rows)) * 0.3).astype(np.float32)
    adv, returns = np.full((t_len, rows), np.nan, np.float32), np.full((t_len, rows), np.nan, np.float32)
    call(emu.emu_gae, t_len, rows, values, np.ascontiguousarray(decoder.ravel()[2:]), 3, rewards, dones, new_logp,
         old_logp, adv, returns, np.float32(gamma), np.float32(lam), np.float32(gamma * lam), np.float32(1.0),
         np.float32(0.9), int(vtrace))
    ratios = np.exp(new_logp - old_logp) if vtrace else None
    want = ref.gae(values, decoder[:, 2], rewards, dones, gamma, lam, ratios, rho_clip=1.0, c_clip=0.9)
    np.testing.assert_allclose(adv, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(returns, want + values, rtol=1e-5, atol=1e-6)


def test_update_bookkeeping_kernels_follow_the_reference_schedule(emu):
    """begin_update_kernel zeroes all eight statistics and nothing else (the fields around them keep their values);
    schedule_kernel moves to the next update and sets its learning rate and entropy bonus as reference.annealed and
    ent_coef_at (zero past the last update, the base without annealing); advance_rollout_kernel adds a rollout's
    steps to the sampling counter."""
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["stat"] = np.arange(1, 9)
    scalars["lr"], scalars["rollout_steps"], scalars["update"] = 2e-3, 12345, 7
    raw = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    view = raw.view(SCALARS_DTYPE)[0]
    call(emu.emu_begin_update, raw)
    assert np.array_equal(view["stat"], np.zeros(8))
    assert (view["lr"], view["rollout_steps"], view["update"]) == (2e-3, 12345, 7)
    for num_updates, anneal_lr, anneal_ent in [(4, 1, 1), (4, 0, 1), (4, 1, 0), (2, 1, 1), (1, 1, 1), (0, 1, 1)]:
        view["update"] = 0
        for update in range(1, 6):  # the run's updates, then past its end
            call(emu.emu_schedule, raw, np.float64(3e-3), num_updates, anneal_lr, np.float64(0.01), anneal_ent)
            assert view["update"] == update
            assert view["lr"] == ref.annealed(3e-3, update, num_updates, bool(anneal_lr))
            assert float(view["ent_coef"]) == ref.ent_coef_at(0.01, update, num_updates, bool(anneal_ent))
    assert ref.annealed(3e-3, 5, 4, True) == 0.0 and ref.annealed(3e-3, 1, 4, True) > 0
    view["rollout_steps"] = 100
    call(emu.emu_advance_rollout, raw, 24)
    call(emu.emu_advance_rollout, raw, 24)
    assert view["rollout_steps"] == 148


GUARD = 64  # elements after an output array that a kernel must leave alone


def test_kernels_write_nothing_past_their_outputs(emu):
    """encode_obs_kernel and the reward-scaling kernels run on whole blocks of threads for sizes that fill none
    (rows * O, R, T * R): the idle threads write nothing past x, returns, seen or the rewards."""
    rng = np.random.default_rng(14)
    rows, o, t_len, r = 7, 3, 5, 9
    obs = np.concatenate([rng.standard_normal(rows * o), np.zeros(GUARD)]).astype(np.float32)
    norm = np.concatenate([rng.standard_normal(o), rng.random(o) + 0.5, [10.0]]).astype(np.float32)
    x = np.full(rows * o + GUARD, np.nan, np.float32)
    call(emu.emu_encode_obs, np.int64(rows), o, 0, obs, np.float32(0.5), norm, x)
    assert np.isfinite(x[:rows * o]).all() and np.isnan(x[rows * o:]).all()
    rewards = np.concatenate([rng.standard_normal(t_len * r), np.full(GUARD, 7.0)]).astype(np.float32)
    dones = np.zeros(t_len * r + GUARD, np.float32)
    returns = np.concatenate([np.zeros(r), np.full(GUARD, 5.0)])
    seen = np.full(t_len * r + GUARD, 3.0)
    call(emu.emu_scale_rewards, t_len, r, rewards, dones, np.float64(0.9), returns, seen, np.array([0.0, 1.0, 1e-4, 0]))
    assert (rewards[t_len * r:] == 7.0).all() and (returns[r:] == 5.0).all() and (seen[t_len * r:] == 3.0).all()
    assert (seen[:t_len * r] != 3.0).all()


def test_gather_state_picks_each_minibatch_sequences_entering_state(emu):
    """gather_state_kernel: mb_state[l, c] is the state entering sequence perm[first + c] (segment q // R, row q % R)
    at layer l, segment_state (S, Ls, R, H), for every layer, sequence and unit."""
    rng = np.random.default_rng(12)
    segments, ls, r, h, bm, first = 3, 2, 5, 7, 6, 4
    segment_state = rng.standard_normal((segments, ls, r, h)).astype(np.float32)
    perm = rng.permutation(segments * r).astype(np.int32)
    padded = np.concatenate([segment_state.reshape(-1), np.zeros(ls * r * h, np.float32)])
    out = np.full(ls * bm * h + GUARD, np.nan, np.float32)  # 84 elements: the last block has idle threads
    call(emu.emu_gather_state, ls, bm, r, h, first, perm, padded, out)
    q = perm[first:first + bm]
    assert np.array_equal(out[:-GUARD].reshape(ls, bm, h), np.swapaxes(segment_state[q // r, :, q % r], 0, 1))
    assert np.isnan(out[-GUARD:]).all()  # nothing written past mb_state


@pytest.mark.parametrize("n", [1000, 37])
def test_advantage_moments_are_the_minibatchs_mean_and_population_std(emu, n):
    """sums_partial_kernel and moments_finish_kernel (the advantages' moments with train.norm_adv across ranks) give
    the float32 mean and population std of the advantages as NumPy computes them in float64; a constant minibatch
    has std 0."""
    rng = np.random.default_rng(13)
    for adv in [(rng.standard_normal(n) * 3 + 1.5).astype(np.float32), np.full(n, -2.5, np.float32)]:
        out = np.zeros(2, np.float32)
        call(emu.emu_adv_moments, np.int64(n), 8, adv, np.zeros(8 * 2), out)
        want = adv.astype(np.float64)
        np.testing.assert_allclose(out, [want.mean(), want.std()], rtol=2e-6, atol=1e-6)


def test_reward_scaling_of_more_rows_than_a_block_matches_scale_rewards(emu):
    """R = 600 rows: reward_returns_kernel's one thread a row spans three blocks of 256 (row = block * 256 +
    thread), each row's discounted return its own; the scaled rewards, carried returns and moments the
    reference's over two rollouts."""
    rng = np.random.default_rng(12)
    t_len, rows = 4, 600
    rollouts = []
    for _ in range(2):
        rewards = (rng.standard_normal((t_len, rows)) * rng.exponential(1.0, rows)).astype(np.float32)
        rollouts.append((rewards, (rng.random((t_len, rows)) < 0.2).astype(np.float32)))
    assert_scale_rewards_matches_reference(emu, rollouts, 0.9)


@pytest.mark.parametrize("obs_bytes", [0, 1], ids=["float-obs", "byte-obs"])
def test_encoder_input_over_several_blocks_is_the_references(emu, obs_bytes):
    """encode_obs_kernel on 150 rows of 5 (750 elements: three blocks of 256, element = block * 256 + thread),
    scaled (bytes by 1/255, floats by 1.5) and normalised by given statistics (some values past the clip at 10),
    then without statistics: reference.encoder_input's, bit for bit."""
    rng = np.random.default_rng(21)
    rows, o = 150, 5
    scale = 1 / 255 if obs_bytes else 1.5
    spec = ref.PolicySpec(obs_size=o, num_actions=2, kind="mlp", hidden=8, layers=1, norm_obs=True, obs_scale=scale)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng))
    views["obs_norm.mean"][...] = rng.standard_normal(o) * 0.3
    views["obs_norm.var"][...] = rng.uniform(0.05, 2.0, o)
    if obs_bytes:
        raw, buf = byte_rollout(rng, 1, rows, o)
        raw, step = raw[0], buf
    else:
        raw = step = (rng.standard_normal((rows, o)) * 3).astype(np.float32)
        # a feature that barely varies: its variance (1e-6) is small enough for the 1e-8 in sqrt(var + 1e-8) to count
        raw[:, 0] = (0.2 + rng.standard_normal(rows) * 0.002) / scale
        views["obs_norm.mean"][0], views["obs_norm.var"][0] = 0.2, 1e-6
    norm = np.concatenate([views["obs_norm.mean"], views["obs_norm.var"], views["obs_norm.count"]]).astype(np.float32)
    x = np.zeros((rows, o), np.float32)
    call(emu.emu_encode_obs, np.int64(rows), o, obs_bytes, np.ascontiguousarray(step), np.float32(scale), norm, x)
    assert np.array_equal(x, ref.encoder_input(spec, views, raw))
    plain = ref.PolicySpec(obs_size=o, num_actions=2, kind="mlp", hidden=8, layers=1, obs_scale=scale)
    x = np.zeros((rows, o), np.float32)
    call(emu.emu_encode_obs, np.int64(rows), o, obs_bytes, np.ascontiguousarray(step), np.float32(scale), None, x)
    assert np.array_equal(x, ref.encoder_input(plain, views, raw))


def test_reward_scaling_clips_scaled_rewards_at_ten_either_way(emu):
    """A rare reward spike among zeros (every step ends its episode, so each return is its reward) is scaled far
    past 10 by the returns' small std: the kernel clips it to exactly +10 or -10 as normalize.REWARD_CLIP, while a
    reward scaled to just under 10 passes unclipped, all as the reference."""
    from fastvec.trainer import normalize

    t_len, rows = 10, 100
    rewards = np.zeros((t_len, rows), np.float32)
    rewards[3, 7], rewards[6, 40], rewards[0, 0] = 1.0, -1.0, 0.2
    dones = np.ones((t_len, rows), np.float32)
    moments = (0.0, 1.0, 1e-4)
    want, moments = normalize.scale_rewards(rewards, dones, np.zeros(rows), moments, 0.99)
    scale = 1.0 / np.sqrt(moments[1] + normalize.REWARD_EPS)
    assert normalize.REWARD_CLIP == 10.0 and 0.2 * scale < 10.0 < 15.0 < scale
    got = rewards.copy()
    k_moments = np.array([0.0, 1.0, 1e-4, 0.0])
    call(emu.emu_scale_rewards, t_len, rows, got, dones, np.float64(0.99), np.zeros(rows), np.zeros((t_len, rows)),
         k_moments)
    assert got[3, 7] == 10.0 and got[6, 40] == -10.0
    assert got[0, 0] == np.float32(np.float64(np.float32(0.2)) * scale) and np.count_nonzero(got) == 3
    assert np.array_equal(got, want)


@pytest.mark.parametrize("spec", [BOX, MULTI], ids=["box", "multi_discrete"])
def test_ppo_loss_head_kernel_reads_d_head_parameters_and_writes_only_its_rows(emu, spec):
    """The loss head kernel reads the first D entries of nvec (or logstd) and the n rows of y and actions, and
    writes dy, dlogstd and new_logp for those n rows only: with a plausible sentinel after each input (an nvec
    entry of 4, a log-std of 0.5, an extra row) and NaN after each output, the outputs are still the reference's
    and the NaN guards are untouched."""
    rng = np.random.default_rng(21)
    n, d, width = 37, spec.action_shape[0], spec.head_size + 1
    y = rng.standard_normal((n + 1, width)).astype(np.float32)
    logstd = np.append(rng.standard_normal(d) * 0.3, 0.5).astype(np.float32)
    if spec.action_kind == "box":
        dist = np.concatenate([y[:n, :d], np.broadcast_to(logstd[:d], (n, d))], -1)
        actions = (y[:, :d] + np.exp(logstd[:d]) * rng.standard_normal((n + 1, d))).astype(np.float32)
    else:
        dist = y[:n, :spec.head_size]
        actions = np.stack([rng.integers(1, m, n + 1) for m in spec.action_nvec], -1).astype(np.int64)
    old_logp = (ref.action_log_prob(spec, dist, actions[:n]) + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:n, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = (rng.standard_normal(n) * 2 + 0.5).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    moments = np.array([adv.astype(np.float64).mean(), adv.astype(np.float64).std()], np.float32)
    adv_n = ((adv - moments[0]) / (moments[1] + np.float32(1e-8))).astype(np.float32)
    _, dlogits, dvalues, _ = ref.ppo_loss(dist, y[:n, -1], actions[:n], old_logp, old_values, adv_n, returns, 0.2,
                                          0.2, 0.5, 0.01, spec=spec)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = 0.01
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    nvec = np.asarray((spec.action_nvec or (1,) * d) + (4,), np.int64)
    dy = np.full(n * width + GUARD, np.nan, np.float32)
    dlogstd = np.full(n * d + GUARD, np.nan, np.float32)
    new_logp = np.full(n + GUARD, np.nan, np.float32)
    src = rng.permutation(n).astype(np.int32)
    call(emu.emu_ppo_loss_head, n, HEAD_KINDS[spec.action_kind], d, width, y,
         np.ascontiguousarray(actions.view(np.int32)), nvec, logstd, old_logp, old_values, adv, returns, moments,
         scalars, np.float32(0.2), np.float32(0.2), np.float32(0.5), dy, dlogstd, np.zeros(5), np.zeros(1, np.uint32),
         new_logp, src)
    assert np.isnan(dy[n * width:]).all() and np.isnan(new_logp[n:]).all()
    got = dy[:n * width].reshape(n, width)
    assert rel_err(got[:, :spec.head_size], dlogits[:, :spec.head_size]) <= 1e-5
    assert rel_err(got[:, -1], dvalues) <= 1e-6
    scattered = np.empty(n, np.float32)
    scattered[src] = ref.action_log_prob(spec, dist, actions[:n])
    assert rel_err(new_logp[:n], scattered) <= 1e-6
    if spec.action_kind == "box":
        assert np.isnan(dlogstd[n * d:]).all()
        assert rel_err(dlogstd[:n * d].reshape(n, d), dlogits[:, d:]) <= 1e-5
