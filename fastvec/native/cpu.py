"""The CPU backend: compiles an env source with the system C compiler (-O3 -march=native; batch.h's
pool of threads steps chunks of envs), caches the shared library by content hash, and steps a batch in
place into NumPy buffers. A compile error is raised once, as CompileError, and names what an env file
lacks of fastvec.h's contract (`env_step not defined in my_env.h`) when that is the cause.

The build cache (build_cache.py, shared with gpu.py's cubins) trusts nothing on disk; an env's file
name reaches the compiler only as an argument (-include), never as source text."""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np

from fastvec.native import NATIVE_DIR, check_define_names, check_step_limit
from fastvec.native.build_cache import (  # noqa: F401  (gpu.py and callers take them from here)
    CACHE_FORMAT, CacheDirError, build_dir, cache_dir, cached_build, private_dir, safe_name, sidecar, verified,
    write_atomic)
from fastvec.native.env_file import check_env_file_defines
from fastvec.native.spaces import (  # noqa: F401  (callers catch cpu.ActionError)
    MAX_OBS_DIMS, ActionError, EnvSpaces, check_declared_sizes)

# -ffp-contract=off: no fused multiply-adds, so results stay those of plain IEEE double/float
# arithmetic (CartPole matches Gymnasium bit for bit, and the GPU build, --fmad=false, the CPU's).
# -pthread: batch.h's worker pool. -Werror=implicit-function-declaration: a call to a function the env
# file never declared (a missing env_step) stops the build instead of leaving an undefined symbol.
C_FLAGS = ["-O3", "-std=c99", "-shared", "-fPIC", "-fvisibility=hidden", "-fno-math-errno", "-ffp-contract=off",
           "-pthread", "-Werror=implicit-function-declaration"]
# What an env file defines (fastvec.h's contract), so a compile error about one of them can say so.
CONTRACT = ("OBS_SIZE", "NUM_ACTIONS", "RENDER_W", "RENDER_H", "State", "env_reset", "env_step", "env_render")


class CompileError(RuntimeError):
    """An env source did not compile: the message gives the compiler's first errors; `log` holds the
    command and the compiler's full output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log or message


# ---------------------------------------------------------------------- the C compiler
def find_compiler() -> tuple[str, ...]:
    """The C compiler to use as a command: $CC split as a shell would (`CC='ccache gcc'`), its first word
    found on PATH, else a CompileError naming CC; without CC, cc, gcc or clang, or an error that says how
    to get one."""
    given = os.environ.get("CC", "").strip()
    if given:
        try:
            words = shlex.split(given)
        except ValueError as err:
            raise CompileError(f"CC={given!r} cannot be split into words ({err}); "
                               "set CC to a C compiler, e.g. CC=gcc") from None
        if not words or not shutil.which(words[0]):
            raise CompileError(f"CC={given!r}: {words[0] if words else given!r} is not an executable found on PATH; "
                               "set CC to a C compiler (e.g. CC=gcc) or unset it")
        return tuple(words)
    for candidate in ["cc", "gcc", "clang"]:
        if shutil.which(candidate):
            return (candidate,)
    raise CompileError(
        "no C compiler found (tried $CC, cc, gcc, clang); fastvec compiles its environments on first use. "
        "Install one, e.g. `apt install gcc` or `xcode-select --install`, or set CC."
    )


def include_name(env_path: Path) -> str:
    """env_path, absolute, as the text of an #include "..." line, or ValueError if it holds a character
    that could end that line (a quote, a backslash, a control character)."""
    text = str(Path(os.path.abspath(env_path)))
    if re.search(r'["\\\x00-\x1f\x7f]', text):
        raise ValueError(f"env file name {text!r} cannot be written into an #include (it holds a quote, a "
                         "backslash or a control character); fastvec's own builds take any name")
    return text


def driver_source(env_path: Path | None = None) -> str:
    """The translation unit both backends compile around an env: the env file, then the batch layer.

    fastvec's builds call it without a path and hand the env over as a compiler argument (the CPU:
    `-include <path>`) or as a copy under a fixed name (the GPU: gpu.ENV_INCLUDE), so a file name is
    never source text. With env_path (a driver file written by hand), the path is written into an
    #include only if include_name() finds nothing in it that could end the line."""
    if env_path is None:
        return '#include "batch.h"\n'
    return f'#include "{include_name(env_path)}"\n#include "batch.h"\n'


