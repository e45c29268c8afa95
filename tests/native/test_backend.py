"""Both backends offer what every face steps through (native/backend.py's Backend): the CPU batch whole, the GPU
batch's class every method of it (its arrays need a GPU; tests/native/test_cuda_backend.py steps it)."""

import inspect

import numpy as np
import pytest

from fastvec import native
from fastvec.native import backend, cpu


def protocol_methods(protocol) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(protocol).items()
            if inspect.isfunction(member) and not name.startswith("_")}


def cartpole_batch(num_envs: int = 3) -> cpu.CpuBatch:
    compiled = cpu.load(native.source_path("cartpole"), tuple(sorted(native.resolve_defines("cartpole", {}).items())))
    return cpu.CpuBatch(compiled, num_envs, native.AUTORESET_CODES["SameStep"], 7)


def test_the_cpu_batch_is_a_backend_with_host_arrays():
    batch = cartpole_batch()
    assert isinstance(batch, backend.Backend) and isinstance(batch.env, backend.EnvBuild)
    assert batch.host_arrays is True and batch.device == "cpu" and batch.max_episode_steps == 7
    for name in ("obs", "rewards", "terminated", "truncated", "final_obs", "episode_return", "episode_length",
                 "episode_stats"):
        assert isinstance(getattr(batch, name), np.ndarray), name
    batch.reset(np.arange(3, dtype=np.uint64), None)
    batch.synchronize()  # nothing to wait for
    with pytest.raises(NotImplementedError, match="device='cuda'"):
        batch.rollout("random", 4)
    batch.close()


@pytest.mark.parametrize("cls_path", ["fastvec.native.cpu.CpuBatch", "fastvec.native.cuda.CudaBatch"])
def test_each_backend_class_defines_every_method_with_the_protocols_parameters(cls_path):
    module, _, name = cls_path.rpartition(".")
    cls = getattr(__import__(module, fromlist=[name]), name)  # cuda.py imports without PyCUDA
    for method, signature in protocol_methods(backend.Backend).items():
        assert inspect.isfunction(getattr(cls, method, None)), f"{name} lacks {method}"
        assert list(inspect.signature(getattr(cls, method)).parameters)[:len(signature.parameters)] == \
            list(signature.parameters), f"{name}.{method}{inspect.signature(getattr(cls, method))}"
    for attribute in ("max_episode_steps", "host_arrays"):  # class-level: a property or a constant
        assert isinstance(inspect.getattr_static(cls, attribute), (property, bool)), attribute


@pytest.mark.gpu
@pytest.mark.parametrize("host_arrays", [True, False])
def test_the_gpu_batch_is_a_backend_that_says_which_arrays_it_hands_out(host_arrays):
    from fastvec.native.batches import load_batch
    from fastvec.native.device_array import DeviceArray

    batch = load_batch("cartpole", 5, device="cuda", max_episode_steps=9, host_arrays=host_arrays)
    assert isinstance(batch, backend.Backend) and isinstance(batch.env, backend.EnvBuild)
    assert batch.host_arrays is host_arrays and batch.device == "cuda:0" and batch.max_episode_steps == 9
    kind = np.ndarray if host_arrays else DeviceArray
    for name in ("obs", "rewards", "terminated", "truncated", "final_obs", "episode_return", "episode_length",
                 "episode_stats"):
        assert isinstance(getattr(batch, name), kind), name
    batch.max_episode_steps = 9  # the same limit is no change
    with pytest.raises(ValueError, match="fixed at construction"):
        batch.max_episode_steps = 10
    assert batch.max_episode_steps == 9
    batch.reset(np.arange(5, dtype=np.uint64), None)
    batch.rollout("random", 3)
    batch.synchronize()
    batch.close()


def test_load_batch_takes_a_registered_name_or_an_env_file_with_the_same_build():
    from fastvec.native.batches import load_batch, load_env

    by_name = load_batch("CartPole", 2, {"float32": True}, autoreset="Disabled", max_episode_steps=4)
    # A registered name's parameters are completed with their defaults; an env file's go as given, upper-cased.
    defaults = {"float32": 1, "sutton_barto_reward": 0}
    by_file = load_batch(native.source_path("cartpole"), 2, defaults, autoreset="Disabled", max_episode_steps=4)
    assert by_name.env is by_file.env is load_env("cartpole", {"float32": 1})  # one build, loaded once
    with pytest.raises(TypeError, match="frameskip"):
        load_env("cartpole", {"frameskip": 2})  # a registered env's parameters are checked against the registry
    with pytest.raises(TypeError, match="is not an int"):
        load_env("breakout", {"frameskip": True})
    for batch in (by_name, by_file):
        batch.reset(np.arange(2, dtype=np.uint64), None)
        for _ in range(4):
            batch.step(np.zeros(2, np.int64))
        assert batch.truncated.all()  # the step limit reached, no autoreset
    assert np.array_equal(by_name.obs, by_file.obs)


