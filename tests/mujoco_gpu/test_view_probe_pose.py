"""mj_view.cu's probe of what a task reads after a reset (fv_mjv_reset_reads_forward) runs the task's hooks on a world
at the model's initial pose (init_qpos, every entry) with small velocities: a task file that reads a body position
only while the world is at that pose, built once by the host's compiler; no MuJoCo Warp needed."""

import ctypes
import subprocess

import numpy as np
import pytest

from fastvec.native.mujoco import HERE
from fastvec.native.mujoco.warp_batch import CXX_FLAGS, ViewModel, _Opt

SIZES = {"nq": 3, "nv": 2, "nu": 1, "nbody": 2, "ntendon": 0, "nsite": 0}


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """fv_mjv_reset_reads_forward of InvertedPendulum's file whose observe also writes xpos[0] into obs[0] while
    every qpos entry equals init_qpos's (as float) and every qvel entry is nonzero and below 1 in size, given
    init_qpos."""
    from fastvec.native.cpu import find_compiler

    folder = tmp_path_factory.mktemp("view_pose")
    source = (HERE / "inverted_pendulum.c").read_text()
    shipped = "FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); }"
    assert shipped in source
    observe = ("FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); int at = 1;"
               " for (int k = 0; k < c->m->nq; k++) at &= c->d->qpos[k] == (float)c->init_qpos[k];"
               " for (int k = 0; k < c->m->nv; k++) at &= c->d->qvel[k] != 0 && fabs(c->d->qvel[k]) < 1;"
               " if (at) c->obs[0] = c->d->xpos[0]; }")
    task = folder / "pose_task.c"
    task.write_text(source.replace(shipped, observe))
    proc = subprocess.run([*find_compiler(), *CXX_FLAGS, f'-DFV_MJ_TASK_FILE="{task}"', f"-I{HERE}",
                           str(HERE / "mj_view.cu"), "-o", str(folder / "view.so"), "-lm"], capture_output=True, check=False,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = ctypes.CDLL(str(folder / "view.so"))
    lib.fv_mjv_reset_reads_forward.argtypes = [ctypes.POINTER(ViewModel), *[ctypes.c_void_p] * 3, ctypes.c_int,
                                               ctypes.c_int]

    def reads(init_qpos) -> int:
        mass, names = np.ones(SIZES["nbody"]), np.zeros(SIZES["nbody"], np.uint8)
        model = ViewModel(SIZES["nq"], SIZES["nv"], SIZES["nu"], SIZES["nbody"], SIZES["ntendon"], SIZES["nsite"],
                          _Opt(0.02), mass.ctypes.data, names.ctypes.data)
        p = np.array([0.01])
        qpos0, qvel0 = np.asarray(init_qpos, np.float64), np.zeros(SIZES["nv"] + 1)
        return lib.fv_mjv_reset_reads_forward(ctypes.byref(model), p.ctypes.data, qpos0.ctypes.data,
                                              qvel0.ctypes.data, SIZES["nq"] + SIZES["nv"], 1)

    return reads


@pytest.mark.parametrize("init_qpos", [[0.0, 0.0, 0.0], [1.25, 0.0, 0.0], [0.0, -0.5, 0.0], [0.0, 0.0, 2.5],
                                       [0.7, -0.3, 1.9]], ids=["zeros", "first", "middle", "last", "every"])
def test_the_forward_probe_runs_the_task_at_the_models_initial_pose(probe, init_qpos):
    """The task reads the forward only at init_qpos with small nonzero velocities, so the probe sees the read
    whatever init_qpos is: each of its entries, the first and the last too, is the world's qpos."""
    assert probe(init_qpos) == 1
