"""batch_gpu.h's kernels without a GPU: built for the CPU by tests/emulation/gpu_on_cpu.cpp (a
fiber per CUDA thread, cuda_on_cpu.h's model) and driven as fastvec/native/cuda.py drives them
(split slots, the step kernels, resets, fused random rollouts). The CPU batch (the plain
per-env loop) is the oracle; the GPU tests confirm the same on the device. Skipped where the C++
compiler lacks C++20's <barrier>."""

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastvec import native
from fastvec.native import cpu

HARNESS = Path(__file__).resolve().parent / "gpu_on_cpu.cpp"
ENVS_DIR = Path(__file__).resolve().parents[1] / "envs"
NO_ERROR = 2**64 - 1

# name: (source, defines, max_episode_steps)
ENVS = {
    "cartpole": (native.source_path("cartpole"), {}, 8),
    "cartpole_float32": (native.source_path("cartpole"), {"FLOAT32": 1}, 8),
    "breakout": (native.source_path("breakout"), native.resolve_defines("breakout", {}), 8),
    "counting": (ENVS_DIR / "counting.h", {"TERMINATE_AT": 3}, 4),
    "random_walk": (ENVS_DIR / "random_walk.h", {"LIMIT": 3}, 9),  # two agents, stats, draws in env_step
    "box_point": (ENVS_DIR / "box_point.h", {}, 6),  # Box actions (float32), state access
    "box_open": (ENVS_DIR / "box_open.h", {}, 6),  # Box actions with infinite bounds
    "multi_discrete": (ENVS_DIR / "multi_discrete.h", {"AGENTS": 2}, 3),  # MultiDiscrete([3, 5]), two agents
    "mpe_world_comm": (native.NATIVE_DIR / "mpe_world_comm.h", {}, 5),  # six agents, float64 state, exp/log1p
    "smax_3m": (native.NATIVE_DIR / "smax.h", {"MAP": 0}, 9),  # six agents, fmaf/sqrtf, draws in env_step
    "smax_3m_heuristic": (native.NATIVE_DIR / "smax.h", {"MAP": 0, "ENEMY": 1}, 9),  # three agents, scripted enemies
    "smax_smacv2_5_units": (native.NATIVE_DIR / "smax.h", {"MAP": 11}, 9),  # units drawn at every reset
    "seaquest": (native.source_path("seaquest-minatar"), native.resolve_defines("seaquest-minatar", {}), 30),  # bytes
    # states of 28, 21, 17 and 45 bytes: moved in 4-byte words and in bytes by the staged kernels; the wide kernels
    # move a state and an obs of b bytes in words of 16, 8, 4 or 1 bytes by b (FV_WORD_BYTES): 28, 21, 17 and 45 bytes
    # each take a word that a slip in that choice makes too wide for it (a byte left behind, or read past the value)
    **{f"byte_state_{b}": (ENVS_DIR / "byte_state.h", {"STATE_BYTES": b}, 7) for b in (28, 21, 17, 45)},
    **{game: (native.source_path(game), native.resolve_defines(game, {}), 8)  # test_minatar_kernels.py's cases
       for game in ("asterix-minatar", "breakout-minatar", "freeway-minatar", "seaquest-minatar",
                    "spaceinvaders-minatar")},
}
# The step kernels (emu_step's numbers); wide_occ is wide with launch bounds (no-ops on the CPU).
KERNELS = {"staged_wide": 0, "wide": 1, "wide_occ": 2}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    tmp = tmp_path_factory.mktemp("gpu_on_cpu")
    probe = tmp / "probe.cpp"
    probe.write_text("#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n")
    if subprocess.run([cxx, "-std=c++20", "-pthread", str(probe), "-o", str(tmp / "probe")], capture_output=True).returncode:
        pytest.skip(f"{cxx} has no C++20 <barrier>")
    libs = {}

    def get(name: str) -> ctypes.CDLL:
        if name not in libs:
            path, defines, _ = ENVS[name]
            out = tmp / f"{name}.so"
            # -pedantic-errors: ISO C++ only, as nvcc takes device code (no zero-size arrays, no variable-length ones)
            cmd = [cxx, "-std=c++20", "-O1", "-pedantic-errors", "-fPIC", "-shared", "-pthread", "-ffp-contract=off",
                   f"-I{native.NATIVE_DIR}", f"-I{path.parent}", f'-DENV="{path}"',
                   *[f"-D{k}={v}" for k, v in defines.items()], str(HARNESS), "-o", str(out), "-lm"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr[-3000:]
            libs[name] = ctypes.CDLL(str(out))
            for fn in ("emu_reset", "emu_step", "emu_rollout", "emu_random_actions", "emu_get_state", "emu_set_state",
                       "emu_spaces", "emu_observe"):
                getattr(libs[name], fn).restype = None
        return libs[name]

    return get


def _ptr(a):
    return None if a is None else a.ctypes.data_as(ctypes.c_void_p)


class EmulatedBatch:
    """The buffers and launches of cuda.CudaBatch, on the CPU."""

    def __init__(self, lib, env: cpu.CompiledEnv, n: int, mode: int, max_steps: int):
        self.lib, self.n, self.mode, self.max_steps, self.agents = lib, n, mode, max_steps, env.num_agents
        self.env = env
        round_up = lambda b: -(-b // 256) * 256  # as CudaCompiledEnv.slots_bytes
        self.slots = np.zeros(round_up(n * lib.emu_state_size()) + round_up(n * lib.emu_book_size()) + n * 16, np.uint8)
        self.state_size = lib.emu_state_size()
        self.obs = np.zeros((n, env.num_agents, env.obs_size), env.obs_dtype)
        self.final_obs = np.zeros_like(self.obs)
        self.rewards = np.zeros((n, env.num_agents), np.float32)
        self.terminated, self.truncated, self.done = (np.zeros(n, np.uint8) for _ in range(3))
        self.episode_return = np.zeros((n, env.num_agents), np.float32)
        self.episode_length = np.zeros(n, np.int32)
        self.episode_stats = np.zeros((n, max(len(env.stat_names), 1)), np.float32)
        self.error = np.full(1, NO_ERROR, np.uint64)
        self.action_mask = np.zeros((n, env.num_agents, env.num_actions), np.uint8) if env.action_mask else None
        self.world_state = np.zeros((n, env.world_state_size), np.float32) if env.world_state_size else None

    def observe(self, which=None):
        """As CudaBatch._observe: the masks and world states of every env (or those in `which`), where the env has
        them."""
        if self.action_mask is not None or self.world_state is not None:
            self.lib.emu_observe(self.n, _ptr(self.slots), _ptr(which), _ptr(self.action_mask), _ptr(self.world_state))

    def _outputs(self):
        return [_ptr(b) for b in (self.obs, self.rewards, self.terminated, self.truncated, self.done, self.final_obs,
                                  self.episode_return, self.episode_length, self.episode_stats)]

    def reset(self, seeds, mask):
        self.lib.emu_reset(self.n, _ptr(self.slots), _ptr(seeds), _ptr(None if mask is None else mask.astype(np.uint8)),
                           _ptr(self.obs))
        if mask is None:  # as CudaBatch.reset
            self.terminated[:] = self.truncated[:] = self.done[:] = 0
        self.observe(None if mask is None else mask.astype(np.uint8))

    def step(self, actions, kernel: str):
        """Actions (N, A, D) of any dtype the device reads and any strides (as cuda.CudaBatch passes them);
        integer lists and arrays of another layout become the env's own type."""
        actions = np.asarray(actions)
        if actions.dtype.kind not in "iuf" or actions.dtype == np.float16:
            actions = actions.astype(self.env.action_dtype)
        if actions.ndim < 3:
            actions = np.ascontiguousarray(actions).reshape(self.n, self.agents, self.env.action_dims)
        strides = [ctypes.c_int64(s) for s in actions.strides]
        self.lib.emu_step(KERNELS[kernel], self.n, _ptr(self.slots), actions.ctypes.data_as(ctypes.c_void_p), *strides,
                          actions.dtype.itemsize, int(actions.dtype.kind == "i"), *self._outputs(), self.mode,
                          self.max_steps, _ptr(self.error))
        self.observe()

    def rollout(self, steps: int, key: int, t0: int, staged: bool):
        self.lib.emu_rollout(int(staged), self.n, steps, ctypes.c_uint64(key), ctypes.c_int64(t0), _ptr(self.slots),
                             *self._outputs(), self.mode, self.max_steps)

    def random_actions(self, key: int, t: int) -> np.ndarray:
        actions = np.zeros((self.n, self.agents, self.env.action_dims), self.env.action_dtype)
        self.lib.emu_random_actions(self.n, ctypes.c_uint64(key), ctypes.c_int64(t), _ptr(actions))
        return actions


MODES = ("NextStep", "SameStep", "Disabled")
# Both kernel families in every mode for CartPole (its RNG read only at resets; float64 not under
# DISABLED, where a fallen pole's sin comes from libm here and from the CPU's own reduction there)
# and the random walk (two agents, statistics, draws in env_step); wide_occ (wide with launch
# bounds), Breakout (a 72-byte state in 8-byte words), the counting env and states of 28, 21, 17 and 45 bytes
# (4-byte words, bytes; 17 and 45 leave 1 and 5 over 8, and 45 is a multiple of 9, 5 and 3 but of neither 8 nor 4,
# so a slip in the staged kernels' word choice that takes a wider word for them drops their last bytes) in fewer,
# to keep this file to seconds.
BASE_KERNELS = ("staged_wide", "wide")
CASES = ([("cartpole", m, k) for m in MODES[:2] for k in BASE_KERNELS] +
         [(env, m, k) for env in ("cartpole_float32", "random_walk") for m in MODES for k in BASE_KERNELS] +
         [(env, "NextStep", "wide_occ") for env in ("cartpole", "random_walk")] +
         [(env, "NextStep", k) for env in ("breakout", "mpe_world_comm", "smax_3m") for k in BASE_KERNELS] +
         [("smax_3m", m, "wide") for m in MODES[1:]] +  # its action masks and world state after every autoreset
         [("smax_3m_heuristic", "SameStep", k) for k in BASE_KERNELS] +
         [("smax_smacv2_5_units", "SameStep", "wide")] +
         [("counting", m, "wide") for m in MODES] +
         [(f"byte_state_{b}", "NextStep", "staged_wide") for b in (28, 21, 17, 45)] +
         [(f"byte_state_{b}", "NextStep", "wide") for b in (28, 21, 17, 45)])


@pytest.mark.parametrize("env_name,mode,kernel", CASES)
def test_emulated_gpu_steps_equal_the_cpu_batch(build, env_name, mode, kernel):
    """Every buffer and every env's state after every step, through episode ends, autoresets and
    masked resets (DISABLED); 300 envs: partial blocks for every kernel's grid."""
    steps_equal_the_cpu_batch(build, env_name, mode, kernel, 300)


# The split slots start the books at the states' end rounded up to 256 bytes: counts of odd-sized states whose
# bytes come to one past a multiple of 256 (61 x 21 = 5 x 256 + 1, 241 x 17 = 16 x 256 + 1), where rounding that
# end down instead puts the first book over the last state's last byte.
@pytest.mark.parametrize("env_name,n", [("byte_state_21", 61), ("byte_state_17", 241)])
@pytest.mark.parametrize("kernel", BASE_KERNELS)
def test_emulated_steps_keep_the_books_clear_of_states_one_byte_past_a_256_byte_line(build, env_name, n, kernel):
    assert n * int(ENVS[env_name][1]["STATE_BYTES"]) % 256 == 1
    steps_equal_the_cpu_batch(build, env_name, "NextStep", kernel, n)


def steps_equal_the_cpu_batch(build, env_name, mode, kernel, n):
    path, defines, max_steps = ENVS[env_name]
    env = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    code = native.AUTORESET_CODES[mode]
    ref, emu = cpu.CpuBatch(env, n, code, max_steps), EmulatedBatch(build(env_name), env, n, code, max_steps)
    assert (ref.action_mask is not None) == (ref.world_state is not None) == env_name.startswith("smax")
    rng = np.random.default_rng(len(env_name) + code)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    ref.reset(seeds, None)
    emu.reset(seeds, None)
    ended = 0
    for t in range(12):
        actions = rng.integers(0, env.num_actions, (n, env.num_agents))
        ref.step(actions)
        emu.step(actions, kernel)
        for name in ("obs", "rewards", "terminated", "truncated", "episode_return", "episode_length", "action_mask",
                     "world_state"):  # the last two None alike for envs without the hooks
            np.testing.assert_array_equal(getattr(emu, name), getattr(ref, name), err_msg=f"{name} at step {t}")
        done = ref.terminated | ref.truncated
        np.testing.assert_array_equal(emu.done, done)
        np.testing.assert_array_equal(emu.episode_stats[:, :len(env.stat_names)], ref.episode_stats)
        if mode == "SameStep":
            np.testing.assert_array_equal(emu.final_obs[done], ref.final_obs[done])
        np.testing.assert_array_equal(emu.slots[:n * emu.state_size].reshape(n, -1), ref.slots[:, :emu.state_size],
                                      err_msg=f"states at step {t}")
        ended += int(done.sum())
        if mode == "Disabled" and done.any():
            mask = done & (rng.random(n) < 0.7)
            mask[t] = True  # and an env that may still be running
            ref.reset(None, mask)
            emu.reset(None, mask)
            np.testing.assert_array_equal(emu.obs, ref.obs)
            np.testing.assert_array_equal(emu.action_mask, ref.action_mask)
    assert emu.error[0] == NO_ERROR
    assert ended > 0


INTEGER_ACTIONS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


@pytest.mark.parametrize("dtype", INTEGER_ACTIONS)
def test_emulated_steps_read_actions_of_every_integer_width_and_sign(build, dtype):
    """Actions as a user's device array holds them (1, 2, 4 or 8 bytes, signed or not) step every env as the same
    int64 actions do; a -1 reads as -1 where the type is signed (the error names its env and value) and as the
    type's largest value where it is not (out of range either way)."""
    path, defines, max_steps = ENVS["random_walk"]
    env = cpu.load(path, tuple(sorted({**defines, "FV_CPU_SCALAR_STEP": 1}.items())))
    n, code = 40, native.AUTORESET_CODES["NextStep"]
    ref, emu = (EmulatedBatch(build("random_walk"), env, n, code, max_steps) for _ in range(2))
    rng = np.random.default_rng(41977)
    seeds = rng.integers(0, 2**63, n, dtype=np.uint64)
    ref.reset(seeds, None)
    emu.reset(seeds, None)
    for t in range(6):
        actions = rng.integers(0, env.num_actions, (n, env.num_agents))
        ref.step(actions.astype(np.int64), "wide")
        emu.step(actions.astype(dtype), "wide")
        for name in ("obs", "rewards", "terminated", "truncated", "episode_return", "slots"):
            np.testing.assert_array_equal(getattr(emu, name), getattr(ref, name), err_msg=f"{name} at step {t}")
    assert emu.error[0] == NO_ERROR
    bad = np.zeros((n, env.num_agents), dtype)
    bad[7, 1] = np.array(-1).astype(dtype)
    emu.step(bad, "wide")
    value = 0xFFFFFFFF if np.dtype(dtype).kind == "i" or np.dtype(dtype).itemsize >= 4 else np.iinfo(dtype).max
    assert int(emu.error[0]) == (7 * env.num_agents + 1) << 32 | value


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("env_name", ["cartpole_float32", "random_walk", "seaquest"])  # Seaquest: byte obs
def test_emulated_fused_rollout_equals_random_actions_and_steps(build, env_name, staged):
    path, defines, max_steps = ENVS[env_name]
    env = cpu.load(path, tuple(sorted(defines.items())))
    n, key, lib = 300, 0x5EED, build(env_name)
    fused, eager = (EmulatedBatch(lib, env, n, 0, max_steps) for _ in range(2))
    seeds = np.arange(n, dtype=np.uint64) + 11
    fused.reset(seeds, None)
    eager.reset(seeds, None)
    fused.rollout(12, key, 0, staged)
    fused.rollout(12, key, 12, staged)  # continues the random stream
    drawn, ended = [], 0
    for t in range(24):
        drawn.append(eager.random_actions(key, t))
        eager.step(drawn[-1], "staged_wide" if staged else "wide")
        ended += int(eager.done.sum())
    for name in ("slots", "obs", "rewards", "terminated", "truncated", "done", "episode_return", "episode_length",
                 "episode_stats"):  # the random walk's two statistics per env
        np.testing.assert_array_equal(getattr(fused, name), getattr(eager, name), err_msg=name)
    drawn = np.array(drawn)
    k = env.num_actions
    np.testing.assert_allclose(np.bincount(drawn.ravel(), minlength=k) / drawn.size, 1 / k, atol=0.03)
    assert ended > 0, "the rollout must include episode ends and resets"


M64 = (1 << 64) - 1


def _mix(z: int) -> int:
    """splitmix64's finaliser (fastvec.h's fv_mix64)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def documented_random_actions(env: cpu.CompiledEnv, key: int, n: int, t: int) -> np.ndarray:
    """The random policy's actions at policy step t as random_gpu.h documents them: value d of agent a of env i is
    flat index k = (t * agents + a) * dims + d, bits k % per .. of draw k // per (per = 64 // bits) of the stream
    keyed by mix(key + i) (the draw's counter one past its number, as fv_rand_u64 counts), with bits = log2(n) for a
    Discrete(n) of a power of two up to 32768 (1 for n <= 2), else 32; Discrete and MultiDiscrete take
    (chunk * n) >> bits, Box low + (high - low) * (chunk >> 8) / 2**24 in float32 (an infinite bound: an interval of
    width 2 at the finite one, [-1, 1) with none)."""
    dims, agents, kind = env.action_dims, env.num_agents, env.action_kind
    count = env.num_actions
    if kind == "discrete" and count <= 2:
        bits = 1
    elif kind == "discrete" and count & (count - 1) == 0 and count <= 32768:
        bits = count.bit_length() - 1
    else:
        bits = 32
    per = 64 // bits
    out = np.zeros((n, agents, dims), env.action_dtype)
    for i in range(n):
        env_key = _mix((key + i) & M64)
        for a in range(agents):
            for d in range(dims):
                k = (t * agents + a) * dims + d
                word = _mix((env_key + (k // per + 1) * 0x9E3779B97F4A7C15) & M64)
                chunk = (word >> ((k % per) * bits)) & ((1 << bits) - 1)
                if kind == "box":  # an infinite bound: an interval of width 2 at the finite one, or [-1, 1)
                    lo, hi = np.float32(env.spaces.action_low[d]), np.float32(env.spaces.action_high[d])
                    if not lo > -np.inf:
                        lo = (hi if hi < np.inf else np.float32(1)) - np.float32(2)
                    if not hi < np.inf:
                        hi = lo + np.float32(2)
                    out[i, a, d] = lo + (hi - lo) * (np.float32(chunk >> 8) * np.float32(1 / 16777216))
                else:
                    nvec = count if kind == "discrete" else int(env.spaces.nvec[d])
                    out[i, a, d] = (chunk * nvec) >> bits
    return out


@pytest.mark.parametrize("env_name", ["cartpole_float32", "random_walk", "counting"])
def test_the_random_policy_draws_the_documented_stream(build, env_name):
    """The eager random-action kernel's actions are random_gpu.h's documented stream at every step, across the
    64-step boundary of CartPole's one-bit draws (Discrete(2)), and for Discrete(3) of two agents and Discrete(5)
    (32 bits a value, two a draw)."""
    path, defines, max_steps = ENVS[env_name]
    env = cpu.load(path, tuple(sorted(defines.items())))
    n, key = 5, 0x5EED
    emu = EmulatedBatch(build(env_name), env, n, 0, max_steps)
    for t in list(range(0, 140, 7)) + [63, 64, 65, 127, 128]:
        np.testing.assert_array_equal(emu.random_actions(key, t), documented_random_actions(env, key, n, t),
                                      err_msg=f"step {t}")


# random_gpu.h's bit widths, cut from its source and compiled for the CPU with the action count as a variable.
WIDTHS_SHIM = r"""
#define FV_DISCRETE 0
#define ACTION_SPACE FV_DISCRETE
%s
int action_bits(int n) {
#define NUM_ACTIONS n
    return FV_ACTION_BITS;
}
int actions_per_draw(int n) { return FV_ACTIONS_PER_DRAW; }
"""


def test_the_random_policy_takes_log2_n_bits_for_each_power_of_two_action_count(c_shim):
    """Discrete(n) random actions take exactly log2(n) bits for every power of two up to 32768 (unbiased: every value
    equally likely), one bit for n <= 2, and 32 bits otherwise; a draw holds 64 // bits of them."""
    text = (native.NATIVE_DIR / "random_gpu.h").read_text()
    start, end = text.index("#define FV_IS_POW2"), text.index("\n", text.index("#define FV_ACTIONS_PER_DRAW"))
    lib = c_shim(WIDTHS_SHIM % text[start:end])
    for n in list(range(1, 70)) + [2**k + j for k in range(6, 17) for j in (-1, 0, 1)]:
        bits = 1 if n <= 2 else n.bit_length() - 1 if n & (n - 1) == 0 and n <= 32768 else 32
        assert (lib.action_bits(n), lib.actions_per_draw(n)) == (bits, 64 // bits), n


BOUNDS_CHILD = r"""
import ctypes, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import test_env_step_kernels as t
from fastvec.native import cpu

path, defines, max_steps = t.ENVS[sys.argv[3]]
env = cpu.load(path, tuple(sorted(defines.items())))
lib = ctypes.CDLL(sys.argv[2])
for fn in ("emu_reset", "emu_step", "emu_rollout", "emu_random_actions", "emu_observe"):
    getattr(lib, fn).restype = None
n = int(sys.argv[4])
for mode in range(3):
    for staged in (0, 1):
        b = t.EmulatedBatch(lib, env, n, mode, max_steps)
        b.reset(np.arange(n, dtype=np.uint64), None)
        b.rollout(20, 0x5EED, 0, staged)
        for kernel in t.KERNELS:
            b.step(b.random_actions(0x5EED, 20), kernel)
        b.reset(np.arange(n, dtype=np.uint64), np.arange(n) % 2 == 0)
print("ok")
"""


# (env, sanitizer, envs): GCC's trapping bounds check sees fixed-size arrays indexed past their end with no runtime;
# AddressSanitizer (preloaded into the child) sees the staged kernels' static shared buffers overrun through pointers,
# here by an env whose state takes the plain (not unrolled) word loop, in full blocks; Seaquest's byte observation
# grid through both.
SANITIZED = [("random_walk", "bounds", 37), ("box_point", "bounds", 37), ("mpe_world_comm", "address", 512),
             ("seaquest", "bounds", 37), ("seaquest", "address", 512)]


@pytest.mark.parametrize("env_name,sanitizer,n", SANITIZED, ids=[c[0] for c in SANITIZED])
def test_the_kernels_index_no_array_past_its_end(build, tmp_path, env_name, sanitizer, n):
    """The reset, step, random-action and fused-rollout kernels built with a sanitizer and run in a child process in
    every autoreset mode: no index leaves an array (the per-thread action, observation and output arrays of the
    kernels, the staged kernels' shared buffers), which a wrong value would not show."""
    del build  # requested for its skip where the compiler lacks C++20's <barrier>
    cxx = shutil.which("g++") or shutil.which("c++")
    path, defines, _ = ENVS[env_name]
    out = tmp_path / f"{env_name}_{sanitizer}.so"
    flags = (["-fsanitize=bounds", "-fsanitize-undefined-trap-on-error"] if sanitizer == "bounds"
             else ["-fsanitize=address", "-fno-omit-frame-pointer"])
    cmd = [cxx, "-std=c++20", "-O1", "-fPIC", "-shared", "-pthread", "-ffp-contract=off", *flags,
           f"-I{native.NATIVE_DIR}", f"-I{path.parent}", f'-DENV="{path}"',
           *[f"-D{k}={v}" for k, v in defines.items()], str(HARNESS), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode and "sanitize" in proc.stderr:
        pytest.skip(f"{cxx} refuses {flags[0]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = dict(os.environ)
    if sanitizer == "address":
        runtime = subprocess.run([cxx, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(runtime):
            pytest.skip(f"{cxx} has no AddressSanitizer runtime")
        env.update(LD_PRELOAD=runtime, ASAN_OPTIONS="detect_leaks=0")
    child = subprocess.run([sys.executable, "-c", BOUNDS_CHILD, str(Path(__file__).parent), str(out), env_name,
                            str(n)], capture_output=True, text=True, timeout=120, env=env)
    assert child.returncode == 0 and child.stdout.strip() == "ok", (child.returncode, child.stderr[-2000:])
