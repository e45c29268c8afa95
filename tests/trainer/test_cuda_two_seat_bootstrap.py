"""A GPU env with two agents a game (Pong with both paddles policy agents, env.pong_bot=0) on the CUDA trainer: every
rollout path (the fused warp-per-env and thread-per-env kernels, the GEMM path) records each agent's own values and
its own bootstrap value V(obs[T]), the reference policy's on that agent's observation. Needs a GPU with PyCUDA."""

import numpy as np
import pytest
from test_cuda import F32_TOL, _cuda_or_skip, make_pair, rel_err, rollout_buffers

from fastvec.trainer import reference as ref

pytestmark = pytest.mark.gpu


def two_seat_config(kind: str) -> dict:
    from fastvec.trainer.config import load_config
    return load_config("pong", {"env": {"num_envs": 24, "pong_bot": 0},
                                "policy": {"kind": kind, "hidden": 16, "layers": 2},
                                "train": {"horizon": 16, "bptt_horizon": 8, "minibatch_size": 64, "update_epochs": 1,
                                          "optimizer": "adam", "learning_rate": 0.01, "device": "cuda", "seed": 5,
                                          "precision": "fp32", "async": False}})


@pytest.mark.parametrize("rollout", ["warp", "thread", "gemm"])
@pytest.mark.parametrize("kind", ["mlp", "mingru"])
def test_each_agent_of_a_two_agent_game_gets_its_own_bootstrap_value(kind, rollout):
    """Two rollouts (eager, then the captured graph) with an update between: the values and last_values (rows
    env-major, agent 0 then agent 1 of each game) equal the reference policy's on the recorded observations, on
    the weights of that rollout, with a MinGRU's state carried through the horizon; the two agents' bootstrap values
    differ, so an agent given its neighbour's (or another row's) value is caught."""
    _cuda_or_skip()
    gpu_tr, _, spec = make_pair(two_seat_config(kind), rollout=rollout)
    try:
        assert gpu_tr.num_agents == 2 and gpu_tr.plan.rollout == rollout
        cuda, a = gpu_tr.cuda, gpu_tr.arena
        t_len, rows = gpu_tr.horizon, gpu_tr.rows
        assert rows == 2 * 24
        layout = ref.FlatLayout(ref.param_table(spec))
        for k in range(2):
            views = layout.views(a.get(cuda, "params"))
            gpu_tr.rollout()
            buf = rollout_buffers(gpu_tr)
            state0 = buf["segment_state"][0][:spec.state_layers]
            _, values, state, _ = ref.policy_forward(spec, views, buf["obs"][:t_len], buf["starts"][:t_len], state0)
            assert rel_err(buf["values"], values) <= F32_TOL, k
            bootstrap = ref.policy_forward(spec, views, buf["obs"][t_len:], buf["starts"][t_len:], state)[1][0]
            last = gpu_tr.last_values()
            assert last.shape == (rows,)
            assert rel_err(last, bootstrap) <= F32_TOL, k
            assert np.abs(bootstrap[0::2] - bootstrap[1::2]).max() > 1e-3, k
            gpu_tr.update(num_updates=4)
    finally:
        gpu_tr.close()
