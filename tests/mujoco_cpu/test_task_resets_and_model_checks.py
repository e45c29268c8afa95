"""The MuJoCo tasks' resets and model checks against Gymnasium's v5 envs: the infos a reset returns are
what Gymnasium's env reports for the same state (its _get_reset_info), and each task's check of a user's
model refuses exactly what its message says it needs (joints, velocities, a site, an actuator)."""

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

import gymnasium as gym  # noqa: E402

import fastvec  # noqa: E402,F401  (registers fastvec/<Task>-v5)
from fastvec.native.mujoco import TASKS  # noqa: E402


@pytest.mark.parametrize("task", list(TASKS))
def test_reset_infos_are_gymnasiums_for_the_reset_state(task):
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=3)
    _, info = ours.reset(seed=3)
    states = ours.get_state()
    ref = gym.make(f"{task}-v5").unwrapped
    ref.reset(seed=0)
    nq = ref.model.nq
    for i, state in enumerate(states):
        ref.set_state(state[:nq], state[nq:])
        want = ref._get_reset_info()
        assert sorted(k for k in info if not k.startswith("_")) == sorted(want), task
        for key, value in want.items():
            assert info["_" + key][i], (task, key)
            np.testing.assert_array_equal(np.asarray(info[key][i]), np.asarray(value), err_msg=f"{task} {key} env {i}")
    ours.close()


def chain_model(path, hinges, actuators=1, sites=0):
    """A model of `hinges` hinge joints in a chain (nq = nv = hinges), `actuators` motors (none without a joint
    to drive) and `sites` sites."""
    body = ""
    for k in reversed(range(hinges)):
        body = (f'<body name="b{k}" pos="0 0 0.1"><joint name="j{k}" type="hinge" axis="0 1 0"/>'
                f'<geom type="capsule" size="0.02" fromto="0 0 0 0 0 0.1"/>{body}</body>')
    site = "".join(f'<site name="s{k}" pos="0 0 {k}"/>' for k in range(sites))
    motors = "".join(f'<motor joint="j{k % hinges}"/>' for k in range(actuators if hinges else 0))
    path.write_text(f'<mujoco><worldbody>{site}{body}</worldbody><actuator>{motors}</actuator></mujoco>')
    return str(path)


# task: (the hinge count below which its check refuses, sites it needs, the message's start)
NEEDS = {"HalfCheetah": (1, 0, "it needs nq >= 1"), "Hopper": (3, 0, "it needs nq >= 3"),
         "Walker2d": (3, 0, "it needs nq >= 3"), "Ant": (3, 0, "it needs nq >= 3"),
         "Swimmer": (2, 0, "it needs nq >= 2"), "Humanoid": (6, 0, "it needs a free joint first"),
         "HumanoidStandup": (6, 0, "it needs a free joint first"), "Reacher": (4, 0, "it needs nq >= 4"),
         "Pusher": (7, 0, "it needs nq >= 7"), "InvertedDoublePendulum": (3, 1, "it needs nq >= 1, nv >= 3")}


def refusal(task, path) -> str:
    try:
        gym.make_vec(f"fastvec/{task}-v5", num_envs=1, xml_file=path).close()
    except (ValueError, RuntimeError) as err:
        return str(err)
    return ""


@pytest.mark.parametrize("task", list(NEEDS))
def test_a_model_check_refuses_exactly_what_its_message_says(task, tmp_path):
    hinges, sites, message = NEEDS[task]
    assert message in refusal(task, chain_model(tmp_path / "few.xml", hinges - 1, sites=sites))
    assert message in refusal(task, chain_model(tmp_path / "idle.xml", hinges, actuators=0, sites=sites))
    assert message not in refusal(task, chain_model(tmp_path / "enough.xml", hinges, sites=sites))
    if sites:
        assert message in refusal(task, chain_model(tmp_path / "no_site.xml", hinges, sites=0))