@pytest.mark.parametrize("env, params", [("breakout", {}), ("cartpole", {}), ("pong", {"pong_bot": 1})])
def test_the_numpy_gym_block_equals_the_one_the_c_step_writes(env, params):
    """cpu.gym_block (the GPU batch's gym_step, cut from its host mirrors) against the block batch.h's
    fv_copy_out writes during CpuBatch.gym_step, field by field, through episode ends and autoresets."""
    from fastvec.native.batches import load_batch

    batch = load_batch(env, 6, params, max_episode_steps=25)
    batch.reset(np.arange(6, dtype=np.uint64), None)
    size, fields = cpu.gym_out_layout(6, len(batch.env.stat_names))
    rng, ends = np.random.default_rng(0), 0
    for _ in range(60):
        ended, written = batch.gym_step(rng.integers(0, batch.env.num_actions, 6), True)
        twin = cpu.gym_block(batch, True)
        ends += ended
        assert len(twin) == len(written) and batch.gym_obs_offset >= size
        for name, (dtype, count, offset) in {**fields, "obs": (batch.obs.dtype, batch.obs.size,
                                                               batch.gym_obs_offset)}.items():
            assert np.array_equal(np.frombuffer(twin, dtype, count, offset),
                                  np.frombuffer(written, dtype, count, offset)), name
    assert ends > 0  # the episode fields were compared where episodes ended too


def test_resetting_every_env_clears_the_done_flags_and_a_partial_reset_leaves_them():
    """A face reads terminated/truncated after a step only; after a reset of every env the batch's own arrays say
    no episode has ended, on either backend (the GPU batch's reset clears its device flags the same way)."""
    batch = cartpole_batch()
    batch.reset(np.arange(3, dtype=np.uint64), None)
    for _ in range(7):  # the step limit: every env truncates at step 7
        batch.step(np.zeros((3, 1), np.int64))
    assert (batch.terminated | batch.truncated).all()
    batch.reset(None, np.array([True, False, False]))
    assert (batch.terminated | batch.truncated)[1:].all()  # the envs not reset keep their step's outcome
    batch.reset(None, np.ones(3, np.bool_))
    assert not (batch.terminated | batch.truncated).any()


def test_the_numpy_gym_block_of_a_two_agent_game_holds_agent_zeros_outputs():
    """cpu.gym_block of a two-player game (Pong without the bot, zero-sum) carries agent 0's rewards and returns,
    as the C step's block does, never the other player's (its negation here)."""
    from fastvec.native.batches import load_batch

    batch = load_batch("pong", 6, {"pong_bot": 0, "points": 1}, max_episode_steps=200)
    batch.reset(np.arange(6, dtype=np.uint64), None)
    fields = cpu.gym_out_layout(6, len(batch.env.stat_names))[1]
    rng, scored = np.random.default_rng(0), 0
    for _ in range(120):
        ended, written = batch.gym_step(rng.integers(0, 3, (6, 2)), False)
        twin = cpu.gym_block(batch, False)
        for name in ("rewards", "episode_return"):
            got = np.frombuffer(twin, *fields[name])
            np.testing.assert_array_equal(got, np.frombuffer(written, *fields[name]), err_msg=name)
            np.testing.assert_array_equal(got, getattr(batch, name)[:, 0], err_msg=name)
        scored += int((batch.episode_return[:, 0] != 0).sum())
    assert scored > 0  # the two agents' returns differed in some step


def test_load_batch_hands_a_gpu_device_its_build_mode_limit_and_by_default_host_arrays_without_per_step_checks(
        monkeypatch):
    """load_batch on "cuda" / "cuda:N" builds for that device and makes cuda.CudaBatch with the autoreset code and
    the step limit (0: none); by default it hands out host arrays and does not synchronise every step to check the
    actions (validate=False: the fast path); both are the caller's to change. Checked without a GPU: cuda.load and
    CudaBatch stand in, recording what they are given."""
    from fastvec.native import cuda
    from fastvec.native.batches import load_batch

    calls = []
    monkeypatch.setattr(cuda, "load", lambda path, defines, index: calls.append(("load", path.name, defines, index))
                        or "build")
    monkeypatch.setattr(cuda, "CudaBatch", lambda *args, **kwargs: calls.append(("batch", args, kwargs)) or "batch")
    assert load_batch("cartpole", 7, device="cuda:1", autoreset="NextStep", max_episode_steps=0) == "batch"
    defines = tuple(sorted(native.resolve_defines("cartpole", {}).items()))
    assert calls == [("load", "cartpole.h", defines, 1),
                     ("batch", ("build", 7, native.AUTORESET_CODES["NextStep"], None),
                      {"numpy": True, "validate": False})]
    calls.clear()
    load_batch("cartpole", 2, device="cuda", max_episode_steps=9, host_arrays=False, validate=True)
    assert calls[0][3] == 0 and calls[1] == ("batch", ("build", 2, native.AUTORESET_CODES["SameStep"], 9),
                                             {"numpy": False, "validate": True})


def test_load_batch_on_the_cpu_sets_the_builds_thread_count_only_when_given_one():
    """threads > 0 sets the threads that step the env's build (the caller included); 0, the default, leaves the count
    the build has (FASTVEC_NUM_THREADS or the CPUs, set at load)."""
    from fastvec.native.batches import load_batch, load_env

    lib = load_env("cartpole").lib
    before = lib.fv_set_num_threads(0)  # 0 changes nothing and returns the count
    try:
        batch = load_batch("cartpole", 4, threads=3)
        assert lib.fv_set_num_threads(0) == 3 and batch.num_envs == 4
        load_batch("cartpole", 4)
        assert lib.fv_set_num_threads(0) == 3
        load_batch("cartpole", 4, threads=1)
        assert lib.fv_set_num_threads(0) == 1
    finally:
        lib.fv_set_num_threads(before)
