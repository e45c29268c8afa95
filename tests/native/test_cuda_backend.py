"""The GPU backend (PyCUDA): the CPU build is the oracle for trajectories, autoreset and seeding;
zero-copy interop with PyTorch, JAX and CuPy; device-side action checks; graph replay and the
fused rollout equal eager stepping. Marked `gpu`: skipped without PyCUDA and a CUDA GPU."""

import os
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX must leave the GPU to the others

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastvec
from conftest import gpu_available
from fastvec.native.cpu import ActionError
from fastvec.native import cuda_build
from fastvec.native.cuda import STEP_KERNEL_NAMES  # imports without PyCUDA

COUNTING = Path(__file__).resolve().parents[1] / "envs" / "counting.h"




def test_cuda_request_without_pycuda_or_gpu_says_how_to_fix():
    if gpu_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(RuntimeError, match=r"fastvec\[cuda\]|no usable GPU|no CUDA GPU"):
        fastvec.make_vec("CartPole", 4, device="cuda")


def test_device_arguments_are_checked_before_compiling():
    with pytest.raises(ValueError, match="array_type='device' needs a GPU env"):
        fastvec.make_vec("CartPole", 4, array_type="device")
    with pytest.raises(ValueError, match="array_type"):
        fastvec.make_vec("CartPole", 4, device="cuda", array_type="torch")
    from fastvec.native.cuda import parse_device

    assert parse_device("cuda") == 0 and parse_device("cuda:3") == 3
    with pytest.raises(ValueError, match="'cpu', 'cuda', 'cuda:N'"):
        parse_device("gpu0")


@pytest.mark.parametrize("threads,registers_to_blocks", [
    (256, {16: 8, 32: 8, 40: 6, 48: 5, 56: 4, 64: 4, 72: 3, 96: 2, 128: 2, 168: 1, 255: 1}),
    (1024, {32: 2, 33: 1, 64: 1}), (128, {32: 16, 128: 4}), (64, {32: 32, 64: 16}), (32, {16: 32, 64: 32})])
def test_resident_blocks_is_the_occupancy_calculators_answer_for_compute_capability_9(threads, registers_to_blocks):
    """Blocks per SM with no shared memory, as NVIDIA's occupancy calculator gives them for sm_90: 65,536 registers
    allocated per warp in units of 256, at most 2,048 threads and 32 blocks (the last binding for small blocks)."""
    got = {r: cuda_build.resident_blocks(r, threads) for r in registers_to_blocks}
    assert got == registers_to_blocks


