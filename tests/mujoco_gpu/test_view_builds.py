"""Every task file builds over MuJoCo Warp's arrays (mj_view.cu with -DFV_MJ_VIEW): by the host's C++ compiler,
warnings as errors, and, where nvcc is installed, for the GPU (sm_90); no MuJoCo Warp needed. The host build's
kernels, over arrays filled from libmujoco's data of Gymnasium's states, observe and score each world as Gymnasium."""

import re
import shutil
import subprocess

import gymnasium as gym
import numpy as np
import pytest

from fastvec.native.mujoco import HERE, TASKS
from fastvec.native.mujoco.warp_batch import CXX_FLAGS, task_file


@pytest.mark.parametrize("task", list(TASKS))
def test_task_builds_over_warp_arrays_on_the_host(task, tmp_path):
    from fastvec.native.cpu import find_compiler

    cmd = [*find_compiler(), *CXX_FLAGS, "-Wall", "-Wextra", "-Werror", f'-DFV_MJ_TASK_FILE="{task_file(task)}"',
           f"-I{HERE}", str(HERE / "mj_view.cu"), "-o", str(tmp_path / "view.so")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed (the CUDA toolkit)")
@pytest.mark.parametrize("task", ["Hopper", "Humanoid", "Pusher"])
def test_task_builds_over_warp_arrays_with_nvcc(task, tmp_path):
    """The view kernels compile for sm_90, and every function is inlined into its kernel: a call left in a kernel
    (a recursive sum, say) makes its stack size unknown to nvcc, and the driver's default stack of 1 KB per thread
    then overflows under the tasks' local arrays (an illegal memory access on the GPU)."""
    from fastvec.native.gpu import NVCC_FLAGS

    cmd = ["nvcc", "-arch=sm_90", "-c", *NVCC_FLAGS, "-Xptxas", "-v", f'-DFV_MJ_TASK_FILE="{task_file(task)}"',
           f"-I{HERE}", str(HERE / "mj_view.cu"), "-o", str(tmp_path / "view.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    entries = set(re.findall(r"Compiling entry function '(\w+)'", proc.stderr))
    functions = set(re.findall(r"Function properties for (\w+)", proc.stderr))
    assert entries and functions == entries, f"not inlined into the kernels: {sorted(functions - entries)}"


# mj_view.cu's host build driven without MuJoCo Warp: its (nworld, ...) float32 arrays stacked from libmujoco's data
# of states Gymnasium's env stepped to, its job built as WarpBatch builds it (warp_batch.ViewJob).
class HostViews:
    """One task's view library over `n` worlds whose arrays hold float32 copies of Gymnasium's data."""

    def __init__(self, task: str, n: int):
        import ctypes

        mujoco = pytest.importorskip("mujoco")
        from fastvec.native.mujoco import batch_settings, task_spec
        from fastvec.native.mujoco.warp_batch import KEEP, VIEW_FIELDS, ViewJob, ViewModel, _Opt, view_library

        spec = task_spec(task)
        _, skip, xml_path, _, p = batch_settings(spec, n, None, None, {})
        self.mjm = mjm = mujoco.MjModel.from_xml_path(xml_path)
        self.lib, self.n, self.fields = view_library(task_file(task)), n, VIEW_FIELDS
        self.names = np.frombuffer(b"".join((mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, b) or "").encode() +
                                            b"\0" for b in range(mjm.nbody)), np.uint8)
        self.mass, self.p = np.ascontiguousarray(mjm.body_mass, np.float64), np.ascontiguousarray(p, np.float64)
        model = ViewModel(mjm.nq, mjm.nv, mjm.nu, mjm.nbody, mjm.ntendon, mjm.nsite, _Opt(mjm.opt.timestep),
                          self.mass.ctypes.data, self.names.ctypes.data)
        info = sum(mjm.ntendon if w == "T" else w for _, _, w in spec.info)
        self.obs_size = self.lib.fv_mjv_obs_size(ctypes.byref(model), self.p.ctypes.data)
        self.arrays = {}
        self.buf = {"obs": np.full((n, self.obs_size), np.nan), "info": np.full((n, max(info, 1)), -7.0),
                    "rewards": np.full(n, np.nan), "keep": np.zeros((n, KEEP)), "actions": np.zeros((n, mjm.nu)),
                    "mask": np.ones(n, np.uint8), "init_qpos": mjm.qpos0.copy(), "init_qvel": np.zeros(mjm.nv + 1),
                    **{k: np.zeros(n, np.uint8) for k in ("terminated", "unstable", "needs_reset", "resetting")},
                    "elapsed": np.zeros(n, np.int64), "rng": np.arange(n, dtype=np.uint64)}
        self.job = ViewJob(m=model, p=self.p.ctypes.data, dt=mjm.opt.timestep * skip, obs_size=self.obs_size,
                           info_size=info, action_f32=0, num_worlds=n,
                           **{k: self.buf[k].ctypes.data for k in ("obs", "info", "rewards", "keep", "actions", "mask",
                                                                   "init_qpos", "init_qvel", "terminated", "unstable",
                                                                   "needs_reset", "resetting", "elapsed", "rng")})

    def load(self, datas) -> None:
        """The worlds' arrays: row i from datas[i] (libmujoco's MjData), as MuJoCo Warp's float32."""
        for name in self.fields:
            self.arrays[name] = np.ascontiguousarray(np.stack([getattr(d, name).ravel() for d in datas]), np.float32)
            setattr(self.job, name, self.arrays[name].ctypes.data)

    def run(self, kernel: str) -> None:
        getattr(self.lib, kernel)(self.job)


def gymnasium_states(task: str, n: int, seed: int, warm: int = 0):
    """n states of Gymnasium's env after `warm` and more random steps (every third): each one's data before and
    after its step, the step's action, observation, reward and terminated."""
    import copy

    mujoco = pytest.importorskip("mujoco")
    env = gym.make(f"{task}-v5")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    out = []
    for k in range(warm + n * 3):
        before = copy.copy(env.unwrapped.data)
        action = env.action_space.sample()
        obs, reward, terminated, _, _ = env.step(action)
        if k >= warm and k % 3 == 2:
            out.append((before, copy.copy(env.unwrapped.data), action, obs, reward, terminated))
    assert isinstance(out[0][0], mujoco.MjData)
    return out


@pytest.mark.parametrize("task", ["Ant", "InvertedDoublePendulum"])
def test_the_views_observe_only_the_worlds_in_the_mask_each_from_its_own_rows(task):
    """fv_mjv_observe over worlds 0 and 2 of three writes each one's observation as Gymnasium's env observes that
    state (to float32's precision: MuJoCo Warp's arrays are float32) and its reset info, and leaves world 1's
    observation and info as they were: Ant's positions, velocities and contact forces of every body (landed), and
    InvertedDoublePendulum's cart constraint force (a different one written into each world's data)."""
    states = gymnasium_states(task, 3, seed=3, warm=60 if task == "Ant" else 0)
    if task == "InvertedDoublePendulum":
        env = gym.make(f"{task}-v5").unwrapped
        for k, (_, after, *rest) in enumerate(states):
            after.qfrc_constraint[0] = 2.5 * (k + 1)
            env.data = after
            states[k] = (_, after, rest[0], env._get_obs(), *rest[2:])
    views = HostViews(task, 3)
    views.load([after for _, after, *_ in states])
    views.buf["mask"][:] = [1, 0, 1]
    views.run("fv_mjv_observe")
    for i in (0, 2):
        np.testing.assert_allclose(views.buf["obs"][i], states[i][3], rtol=1e-5, atol=1e-5)
        assert np.isfinite(views.buf["info"][i]).all()
    assert np.isnan(views.buf["obs"][1]).all() and (views.buf["info"][1] == -7.0).all()
    if task == "Ant":
        assert np.abs(states[2][3][-78:]).max() > 0  # contact forces in the compared observations


@pytest.mark.parametrize("task", ["HalfCheetah", "Hopper", "Ant", "Reacher", "Pusher", "InvertedDoublePendulum",
                                  "Humanoid"])
def test_the_views_step_outputs_are_gymnasiums(task):
    """fv_mjv_keep on the states before a step, then fv_mjv_after on the states after it: each world's observation,
    reward and terminated flag are Gymnasium's for that step (to float32's precision), from its own rows of every
    array the task reads: positions and velocities; Ant's torso position and contact forces; Reacher's and Pusher's
    body positions; InvertedDoublePendulum's tip site and constraint forces; Humanoid's centre of mass, inertias,
    body velocities, actuator forces and controls (a task MuJoCo Warp cannot step, its view built all the same)."""
    states = gymnasium_states(task, 4, seed=5)
    views = HostViews(task, 4)
    views.load([before for before, *_ in states])
    views.run("fv_mjv_keep")
    views.load([after for _, after, *_ in states])
    views.buf["actions"][:] = [action for *_, action, _, _, _ in states]
    views.run("fv_mjv_after")
    np.testing.assert_allclose(views.buf["obs"], [s[3] for s in states], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(views.buf["rewards"], [s[4] for s in states], rtol=1e-4, atol=1e-4)
    assert views.buf["terminated"].tolist() == [int(s[5]) for s in states]
    assert not views.buf["unstable"].any()


@pytest.mark.parametrize("task,names", [("Pusher", ["tips_arm", "object", "goal"]), ("Reacher", ["fingertip", "target"])])
def test_the_views_model_check_refuses_a_model_missing_a_named_body(task, names):
    """The view library's check (mj_view.h's mj_name2id over the model's body names) refuses the task's model with
    any one of its named bodies renamed, as the CPU library does, and takes the model as it is."""
    import ctypes

    views = HostViews(task, 1)
    model = views.job.m
    assert views.lib.fv_mjv_check(ctypes.byref(model), views.p.ctypes.data) is None
    for name in names:
        text = views.names.tobytes().replace(name.encode() + b"\0", name.upper().encode() + b"\0")
        renamed = np.frombuffer(text, np.uint8).copy()
        model.body_names = renamed.ctypes.data
        reason = views.lib.fv_mjv_check(ctypes.byref(model), views.p.ctypes.data)
        assert reason is not None and b"named" in reason, name


@pytest.mark.parametrize("same_step", [1, 0])
def test_the_views_bookkeeping_ends_episodes_as_documented(same_step):
    """fv_mjv_book over four worlds (a step limit of 5): a terminated world and one at its fifth step end (terminated,
    truncated); under SAME_STEP their observation and info rows are kept as the final ones and they reset now, else
    they reset next step; a world reset instead of stepped neither terminates nor truncates, earns 0 and counts as
    reset; a running world keeps its reward and nothing else changes."""
    views = HostViews("Hopper", 4)
    n, o, i = 4, views.obs_size, views.job.info_size
    obs, info = np.arange(n * o, dtype=np.float64).reshape(n, o), np.arange(n * i, dtype=np.float64).reshape(n, i) + 0.5
    views.buf["obs"][:], views.buf["info"][:, :i] = obs, info
    views.buf["rewards"][:] = [1.0, 2.0, 3.0, 4.0]
    views.buf["terminated"][:] = [1, 0, 1, 0]
    views.buf["resetting"][:] = [0, 0, 1, 0]
    views.buf["elapsed"][:] = [0, 4, 7, 1]
    out = {k: np.full(n, 9, np.uint8) for k in ("out_terminated", "out_truncated", "out_was_reset", "out_unstable")}
    final_obs, final_info = np.full((n, o), -1.0), np.full((n, i), -1.0)
    for k, v in out.items():
        setattr(views.job, k, v.ctypes.data)
    views.job.reset_now, views.job.final_obs, views.job.final_info = (views.buf["mask"].ctypes.data,
                                                                      final_obs.ctypes.data, final_info.ctypes.data)
    views.job.same_step, views.job.max_episode_steps = same_step, 5
    views.run("fv_mjv_book")
    assert out["out_terminated"].tolist() == [1, 0, 0, 0] and out["out_truncated"].tolist() == [0, 1, 0, 0]
    assert out["out_unstable"].tolist() == [0] * 4 and views.buf["elapsed"].tolist() == [1, 5, 8, 2]
    assert views.buf["rewards"].tolist() == [1.0, 2.0, 0.0, 4.0]
    now = [1, 1, 1, 0] if same_step else [0, 0, 1, 0]
    assert views.buf["mask"].tolist() == now and out["out_was_reset"].tolist() == now
    assert views.buf["needs_reset"].tolist() == ([0, 0, 0, 0] if same_step else [1, 1, 0, 0])
    kept = [0, 1] if same_step else []
    np.testing.assert_array_equal(final_obs[kept], obs[kept])
    np.testing.assert_array_equal(final_info[kept], info[kept])
    assert (final_obs[[w for w in range(n) if w not in kept]] == -1.0).all()
    assert (final_info[[w for w in range(n) if w not in kept]] == -1.0).all()


def test_the_views_put_each_worlds_action_into_its_own_controls():
    """fv_mjv_act over three worlds of Reacher (two actuators): world i's controls are its own action row, as
    float32 (MuJoCo Warp's ctrl), and no world's controls are another's."""
    states = gymnasium_states("Reacher", 3, seed=2)
    views = HostViews("Reacher", 3)
    views.load([after for _, after, *_ in states])
    actions = np.array([[0.25, -0.5], [0.75, -1.0], [-0.125, 0.375]])
    views.buf["actions"][:] = actions
    views.run("fv_mjv_act")
    np.testing.assert_array_equal(views.arrays["ctrl"], actions.astype(np.float32))


def test_the_views_reset_info_reads_each_worlds_own_tendons():
    """fv_mjv_observe over three worlds of HumanoidStandup (a model with tendons): each world's reset info is what
    Gymnasium's env reports for its state, its tendon lengths and velocities included (to float32's precision)."""
    states = gymnasium_states("HumanoidStandup", 3, seed=4)
    env = gym.make("HumanoidStandup-v5").unwrapped
    views = HostViews("HumanoidStandup", 3)
    views.load([after for _, after, *_ in states])
    views.run("fv_mjv_observe")
    t = views.mjm.ntendon
    assert t > 0
    for i, (_, after, *_) in enumerate(states):
        env.data = after
        want = env._get_reset_info()
        got = views.buf["info"][i]
        np.testing.assert_allclose(got[3:3 + t], want["tendon_length"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[3 + t:3 + 2 * t], want["tendon_velocity"], rtol=1e-5, atol=1e-5)
    assert not np.allclose(views.buf["info"][0, 3 + t:3 + 2 * t], views.buf["info"][1, 3 + t:3 + 2 * t])


FORWARD_FIELDS = ("xpos", "xipos", "site_xpos", "cinert", "cvel", "cfrc_ext", "qfrc_actuator", "qfrc_constraint",
                  "ten_length", "ten_velocity")


@pytest.mark.parametrize("task", list(TASKS))
def test_a_reset_runs_the_forward_exactly_for_the_tasks_whose_observation_reads_its_results(task):
    """fv_mjv_reset_reads_forward (whether a reset world needs MuJoCo's forward before it is observed) says yes
    exactly when Gymnasium's observation of a reset state changes with the fields the forward computes (body and
    site positions, inertias, velocities, forces, tendons): InvertedDoublePendulum's cart constraint force (the
    first entry of its field) and Reacher's body positions do, InvertedPendulum and Hopper read qpos and qvel only.
    Every task: the locomotion tasks' reset infos (an x position) sit beside their observations and must not be
    taken for a read."""
    pytest.importorskip("mujoco", reason="Gymnasium's MuJoCo tasks need the mujoco package: pip install "
                                         "'fastvec[mujoco]'")
    import ctypes

    env = gym.make(f"{task}-v5").unwrapped
    env.reset(seed=0)
    obs = env._get_obs().copy()
    for name in FORWARD_FIELDS:
        getattr(env.data, name)[...] = 7.25
    reads = not np.array_equal(env._get_obs(), obs)
    views = HostViews(task, 1)
    qvel0 = np.zeros(views.mjm.nv + 1)
    got = views.lib.fv_mjv_reset_reads_forward(ctypes.byref(views.job.m), views.p.ctypes.data,
                                               views.buf["init_qpos"].ctypes.data, qvel0.ctypes.data,
                                               views.obs_size, views.job.info_size)
    assert bool(got) == reads


@pytest.mark.parametrize("f32", [0, 1])
def test_the_views_take_each_worlds_own_action_row_and_report_the_lowest_bad_index(f32):
    """fv_mjv_take over three worlds of Reacher (two actuators): world i's actions are row i of the caller's (float64,
    or float32 kept as its value), a world to be reset this step takes zeros and is marked resetting, and a
    non-finite action of a stepped world is taken as 0 with its flat index (row * nu + column), the lowest, kept in
    the error word; a bad action of the world being reset is not reported."""
    views = HostViews("Reacher", 3)
    given = np.array([[0.25, -0.5], [np.nan, 0.75], [-0.125, np.inf]], np.float32 if f32 else np.float64)
    error = np.array([np.iinfo(np.uint64).max], np.uint64)
    views.buf["needs_reset"][:] = [0, 1, 0]
    views.buf["actions"][:] = 9.0
    views.job.given, views.job.given_f32, views.job.error = given.ctypes.data, f32, error.ctypes.data
    views.run("fv_mjv_take")
    np.testing.assert_array_equal(views.buf["actions"], [[0.25, -0.5], [0.0, 0.0], [-0.125, 0.0]])
    assert views.buf["resetting"].tolist() == [0, 1, 0]
    assert int(error[0]) == 2 * 2 + 1


@pytest.mark.parametrize("flag", ["c->d->xpos[3] > 0.0", "c->d->qvel[0] * c->d->xpos[3] > 0.0"])
def test_a_reset_runs_the_forward_for_a_task_that_reads_a_body_position_only_through_a_comparison(flag, tmp_path):
    """A user's task whose observation holds a flag of a body position (InvertedPendulum's file, its first entry
    replaced by whether the cart body's x is right of 0, or whether the cart moves away from 0): a NaN compares false,
    so only the two numbers the probe fills the fields with, one on each side of 0, with velocities that are not 0,
    show the read; fv_mjv_reset_reads_forward says yes, and
    says no for the task as shipped (qpos and qvel only)."""
    import ctypes

    from fastvec.native.cpu import find_compiler
    from fastvec.native.mujoco.warp_batch import ViewModel

    source = (HERE / "inverted_pendulum.c").read_text()
    shipped = "FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); }"
    assert shipped in source
    task = tmp_path / "flag_task.c"
    task.write_text(source.replace(shipped, "FV_MJ_FN void observe(fv_mj_ctx* c) { fv_mj_obs_qpos_qvel(c, 0, 0.0); "
                                            f"c->obs[0] = {flag} ? 1.0 : 0.0; }}"))
    proc = subprocess.run([*find_compiler(), *CXX_FLAGS, f'-DFV_MJ_TASK_FILE="{task}"', f"-I{HERE}",
                           str(HERE / "mj_view.cu"), "-o", str(tmp_path / "view.so"), "-lm"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    views = HostViews("InvertedPendulum", 1)
    qvel0 = np.zeros(views.mjm.nv + 1)
    for lib, reads in ((ctypes.CDLL(str(tmp_path / "view.so")), 1), (views.lib, 0)):
        lib.fv_mjv_reset_reads_forward.argtypes = [ctypes.POINTER(ViewModel), *[ctypes.c_void_p] * 3, ctypes.c_int,
                                                   ctypes.c_int]
        got = lib.fv_mjv_reset_reads_forward(ctypes.byref(views.job.m), views.p.ctypes.data,
                                             views.buf["init_qpos"].ctypes.data, qvel0.ctypes.data, views.obs_size,
                                             views.job.info_size)
        assert got == reads


def test_the_view_jobs_struct_of_ctypes_is_the_c_one():
    """warp_batch.ViewJob (the Python mirror the kernels are called with) has the C struct's size and the offsets of
    its first, middle and last bookkeeping fields, as the host build of mj_view.cu reports them."""
    import ctypes

    from fastvec.native.mujoco.warp_batch import ViewJob, view_library

    layout = np.full(4, -1, np.int64)
    view_library("hopper.c").fv_mjv_job_layout(layout.ctypes.data)
    assert layout.tolist() == [ctypes.sizeof(ViewJob), ViewJob.given.offset, ViewJob.error.offset,
                               ViewJob.max_episode_steps.offset]
