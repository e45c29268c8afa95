"""mj_task.h's fv_mj_obs_qpos_qvel in a user's task (tests/mujoco_cpu/forward_task.c, its velocity clip changed):
the observation is qpos[skip:] then qvel clipped to [-clip, clip] for any clip > 0, as the helper documents."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="fastvec's MuJoCo tasks need the mujoco package: pip install 'fastvec[mujoco]'")

from fastvec.wrappers.mujoco import MujocoVectorEnv  # noqa: E402

TASK_FILE = Path(__file__).parent / "forward_task.c"


@pytest.mark.parametrize("clip", [0.5])
def test_a_user_task_observes_velocities_clipped_to_any_positive_bound(clip, tmp_path):
    source = TASK_FILE.read_text()
    assert "fv_mj_obs_qpos_qvel(c, 1, 0.0);" in source
    task = tmp_path / "clipped_task.c"
    task.write_text(source.replace("fv_mj_obs_qpos_qvel(c, 1, 0.0);", f"fv_mj_obs_qpos_qvel(c, 1, {clip!r});"))
    envs = MujocoVectorEnv(source=task, num_envs=2)
    obs, _ = envs.reset(seed=73004)
    rng = np.random.default_rng(73005)
    binds = inside = False
    for _ in range(15):
        state = envs.get_state()
        nq = 9  # half_cheetah.xml: 9 positions, 9 velocities
        assert state.shape == (2, 18) and obs.shape == (2, 17)
        qpos, qvel = state[:, :nq], state[:, nq:]
        np.testing.assert_array_equal(obs, np.concatenate([qpos[:, 1:], np.clip(qvel, -clip, clip)], 1))
        binds |= bool((np.abs(qvel) > clip).any())
        inside |= bool(((np.abs(qvel) < clip) & (qvel != 0)).any())
        obs, *_ = envs.step(rng.uniform(-1, 1, (2, 6)).astype(np.float32))
    assert binds and inside  # the clip both cut some velocities and left others as they were
    envs.close()
