/* team_inputs_on_cpu.cpp: team_rollout.cu's team_inputs_kernel (a team game's policy inputs in the rollout graph)
 * built for the CPU with a team env (ENV, its defines on the command line) and batch.h, for
 * tests/emulation/test_teams_kernels.py, on cuda_on_cpu.h's threads. The games are a CPU batch's slots, whose layout
 * this build shares (emu_slot_size). */
#include "cuda_on_cpu.h"
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __ldcg(p) (*(p))
#include ENV
#include "batch.h"
#include "team_rollout.cu"

extern "C" {
int emu_slot_size(void) { return (int)sizeof(fv_slot); }

void emu_team_inputs(int n, const fv_slot* slots, const OBS_T* env_obs, float* obs, unsigned char* masks,
                     const unsigned char* own_masks, float* world, float* world_state, const int* world_columns,
                     int agent_ids, int world_size) {
    TeamInputsArgs a = {slots, env_obs, obs, masks, own_masks, world, world_state, world_columns, n, agent_ids,
                        world_size};
    launch(n, 256, [=] { team_inputs_kernel(a); });
}
}
