/* policy_edges_on_cpu.cpp: heads_on_cpu.cpp's kernels, plus policy.cu's Discrete sampler (sample_row, which
 * rollout.cu's kernels call a row at a time) and its element-wise layer kernels (fill, add_bias, to_bf16, the MinGRU
 * layer's forward and backward) on the trainer's grids (a thread an element, blocks of device.THREADS), built for the
 * CPU for tests/emulation/test_policy_kernel_edges.py. bf16 arrays are passed as their uint16 bits. */
#include "heads_on_cpu.cpp"

extern "C" {
/* sample_row for rows 0..B-1 of logits (B, ld), the first A columns the row's logits, uniform u[b]. */
void emu_sample_row(int B, int A, int ld, const float* logits, const float* u, int* actions, float* logp) {
    for (int b = 0; b < B; b++) actions[b] = sample_row(logits + (long long)b * ld, A, u[b], logp + b);
}

void emu_fill(float* x, long long n, float value) {
    launch(n, kThreads, [=] { fill_kernel(x, n, value); });
}

void emu_add_bias(float* y, const float* bias, long long rows, int cols, bf16* y_bf16) {
    launch(rows * cols, kThreads, [=] { add_bias_kernel(y, bias, rows, cols, y_bf16); });
}

void emu_to_bf16(long long n, const float* src, bf16* dst) {
    launch(n, kThreads, [=] { to_bf16_kernel(n, src, dst); });
}

void emu_mingru_forward(int K, int B, int H, int highway, const float* x, const float* pre, const float* bias,
                        const float* starts, const float* h0, float* h, float* out, float* h_last, bf16* out_bf16) {
    launch((long long)B * H, kThreads,
           [=] { mingru_forward_kernel(K, B, H, highway, x, pre, bias, starts, h0, h, out, h_last, out_bf16); });
}

void emu_mingru_backward(int K, int B, int H, int highway, const float* dout, const float* x, const float* pre,
                         const float* bias, const float* starts, const float* h0, const float* h, float* dpre,
                         float* dx, float* dbias_seq) {
    launch((long long)B * H, kThreads, [=] {
        mingru_backward_kernel(K, B, H, highway, dout, x, pre, bias, starts, h0, h, dpre, dx, dbias_seq);
    });
}
}
