/* game_rows_on_cpu.cpp: fastvec/native/game_rows.cu's kernels (a game's flags and episode facts onto its seats' rows,
 * one seat's actions into the batch's) built for the CPU, for tests/emulation/test_game_rows_kernels.py on
 * cuda_on_cpu.h's threads, in the grids the test passes (game_rows.GameRows's). */
#include "cuda_on_cpu.h"
#include "game_rows.cu"

extern "C" {
void emu_game_rows(long long blocks, int block, int games, int agents, int stats, const bool* terminated,
                   const bool* truncated, const bool* done, const int* length, const float* ep_stats,
                   bool* flags_out, int* length_out, float* stats_out) {
    launch_grid(blocks, block, [=] {
        game_rows_kernel(games, agents, stats, terminated, truncated, done, length, ep_stats, flags_out, length_out,
                         stats_out);
    });
}

void emu_seat_actions(long long blocks, int block, int games, int agents, int seat, const char* src,
                      long long src_stride, int itemsize, int is_signed, long long* actions) {
    launch_grid(blocks, block, [=] {
        seat_actions_kernel(games, agents, seat, src, src_stride, itemsize, is_signed, actions);
    });
}
}