MAX_SHOWN_ERRORS = 3
_ERROR_LINE = re.compile(r"^(.*?:\d+(?::\d+)?: (?:fatal )?error: .*)$", re.M)


def first_errors(output: str, env_dir: Path | None = None, error_line: re.Pattern = _ERROR_LINE) -> list[str]:
    """The compiler's first error lines (error_line's: gcc's and clang's file:line:col: error: ...), the env's own
    directory left off its file names; a message without such lines (a linker's) gives its first line that mentions
    an error."""
    lines = error_line.findall(output) or [line for line in output.splitlines() if "error" in line.lower()][:1] \
        or output.strip().splitlines()[:1]
    if env_dir is not None:
        lines = [line.replace(f"{env_dir}{os.sep}", "") for line in lines]
    return lines


def compile_failure(what: str, cmd: list[str], proc: subprocess.CompletedProcess, errors: list[str], found: int,
                    tool: str = "the compiler") -> CompileError:
    """The CompileError of a failed compiler run, for the C compiler and nvcc alike: what failed and its first
    errors (`errors`; `found` error lines in all), the command and full output in its log (printed too with
    FASTVEC_BUILD_LOG=1)."""
    log = f"$ {shlex.join(cmd)}\n(exit {proc.returncode})\n{proc.stderr.strip()}"
    more = found - MAX_SHOWN_ERRORS
    shown = "\n  ".join(errors[:MAX_SHOWN_ERRORS] or [f"exit {proc.returncode}"])
    shown += f"\n  ({more} more errors)" if more > 0 else ""
    full = f"\n{log}" if os.environ.get("FASTVEC_BUILD_LOG") == "1" else \
        f"\n({tool}'s full output: the error's .log, or FASTVEC_BUILD_LOG=1 to print it)"
    return CompileError(f"{what} failed:\n  {shown}{full}", log=log)


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    # LC_ALL=C: the compiler's messages in plain ASCII quotes, which missing_names() reads.
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    if proc.returncode != 0:
        env_dir = Path(cmd[cmd.index("-include") + 1]).parent if "-include" in cmd[:-1] else None
        found = len(_ERROR_LINE.findall(proc.stderr))
        raise compile_failure(what, cmd, proc, first_errors(proc.stderr, env_dir), found)
    return proc


# gcc and clang: "implicit declaration of function 'env_step'", "call to undeclared function 'env_step'",
# "'OBS_SIZE' undeclared", "use of undeclared identifier 'OBS_SIZE'", "unknown type name 'State'"; the
# dynamic loader: "undefined symbol: env_step".
_MISSING = [re.compile(r"(?:implicit declaration of function|undeclared function|undeclared identifier|"
                       r"unknown type name|undefined symbol:|undefined reference to)\s*['`\"]?(\w+)"),
            re.compile(r"['`\"](\w+)['`\"] undeclared")]


def missing_names(output: str) -> list[str]:
    """The names of fastvec.h's contract that a compiler's (or loader's) message says are not defined,
    in contract order (a missing size or State alone, when the env functions' errors follow from it)."""
    found = {m.group(1) for pattern in _MISSING for m in pattern.finditer(output)}
    missing = [name for name in CONTRACT if name in found]
    # Without a size or State, the env's functions fail to parse and then read as undeclared: name the cause.
    return [name for name in missing if not name.startswith("env_")] or missing


def contract_error(env_name: str, err: Exception) -> CompileError | None:
    """A CompileError that names the contract's missing definitions (`env_step not defined in my_env.h`)
    when err's message is about them, else None."""
    log = getattr(err, "log", str(err))
    missing = missing_names(log)
    if not missing:
        return None
    return CompileError(f"{', '.join(missing)} not defined in {env_name}: an env file defines "
                        f"{', '.join(CONTRACT)} (the contract at the top of fastvec/native/fastvec.h; "
                        f"examples/my_env.h is a complete env)\n{err}", log=log)