# Every task's keywords away from their defaults (health ranges tight enough to end episodes often), against
# Gymnasium's env given the same keywords.
KEYWORDS = {
    "Ant": {"forward_reward_weight": 2.0, "contact_cost_weight": 1e-3, "healthy_reward": 0.5,
            "healthy_z_range": (0.45, 0.8), "contact_force_range": (-0.5, 0.5)},
    "HalfCheetah": {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.3,
                    "exclude_current_positions_from_observation": False},
    "Hopper": {"healthy_state_range": (-0.5, 0.5), "healthy_z_range": (1.1, 3.0), "healthy_reward": 2.0,
               "ctrl_cost_weight": 0.01, "exclude_current_positions_from_observation": False},
    "Humanoid": {"forward_reward_weight": 2.0, "contact_cost_weight": 1e-6, "healthy_reward": 2.0,
                 "healthy_z_range": (1.2, 2.0), "include_cvel_in_observation": False,
                 "include_qfrc_actuator_in_observation": False, "exclude_current_positions_from_observation": False},
    "HumanoidStandup": {"uph_cost_weight": 2.0, "ctrl_cost_weight": 0.2, "impact_cost_weight": 1e-6,
                        "impact_cost_range": (-1.0, 1.0), "include_cfrc_ext_in_observation": False,
                        "exclude_current_positions_from_observation": False},
    "InvertedDoublePendulum": {"healthy_reward": 3.0},
    "Pusher": {"reward_near_weight": 1.0, "reward_dist_weight": 2.0, "reward_control_weight": 0.3},
    "Swimmer": {"forward_reward_weight": 2.0, "ctrl_cost_weight": 0.1, "exclude_current_positions_from_observation": False},
    "Walker2d": {"healthy_z_range": (1.1, 2.0), "healthy_angle_range": (-0.3, 0.3), "healthy_reward": 2.0,
                 "forward_reward_weight": 0.5, "exclude_current_positions_from_observation": False},
}


@pytest.mark.parametrize("task", list(KEYWORDS))
def test_every_tasks_keywords_step_as_gymnasiums(task):
    from test_exactness import compare_steps

    compare_steps(task, kwargs=KEYWORDS[task], steps=120)


def test_the_trainers_batch_without_frames_closes_and_says_why_it_cannot_draw():
    from fastvec.native.mujoco.host_batch import MujocoHostBatch

    batch = MujocoHostBatch("Hopper", 2, max_episode_steps=10)
    batch.reset(np.array([1, 2], np.uint64), None)
    with pytest.raises(ValueError, match="made without frames to draw with"):
        batch.render(0)
    batch.close()
    batch.close()


def named_bodies_model(path, hinges, names):
    """chain_model's joints, its first bodies named `names` (the rest b<k>), one motor."""
    body = ""
    for k in reversed(range(hinges)):
        name = names[k] if k < len(names) else f"b{k}"
        body = (f'<body name="{name}" pos="0 0 0.1"><joint name="j{k}" type="hinge" axis="0 1 0"/>'
                f'<geom type="capsule" size="0.02" fromto="0 0 0 0 0 0.1"/>{body}</body>')
    path.write_text(f'<mujoco><worldbody>{body}</worldbody><actuator><motor joint="j0"/></actuator></mujoco>')
    return str(path)


@pytest.mark.parametrize("task,names", [("Pusher", ["tips_arm", "object", "goal"]), ("Reacher", ["fingertip", "target"])])
def test_a_model_missing_any_one_named_body_is_refused(task, names, tmp_path):
    hinges = NEEDS[task][0]
    message = f"it needs bodies named {', '.join(names[:-1])} and {names[-1]}"
    for missing in names:
        kept = [n if n != missing else "other" for n in names]
        assert message in refusal(task, named_bodies_model(tmp_path / f"no_{missing}.xml", hinges, kept))
    assert message not in refusal(task, named_bodies_model(tmp_path / "all.xml", hinges, names))


@pytest.mark.parametrize("task", list(TASKS))
def test_reset_noise_has_gymnasiums_spread_and_each_env_its_own(task):
    """Every coordinate of fastvec's reset states has the spread of Gymnasium's resets (their 5% and 95%
    quantiles over 400 resets agree), and envs seeded seed + i draw unrelated noise."""
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=400)
    ours.reset(seed=1)
    mine = ours.get_state()
    ref = gym.make(f"{task}-v5").unwrapped
    theirs = []
    for seed in range(400):
        ref.reset(seed=seed)
        theirs.append(np.concatenate([ref.data.qpos, ref.data.qvel]))
    theirs = np.array(theirs)
    q_mine, q_theirs = np.quantile(mine, [0.05, 0.95], axis=0), np.quantile(theirs, [0.05, 0.95], axis=0)
    width = np.maximum(q_theirs[1] - q_theirs[0], 1e-12)
    assert (np.abs(q_mine - q_theirs) <= 0.15 * width).all(), task
    noisy = q_theirs[1] > q_theirs[0]
    pairs = zip(mine[:-1, noisy], mine[1:, noisy])
    assert not any(np.isin(b, a).any() for a, b in pairs), task  # envs seed + i draw unrelated noise
    ours.close()


