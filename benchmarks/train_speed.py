"""Training benchmark (issue 6): fastvec's fused CUDA trainer on CartPole (time to solve, end-to-end SPS) beside
a PureJaxRL-style PPO in JAX on gymnax CartPole (fully jitted: the whole run is one XLA program), in one run
on one GPU. Prints a table and writes benchmarks/results/train_speed.json.

    python benchmarks/train_speed.py                 # everything
    python benchmarks/train_speed.py --skip-jax      # fastvec only
    python benchmarks/train_speed.py --breakout      # also fastvec Breakout SPS (and a short learning run)

"Solved" = the mean return of the episodes that finished during one update is >= 475. Training time counts
everything after start-up; start-up (compiled kernels from the disk cache, arena, env reset, and
CudaTrainer.warm_up: the graphs captured with a throw-away eager and captured iteration whose every state
change is undone) is reported separately, and so is the JAX JIT compile.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOLVED = 475.0


# ------------------------------------------------------------------------------------------------
# fastvec

def fastvec_config(env: str, overrides: dict):
    from fastvec.trainer.config import load_config
    sections: dict = {}
    for key, value in overrides.items():
        section, name = key.split(".")
        sections.setdefault(section, {})[name] = value
    sections.setdefault("train", {})["device"] = "cuda"
    sections["train"]["stop_at_target"] = False  # SPS and time to a target over the whole budget, not up to the env's stop
    return load_config(env, sections)


def fastvec_trainer(config):
    from fastvec.trainer import run
    t0 = time.perf_counter()
    trainer = run.make_trainer(config)
    return trainer, time.perf_counter() - t0


def fastvec_time_to_solve(overrides: dict, max_seconds: float = 8.0, env: str = "cartpole",
                          target: float = SOLVED, key: str = "episode_return") -> dict:
    """Train until the episodes finished in one update average >= target; returns times and steps."""
    config = fastvec_config(env, overrides)
    trainer, startup = fastvec_trainer(config)
    steps_per_update = trainer.horizon * trainer.num_envs
    num_updates = math.ceil(config["train"]["total_timesteps"] / steps_per_update)
    warm_up = trainer.warm_up(num_updates)  # graphs captured at start-up, the state restored (counted there)
    startup += warm_up
    curve = []
    solved_at = None
    t0 = time.perf_counter()
    while trainer.update_index < num_updates and time.perf_counter() - t0 < max_seconds:
        trainer.rollout()
        trainer.update(num_updates)
        episodes = trainer.pop_episodes()
        elapsed = time.perf_counter() - t0
        if episodes:
            curve.append((trainer.global_step, round(elapsed, 4), round(episodes[key], 2)))
            if episodes[key] >= target:
                solved_at = (elapsed, trainer.global_step)
                break
    total = time.perf_counter() - t0
    result = {"env": env, "overrides": overrides, "startup_s": round(startup, 3), "warm_up_s": round(warm_up, 3),
              "params": trainer.layout.size, "solved": solved_at is not None, "train_s": round(solved_at[0] if solved_at else total, 4),
              "steps": solved_at[1] if solved_at else trainer.global_step, "updates": trainer.update_index,
              "sps": round(trainer.global_step / total), "curve": curve,
              "time_split": {k: round(v, 4) for k, v in trainer.timing.items()}}
    trainer.close()
    return result


def fastvec_sps(overrides: dict, updates: int = 10, env: str = "cartpole") -> dict:
    """Steady-state end-to-end SPS (rollout + update, graphs replayed) after 3 warm-up updates."""
    config = fastvec_config(env, overrides)
    trainer, startup = fastvec_trainer(config)
    num_updates = 10_000
    for _ in range(3):  # eager, capture, first replay
        trainer.rollout()
        trainer.update(num_updates)
    for key in trainer.timing:
        trainer.timing[key] = 0.0
    step0 = trainer.global_step
    t0 = time.perf_counter()
    for _ in range(updates):
        trainer.rollout()
        trainer.update(num_updates)
    elapsed = time.perf_counter() - t0
    steps = trainer.global_step - step0
    result = {"env": env, "overrides": overrides, "startup_s": round(startup, 3), "params": trainer.layout.size,
              "sps": round(steps / elapsed), "rollout_sps": round(steps / trainer.timing["rollout"]),
              "update_sps": round(steps / trainer.timing["update"]), "seconds": round(elapsed, 4)}
    trainer.close()
    return result


# ------------------------------------------------------------------------------------------------
# PureJaxRL-style PPO (purejaxrl/ppo.py's algorithm and CartPole config, written in plain JAX: an
# actor and a critic MLP (64, 64, tanh), Adam(eps 1e-5) with global-norm clip 0.5 and linear annealing)

def make_jax_train(num_envs: int, num_steps: int = 128, total_timesteps: int = 500_000, update_epochs: int = 4,
                   num_minibatches: int = 4, lr: float = 2.5e-4, gamma: float = 0.99, lam: float = 0.95,
                   clip: float = 0.2, ent_coef: float = 0.01, vf_coef: float = 0.5, max_grad_norm: float = 0.5):
    import gymnax
    import jax
    import jax.numpy as jnp

    env, env_params = gymnax.make("CartPole-v1")
    num_updates = total_timesteps // num_steps // num_envs
    minibatch = num_envs * num_steps // num_minibatches
    obs_size, num_actions = env.observation_space(env_params).shape[0], env.action_space(env_params).n

    def dense(key, n_in, n_out, scale):
        return {"w": jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out)), "b": jnp.zeros(n_out)}

    def init(key):
        k = jax.random.split(key, 6)
        s2 = math.sqrt(2)
        return {"a0": dense(k[0], obs_size, 64, s2), "a1": dense(k[1], 64, 64, s2), "a2": dense(k[2], 64, num_actions, 0.01),
                "c0": dense(k[3], obs_size, 64, s2), "c1": dense(k[4], 64, 64, s2), "c2": dense(k[5], 64, 1, 1.0)}

    def apply(p, x):
        a = jnp.tanh(x @ p["a0"]["w"] + p["a0"]["b"])
        a = jnp.tanh(a @ p["a1"]["w"] + p["a1"]["b"])
        c = jnp.tanh(x @ p["c0"]["w"] + p["c0"]["b"])
        c = jnp.tanh(c @ p["c1"]["w"] + p["c1"]["b"])
        return a @ p["a2"]["w"] + p["a2"]["b"], (c @ p["c2"]["w"] + p["c2"]["b"])[..., 0]

    def loss_fn(p, obs, actions, old_logp, old_v, adv, targets):
        logits, v = apply(p, obs)
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, actions[:, None], -1)[:, 0]
        v_clipped = old_v + jnp.clip(v - old_v, -clip, clip)
        v_loss = 0.5 * jnp.maximum((v - targets) ** 2, (v_clipped - targets) ** 2).mean()
        ratio = jnp.exp(logp - old_logp)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - clip, 1 + clip)).mean()
        entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
        return pg + vf_coef * v_loss - ent_coef * entropy

    def adam(p, g, m, v, count):
        leaves = jax.tree_util.tree_leaves(g)
        norm = jnp.sqrt(sum(jnp.sum(x * x) for x in leaves))
        scale = jnp.minimum(1.0, max_grad_norm / (norm + 1e-6))
        g = jax.tree_util.tree_map(lambda x: x * scale, g)
        count = count + 1
        frac = 1.0 - ((count - 1) // (num_minibatches * update_epochs)) / num_updates
        step_lr = lr * frac
        m = jax.tree_util.tree_map(lambda mm, gg: 0.9 * mm + 0.1 * gg, m, g)
        v = jax.tree_util.tree_map(lambda vv, gg: 0.999 * vv + 0.001 * gg * gg, v, g)
        bc1, bc2 = 1 - 0.9 ** count, 1 - 0.999 ** count
        p = jax.tree_util.tree_map(lambda pp, mm, vv: pp - step_lr * (mm / bc1) / (jnp.sqrt(vv / bc2) + 1e-5), p, m, v)
        return p, m, v, count

    def train(key):
        key, k_init, k_reset = jax.random.split(key, 3)
        params = init(k_init)
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        obs, state = jax.vmap(env.reset, (0, None))(jax.random.split(k_reset, num_envs), env_params)
        ep_ret = jnp.zeros(num_envs)

        def update_step(carry, _):
            params, m, v, count, obs, state, ep_ret, key = carry

            def env_step(c, _):
                obs, state, ep_ret, key = c
                key, k_act, k_step = jax.random.split(key, 3)
                logits, value = apply(params, obs)
                action = jax.random.categorical(k_act, logits)
                logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], -1)[:, 0]
                obs2, state, reward, terminated, truncated, _ = jax.vmap(env.step, (0, 0, 0, None))(
                    jax.random.split(k_step, num_envs), state, action, env_params)
                done = jnp.logical_or(terminated, truncated).astype(jnp.float32)  # gymnax 1.0 splits done
                ret = ep_ret + reward
                finished = (done * ret).sum(), done.sum()
                return (obs2, state, ret * (1 - done), key), (obs, action, logp, value, reward, done, finished)

            (obs, state, ep_ret, key), traj = jax.lax.scan(env_step, (obs, state, ep_ret, key), None, num_steps)
            t_obs, t_act, t_logp, t_val, t_rew, t_done, (ret_sum, ep_count) = traj
            _, last_val = apply(params, obs)

            def gae_step(c, x):
                next_adv, next_val = c
                done, value, reward = x
                delta = reward + gamma * next_val * (1 - done) - value
                adv = delta + gamma * lam * (1 - done) * next_adv
                return (adv, value), adv

            _, adv = jax.lax.scan(gae_step, (jnp.zeros_like(last_val), last_val), (t_done, t_val, t_rew),
                                  reverse=True, unroll=16)
            targets = adv + t_val

            def epoch(c, _):
                params, m, v, count, key = c
                key, k_perm = jax.random.split(key)
                perm = jax.random.permutation(k_perm, num_envs * num_steps)
                flat = [x.reshape((num_envs * num_steps,) + x.shape[2:])[perm]
                        for x in (t_obs, t_act, t_logp, t_val, adv, targets)]
                batches = [x.reshape((num_minibatches, minibatch) + x.shape[1:]) for x in flat]

                def minibatch_step(c, mb):
                    params, m, v, count = c
                    grads = jax.grad(loss_fn)(params, *mb)
                    return adam(params, grads, m, v, count), None

                (params, m, v, count), _ = jax.lax.scan(minibatch_step, (params, m, v, count), batches)
                return (params, m, v, count, key), None

            (params, m, v, count, key), _ = jax.lax.scan(epoch, (params, m, v, count, key), None, update_epochs)
            mean_return = ret_sum.sum() / jnp.maximum(ep_count.sum(), 1)
            return (params, m, v, count, obs, state, ep_ret, key), mean_return

        carry = (params, zeros, zeros, jnp.zeros((), jnp.int32), obs, state, ep_ret, key)
        _, returns = jax.lax.scan(update_step, carry, None, num_updates)
        return returns

    return train, num_updates


def jax_ppo(num_envs: int, total_timesteps: int, num_steps: int = 128, lr: float = 2.5e-4) -> dict:
    import jax
    train, num_updates = make_jax_train(num_envs, num_steps, total_timesteps, lr=lr)
    t0 = time.perf_counter()
    compiled = jax.jit(train).lower(jax.random.PRNGKey(0)).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    returns = np.asarray(jax.block_until_ready(compiled(jax.random.PRNGKey(0))))
    run_s = time.perf_counter() - t0
    steps_per_update = num_envs * num_steps
    hits = np.nonzero(returns >= SOLVED)[0]
    solved = len(hits) > 0
    # Solve time: the run is one program, so the time to update k is k/num_updates of the run.
    solve_s = run_s * (hits[0] + 1) / num_updates if solved else run_s
    return {"num_envs": num_envs, "num_steps": num_steps, "lr": lr, "compile_s": round(compile_s, 3), "run_s": round(run_s, 4),
            "sps": round(num_updates * steps_per_update / run_s), "solved": solved, "train_s": round(solve_s, 4),
            "steps": int((hits[0] + 1) * steps_per_update) if solved else num_updates * steps_per_update,
            "final_return": float(returns[-1]), "jax": jax.__version__}


# ------------------------------------------------------------------------------------------------

def profile(overrides: dict, env: str = "cartpole") -> None:
    """Per-kernel GPU time of one steady-state rollout + update (torch.profiler's CUPTI trace sees PyCUDA and
    cuBLAS kernels too: they share the primary context)."""
    import torch
    from torch.profiler import ProfilerActivity
    config = fastvec_config(env, overrides)
    trainer, _ = fastvec_trainer(config)
    torch.zeros(1, device="cuda")
    for _ in range(3):
        trainer.rollout()
        trainer.update(1000)
    with torch.profiler.profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        trainer.rollout()
        trainer.update(1000)
    print(f"profile of one rollout + update, {overrides}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=60))
    trainer.close()


def plot(path: Path) -> Path:
    """Learning curves (mean episode return / score per update against training seconds) from the JSON."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    results = json.loads(path.read_text())["fastvec"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, res in results.items():
        if not name.startswith("solve-") or not res.get("curve"):
            continue
        t, ret = [c[1] for c in res["curve"]], [c[2] for c in res["curve"]]
        ax1.plot(t, ret, label=f"{name[6:]} ({res['train_s']:.2f} s)" if res["solved"] else f"{name[6:]} (not solved)")
    ax1.axhline(SOLVED, color="gray", ls="--", lw=0.8)
    ax1.set(title="CartPole, fastvec CUDA trainer (H200)", xlabel="training seconds", ylabel="mean episode return")
    ax1.legend(fontsize=6)
    learn = results.get("learn-breakout")
    if learn and learn.get("curve"):
        ax2.plot([c[0] / 1e6 for c in learn["curve"]], [c[2] for c in learn["curve"]])
        ax2.axhline(850, color="gray", ls="--", lw=0.8)
        ax2.set(title=f"Breakout, {learn['params']:,} params, {learn['sps'] / 1e6:.0f}M SPS", xlabel="million steps",
                ylabel="mean score")
    out = path.with_name("train_speed_curves.png")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


