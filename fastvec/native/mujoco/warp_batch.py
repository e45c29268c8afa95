"""Gymnasium's v5 MuJoCo tasks over MuJoCo Warp: `WarpBatch` steps N worlds with MJWarp and runs each task's
own C file (mj_view.cu over MJWarp's arrays) for observations, rewards, terminations, info and reset noise."""

from __future__ import annotations

import ctypes
import hashlib
from functools import lru_cache

import numpy as np

from fastvec.native.build_cache import build_dir, cache_dir, cached_build
from fastvec.native.mujoco import HERE, batch_settings, mujoco_package, task_spec
from fastvec.native.spaces import ActionError

# -ffp-contract=off: the task terms round as the CPU path's do; C++: mj_view.h's float32 overloads
CXX_FLAGS = ["-x", "c++", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-fno-math-errno", "-ffp-contract=off",
             "-fno-exceptions", "-fno-rtti"]
KEEP = 8  # mj_task.h's FV_MJ_KEEP
VIEW_FIELDS = ("qpos", "qvel", "ctrl", "xpos", "xipos", "site_xpos", "cinert", "cvel", "cfrc_ext", "qfrc_actuator",
               "qfrc_constraint", "ten_length", "ten_velocity")
_p, _i, _d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double


class _Opt(ctypes.Structure):
    _fields_ = [("timestep", _d)]


class ViewModel(ctypes.Structure):
    """mj_view.h's mjModel: the model's sizes, timestep, body masses and names."""
    _fields_ = [("nq", _i), ("nv", _i), ("nu", _i), ("nbody", _i), ("ntendon", _i), ("nsite", _i), ("opt", _Opt),
                ("body_mass", _p), ("body_names", _p)]


class ViewJob(ctypes.Structure):
    """mj_view.cu's fv_mjv_job, field by field."""
    _fields_ = [("m", ViewModel), *((name, _p) for name in VIEW_FIELDS), ("p", _p), ("init_qpos", _p),
                ("init_qvel", _p), ("dt", _d), ("obs_size", _i), ("info_size", _i), ("action_f32", _i),
                ("num_worlds", _i), ("actions", _p), ("keep", _p), ("obs", _p), ("rewards", _p), ("info", _p),
                ("terminated", _p), ("unstable", _p), ("mask", _p), ("rng", _p)]


def warp_packages():
    """(mujoco_warp, warp), or an ImportError that says how to install them."""
    try:
        import mujoco_warp
        import warp
    except ImportError:
        raise ImportError("fastvec's MuJoCo tasks on MuJoCo Warp need mujoco-warp and warp-lang (and mujoco>=3.13): "
                          "pip install 'fastvec[mujoco-gpu]'") from None
    return mujoco_warp, warp


@lru_cache(maxsize=None)
def view_library(task_file: str) -> ctypes.CDLL:
    """mj_view.cu over `task_file` (a task's C file here) built by the host's compiler, for MJWarp's CPU device."""
    from fastvec.native.cpu import _compiler_version, _run, find_compiler

    sources = [HERE / "mj_view.cu", HERE / task_file, HERE / "mj_task.h", HERE / "mj_view.h"]
    cc = find_compiler()
    flags = [*CXX_FLAGS, f'-DFV_MJ_TASK_FILE="{task_file}"']
    text = "".join(p.name + "\n" + p.read_text() for p in sources)
    version = _compiler_version(cc)
    key = hashlib.sha256("\n".join([text, " ".join(flags), version]).encode()).hexdigest()
    folder = cache_dir()
    artefact = folder / f"mujoco_view-{task_file[:-2]}-{key[:24]}.so"
    inputs = {"sources": [str(p) for p in sources], "flags": flags,
              "compiler_version": (version.strip().splitlines() or [""])[0]}

    def build() -> bytes:
        with build_dir(folder) as tmp:
            out = tmp / "mujoco_view.so"
            _run([*cc, *flags, f"-I{HERE}", str(HERE / "mj_view.cu"), "-o", str(out), "-lm"],
                 f"compiling fastvec's {task_file} over MuJoCo Warp's arrays")
            return out.read_bytes()

    cached_build(artefact, key, inputs, build)
    lib = ctypes.CDLL(str(artefact))
    for name in ("fv_mjv_keep", "fv_mjv_act", "fv_mjv_after", "fv_mjv_reset", "fv_mjv_observe"):
        getattr(lib, name).argtypes = [ViewJob]
        getattr(lib, name).restype = None
    lib.fv_mjv_obs_size.argtypes = [ctypes.POINTER(ViewModel), _p]
    lib.fv_mjv_check.argtypes = [ctypes.POINTER(ViewModel), _p]
    lib.fv_mjv_check.restype = ctypes.c_char_p
    return lib