def test_the_trainers_batch_declares_gymnasiums_state_size_and_the_vector_env_one_env_by_default():
    from fastvec.native.mujoco.host_batch import MujocoHostBatch
    from fastvec.wrappers.mujoco import MujocoVectorEnv

    batch = MujocoHostBatch("Hopper", 1, max_episode_steps=10)
    model = gym.make("Hopper-v5").unwrapped.model
    assert batch.env.spaces.state_size == model.nq + model.nv
    batch.close()
    envs = MujocoVectorEnv("Hopper")
    assert envs.num_envs == 1
    first, _ = envs.reset()
    again, _ = MujocoVectorEnv("Hopper").reset()
    assert not np.array_equal(first, again)  # unseeded: fresh entropy each time
    envs.close()


@pytest.mark.parametrize("task", list(TASKS))
def test_each_task_file_compiles_without_warnings(task, tmp_path):
    """Every task file compiles as the task library does (its C flags, -O2) without a warning under -Wall: no scratch
    array written or read past its end, no value used uninitialised."""
    import subprocess

    from fastvec.native.cpu import find_compiler
    from fastvec.native.mujoco import C_FLAGS, HERE, libmujoco
    from fastvec.native.mujoco.warp_batch import task_file

    flags = [f for f in C_FLAGS if f != "-shared"]
    cmd = [*find_compiler(), *flags, "-Wall", f"-I{libmujoco().parent / 'include'}", f"-I{HERE}", "-c",
           str(HERE / task_file(task)), "-o", str(tmp_path / "task.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr[-3000:]


PAIRWISE_SHIM = r"""
#define FV_MJ_INLINE static inline
%s
double sum64(const double* a, long n) { return fv_np_pairwise(a, n); }
float sum32(const float* a, long n) { return fv_np_pairwise_f(a, n); }
"""


def test_the_tasks_sums_are_numpys_pairwise_sums_bit_for_bit_at_every_length(c_shim):
    """mj_task.h's fv_np_pairwise (cut from its source) sums float64 and float32 arrays of every length from 0 to
    1100 (blocks of 128 and the halves above them) as np.sum does, bit for bit, so a task's reward terms over a
    large model round as Gymnasium's."""
    import ctypes

    from fastvec.native.mujoco import HERE

    text = (HERE / "mj_task.h").read_text()
    start, end = text.index("#define FV_NP_PAIRWISE"), text.index("#undef FV_NP_PAIRWISE")
    lib = c_shim(PAIRWISE_SHIM % text[start:end])
    lib.sum64.restype, lib.sum32.restype = ctypes.c_double, ctypes.c_float
    rng = np.random.default_rng(9)
    values = rng.standard_normal(1100) * 10.0 ** rng.integers(-3, 4, 1100)
    for dtype, fn in ((np.float64, lib.sum64), (np.float32, lib.sum32)):
        a = values.astype(dtype)
        for n in range(1101):
            got = dtype(fn(ctypes.c_void_p(a.ctypes.data), ctypes.c_long(n)))
            assert got.tobytes() == (dtype(0) + np.sum(a[:n])).tobytes(), (dtype, n)


def test_pusher_resets_its_goal_to_the_origin_whatever_the_models_reference_positions(tmp_path):
    """Pusher's reset puts the goal's two slide joints at 0, as Gymnasium's does, also in a user's model whose goal
    joints start elsewhere (a reference position): ours and Gymnasium's goal coordinates are 0, the cylinder's not."""
    import os

    source = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "pusher_v5.xml")
    text = open(source).read()
    for joint in ("goal_slidey", "goal_slidex"):
        assert text.count(f'name="{joint}"') == 1
        text = text.replace(f'name="{joint}"', f'name="{joint}" ref="0.2"')
    path = tmp_path / "pusher_goal_ref.xml"
    path.write_text(text)
    ours = gym.make_vec("fastvec/Pusher-v5", num_envs=3, xml_file=str(path))
    ours.reset(seed=5)
    ref = gym.make("Pusher-v5", xml_file=str(path)).unwrapped
    ref.reset(seed=5)
    nq = ref.model.nq
    assert ref.model.qpos0[-2:].tolist() == [0.2, 0.2]
    assert (ours.get_state()[:, nq - 2:nq] == 0).all() and (ref.data.qpos[-2:] == 0).all()
    assert (ours.get_state()[:, nq - 4:nq - 2] != 0).all()
    ours.close()


def site_motor_model(path, hinges):
    """chain_model's `hinges` joints (none at all for 0) and one motor that drives a site on a body instead of a
    joint: nu = 1 whatever nq is, so a check's joint count is tested on its own."""
    body = ""
    for k in reversed(range(max(hinges, 1))):
        joint = f'<joint name="j{k}" type="hinge" axis="0 1 0"/>' if k < hinges else ""
        body = (f'<body name="b{k}" pos="0 0 0.1">{joint}<site name="s{k}"/>'
                f'<geom type="capsule" size="0.02" fromto="0 0 0 0 0 0.1"/>{body}</body>')
    path.write_text(f'<mujoco><worldbody>{body}</worldbody>'
                    f'<actuator><motor site="s0" gear="1 0 0 0 0 0"/></actuator></mujoco>')
    return str(path)


@pytest.mark.parametrize("task", [t for t in NEEDS if NEEDS[t][1] == 0])
def test_a_model_with_an_actuator_but_one_joint_too_few_is_refused(task, tmp_path):
    """The joint count alone refuses: a site-driven motor keeps nu = 1 while nq is one short of the task's need
    (HalfCheetah's: no joint at all)."""
    import mujoco

    hinges, _, message = NEEDS[task]
    path = site_motor_model(tmp_path / "short.xml", hinges - 1)
    model = mujoco.MjModel.from_xml_path(path)
    assert (model.nq, model.nu) == (hinges - 1, 1)
    assert message in refusal(task, path)


@pytest.mark.parametrize("task,main_body", [("Ant", 2), ("Ant", "aux_3"), ("Ant", "torso")])
def test_ants_main_body_by_index_or_name_steps_as_gymnasiums(task, main_body):
    """Ant's forward reward and velocities follow the main_body keyword's body (a leg here, by index or by name),
    as Gymnasium's Ant-v5 does."""
    from test_exactness import compare_steps

    compare_steps(task, kwargs={"main_body": main_body, "healthy_z_range": (0.3, 0.9)}, steps=40)


@pytest.mark.parametrize("task", ["Ant"])
def test_ants_main_body_must_be_one_of_the_models_bodies(task):
    nbody = gym.make("Ant-v5").unwrapped.model.nbody
    gym.make_vec(f"fastvec/{task}-v5", num_envs=1, main_body=nbody - 1).close()
    for bad in (nbody, -1):
        with pytest.raises((ValueError, RuntimeError), match="main_body is not one of its bodies"):
            gym.make_vec(f"fastvec/{task}-v5", num_envs=1, main_body=bad)
    with pytest.raises(ValueError, match="main_body 'no_such_body' is not a body of"):
        gym.make_vec(f"fastvec/{task}-v5", num_envs=1, main_body="no_such_body")


NOISE_SHIM = r"""
#include <math.h>
#define FV_MJ_INLINE static inline
%s
void uniforms(unsigned long long seed, double low, double high, double* out, long n) {
    fv_mj_rng r = {seed};
    for (long i = 0; i < n; i++) out[i] = fv_mj_uniform(&r, low, high);
}
void normals(unsigned long long seed, double* out, long n) {
    fv_mj_rng r = {seed};
    for (long i = 0; i < n; i++) out[i] = fv_mj_normal(&r);
}
"""


def test_the_tasks_reset_noise_draws_are_numpys_uniform_and_standard_normal(c_shim):
    """mj_task.h's draws (cut from its source), which every task's reset noise is made of, have the distributions
    of np.random.Generator.uniform(low, high) and standard_normal: 200,000 draws each pass a Kolmogorov-Smirnov
    test against the exact distribution, uniform ones stay in [low, high), and normal ones have mean 0, standard
    deviation 1 and the normal's share of the tails past 2 and 3."""
    import ctypes

    from scipy import stats

    from fastvec.native.mujoco import HERE

    text = (HERE / "mj_task.h").read_text()
    start, end = text.index("typedef struct { unsigned long long s; } fv_mj_rng;"), text.index("/* What a task's")
    lib = c_shim(NOISE_SHIM % text[start:end])
    lib.uniforms.argtypes = [ctypes.c_ulonglong, ctypes.c_double, ctypes.c_double, ctypes.c_void_p, ctypes.c_long]
    lib.normals.argtypes = [ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_long]
    n = 200_000
    u = np.empty(n)
    lib.uniforms(12345, -0.3, 0.1, u.ctypes.data, n)
    assert u.min() >= -0.3 and u.max() < 0.1 and u.min() < -0.2999 and u.max() > 0.0999
    assert stats.kstest(u, stats.uniform(-0.3, 0.4).cdf).pvalue > 1e-3
    z = np.empty(n)
    lib.normals(777, z.ctypes.data, n)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    for cut in (2.0, 3.0):
        want = 2 * stats.norm.sf(cut)
        assert abs(np.mean(np.abs(z) > cut) - want) < 5 * np.sqrt(want / n), cut
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3
    other = np.empty(n)
    lib.normals(778, other.ctypes.data, n)
    assert abs(np.corrcoef(z, other)[0, 1]) < 0.01  # neighbouring seeds draw unrelated streams


# The keywords KEYWORDS and test_exactness leave at their defaults: termination switched off (health ranges tight
# enough that the envs go unhealthy and keep stepping), the control costs and observation switches of the rest.
MORE_KEYWORDS = {
    "Ant": {"terminate_when_unhealthy": False, "healthy_z_range": (0.5, 0.7), "ctrl_cost_weight": 0.2,
            "include_cfrc_ext_in_observation": False, "healthy_reward": 2.0},
    "Humanoid": {"terminate_when_unhealthy": False, "healthy_z_range": (1.3, 1.45), "ctrl_cost_weight": 0.3,
                 "include_cfrc_ext_in_observation": False, "include_cinert_in_observation": False},
    "Walker2d": {"terminate_when_unhealthy": False, "healthy_z_range": (1.22, 2.0), "ctrl_cost_weight": 0.1,
                 "healthy_angle_range": (-0.4, 0.4)},
    "HumanoidStandup": {"include_cinert_in_observation": False, "include_cvel_in_observation": False,
                        "include_qfrc_actuator_in_observation": False, "impact_cost_range": (-0.5, 0.5)},
    "Hopper": {"terminate_when_unhealthy": False, "healthy_state_range": (-1.5, 1.5), "healthy_z_range": (1.2, 2.0)},
    "Swimmer": {"ctrl_cost_weight": 0.5, "forward_reward_weight": 0.5},
}


@pytest.mark.parametrize("task", list(MORE_KEYWORDS))
def test_more_keywords_step_as_gymnasiums(task):
    from test_exactness import compare_steps

    compare_steps(task, kwargs=MORE_KEYWORDS[task], steps=60)


NOISE_SCALES = {"Ant": 0.25, "HalfCheetah": 0.3, "Hopper": 0.02, "Humanoid": 0.05, "HumanoidStandup": 0.05,
                "InvertedDoublePendulum": 0.3, "InvertedPendulum": 0.05, "Swimmer": 0.3, "Walker2d": 0.02}


@pytest.mark.parametrize("task", list(NOISE_SCALES))
def test_the_reset_noise_scale_keyword_spreads_each_tasks_resets_as_gymnasiums(task):
    """reset_noise_scale away from its default: every coordinate's 5% and 95% quantiles over 300 resets agree with
    Gymnasium's resets made with the same keyword (its uniform positions and uniform or normal velocities)."""
    kwargs = {"reset_noise_scale": NOISE_SCALES[task]}
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=300, **kwargs)
    ours.reset(seed=11)
    mine = ours.get_state()
    ours.close()
    ref = gym.make(f"{task}-v5", **kwargs).unwrapped
    theirs = []
    for seed in range(300):
        ref.reset(seed=seed)
        theirs.append(np.concatenate([ref.data.qpos, ref.data.qvel]))
    q_mine, q_theirs = np.quantile(mine, [0.05, 0.95], axis=0), np.quantile(np.array(theirs), [0.05, 0.95], axis=0)
    width = np.maximum(q_theirs[1] - q_theirs[0], 1e-12)
    assert (np.abs(q_mine - q_theirs) <= 0.15 * width).all(), task


