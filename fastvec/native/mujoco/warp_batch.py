"""Gymnasium's v5 MuJoCo tasks over MuJoCo Warp: `WarpBatch` steps N worlds with MJWarp, on Warp's CPU device or a
GPU, and runs each task's own C file (mj_view.cu over MJWarp's arrays) for observations, rewards, terminations, info,
reset noise and the step's bookkeeping, so that on a GPU a whole step stays on the device (warp_cuda.py)."""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from fastvec.native.build_cache import build_dir, cache_dir, cached_build
from fastvec.native.mujoco import HERE, batch_settings, mujoco_package, task_spec
from fastvec.native.mujoco.warp_cuda import KERNELS, CapturedStep, CudaKernels, parse_device
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
                ("terminated", _p), ("unstable", _p), ("mask", _p), ("rng", _p), ("given", _p), ("reset_now", _p),
                ("needs_reset", _p), ("resetting", _p), ("out_terminated", _p), ("out_truncated", _p),
                ("out_was_reset", _p), ("out_unstable", _p), ("elapsed", _p), ("final_obs", _p), ("final_info", _p),
                ("error", _p), ("given_f32", _i), ("same_step", _i), ("max_episode_steps", _i), ("pad_", _i)]


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
    for name in KERNELS:
        getattr(lib, name).argtypes = [ViewJob]
        getattr(lib, name).restype = None
    lib.fv_mjv_obs_size.argtypes = [ctypes.POINTER(ViewModel), _p]
    lib.fv_mjv_check.argtypes = [ctypes.POINTER(ViewModel), _p]
    lib.fv_mjv_check.restype = ctypes.c_char_p
    lib.fv_mjv_job_layout.argtypes = [_p]
    lib.fv_mjv_reset_reads_forward.argtypes = [ctypes.POINTER(ViewModel), _p, _p, _p, _i, _i]
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
                "have (it has CG and Newton); run it on the CPU (device='cpu', fastvec.native.mujoco.MujocoBatch)")
    return None


