/* team_rollout_on_cpu.cpp: a team game's rollout step in the rollout graph built for the CPU: rollout.cu's
 * rollout_step_kernel (the masked draw of every agent's action, the env step, the outcome and its accumulators) and
 * team_rollout.cu's team_inputs_kernel after it, with a team env (ENV, its defines on the command line) and
 * batch.h, for tests/emulation/test_teams_kernels.py on cuda_on_cpu.h's threads. The games' slots share a CPU
 * batch's layout (emu_slot_size). */
#include "rollout_on_cpu.h"
#include "team_rollout.cu"

extern "C" {
#include "rollout_step_on_cpu.h"

void emu_team_inputs(int n, const fv_slot* slots, const OBS_T* env_obs, float* obs, unsigned char* masks,
                     const unsigned char* own_masks, float* world, float* world_state, const int* world_columns,
                     int agent_ids, int world_size) {
    TeamInputsArgs a = {slots, env_obs, obs, masks, own_masks, world, world_state, world_columns, n, agent_ids,
                        world_size};
    launch(n, 256, [=] { team_inputs_kernel(a); });
}
}
