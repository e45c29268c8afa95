/* policy_edges_on_cpu.cpp: heads_on_cpu.cpp's kernels, plus policy.cu's Discrete sampler (sample_row, which
 * rollout.cu's kernels call a row at a time), built for the CPU for tests/emulation/test_policy_kernel_edges.py. */
#include "heads_on_cpu.cpp"

extern "C" {
/* sample_row for rows 0..B-1 of logits (B, ld), the first A columns the row's logits, uniform u[b]. */
void emu_sample_row(int B, int A, int ld, const float* logits, const float* u, int* actions, float* logp) {
    for (int b = 0; b < B; b++) actions[b] = sample_row(logits + (long long)b * ld, A, u[b], logp + b);
}
}
