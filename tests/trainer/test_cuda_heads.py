"""The CUDA trainer's MultiDiscrete and Box heads and its running normalisation against the NumPy reference:
each kernel on random inputs (heads.cu's samplers and loss, normalize.cu's encoder input, observation statistics
and reward scaling, the minibatch gather of multi-word actions), a whole rollout and update against NumpyTrainer
for a Box env (tests/envs/box_point.h) and a MultiDiscrete env (tests/envs/multi_discrete.h), bitwise
repeatability, and a GPU-trained Box checkpoint played by the CPU trainer. The first tests (the plan's paths and
buffers) need no GPU; every @pytest.mark.gpu test is skipped without one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import minibatch_sources
from test_cuda import (F32_TOL, Dev, FixedOrders, _cuda_or_skip, kernels_with_test_entry_points, load_numpy_trainer,
                       rel_err, rollout_buffers, start_async_update)

from fastvec.trainer import reference as ref
from fastvec.trainer.config import ConfigError, load_config
from fastvec.trainer.cuda.kernel_args import GatherArgs, LossArgs, pack
from fastvec.trainer.settings import Config

ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
BOX, MULTI = (str(ENVS_DIR / f"{name}.h") for name in ("box_point", "multi_discrete"))
BOX_SPEC = ref.PolicySpec(obs_size=3, num_actions=0, kind="mlp", hidden=16, layers=1, action_kind="box", action_dims=2)
MULTI_SPEC = ref.PolicySpec(obs_size=2, num_actions=0, kind="mingru", hidden=16, layers=2, action_kind="multi_discrete",
                            action_nvec=(3, 5))
HEAD_KINDS = {"multi_discrete": 1, "box": 2}  # heads.cu's HEAD_MULTI_DISCRETE, HEAD_BOX


def heads_config(env: str, policy: dict | None = None, **train) -> dict:
    return load_config(env, {"env": {"num_envs": 24},
                             "policy": {"kind": "mingru", "hidden": 16, "layers": 2, "highway": True, **(policy or {})},
                             "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 64, "update_epochs": 2,
                                       "optimizer": "adam", "learning_rate": 0.01, "device": "cuda", "seed": 5,
                                       **train}})


# ------------------------------------------------------------------------------------------------
# The plan (no GPU): every head takes the GEMM-path rollout, with its action buffers in the env's action type


@pytest.mark.parametrize("spec", [BOX_SPEC, MULTI_SPEC], ids=["box", "multi_discrete"])
def test_plan_gives_every_head_the_gemm_rollout_and_its_action_buffers(spec):
    from fastvec.trainer.cuda.plan import Choices, Plan, action_words, plan_arena
    train = Config.of(heads_config(BOX)).train
    layout = ref.FlatLayout(ref.param_table(spec))
    plan = Plan.make(train, spec, layout, 24, 1, False, Choices(rollout="warp"))
    assert plan.rollout == "gemm" and plan.fused_block == 0  # the fused kernels implement the Discrete head only
    assert plan.policy_defines(spec) == {"POLICY_HEAD_SIZE": spec.head_size}
    arena = plan_arena(plan, spec, layout, 64, 0)
    _, shape, dtype, _ = arena.entries["actions"]
    assert shape == (16, 24, 2) and dtype == spec.action_dtype  # NumpyTrainer's (T, R, D), the env's ACT_T
    words = action_words(spec)
    assert words == (2 if spec.action_kind == "box" else 4)
    assert arena.entries["mb_actions"][1] == (plan.mb_rows, words)
    assert arena.entries["y"][1] == arena.entries["dy"][1] == (plan.mb_rows, spec.head_size + 1)
    assert ("dlogstd" in arena.entries) == (spec.action_kind == "box")
    assert ("head_nvec" in arena.entries) == (spec.action_kind == "multi_discrete")


def test_plan_gives_a_separate_critic_the_gemm_rollout_and_its_own_activations():
    from fastvec.trainer.cuda.plan import Choices, Plan, plan_arena
    train = Config.of(heads_config("cartpole", SEPARATE_CRITIC)).train
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=16, layers=2, critic="separate")
    layout = ref.FlatLayout(ref.param_table(spec))
    plan = Plan.make(train, spec, layout, 24, 1, False, Choices(rollout="warp"))
    assert plan.rollout == "gemm" and plan.fused_block == 0  # the fused kernels run a shared actor-critic only
    _, shape, _, _ = plan_arena(plan, spec, layout, 64, 0).entries["critic_act"]
    assert shape == (3, plan.mb_rows, 16)  # the critic's encoder and layer outputs, kept for the backward
    with pytest.raises(ConfigError, match="policy.critic=shared"):  # self-play's opponents: a shared actor-critic
        Plan.make(train, spec, layout, 24, 1, False, Choices(), selfplay_seats=2, pool_size=4)


@pytest.mark.parametrize("is_async,warp_block,expected", [(False, 0, 256), (True, 0, 512), (True, 128, 128)])
def test_plan_gives_async_training_larger_warp_rollout_blocks(is_async, warp_block, expected):
    """train.async: 16 envs a block of the warp-per-env rollout (8 without), so that it leaves SMs to the update
    beside it; Choices(warp_block=...) overrides both (the kernel's registers may lower it again at start)."""
    from fastvec.trainer.cuda.plan import Choices, Plan
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mingru", hidden=16, layers=2)
    train = Config.of(heads_config("cartpole", **{"async": is_async})).train
    plan = Plan.make(train, spec, ref.FlatLayout(ref.param_table(spec)), 24, 1, False, Choices(warp_block=warp_block))
    assert (plan.rollout, plan.fused_block) == ("warp", expected)


def test_plan_normalised_observations_and_rewards_add_their_state():
    from fastvec.trainer.cuda.plan import Choices, Plan, plan_arena
    spec = ref.PolicySpec(obs_size=4, num_actions=2, kind="mlp", hidden=16, layers=1, norm_obs=True)
    train = Config.of(heads_config("cartpole", norm_obs=True, norm_reward=True)).train
    layout = ref.FlatLayout(ref.param_table(spec))
    plan = Plan.make(train, spec, layout, 24, 1, False, Choices(rollout="thread"))
    assert plan.rollout == "gemm" and plan.norm_reward  # the fused kernels read raw observations
    arena = plan_arena(plan, spec, layout, 64, 0)
    assert arena.entries["r_x0"][1] == (24, 4)
    assert arena.entries["reward_seen"][1] == (16, 24) and arena.entries["reward_moments"][1] == (4,)


def test_plan_refuses_heads_where_the_cuda_trainer_lacks_them():
    from fastvec.trainer.cuda.plan import Choices, Plan
    train = Config.of(heads_config(BOX)).train
    layout = ref.FlatLayout(ref.param_table(BOX_SPEC))
    assert Plan.make(train, BOX_SPEC, layout, 24, 1, True, Choices()).rollout == "host"  # host envs sample it too
    with pytest.raises(ConfigError, match="self-play with the games on the GPU"):
        Plan.make(train, BOX_SPEC, layout, 24, 2, False, Choices(), selfplay_seats=2, pool_size=2)
    wide = ref.PolicySpec(obs_size=2, num_actions=0, action_kind="multi_discrete", action_nvec=(3, 65))
    with pytest.raises(ConfigError, match="at most 64 actions a dimension, this env has 65"):
        Plan.make(train, wide, ref.FlatLayout(ref.param_table(wide)), 24, 1, False, Choices())


# ------------------------------------------------------------------------------------------------
# Kernels against the reference (GPU)


@pytest.fixture(scope="module")
def gpu():
    """(pycuda.driver, a Launcher of kernels.cu and test_kernels.cu on a fresh stream)."""
    cuda = _cuda_or_skip()
    from fastvec.trainer.cuda import device
    stream = cuda.Stream()
    signatures = {"sample_box_kernel": "iiiPPQqPP", "sample_multi_discrete_kernel": "iiiPPQqPP"}
    yield cuda, device.Launcher(kernels_with_test_entry_points(), stream, {**device.SIGNATURES, **signatures})


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [BOX_SPEC, MULTI_SPEC], ids=["box", "multi_discrete"])
def test_head_samplers_match_the_reference_with_the_counter_uniforms(gpu, spec):
    """heads.sample_head on reference.head_uniforms (the uniforms of index r * D + d, or (r * D + d) * 2 + k for
    Box-Muller) gives the kernels' actions: MultiDiscrete exactly (but where a uniform sits on a CDF boundary
    within float rounding), Box within float32 rounding; the log-probabilities are heads.head_log_prob's."""
    cuda, k = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(3)
    rows, d, step, key = 2000, spec.action_shape[0], 11, ref.sampling_key(7)
    y = rng.standard_normal((rows, spec.head_size + 1)).astype(np.float32)  # decoder rows: head columns, value
    logp = dev.empty(rows)
    if spec.action_kind == "box":
        logstd = (rng.standard_normal(d) * 0.5).astype(np.float32)
        actions = dev.empty((rows, d))
        k.launch("sample_box_kernel", rows, np.int32(rows), np.int32(d), np.int32(spec.head_size + 1), dev(y),
                 dev(logstd), np.uint64(key), np.int64(step), actions, logp)
        dist = np.concatenate([y[:, :d], np.broadcast_to(logstd, (rows, d))], -1)
        got = dev.get(actions, (rows, d))
    else:
        actions = dev.empty((rows, d), np.int64)
        k.launch("sample_multi_discrete_kernel", rows, np.int32(rows), np.int32(d), np.int32(spec.head_size + 1),
                 dev(y), dev(np.asarray(spec.action_nvec, np.int64)), np.uint64(key), np.int64(step), actions, logp)
        dist = y[:, :spec.head_size]
        got = dev.get(actions, (rows, d), np.int64)
    want, _ = ref.sample_head(spec, dist, ref.head_uniforms(spec, key, rows, step))
    if spec.action_kind == "box":
        assert rel_err(got, want) <= F32_TOL
    else:
        assert np.mean(np.all(got == want, -1)) > 0.999 and got.min() >= 0 and np.all(got < spec.action_nvec)
    assert rel_err(dev.get(logp, (rows,)), ref.action_log_prob(spec, dist, got)) <= F32_TOL


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [BOX_SPEC, MULTI_SPEC], ids=["box", "multi_discrete"])
def test_ppo_loss_head_kernel_matches_reference(gpu, spec):
    """reference.ppo_loss(spec=...) with normalised advantages: dy (head columns and value), a Box head's per-row
    log-std gradient (whose column sums are policy_backward's dec.logstd gradient), the five statistics and the
    V-trace scatter of the new log-probabilities."""
    from fastvec.trainer.cuda.plan import SCALARS_DTYPE
    cuda, k = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(4)
    n, d, y_width = 1000, spec.action_shape[0], spec.head_size + 1
    y = rng.standard_normal((n, y_width)).astype(np.float32)
    logstd = (rng.standard_normal(d) * 0.3).astype(np.float32)
    if spec.action_kind == "box":
        dist = np.concatenate([y[:, :d], np.broadcast_to(logstd, (n, d))], -1)
        actions = (y[:, :d] + np.exp(logstd) * rng.standard_normal((n, d))).astype(np.float32)
    else:
        dist = y[:, :spec.head_size]
        actions = np.stack([rng.integers(0, m, n) for m in spec.action_nvec], -1).astype(np.int64)
    old_logp = (ref.action_log_prob(spec, dist, actions) + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = rng.standard_normal(n).astype(np.float32) * 2 + 0.5, rng.standard_normal(n).astype(np.float32)
    clip, vclip, vf, ent = 0.2, 0.2, 0.5, 0.01
    moments = np.array([adv.astype(np.float64).mean(), adv.astype(np.float64).std()], np.float32)
    adv_n = ((adv - moments[0]) / (moments[1] + np.float32(1e-8))).astype(np.float32)
    _, dlogits, dvalues, stats = ref.ppo_loss(dist, y[:, -1], actions, old_logp, old_values, adv_n, returns, clip,
                                             vclip, vf, ent, spec=spec)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = ent
    pscal = dev(np.frombuffer(scalars.tobytes(), np.uint8))
    dy, dlogstd, new_logp = dev.empty((n, y_width)), dev.empty((n, d)), dev.empty(n)
    src = rng.permutation(n).astype(np.int32)
    box = spec.action_kind == "box"
    k.launch("ppo_loss_head_kernel", n, pack(LossArgs(
        y=dev(y), actions=dev(actions.view(np.int32)), nvec=0 if box else dev(np.asarray(spec.action_nvec, np.int64)),
        logstd=dev(logstd) if box else 0, old_logp=dev(old_logp), old_values=dev(old_values), adv=dev(adv),
        returns=dev(returns), adv_moments=dev(moments), scalars=pscal, dy=dy, dlogstd=dlogstd if box else 0,
        partial=dev.empty(5 * (-(-n // 256)), np.float64), counter=dev.empty(1, np.uint32), new_logp=new_logp,
        src=dev(src), clip_coef=clip, vf_clip_coef=vclip, vf_coef=vf, n=n, kind=HEAD_KINDS[spec.action_kind], D=d,
        Y=y_width)))
    got = dev.get(dy, (n, y_width))
    assert rel_err(got[:, :spec.head_size], dlogits[:, :spec.head_size]) <= F32_TOL
    assert rel_err(got[:, -1], dvalues) <= F32_TOL
    if box:  # per row, and summed over the rows as policy_backward sums dlogits' log-std columns
        got_ls = dev.get(dlogstd, (n, d))
        assert rel_err(got_ls, dlogits[:, d:]) <= F32_TOL
        assert rel_err(got_ls.sum(0), dlogits[:, d:].sum(0)) <= F32_TOL
    scattered = np.empty(n, np.float32)
    scattered[src] = ref.action_log_prob(spec, dist, actions)
    assert rel_err(dev.get(new_logp, (n,)), scattered) <= F32_TOL
    got_stats = np.frombuffer(dev.get(pscal, (SCALARS_DTYPE.itemsize,), np.uint8).tobytes(), SCALARS_DTYPE)[0]["stat"]
    for i, key in enumerate(["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"]):
        assert abs(got_stats[i] - stats[key]) <= F32_TOL * max(abs(stats[key]), 1.0), key


@pytest.mark.gpu
def test_gather_copies_multi_word_actions(gpu):
    """gather_minibatch_kernel with a row's action as Wa 32-bit words: Box float32 (Wa = D) and MultiDiscrete int64
    (Wa = 2D) actions reach the minibatch bit for bit, in the sequences' order."""
    cuda, k = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(5)
    t_len, r, kk, o, bm, first = 16, 30, 8, 3, 20, 20
    n = kk * bm
    perm = rng.permutation((t_len // kk) * r).astype(np.int32)
    src = minibatch_sources(perm, first, bm, r, kk).reshape(-1)
    for actions in [rng.standard_normal((t_len, r, 2)).astype(np.float32),
                    rng.integers(-2**40, 2**40, (t_len, r, 3)).astype(np.int64)]:
        words = actions.itemsize * actions.shape[-1] // 4
        floats = [dev(rng.standard_normal((t_len, r) + ((o,) if name == "obs" else ())).astype(np.float32))
                  for name in ["obs", "starts"]]
        rest = [dev(rng.standard_normal((t_len, r)).astype(np.float32)) for _ in range(4)]  # logp values adv returns
        mb_actions = dev.empty((n, words), np.int32)
        outs = [dev.empty((n, o)), dev.empty(n), mb_actions, *[dev.empty(n) for _ in range(4)], dev.empty(n, np.int32)]
        inputs = dict(zip(["obs", "starts", "actions", "logp", "values", "adv", "returns"],
                          [*floats, dev(actions.view(np.int32)), *rest]))
        outputs = dict(zip(["mb_obs", "mb_starts", "mb_actions", "mb_logp", "mb_values", "mb_adv", "mb_returns",
                            "mb_src"], outs))
        k.launch("gather_minibatch_kernel", n, pack(GatherArgs(perm=dev(perm), **inputs, **outputs, K=kk, Bm=bm, R=r,
                                                                O=o, first=first, action_words=words, obs_bytes=0)))
        got = dev.get(mb_actions, (n, words), np.int32).view(actions.dtype).reshape(n, actions.shape[-1])
        assert np.array_equal(got, actions.reshape(t_len * r, -1)[src])


@pytest.mark.gpu
def test_encoder_input_and_observation_statistics_match_normalize(gpu):
    """encode_obs_kernel is reference.encoder_input (scale, then clip((x - mean) / sqrt(var + 1e-8), -10, 10));
    obs_norm_update_kernel and obs_norm_count_kernel are normalize.update_obs_norm over a rollout, twice."""
    cuda, k = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(6)
    spec = ref.PolicySpec(obs_size=5, num_actions=2, kind="mlp", hidden=8, layers=1, norm_obs=True)
    views = ref.FlatLayout(ref.param_table(spec)).views(ref.init_params(spec, rng))
    t_len, rows, o = 32, 50, spec.obs_size
    for scale in (1.0, 0.25):
        for _ in range(2):
            obs = (rng.standard_normal((t_len, rows, o)) * [1, 3, 10, 0.1, 30] + [0, 1, -4, 2, 50]).astype(np.float32)
            norm = np.concatenate([views["obs_norm.mean"], views["obs_norm.var"], views["obs_norm.count"]])
            pn, pobs = dev(norm), dev(obs)
            k.launch_grid("obs_norm_update_kernel", o, 256, np.int64(t_len * rows), np.int32(o), np.int32(rows),
                          np.int32(0), pobs, np.float64(scale), pn)
            k.launch_grid("obs_norm_count_kernel", 1, 1, np.int64(t_len * rows), np.int32(o), pn)
            ref.update_obs_norm(ref.PolicySpec(**{**spec.as_dict(), "obs_scale": scale}), views, obs)
            want = np.concatenate([views["obs_norm.mean"], views["obs_norm.var"], views["obs_norm.count"]])
            assert rel_err(dev.get(pn, (2 * o + 1,)), want) <= 1e-6
        x = dev.empty((t_len * rows, o))
        k.launch("encode_obs_kernel", t_len * rows * o, np.int64(t_len * rows), np.int32(o), np.int32(0), pobs,
                 np.float32(scale), dev(want.astype(np.float32)), x)
        scaled = ref.PolicySpec(**{**spec.as_dict(), "obs_scale": scale})
        assert rel_err(dev.get(x, (t_len * rows, o)), ref.encoder_input(scaled, views, obs.reshape(-1, o))) <= F32_TOL


@pytest.mark.gpu
def test_reward_scaling_kernels_match_scale_rewards_across_rollouts(gpu):
    """reward_returns_kernel, reward_moments_kernel and reward_scale_kernel are normalize.scale_rewards: the rows'
    discounted returns carried across three rollouts (reset after each episode's last step), their running
    moments, and the rewards divided by the running std and clipped to [-10, 10]."""
    cuda, k = gpu
    dev = Dev(cuda, k.stream)
    rng = np.random.default_rng(7)
    t_len, rows, gamma = 32, 70, 0.97
    returns, moments = np.zeros(rows), (0.0, 1.0, 1e-4)
    p_returns, p_seen, p_moments = dev.empty(rows, np.float64), dev.empty((t_len, rows), np.float64), dev(
        np.array([0.0, 1.0, 1e-4, 0.0]))
    for scale in (1.0, 50.0, 0.01):
        rewards = (rng.standard_normal((t_len, rows)) * scale).astype(np.float32)
        dones = (rng.random((t_len, rows)) < 0.05).astype(np.float32)
        p_rewards = dev(rewards)
        k.launch("reward_returns_kernel", rows, np.int32(t_len), np.int32(rows), p_rewards, dev(dones),
                 np.float64(gamma), p_returns, p_seen)
        k.launch_grid("reward_moments_kernel", 1, 256, np.int64(t_len * rows), p_seen, p_moments)
        k.launch("reward_scale_kernel", t_len * rows, np.int64(t_len * rows), p_rewards, p_moments)
        want, moments = ref.scale_rewards(rewards, dones, returns, moments, gamma)
        assert rel_err(dev.get(p_returns, (rows,), np.float64), returns) <= 1e-12
        assert rel_err(dev.get(p_moments, (4,), np.float64)[:3], moments) <= 1e-12
        assert rel_err(dev.get(p_rewards, (t_len, rows)), want) <= 1e-6


# ------------------------------------------------------------------------------------------------
# The whole trainer against NumpyTrainer (GPU)


def heads_pair(config):
    """A CudaTrainer and a NumpyTrainer (on a CPU batch of the same env) for config, with the env's spaces."""
    from fastvec.trainer import run
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.numpy_trainer import NumpyTrainer
    from fastvec.trainer.resolve import make_policy_spec
    batch = run.make_batch(config)
    spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces)
    return CudaTrainer(config, batch, spec), NumpyTrainer(config, run.make_batch(config), spec), spec


def rollout_obs(trainer) -> np.ndarray:
    """The observations (T + 1, R, O) of the slot the next update trains on, in the env's type: byte observations
    (an env's OBS_T unsigned char) fill the first R * O bytes of their step's floats (rollout.cu's step_obs)."""
    obs = trainer.arena.get(trainer.cuda, "obs" if trainer.active_slot == 0 else "obs@1")
    if not trainer.obs_bytes:
        return obs
    steps, rows, size = obs.shape
    return obs.view(np.uint8).reshape(steps, rows * size * 4)[:, :rows * size].reshape(steps, rows, size)


SEPARATE_CRITIC = {"kind": "mlp", "critic": "separate"}  # the value from a critic network of its own
RELU_ENCODER = {"kind": "mlp", "encoder": "relu", "layers": 1}  # PureJaxRL's network: a ReLU on the encoder too
TANH = {"kind": "mlp", "encoder": "tanh", "activation": "tanh", "layers": 1}  # CleanRL's continuous actor-critic
RANDOM_WALK = str(ENVS_DIR / "random_walk.h")  # Discrete(3), two agents, byte observations scaled by 1/255
CASES = {"box": (BOX, {}, "gemm"), "multi_discrete": (MULTI, {}, "gemm"),
         "box-norm": (BOX, {"norm_obs": True, "norm_reward": True}, "gemm"),
         "multi_discrete-norm": (MULTI, {"norm_obs": True, "norm_reward": True}, "gemm"),
         "bytes": (RANDOM_WALK, {}, "gemm"), "bytes-norm": (RANDOM_WALK, {"norm_obs": True}, "gemm"),
         "minatar-bytes-warp": ("breakout-minatar", {}, "warp"),
         "host-env-norm": ("cartpole", {"norm_obs": True, "norm_reward": True, "env_device": "cpu"}, "host"),
         "host-env-box-norm": (BOX, {"norm_obs": True, "norm_reward": True, "env_device": "cpu"}, "host"),
         "host-env-multi_discrete": (MULTI, {"env_device": "cpu"}, "host"),
         "separate-critic": ("cartpole", {"policy": SEPARATE_CRITIC, "optimizer": "muon"}, "gemm"),
         "separate-critic-bytes-norm": (RANDOM_WALK, {"policy": SEPARATE_CRITIC, "norm_obs": True}, "gemm"),
         "separate-critic-minatar": ("breakout-minatar", {"policy": SEPARATE_CRITIC}, "gemm"),
         "separate-critic-box": (BOX, {"policy": SEPARATE_CRITIC}, "gemm"),
         "separate-critic-host-env": ("cartpole", {"policy": SEPARATE_CRITIC, "env_device": "cpu"}, "host"),
         "relu-encoder": ("cartpole", {"policy": RELU_ENCODER}, "gemm"),
         "mingru-relu-encoder": ("cartpole", {"policy": {"encoder": "relu"}}, "gemm"),
         "mingru-tanh-encoder-minatar": ("breakout-minatar", {"policy": {"encoder": "tanh"}}, "gemm"),
         "tanh-box-host-env": (BOX, {"policy": TANH, "norm_obs": True, "env_device": "cpu"}, "host"),
         "tanh-separate-critic": ("cartpole", {"policy": {**TANH, "critic": "separate"}}, "gemm"),
         "relu-encoder-separate-critic-minatar": ("breakout-minatar", {"policy": {**RELU_ENCODER, "critic": "separate"}},
                                                  "gemm")}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_rollout_and_update_match_numpy(case):
    """ROLLOUT: the env against the CPU env fed the GPU's actions (Box float32 and MultiDiscrete int64 values in
    place as the env's ACT_T; byte observations as bytes), the actions against heads.sample_head on the reference
    policy's output with the counter uniforms, log-probs and values against the reference (with train.norm_reward,
    the scaled rewards against normalize.scale_rewards). UPDATE: NumpyTrainer on the same buffers in the CUDA
    trainer's sequence order. With one minibatch and one epoch the update is one loss and one gradient on the same
    weights and data: the gradient (dec.logstd's too) within 1e-5; then a two-epoch update of two minibatches
    each, whose optimizer steps compound float32 rounding, within 1e-4 (as test_cuda.py's), and with
    train.norm_obs the observation statistics after it (part of the weights). minatar-bytes-warp: 0/1 byte
    observations (no scale) through the fused warp-per-env rollout, which reads them as bytes, as the update.
    host-env-*: the env stepped on the CPU (train.env_device=cpu; a Box head with both normalisations, a
    MultiDiscrete head), its actions sampled by host_sample_kernel. separate-critic-*: an
    MLP actor and a critic network of its own (policy.critic=separate), which the GEMM-path rollouts and the update
    run as two stacks writing one decoder output. relu-encoder-*: an MLP with a ReLU on its encoder's output
    (policy.encoder=relu), the encoder's backward an MLP layer's; mingru-*-encoder: the MinGRU layers reading it. tanh-*: tanh on the encoder and the layers
    (policy.activation=tanh), CUDA's tanhf against NumPy's (a float32 ulp apart)."""
    _cuda_or_skip()
    from fastvec.trainer.reference import sequence_order
    env, norm, path = CASES[case]
    norm = dict(norm)
    policy = norm.pop("policy", None)
    for epochs, tol in [(1, F32_TOL), (2, 1e-4)]:
        config = heads_config(env, policy, update_epochs=epochs, **norm)
        agents = 2 if env == RANDOM_WALK else 1
        config["train"]["minibatch_size"] = 16 * 24 * agents if epochs == 1 else 8 * 24 * agents
        gpu_tr, cpu_tr, spec = heads_pair(config)
        cuda, a = gpu_tr.cuda, gpu_tr.arena
        t_len, rows, o = gpu_tr.horizon, gpu_tr.rows, spec.obs_size
        assert gpu_tr.plan.rollout == path and gpu_tr.obs_bytes == (env in (RANDOM_WALK, "breakout-minatar"))
        assert np.array_equal(a.get(cuda, "params"), cpu_tr.params)  # same seed, same initial weights

        gpu_tr.rollout()
        buf = rollout_buffers(gpu_tr)
        buf["obs"] = rollout_obs(gpu_tr)
        assert buf["actions"].shape == (t_len, rows, *spec.action_shape)
        batch = cpu_tr.batch
        batch.reset((np.uint64(config["train"]["seed"]) << np.uint64(32)) + np.arange(batch.num_envs, dtype=np.uint64),
                    None)
        raw_rewards = np.zeros((t_len, rows), np.float32)
        for t in range(t_len):
            assert buf["obs"].dtype == batch.obs.dtype, t  # bytes stay bytes
            if gpu_tr.obs_bytes:
                assert np.array_equal(buf["obs"][t], batch.obs.reshape(rows, o)), t
            else:
                assert rel_err(buf["obs"][t], batch.obs.reshape(rows, o)) <= 1e-6, t
            batch.step(buf["actions"][t].astype(spec.action_dtype).reshape(batch.num_envs, agents, *spec.action_shape))
            assert np.array_equal(buf["dones"][t], np.repeat(batch.terminated | batch.truncated, agents)), t
            raw_rewards[t] = batch.rewards.reshape(rows)
        if config["train"]["norm_reward"]:
            want, moments = ref.scale_rewards(raw_rewards, buf["dones"], np.zeros(rows), (0.0, 1.0, 1e-4),
                                              config["train"]["gamma"])
            assert rel_err(buf["rewards"], want) <= 1e-6
            assert rel_err(gpu_tr.state_dict()["reward_norm"], moments) <= 1e-12
        else:
            assert np.array_equal(buf["rewards"], raw_rewards)
        views = cpu_tr.layout.views(cpu_tr.params)
        dist, values, _, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len],
                                                buf["segment_state"][0][:spec.state_layers])
        actions = buf["actions"].astype(spec.action_dtype)
        assert rel_err(buf["values"], values) <= F32_TOL
        assert rel_err(buf["logp"], ref.action_log_prob(spec, dist, actions)) <= F32_TOL
        drawn = np.stack([ref.sample_head(spec, dist[t], ref.head_uniforms(spec, gpu_tr.seed_key, rows, t))[0]
                          for t in range(t_len)])
        if spec.action_kind == "box":
            assert rel_err(actions, drawn) <= F32_TOL
        else:
            assert np.mean((actions == drawn).reshape(t_len * rows, -1).all(-1)) > 0.999

        load_numpy_trainer(cpu_tr, buf, gpu_tr.last_values())
        cpu_tr.rng = FixedOrders([sequence_order(gpu_tr.sequences, gpu_tr.shuffle_key, 0, e) for e in range(epochs)])
        stats_gpu, stats_cpu = gpu_tr.update(num_updates=10), cpu_tr.update(num_updates=10)
        if epochs == 1:  # the only minibatch's gradient, every parameter's, clipped (the GPU keeps the clip scale)
            assert rel_err(a.get(cuda, "grads") * gpu_tr.scalars()["clip_scale"], cpu_tr.grads) <= F32_TOL
            if spec.action_kind == "box":
                assert np.abs(cpu_tr.grad_views["dec.logstd"]).max() > 0
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= tol
        assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= tol
        if spec.norm_obs:
            got = gpu_tr.layout.views(a.get(cuda, "params"))
            for name in ["obs_norm.mean", "obs_norm.var", "obs_norm.count"]:
                assert rel_err(got[name], cpu_tr.param_views[name]) <= 1e-6, name
            assert cpu_tr.param_views["obs_norm.count"][0] >= t_len * rows
        for key in ["policy_loss", "value_loss", "entropy", "grad_norm", "explained_variance"]:
            # policy_loss starts as a mean of normalised advantages times ratios of 1, and explained_variance is
            # 1 - var(residual) / var(return) with that ratio near 1: both are zero up to float32 rounding of 1
            floor = 1.0 if key in ("policy_loss", "explained_variance") else 1e-2
            assert abs(stats_gpu[key] - stats_cpu[key]) <= tol * max(abs(stats_cpu[key]), floor), key
        gpu_tr.close()


@pytest.mark.gpu
def test_a_bf16_mingru_reads_its_encoders_relu_output():
    """train.precision=bf16, policy.encoder=relu (the GEMM-path rollout): the MinGRU's first layer multiplies a
    bfloat16 copy of the encoder's ReLU output (the bootstrap step's, left in r_act_bf16[0] by the rollout): the
    reference's within the bf16 GEMM's rounding (operands rounded to bfloat16, each product's error under 2^-7
    of its size) and the copy's own (2^-8), and zero where the pre-activation is negative beyond that."""
    _cuda_or_skip()
    gpu_tr, _, spec = heads_pair(heads_config("cartpole", {"encoder": "relu"}, precision="bf16"))
    gpu_tr.rollout()
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    views = ref.FlatLayout(ref.param_table(spec)).views(a.get(cuda, "params"))
    obs = rollout_obs(gpu_tr)[gpu_tr.horizon].astype(np.float64)
    pre = obs @ views["enc.w"].T + views["enc.b"]
    bound = 2 ** -6 * (np.abs(obs) @ np.abs(views["enc.w"]).T + np.abs(views["enc.b"]))
    want = np.maximum(pre, 0)
    got = (a.get(cuda, "r_act_bf16")[0].astype(np.uint32) << 16).view(np.float32)
    assert got.shape == want.shape and not (got < 0).any() and (pre < -bound).any()
    assert np.all(np.abs(got - want) <= bound + 1e-6)
    assert np.all(got[pre < -bound] == 0)


@pytest.mark.gpu
@pytest.mark.parametrize("env", [BOX, MULTI], ids=["box", "multi_discrete"])
def test_async_heads_match_numpy_async_with_vtrace(env):
    """train.async with V-trace and both normalisations: the actor samples with its copy of the weights (the Box
    head's log-stds follow its decoder bias), and each update (one epoch) matches NumpyTrainer's on the same slot
    data, starting weights and order, with V-trace's advantages from the head's log-probs under the weights the
    update starts from (the stale data's ratios, heads.ppo_loss_head_kernel's scatter)."""
    _cuda_or_skip()
    config = heads_config(env, update_epochs=1, vtrace=True, norm_obs=True, norm_reward=True, **{"async": True})
    tc = config["train"]
    gpu_tr, cpu_tr, spec = heads_pair(config)
    cuda, a = gpu_tr.cuda, gpu_tr.arena
    for k in range(4):
        buf, start_weights, sampling_rng = start_async_update(gpu_tr, cpu_tr, k, 1)
        stats_gpu, stats_cpu = gpu_tr.update(num_updates=10), cpu_tr.update(num_updates=10)
        cpu_tr.rng = sampling_rng
        assert rel_err(a.get(cuda, "params"), cpu_tr.params) <= 1e-4, k
        assert rel_err(a.get(cuda, "opt_state"), cpu_tr.opt_state) <= 1e-4, k
        for key in ["policy_loss", "value_loss", "entropy", "approx_kl", "grad_norm", "explained_variance"]:
            assert abs(stats_gpu[key] - stats_cpu[key]) <= 1e-4 * max(abs(stats_cpu[key]), 1e-2), (k, key)
        if k >= 1:  # update 0's data is fresh (plain GAE); later ones are one update old
            # NumpyTrainer.update's ratios: each sequence from its stored entering state (the behaviour weights'),
            # under the weights the update starts from
            views = ref.FlatLayout(ref.param_table(spec)).views(start_weights)
            seg = {name: cpu_tr.to_segments(getattr(cpu_tr, name)) for name in ["obs", "starts", "actions"]}
            dist = ref.policy_forward(spec, views, seg["obs"], seg["starts"], cpu_tr.segment_states())[0]
            new_logp = cpu_tr.from_segments(ref.action_log_prob(spec, dist, seg["actions"]))
            ratios = np.exp(new_logp - buf["logp"])
            expected = ref.gae(buf["values"], cpu_tr.last_value, buf["rewards"], buf["dones"], tc["gamma"],
                               tc["gae_lambda"], ratios, tc["vtrace_rho_clip"], tc["vtrace_c_clip"])
            assert rel_err(a.get(cuda, "adv_returns")[0], expected) <= 1e-4, k
    gpu_tr.close()


@pytest.mark.gpu
@pytest.mark.parametrize("env", [BOX, MULTI], ids=["box", "multi_discrete"])
def test_heads_train_bitwise_repeatably_with_graphs(env):
    """Two runs of four iterations (the first eager, the second captures the graphs, the rest replay them) with
    both normalisations end with the same bits: weights (with the observation statistics), optimizer state,
    actions, scaled rewards and reward moments."""
    _cuda_or_skip()
    runs = []
    for _ in range(2):
        trainer, _, _ = heads_pair(heads_config(env, norm_obs=True, norm_reward=True))
        for _ in range(4):
            trainer.rollout()
            trainer.update(num_updates=4)
        state = trainer.state_dict()
        runs.append((state["params"], state["optimizer"], trainer.arena.get(trainer.cuda, "actions"),
                     trainer.arena.get(trainer.cuda, "rewards"), state["reward_norm"]))
        trainer.close()
    for first, second in zip(*runs):
        assert np.array_equal(np.asarray(first), np.asarray(second))
    assert runs[0][4][2] > 4 * 16 * 24  # the moments counted every rollout's returns


@pytest.mark.gpu
def test_a_cuda_box_checkpoint_evaluates_on_the_cpu_and_resumes(tmp_path):
    """fastvec-train pendulum on the GPU with train.norm_obs and train.norm_reward: the checkpoint holds the Box head
    (dec.logstd), the observation statistics and the reward moments; the CPU trainer's --eval plays it (the
    weights are the same bytes), and --resume on the GPU continues from the saved moments."""
    _cuda_or_skip()
    from fastvec.trainer import checkpoint, run
    config = load_config("pendulum", {"env": {"num_envs": 32},
                                      "policy": {"kind": "mlp", "hidden": 32, "layers": 1},
                                      "train": {"device": "cuda", "horizon": 32, "bptt_horizon": 32,
                                                "minibatch_size": 256, "update_epochs": 2, "seed": 3,
                                                "norm_obs": True, "norm_reward": True,
                                                "total_timesteps": 32 * 32 * 4}})
    summary = run.train(config, tmp_path / "run", dashboard=False)
    assert summary["trainer"].device == "cuda" and summary["trainer"].spec.action_kind == "box"
    meta, state = checkpoint.load(summary["checkpoint"])
    spec = checkpoint.spec_of(meta)
    assert spec.action_kind == "box" and spec.norm_obs
    views = ref.FlatLayout(ref.param_table(spec)).views(state["params"])
    assert views["obs_norm.count"][0] >= 4 * 32 * 32 and np.any(views["dec.logstd"] != 0)
    assert state["reward_norm"][2] > 4 * 32 * 32
    cpu_config = load_config("pendulum", {"env": {"num_envs": 8}, "policy": dict(config["policy"]),
                                          "train": {**config["train"], "device": "cpu"}})
    cpu_config["eval"]["episodes"] = 8
    result = run.evaluate(cpu_config, summary["checkpoint"])
    assert result["episodes"] == 8 and -3300 < result["episode_return"] < 0  # Pendulum: 200 steps of cost <= 16.3
    config["train"]["total_timesteps"] = 32 * 32 * 5
    resumed = run.train(config, tmp_path / "run", resume=True, dashboard=False)["trainer"]
    assert resumed.update_index == 5 and resumed.state_dict()["reward_norm"][2] > state["reward_norm"][2]