def test_step_kernel_choice_and_grids_without_a_gpu():
    """cuda.step_kernel_name and CudaBatch.use_step_kernel on a stand-in compiled env (no GPU):
    staged_wide for envs whose state and obs exceed 64 bytes, the wide kernel that keeps more
    threads per SM otherwise, names checked, staged falling back to wide where nothing is staged,
    and each kernel's grid covering every env."""
    from fastvec.native import cuda

    def fake_env(state_size, obs_size, stage_threads=256, wide="wide_occ"):
        return SimpleNamespace(num_agents=1, obs_size=obs_size, obs_dtype=np.dtype(np.float32), state_size=state_size,
                               stage_threads=stage_threads, wide_kernel_name=wide,
                               step_kernels={name: name for name in STEP_KERNEL_NAMES})

    cartpole, breakout, unstaged = fake_env(32, 4), fake_env(72, 118, stage_threads=64), fake_env(72, 118, 0, "wide")
    for n in (1, 65536, 1 << 20, 1 << 24):
        assert cuda.step_kernel_name(cartpole, n) == "wide_occ"
        assert cuda.step_kernel_name(fake_env(16, 4, wide="wide"), n) == "wide"
        assert cuda.step_kernel_name(breakout, n) == "staged_wide"
    assert cuda.step_kernel_name(unstaged, 1000) == "wide"
    assert cuda.step_kernel_name(unstaged, 1000, "staged_wide") == "wide"
    with pytest.raises(ValueError, match="step kernel 'plain1' is not one of auto, staged_wide"):
        cuda.step_kernel_name(cartpole, 1000, "plain1")
    # 54 registers: 4 blocks of 256 threads per SM, 48: 5, 40: 6, 32 and fewer: 8 (2,048 threads).
    assert [cuda_build.resident_blocks(r) for r in (54, 48, 43, 40, 32, 16)] == [4, 5, 5, 6, 8, 8]
    for env, name, threads in [(cartpole, "wide_occ", 256), (cartpole, "wide", 256), (breakout, "staged_wide", 64),
                               (unstaged, "staged_wide", 256)]:
        batch = cuda.CudaBatch.__new__(cuda.CudaBatch)  # no __init__: nothing is allocated
        batch.env, batch.num_envs, batch._graphs = env, 1000, {}
        batch.use_step_kernel(name)
        assert batch._step_fn == batch.step_kernel_name == (name if env is not unstaged else "wide")
        assert batch._step_block == (threads, 1, 1)
        assert batch._step_grid[0] == -(-1000 // threads)


def test_rollout_kernel_choice_and_grids_without_a_gpu():
    """cuda.rollout_kernel_name and CudaBatch.use_rollout_kernel on stand-in compiled envs (no GPU), as measured on
    an H100 (benchmarks/lab/rollout_kernels.py): staged for byte observations larger than the slot (MinAtar),
    the 128-register cap where it fits more blocks an SM (the MPE and SMAX steps' 160-255 registers), else
    plain; names checked; staged falling back where nothing is staged; each kernel's grid covering every env."""
    from fastvec.native import cuda

    class Kernel:
        def __init__(self, registers):
            self.num_regs = registers

    def fake_env(obs_size, obs_dtype, slot_size, plain_registers, stage_threads=64):
        kernels = {"staged": Kernel(64), "plain": Kernel(plain_registers), "occ": Kernel(min(plain_registers, 128))}
        return SimpleNamespace(num_agents=1, obs_size=obs_size, obs_dtype=np.dtype(obs_dtype), slot_size=slot_size,
                               stage_threads=stage_threads, rollout_kernels=kernels)

    minatar = fake_env(400, np.uint8, 120, 255, stage_threads=32)
    float_obs = fake_env(450, np.float32, 416, 168, stage_threads=16)  # SMAX 3m's sizes: obs outweigh the slot
    mpe = fake_env(16, np.float32, 296, 174)
    cartpole = fake_env(4, np.float32, 64, 62, stage_threads=256)
    capped_alike = fake_env(16, np.float32, 296, 114)  # 114 and 128 registers: 2 blocks either way
    assert cuda.rollout_kernel_name(minatar) == "staged"
    assert cuda.rollout_kernel_name(fake_env(400, np.uint8, 120, 255, stage_threads=0)) == "occ"
    assert cuda.rollout_kernel_name(fake_env(40, np.uint8, 120, 255)) == "occ"  # bytes, but smaller than the slot
    assert cuda.rollout_kernel_name(float_obs) == cuda.rollout_kernel_name(mpe) == "occ"
    assert cuda.rollout_kernel_name(cartpole) == cuda.rollout_kernel_name(capped_alike) == "plain"
    assert cuda.rollout_kernel_name(cartpole, "occ") == "occ"
    assert cuda.rollout_kernel_name(fake_env(4, np.float32, 64, 62, stage_threads=0), "staged") == "plain"
    with pytest.raises(ValueError, match="rollout kernel 'wide' is not one of auto, staged, plain, occ"):
        cuda.rollout_kernel_name(cartpole, "wide")
    for env, name, threads in [(minatar, "auto", 32), (mpe, "auto", 256), (minatar, "plain", 256),
                               (cartpole, "staged", 256)]:
        batch = cuda.CudaBatch.__new__(cuda.CudaBatch)  # no __init__: nothing is allocated
        batch.env, batch.num_envs = env, 1000
        batch.use_rollout_kernel(name)
        assert batch._rollout_fn is env.rollout_kernels[batch.rollout_kernel_name]
        assert batch._rollout_block == (threads, 1, 1)
        assert batch._rollout_grid[0] == -(-1000 // threads)


class _Loaded(Exception):
    """Raised where a stand-in build would load its cubin: nothing of the module is needed."""


def _capture_nvcc(monkeypatch, tmp_path) -> list:
    """Stand-ins for the GPU and nvcc in fastvec.native.gpu: every build runs up to the nvcc command,
    which is recorded (and answered with a fake cubin), and stops with _Loaded at the load."""
    from fastvec.native import gpu

    commands = []

    def run(cmd):
        commands.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"cubin")
        return SimpleNamespace(returncode=0, stderr="")

    def module_from_buffer(cubin):
        raise _Loaded

    monkeypatch.setenv("FASTVEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gpu, "driver", lambda: SimpleNamespace(module_from_buffer=module_from_buffer))
    monkeypatch.setattr(gpu, "primary_context", lambda index=0: None)
    monkeypatch.setattr(gpu, "device_arch", lambda index=0: "sm_90")
    monkeypatch.setattr(gpu, "find_nvcc", lambda: "/stand-in/nvcc")
    monkeypatch.setattr(gpu, "_nvcc_version", lambda nvcc: "stand-in")
    monkeypatch.setattr(gpu, "_run_nvcc", run)
    return commands


def test_env_and_trainer_builds_use_the_same_nvcc_flags(monkeypatch, tmp_path):
    """The env backend and the trainer compile through gpu.py with one set of flags, without FMA
    contraction (the env headers' CPU/GPU bit equality needs it off); no GPU needed."""
    from fastvec import native
    from fastvec.native import cuda, gpu
    from fastvec.trainer.cuda import device

    commands = _capture_nvcc(monkeypatch, tmp_path)
    monkeypatch.setattr(device, "init", lambda: None)
    path = native.source_path("cartpole")
    with pytest.raises(_Loaded):
        cuda.CudaCompiledEnv(path, {"FLOAT32": 1}, 0)
    with pytest.raises(_Loaded):
        device.load_module(path, (("FLOAT32", 1),))
    env_cmd, trainer_cmd = commands
    assert gpu.NVCC_FLAGS == ["-O3", "--fmad=false"]
    flags = lambda cmd: [c for c in cmd[1:] if c.startswith("-") and not c.startswith(("-I", "-D", "-o"))]
    assert flags(env_cmd) == flags(trainer_cmd) == ["--cubin", "-arch=sm_90", "-O3", "--fmad=false"]
    assert "-DFLOAT32=1" in env_cmd and "-DFLOAT32=1" in trainer_cmd


def test_gpu_cubin_cache_follows_every_included_file(monkeypatch, tmp_path):
    """One cubin per source, included files (followed through includes), defines and arch: an edit to
    a header two includes deep rebuilds, an unchanged build comes from the disk cache."""
    from fastvec.native import gpu

    commands = _capture_nvcc(monkeypatch, tmp_path)
    (tmp_path / "a.h").write_text('#include "sub/b.h"\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.h").write_text("#define B 1\n")
    build = lambda **kw: gpu.compile_cubin('#include "a.h"\n', include_dirs=[tmp_path], arch="sm_90", **kw)
    assert build() == b"cubin" and len(commands) == 1
    build()
    assert len(commands) == 1, "an unchanged build comes from the cache"
    (tmp_path / "sub" / "b.h").write_text("#define B 2\n")
    build()
    assert len(commands) == 2
    build(defines={"X": 1})
    assert len(commands) == 3 and "-DX=1" in commands[-1]
    assert not list((tmp_path / "cache" / "cuda").glob("*.tmp*")), "written to a temporary file, then renamed"


# ---------------------------------------------------------------------- trajectories vs the CPU
def _assert_same_step(cpu_out, gpu_out, exact: bool):
    for x, y in zip(cpu_out[:4], gpu_out[:4]):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)
    assert sorted(cpu_out[4]) == sorted(gpu_out[4])
    for key, value in cpu_out[4].items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            np.testing.assert_allclose(value, gpu_out[4][key], rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.parametrize("env_id,params,exact", [("CartPole", {}, False), ("CartPole", {"float32": 1}, True),
                                                 ("Breakout", {}, True)])
def test_seeded_trajectories_match_the_cpu(env_id, params, exact):
    """Same seeds, same actions: the GPU build follows the CPU build for 300 steps (CartPole's
    double-precision sin/cos may differ in the last bit; Breakout and CartPole float32=1 use only
    basic float ops and --fmad=false, so they must be bitwise equal). Episode ends and autoresets
    are included."""
    n, steps = 256, 300
    cpu = fastvec.make_vec(env_id, n, **params)
    gpu = fastvec.make_vec(env_id, n, device="cuda", **params)
    rng = np.random.default_rng(1)
    np.testing.assert_array_equal(cpu.reset(seed=5)[0], gpu.reset(seed=5)[0])
    ended = 0
    for _ in range(steps):
        actions = rng.integers(0, cpu.single_action_space.n, n)
        a, b = cpu.step(actions), gpu.step(actions)
        _assert_same_step(a, b, exact)
        ended += int((a[2] | a[3]).sum())
    assert ended > 0, "the run must include episode ends"


@pytest.mark.gpu
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_autoreset_modes_and_truncation_match_the_cpu(mode):
    n, limit = 6, 4
    kw = dict(terminate_at=3, autoreset_mode=mode)
    cpu = fastvec.make_vec_from_source(COUNTING, n, max_episode_steps=limit, **kw)
    gpu = fastvec.make_vec_from_source(COUNTING, n, max_episode_steps=limit, device="cuda", **kw)
    cpu.reset(seed=0)
    gpu.reset(seed=0)
    rng = np.random.default_rng(2)
    for t in range(12):
        actions = rng.integers(0, 5, n)
        a, b = cpu.step(actions), gpu.step(actions)
        _assert_same_step(a, b, exact=True)
        if mode == AutoresetMode.SAME_STEP and "final_obs" in a[4]:
            for i in np.flatnonzero(a[4]["_final_obs"]):
                np.testing.assert_array_equal(a[4]["final_obs"][i], b[4]["final_obs"][i])
        if mode == AutoresetMode.DISABLED:
            done = a[2] | a[3]
            if done.any():
                mask = done.copy()
                mask[t % n] = True  # also reset one running env
                np.testing.assert_array_equal(cpu.reset(options={"reset_mask": mask})[0],
                                              gpu.reset(options={"reset_mask": mask.copy()})[0])


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", STEP_KERNEL_NAMES)
@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("env", ["cartpole_float32", "counting"])
def test_every_buffer_equals_the_cpu_batch_through_resets(env, mode, kernel):
    """The GPU keeps the slots split (state, book, RNG) and stores flags and episode outputs only
    where they change (batch_gpu.h). Every buffer, not only where an episode ended, must still
    equal the CPU batch's after every step, through episode ends, full resets and masked resets."""
    from fastvec import native
    from fastvec.native import cpu, cuda

    if env == "counting":
        path, defines, limit = COUNTING, {"TERMINATE_AT": 3}, 4
    else:
        path, defines, limit = native.source_path("cartpole"), native.resolve_defines("cartpole", {"float32": 1}), 30
    key, code, n = tuple(sorted(defines.items())), native.AUTORESET_CODES[mode], 500
    c = cpu.CpuBatch(cpu.load(path, key), n, code, limit)
    g = cuda.CudaBatch(cuda.load(path, key, 0), n, code, limit, numpy=True, step_kernel=kernel)
    assert g.step_kernel_name == kernel and g._step_fn is g.env.step_kernels[kernel]
    rng = np.random.default_rng(6)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    c.reset(seeds, None)
    g.reset(seeds, None)
    ended = 0
    for t in range(80):
        actions = rng.integers(0, c.env.num_actions, (n, 1))
        c.step(actions)
        g.step(actions)
        for name in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length", "episode_stats"):
            np.testing.assert_array_equal(getattr(g, name), getattr(c, name), err_msg=f"{name} at step {t}")
        done = c.terminated | c.truncated
        np.testing.assert_array_equal(g.done, done)
        if mode == "SameStep":
            np.testing.assert_array_equal(g.final_obs[done], c.final_obs[done])
        ended += int(done.sum())
        if t % 20 == 19:  # a full reset keeps the RNG streams; flags are cleared as the Gymnasium face does
            c.reset(None, None)
            g.reset(None, None)
            c.terminated[:] = c.truncated[:] = False
            np.testing.assert_array_equal(g.obs, c.obs)
        elif mode == "Disabled" and done.any():
            mask = done & (rng.random(n) < 0.7)
            mask[t % n] = True  # and one env that may still be running
            c.reset(None, mask)
            g.reset(None, mask.copy())
            np.testing.assert_array_equal(g.obs, c.obs)
    assert ended > n


@pytest.mark.gpu
def test_gpu_seeding_is_per_env_and_independent_of_num_envs():
    big = fastvec.make_vec("CartPole", 16, device="cuda")
    obs_big, _ = big.reset(seed=100)
    for i in (0, 7, 15):
        one = fastvec.make_vec("CartPole", 1, device="cuda")
        np.testing.assert_array_equal(one.reset(seed=100 + i)[0][0], obs_big[i])
    again = fastvec.make_vec("CartPole", 16, device="cuda")
    np.testing.assert_array_equal(again.reset(seed=100)[0], obs_big)
    assert not np.array_equal(again.reset(seed=101)[0], obs_big)
    mixed, _ = again.reset(seed=[100 + i for i in range(16)])
    np.testing.assert_array_equal(mixed, obs_big)


@pytest.mark.gpu
def test_render_on_gpu_equals_cpu_frame():
    cpu = fastvec.make_vec("CartPole", 3, render_mode="rgb_array")
    gpu = fastvec.make_vec("CartPole", 3, render_mode="rgb_array", device="cuda")
    cpu.reset(seed=3)
    gpu.reset(seed=3)
    for _ in range(5):
        cpu.step(np.array([1, 0, 1]))
        gpu.step(np.array([1, 0, 1]))
    np.testing.assert_array_equal(cpu.render()[2], gpu.render()[2])


# ---------------------------------------------------------------------- device arrays and interop
def _device_env(n=512, env_id="CartPole", **kw):
    return fastvec.make_vec(env_id, n, device="cuda", array_type="device", **kw)


@pytest.mark.gpu
def test_device_mode_equals_numpy_mode_and_returns_views():
    n = 300
    dev, host = _device_env(n), fastvec.make_vec("CartPole", n, device="cuda")
    obs_d, _ = dev.reset(seed=9)
    obs_h, _ = host.reset(seed=9)
    np.testing.assert_array_equal(obs_d.get(), obs_h)
    rng = np.random.default_rng(3)
    for _ in range(60):
        actions = rng.integers(0, 2, n)
        obs, rew, term, trunc, info = dev.step(actions)
        ref = host.step(actions)
        assert obs.shape == (n, 4) and rew.shape == (n,) and term.dtype == np.bool_
        np.testing.assert_array_equal(obs.get(), ref[0])
        np.testing.assert_array_equal(rew.get(), ref[1])
        np.testing.assert_array_equal(term.get(), ref[2])
        np.testing.assert_array_equal(trunc.get(), ref[3])
        done = info["_episode_return"].get()
        np.testing.assert_array_equal(done, ref[2] | ref[3])
        if done.any():
            np.testing.assert_array_equal(info["episode_return"].get()[done], ref[4]["episode_return"][done])
            np.testing.assert_array_equal(info["episode_length"].get()[done], ref[4]["episode_length"][done])
    assert dev.step(np.zeros(n, np.int64))[0] is obs, "device mode returns the same view every step"


@pytest.mark.gpu
@pytest.mark.parametrize("env_id,params", [("CartPole", {}), ("CartPole", {"float32": 1}), ("Breakout", {})])
def test_every_step_kernel_gives_the_same_bits(env_id, params):
    """Every step kernel (batch_gpu.h: staged through shared memory, wide words, wide with fewer
    registers) must give the same bits as wide, and switching kernels mid-run (use_step_kernel)
    changes nothing. 1000 envs: partial last blocks."""
    n = 1000
    envs = {}
    for kernel in STEP_KERNEL_NAMES:
        envs[kernel] = _device_env(n, env_id, **params)
        envs[kernel].unwrapped.batch.use_step_kernel(kernel)
        envs[kernel].reset(seed=3)
        assert envs[kernel].unwrapped.batch.step_kernel_name == kernel
    envs["switching"] = _device_env(n, env_id, **params)
    envs["switching"].reset(seed=3)
    rng = np.random.default_rng(4)
    ended = 0
    for t in range(50):
        envs["switching"].unwrapped.batch.use_step_kernel(STEP_KERNEL_NAMES[t % len(STEP_KERNEL_NAMES)])
        actions = rng.integers(0, envs["wide"].single_action_space.n, n)
        outs = {kernel: e.step(actions) for kernel, e in envs.items()}
        ended += int(outs["wide"][2].get().sum())
        for kernel, out in outs.items():
            for x, y in zip(outs["wide"][:4], out[:4]):
                np.testing.assert_array_equal(x.get(), y.get(), err_msg=kernel)
    for kernel, e in envs.items():
        np.testing.assert_array_equal(envs["wide"].unwrapped.batch.dev.slots.get(), e.unwrapped.batch.dev.slots.get(),
                                      err_msg=kernel)
    assert ended > 0 or env_id == "Breakout"  # Breakout's episodes outlast 50 steps


@pytest.mark.gpu
def test_torch_zero_copy_both_ways():
    torch = pytest.importorskip("torch")
    from fastvec.wrappers.torch import TorchVectorEnv, as_tensor

    n = 1000
    dev = _device_env(n)
    obs, _ = dev.reset(seed=4)
    t = as_tensor(obs)
    assert t.is_cuda and t.data_ptr() == obs.ptr and t.shape == (n, 4) and t.dtype == torch.float32
    t_dl = torch.from_dlpack(obs)
    assert t_dl.data_ptr() == obs.ptr
    ref = fastvec.make_vec("CartPole", n, device="cuda")
    ref.reset(seed=4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dtype in (torch.int64, torch.int32, torch.uint8):
        actions = torch.randint(0, 2, (n,), device="cuda", generator=gen).to(dtype)
        obs, *_ = dev.step(actions)  # read in place from torch's memory
        expected = ref.step(actions.cpu().numpy())[0]
        torch.testing.assert_close(t, torch.from_numpy(expected).cuda(), rtol=0, atol=0)  # t aliases obs
    strided = torch.randint(0, 2, (n, 2), device="cuda", generator=gen, dtype=torch.int64)[:, 1]
    dev.step(strided)
    np.testing.assert_array_equal(obs.get(), ref.step(strided.cpu().numpy())[0])

    envs = TorchVectorEnv(_device_env(n))
    obs_t, _ = envs.reset(seed=4)
    for _ in range(3):
        obs_t, rew_t, term_t, trunc_t, info_t = envs.step((obs_t[:, 2] > 0).long())
    assert isinstance(rew_t, torch.Tensor) and rew_t.is_cuda and term_t.dtype == torch.bool
    assert isinstance(info_t["episode_return"], torch.Tensor)


@pytest.mark.gpu
def test_jax_through_dlpack():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    n = 256
    dev = _device_env(n)
    obs, _ = dev.reset(seed=2)
    x = jnp.from_dlpack(obs)
    np.testing.assert_array_equal(np.asarray(x), obs.get())
    ref = fastvec.make_vec("CartPole", n, device="cuda")
    ref.reset(seed=2)
    actions = jax.random.randint(jax.random.PRNGKey(0), (n,), 0, 2, dtype=jnp.int32)
    obs, *_ = dev.step(actions)
    np.testing.assert_array_equal(obs.get(), ref.step(np.asarray(actions))[0])


@pytest.mark.gpu
def test_cupy_shares_memory():
    cupy = pytest.importorskip("cupy")
    dev = _device_env(64)
    obs, _ = dev.reset(seed=0)
    c = cupy.asarray(obs)
    assert c.data.ptr == obs.ptr
    np.testing.assert_array_equal(cupy.asnumpy(c), obs.get())
    dev.step(cupy.ones(64, cupy.int64))


@pytest.mark.gpu
def test_bad_device_actions_are_reported():
    torch = pytest.importorskip("torch")
    n = 64
    dev = _device_env(n)
    dev.reset(seed=0)
    actions = torch.zeros(n, dtype=torch.int64, device="cuda")
    actions[5] = 7
    dev.step(actions)  # no wait: the check runs on the GPU
    with pytest.raises(ActionError, match=r"action 7 out of range for Discrete\(2\) at env 5"):
        dev.synchronize()
    dev.step(torch.zeros(n, dtype=torch.int64, device="cuda"))
    dev.synchronize()  # the error was reported once and cleared
    strict = _device_env(n, validate=True)
    strict.reset(seed=0)
    actions[5] = -1
    with pytest.raises(ActionError, match="action -1 .* at env 5"):
        strict.step(actions)
    host = fastvec.make_vec("CartPole", n, device="cuda")
    obs0, _ = host.reset(seed=0)
    with pytest.raises(ActionError, match="action 2 out of range"):
        host.step(np.full(n, 2))
    obs1, *_ = host.step(np.zeros(n, np.int64))  # nothing was stepped by the refused call
    ref = fastvec.make_vec("CartPole", n)
    ref.reset(seed=0)
    np.testing.assert_allclose(obs1, ref.step(np.zeros(n, np.int64))[0], rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        dev.step(torch.zeros(n + 1, dtype=torch.int64, device="cuda"))
    with pytest.raises(TypeError, match="integers"):
        dev.step(torch.zeros(n, dtype=torch.float32, device="cuda"))


@pytest.mark.gpu
def test_bad_device_action_surfaces_within_a_few_polls_without_synchronize():
    torch = pytest.importorskip("torch")
    n = 64
    dev = _device_env(n)
    dev.reset(seed=0)
    bad = torch.zeros(n, dtype=torch.int64, device="cuda")
    bad[9] = 3
    good = torch.zeros(n, dtype=torch.int64, device="cuda")
    dev.step(bad)
    with pytest.raises(ActionError, match="action 3 out of range for Discrete\\(2\\) at env 9"):
        for _ in range(20 * 64):  # polled without waiting every 64 steps
            dev.step(good)


@pytest.mark.gpu
def test_gymnasium_array_conversion_to_torch_shares_memory():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")  # what Gymnasium's conversion wrappers need
    from gymnasium.wrappers.vector import ArrayConversion

    n = 128
    envs = ArrayConversion(_device_env(n), env_xp=torch, target_xp=torch, env_device="cuda", target_device="cuda")
    obs, _ = envs.reset(seed=1)
    assert isinstance(obs, torch.Tensor) and obs.is_cuda
    assert obs.data_ptr() == envs.unwrapped.batch.dev.obs.ptr
    obs, rew, term, trunc, info = envs.step(torch.ones(n, dtype=torch.int64, device="cuda"))
    assert isinstance(rew, torch.Tensor) and rew.is_cuda and torch.all(rew == 1)


# ---------------------------------------------------------------------- fused rollouts and graphs
@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["auto", "staged", "plain", "occ"])
@pytest.mark.parametrize("env_id,params", [("CartPole", {}), ("CartPole", {"float32": 1}), ("Breakout", {})])
def test_fused_random_rollout_equals_eager_steps(env_id, params, kernel):
    n, steps = 777, 40
    fused, eager = _device_env(n, env_id, **params), _device_env(n, env_id, **params)
    fused.unwrapped.batch.use_rollout_kernel(kernel)
    fused.reset(seed=11)
    eager.reset(seed=11)
    fused.rollout("random", steps)
    fused.rollout("random", steps)  # continues the random stream
    b = eager.unwrapped.batch
    drawn = []
    for t in range(2 * steps):
        b.random_actions(t)
        drawn.append(b.dev.actions.get())
        eager.step(b.dev.actions)
    drawn = np.array(drawn)  # (steps, n, 1): uniform over the actions, independent across envs and steps
    k = eager.single_action_space.n
    np.testing.assert_allclose(np.bincount(drawn.ravel(), minlength=k) / drawn.size, 1 / k, atol=0.01)
    assert abs(np.mean(drawn[1:] == drawn[:-1]) - 1 / k) < 0.02  # consecutive steps (one 64-bit draw holds many)
    assert abs(np.mean(drawn[:, 1:] == drawn[:, :-1]) - 1 / k) < 0.02  # neighbouring envs
    for name in ("slots", "obs", "rewards", "terminated", "truncated", "done", "episode_return", "episode_length"):
        np.testing.assert_array_equal(getattr(fused.unwrapped.batch.dev, name).get(), getattr(b.dev, name).get(), name)
    if env_id == "CartPole":  # (Breakout's five balls last longer than 80 random steps)
        assert b.dev.episode_length.get().max() > 0, "the run must include episode ends"


def _threshold_policy():
    """A policy kernel that reads obs: push right when the pole leans right (CartPole)."""
    from pycuda.compiler import SourceModule

    module = SourceModule("""
    extern "C" __global__ void lean(int n, const float* obs, long long* actions) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) actions[i] = obs[i * 4 + 2] + 0.1f * obs[i * 4 + 3] > 0.0f;
    }""", no_extern_c=True)
    kernel = module.get_function("lean").prepare("iPP")

    def policy(t, batch):
        kernel.prepared_async_call(((batch.num_envs + 255) // 256, 1), (256, 1, 1), batch.stream,
                                   batch.num_envs, batch.dev.obs.ptr, batch.dev.actions.ptr)

    policy.module = module  # keep the module alive with the policy
    return policy


@pytest.mark.gpu
def test_graph_replay_equals_eager_stepping():
    n, steps = 1000, 25
    policy = _threshold_policy()
    graphed, eager = _device_env(n, max_episode_steps=30), _device_env(n, max_episode_steps=30)
    graphed.reset(seed=21)
    eager.reset(seed=21)
    for _ in range(3):  # capture once, then replay
        graphed.rollout(policy, steps, graph=True)
        eager.rollout(policy, steps, graph=False)
    assert len(graphed.unwrapped.batch._graphs) == 1
    graphed.unwrapped.batch.use_step_kernel(graphed.unwrapped.batch.step_kernel_name)
    assert not graphed.unwrapped.batch._graphs, "a graph holds the kernel it was captured with: use_step_kernel drops it"
    for name in ("slots", "obs", "rewards", "done", "episode_return", "episode_length"):
        np.testing.assert_array_equal(getattr(graphed.unwrapped.batch.dev, name).get(),
                                      getattr(eager.unwrapped.batch.dev, name).get(), name)
    # and the policy loop through step() gives the same again
    stepped = _device_env(n, max_episode_steps=30)
    stepped.reset(seed=21)
    b = stepped.unwrapped.batch
    for _ in range(3 * steps):
        policy(0, b)
        stepped.step(b.dev.actions)
    np.testing.assert_array_equal(b.dev.obs.get(), graphed.unwrapped.batch.dev.obs.get())


@pytest.mark.gpu
def test_cuda_graph_helper_reports_driver_errors():
    from fastvec.native import graphs

    envs = _device_env(32)
    envs.reset(seed=0)
    b = envs.unwrapped.batch
    g = graphs.CudaGraph(b.stream_handle)
    with pytest.raises(Exception):
        with g.capture():
            b.stream.synchronize()  # a host wait cannot be captured
    assert not g.captured
    envs.rollout("random", 3)  # the stream is usable again
    envs.synchronize()
    with pytest.raises(graphs.CudaDriverError, match="CUDA_ERROR_"):
        graphs.check(1, "cuTest")
    with pytest.raises(ValueError, match="legacy default stream"):
        graphs.CudaGraph(0)


@pytest.mark.gpu
def test_an_event_orders_a_stream_after_the_legacy_default_stream_and_the_other_way():
    """graphs.Event.make_wait takes None (or 0) for the legacy default stream on either side, as the driver
    names it: each order is accepted, the env steps on after it, and the copy on the legacy stream arrives whole."""
    import pycuda.driver as drv

    from fastvec.native import graphs

    envs = _device_env(32)
    envs.reset(seed=0)
    b = envs.unwrapped.batch
    host = np.arange(1 << 16, dtype=np.float32)
    on_legacy = drv.mem_alloc(host.nbytes)
    drv.memcpy_htod_async(on_legacy, host)  # enqueued on the legacy default stream
    for waiter, producer in [(b.stream_handle, None), (b.stream_handle, 0), (None, b.stream_handle),
                             (0, b.stream_handle)]:
        graphs.Event().make_wait(waiter=waiter, producer=producer)
        envs.rollout("random", 2)
    envs.synchronize()
    back = np.empty_like(host)
    drv.memcpy_dtoh(back, on_legacy)
    np.testing.assert_array_equal(back, host)


@pytest.mark.gpu
def test_gymnasium_vector_wrappers_on_a_gpu_env_in_numpy_mode():
    envs = gym.wrappers.vector.RecordEpisodeStatistics(fastvec.make_vec("CartPole", 32, device="cuda"))
    envs.reset(seed=0)
    seen = 0
    for _ in range(200):
        *_, info = envs.step(envs.action_space.sample())
        seen += int(info.get("_episode", np.zeros(1, bool)).sum())
    assert seen > 0


@pytest.mark.gpu
def test_gpu_render_draws_the_cpu_batchs_frame_and_refuses_one_past_either_end():
    """A GPU batch's render(i) is the CPU batch's frame of the same env (negative indices from the end); an env past
    either end is an IndexError, never a copy from device memory past the slots."""
    from fastvec.native.batches import load_batch

    cpu_batch, gpu_batch = load_batch("cartpole", 3), load_batch("cartpole", 3, device="cuda")
    for batch in (cpu_batch, gpu_batch):
        batch.reset(np.array([1, 2, 3], np.uint64), None)
    for i in (0, 1, 2, -1, -3):
        np.testing.assert_array_equal(gpu_batch.render(i), cpu_batch.render(i), err_msg=f"env {i}")
    for bad in (3, -4, 10**6):
        with pytest.raises(IndexError, match=f"env index {bad} out of range for 3 envs"):
            gpu_batch.render(bad)
