"""Gymnasium's v5 MuJoCo tasks as a CPU batch: the task files here compiled with mj_batch.c against the
`mujoco` package's own libmujoco (the library Gymnasium steps), `MujocoBatch` stepping them in place."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import numpy as np

from fastvec.native import check_step_limit
from fastvec.native.build_cache import build_dir, cache_dir, cached_build
from fastvec.native.spaces import ActionError

HERE = Path(__file__).resolve().parent
NATIVE = HERE.parent
# Gymnasium's id without "-v5" (the task's name in its C file) -> Gymnasium's max_episode_steps
TASKS = {
    "InvertedPendulum": 1000, "InvertedDoublePendulum": 1000, "Reacher": 50, "Pusher": 100, "Swimmer": 1000,
    "HalfCheetah": 1000, "Hopper": 1000, "Walker2d": 1000, "Ant": 1000, "Humanoid": 1000, "HumanoidStandup": 1000,
}
# no -march=native: one library for every machine that shares the cache; -ffp-contract=off: no fused
# multiply-adds, so the task terms round as NumPy's do.
C_FLAGS = ["-O2", "-std=c99", "-shared", "-fPIC", "-fvisibility=hidden", "-fno-math-errno", "-ffp-contract=off",
           "-pthread"]


def mujoco_package():
    """The imported `mujoco` package, or an ImportError that says how to install it."""
    try:
        import mujoco
    except ImportError:
        raise ImportError("fastvec's MuJoCo tasks need the `mujoco` package: pip install 'fastvec[mujoco]' "
                          "(or pip install mujoco)") from None
    return mujoco


def libmujoco() -> Path:
    """The libmujoco that the `mujoco` package ships (and Gymnasium's envs step): fastvec links this one file."""
    mujoco = mujoco_package()
    folder = Path(mujoco.__file__).resolve().parent
    found = sorted(folder.glob("libmujoco.so*")) + sorted(folder.glob("libmujoco*.dylib"))
    if not found or not (folder / "include" / "mujoco" / "mujoco.h").exists():
        raise ImportError(f"the mujoco package at {folder} ships no libmujoco and C headers (a source-only build?); "
                          "install a binary wheel: pip install 'mujoco>=3.2'")
    return found[0]


def library(source: str | os.PathLike | None = None) -> ctypes.CDLL:
    """The compiled task library, with a user's task file `source` (mj_task.h's contract, defining
    `const fv_mj_task fv_mj_user_task`) beside the built-in tasks; built once per sources, compiler and libmujoco,
    kept in the build cache."""
    user = None if source is None else Path(os.path.abspath(source))
    if user is not None and not user.is_file():
        raise FileNotFoundError(f"no MuJoCo task file at {user}: give the path of a C file that defines "
                                "`const fv_mj_task fv_mj_user_task` (fastvec/native/mujoco/mj_task.h)")
    text = "" if user is None else user.read_text()
    return _library(user, hashlib.sha256(text.encode()).hexdigest())


@lru_cache(maxsize=None)
def _library(user: Path | None, user_sha256: str) -> ctypes.CDLL:
    from fastvec.native.cpu import _compiler_version, _run, find_compiler

    lib_file = libmujoco()
    mujoco_package()  # loads libmujoco by its path first, so the task library binds to the very same copy
    sources = sorted(HERE.glob("*.c")) + ([user] if user else [])
    flags = C_FLAGS + (["-DFV_MJ_USER_TASK"] if user else [])
    cc = find_compiler()
    text = "".join(p.name + "\n" + p.read_text() for p in sources + sorted(HERE.glob("*.h")) + [NATIVE / "pool.h"])
    version = _compiler_version(cc)
    key = hashlib.sha256("\n".join([text, " ".join(flags), version, str(lib_file)]).encode()).hexdigest()
    folder = cache_dir()
    artefact = folder / f"mujoco_tasks-{key[:24]}.so"
    inputs = {"sources": [str(p) for p in sources], "libmujoco": str(lib_file), "flags": flags,
              "compiler_version": (version.strip().splitlines() or [""])[0]}

    def build() -> bytes:
        with build_dir(folder) as tmp:
            out = tmp / "mujoco_tasks.so"
            _run([*cc, *flags, f"-I{lib_file.parent / 'include'}", f"-I{HERE}", *map(str, sources), "-o", str(out),
                  f"-L{lib_file.parent}", f"-l:{lib_file.name}", f"-Wl,-rpath,{lib_file.parent}", "-lm"],
                 f"compiling {'fastvec' if user is None else user.name + ' with fastvec'}'s MuJoCo tasks")
            return out.read_bytes()

    cached_build(artefact, key, inputs, build)
    lib = ctypes.CDLL(str(artefact))
    p, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.fv_mj_task_field.restype = ctypes.c_char_p
    lib.fv_mj_task_field.argtypes = [ctypes.c_char_p, i]
    lib.fv_mj_task_frame_skip.argtypes = [ctypes.c_char_p]
    lib.fv_mj_user_task_name.restype = ctypes.c_char_p
    lib.fv_mj_create.restype = p
    lib.fv_mj_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, p, i, i, i, ctypes.c_char_p, i]
    lib.fv_mj_destroy.argtypes = [p]
    lib.fv_mj_sizes.argtypes = [p, p]
    lib.fv_mj_set_info_size.argtypes = [p, i]
    lib.fv_mj_ctrlrange.argtypes = [p, p, p]
    lib.fv_mj_timestep.argtypes = [p]
    lib.fv_mj_timestep.restype = d
    lib.fv_mj_reset.argtypes = [p, p, p, p, p]
    lib.fv_mj_step.argtypes = [p, p, i, i, p, p, p, p, p, p, p, p, p]
    lib.fv_mj_get_state.argtypes = [p, i, p, p]
    lib.fv_mj_set_state.argtypes = [p, i, p, p, p]
    from fastvec.native.cpu import default_threads
    lib.fv_mj_set_threads(default_threads())
    lib.fv_mj_set_dot_fma.argtypes = [i]
    lib.fv_mj_set_dot_fma(numpy_dot_fuses())
    return lib