@pytest.mark.parametrize("kwargs, message", [
    ({"healthy_z_range": 0.5}, "healthy_z_range must be a (low, high) pair of numbers, got 0.5"),
    ({"healthy_z_range": (0.2, 0.5, 1.0)}, "healthy_z_range must be a (low, high) pair of numbers"),
    ({"healthy_z_range": ("low", 1.0)}, "healthy_z_range must be a (low, high) pair of numbers"),
    ({"ctrl_cost_weight": "heavy"}, "ctrl_cost_weight must be a number, got 'heavy'"),
    ({"frame_skip": 0}, "frame_skip must be a positive integer, got 0"),
    ({"num_envs": 0}, "num_envs must be a positive integer, got 0"),
])
def test_a_bad_keyword_value_is_refused_naming_it(kwargs, message):
    kwargs = {"num_envs": 1, **kwargs}
    with pytest.raises(ValueError) as err:
        gym.make_vec("fastvec/Hopper-v5", **kwargs)
    assert message in str(err.value)


def test_the_smallest_frame_skip_and_numpy_bools_are_taken_as_gymnasium_takes_them():
    """frame_skip=1 steps the physics once per step (dt is the model's timestep), and a NumPy bool keyword is the
    Python bool's value."""
    from test_exactness import compare_steps

    compare_steps("Hopper", kwargs={"frame_skip": 1, "terminate_when_unhealthy": np.bool_(False),
                                    "healthy_z_range": (1.2, 2.0)}, steps=20)


