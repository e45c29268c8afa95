"""The CUDA trainer's team kernels (fastvec/trainer/cuda/teams.cu) without a GPU: built for the CPU by
tests/emulation/teams_on_cpu.cpp and compared with the NumPy reference's masked categorical (reference.mask_logits,
mask_logits_grad, masked_uniforms) on random inputs, with rows where one action alone is available and zero
uniforms; and team_rollout.cu's team_inputs_kernel on a CPU batch's games against agent_inputs.AgentInputs.
tests/trainer/test_cuda_teams.py checks the whole trainer on the device."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import minibatch_sources
from test_heads_kernels import build_harness, call, rel_err

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.plan import SCALARS_DTYPE

HARNESS = Path(__file__).resolve().parent / "teams_on_cpu.cpp"
SPEC = ref.PolicySpec(obs_size=4, num_actions=7)


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    return build_harness(tmp_path_factory, HARNESS)


def random_masks(rng, rows: int, actions: int) -> np.ndarray:
    """(rows, A) uint8 masks with at least one available action a row: a third with exactly one (the first, the
    last or a middle one), the rest random."""
    mask = (rng.random((rows, actions)) < 0.5).astype(np.uint8)
    single = rng.random(rows) < 1 / 3
    only = rng.choice([0, actions - 1, actions // 2], rows)
    mask[single] = 0
    mask[single, only[single]] = 1
    empty = mask.sum(1) == 0
    mask[empty, rng.integers(0, actions, empty.sum())] = 1
    return mask


def test_masked_sampler_draws_the_references_action_and_never_an_unavailable_one(emu):
    """sample_masked_row (host_sample_kernel's draw with a mask) against reference.policy_act's: mask_logits, then
    masked_uniforms, then the categorical's inverse CDF; the counter uniforms, with zeros and near-ones mixed in
    (a zero would pick a leading unavailable action without masked_uniforms)."""
    rng = np.random.default_rng(11)
    rows, a = 3000, SPEC.num_actions
    logits = (rng.standard_normal((rows, a)) * 3).astype(np.float32)
    mask = random_masks(rng, rows, a)
    u = ref.policy_uniforms(ref.sampling_key(7), rows, 3)
    u[::5] = 0.0
    u[1::7] = np.float32(1 - 2**-24)
    actions, logp = np.zeros(rows, np.int32), np.zeros(rows, np.float32)
    call(emu.emu_sample_masked, rows, a, logits, mask, u, actions, logp)
    masked = ref.mask_logits(logits, mask)
    want, want_logp = ref.sample_head(SPEC, masked, ref.masked_uniforms(u))
    assert np.array_equal(actions, want)
    assert mask[np.arange(rows), actions].all()
    single = mask.sum(1) == 1
    assert single.sum() > 500 and np.array_equal(actions[single], mask[single].argmax(1))
    assert rel_err(logp, want_logp) <= 1e-6
    assert np.all(logp[single] == 0)  # the one available action has probability 1
    plain_actions, plain_logp = np.zeros(rows, np.int32), np.zeros(rows, np.float32)
    call(emu.emu_sample_masked, rows, a, logits, None, u, plain_actions, plain_logp)  # no mask: sample_row itself
    assert np.array_equal(plain_actions, ref.sample_head(SPEC, logits, u)[0])


def test_masked_loss_matches_the_references_masked_ppo_loss_and_zeroes_unavailable_gradients(emu):
    """The update's chain: mask_logits_kernel on the decoder output, ppo_loss_kernel, mask_logits_grad_kernel,
    against reference.ppo_loss on mask_logits' logits and mask_logits_grad (NumpyTrainer.minibatch_step): the
    masked logits bit for bit, dy within float32 rounding of the loss (1e-5, as the unmasked loss test), exactly 0
    on unavailable actions, and the entropy statistic the masked categorical's (finite: 0 * log 0 terms are 0)."""
    rng = np.random.default_rng(12)
    n, a = 900, SPEC.num_actions
    y = rng.standard_normal((n, a + 1)).astype(np.float32)
    mask = random_masks(rng, n, a)
    masked = ref.mask_logits(y[:, :a], mask)
    actions = ref.sample_head(SPEC, masked, ref.masked_uniforms(rng.random(n, np.float32)))[0].astype(np.int32)
    old_logp = (ref.action_log_prob(SPEC, masked, actions) + rng.standard_normal(n) * 0.2).astype(np.float32)
    old_values = (y[:, -1] + rng.standard_normal(n) * 0.3).astype(np.float32)
    adv, returns = (rng.standard_normal(n) * 2).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    moments = np.array([adv.astype(np.float64).mean(), adv.astype(np.float64).std()], np.float32)
    adv_n = ((adv - moments[0]) / (moments[1] + np.float32(1e-8))).astype(np.float32)
    _, dlogits, dvalues, stats = ref.ppo_loss(masked, y[:, -1], actions, old_logp, old_values, adv_n, returns, 0.2,
                                              0.2, 0.5, 0.01)
    dlogits = ref.mask_logits_grad(dlogits, mask)
    scalars = np.zeros((), SCALARS_DTYPE)
    scalars["ent_coef"] = 0.01
    scalars = np.frombuffer(scalars.tobytes(), np.uint8).copy()
    dy, new_logp = np.zeros((n, a + 1), np.float32), np.zeros(n, np.float32)
    call(emu.emu_mask_logits, np.int64(n), a, a + 1, mask, y)
    assert np.array_equal(y[:, :a], masked)
    blocks = -(-n // 256)
    call(emu.emu_ppo_loss, n, a, y, actions, old_logp, old_values, adv, returns, moments, scalars, np.float32(0.2),
         np.float32(0.2), np.float32(0.5), dy, np.zeros(5 * blocks), np.zeros(1, np.uint32), new_logp,
         np.arange(n, dtype=np.int32))
    call(emu.emu_mask_logits_grad, np.int64(n), a, a + 1, mask, dy)
    assert np.all(dy[:, :a][mask == 0] == 0) and np.isfinite(dy).all()
    assert rel_err(dy[:, :a], dlogits) <= 1e-5
    assert rel_err(dy[:, -1], dvalues) <= 1e-6
    assert rel_err(new_logp, ref.action_log_prob(SPEC, masked, actions)) <= 1e-6
    got = np.frombuffer(scalars.tobytes(), SCALARS_DTYPE)[0]["stat"]
    for i, key in enumerate(["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"]):
        assert abs(got[i] - stats[key]) <= 1e-5 * max(abs(stats[key]), 1.0), key


def test_mask_logits_grad_zeroes_every_rows_unavailable_actions_and_keeps_the_rest(emu):
    """mask_logits_grad_kernel on any gradient (n rows of Y columns, the first A the actions'): every row's
    unavailable actions 0 and its available ones and the value column as they were, as reference.mask_logits_grad."""
    rng = np.random.default_rng(21)
    n, a = 900, SPEC.num_actions
    dy = rng.standard_normal((n, a + 1)).astype(np.float32)
    mask = random_masks(rng, n, a)
    want = dy.copy()
    want[:, :a] = ref.mask_logits_grad(dy[:, :a], mask)
    call(emu.emu_mask_logits_grad, np.int64(n), a, a + 1, mask, dy)
    np.testing.assert_array_equal(dy, want)
    assert (mask == 0).any(axis=1)[-n // 4:].any()  # unavailable actions in the last rows too


def test_gather_rows_copies_each_minibatch_rows_masks_and_world_state(emu):
    """gather_rows_kernel by gather_minibatch_kernel's mb_src: the masks (A bytes a row) and the world-state critic
    input (4C bytes: its floats' bits) of the minibatch's rows, as NumpyTrainer's to_segments then [:, idx]."""
    rng = np.random.default_rng(13)
    t_len, r, kk, bm, first, a, c = 8, 6, 4, 5, 2, 9, 13
    perm = rng.permutation((t_len // kk) * r).astype(np.int32)
    src = minibatch_sources(perm, first, bm, r, kk).reshape(-1).astype(np.int32)
    n = kk * bm
    masks = random_masks(rng, t_len * r, a)
    world = rng.standard_normal((t_len * r, c)).astype(np.float32)
    mb_masks, mb_world = np.zeros((n, a), np.uint8), np.zeros((n, c), np.float32)
    call(emu.emu_gather_rows, np.int64(n), a, src, masks, mb_masks)
    call(emu.emu_gather_rows, np.int64(n), 4 * c, src, world, mb_world)
    assert np.array_equal(mb_masks, masks[src])
    assert np.array_equal(mb_world, world[src])


# ------------------------------------------------------------------------------------------------
# team_rollout.cu's team_inputs_kernel on a CPU batch's games

TEAM_HARNESS = Path(__file__).resolve().parent / "team_inputs_on_cpu.cpp"
TEAM_CASES = {"smax-3m": ("smax:3m", "world_state"),
              "simple_speaker_listener": ("simple_speaker_listener", "world_state"),
              "simple_spread": ("simple_spread", "local")}


@pytest.fixture(scope="module")
def team_emu(tmp_path_factory):
    """{case: (team_inputs_on_cpu.cpp built with its game, its config)}."""
    return {case: build_team_harness(tmp_path_factory, TEAM_HARNESS, name, critic_input)
            for case, (name, critic_input) in TEAM_CASES.items()}


@pytest.mark.parametrize("case", list(TEAM_CASES))
def test_team_inputs_kernel_writes_what_agent_inputs_reads_from_a_cpu_batch(team_emu, case):
    """After a reset and after steps of random available actions (episodes ending on the way), team_inputs_kernel
    on a CPU batch's games and observations writes AgentInputs' obs (the one-hot id appended, and without it:
    policy.agent_id off), masks (SMAX's available actions; simple_speaker_listener's agents' own spaces) and
    world-state critic input (SMAX's world state; every agent's own obs for MPE) bit for bit."""
    from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
    from fastvec.trainer.resolve import make_batch
    from fastvec.trainer.resolve import make_policy_spec
    lib, config = team_emu[case]
    batch = make_batch(config)
    try:
        n, agents = batch.num_envs, batch.obs.shape[1]
        assert lib.emu_slot_size() == batch.slots.shape[1]
        world = world_state_size(batch) if config.policy.critic_input == "world_state" else 0
        spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces, agents, world)
        inputs = AgentInputs(spec, batch)
        rng = np.random.default_rng(14)
        batch.reset(np.arange(n, dtype=np.uint64) + 5, None)
        for step in range(40):
            if step % 13 == 0:
                check_team_inputs(lib, spec, batch, inputs)
            mask = inputs.mask()
            if mask is None:
                mask = np.ones((n * agents, spec.num_actions), np.uint8)
            choice = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
            batch.step(choice.reshape(n, agents))
        check_team_inputs(lib, spec, batch, inputs)
    finally:
        batch.close()


def check_team_inputs(lib, spec, batch, inputs) -> None:
    from fastvec.trainer.agent_inputs import AgentInputs
    check_team_inputs_of(lib, spec, batch, inputs)
    if spec.agent_ids:  # the same games with policy.agent_id off: each agent's observation as the env gives it
        plain = dataclasses.replace(spec, agent_ids=0)
        check_team_inputs_of(lib, plain, batch, AgentInputs(plain, batch))


def check_team_inputs_of(lib, spec, batch, inputs) -> None:
    """team_inputs_kernel's obs, masks and world of the batch's games are AgentInputs' bit for bit, and nothing is
    written past their last rows (each buffer is followed by a guard of NaN or 7s)."""
    rows, guard = batch.num_envs * batch.obs.shape[1], 64
    want_mask, want_world = inputs.mask(), inputs.world()
    obs_buf = np.full(rows * spec.input_size + guard, np.nan, np.float32)
    mask_buf = np.full(rows * spec.num_actions + guard, 7, np.uint8)
    world_buf = np.full(rows * spec.critic_input_size + guard, np.nan, np.float32)
    obs = obs_buf[:-guard].reshape(rows, spec.input_size)
    masks = mask_buf[:-guard].reshape(rows, spec.num_actions) if want_mask is not None else None
    world = world_buf[:-guard].reshape(rows, spec.critic_input_size) if want_world is not None else None
    own = None if inputs.static_mask is None else np.ascontiguousarray(inputs.static_mask[:batch.obs.shape[1]])
    columns = None if inputs.columns is None else np.ascontiguousarray(inputs.columns, np.int32)
    scratch = np.zeros((batch.num_envs, max(spec.world_size, 1)), np.float32)
    call(lib.emu_team_inputs, batch.num_envs, batch.slots, np.ascontiguousarray(batch.obs, np.float32), obs_buf,
         None if masks is None else mask_buf, own, None if world is None else world_buf, scratch, columns,
         int(bool(spec.agent_ids)), spec.world_size)
    assert np.array_equal(obs, inputs.obs())
    assert np.isnan(obs_buf[-guard:]).all() and (mask_buf[-guard:] == 7).all() and np.isnan(world_buf[-guard:]).all()
    if want_mask is not None:
        assert np.array_equal(masks, want_mask)
        assert 0 < want_mask.mean() < 1
    if want_world is not None:
        assert np.array_equal(world, want_world)


TEAM_ROLLOUT_HARNESS = Path(__file__).resolve().parent / "team_rollout_on_cpu.cpp"


def build_team_harness(tmp_path_factory, harness: Path, name: str, critic_input: str):
    """harness built with game `name` (native.batches.team_source's env file and defines, as the trainer's module
    and the CPU batch are): (the library, the game's config)."""
    from fastvec import native
    from fastvec.native.batches import team_source
    from fastvec.trainer.config import load_config
    from fastvec.trainer.settings import Config
    config = Config.of(load_config(name, {"env": {"num_envs": 8}, "policy": {"critic_input": critic_input}}))
    source, defines, _ = team_source(config.env.name, dict(config.env.params))
    flags = [f"-I{native.NATIVE_DIR}", f"-I{Path(source).parent}", f'-DENV="{source}"',
             *[f"-D{k}={v}" for k, v in defines.items()]]
    return build_harness(tmp_path_factory, harness, flags), config


@pytest.mark.parametrize("case", ["smax-3m", "simple_speaker_listener"])
def test_team_rollout_step_samples_available_actions_and_steps_as_the_cpu_batch(tmp_path_factory, case):
    """rollout_step_kernel then team_inputs_kernel, as TeamRollout enqueues a step, against a CPU batch reset with
    the same seeds: every agent's action is reference.policy_act's masked draw from the decoder output (plus its
    bias) with the counter uniforms and only ever an available one; the env step's rewards and done flags are the
    CPU batch's fed those actions, through episode ends; the next step's inputs are AgentInputs' bit for bit; the
    episode accumulator holds the finished episodes' count, mean return and each agent's sum of returns."""
    from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
    from fastvec.trainer.resolve import env_build, make_batch
    from fastvec.trainer.resolve import make_policy_spec
    name, critic_input = TEAM_CASES[case]
    lib, config = build_team_harness(tmp_path_factory, TEAM_ROLLOUT_HARNESS, name, critic_input)
    batch = make_batch(config)
    try:
        n, agents = batch.num_envs, batch.obs.shape[1]
        rows = n * agents
        assert lib.emu_slot_size() == batch.slots.shape[1]
        spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces, agents,
                                world_state_size(batch))
        inputs, a, y_width = AgentInputs(spec, batch), spec.num_actions, spec.num_actions + 1
        seeds = np.arange(n, dtype=np.uint64) + 11
        batch.reset(seeds, None)
        slots = np.zeros_like(batch.slots)
        env_obs = np.zeros((rows, spec.obs_size), np.float32)
        call(lib.emu_reset, n, slots, seeds, env_obs)
        own = None if inputs.static_mask is None else np.ascontiguousarray(inputs.static_mask[:agents])
        columns = None if inputs.columns is None else np.ascontiguousarray(inputs.columns, np.int32)
        obs, masks = np.zeros((rows, spec.input_size), np.float32), np.zeros((rows, a), np.uint8)
        world = np.zeros((rows, spec.critic_input_size), np.float32)
        scratch = np.zeros((n, spec.world_size), np.float32)

        def team_inputs():
            call(lib.emu_team_inputs, n, slots, env_obs, obs, masks, own, world, scratch, columns, 1, spec.world_size)
            assert np.array_equal(obs, inputs.obs()) and np.array_equal(masks, inputs.mask())
            assert np.array_equal(world, inputs.world())

        team_inputs()
        rng, key, max_steps = np.random.default_rng(15), ref.sampling_key(9), env_build(config, batch)[2]
        scalars = np.zeros(SCALARS_DTYPE.itemsize, np.uint8)
        terminated, truncated = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
        ep_return, ep_length = np.zeros(rows, np.float32), np.zeros(n, np.int32)
        ep_stats = np.zeros((n, max(len(batch.env.stat_names), 1)), np.float32)
        acc = np.zeros(3 + len(batch.env.stat_names) + agents)
        actions, logp, values = np.zeros(rows, np.int32), np.zeros(rows, np.float32), np.zeros(rows, np.float32)
        rewards, dones, starts = (np.zeros(rows, np.float32) for _ in range(3))
        finished = []
        for t in range(60):
            y = (rng.standard_normal((rows, y_width)) * 3).astype(np.float32)
            bias = rng.standard_normal(y_width).astype(np.float32)
            step_masks = masks.copy()
            call(lib.emu_rollout_step, n, t, y, bias, slots, np.zeros((rows, spec.obs_size), np.float32), terminated,
                 truncated, ep_return, ep_length, ep_stats, acc, scalars, np.uint64(key), max_steps, env_obs,
                 actions, logp, values, rewards, dones, starts, step_masks)
            logits = ref.mask_logits((y + bias)[:, :a], step_masks)
            want, want_logp = ref.sample_head(spec, logits, ref.masked_uniforms(ref.policy_uniforms(key, rows, t)))
            assert np.array_equal(actions, want), t
            assert step_masks[np.arange(rows), actions].all(), t
            assert rel_err(logp, want_logp) <= 1e-6 and np.array_equal(values, (y + bias)[:, a]), t
            batch.step(actions.astype(np.int64).reshape(n, agents))
            assert np.array_equal(rewards, batch.rewards.reshape(rows)), t
            done = batch.terminated | batch.truncated
            assert np.array_equal(dones, np.repeat(done, agents).astype(np.float32)), t
            finished += list(batch.episode_return[done])
            team_inputs()
        returns = np.array(finished, np.float64)
        assert len(returns) >= n  # every game ended at least once: autoreset's inputs were checked
        assert acc[0] == len(returns) and acc[1] / acc[0] == pytest.approx(returns.mean(), rel=1e-5)
        assert np.allclose(acc[-agents:], returns.sum(0), rtol=1e-5, atol=1e-5)
    finally:
        batch.close()


def test_the_mask_and_gather_kernels_write_nothing_past_their_outputs(emu):
    """mask_logits_kernel, mask_logits_grad_kernel and gather_rows_kernel on sizes that fill no whole block (n * A,
    n * width): their idle threads touch nothing after the last row, even where the memory after the masks holds
    unavailable actions and the index array goes on."""
    rng = np.random.default_rng(16)
    n, a, guard = 9, 7, 64
    mask = np.concatenate([random_masks(rng, n, a).reshape(-1), np.zeros(guard, np.uint8)])
    for kernel in (emu.emu_mask_logits, emu.emu_mask_logits_grad):
        y = np.concatenate([rng.standard_normal(n * (a + 1)), np.full(guard, 3.0)]).astype(np.float32)
        call(kernel, np.int64(n), a, a + 1, mask, y)
        assert (y[n * (a + 1):] == 3.0).all() and (y[:n * (a + 1)] != 3.0).all()
    width, rows = 5, 20
    src = rng.integers(0, 200, rows * width).astype(np.uint8)
    index = np.concatenate([rng.integers(0, rows, n), np.zeros(guard, np.int64)]).astype(np.int32)
    dst = np.full(n * width + guard, 255, np.uint8)
    call(emu.emu_gather_rows, np.int64(n), width, index, src, dst)
    assert np.array_equal(dst[:n * width].reshape(n, width), src.reshape(rows, width)[index[:n]])
    assert (dst[n * width:] == 255).all()


def test_a_zero_uniform_draws_the_first_available_action_down_to_a_probability_of_2_to_the_minus_25(emu):
    """A zero uniform becomes 2^-25 (masked_uniforms): the first available action is drawn when its probability is
    above that (here 3.7e-8) and passed over when below (here 2e-8), by the kernel as by the reference."""
    a = SPEC.num_actions
    mask = np.zeros((2, a), np.uint8)
    mask[:, 2:4] = 1  # actions 2 and 3 available
    logits = np.zeros((2, a), np.float32)
    logits[:, 2] = [np.log(3.7e-8), np.log(2e-8)]
    u, actions, logp = np.zeros(2, np.float32), np.zeros(2, np.int32), np.zeros(2, np.float32)
    call(emu.emu_sample_masked, 2, a, logits, mask, u, actions, logp)
    want, _ = ref.sample_head(SPEC, ref.mask_logits(logits, mask), ref.masked_uniforms(u))
    assert list(actions) == list(want) == [2, 3]