@lru_cache(maxsize=None)
def simd_flags(cc: tuple[str, ...]) -> list[str]:
    """["-fopenmp-simd"] where the compiler takes it (gcc >= 4.9, clang >= 3.7), else []. It turns on
    batch.h's `#pragma omp simd` loops (vectorised across envs) without the OpenMP runtime; without it
    the pragmas are ignored (the same results, slower). Probed once per compiler, never guessed from a
    failed build's output, so a compile error is compiled and reported once."""
    proc = subprocess.run([*cc, "-fopenmp-simd", "-Werror", "-x", "c", "-c", os.devnull, "-o", os.devnull],
                          capture_output=True, text=True)
    return ["-fopenmp-simd"] if proc.returncode == 0 else []


@lru_cache(maxsize=None)
def _compiler_version(cc: tuple[str, ...]) -> str:
    return subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout


def native_arch(cc: tuple[str, ...]) -> tuple[list[str], str]:
    """(["-march=native"], the target it means here) where the compiler takes it, else ([], "").

    The env loops vectorise over envs with this machine's widest vectors (AVX-512 / AVX2). The
    predefined macros (__AVX512F__, ...) go into the build cache key, so a cache shared between
    machines of different CPUs never hands one a library with instructions it lacks.
    FASTVEC_NATIVE_ARCH=0 (read at each build) builds for the compiler's default target instead."""
    if os.environ.get("FASTVEC_NATIVE_ARCH", "1") == "0":
        return [], ""
    return _march_native(cc)


@lru_cache(maxsize=None)
def _march_native(cc: tuple[str, ...]) -> tuple[list[str], str]:
    proc = subprocess.run([*cc, "-march=native", "-dM", "-E", "-x", "c", os.devnull], capture_output=True, text=True)
    if proc.returncode != 0:  # e.g. a compiler that spells it -mcpu=native: build for the default target
        return [], ""
    return ["-march=native"], "\n".join(sorted(proc.stdout.splitlines()))


def compile_env(env_path: Path, defines: dict) -> Path:
    """Compile env_path (with -D defines) into a cached shared library and return its path.

    The cache key hashes the preprocessed source, the flags, the target and the compiler version,
    so an edit to the env file or to any header it includes triggers a rebuild; the env's path and
    content hash, the defines, compiler and flags are recorded beside the library (cached_build).
    A user's env file takes only the parameters it declares (env_file.check_env_file_defines)."""
    env_file = Path(os.path.abspath(env_path))
    define_flags = [f"-D{k}={v}" for k, v in sorted(check_define_names(defines).items())]
    if env_file.parent != NATIVE_DIR:  # a built-in env's parameters are checked by the registry (resolve_defines)
        check_env_file_defines(env_file, defines)
    cc = find_compiler()
    arch_flags, arch = native_arch(cc)
    flags = C_FLAGS + simd_flags(cc) + arch_flags
    env_bytes = env_file.read_bytes()
    # The env comes in through -include: its path is an argument (never parsed as C), and its own
    # #include "..." lines search its directory first, exactly as if the driver had included it.
    include_flags = [f"-I{NATIVE_DIR}", f"-I{env_file.parent}", "-include", str(env_file)]
    folder = cache_dir()
    with build_dir(folder) as tmp:
        src = tmp / "driver.c"
        src.write_text(driver_source())
        # Preprocessed with the target's flags (its macros, e.g. __AVX2__, select code) and keyed on
        # the defines too (one that only selects code in a dead #if must still make its own build).
        what = f"compiling {env_file.name!r}"
        try:
            pre = _run([*cc, "-E", "-P", *arch_flags, *include_flags, *define_flags, str(src)],
                       f"preprocessing {env_file.name!r}").stdout
        except CompileError as err:
            raise contract_error(env_file.name, err) or err from None
        version = _compiler_version(cc)
        inputs = {"env": str(env_file), "env_sha256": hashlib.sha256(env_bytes).hexdigest(),
                  "preprocessed_sha256": hashlib.sha256(pre.encode()).hexdigest(), "defines": define_flags,
                  "compiler": shlex.join(cc), "compiler_version": (version.strip().splitlines() or [""])[0],
                  "flags": flags, "target_sha256": hashlib.sha256(arch.encode()).hexdigest()}
        key = hashlib.sha256("\n".join([pre, " ".join(flags + define_flags), arch, version,
                                        str(env_file)]).encode()).hexdigest()
        lib_path = folder / f"{safe_name(env_file.stem)}-{key[:24]}.so"

        def build() -> bytes:
            out = tmp / "env.so"
            try:
                _run([*cc, *flags, *include_flags, *define_flags, str(src), "-o", str(out), "-lm"], what)
                try:  # a symbol the library uses but nothing defines (a declared, never defined env_step)
                    ctypes.CDLL(str(out))
                except OSError as err:
                    raise CompileError(f"{what} failed: the library does not load: {err}") from None
            except CompileError as err:
                raise contract_error(env_file.name, err) or err from None
            return out.read_bytes()

        cached_build(lib_path, key, inputs, build)
        return lib_path