VELOCITY_COUNT_MODELS = {  # one joint whose velocities are fewer than its positions: (model, nq, nv, the refusal)
    "Pusher": ('<body name="tips_arm"><freejoint/><site name="s"/><geom type="sphere" size="0.05"/>'
               '<body name="object" pos="0 0 0.1"><geom type="sphere" size="0.02"/></body>'
               '<body name="goal" pos="0 0 0.2"><geom type="sphere" size="0.02"/></body></body>',
               7, 6, "it needs nq >= 7, nv >= 7"),
    "Reacher": ('<body name="fingertip"><joint type="ball"/><site name="s"/><geom type="sphere" size="0.05"/>'
                '<body name="target" pos="0 0 0.1"><geom type="sphere" size="0.02"/></body></body>',
                4, 3, "it needs nq >= 4 and nv >= 4"),
}


@pytest.mark.parametrize("task", sorted(VELOCITY_COUNT_MODELS))
def test_a_tasks_velocity_count_is_checked_apart_from_its_position_count(task, tmp_path):
    """A free joint has 7 positions and 6 velocities, a ball joint 4 and 3: Pusher's bodies on one free joint and
    Reacher's on one ball joint are refused for their velocity count alone."""
    import mujoco

    bodies, nq, nv, message = VELOCITY_COUNT_MODELS[task]
    path = tmp_path / f"{task}.xml"
    path.write_text(f'<mujoco><worldbody>{bodies}</worldbody>'
                    '<actuator><motor site="s" gear="1 0 0 0 0 0"/></actuator></mujoco>')
    model = mujoco.MjModel.from_xml_path(str(path))
    assert (model.nq, model.nv, model.nu) == (nq, nv, 1)
    assert message in refusal(task, str(path))


