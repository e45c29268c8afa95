"""mj_view.cu's kernels on a GPU (marked gpu; PyCUDA, no MuJoCo Warp needed): the cubin built through the build
cache, loaded and launched by warp_cuda.CudaKernels with the job by value, writes what the host build writes over
the same arrays, for a whole step's sequence (take, act, after, keep, book, reset, observe) over more worlds than
one block, with worlds to reset, a step limit, SAME_STEP's final obs and a non-finite action."""

import ctypes

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the MuJoCo tasks need the mujoco package")

from fastvec.native.mujoco import batch_settings, task_spec  # noqa: E402
from fastvec.native.mujoco.warp_batch import (KEEP, NO_ERROR, VIEW_FIELDS, ViewJob, ViewModel, _Opt,  # noqa: E402
                                              task_file, view_library)

pytestmark = pytest.mark.gpu
SEQUENCE = ["fv_mjv_take", "fv_mjv_act", "fv_mjv_after", "fv_mjv_keep", "fv_mjv_book", "fv_mjv_reset",
            "fv_mjv_observe", "fv_mjv_keep"]


def arrays(task: str, n: int, seed: int) -> tuple[dict, dict, object]:
    """(the job's arrays by field, the model's arrays, mjModel): random float32 Data rows, random flags."""
    import mujoco

    spec = task_spec(task)
    _, skip, xml, _, p = batch_settings(spec, n, None, None, {})
    mjm = mujoco.MjModel.from_xml_path(xml)
    rng = np.random.default_rng(seed)
    sizes = {"qpos": mjm.nq, "qvel": mjm.nv, "ctrl": mjm.nu, "xpos": 3 * mjm.nbody, "xipos": 3 * mjm.nbody,
             "site_xpos": 3 * mjm.nsite, "cinert": 10 * mjm.nbody, "cvel": 6 * mjm.nbody, "cfrc_ext": 6 * mjm.nbody,
             "qfrc_actuator": mjm.nv, "qfrc_constraint": mjm.nv, "ten_length": mjm.ntendon,
             "ten_velocity": mjm.ntendon}
    a = {name: rng.uniform(-1, 1, (n, max(size, 1))).astype(np.float32) for name, size in sizes.items()}
    a["qpos"][:, 1] = rng.uniform(0.5, 1.5, n).astype(np.float32)  # Hopper's height: some healthy, some not
    lib = view_library(task_file(task))
    names = np.frombuffer(b"".join((mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, b) or "").encode() + b"\0"
                                   for b in range(mjm.nbody)), np.uint8)
    model = {"body_mass": np.ascontiguousarray(mjm.body_mass, np.float64), "body_names": names,
             "p": np.ascontiguousarray(p, np.float64), "init_qpos": np.ascontiguousarray(mjm.qpos0, np.float64),
             "init_qvel": np.zeros(mjm.nv + 1)}
    host = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                     model["body_mass"].ctypes.data, names.ctypes.data)
    o = lib.fv_mjv_obs_size(ctypes.byref(host), model["p"].ctypes.data)
    i = sum(mjm.ntendon if w == "T" else w for _, _, w in spec.info)
    given = rng.uniform(-1, 1, (n, mjm.nu)).astype(np.float32)
    given[7, 0] = np.nan  # a world that steps: the lowest bad index is reported
    given[3, 0] = np.inf
    needs_reset = (rng.random(n) < 0.1).astype(np.uint8)
    needs_reset[3], needs_reset[7] = 1, 0  # world 3's bad action is not read: it is reset instead
    a.update(obs=np.zeros((n, o)), rewards=np.zeros(n), info=np.zeros((n, max(i, 1))), keep=np.zeros((n, KEEP)),
             actions=np.zeros((n, mjm.nu)), given=given, mask=np.zeros(n, np.uint8), rng=np.arange(n, dtype=np.uint64),
             needs_reset=needs_reset, resetting=np.zeros(n, np.uint8), terminated=np.zeros(n, np.uint8),
             unstable=np.zeros(n, np.uint8), out_terminated=np.zeros(n, np.uint8), out_truncated=np.zeros(n, np.uint8),
             out_was_reset=np.zeros(n, np.uint8), out_unstable=np.zeros(n, np.uint8),
             elapsed=rng.integers(0, 12, n).astype(np.int64), final_obs=np.zeros((n, o)),
             final_info=np.zeros((n, max(i, 1))), error=np.array([NO_ERROR], np.uint64))
    return a, model, (mjm, skip, o, i)


def job(pointers: dict, model_pointers: dict, sizes, n: int) -> ViewJob:
    """The job of one step over n worlds: SAME_STEP, a limit of 10 steps, float32 actions."""
    mjm, skip, o, i = sizes
    m = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                  model_pointers["body_mass"], model_pointers["body_names"])
    j = ViewJob(m=m, p=model_pointers["p"], init_qpos=model_pointers["init_qpos"],
                init_qvel=model_pointers["init_qvel"], dt=mjm.opt.timestep * skip, obs_size=o, info_size=i,
                action_f32=1, num_worlds=n, given_f32=1, same_step=1, max_episode_steps=10, **pointers)
    j.reset_now = pointers["mask"]
    return j


@pytest.mark.parametrize("n", [300])
def test_a_steps_kernels_on_the_gpu_write_what_the_host_build_writes(n):
    from fastvec.native.gpu import driver
    from fastvec.native.mujoco.warp_cuda import CudaKernels

    host, model, sizes = arrays("Hopper", n, seed=1)
    device = {name: values.copy() for name, values in host.items()}
    lib = view_library(task_file("Hopper"))
    host_job = job({name: v.ctypes.data for name, v in host.items()}, {k: v.ctypes.data for k, v in model.items()},
                   sizes, n)
    for name in SEQUENCE:
        getattr(lib, name)(host_job)

    drv = driver()
    kernels = CudaKernels(task_file("Hopper"), 0, ctypes.sizeof(ViewJob))
    on_gpu = {name: drv.to_device(values) for name, values in device.items()}
    model_gpu = {name: drv.to_device(values) for name, values in model.items()}
    gpu_job = job({name: int(ptr) for name, ptr in on_gpu.items()}, {k: int(v) for k, v in model_gpu.items()}, sizes,
                  n)
    for name in SEQUENCE:
        kernels.launch(name, gpu_job, n)
    kernels.synchronize()
    for name, values in device.items():
        drv.memcpy_dtoh(values, on_gpu[name])
    assert int(host["error"][0]) == 7 * host["actions"].shape[1]  # world 7's action, not world 3's (reset)
    assert host["out_was_reset"].any() and host["out_terminated"].any() and host["out_truncated"].any()
    for name in VIEW_FIELDS + ("obs", "rewards", "info", "keep", "actions", "final_obs", "final_info"):
        np.testing.assert_allclose(device[name], host[name], rtol=1e-12, atol=1e-12, err_msg=name)
    for name in ("error", "rng", "mask", "needs_reset", "resetting", "out_terminated", "out_truncated", "out_was_reset",
                 "out_unstable", "elapsed"):
        np.testing.assert_array_equal(device[name], host[name], err_msg=name)