def splitmix64(state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mj_task.h's fv_mj_next over uint64 arrays: (the advanced states, the outputs)."""
    s = state + np.uint64(0x9E3779B97F4A7C15)
    z = (s ^ (s >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return s, z ^ (z >> np.uint64(31))


NO_ERROR = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
# The outputs a step writes, which a GPU batch with host arrays copies back after each step
OUTPUTS = ("obs", "rewards", "terminated", "truncated", "was_reset", "unstable", "info", "needs_reset", "error")


class WarpBatch:
    """num_envs worlds of one task stepped by MuJoCo Warp on `device` ("cpu", Warp's CPU device, or "cuda" / "cuda:N"),
    with MujocoBatch's buffers and semantics: obs (N, O) float64, rewards (N,) float64, terminated / truncated /
    was_reset / unstable (N,) bool, info (N, I) float64; NEXT_STEP autoreset, or SAME_STEP with final_obs and
    final_info. Physics in float32 by MJWarp's solver: close to libmujoco's, not equal (docs/mujoco-gpu.md).

    On a GPU every step is enqueued on one stream (the task's kernels by PyCUDA, MJWarp's by Warp: warp_cuda.py); out of
    a graph, MJWarp's solver loop still reads its iteration count on the host, while a captured step (capture_step) runs
    without the host. host_arrays=True: those names are NumPy arrays, copied back and waited for after each step, and a
    non-finite NumPy action raises ActionError with nothing stepped. host_arrays=False: they are fastvec DeviceArrays
    (`__cuda_array_interface__`, DLPack) that each step overwrites in place, step() takes actions from a CUDA array
    (float32 or float64, (N, nu), C order) in place or from NumPy, and a non-finite action is taken as 0 and reported by
    the next synchronize() or reset(). `dev` holds the device arrays in both modes, and `dev.actions`, (N, nu) float32,
    is where a captured step (capture_step) reads its actions."""

    def __init__(self, task: str, num_envs: int, max_episode_steps: int | None = None, xml_file: str | None = None,
                 frame_skip: int | None = None, same_step: bool = False, device: str = "cpu", host_arrays: bool = True,
                 **params):
        mujoco = mujoco_package()
        self.device = wp_device = parse_device(device)
        self.host_arrays = bool(host_arrays)
        self.spec = spec = task_spec(task)
        self.num_envs, self.frame_skip, self.xml_path, self.params, self._p = batch_settings(
            spec, num_envs, frame_skip, xml_file, params)
        n = self.num_envs
        self.mjm = mjm = mujoco.MjModel.from_xml_path(self.xml_path)
        reason = unsupported(task, mjm)
        if reason:
            raise ValueError(reason)
        mjw, wp = warp_packages()
        self.lib = lib = view_library(task_file(task))
        body_mass = np.ascontiguousarray(mjm.body_mass, np.float64)
        names = np.frombuffer(b"".join((mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, b) or "").encode() + b"\0"
                                       for b in range(mjm.nbody)), np.uint8)
        self.nq, self.nv, self.nu, self.nbody, self.ntendon = mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon
        host_model = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                               body_mass.ctypes.data, names.ctypes.data)
        bad = lib.fv_mjv_check(ctypes.byref(host_model), self._p.ctypes.data)
        if bad:
            raise ValueError(f"{task}-v5: {self.xml_path} does not fit {task}: {bad.decode()}")
        self.obs_size = lib.fv_mjv_obs_size(ctypes.byref(host_model), self._p.ctypes.data)
        self.info_layout, col = [], 0  # as MujocoBatch's
        for key, dtype, width in spec.info:
            w = self.ntendon if width == "T" else width
            self.info_layout.append((key, dtype, slice(col, col + w), None if width == 1 else w))
            col += w
        qpos0, qvel0 = np.ascontiguousarray(mjm.qpos0, np.float64), np.zeros(self.nv + 1)
        # forward after a reset only for a task whose reset obs, info or kept values need more than qpos and qvel
        self.reset_forward = bool(lib.fv_mjv_reset_reads_forward(ctypes.byref(host_model), self._p.ctypes.data,
                                                                  qpos0.ctypes.data, qvel0.ctypes.data,
                                                                  self.obs_size, col))
        self.timestep = mjm.opt.timestep
        self.dt = self.timestep * self.frame_skip
        self.ctrl_low, self.ctrl_high = mjm.actuator_ctrlrange[:, 0].copy(), mjm.actuator_ctrlrange[:, 1].copy()
        self._wp, self._mjw = wp, mjw
        self.same_step = bool(same_step)
        self.action_f32 = True
        self._gpu = self._device_kernels(task)
        if self._gpu is None and not host_arrays:
            raise ValueError("host_arrays=False (device arrays) needs a GPU batch: pass device='cuda'")
        o, i, u = self.obs_size, max(col, 1), self.nu
        layout = {  # name -> (shape, dtype): every buffer on the device, read and written in place
            "obs": ((n, o), np.float64), "rewards": ((n,), np.float64), "info": ((n, i), np.float64),
            "terminated": ((n,), np.bool_), "truncated": ((n,), np.bool_), "was_reset": ((n,), np.bool_),
            "unstable": ((n,), np.bool_), "actions": ((n, u), np.float32), "given64": ((n, u), np.float64),
            "step_actions": ((n, u), np.float64), "keep": ((n, KEEP), np.float64), "mask": ((n,), np.bool_),
            "ones": ((n,), np.uint8), "rng": ((n,), np.uint64), "elapsed": ((n,), np.int64),
            "needs_reset": ((n,), np.uint8), "resetting": ((n,), np.uint8), "terminated_now": ((n,), np.uint8),
            "unstable_now": ((n,), np.uint8), "error": ((1,), np.uint64), "body_mass": ((mjm.nbody,), np.float64),
            "body_names": ((len(names),), np.uint8), "p": ((max(len(self._p), 1),), np.float64),
            "init_qpos": ((self.nq,), np.float64), "init_qvel": ((self.nv + 1,), np.float64)}
        if self.same_step:
            layout.update(final_obs=((n, o), np.float64), final_info=((n, i), np.float64))
        self._layout = layout
        with self._scope():
            try:
                self.model = mjw.put_model(mjm)
            except NotImplementedError as e:
                raise ValueError(f"{task}-v5 on MuJoCo Warp: {e} (MuJoCo Warp cannot step this model); use the "
                                 "CPU batch (fastvec.native.mujoco.MujocoBatch)") from None
            self.data = mjw.make_data(mjm, nworld=n)
            self._buffers = {name: wp.zeros(shape, dtype=wp.dtype_from_numpy(np.dtype(dtype)))
                             for name, (shape, dtype) in layout.items()}
            wp.synchronize_device(wp_device)  # Warp's own stream made them; our stream uses them next
        self._write("ones", np.ones(n, np.uint8))
        self._write("rng", np.arange(n, dtype=np.uint64))  # env i's stream before any seed, as MujocoBatch's
        self._write("error", np.array([NO_ERROR]))
        for name, values in (("body_mass", body_mass), ("body_names", names), ("p", self._p),
                             ("init_qpos", mjm.qpos0), ("init_qvel", np.zeros(self.nv + 1))):
            padded = np.zeros(*layout[name])
            padded[:len(values)] = values
            self._write(name, padded)
        arrays = {}
        for name in VIEW_FIELDS:  # MJWarp's arrays, read and written in place by the task code
            arr = getattr(self.data, name)
            if not arr.is_contiguous:
                raise RuntimeError(f"MuJoCo Warp's Data.{name} is not contiguous: fastvec's task views need "
                                   "row-major (nworld, ...) arrays (a mujoco-warp version fastvec was not built for?)")
            arrays[name] = arr.ptr
        b = {name: arr.ptr for name, arr in self._buffers.items()}
        model = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                          b["body_mass"], b["body_names"])
        self._job = ViewJob(model, *(arrays[name] for name in VIEW_FIELDS), b["p"], b["init_qpos"], b["init_qvel"],
                            self.dt, o, col, 1, n, b["step_actions"], b["keep"], b["obs"], b["rewards"], b["info"],
                            b["terminated_now"], b["unstable_now"], b["mask"], b["rng"], b["actions"], b["mask"],
                            b["needs_reset"], b["resetting"], b["terminated"], b["truncated"], b["was_reset"],
                            b["unstable"], b["elapsed"], b.get("final_obs", 0), b.get("final_info", 0), b["error"],
                            1, int(self.same_step), 0, 0)
        self._every = ViewJob.from_buffer_copy(self._job)  # the same job over every world (mask: ones)
        self._every.mask = b["ones"]
        self.max_episode_steps = spec.max_episode_steps if max_episode_steps is None else int(max_episode_steps or 0)
        self._outputs = [*OUTPUTS, *(("final_obs", "final_info") if self.same_step else ())]
        if self._gpu is None:  # Warp's CPU device: its arrays are host memory, the outputs are views of them
            self._host = {name: arr.numpy() for name, arr in self._buffers.items()}
        else:
            from fastvec.native.mujoco.warp_cuda import device_views

            self.dev = SimpleNamespace(**device_views(self, [*self._outputs, "actions"]))
            self._host = {name: np.zeros(*layout[name]) for name in self._outputs}
            self._host["error"][:] = NO_ERROR
        shown = self._host if self._gpu is None or self.host_arrays else vars(self.dev)
        for name in ("obs", "rewards", "terminated", "truncated", "was_reset", "unstable", "info"):
            setattr(self, name, shown[name])
        self.final_obs = shown["final_obs"] if self.same_step else None
        self.final_info = shown["final_info"] if self.same_step else None

    @property
    def max_episode_steps(self) -> int:
        """The step limit (0: never truncate); a captured step keeps the limit it was captured with."""
        return self._job.max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value: int | None) -> None:
        from fastvec.native import check_step_limit

        self._job.max_episode_steps = self._every.max_episode_steps = check_step_limit(value or None) or 0

    # ------------------------------------------------------------------ the device's buffers
    def _device_kernels(self, task: str) -> CudaKernels | None:
        """The GPU's kernels and stream (warp_cuda.CudaKernels); None on Warp's CPU device."""
        if self.device == "cpu":
            return None
        return CudaKernels(task_file(task), int(self.device[5:]), ctypes.sizeof(ViewJob), self._wp)

    def _scope(self):
        """Warp's device, and on a GPU the batch's stream, for MJWarp's calls."""
        stack = contextlib.ExitStack()
        stack.enter_context(self._wp.ScopedDevice(self.device))
        if self._gpu is not None:
            stack.enter_context(self._wp.ScopedStream(self._gpu.warp_stream))
        return stack

    def _write(self, name: str, values) -> None:
        """A buffer's values from the host (on a GPU after the work enqueued so far)."""
        shape, dtype = self._layout[name]
        values = np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype), shape))
        if self._gpu is None:
            self._buffers[name].numpy()[...] = values
        else:
            self._gpu.synchronize()
            self._gpu.drv.memcpy_htod(self._buffers[name].ptr, values)

    def _read(self, name: str) -> np.ndarray:
        """A copy of a buffer's values (on a GPU, waits for the work enqueued so far)."""
        if self._gpu is None:
            return self._buffers[name].numpy().copy()
        out = np.zeros(*self._layout[name])
        self._gpu.synchronize()
        self._gpu.drv.memcpy_dtoh(out, self._buffers[name].ptr)
        return out

    def _launch(self, name: str, job: ViewJob) -> None:
        if self._gpu is None:
            getattr(self.lib, name)(job)
        else:
            self._gpu.launch(name, job, self.num_envs)

    def _fence(self) -> None:
        """On Warp's CPU device, MJWarp's work done before the task code reads it (a GPU's stream orders them)."""
        if self._gpu is None:
            self._wp.synchronize_device("cpu")

    # ------------------------------------------------------------------ one step, enqueued
    def _enqueue_step(self, given: int, f32: bool) -> None:
        """A whole step on the device: actions in, frame_skip physics steps, the task's after and keep, the step's
        flags, and the resets it calls for; reads actions from device address `given` (float32 if f32)."""
        mjw = self._mjw
        for job in (self._job, self._every):
            job.given, job.given_f32, job.action_f32 = given, int(f32), int(f32)
        self._launch("fv_mjv_take", self._job)
        self._launch("fv_mjv_act", self._job)
        with self._scope():
            for _ in range(self.frame_skip):
                mjw.step(self.model, self.data)
            mjw.rne_postconstraint(self.model, self.data)
            self._fence()
        self._launch("fv_mjv_after", self._job)
        self._launch("fv_mjv_keep", self._every)  # every world's `before` for the next step, before any reset's forward
        self._launch("fv_mjv_book", self._job)
        self._enqueue_reset()

    def _enqueue_reset(self, state: np.ndarray | None = None) -> None:
        """MJWarp's reset_data on the worlds in mask, the task's noise (or qpos, qvel from state, a row per world
        in mask), forward, then their obs, reset info and the next step's kept values."""
        mjw = self._mjw
        with self._scope():
            mjw.reset_data(self.model, self.data, reset=self._buffers["mask"])
            self._fence()
            if state is None:
                self._launch("fv_mjv_reset", self._job)
            else:
                mask = self._read("mask")
                qpos, qvel = self.data.qpos.numpy(), self.data.qvel.numpy()
                qpos[mask], qvel[mask] = state[:, :self.nq], state[:, self.nq:]
                self.data.qpos.assign(qpos)
                self.data.qvel.assign(qvel)
            if self.reset_forward:  # on every world; the others' next `before` values were kept before it
                mjw.forward(self.model, self.data)
                self._fence()
        self._launch("fv_mjv_observe", self._job)
        self._launch("fv_mjv_keep", self._job)

    def _refresh(self) -> None:
        """A GPU batch with host arrays: the step's outputs copied back (waits for the GPU)."""
        if self._gpu is not None and self.host_arrays:
            from fastvec.native.mujoco.warp_cuda import host_copy

            host_copy(self, self._outputs)

    # ------------------------------------------------------------------ the interface
    def reset(self, seeds: np.ndarray | None = None, mask: np.ndarray | None = None) -> None:
        """Reset the envs in mask (all if None), reseeding env i with seeds[i] if seeds is given."""
        self.synchronize()
        chosen = np.ones(self.num_envs, np.bool_) if mask is None else np.asarray(mask, np.bool_).reshape(-1)
        if seeds is not None:  # mj_batch.c's seeding: the seed hashed once, so seed + 1 is not seed shifted
            mixed = np.asarray(seeds, np.uint64).reshape(-1) ^ np.uint64(0x2545F4914F6CDD1D)
            rng = self._read("rng")
            rng[chosen] = splitmix64(mixed)[1][chosen]
            self._write("rng", rng)
        self._write("mask", chosen)
        self._enqueue_reset()
        self._write("was_reset", chosen)
        self._refresh()

    def _given(self, actions) -> tuple[int, bool]:
        """(device address, float32?) of the step's actions: a CUDA array's own memory, or a copy of host ones;
        with host arrays a non-finite action of a world that steps raises here, before anything is stepped."""
        n, u = self.num_envs, self.nu
        if self._gpu is not None and not self.host_arrays:
            from fastvec.native.device_array import device_view

            view = device_view(actions, self._gpu.handle, self._gpu.index)
            if view is not None:
                ptr, shape, strides, dtype = view
                floats = dtype in (np.float32, np.float64)  # None: a dtype NumPy has no name for (bfloat16)
                contiguous = floats and (strides is None or tuple(strides) == tuple(
                    int(np.prod(shape[k + 1:], dtype=np.int64)) * dtype.itemsize for k in range(len(shape))))
                if not floats or int(np.prod(shape)) != n * u or not contiguous:
                    raise ValueError(f"device actions for {n} envs of {self.spec.name} must be {n} x {u} float32 or "
                                     f"float64 values in C order, got shape {shape}, dtype {dtype}, strides {strides}")
                return ptr, dtype == np.float32
        given = np.asarray(actions)
        if given.size != n * u:
            raise ValueError(f"actions for {n} envs of {self.spec.name} must hold {n} x {u} values, got shape "
                             f"{given.shape}")
        f32 = given.dtype == np.float32
        values = given.reshape(n, u).astype(np.float32 if f32 else np.float64)
        # host arrays: checked here against the worlds that step (device arrays: by take, reported later)
        stepping = ~self._host["needs_reset"].astype(bool) if self.host_arrays else np.zeros(n, np.bool_)
        bad = ~np.isfinite(values) & stepping[:, None]
        if bad.any():
            k = int(np.flatnonzero(bad.ravel())[0])
            raise ActionError(f"action {given.ravel()[k]!r} (env {k // u}, dimension {k % u}) of "
                              f"{self.spec.name} is not finite: actions must be finite numbers; nothing was stepped")
        name = "actions" if f32 else "given64"
        self._write(name, values)
        return self._buffers[name].ptr, f32

    def step(self, actions) -> int | None:
        """Step every env with actions (N, nu), as MujocoBatch.step; returns how many episodes ended, or None for
        a GPU batch with device arrays (nothing waited for)."""
        given, f32 = self._given(actions)
        self.action_f32 = f32
        self._enqueue_step(given, f32)
        if self._gpu is not None and not self.host_arrays:
            return None
        self._refresh()
        self._raise_error()
        return int((self.terminated | self.truncated).sum())

    def capture_step(self, stream: int | None = None) -> CapturedStep:
        """One step captured as a CUDA graph with MJWarp's kernels and the task's (a GPU batch only): its launch()
        steps every env with the actions in `dev.actions`, (N, nu) float32, with no host work or synchronisation;
        the outputs are in `dev`. The graph keeps the batch's max_episode_steps of the capture. It replays on the
        batch's stream, or on the CUDA stream whose handle is `stream` (a trainer's: ordered with its work)."""
        if self._gpu is None:
            raise NotImplementedError("capture_step() captures a CUDA graph: it needs a GPU batch (device='cuda'); "
                                      "on Warp's CPU device, step() each step")
        wp, mjw = self._wp, self._mjw
        self.synchronize()
        with self._scope():  # MJWarp makes some kernels on first use, which a capture cannot load: use them once,
            scratch = mjw.make_data(self.mjm, nworld=self.num_envs)  # on a scratch copy, to leave the envs alone
            for _ in range(self.frame_skip):
                mjw.step(self.model, scratch)
            mjw.rne_postconstraint(self.model, scratch)
            mjw.reset_data(self.model, scratch, reset=self._buffers["mask"])
            mjw.forward(self.model, scratch)
            wp.synchronize_device(self.device)
            del scratch
        with self._scope(), wp.ScopedCapture(device=self.device, stream=self._gpu.warp_stream) as capture:
            self._enqueue_step(self._buffers["actions"].ptr, True)
        replay = self._gpu.warp_stream if stream is None else wp.Stream(wp.get_device(self.device),
                                                                        cuda_stream=int(stream))
        return CapturedStep(capture.graph, replay, wp)

    def put_actions(self, actions) -> None:
        """Copy actions (N, nu) from the host into `dev.actions`, where a captured step reads them."""
        self._write("actions", np.asarray(actions, np.float32).reshape(self.num_envs, self.nu))

    def synchronize(self) -> None:
        """Wait for every step enqueued so far; ActionError if one was given a non-finite action (device arrays)."""
        if self._gpu is not None:
            self._gpu.synchronize()
            if not self.host_arrays:
                self._host["error"][:] = self._read("error")
        self._raise_error()

    def _raise_error(self) -> None:
        error = int(self._host["error"][0])
        if error != int(NO_ERROR):
            self._write("error", np.array([NO_ERROR]))
            self._host["error"][0] = NO_ERROR
            raise ActionError(f"a non-finite action (env {error // self.nu}, dimension {error % self.nu}) of "
                              f"{self.spec.name} was given to a step on the GPU, which took it as 0: actions must be "
                              "finite numbers")

    def info_dtype(self, dtype):
        """An info value's dtype after the last step, as MujocoBatch.info_dtype."""
        return np.float64 if dtype is np.float32 and not self.action_f32 else dtype

    def get_state(self, indices=None) -> np.ndarray:
        """(len(indices), nq + nv) float64: qpos then qvel of envs `indices` (None: all)."""
        idx = np.arange(self.num_envs) if indices is None else np.asarray(indices, np.int64).reshape(-1)
        self.synchronize()
        with self._scope():
            qpos, qvel = self.data.qpos.numpy(), self.data.qvel.numpy()
        return np.concatenate([qpos[idx], qvel[idx]], axis=1).astype(np.float64)

    def set_state(self, indices, values) -> None:
        """Set envs `indices` (None: all) to qpos, qvel (rounded to float32) as a fresh episode after its noise,
        and write their observations and reset info."""
        idx = np.arange(self.num_envs) if indices is None else np.asarray(indices, np.int64).reshape(-1)
        mask = np.zeros(self.num_envs, np.bool_)
        mask[idx] = True
        if mask.sum() != len(idx):
            raise ValueError(f"set_state: indices {idx.tolist()} repeat an env; give each env once")
        given = np.asarray(values, np.float64).reshape(len(idx), self.nq + self.nv)
        self.synchronize()
        self._write("mask", mask)
        self._enqueue_reset(given[np.argsort(idx)])
        self._refresh()

    def close(self) -> None:
        if self._gpu is not None and self.model is not None:
            self._gpu.synchronize()
        self.model = self.data = None


def mujoco_batch(task: str | None, num_envs: int, *, device: str = "cpu", array_type: str = "numpy", source=None,
                 **keywords):
    """The batch behind the MuJoCo faces: MujocoBatch (libmujoco, float64) for device="cpu", WarpBatch on the GPU
    for "cuda" / "cuda:N" (array_type "numpy": NumPy outputs, one wait a step; "device": DeviceArrays, no wait).
    Errors name the bad value and what to pass."""
    from fastvec.native.mujoco import MujocoBatch

    if array_type not in ("numpy", "device"):
        raise ValueError(f"array_type={array_type!r} is not one of 'numpy', 'device'")
    where = parse_device(device)
    if where == "cpu":
        if array_type == "device":
            raise ValueError("array_type='device' needs a GPU env: pass device='cuda'")
        return MujocoBatch(task, num_envs, source=source, **keywords)
    if source is not None:
        raise ValueError("a task file of your own runs on the CPU only (MujocoBatch): fastvec's MuJoCo tasks on the "
                         "GPU are the built-in ones; drop device= or source=")
    return WarpBatch(task, num_envs, device=where, host_arrays=array_type == "numpy", **keywords)