@pytest.mark.parametrize("task", ["InvertedPendulum"])
def test_inverted_pendulums_check_takes_one_hinge_and_refuses_none(task, tmp_path):
    message = "the observation's pole angle needs nq + nv >= 2 and an actuator"
    assert message in refusal(task, site_motor_model(tmp_path / "none.xml", 0))
    assert message in refusal(task, chain_model(tmp_path / "idle.xml", 1, actuators=0))
    assert refusal(task, chain_model(tmp_path / "one.xml", 1)) == ""


@pytest.mark.parametrize("task", ["Hopper"])
def test_hoppers_state_range_is_strict_at_both_ends_as_gymnasiums(task):
    """Gymnasium's Hopper is healthy only while every entry of state_vector()[2:] lies strictly inside
    healthy_state_range: one step's largest and smallest entries (a velocity each here) taken as the range's own
    ends end the episode; one ulp further out does not."""
    probe = gym.make(f"{task}-v5").unwrapped
    probe.reset(seed=3)
    start = np.concatenate([probe.data.qpos, probe.data.qvel])
    action = np.array([0.9, -0.7, 0.5], np.float32)
    probe.step(action)
    state = probe.state_vector()[2:]
    nq = probe.model.nq
    assert np.argmax(state) >= nq - 2 and np.argmin(state) >= nq - 2  # the extremes are velocities
    high, low = state.max(), state.min()
    ranges = [(-100.0, high), (low, 100.0), (-100.0, np.nextafter(high, np.inf)), (np.nextafter(low, -np.inf), 100.0)]
    ends = []
    for state_range in ranges:
        oracle = gym.make(f"{task}-v5", healthy_state_range=state_range).unwrapped
        oracle.reset(seed=3)
        want = oracle.step(action)
        ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1, healthy_state_range=state_range)
        ours.reset(seed=3)
        ours.set_state([0], start[None])
        got = ours.step(action[None])
        assert (bool(got[2][0]), got[1][0]) == (want[2], want[1]), state_range
        ends.append(want[2])
        ours.close()
    assert ends == [True, True, False, False]


