"""The CPU backend: compiles an env source with the system C compiler (-O3 -march=native, OpenMP
over envs), caches the shared library by content hash, and steps a batch in place into NumPy buffers."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from fastvec.native import NATIVE_DIR, check_define_names

# -ffp-contract=off: no fused multiply-adds, so results stay those of plain IEEE double/float
# arithmetic (CartPole matches Gymnasium bit for bit, and the GPU build, --fmad=false, the CPU's).
C_FLAGS = ["-O3", "-std=c99", "-shared", "-fPIC", "-fvisibility=hidden", "-fno-math-errno", "-ffp-contract=off"]


class CompileError(RuntimeError):
    """An env source did not compile; the message carries the compiler's output."""


def cache_dir() -> Path:
    """Where compiled envs are kept: $FASTVEC_CACHE_DIR, else the user's cache dir."""
    root = os.environ.get("FASTVEC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fastvec"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def find_compiler() -> str:
    """The C compiler to use: $CC, else cc, gcc or clang, or an error that says how to get one."""
    for candidate in [os.environ.get("CC"), "cc", "gcc", "clang"]:
        if candidate and shutil.which(candidate):
            return candidate
    raise CompileError(
        "no C compiler found (tried $CC, cc, gcc, clang); fastvec compiles its environments on first use. "
        "Install one, e.g. `apt install gcc` or `xcode-select --install`, or set CC."
    )


def driver_source(env_path: Path) -> str:
    """The translation unit both backends compile: the env file followed by the batch layer."""
    return f'#include "{env_path}"\n#include "batch.h"\n'


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompileError(f"{what} failed (exit {proc.returncode}):\n$ {' '.join(cmd)}\n{proc.stderr.strip()}")
    return proc


@lru_cache(maxsize=None)
def _compiler_version(cc: str) -> str:
    return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout


@lru_cache(maxsize=None)
def native_arch(cc: str) -> tuple[list[str], str]:
    """(["-march=native"], the target it means here) where the compiler takes it, else ([], "").

    The env loops vectorise over envs with this machine's widest vectors (AVX-512 / AVX2). The
    predefined macros (__AVX512F__, ...) go into the build cache key, so a cache shared between
    machines of different CPUs never hands one a library with instructions it lacks.
    FASTVEC_NATIVE_ARCH=0 builds for the compiler's default target instead."""
    if os.environ.get("FASTVEC_NATIVE_ARCH", "1") == "0":
        return [], ""
    proc = subprocess.run([cc, "-march=native", "-dM", "-E", "-x", "c", os.devnull], capture_output=True, text=True)
    if proc.returncode != 0:  # e.g. a compiler that spells it -mcpu=native: build for the default target
        return [], ""
    return ["-march=native"], "\n".join(sorted(proc.stdout.splitlines()))


def compile_env(env_path: Path, defines: dict) -> Path:
    """Compile env_path (with -D defines) into a cached shared library and return its path.

    The cache key hashes the preprocessed source, the flags and the compiler version, so an edit
    to the env file or to any header it includes triggers a rebuild."""
    cc = find_compiler()
    arch_flags, arch = native_arch(cc)
    flags = C_FLAGS + arch_flags
    define_flags = [f"-D{k}={v}" for k, v in sorted(check_define_names(defines).items())]
    include_flags = [f"-I{NATIVE_DIR}", f"-I{env_path.parent}"]
    with tempfile.TemporaryDirectory(prefix="fastvec-") as tmp:
        src = Path(tmp) / "driver.c"
        src.write_text(driver_source(env_path))
        # Preprocessed with the target's flags (its macros, e.g. __AVX2__, select code) and keyed on
        # the defines too (one that only selects code in a dead #if must still make its own build).
        pre = _run([cc, "-E", "-P", *arch_flags, *include_flags, *define_flags, str(src)],
                   f"preprocessing {env_path.name}").stdout
        key = hashlib.sha256("\n".join([pre, " ".join(flags + define_flags), arch, _compiler_version(cc)]).encode()).hexdigest()[:24]
        lib_path = cache_dir() / f"{env_path.stem}-{key}.so"
        if lib_path.exists():
            return lib_path
        out = Path(tmp) / lib_path.name
        base = [cc, *flags, *include_flags, *define_flags, str(src), "-o", str(out), "-lm"]
        try:
            _run(base[:1] + ["-fopenmp"] + base[1:], f"compiling {env_path.name}")
        except CompileError as err:
            if "openmp" not in str(err).lower() and "omp" not in str(err).lower():
                raise
            _run(base, f"compiling {env_path.name}")  # a compiler without OpenMP: single-threaded
        os.replace(out, lib_path)  # atomic, so concurrent builds never see half a library
        return lib_path


class ActionError(ValueError):
    """An action outside the env's Discrete range; the batch was not stepped."""


class CompiledEnv:
    """A compiled env library and the sizes it declares."""

    def __init__(self, lib_path: Path, name: str):
        self.name = name
        self.lib = ctypes.CDLL(str(lib_path))  # CDLL releases the GIL during every call
        ints = {k: getattr(self.lib, "fv_" + k)() for k in
                ["obs_size", "num_actions", "num_agents", "num_stats", "slot_size", "obs_bytes",
                 "render_width", "render_height"]}
        self.obs_size = ints["obs_size"]
        self.num_actions = ints["num_actions"]
        self.num_agents = ints["num_agents"]
        self.slot_size = ints["slot_size"]
        self.obs_dtype = np.dtype(np.float32) if ints["obs_bytes"] == 4 else np.dtype(np.uint8)
        self.render_shape = (ints["render_height"], ints["render_width"], 3)
        self.lib.fv_stat_names.restype = ctypes.c_char_p
        names = self.lib.fv_stat_names().decode()
        self.stat_names = [s.strip() for s in names.split(",") if s.strip()]
        if len(self.stat_names) != ints["num_stats"]:
            raise ValueError(f"{name}: STAT_NAMES lists {len(self.stat_names)} names but NUM_STATS is {ints['num_stats']}")
        p = ctypes.c_void_p
        i = ctypes.c_int
        self.lib.fv_reset.argtypes = [i, p, p, p, p]
        self.lib.fv_step.argtypes = [i, p, p, p, p, p, p, p, p, p, p, i, i, p, p]
        self.lib.fv_step.restype = i
        self.lib.fv_render.argtypes = [p, i, p]
        threads = os.environ.get("FASTVEC_NUM_THREADS")
        if threads:  # e.g. 1 on a machine shared with other busy processes, where OpenMP barriers stall
            self.lib.fv_set_num_threads(int(threads))


@lru_cache(maxsize=None)
def load(env_path: Path, defines: tuple) -> CompiledEnv:
    """Compile (or fetch from the cache) and load an env; memoized per process."""
    return CompiledEnv(compile_env(env_path, dict(defines)), env_path.stem)


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def _data_address(a: np.ndarray) -> int:
    """Address of a's data: through the buffer protocol (a fraction of ndarray.ctypes's cost, which
    matters once per step), or ndarray.ctypes for a read-only array, which the buffer protocol refuses
    to export writable."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def gym_out_layout(num_envs: int, num_stats: int) -> tuple[int, dict[str, tuple[np.dtype, int, int]]]:
    """Bytes of the block that `CpuBatch.step(actions, out)` fills for the Gymnasium face, and its
    arrays as np.frombuffer's (dtype, count, offset), as batch.h's fv_copy_out writes them:
    rewards (N,), episode_return (N,), episode_length (N,), stats (S * N: (S, N)) and flags (4 * N:
    terminated, truncated, done, done again)."""
    n, s = num_envs, num_stats
    return (20 + 4 * s) * n, {
        "rewards": (np.dtype(np.float64), n, 0),
        "episode_return": (np.dtype(np.float32), n, 8 * n),
        "episode_length": (np.dtype(np.int32), n, 12 * n),
        "stats": (np.dtype(np.float32), s * n, 16 * n),
        "flags": (np.dtype(np.bool_), 4 * n, (16 + 4 * s) * n),
    }


class CpuBatch:
    """num_envs copies of one env, stepped in place. Buffers (A = agents, O = obs size, S = stats):
    obs (N, A, O), rewards (N, A) float32, terminated / truncated (N,) bool, final_obs (N, A, O)
    (the terminal obs under SAME_STEP), and where an env is done: episode_return (N, A),
    episode_length (N,) int32, episode_stats (N, S)."""

    device = "cpu"

    def __init__(self, env: CompiledEnv, num_envs: int, autoreset_code: int, max_episode_steps: int | None):
        n, a, o = num_envs, env.num_agents, env.obs_size
        self.env, self.num_envs = env, n
        self.autoreset_code = autoreset_code
        self.max_episode_steps = int(max_episode_steps or 0)
        self.slots = np.zeros((n, env.slot_size), np.uint8)  # (N, sizeof(fv_slot)): all simulator state
        self._slots_ptr = self.slots.ctypes.data
        self.obs = np.zeros((n, a, o), env.obs_dtype)
        self.final_obs = np.zeros((n, a, o), env.obs_dtype)
        self.rewards = np.zeros((n, a), np.float32)
        self.terminated = np.zeros(n, np.bool_)
        self.truncated = np.zeros(n, np.bool_)
        self.episode_return = np.zeros((n, a), np.float32)
        self.episode_length = np.zeros(n, np.int32)
        self.episode_stats = np.zeros((n, len(env.stat_names)), np.float32)
        self.actions = np.zeros((n, a), np.int64)  # staging for actions of other dtypes
        # Buffers never move, so their addresses are taken once (ndarray.ctypes is too slow to call every step).
        self._step_ptrs = [_ptr(b) for b in (self.obs, self.rewards, self.terminated, self.truncated,
                                             self.final_obs, self.episode_return, self.episode_length,
                                             self.episode_stats)]

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None); reseed env i with seeds[i] if seeds is given."""
        seeds = None if seeds is None else np.ascontiguousarray(seeds, np.uint64)
        mask = None if mask is None else np.ascontiguousarray(mask, np.uint8)
        self.env.lib.fv_reset(self.num_envs, _ptr(self.slots), _ptr(seeds), _ptr(mask), _ptr(self.obs))

    def step(self, actions: np.ndarray, out: np.ndarray | None = None, out_obs: np.ndarray | None = None) -> int:
        """Step every env with integer actions (N, A) and autoreset per the mode. Returns how many
        envs ended; raises ActionError (nothing stepped) if an action is out of range.
        For the Gymnasium face: out, a contiguous block to fill with agent 0's outputs as
        `gym_out_layout` lays them out, and out_obs, a contiguous array like obs to copy obs into;
        the threads that step the envs write both."""
        if actions.dtype != np.int64 or not actions.flags.c_contiguous:
            np.copyto(self.actions, actions.reshape(self.actions.shape), casting="unsafe")
            actions = self.actions
        ended = self.env.lib.fv_step(self.num_envs, self._slots_ptr, _data_address(actions), *self._step_ptrs,
                                     self.autoreset_code, self.max_episode_steps,
                                     None if out is None else _data_address(out),
                                     None if out_obs is None else _data_address(out_obs))
        if ended < 0:
            k = -1 - ended
            env, agent = divmod(k, self.env.num_agents)
            where = f"env {env}" if self.env.num_agents == 1 else f"env {env}, agent {agent}"
            raise ActionError(
                f"action {actions.ravel()[k]} out of range for Discrete({self.env.num_actions}) at {where}"
            )
        return ended

    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i."""
        frame = np.zeros(self.env.render_shape, np.uint8)
        self.env.lib.fv_render(_ptr(self.slots), int(i), _ptr(frame))
        return frame