def task_file(task: str) -> str:
    """The C file of a built-in task (Hopper -> hopper.c, HalfCheetah -> half_cheetah.c, Walker2d -> walker2d.c)."""
    name = "".join("_" + ch.lower() if ch.isupper() and k else ch.lower() for k, ch in enumerate(task))
    return name + ".c"


def unsupported(task: str, mjm) -> str | None:
    """Why MuJoCo Warp cannot step the task's model, in one line, or None."""
    mujoco = mujoco_package()
    if mjm.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        return (f"{task}-v5 on MuJoCo Warp: its model uses the PGS constraint solver, which MuJoCo Warp does not "
                "have (it has CG and Newton); use the CPU batch (fastvec.native.mujoco.MujocoBatch)")
    return None


def splitmix64(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mj_task.h's fv_mj_next over uint64 arrays: (the advanced states, the outputs)."""
    s = state + np.uint64(0x9E3779B97F4A7C15)
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return s, z ^ (z >> np.uint64(31))


class WarpBatch:
    """num_envs worlds of one task stepped by MuJoCo Warp on Warp's `device` (only "cpu" is built here), with
    MujocoBatch's buffers and semantics: obs (N, O) float64, rewards (N,) float64, terminated / truncated /
    was_reset / unstable (N,) bool, info (N, I) float64; NEXT_STEP autoreset, or SAME_STEP with final_obs and
    final_info. Physics in float32 by MJWarp's solver: close to libmujoco's, not equal (docs/mujoco-gpu.md)."""

    host_arrays = True

    def __init__(self, task: str, num_envs: int, max_episode_steps: int | None = None, xml_file: str | None = None,
                 frame_skip: int | None = None, same_step: bool = False, device: str = "cpu", **params):
        mjw, wp = warp_packages()
        mujoco = mujoco_package()
        if device != "cpu":
            raise NotImplementedError(f"WarpBatch on device {device!r}: only Warp's CPU device is built so far "
                                      "(the CUDA kernels of mj_view.cu are not launched yet); use device='cpu'")
        self.spec = spec = task_spec(task)
        self.num_envs, self.frame_skip, self.xml_path, self.params, self._p = batch_settings(
            spec, num_envs, frame_skip, xml_file, params)
        n = self.num_envs
        self.mjm = mjm = mujoco.MjModel.from_xml_path(self.xml_path)
        reason = unsupported(task, mjm)
        if reason:
            raise ValueError(reason)
        self.lib = lib = view_library(task_file(task))
        self._body_mass = np.ascontiguousarray(mjm.body_mass, np.float64)
        self._names = ctypes.create_string_buffer(b"".join(
            (mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, b) or "").encode() + b"\0" for b in range(mjm.nbody)))
        self.nq, self.nv, self.nu, self.nbody, self.ntendon = mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon
        model = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                          self._body_mass.ctypes.data, ctypes.addressof(self._names))
        bad = lib.fv_mjv_check(ctypes.byref(model), self._p.ctypes.data)
        if bad:
            raise ValueError(f"{task}-v5: {self.xml_path} does not fit {task}: {bad.decode()}")
        self.obs_size = lib.fv_mjv_obs_size(ctypes.byref(model), self._p.ctypes.data)
        self.info_layout, col = [], 0  # as MujocoBatch's
        for key, dtype, width in spec.info:
            w = self.ntendon if width == "T" else width
            self.info_layout.append((key, dtype, slice(col, col + w), None if width == 1 else w))
            col += w
        self.timestep = mjm.opt.timestep
        self.dt = self.timestep * self.frame_skip
        self.ctrl_low, self.ctrl_high = mjm.actuator_ctrlrange[:, 0].copy(), mjm.actuator_ctrlrange[:, 1].copy()
        self._wp, self._mjw = wp, mjw
        self.device = device
        with wp.ScopedDevice(device):
            try:
                self.model = mjw.put_model(mjm)
            except NotImplementedError as e:
                raise ValueError(f"{task}-v5 on MuJoCo Warp: {e} (MuJoCo Warp cannot step this model); use the "
                                 "CPU batch (fastvec.native.mujoco.MujocoBatch)") from None
            self.data = mjw.make_data(mjm, nworld=n)
            self._reset_mask = wp.zeros(n, dtype=bool)
        self.obs = np.zeros((n, self.obs_size), np.float64)
        self.rewards = np.zeros(n, np.float64)
        self.terminated, self.truncated = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
        self.info = np.zeros((n, max(col, 1)), np.float64)
        self.was_reset, self.unstable = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
        self.same_step = bool(same_step)
        self.final_obs = np.zeros_like(self.obs) if self.same_step else None
        self.final_info = np.zeros_like(self.info) if self.same_step else None
        self.action_f32 = True
        self.max_episode_steps = spec.max_episode_steps if max_episode_steps is None else int(max_episode_steps or 0)
        self._actions = np.zeros((n, self.nu), np.float64)
        self._keep = np.zeros((n, KEEP), np.float64)
        self._mask = np.zeros(n, np.uint8)
        self._rng = np.arange(n, dtype=np.uint64)  # env i's stream before any seed, as MujocoBatch's
        self._elapsed = np.zeros(n, np.int64)
        self._needs_reset = np.zeros(n, np.bool_)
        self._init_qpos = np.ascontiguousarray(mjm.qpos0, np.float64)
        self._init_qvel = np.zeros(self.nv + 1, np.float64)
        self._unstable_now = np.zeros(n, np.uint8)
        self._terminated_now = np.zeros(n, np.uint8)
        arrays = {}
        for name in VIEW_FIELDS:  # MJWarp's arrays, read and written in place by the task code
            arr = getattr(self.data, name)
            if not arr.is_contiguous:
                raise RuntimeError(f"MuJoCo Warp's Data.{name} is not contiguous: fastvec's task views need "
                                   "row-major (nworld, ...) arrays (a mujoco-warp version fastvec was not built for?)")
            arrays[name] = arr.ptr
        self._job = ViewJob(model, *(arrays[name] for name in VIEW_FIELDS), self._p.ctypes.data,
                            self._init_qpos.ctypes.data, self._init_qvel.ctypes.data, self.dt, self.obs_size, col,
                            1, n, self._actions.ctypes.data, self._keep.ctypes.data, self.obs.ctypes.data,
                            self.rewards.ctypes.data, self.info.ctypes.data, self._terminated_now.ctypes.data,
                            self._unstable_now.ctypes.data, self._mask.ctypes.data, self._rng.ctypes.data)
        self._model_struct = model  # the job holds a copy; names and masses stay alive through self

    def _reset_worlds(self, mask: np.ndarray, state: np.ndarray | None = None) -> None:
        """MJWarp's reset_data on the worlds in mask, the task's noise (or qpos, qvel from state, a row per world
        in mask), forward, then their obs, reset info and the next step's kept values."""
        wp, mjw = self._wp, self._mjw
        self._mask[:] = mask
        with wp.ScopedDevice(self.device):
            self._reset_mask.assign(mask.astype(np.bool_))
            mjw.reset_data(self.model, self.data, reset=self._reset_mask)
            wp.synchronize()
            if state is None:
                self.lib.fv_mjv_reset(self._job)
            else:
                qpos, qvel = self.data.qpos.numpy(), self.data.qvel.numpy()
                qpos[mask], qvel[mask] = state[:, :self.nq], state[:, self.nq:]
                self.data.qpos.assign(qpos)
                self.data.qvel.assign(qvel)
            # forward runs on every world; the others' next `before` values were kept before it (fv_mjv_keep)
            mjw.forward(self.model, self.data)
            wp.synchronize()
        self.lib.fv_mjv_observe(self._job)
        self.lib.fv_mjv_keep(self._job)
        self._elapsed[mask] = 0
        self._needs_reset[mask] = False

    def reset(self, seeds: np.ndarray | None = None, mask: np.ndarray | None = None) -> None:
        """Reset the envs in mask (all if None), reseeding env i with seeds[i] if seeds is given."""
        chosen = np.ones(self.num_envs, np.bool_) if mask is None else np.asarray(mask, np.bool_).reshape(-1)
        if seeds is not None:  # mj_batch.c's seeding: the seed hashed once, so seed + 1 is not seed shifted
            mixed = np.asarray(seeds, np.uint64).reshape(-1) ^ np.uint64(0x2545F4914F6CDD1D)
            self._rng[chosen] = splitmix64(mixed)[1][chosen]
        self._reset_worlds(chosen)
        self.was_reset[:] = chosen

    def step(self, actions) -> int:
        """Step every env with actions (N, nu), as MujocoBatch.step; returns how many episodes ended."""
        wp, mjw = self._wp, self._mjw
        given = np.asarray(actions)
        self.action_f32 = given.dtype == np.float32
        if given.size != self.num_envs * self.nu:
            raise ValueError(f"actions for {self.num_envs} envs of {self.spec.name} must hold {self.num_envs} x "
                             f"{self.nu} values, got shape {given.shape}")
        np.copyto(self._actions, given.reshape(self._actions.shape), casting="unsafe")
        resetting = self._needs_reset.copy()
        self._actions[resetting] = 0.0  # those worlds are reset, not stepped: their actions are not read
        bad = ~np.isfinite(self._actions)
        if bad.any():
            k = int(np.flatnonzero(bad.ravel())[0])
            raise ActionError(f"action {given.ravel()[k]!r} (env {k // self.nu}, dimension {k % self.nu}) of "
                              f"{self.spec.name} is not finite: actions must be finite numbers; nothing was stepped")
        self._job.action_f32 = int(self.action_f32)
        self.lib.fv_mjv_act(self._job)
        with wp.ScopedDevice(self.device):
            for _ in range(self.frame_skip):
                mjw.step(self.model, self.data)
            mjw.rne_postconstraint(self.model, self.data)
            wp.synchronize()
        self.lib.fv_mjv_after(self._job)
        self._mask[:] = 1
        self.lib.fv_mjv_keep(self._job)  # every world's `before` for the next step, before any reset's forward
        self._elapsed += 1
        self.terminated[:] = self._terminated_now.astype(bool) & ~resetting
        self.unstable[:] = self._unstable_now.astype(bool) & ~resetting
        self.truncated[:] = (self.max_episode_steps > 0) & (self._elapsed >= self.max_episode_steps) & ~resetting
        ended = self.terminated | self.truncated
        self.was_reset[:] = resetting
        if self.same_step and ended.any():
            self.final_obs[ended], self.final_info[ended] = self.obs[ended], self.info[ended]
        reset_now = resetting | ended if self.same_step else resetting
        if reset_now.any():
            self._reset_worlds(reset_now)
            self.rewards[resetting] = 0.0
            self.was_reset[:] = reset_now
        self._needs_reset[:] = ended & (not self.same_step)
        return int(ended.sum())

    def info_dtype(self, dtype):
        """An info value's dtype after the last step, as MujocoBatch.info_dtype."""
        return np.float64 if dtype is np.float32 and not self.action_f32 else dtype

    def get_state(self, indices=None) -> np.ndarray:
        """(len(indices), nq + nv) float64: qpos then qvel of envs `indices` (None: all)."""
        idx = np.arange(self.num_envs) if indices is None else np.asarray(indices, np.int64).reshape(-1)
        return np.concatenate([self.data.qpos.numpy()[idx], self.data.qvel.numpy()[idx]], axis=1).astype(np.float64)

    def set_state(self, indices, values) -> None:
        """Set envs `indices` (None: all) to qpos, qvel (rounded to float32) as a fresh episode after its noise,
        and write their observations and reset info."""
        idx = np.arange(self.num_envs) if indices is None else np.asarray(indices, np.int64).reshape(-1)
        mask = np.zeros(self.num_envs, np.bool_)
        mask[idx] = True
        if mask.sum() != len(idx):
            raise ValueError(f"set_state: indices {idx.tolist()} repeat an env; give each env once")
        given = np.asarray(values, np.float64).reshape(len(idx), self.nq + self.nv)
        self._reset_worlds(mask, given[np.argsort(idx)])

    def close(self) -> None:
        self.model = self.data = None