@pytest.mark.parametrize("task", ["InvertedDoublePendulum"])
def test_inverted_double_pendulums_clipped_entries_reach_both_clip_ends_as_gymnasiums(task):
    """The cart driven into either end of its rail: the constraint force's entry clipped to +10 and to -10 and the
    velocities' entries clipped at +-10 (Gymnasium's np.clip), the observation equal to Gymnasium's bit for bit."""
    oracle = gym.make(f"{task}-v5").unwrapped
    ours = gym.make_vec(f"fastvec/{task}-v5", num_envs=1)
    ours.reset(seed=0)
    action = np.zeros(1, np.float32)
    seen = []
    for x, v in [(0.9, 3.0), (-0.9, -3.0), (0.99, 5.0), (-0.99, -5.0)]:
        oracle.reset(seed=0)
        qpos, qvel = oracle.data.qpos.copy(), oracle.data.qvel.copy()
        qpos[0], qvel[0] = x, v
        oracle.set_state(qpos, qvel)
        ours.set_state([0], np.concatenate([qpos, qvel])[None])
        want = oracle.step(action)[0]
        got = ours.step(action[None])[0][0]
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        seen.append(want[-4:].tolist())
    assert seen[0][-1] == -10 and seen[1][-1] == 10  # the constraint force, clipped at each end
    assert 10 in seen[2][:3] and -10 in seen[3][:3]  # a velocity, clipped at each end
    oracle.close()
    ours.close()


VIEW_SUMS_SHIM = r"""
#include <math.h>
#define FV_MJ_INLINE static inline
int fv_np_dot_fma = 1;
%s
%s
%s
extern "C" {
__attribute__((visibility("default"))) double squares64(const double* x, int n, int clip, double lo, double hi) {
    return fv_np_sum_squares(x, n, clip, lo, hi);
}
__attribute__((visibility("default"))) double squares32(const float* x, int n, int clip, double lo, double hi) {
    return fv_np_sum_squares(x, n, clip, lo, hi);
}
__attribute__((visibility("default"))) double norm64(const double* x, int n) { return fv_np_norm(x, n); }
__attribute__((visibility("default"))) double norm32(const float* x, int n) { return fv_np_norm(x, n); }
}
"""