# Short vectors whose x.dot(x) summed in order differs with and without fused multiply-adds (checked by a test).
DOT_PROBES = ((0.1, 0.3), (0.7, 2.9), (0.3, 1.7, 0.7), (0.1, 1.1, 3.1))


def numpy_dot_fuses() -> bool:
    """Whether NumPy's dot of a short float64 vector with itself (np.linalg.norm's sum) fuses its multiply-adds,
    as OpenBLAS's ddot does on some x86-64 processors and not on others: the probes' dots against both orders."""
    fused = unfused = 0
    for probe in DOT_PROBES:
        x = np.array(probe)
        got = float(x.dot(x))
        fused += got == fma_sum_of_squares(probe)
        unfused += got == sum_of_squares(probe)
    return fused >= unfused


def sum_of_squares(values) -> float:
    total = 0.0
    for v in values:
        total += v * v
    return total


def fma_sum_of_squares(values) -> float:
    """sum of v * v in order, each step one rounding (fma), by exact rational arithmetic."""
    total = 0.0
    for v in values:
        total = float(Fraction(v) * Fraction(v) + Fraction(total))
    return total


@dataclass(frozen=True)
class TaskSpec:
    """A task as its C file declares it: keywords and defaults, info keys, Gymnasium's model and frame skip."""
    name: str
    xml_file: str
    frame_skip: int
    params: dict  # keyword -> default (a float, or a (low, high) pair for a range)
    info: tuple   # (key, dtype, width: an int, or "T" for the model's tendon count)
    reset_info: tuple
    max_episode_steps: int


def user_task_name(source) -> str:
    """The name a user's task file gives its task (fv_mj_user_task.name)."""
    return library(source).fv_mj_user_task_name().decode()


def task_spec(name: str, source=None) -> TaskSpec:
    """A built-in task's spec, or (source given) the spec of the task in a user's task file."""
    if source is None and name not in TASKS:
        raise ValueError(f"no MuJoCo task {name!r}; fastvec has {', '.join(TASKS)} "
                         "(a task of your own: MujocoBatch(source='my_task.c', ...))")
    spec = _task_spec(name, library(source))
    if spec.frame_skip < 0:  # fv_mj_task_frame_skip's answer for a name the library does not hold
        raise ValueError(f"no MuJoCo task {name!r} in {source}: it defines {user_task_name(source)!r} "
                         f"(fastvec's own tasks are there too: {', '.join(TASKS)})")
    return spec