class CompiledEnv:
    """A compiled env library and the sizes it declares."""

    def __init__(self, lib_path: Path, name: str):
        self.name = name
        self.lib = ctypes.CDLL(str(lib_path))  # CDLL releases the GIL during every call
        ints = {k: getattr(self.lib, "fv_" + k)() for k in
                ["obs_size", "num_actions", "num_agents", "num_stats", "slot_size", "obs_bytes",
                 "render_width", "render_height"]}
        check_declared_sizes(name, ints)  # a negative or wrapped size would fail later as a NumPy shape error
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
        self.lib.fv_bind_step.argtypes = [p, i, p, p, p, p, p, p, p, p, p, i, i]
        self.lib.fv_step_bound.argtypes = [p, p, p, p]
        self.lib.fv_step_bound.restype = i
        self.lib.fv_render.argtypes = [p, i, p]
        self.lib.fv_spaces.argtypes = [p] * 6
        self.lib.fv_get_state.argtypes = [p, i, p, p]
        self.lib.fv_set_state.argtypes = [p, i, p, p, p]
        self.lib.fv_observe.argtypes = [i, p, p, p, p]
        self.lib.fv_bind_observe.argtypes = [p, p, p]
        # fastvec.h's optional hooks: per-agent available-action masks, a world state of this many float32s (0: none)
        self.action_mask = bool(self.lib.fv_action_mask())
        self.world_state_size = max(self.lib.fv_world_state_size(), 0)
        self.lib.fv_set_num_threads(default_threads())
        self.spaces = read_spaces(self.lib, name, self.obs_size, self.obs_dtype)
        self.action_kind, self.action_dims = self.spaces.action_kind, self.spaces.action_dims
        self.action_dtype = self.spaces.action_dtype


def read_spaces(lib, name: str, obs_size: int, obs_dtype) -> EnvSpaces:
    """The spaces a CPU library declares (batch.h's fv_spaces)."""
    dims = lib.fv_action_dims()
    shape = np.zeros(MAX_OBS_DIMS, np.int32)
    obs_low, obs_high = np.zeros(obs_size, np.float32), np.zeros(obs_size, np.float32)
    nvec = np.zeros(dims, np.int64)
    action_low, action_high = np.zeros(dims, np.float32), np.zeros(dims, np.float32)
    ndim = lib.fv_spaces(*(a.ctypes.data for a in (shape, obs_low, obs_high, nvec, action_low, action_high)))
    return EnvSpaces.from_arrays(name, lib.fv_action_kind(), obs_size, obs_dtype, ndim, shape, obs_low, obs_high, nvec,
                                 action_low, action_high, lib.fv_state_values())


