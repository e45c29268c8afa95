/* kernels.cu: the fused CUDA trainer's math, one kernel per function of fastvec/trainer/reference.py
 * and named after it (mingru_forward -> mingru_forward_kernel, ...), so the two files read side by
 * side; tests/trainer/test_cuda.py checks the kernels against their references on random inputs.
 * Env-independent: rollout.cu adds the kernels that sample actions and step an env.
 * GEMMs (encoder, layers, decoder, their gradients, Newton-Schulz) are cuBLAS calls (cublas.py);
 * the kernels here are the element-wise and per-row work between them, fused where they meet.
 * This file is the module's entry: it includes the parts in dependency order.
 *
 * Legend: K = time steps of a sequence, B = sequences, n = K * B rows (row = t * B + b),
 * H = hidden, W = layer width (2H or 3H for MinGRU, H for an MLP), A = actions, Y = A + 1
 * (decoder outputs: A logits, then the value), P = parameters. Row-major float32 throughout, except
 * that with train.precision = "bf16" a MinGRU update keeps its layers' GEMM operands and results in
 * bfloat16 (the _bf16 kernels): the update moves those activations at every step, fp32 elsewhere.
 * Every kernel is deterministic (fixed reduction orders), so fp32 training is bitwise repeatable;
 * the one exception, episode bookkeeping in rollout.cu, feeds logs only.
 */
#include "common.cu"     /* bf16, TrainScalars, mix64, block reductions, last_block */
#include "policy.cu"     /* layers, bias gradient, action sampling */
#include "ppo.cu"        /* GAE, minibatches, PPO loss, statistics, scalar bookkeeping */
#include "prio.cu"       /* prioritised draws of training sequences and their importance weights */
#include "heads.cu"      /* MultiDiscrete and Box heads: samplers and their PPO loss */
#include "teams.cu"      /* teams: the masked categorical, the minibatch's masks and world states */
#include "normalize.cu"  /* running observation normalisation and reward scaling */
#include "optimizers.cu" /* gradient norm, Adam, Muon (with newton_schulz.cu) */
