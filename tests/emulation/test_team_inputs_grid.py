"""team_rollout.cu's team_inputs_kernel over more envs than one block of the launch holds (256 threads a block):
every env of every block, the last one partial, gets AgentInputs' obs, masks and world state, and nothing past
the last row is written."""

import numpy as np
from test_teams_kernels import TEAM_HARNESS, build_team_harness, check_team_inputs


def test_team_inputs_kernel_writes_every_block_of_envs(tmp_path_factory):
    from fastvec.trainer.agent_inputs import AgentInputs, world_state_size
    from fastvec.trainer.resolve import make_batch, make_policy_spec
    lib, config = build_team_harness(tmp_path_factory, TEAM_HARNESS, "simple_speaker_listener", "world_state")
    batch = make_batch(config, 2 * 256 + 37)
    try:
        n, agents = batch.num_envs, batch.obs.shape[1]
        spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions, batch.env.spaces, agents,
                                world_state_size(batch))
        inputs = AgentInputs(spec, batch)
        batch.reset(np.arange(n, dtype=np.uint64) + 3, None)
        rng = np.random.default_rng(4)
        for _ in range(3):  # the games apart, so that a row written from another env's slot would differ
            choice = np.array([rng.choice(np.flatnonzero(row)) for row in inputs.mask()])
            batch.step(choice.reshape(n, agents))
        assert len({row.tobytes() for row in inputs.obs().reshape(n, -1)}) == n
        check_team_inputs(lib, spec, batch, inputs)
    finally:
        batch.close()