def test_the_pairwise_sums_of_squares_over_float32_views_and_past_512_values_are_numpys(tmp_path):
    """mj_task.h's sums of squares (cut from its source, built as C++ as the MuJoCo Warp view builds them): over
    float64 values and over float32 ones (MuJoCo Warp's arrays, widened first), clipped or not, np.sum(np.square)
    of the float64 values bit for bit up to 512 values (every model of Gymnasium's), and to 1e-13 past it (a user's
    model with more than 85 bodies, summed 512 at a time), no scratch array indexed past its end; the view's norm is
    np.linalg.norm of the widened values."""
    import ctypes
    import shutil
    import subprocess

    from fastvec.native.mujoco import HERE

    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    text = (HERE / "mj_task.h").read_text()
    sums = text[text.index("#define FV_NP_PAIRWISE"):text.index("/* The control cost's")]
    norm = text[text.index("/* np.linalg.norm"):]
    norm = norm[:norm.index("\n}\n") + 3]
    view = text[text.index("#ifdef FV_MJ_VIEW\n/* The sums") + len("#ifdef FV_MJ_VIEW"):]
    view = view[:view.index("#endif")]
    (tmp_path / "shim.cc").write_text(VIEW_SUMS_SHIM % (sums, norm, view))
    # UBSan's bounds check as a trap (no runtime library): an index past a scratch array stops the process with
    # an illegal instruction, which faulthandler reports with this test's traceback.
    for checks in (["-fsanitize=bounds", "-fsanitize-undefined-trap-on-error"], []):
        proc = subprocess.run([cxx, "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno", *checks,
                               str(tmp_path / "shim.cc"), "-o", str(tmp_path / "shim.so")], capture_output=True,
                              text=True)
        if proc.returncode == 0:
            break
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = ctypes.CDLL(str(tmp_path / "shim.so"))
    for fn in (lib.squares64, lib.squares32):
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_double, ctypes.c_double]
    for fn in (lib.norm64, lib.norm32):
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_void_p, ctypes.c_int]
    rng = np.random.default_rng(21)
    values = (rng.standard_normal(1300) * 10.0 ** rng.integers(-2, 3, 1300)).astype(np.float32)
    values64 = values.astype(np.float64)  # the inputs are leading parts of these: a value read past one is summed
    for n in (0, 1, 7, 8, 129, 300, 511, 512, 513, 700, 1023, 1024, 1025, 1299):
        for clip in (0, 1):
            for fn, x in ((lib.squares64, values64[:n]), (lib.squares32, values[:n])):
                wide = x.astype(np.float64)
                want = np.sum(np.square(np.clip(wide, -0.75, 1.5) if clip else wide))
                got = fn(ctypes.c_void_p(x.ctypes.data), n, clip, -0.75, 1.5)
                if n <= 512:
                    assert got == 0.0 + want, (fn, n, clip)
                else:
                    assert got == pytest.approx(want, rel=1e-13), (fn, n, clip)
        for fn, x in ((lib.norm64, values64[:n]), (lib.norm32, values[:n])):
            assert fn(ctypes.c_void_p(x.ctypes.data), n) == pytest.approx(np.linalg.norm(x.astype(np.float64)),
                                                                          rel=1e-14), (fn, n)


def test_set_state_of_no_envs_takes_the_empty_state_get_state_gives_and_changes_nothing():
    """set_state over an empty index array with the (0, nq + nv) state that get_state gives for it sets nothing (as
    the CPU batch's set_state); an empty state of any other shape, or a state for envs not named, is refused with
    the shape wanted."""
    envs = gym.make_vec("fastvec/Hopper-v5", num_envs=2)
    obs, _ = envs.reset(seed=5)
    before, none = envs.get_state(), np.zeros(0, np.int64)
    empty = envs.get_state(none)
    assert empty.shape == (0, 12)
    envs.set_state(none, empty)
    np.testing.assert_array_equal(envs.get_state(), before)
    for bad in (np.zeros((0,)), np.zeros((0, 11)), np.zeros((0, 1)), np.zeros((0, 0)), np.zeros((1, 12))):
        with pytest.raises(ValueError, match=r"must have shape \(0, 12\)"):
            envs.set_state(none, bad)
    with pytest.raises(ValueError, match=r"must have shape \(1, 12\)"):
        envs.set_state([0], np.zeros((0, 12)))
    with pytest.raises(ValueError, match=r"must have shape \(2, 12\)"):
        envs.set_state(None, np.zeros(13))
    np.testing.assert_array_equal(envs.get_state(), before)
    envs.set_state([0], before[1])  # one env's state may be given flat, two envs' as one run of values
    np.testing.assert_array_equal(envs.get_state([0])[0], before[1])
    envs.set_state(None, before[::-1].ravel())
    np.testing.assert_array_equal(envs.get_state(), before[::-1])
    envs.close()


def test_the_norms_sum_is_numpys_dot_in_the_order_this_processors_blas_sums():
    """np.linalg.norm's x.dot(x) of a 2- or 3-vector is summed in order with fused multiply-adds by OpenBLAS's
    kernel on some x86-64 processors, without them on others: each probe tells the two apart, and the order
    numpy_dot_fuses reads from them is NumPy's own on random vectors (the tasks' norms take it from there)."""
    from fastvec.native.mujoco import DOT_PROBES, fma_sum_of_squares, numpy_dot_fuses, sum_of_squares
    assert all(fma_sum_of_squares(p) != sum_of_squares(p) for p in DOT_PROBES)
    order = fma_sum_of_squares if numpy_dot_fuses() else sum_of_squares
    rng = np.random.default_rng(3)
    told_apart = 0
    for n in (2, 3) * 300:
        x = rng.standard_normal(n)
        assert float(x.dot(x)) == order(x.tolist()), x
        told_apart += fma_sum_of_squares(x.tolist()) != sum_of_squares(x.tolist())
    assert told_apart > 50