def default_threads() -> int:
    """Threads that step a batch: $FASTVEC_NUM_THREADS if set, else every CPU this process may run on
    (its affinity mask). batch.h's pool does not stall when another process takes a core (its threads
    claim chunks of envs; none waits for a descheduled one), so all CPUs is the default on a shared
    machine too; benchmarks/busy_cpu.py measures it."""
    value = os.environ.get("FASTVEC_NUM_THREADS", "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"FASTVEC_NUM_THREADS must be a positive integer, got {value!r}")
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks (macOS)
        return os.cpu_count() or 1


def load(env_path: Path, defines: tuple) -> CompiledEnv:
    """Compile (or fetch from the cache) and load an env, memoized per process while what its build reads
    is unchanged (sources_signature): an edited env file, or header beside it, loads its new build."""
    env_file = Path(os.path.abspath(env_path))
    check_define_names(dict(defines))  # before the memo: an unhashable value is refused by name
    settings = tuple(os.environ.get(k) for k in ("CC", "FASTVEC_CACHE_DIR", "XDG_CACHE_HOME", "FASTVEC_NATIVE_ARCH"))
    return memoized_build(_loaded, (env_file, tuple(defines), settings), env_file,
                          lambda: _open(compile_env(env_file, dict(defines)), env_file.stem))


_loaded: dict[tuple, tuple[tuple, CompiledEnv]] = {}


def memoized_build(memo: dict, key: tuple, env_file: Path, build):
    """memo[key]'s build while the sources of env_file are unchanged (sources_signature), else a new one from
    build(): both backends' per-process loads."""
    signature = sources_signature(env_file)
    known = memo.get(key)
    if known is None or known[0] != signature:
        known = memo[key] = (signature, build())
    return known[1]


def sources_signature(env_file: Path) -> tuple:
    """The env file's sha256 and the (path, mtime, size) of the files a build of it can include by name
    (its directory's and fastvec's): a change to any of them means a new build key."""
    entries = []
    for folder in (env_file.parent, NATIVE_DIR):
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if entry.is_file():
                        st = entry.stat()
                        entries.append((entry.path, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
    try:
        digest = hashlib.sha256(env_file.read_bytes()).hexdigest()
    except OSError:
        digest = ""
    return (digest, *sorted(entries))


@lru_cache(maxsize=None)
def _open(lib_path: Path, name: str) -> CompiledEnv:
    return CompiledEnv(lib_path, name)


load.cache_info = _open.cache_info  # misses: the libraries this process has loaded (one per build)


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
    """Bytes of the block that `CpuBatch.gym_step` fills for the Gymnasium face, and its
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


def gym_block(batch, copy_obs: bool) -> np.ndarray:
    """The block `CpuBatch.gym_step` has its C step write (batch.h's fv_copy_out: `gym_out_layout`, then with
    copy_obs a copy of obs at byte `batch.gym_obs_offset`), filled in NumPy from the outputs of a host-array batch
    that has just stepped: the GPU batch's pinned mirrors."""
    n, s = batch.num_envs, batch.episode_stats.shape[1]
    fields = gym_out_layout(n, s)[1]
    block = np.empty(batch.gym_obs_offset + batch.obs.nbytes if copy_obs else batch.gym_obs_offset, np.uint8)
    np.frombuffer(block, *fields["rewards"])[:] = batch.rewards[:, 0]
    np.frombuffer(block, *fields["episode_return"])[:] = batch.episode_return[:, 0]
    np.frombuffer(block, *fields["episode_length"])[:] = batch.episode_length
    np.frombuffer(block, *fields["stats"]).reshape(s, n)[:] = batch.episode_stats.T
    flags = np.frombuffer(block, *fields["flags"]).reshape(4, n)  # terminated, truncated, done, done
    flags[0], flags[1] = batch.terminated, batch.truncated
    np.logical_or(flags[0], flags[1], out=flags[2])
    flags[3] = flags[2]
    if copy_obs:
        np.frombuffer(block, batch.obs.dtype, batch.obs.size, batch.gym_obs_offset)[:] = batch.obs.reshape(-1)
    return block


def gym_obs_offset(num_envs: int, num_stats: int) -> int:
    """Where gym_step's obs copy starts: on a 64-byte boundary after the out block (aligned for any obs dtype)."""
    return (gym_out_layout(num_envs, num_stats)[0] + 63) // 64 * 64


def state_indices(indices, num_envs: int) -> np.ndarray:
    """Env indices for get_state/set_state as int64 (None: every env; negative ones count from the end),
    or an IndexError/TypeError naming the bad one."""
    if indices is None:
        return np.arange(num_envs, dtype=np.int64)
    given = np.asarray(indices)
    if given.ndim > 1 or given.dtype.kind not in "iu" or given.dtype == np.bool_:
        raise TypeError(f"indices must be an int or a 1-D list of ints, got {indices!r}")
    flat = given.reshape(-1).astype(np.int64)
    bad = (flat < -num_envs) | (flat >= num_envs)
    if bad.any():
        raise IndexError(f"env index {flat[bad][0]} out of range for {num_envs} envs")
    return np.ascontiguousarray(flat % num_envs)


def state_values(values, count: int, spaces: EnvSpaces) -> np.ndarray:
    """Values for set_state as a contiguous (count, STATE_SIZE) float64 array, or a ValueError naming the shape."""
    given = np.asarray(values, dtype=np.float64)
    want = (count, spaces.state_size)
    if given.shape == want[1:] and count == 1:
        given = given.reshape(want)
    if given.shape != want:
        raise ValueError(f"state values for {count} env(s) of {spaces.name} must have shape {want}, got {given.shape}")
    return np.ascontiguousarray(given)


def require_state_access(spaces: EnvSpaces) -> None:
    if spaces.state_size < 0:
        raise AttributeError(f"{spaces.name} has no state access: its env file defines no STATE_SIZE, env_get_state "
                             "and env_set_state (fastvec/native/fastvec.h)")


class CpuBatch:
    """num_envs copies of one env, stepped in place (a backend.Backend with NumPy arrays). Buffers (A = agents,
    O = obs size, S = stats, D = action values per agent): obs (N, A, O), rewards (N, A) float32, terminated /
    truncated (N,) bool, final_obs (N, A, O) (the terminal obs under SAME_STEP), and where an env is done:
    episode_return (N, A), episode_length (N,) int32, episode_stats (N, S). For the observation in obs, where the
    env file defines the hooks (fastvec.h), else None: action_mask (N, A, NUM_ACTIONS) uint8 (1: available) and
    world_state (N, WORLD_STATE_SIZE) float32."""

    device = "cpu"
    host_arrays = True

    def __init__(self, env: CompiledEnv, num_envs: int, autoreset_code: int, max_episode_steps: int | None):
        n, a, o = num_envs, env.num_agents, env.obs_size
        self.env, self.num_envs = env, n
        self.autoreset_code = autoreset_code
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
        self.actions = np.zeros((n, a, env.action_dims), env.action_dtype)  # staging for other dtypes and layouts
        self.action_mask = np.zeros((n, a, env.num_actions), np.uint8) if env.action_mask else None
        self.world_state = np.zeros((n, env.world_state_size), np.float32) if env.world_state_size else None
        # Buffers never move, so fv_step's arguments but the actions and the out blocks are bound once, in C.
        self._job = ctypes.create_string_buffer(env.lib.fv_step_job_size())
        self._job_ptr = ctypes.addressof(self._job)
        self._step_bound = env.lib.fv_step_bound
        self.max_episode_steps = max_episode_steps  # binds them
        self.gym_obs_offset = gym_obs_offset(n, len(env.stat_names))
        self._obs_bytes = self.obs.nbytes

    @property
    def max_episode_steps(self) -> int:
        """The step limit (0: never truncate); setting it binds the new limit for the next step."""
        return self._max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value: int | None) -> None:
        self._max_episode_steps = check_step_limit(value or None) or 0
        self.env.lib.fv_bind_step(self._job_ptr, self.num_envs, self._slots_ptr,
                                  *(_ptr(b) for b in (self.obs, self.rewards, self.terminated, self.truncated,
                                                      self.final_obs, self.episode_return, self.episode_length,
                                                      self.episode_stats)),
                                  self.autoreset_code, self._max_episode_steps)
        self.env.lib.fv_bind_observe(self._job_ptr, _ptr(self.action_mask), _ptr(self.world_state))

    def reset(self, seeds: np.ndarray | None, mask: np.ndarray | None) -> None:
        """Reset the envs in mask (all if None; resetting every env also clears terminated and truncated, as the
        GPU batch's reset does); reseed env i with seeds[i] if seeds is given."""
        if seeds is not None:
            given = np.asarray(seeds)
            if given.dtype.kind not in "iu" or (given.dtype.kind == "i" and (given < 0).any()):
                raise ValueError(f"seeds must be non-negative integers (uint64), got {given.dtype} "
                                 f"{given.ravel()[:4].tolist()}...")
            seeds = np.ascontiguousarray(given, np.uint64)
        mask = None if mask is None else np.ascontiguousarray(mask, np.uint8)
        self.env.lib.fv_reset(self.num_envs, _ptr(self.slots), _ptr(seeds), _ptr(mask), _ptr(self.obs))
        if mask is None or mask.all():
            self.terminated[:] = False
            self.truncated[:] = False
        self._observe(mask)

    def _observe(self, which: np.ndarray | None) -> None:
        """Refresh action_mask and world_state of the envs in `which` ((N,) uint8; None: all), where the env has
        them."""
        if self.action_mask is not None or self.world_state is not None:
            self.env.lib.fv_observe(self.num_envs, self._slots_ptr, _ptr(which), _ptr(self.action_mask),
                                    _ptr(self.world_state))

    def step(self, actions: np.ndarray) -> int:
        """Step every env with actions (N, A, D) (or any shape of N * A * D values; int64 for the discrete
        kinds, float32 for Box, others are cast; any other number of values is a ValueError) and autoreset per
        the mode. Returns how many envs ended;
        raises ActionError (nothing stepped) if an action is out of range (discrete) or not finite (Box)."""
        return self._step(actions, None, None)

    def gym_step(self, actions: np.ndarray, copy_obs: bool) -> tuple[int, np.ndarray]:
        """`step` for the Gymnasium face: (envs ended, a fresh uint8 block) where the block holds agent 0's
        outputs as `gym_out_layout` lays them out and, if copy_obs, a copy of obs after them (at byte
        `gym_obs_offset`); the threads that step the envs write both: one allocation and one address a step."""
        block = np.empty(self.gym_obs_offset + self._obs_bytes if copy_obs else self.gym_obs_offset, np.uint8)
        address = _data_address(block)
        return self._step(actions, address, address + self.gym_obs_offset if copy_obs else None), block

    def _step(self, actions: np.ndarray, out: int | None, out_obs: int | None) -> int:
        given = actions
        if actions.size != self.actions.size:  # the C side reads exactly N * A * D values from the address
            raise ValueError(f"actions must hold {self.actions.size} values (shape {self.actions.shape}: envs, "
                             f"agents, action dims), got shape {actions.shape}")
        if actions.dtype != self.env.action_dtype or not actions.flags.c_contiguous:
            np.copyto(self.actions, actions.reshape(self.actions.shape), casting="unsafe")
            actions = self.actions
        ended = self._step_bound(self._job_ptr, _data_address(actions), out, out_obs)
        if ended < 0:
            k = -1 - ended
            raise self.env.spaces.action_error(k, np.asarray(given).ravel()[k], self.env.num_agents)
        return ended

    def get_state(self, indices=None) -> np.ndarray:
        """The states (len(indices), STATE_SIZE) float64 of envs `indices` (None: all), in the layout of
        Gymnasium's `env.unwrapped.state` (fastvec.h's env_get_state)."""
        require_state_access(self.env.spaces)
        idx = state_indices(indices, self.num_envs)
        out = np.zeros((len(idx), self.env.spaces.state_size), np.float64)
        self.env.lib.fv_get_state(self._slots_ptr, len(idx), _ptr(idx), _ptr(out))
        return out

    def set_state(self, indices, values) -> None:
        """Set the states of envs `indices` (None: all) to values (len, STATE_SIZE) and write their
        observations into obs; their episode return and length carry on."""
        require_state_access(self.env.spaces)
        idx = state_indices(indices, self.num_envs)
        values = state_values(values, len(idx), self.env.spaces)
        self.env.lib.fv_set_state(self._slots_ptr, len(idx), _ptr(idx), _ptr(values), _ptr(self.obs))
        self._observe(None)

    def render(self, i: int) -> np.ndarray:
        """An rgb_array frame (H, W, 3) uint8 of env i (negative: from the end), or an IndexError for an env
        past either end (C would draw from memory past the slots)."""
        i = int(state_indices([i], self.num_envs)[0])
        frame = np.zeros(self.env.render_shape, np.uint8)
        self.env.lib.fv_render(_ptr(self.slots), i, _ptr(frame))
        return frame

    def synchronize(self) -> None:
        """Nothing to wait for: every step has finished (and raised its ActionError) when step() returns."""

    def rollout(self, policy, steps: int, *, graph: bool = True) -> int | None:
        """Fused rollouts run on the GPU only."""
        raise NotImplementedError("rollout() runs fused on the GPU: make the env with device='cuda'")

    def close(self) -> None:
        """Nothing to release but the memory, which goes with the last reference."""