@lru_cache(maxsize=None)
def _task_spec(name: str, lib: ctypes.CDLL) -> TaskSpec:
    field = [(lib.fv_mj_task_field(name.encode(), k) or b"").decode() for k in range(4)]
    params = {}
    for item in field[1].split():
        key, value = item.split("=")
        params[key] = tuple(float(v) for v in value.split(":")) if ":" in value else float(value)
    info = []
    for item in filter(None, field[2].split(",")):
        parts = item.split(":") + ["d", "1"][len(item.split(":")) - 1:]
        width = parts[2] if parts[2] == "T" else int(parts[2])
        info.append((parts[0], {"d": np.float64, "f": np.float32, "i": np.int64}[parts[1]], width))
    return TaskSpec(name, field[0], lib.fv_mj_task_frame_skip(name.encode()), params, tuple(info),
                    tuple(filter(None, field[3].split(","))), TASKS.get(name, 1000))


def model_path(xml_file: str) -> str:
    """Where Gymnasium finds `xml_file`: a path starting with "/", "." or "~" as it is, else a file of the
    installed Gymnasium's MuJoCo assets (read there, never copied); a FileNotFoundError names a missing one."""
    if xml_file.startswith(("/", ".")):
        path = xml_file
    elif xml_file.startswith("~"):
        path = os.path.expanduser(xml_file)
    else:
        # The package's folder without running its __init__ (which imports the renderer and with it imageio)
        folder = importlib.util.find_spec("gymnasium.envs.mujoco").submodule_search_locations[0]
        path = os.path.join(folder, "assets", xml_file)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"xml_file {xml_file!r}: no file at {path}; give an MJCF model's path "
                                "(or a file name in Gymnasium's MuJoCo assets folder)")
    return path


def batch_settings(spec: TaskSpec, num_envs, frame_skip, xml_file, params: dict) -> tuple:
    """(num_envs, frame_skip, the model's path, the task's keywords, their flat values) of a batch of task `spec`,
    checked as both batches take them; a ValueError or TypeError names the bad value."""
    n = int(num_envs)
    if n < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs}")
    skip = spec.frame_skip if frame_skip is None else int(frame_skip)
    if skip < 1:
        raise ValueError(f"frame_skip must be a positive integer, got {frame_skip!r}")
    xml_path = model_path(spec.xml_file if xml_file is None else os.fspath(xml_file))
    return (n, skip, xml_path, *task_params(spec, xml_path, params))


def task_params(spec: TaskSpec, xml_path: str, params: dict) -> tuple[dict, np.ndarray]:
    """The task's keywords with `params` over its defaults, and their values flat in the C file's order (a range
    as two values, Ant's main_body by name or index); a TypeError names an unknown keyword."""
    unknown = sorted(set(params) - set(spec.params))
    if unknown:
        raise TypeError(f"{spec.name}-v5 takes no keyword {unknown[0]!r}; its keywords: xml_file, frame_skip, "
                        f"{', '.join(spec.params)}")
    merged = {**spec.params, **params}
    values = []
    for key, default in spec.params.items():
        values.extend(_param_values(xml_path, key, merged[key], default))
    return merged, np.array(values, np.float64)


def _param_values(xml_path: str, key, value, default) -> list[float]:
    if key == "main_body" and isinstance(value, str):
        return [_body_id(xml_path, value)]
    if isinstance(default, tuple):
        try:
            pair = [float(v) for v in value]
        except (TypeError, ValueError):
            pair = []
        if len(pair) != 2:
            raise ValueError(f"{key} must be a (low, high) pair of numbers, got {value!r}")
        return pair
    if isinstance(value, (bool, np.bool_)):
        return [float(value)]
    try:
        return [float(value)]
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number, got {value!r}") from None


def _body_id(xml_path: str, name: str) -> int:
    """A body's index by name, read from the model (Ant's main_body may be given either way)."""
    mujoco = mujoco_package()
    model = mujoco.MjModel.from_xml_path(xml_path)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if body < 0:
        raise ValueError(f"main_body {name!r} is not a body of {xml_path}")
    return body


