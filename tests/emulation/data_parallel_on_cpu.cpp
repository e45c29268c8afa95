/* data_parallel_on_cpu.cpp: heads_on_cpu.cpp's build of the trainer's kernels, plus launchers that take a kernel's
 * grid and arguments as data_parallel.py's DataParallel passes them to device.Launcher.launch_grid, for
 * tests/emulation/test_data_parallel_moments.py. */
#include "heads_on_cpu.cpp"

extern "C" {

void emu_grid_sums_partial_kernel(long long blocks, int threads, long long n, int k, const float* x,
                                  double* partial) {
    launch_grid(blocks, threads, [=] { sums_partial_kernel(n, k, x, partial); });
}

void emu_grid_moments_finish_kernel(long long blocks, int threads, int nblocks, const double* partial, long long n,
                                    float* out) {
    launch_grid(blocks, threads, [=] { moments_finish_kernel(nblocks, partial, n, out); });
}

} /* extern "C" */
