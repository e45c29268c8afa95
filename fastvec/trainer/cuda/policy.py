"""The policy on the GPU: reference.policy_forward and policy_backward as cuBLAS GEMMs and policy.cu's
element-wise kernels, enqueued on a given stream (the rollouts' and the update's)."""

from __future__ import annotations

import numpy as np

from fastvec.trainer import reference as ref
from fastvec.trainer.cuda.cublas import CUDA_R_16BF
from fastvec.trainer.cuda.plan import BIAS_GRAD_BLOCKS, Plan

MLP_ACTIVATIONS = {"relu": 0, "tanh": 1}  # policy.cu's MLP_RELU, MLP_TANH


class GpuPolicy:
    """Enqueues the policy's forward pass (any number of rows and steps) and the update's backward pass over
    the arena's buffers; the caller picks the stream (a launcher k and its cuBLAS handle)."""

    def __init__(self, spec: ref.PolicySpec, layout: ref.FlatLayout, arena, plan: Plan):
        self.spec, self.layout, self.arena, self.plan = spec, layout, arena, plan

    def forward(self, k, blas, rows_per_step: int, steps: int, obs: int, starts: int, state_in, state_out,
                acts, pres, hs, y: int, params: str = "params", acts_bf16=None, dec_bias: bool = True,
                x0: int = 0, obs_bytes: bool = False, critic_acts=None, world: int = 0) -> None:
        """obs (steps, B, I) -> y (steps, B, Y). acts: L + 1 pointers (encoder output, layer outputs);
        pres, hs: per-layer pre-activation and MinGRU-state buffers; state_in/out: per-layer (B, H).
        params: the arena's weights to use. acts_bf16 (bf16 MinGRU updates and GEMM-path rollouts): L
        pointers to bfloat16 copies of the layers' inputs; the layer GEMMs then multiply those by the
        weights' bf16 copy (arena f"{params}_bf16") into bfloat16 pres, and the MinGRU forward reads its
        highway input from them and stores hs in bfloat16. dec_bias=False leaves the decoder's bias out of y
        (the GEMM-path rollout's env step adds it). x0: where the encoder's input (reference.encoder_input) goes
        when the policy transforms its observations (plan.transforms_obs) or they are bytes (obs_bytes: an env's
        OBS_T unsigned char, at obs's float address), which the encoder then reads; 0: obs already is that input
        (the update encodes its minibatch in place, encode()). A separate critic's stack writes y's value column
        and keeps its activations in critic_acts (the update's, update_critic_acts()), or by default in acts once
        the actor's decoder has read them (a rollout keeps none); pres are its scratch. world (steps, B, C): a
        world-state critic's input (spec.world_size), which its stack reads as it is (no scaling)."""
        spec = self.spec
        rows, h, ny = rows_per_step * steps, spec.hidden, spec.head_size + 1
        pp = self.pointer(params)
        if x0:
            self.encode(k, obs, x0, rows, params, obs_bytes)
            obs = x0
        self.stack_forward(k, blas, "", rows_per_step, steps, obs, starts, state_in, state_out, acts, pres, hs,
                           params, acts_bf16)
        if spec.critic == "shared":
            blas.matmul(y, acts[spec.layers], pp("dec.w"), rows, ny, h, trans_b=True)
        else:  # the actor's A columns, then the critic's stack into the value column
            blas.matmul(y, acts[spec.layers], pp("dec.w"), rows, ny - 1, h, trans_b=True, ldc=ny)
            critic_acts = critic_acts or acts
            self.stack_forward(k, blas, "critic.", rows_per_step, steps, world if spec.world_size else obs, starts,
                               state_in, state_out, critic_acts, pres, hs, params, None)
            blas.matmul(y + 4 * (ny - 1), critic_acts[spec.layers], pp("critic.dec.w"), rows, 1, h, trans_b=True,
                        ldc=ny)
        if dec_bias:  # dec.b: the A + 1 biases (with a separate critic, critic.dec.b follows dec.b in the layout)
            k.launch("add_bias_kernel", rows * ny, y, pp("dec.b"), np.int64(rows), np.int32(ny), 0)

    def stack_forward(self, k, blas, prefix: str, rows_per_step: int, steps: int, x: int, starts: int, state_in,
                      state_out, acts, pres, hs, params: str, acts_bf16) -> None:
        """reference.stack_forward's encoder and layers (those named prefix + "enc." ...) over encoder input x into
        acts; the decoder is forward()'s. x is (rows, I), or a critic's (rows, spec.critic_input_size)."""
        spec, a, off = self.spec, self.arena, self.layout.offsets
        rows, h = rows_per_step * steps, spec.hidden
        o = spec.critic_input_size if prefix == "critic." else spec.input_size
        pp = self.pointer(params)
        blas.matmul(acts[0], x, pp(prefix + "enc.w"), rows, h, o, trans_b=True)
        if spec.encoder != "linear":  # activate(pre + b) in place, then a MinGRU's bf16 copy of it
            k.launch("mlp_forward_kernel", rows * h, np.int64(rows), np.int32(h), acts[0], pp(prefix + "enc.b"),
                     acts[0], np.int32(MLP_ACTIVATIONS[spec.encoder]))
            if acts_bf16:
                k.launch("to_bf16_kernel", rows * h, np.int64(rows * h), acts[0], acts_bf16[0])
        else:
            k.launch("add_bias_kernel", rows * h, acts[0], pp(prefix + "enc.b"), np.int64(rows), np.int32(h),
                     acts_bf16[0] if acts_bf16 else 0)
        for layer in range(spec.layers):
            name = f"{prefix}layer{layer}"
            w = off[f"{name}.w"][1][0]
            if acts_bf16:
                blas.matmul(pres[layer], acts_bf16[layer], a.ptr(f"{params}_bf16", off[f"{name}.w"][0]), rows,
                            w, h, trans_b=True, dtype=CUDA_R_16BF, out_dtype=CUDA_R_16BF)
            else:
                blas.matmul(pres[layer], acts[layer], pp(f"{name}.w"), rows, w, h, trans_b=True)
            if spec.recurrent:
                next_bf16 = acts_bf16[layer + 1] if acts_bf16 and layer + 1 < spec.layers else 0
                k.launch("mingru_forward_bf16_kernel" if acts_bf16 else "mingru_forward_kernel", rows_per_step * h,
                         np.int32(steps), np.int32(rows_per_step), np.int32(h), np.int32(spec.highway),
                         (acts_bf16 or acts)[layer], pres[layer], pp(f"{name}.b"), starts, state_in[layer],
                         hs[layer], acts[layer + 1], state_out[layer], next_bf16)
            else:
                k.launch("mlp_forward_kernel", rows * h, np.int64(rows), np.int32(h), pres[layer],
                         pp(f"{name}.b"), acts[layer + 1], np.int32(MLP_ACTIVATIONS[spec.activation]))

    def update_critic_acts(self) -> list | None:
        """A separate critic's activations in the update (arena critic_act, kept for the backward); None when
        the value is the shared decoder's last row."""
        if self.spec.critic == "shared":
            return None
        n, h = self.plan.mb_rows, self.spec.hidden
        return [self.arena.ptr("critic_act", i * n * h) for i in range(self.spec.layers + 1)]

    def backward(self, k, blas, states, acts, acts_bf16, pres, hs, widths) -> None:
        """The minibatch's gradients (arena grads) from dy (n, Y) and the activations the forward kept
        (update_forward's pointers; a separate critic's in update_critic_acts()). Every gradient is written
        exactly once (beta = 0): grads need no zeroing."""
        spec, a, n = self.spec, self.arena, self.plan.mb_rows
        h, layers, ny, dy = spec.hidden, spec.layers, spec.head_size + 1, a.ptr("dy")
        gp, pp = self.pointer("grads"), self.pointer("params")
        critic_acts = self.update_critic_acts()
        if critic_acts is None:
            blas.matmul(gp("dec.w"), dy, acts[layers], ny, h, n, trans_a=True)
        else:  # dy's first A columns are the actor's, its last the critic's
            blas.matmul(gp("dec.w"), dy, acts[layers], ny - 1, h, n, trans_a=True, lda=ny)
            blas.matmul(gp("critic.dec.w"), dy + 4 * (ny - 1), critic_acts[layers], 1, h, n, trans_a=True, lda=ny)
        self.bias_grad(k, blas, gp("dec.b"), dy, ny)  # with a separate critic, dec.b and critic.dec.b
        if spec.action_kind == "box":  # the log-stds' gradient: the column sums of the loss's per-row dlogstd
            self.bias_grad(k, blas, gp("dec.logstd"), a.ptr("dlogstd"), spec.action_dims)
        if critic_acts is None:
            blas.matmul(a.ptr("dact"), dy, pp("dec.w"), n, h, ny)
        else:
            blas.matmul(a.ptr("dact"), dy, pp("dec.w"), n, h, ny - 1, lda=ny)
        self.stack_backward(k, blas, "", states, acts, acts_bf16, pres, hs, widths)
        if critic_acts is not None:
            blas.matmul(a.ptr("dact"), dy + 4 * (ny - 1), pp("critic.dec.w"), n, h, 1, lda=ny)
            self.stack_backward(k, blas, "critic.", states, critic_acts, None, pres, hs, [h] * layers)

    def stack_backward(self, k, blas, prefix: str, states, acts, acts_bf16, pres, hs, widths) -> None:
        """reference.stack_backward's layers and encoder (prefix + ...) from the top layer's gradient in dact's
        first half."""
        spec, a, plan = self.spec, self.arena, self.plan
        kk, bm, n = plan.bptt, plan.seqs_per_mb, plan.mb_rows
        h, off = spec.hidden, self.layout.offsets
        o, x = spec.input_size, a.ptr("mb_obs")
        if prefix == "critic." and spec.world_size:  # the world-state critic's encoder multiplied its own input
            o, x = spec.critic_input_size, a.ptr("mb_world")
        gp, pp = self.pointer("grads"), self.pointer("params")
        cur, other = a.ptr("dact"), a.ptr("dact", n * h)
        for layer in reversed(range(spec.layers)):
            name, w = f"{prefix}layer{layer}", widths[layer]
            if spec.recurrent:
                k.launch("mingru_backward_bf16_kernel" if acts_bf16 else "mingru_backward_kernel", bm * h,
                         np.int32(kk), np.int32(bm), np.int32(h), np.int32(spec.highway), cur,
                         (acts_bf16 or acts)[layer], pres[layer], pp(f"{name}.b"), a.ptr("mb_starts"),
                         states[layer], hs[layer], a.ptr("dpre"), other, a.ptr("dbias_seq"))
                if acts_bf16:
                    blas.matmul(other, a.ptr("dpre"), a.ptr("params_bf16", off[f"{name}.w"][0]), n, h, w,
                                beta=1.0, dtype=CUDA_R_16BF)
                else:
                    blas.matmul(other, a.ptr("dpre"), pp(f"{name}.w"), n, h, w, beta=1.0)
                self.bias_grad(k, blas, gp(f"{name}.b"), a.ptr("dbias_seq"), w, rows=bm)
            else:
                self.mlp_backward(k, blas, name, cur, acts[layer + 1], spec.activation)
                blas.matmul(other, a.ptr("dpre"), pp(f"{name}.w"), n, h, w)
            if acts_bf16:
                blas.matmul(gp(f"{name}.w"), a.ptr("dpre"), acts_bf16[layer], w, h, n, trans_a=True,
                            dtype=CUDA_R_16BF)
            else:
                blas.matmul(gp(f"{name}.w"), a.ptr("dpre"), acts[layer], w, h, n, trans_a=True)
            cur, other = other, cur
        if spec.encoder != "linear":  # the encoder's nonlinearity as an MLP layer's, its output in acts[0]
            self.mlp_backward(k, blas, prefix + "enc", cur, acts[0], spec.encoder)
            cur = a.ptr("dpre")
        else:
            self.bias_grad(k, blas, gp(prefix + "enc.b"), cur, h)
        blas.matmul(gp(prefix + "enc.w"), cur, x, h, o, n, trans_a=True)

    def mlp_backward(self, k, blas, name: str, dout: int, out: int, activation: str) -> None:
        """reference.mlp_backward's dpre = activation_grad(dout, out) (n, H) into the arena's dpre, and the bias
        gradient (grads name + ".b") from it: one launch up to plan.choices.mlp_bias_fused_max elements, else two."""
        a, n, h = self.arena, self.plan.mb_rows, self.spec.hidden
        db, act = self.pointer("grads")(f"{name}.b"), MLP_ACTIVATIONS[activation]
        if n * h <= self.plan.choices.mlp_bias_fused_max:
            self.bias_grad(k, blas, db, dout, h, out, a.ptr("dpre"), act=act)
        else:
            k.launch("mlp_backward_kernel", n * h, np.int64(n * h), dout, out, a.ptr("dpre"), np.int32(act))
            self.bias_grad(k, blas, db, a.ptr("dpre"), h)

    def pointer(self, buffer: str):
        """name -> the device address of parameter `name` in the arena's flat buffer `buffer` (params, grads...)."""
        off, a = self.layout.offsets, self.arena
        return lambda name: a.ptr(buffer, off[name][0])

    def encode(self, k, obs: int, x: int, rows: int, params: str = "params", obs_bytes: bool = False) -> None:
        """x (rows, I) = reference.encoder_input of obs (rows, I) (floats, x may be obs; or bytes): times
        spec.obs_scale, then with norm_obs normalised by the statistics in the weights `params`."""
        spec = self.spec
        norm = self.arena.ptr(params, self.layout.offsets["obs_norm.mean"][0]) if spec.norm_obs else 0
        k.launch("encode_obs_kernel", rows * spec.input_size, np.int64(rows), np.int32(spec.input_size),
                 np.int32(obs_bytes), obs, np.float32(spec.obs_scale), norm, x)

    def bias_grad(self, k, blas, db: int, dout: int, cols: int, out: int = 0, dpre: int = 0,
                  rows: int | None = None, act: int = 0) -> None:
        """db (cols,) = column sums of dout (rows, cols) (default the minibatch's n rows), a bias gradient; with
        out and dpre (an MLP layer), of dpre = activation_grad(dout, out) (mlp_backward; act: MLP_ACTIVATIONS'),
        which it also writes. Without
        the mask it is a GEMM with a ones row, which uses the whole GPU where bias_grad_kernel's fixed grid
        of blocks would be latency-bound."""
        a, n = self.arena, self.plan.mb_rows if rows is None else rows
        if not out:
            blas.matmul(db, a.ptr("ones"), dout, 1, cols, n)
            return
        blocks = min(BIAS_GRAD_BLOCKS, max(1, -(-n * cols // 8192)))  # ~8K elements a block
        k.launch_grid("bias_grad_kernel", blocks, 256, np.int64(n), np.int32(cols), dout, out, dpre,
                      a.ptr("block_partial"), a.ptr("reduce_counter"), db, np.int32(act))