class MujocoBatch:
    """num_envs envs of one task stepped in place by libmujoco on the pool's threads. Buffers: obs (N, O) float64,
    rewards (N,) float64, terminated / truncated (N,) bool, info (N, I) float64 (the task's info values, the
    spec's order), was_reset (N,) bool (this step reset the env: autoreset), unstable (N,) bool
    (MuJoCo warned of a bad qpos, qvel or qacc, or they are not finite: the episode ended).
    Its methods are native/backend.py's Backend methods where they mean the same (reset, step, get_state,
    set_state, synchronize, rollout, render, close); its outputs are Gymnasium's types rather than Backend's
    float32 (obs and rewards in float64, which equal bits with Gymnasium need) and add the task's info values."""

    device = "cpu"
    host_arrays = True

    def __init__(self, task: str | None, num_envs: int, max_episode_steps: int | None = None,
                 xml_file: str | None = None, frame_skip: int | None = None, source=None, same_step: bool = False,
                 **params):
        if task is None:
            if source is None:
                raise ValueError("give a task (one of fastvec's MuJoCo tasks) or source (your task file)")
            task = user_task_name(source)
        self.spec = spec = task_spec(task, source)
        self.lib = lib = library(source)
        self.num_envs, self.frame_skip, self.xml_path, self.params, flat = batch_settings(
            spec, num_envs, frame_skip, xml_file, params)
        num_envs = self.num_envs
        err = ctypes.create_string_buffer(1200)
        self._ptr = lib.fv_mj_create(task.encode(), self.xml_path.encode(), flat.ctypes.data, len(flat),
                                     self.frame_skip, num_envs, err, len(err))
        if not self._ptr:
            raise ValueError(f"{task}-v5: {err.value.decode(errors='replace')}")
        sizes = np.zeros(6, np.int32)
        lib.fv_mj_sizes(self._ptr, sizes.ctypes.data)
        self.obs_size, self.nq, self.nv, self.nu, self.ntendon, self.nbody = (int(v) for v in sizes)
        self.info_layout = []  # (key, dtype, columns slice, width or None for a scalar)
        col = 0
        for key, dtype, width in spec.info:
            w = self.ntendon if width == "T" else width
            self.info_layout.append((key, dtype, slice(col, col + w), None if width == 1 else w))
            col += w
        lib.fv_mj_set_info_size(self._ptr, col)
        self.timestep = lib.fv_mj_timestep(self._ptr)
        self.dt = self.timestep * self.frame_skip
        self.ctrl_low, self.ctrl_high = np.zeros(self.nu), np.zeros(self.nu)
        lib.fv_mj_ctrlrange(self._ptr, self.ctrl_low.ctypes.data, self.ctrl_high.ctypes.data)
        n = num_envs
        self.obs = np.zeros((n, self.obs_size), np.float64)
        self.rewards = np.zeros(n, np.float64)
        self.terminated = np.zeros(n, np.bool_)
        self.truncated = np.zeros(n, np.bool_)
        self.info = np.zeros((n, max(col, 1)), np.float64)
        self.was_reset = np.zeros(n, np.bool_)
        self.unstable = np.zeros(n, np.bool_)
        self._actions = np.zeros((n, self.nu), np.float64)
        self.same_step = bool(same_step)  # SAME_STEP autoreset: an ended env's last obs and info in final_obs / final_info
        self.final_obs = np.zeros_like(self.obs) if self.same_step else None
        self.final_info = np.zeros_like(self.info) if self.same_step else None
        self.action_f32 = True  # the last step's actions were float32 (the dtype of the costs computed on them)
        self.max_episode_steps = spec.max_episode_steps if max_episode_steps is None else max_episode_steps

    @property
    def max_episode_steps(self) -> int:
        return self._max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value: int | None) -> None:
        self._max_episode_steps = check_step_limit(value or None) or 0

    def reset(self, seeds: np.ndarray | None = None, mask: np.ndarray | None = None) -> None:
        """Reset the envs in mask (all if None), reseeding env i with seeds[i] if seeds is given; writes obs
        and the reset info's values into info (the other keys' values 0)."""
        if seeds is not None:
            seeds = np.ascontiguousarray(seeds, np.uint64)
        mask = None if mask is None else np.ascontiguousarray(mask, np.uint8)
        self.lib.fv_mj_reset(self._live(), None if seeds is None else seeds.ctypes.data,
                             None if mask is None else mask.ctypes.data, self.obs.ctypes.data, self.info.ctypes.data)
        self.was_reset[:] = True if mask is None else mask.astype(bool)

    def step(self, actions) -> int:
        """Step every env with actions (N, nu); an env whose episode ended last step is reset instead
        (reward 0, was_reset), or under same_step an env whose episode ends is reset in this step (was_reset;
        its last obs and info in final_obs and final_info). Costs on the action are computed in its dtype, as
        Gymnasium's NumPy does (float32 for float32 actions, else float64). Returns how many episodes ended; raises ActionError
        (nothing stepped) for a NaN or infinite action."""
        given = np.asarray(actions)
        f32 = given.dtype == np.float32
        self.action_f32 = f32
        if given.size != self.num_envs * self.nu:
            raise ValueError(f"actions for {self.num_envs} envs of {self.spec.name} must hold {self.num_envs} x "
                             f"{self.nu} values, got shape {given.shape}")
        np.copyto(self._actions, given.reshape(self._actions.shape), casting="unsafe")
        ended = self.lib.fv_mj_step(self._live(), self._actions.ctypes.data, int(f32), self._max_episode_steps,
                                    self.obs.ctypes.data, self.rewards.ctypes.data, self.terminated.ctypes.data,
                                    self.truncated.ctypes.data, self.info.ctypes.data, self.was_reset.ctypes.data,
                                    self.unstable.ctypes.data, *((self.final_obs.ctypes.data, self.final_info.ctypes.data)
                                                                 if self.same_step else (None, None)))
        if ended < 0:
            k = -1 - ended
            raise ActionError(f"action {given.ravel()[k]!r} (env {k // self.nu}, dimension {k % self.nu}) of "
                              f"{self.spec.name} is not finite: actions must be finite numbers; nothing was stepped")
        return ended

    def info_dtype(self, dtype):
        """An info value's dtype after the last step: the float32 costs on actions are float64 for other actions."""
        return np.float64 if dtype is np.float32 and not self.action_f32 else dtype

    def get_state(self, indices=None) -> np.ndarray:
        """(len(indices), nq + nv) float64: qpos then qvel of envs `indices` (None: all)."""
        from fastvec.native.cpu import state_indices
        idx = state_indices(indices, self.num_envs)
        out = np.zeros((len(idx), self.nq + self.nv), np.float64)
        self.lib.fv_mj_get_state(self._live(), len(idx), idx.ctypes.data, out.ctypes.data)
        return out

    def set_state(self, indices, values) -> None:
        """Set envs `indices` (None: all) to qpos, qvel (len, nq + nv) as Gymnasium's reset leaves an env after
        its noise (mj_resetData, then set_state's mj_forward), and write their observations."""
        from fastvec.native.cpu import state_indices
        idx = state_indices(indices, self.num_envs)
        given = np.asarray(values, np.float64)
        if len(idx) and given.size and given.size % len(idx) == 0:  # else the shape given, refused below by name
            given = given.reshape(len(idx), -1)
        if given.shape != (len(idx), self.nq + self.nv):
            raise ValueError(f"state values for {len(idx)} env(s) of {self.spec.name} must have shape "
                             f"{(len(idx), self.nq + self.nv)} (qpos then qvel), got {np.shape(values)}")
        given = np.ascontiguousarray(given)
        self.lib.fv_mj_set_state(self._live(), len(idx), idx.ctypes.data, given.ctypes.data, self.obs.ctypes.data)

    def _live(self):
        """The C batch, or a ClosedEnvironmentError once closed (the C side would dereference a NULL batch)."""
        if not getattr(self, "_ptr", None):
            from gymnasium.error import ClosedEnvironmentError
            raise ClosedEnvironmentError(f"this {self.spec.name}-v5 batch is closed; make a new env")
        return self._ptr

    def synchronize(self) -> None:
        """Nothing to wait for: every step is done when step() returns."""

    def rollout(self, policy, steps: int, *, graph: bool = True):
        raise NotImplementedError("the MuJoCo tasks step on the CPU through step(); rollout() is the GPU batch's")

    def render(self, i: int) -> np.ndarray:
        raise NotImplementedError(f"MujocoBatch does not draw: fastvec/{self.spec.name}-v5 made with "
                                  "render_mode='rgb_array' draws through Gymnasium's MujocoRenderer (wrappers/mujoco.py)")

    def close(self) -> None:
        if getattr(self, "_ptr", None):
            self.lib.fv_mj_destroy(self._ptr)
            self._ptr = None

    def __del__(self):
        self.close()
