"""mj_view.cu's probe of what a task reads after a reset (fv_mjv_reset_reads_forward), field by field: a task file
whose observation reads one entry of one field, the field and entry chosen at run time, built once by the host's
compiler; no MuJoCo Warp needed."""

import ctypes
import subprocess

import numpy as np
import pytest

from fastvec.native.mujoco import HERE
from fastvec.native.mujoco.warp_batch import CXX_FLAGS, ViewModel, _Opt

# mjData's fields after qpos and qvel, in mj_view.h's order, with their sizes; all but ctrl are what MuJoCo's
# forward computes from qpos and qvel (ctrl is state: MuJoCo Warp's reset zeroes it, forward leaves it).
FIELDS = {"ctrl": lambda m: m["nu"], "xpos": lambda m: 3 * m["nbody"], "xipos": lambda m: 3 * m["nbody"],
          "site_xpos": lambda m: 3 * m["nsite"], "cinert": lambda m: 10 * m["nbody"],
          "cvel": lambda m: 6 * m["nbody"], "cfrc_ext": lambda m: 6 * m["nbody"],
          "qfrc_actuator": lambda m: m["nv"], "qfrc_constraint": lambda m: m["nv"],
          "ten_length": lambda m: m["ntendon"], "ten_velocity": lambda m: m["ntendon"]}


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """fv_mjv_reset_reads_forward of InvertedPendulum's file whose hooks also write field p[0] (1-based in
    FIELDS' order; 0: none) at entry p[1] into the output p[2] names."""
    from fastvec.native.cpu import find_compiler

    folder = tmp_path_factory.mktemp("view_reader")
    source = (HERE / "inverted_pendulum.c").read_text()
    shipped = "FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); }"
    assert shipped in source
    fields = ", ".join(f"c->d->{name}" for name in FIELDS)
    # p[2], where the value read goes: 0 obs[0] (observe), 1 info[0] (reset_values), 2 keep[0], 3 the last keep
    # slot (before); p[3] != 0: the value read is taken as a flag, value < 0
    read = (f"static double read_field(fv_mj_ctx* c) {{ const float* fields[] = {{NULL, {fields}}};"
            " int f = (int)c->p[0]; double v = f ? fields[f][(int)c->p[1]] : 0.0;"
            " return c->p[3] != 0 ? (v < 0 ? 1.0 : 0.0) : v; }\n")
    observe = ("FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0);"
               " if (c->p[2] == 0) c->obs[0] = read_field(c); }")
    task = folder / "reader_task.c"
    hooks = {"FV_MJ_FN void before(fv_mj_ctx* c) { (void)c; }":
             "FV_MJ_FN void before(fv_mj_ctx* c) { if (c->p[2] == 2) c->keep[0] = read_field(c);"
             " if (c->p[2] == 3) c->keep[FV_MJ_KEEP - 1] = read_field(c); }",
             "FV_MJ_FN void reset_values(fv_mj_ctx* c) { (void)c; }":
             "FV_MJ_FN void reset_values(fv_mj_ctx* c) { if (c->p[2] == 1) c->info[0] = read_field(c); }"}
    source = source.replace(shipped, observe).replace("enum { RESET_NOISE_SCALE };",
                                                      "enum { RESET_NOISE_SCALE };\n" + read)
    for shipped_hook, hook in hooks.items():
        assert shipped_hook in source
        source = source.replace(shipped_hook, hook)
    task.write_text(source)
    proc = subprocess.run([*find_compiler(), *CXX_FLAGS, f'-DFV_MJ_TASK_FILE="{task}"', f"-I{HERE}",
                           str(HERE / "mj_view.cu"), "-o", str(folder / "view.so"), "-lm"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = ctypes.CDLL(str(folder / "view.so"))
    lib.fv_mjv_reset_reads_forward.argtypes = [ctypes.POINTER(ViewModel), *[ctypes.c_void_p] * 3, ctypes.c_int,
                                               ctypes.c_int]
    keep = []

    def reads(sizes: dict, field: str | None, entry: int, where: int = 0, negative_flag: bool = False) -> int:
        mass = np.ones(sizes["nbody"])
        names = np.zeros(sizes["nbody"], np.uint8)  # every body's name empty
        model = ViewModel(sizes["nq"], sizes["nv"], sizes["nu"], sizes["nbody"], sizes["ntendon"], sizes["nsite"],
                          _Opt(0.02), mass.ctypes.data, names.ctypes.data)
        p = np.array([0.0 if field is None else 1 + list(FIELDS).index(field), entry, where, negative_flag], np.float64)
        qpos0, qvel0 = np.zeros(sizes["nq"]), np.zeros(sizes["nv"] + 1)
        keep.append((mass, names, p, qpos0, qvel0))
        return lib.fv_mjv_reset_reads_forward(ctypes.byref(model), p.ctypes.data, qpos0.ctypes.data,
                                              qvel0.ctypes.data, sizes["nq"] + sizes["nv"], 1)

    return reads


# A model with every field, and models with no sites and tendons, no velocities, no bodies: a field read through
# the scratch of a field of size 0 reads an entry the probe never fills, which tells the read apart.
MODELS = [dict(nq=2, nv=2, nu=1, nbody=3, nsite=2, ntendon=2), dict(nq=2, nv=2, nu=1, nbody=3, nsite=0, ntendon=0),
          dict(nq=2, nv=0, nu=1, nbody=3, nsite=2, ntendon=2), dict(nq=2, nv=2, nu=1, nbody=0, nsite=2, ntendon=2)]
IDS = ["every_field", "no_sites_or_tendons", "no_velocities", "no_bodies"]


@pytest.mark.parametrize("sizes", MODELS, ids=IDS)
def test_the_forward_probe_sees_a_read_of_each_forward_field_at_its_first_and_last_entry(reader, sizes):
    """Each field MuJoCo's forward computes, read at its first and at its last entry, makes the probe say the
    task reads the forward; qpos and qvel alone do not."""
    assert reader(sizes, None, 0) == 0
    for name, size in FIELDS.items():
        n = size(sizes)
        if name == "ctrl" or n == 0:
            continue
        for entry in (0, n - 1):
            assert reader(sizes, name, entry) == 1, (name, entry)


@pytest.mark.parametrize("sizes", MODELS, ids=IDS)
def test_the_forward_probe_takes_a_read_of_the_controls_for_no_read_of_the_forward(reader, sizes):
    """ctrl is state the forward does not compute (MuJoCo Warp's reset leaves it 0): a task whose observation reads
    it needs no forward after a reset."""
    assert reader(sizes, "ctrl", 0) == 0
    assert reader(sizes, "ctrl", sizes["nu"] - 1) == 0


@pytest.mark.parametrize("limit, truncated", [(1, [1, 1, 1]), (2, [0, 0, 1]), (0, [0, 0, 0]), (-1, [0, 0, 0])])
def test_the_views_bookkeeping_truncates_at_a_step_limit_of_one_and_never_without_one(limit, truncated):
    """fv_mjv_book (next-step autoreset) over three running worlds at their first, first and seventh step: a step
    limit of 1 truncates every one, a limit of 2 only the world past it, and a limit of 0 or below (none) no world,
    however long its episode."""
    from test_view_builds import HostViews

    views = HostViews("Hopper", 3)
    views.buf["terminated"][:] = 0
    views.buf["resetting"][:] = 0
    views.buf["elapsed"][:] = [0, 0, 6]
    out = {k: np.full(3, 9, np.uint8) for k in ("out_terminated", "out_truncated", "out_was_reset", "out_unstable")}
    for k, v in out.items():
        setattr(views.job, k, v.ctypes.data)
    views.job.reset_now = views.buf["mask"].ctypes.data
    views.job.same_step, views.job.max_episode_steps = 0, limit
    views.run("fv_mjv_book")
    assert out["out_truncated"].tolist() == truncated and out["out_terminated"].tolist() == [0, 0, 0]
    assert views.buf["needs_reset"].tolist() == truncated and views.buf["elapsed"].tolist() == [1, 1, 7]


@pytest.mark.parametrize("where", [0, 1, 2, 3], ids=["observation", "reset_info", "first_keep", "last_keep"])
def test_the_forward_probe_sees_a_read_in_each_of_the_observation_the_reset_info_and_the_kept_values(reader, where):
    """A forward field read by observe into the observation, by reset_values into the reset info, or by before into
    the first or the last of its kept values: the probe compares every one of them and says the task reads the
    forward."""
    sizes = MODELS[0]
    assert reader(sizes, "xpos", 0, where) == 1
    assert reader(sizes, None, 0, where) == 0


def test_the_forward_probe_sees_a_read_whose_flag_changes_only_between_its_two_numbers(reader):
    """A task whose observation holds whether a body position is below 0: NaN and the probe's positive number both
    give 0, its negative number 1, so only the probe's two numbers, compared with each other, show the read."""
    assert reader(MODELS[0], "xpos", 0, negative_flag=True) == 1


def test_the_views_observe_starts_the_episodes_of_the_worlds_in_the_mask_only():
    """fv_mjv_observe (after a reset or set_state) over worlds 0 and 2 of three that had run 5 steps and ended: their
    episodes start again (no steps taken, nothing left to reset, every info value written), so a step limit of 2
    truncates neither at its next step; world 1 keeps its count, its pending reset and its info: a limit of 2
    truncates it at its next step, a limit of 7 does not."""
    mujoco = pytest.importorskip("mujoco", reason="Gymnasium's MuJoCo tasks need the mujoco package: "
                                                  "pip install 'fastvec[mujoco]'")
    from test_view_builds import HostViews

    views = HostViews("Hopper", 3)
    data = mujoco.MjData(views.mjm)
    mujoco.mj_forward(views.mjm, data)
    views.load([data] * 3)
    views.buf["elapsed"][:] = 5
    views.buf["needs_reset"][:] = 1
    views.buf["mask"][:] = [1, 0, 1]
    views.run("fv_mjv_observe")
    assert views.buf["elapsed"].tolist() == [0, 5, 0] and views.buf["needs_reset"].tolist() == [0, 1, 0]
    assert (views.buf["info"][1] == -7.0).all() and not (views.buf["info"][[0, 2]] == -7.0).any()
    views.buf["terminated"][:] = 0
    views.buf["resetting"][:] = 0
    out = {k: np.full(3, 9, np.uint8) for k in ("out_terminated", "out_truncated", "out_was_reset", "out_unstable")}
    for k, v in out.items():
        setattr(views.job, k, v.ctypes.data)
    views.job.reset_now = views.buf["mask"].ctypes.data
    for limit, truncated in ((2, [0, 1, 0]), (7, [0, 0, 0])):
        views.buf["elapsed"][:] = [0, 5, 0]
        views.job.same_step, views.job.max_episode_steps = 0, limit
        views.run("fv_mjv_book")
        assert out["out_truncated"].tolist() == truncated, limit