def scaling() -> None:
    """Steady-state Breakout SPS of MinGRU policies of about 15K, 115K, 620K and 3M parameters (8,192 envs x 64
    steps, minibatch 65,536, bf16, Muon as breakout.toml; the 115K one also with Adam), like PufferLib's
    SPS-versus-size plot."""
    from fastvec.trainer.cuda import device
    gpu = device.init().Context.get_device().name()
    rows = []
    for hidden, layers, optimizer in [(40, 2, "muon"), (128, 2, "muon"), (128, 2, "adam"), (256, 3, "muon"),
                                      (576, 3, "muon")]:
        for is_async in (False, True):  # async: the rollout overlaps the update (its own timing is launch-only)
            cfg = {"env.num_envs": 8192, "policy.hidden": hidden, "policy.layers": layers, "train.horizon": 64,
                   "train.bptt_horizon": 64, "train.minibatch_size": 65536, "train.precision": "bf16",
                   "train.async": is_async, "train.optimizer": optimizer}
            res = fastvec_sps(cfg, env="breakout", updates=10)
            res.update(hidden=hidden, layers=layers, is_async=is_async, optimizer=optimizer)
            rows.append(res)
            print(json.dumps(res), flush=True)
    print(f"\nBreakout SPS versus parameters on {gpu} (MinGRU, 8,192 envs x 64, minibatch 65,536, bf16)")
    print(f"{'hidden x layers':>16} {'params':>10} {'optimizer':>9} {'mode':>6} {'SPS':>14} {'rollout SPS':>14} "
          f"{'update SPS':>14}")
    for r in rows:
        mode = "async" if r["is_async"] else "sync"
        rollout = "-" if r["is_async"] else f"{r['rollout_sps']:,}"
        print(f"{r['hidden']:>8} x {r['layers']:<5} {r['params']:>10,} {r['optimizer']:>9} {mode:>6} {r['sps']:>14,} "
              f"{rollout:>14} {r['update_sps']:>14,}")
    path = ROOT / "benchmarks" / "results" / "train_speed_scaling.json"
    path.write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1))
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-jax", action="store_true")
    parser.add_argument("--breakout", action="store_true")
    parser.add_argument("--quick", action="store_true", help="fewer configurations (a smoke run)")
    parser.add_argument("--profile", action="store_true", help="per-kernel times of the CartPole configs, then exit")
    parser.add_argument("--plot", action="store_true", help="only draw the learning curves of the saved JSON")
    parser.add_argument("--scaling", action="store_true",
                        help="only Breakout SPS versus parameter count (~15K, 115K, 620K, 3M); writes train_speed_scaling.json")
    args = parser.parse_args()
    if args.scaling:
        return scaling()
    if args.plot:
        print(f"wrote {plot(ROOT / 'benchmarks' / 'results' / 'train_speed.json')}")
        return
    if args.profile:
        mlp = {"policy.kind": "mlp", "policy.hidden": 64, "policy.layers": 2}
        profile({**mlp, "env.num_envs": 1024, "train.horizon": 32, "train.bptt_horizon": 32,
                 "train.minibatch_size": 8192, "train.update_epochs": 2})
        profile({**mlp, "env.num_envs": 65536, "train.horizon": 16, "train.bptt_horizon": 16,
                 "train.minibatch_size": 262144, "train.update_epochs": 1})
        return
    from fastvec.trainer.cuda import device
    cuda = device.init()
    gpu = cuda.Context.get_device().name()
    out = {"gpu": gpu, "python": platform.python_version(), "fastvec": {}, "jax": {}}
    rows = []

    mlp = {"policy.kind": "mlp", "policy.hidden": 64, "policy.layers": 2}
    solve_cfgs = {
        "mingru-1k": {"env.num_envs": 1024, "train.horizon": 32, "train.bptt_horizon": 32,
                      "train.minibatch_size": 8192, "train.update_epochs": 2, "train.learning_rate": 0.01,
                      "train.total_timesteps": 5_000_000},
        "mlp-1k": {**mlp, "env.num_envs": 1024, "train.horizon": 32, "train.bptt_horizon": 32,
                   "train.minibatch_size": 8192, "train.update_epochs": 2, "train.learning_rate": 0.01,
                   "train.total_timesteps": 5_000_000},
        "mlp-1k-mb16k": {**mlp, "env.num_envs": 1024, "train.horizon": 32, "train.bptt_horizon": 32,
                         "train.minibatch_size": 16384, "train.update_epochs": 2, "train.learning_rate": 0.01,
                         "train.total_timesteps": 20_000_000},  # the best CartPole sweep config (median of 3 seeds)
        "mlp-4k": {**mlp, "env.num_envs": 4096, "train.horizon": 16, "train.bptt_horizon": 16,
                   "train.minibatch_size": 16384, "train.update_epochs": 2, "train.learning_rate": 0.01,
                   "train.total_timesteps": 10_000_000},
        "mlp-16k-fused": {**mlp, "env.num_envs": 16384, "train.horizon": 8, "train.bptt_horizon": 8,
                          "train.minibatch_size": 32768, "train.update_epochs": 2, "train.learning_rate": 0.01,
                          "train.total_timesteps": 20_000_000},
    }
    # A small sweep for the time-to-solve target: fewer gradient steps per update (larger minibatches,
    # one epoch) and higher learning rates.
    for envs, horizon, minibatch, epochs, lr in [(2048, 16, 16384, 1, 0.02), (4096, 16, 32768, 1, 0.02),
                                                 (4096, 16, 32768, 2, 0.02), (4096, 8, 32768, 1, 0.03),
                                                 (8192, 8, 32768, 1, 0.02), (2048, 32, 32768, 2, 0.02)]:
        solve_cfgs[f"mlp-{envs}x{horizon}-mb{minibatch}-e{epochs}-lr{lr}"] = {
            **mlp, "env.num_envs": envs, "train.horizon": horizon, "train.bptt_horizon": horizon,
            "train.minibatch_size": minibatch, "train.update_epochs": epochs, "train.learning_rate": lr,
            "train.total_timesteps": 20_000_000}
    if args.quick:
        solve_cfgs = dict(list(solve_cfgs.items())[:2])
    for name, cfg in solve_cfgs.items():
        res = fastvec_time_to_solve(cfg)
        out["fastvec"]["solve-" + name] = res
        rows.append((f"fastvec solve {name}", res["params"], res["sps"], res["solved"], res["train_s"], res["steps"],
                     res["startup_s"]))
        print(json.dumps({k: v for k, v in res.items() if k != "curve"}), flush=True)

    big = {"env.num_envs": 65536, "train.horizon": 16, "train.bptt_horizon": 16, "train.minibatch_size": 262144,
           "train.update_epochs": 1}
    sps_cfgs = {
        "mlp-4k": {**mlp, "env.num_envs": 4096, "train.horizon": 16, "train.bptt_horizon": 16,
                   "train.minibatch_size": 16384, "train.update_epochs": 1},
        "mlp-64k": {**mlp, **big},
        "mlp-64k-tf32": {**mlp, **big, "train.precision": "tf32"},
        "mlp-64k-bf16": {**mlp, **big, "train.precision": "bf16"},
        "mingru-64k": {**big, "policy.kind": "mingru"},
        "mingru-64k-bf16": {**big, "policy.kind": "mingru", "train.precision": "bf16"},
    }
    if args.quick:
        sps_cfgs = {k: sps_cfgs[k] for k in ["mlp-64k", "mlp-64k-bf16"]}
    for name, cfg in sps_cfgs.items():
        res = fastvec_sps(cfg)
        out["fastvec"]["sps-" + name] = res
        rows.append((f"fastvec {name} (steady)", res["params"], res["sps"], None, None, None, res["startup_s"]))
        print(json.dumps(res), flush=True)

    if args.breakout:
        for hidden, envs in [(32, 4096), (64, 8192), (128, 8192), (32, 16384), (64, 16384)]:
            cfg = {"env.num_envs": envs, "policy.hidden": hidden, "train.horizon": 64, "train.bptt_horizon": 64,
                   "train.minibatch_size": 65536, "train.precision": "bf16"}
            res = fastvec_sps(cfg, env="breakout", updates=5)
            out["fastvec"][f"sps-breakout-h{hidden}-x{envs}"] = res
            rows.append((f"fastvec breakout h{hidden} x{envs} bf16", res["params"], res["sps"], None, None, None,
                         res["startup_s"]))
            print(json.dumps(res), flush=True)
        cfg = {"env.num_envs": 8192, "policy.hidden": 64, "train.horizon": 64, "train.bptt_horizon": 64,
               "train.minibatch_size": 65536, "train.precision": "bf16", "train.total_timesteps": 150_000_000}
        res = fastvec_time_to_solve(cfg, max_seconds=15.0, env="breakout", target=850.0, key="score")
        out["fastvec"]["learn-breakout"] = res
        rows.append(("fastvec breakout learn (score>=850)", res["params"], res["sps"], res["solved"], res["train_s"],
                     res["steps"], res["startup_s"]))
        print(json.dumps(res), flush=True)

    if not args.skip_jax:
        try:
            # PureJaxRL's CartPole settings with num_envs raised; 1,024 envs take lr 3e-3 and 32 steps per
            # rollout (tuned here so it solves, about 1M steps); the others measure throughput.
            for envs, total, steps, lr in ([(1024, 3_000_000, 32, 3e-3)] if args.quick else
                                           [(1024, 3_000_000, 32, 3e-3), (4096, 8_388_608, 128, 2.5e-4),
                                            (65536, 134_217_728, 128, 2.5e-4)]):
                res = jax_ppo(envs, total, steps, lr)
                out["jax"][f"cartpole-{envs}"] = res
                rows.append((f"PureJaxRL-style JAX x{envs}", 9_155, res["sps"], res["solved"], res["train_s"],
                             res["steps"], res["compile_s"]))
                print(json.dumps(res), flush=True)
        except ImportError as err:
            out["jax"]["error"] = f"JAX/gymnax unavailable: {err}"
            print(out["jax"]["error"])

    print(f"\nCartPole training on {gpu}")
    print(f"{'run':<36} {'params':>8} {'SPS':>14} {'solved':>7} {'train s':>8} {'steps':>11} {'start/JIT s':>11}")
    for name, params, sps, solved, train_s, steps, start in rows:
        print(f"{name:<36} {params:>8,} {sps:>14,} {'' if solved is None else str(solved):>7} "
              f"{'' if train_s is None else f'{train_s:.3f}':>8} {'' if steps is None else f'{steps:,}':>11} "
              f"{start:>11.2f}")
    path = ROOT / "benchmarks" / "results" / "train_speed.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if args.skip_jax and path.exists():  # keep the JAX numbers of an earlier full run on the same machine
        earlier = json.loads(path.read_text()).get("jax", {})
        out["jax"] = {**earlier, "note": "from an earlier run of this script (--skip-jax this time)"} if earlier else {}
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
