"""PureJaxRL-style PPO on gymnax envs (the algorithm of purejaxrl's ppo.py and ppo_continuous_action.py, written
here in plain JAX): the peer that fastvec's training benchmarks run beside fastvec-train. The training loop runs
in jitted chunks of updates; each update's finished episodes come back as a return sum and a count, so the time
to a return threshold (fairness.py's window: the mean of the last K finished episodes) is measurable per update.
Compile and warm-up time are reported separately.

    python benchmarks/peers/purejaxrl_ppo.py Pendulum-v1 [--seeds 0 1 2] [--threshold -200] [--max-seconds 60]
    python benchmarks/peers/purejaxrl_ppo.py Breakout-MinAtar --threshold 30 --out results/peer_breakout.json

From Python: `run_peer(env_id, seeds, threshold=..., max_seconds=...)` returns the same dict the CLI writes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fairness import WINDOW_EPISODES, first_crossing  # noqa: E402

RESULTS = Path(__file__).resolve().parent.parent / "results"
WARMUP_CHUNKS = 2  # untimed executions of the compiled program before any timed run

# PureJaxRL's published settings per env family: ppo.py's config (CartPole) for the classic-control ids with
# Discrete actions; ppo_continuous_action.py's (its 256-wide tanh MLP, Adam without annealing, observation and
# reward normalisation, 2,048 envs x 10 steps) for Box actions; the MinAtar notebook's (examples/brax_minatar:
# ReLU, lr 5e-3 annealed, 64 envs x 128 steps, 8 minibatches) for the MinAtar ids. TOTAL_TIMESTEPS is the step
# budget: ppo.py's 5e5, the notebook's 1e7, and 5e6 for Pendulum (ppo_continuous_action's 5e7 is for Brax).
FAMILIES = {
    "classic": {"LR": 2.5e-4, "NUM_ENVS": 4, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 500_000, "UPDATE_EPOCHS": 4,
                "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01,
                "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "HIDDEN": 64, "ANNEAL_LR": True,
                "NORMALIZE_ENV": False},
    "continuous": {"LR": 3e-4, "NUM_ENVS": 2048, "NUM_STEPS": 10, "TOTAL_TIMESTEPS": 5_000_000, "UPDATE_EPOCHS": 4,
                   "NUM_MINIBATCHES": 32, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.0,
                   "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5, "ACTIVATION": "tanh", "HIDDEN": 256, "ANNEAL_LR": False,
                   "NORMALIZE_ENV": True},
    "minatar": {"LR": 5e-3, "NUM_ENVS": 64, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": 10_000_000, "UPDATE_EPOCHS": 4,
                "NUM_MINIBATCHES": 8, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01,
                "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5, "ACTIVATION": "relu", "HIDDEN": 64, "ANNEAL_LR": True,
                "NORMALIZE_ENV": False},
}


def flax_struct_shim() -> None:
    """gymnax needs only flax.struct.dataclass; where flax is not installed, provide that alone (as
    benchmarks/env_steps.py does)."""
    try:
        import flax.struct  # noqa: F401
        return
    except ImportError:
        pass
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from env_steps import _flax_struct_shim
    _flax_struct_shim()


def import_gymnax():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # fastvec may share the GPU in this process
    flax_struct_shim()
    import gymnax
    return gymnax


def family_of(env_id: str, env=None, env_params=None) -> str:
    if "MinAtar" in env_id:
        return "minatar"
    if env is not None and not hasattr(env.action_space(env_params), "n"):
        return "continuous"
    return "classic"


def parse_overrides(items) -> dict:
    """KEY=VALUE items (JSON values, else strings: ACTIVATION=relu) as {KEY: value}."""
    overrides = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value.lower() if value in ("True", "False") else value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


def published(family: str, overrides: dict | None = None) -> dict:
    """PureJaxRL's settings for a family, with overrides (upper-case keys, as PureJaxRL names them)."""
    config = dict(FAMILIES[family])
    for key, value in (overrides or {}).items():
        if key not in config:
            raise KeyError(f"unknown PureJaxRL setting {key!r}; known: {', '.join(sorted(config))}")
        config[key] = value
    return config


def budget_steps(config: dict, chunk_steps: int = 20_000) -> tuple[int, int, int]:
    """(steps per update, updates per chunk, updates) as Peer runs config: TOTAL_TIMESTEPS in whole chunks."""
    per_update = config["NUM_ENVS"] * config["NUM_STEPS"]
    chunk_updates = max(1, round(chunk_steps / per_update))
    wanted = max(1, config["TOTAL_TIMESTEPS"] // per_update)
    return per_update, chunk_updates, max(1, wanted // chunk_updates) * chunk_updates


def config_for(env_id: str, overrides: dict | None = None) -> dict:
    """PureJaxRL's settings for env_id's family, with overrides."""
    gymnax = import_gymnax()
    env, env_params = gymnax.make(env_id)
    return published(family_of(env_id, env, env_params), overrides)


def make_optimizer(config: dict, num_updates: int):
    """Global-norm clipping then Adam (eps 1e-5), with PureJaxRL's linear annealing per update: optax's, or the same
    few lines in JAX where optax is not installed. Returns (init(params), step(grads, opt_state, params))."""
    import jax
    import jax.numpy as jnp

    per_update = config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"]

    def learning_rate(count):
        if not config["ANNEAL_LR"]:
            return config["LR"]
        return config["LR"] * (1.0 - (count // per_update) / num_updates)

    try:
        import optax
        tx = optax.chain(optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
                         optax.adam(learning_rate=learning_rate, eps=1e-5))

        def step(grads, opt_state, params):
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        return tx.init, step
    except ImportError:
        pass

    def init(params):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return {"m": zeros, "v": zeros, "count": jnp.zeros((), jnp.int32)}

    def step(grads, opt_state, params):
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads)))
        scale = jnp.where(norm < config["MAX_GRAD_NORM"], 1.0, config["MAX_GRAD_NORM"] / norm)
        grads = jax.tree_util.tree_map(lambda g: g * scale, grads)
        count = opt_state["count"]
        lr = learning_rate(count)
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, opt_state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, opt_state["v"], grads)
        t = count + 1
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        params = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + 1e-5), params, m, v)
        return params, {"m": m, "v": v, "count": t}

    return init, step


class Peer:
    """One env's PPO program, compiled once and run for any number of seeds: init(key) -> state,
    chunk(state) -> (state, (return sums, episode counts) per update) for `chunk_updates` updates,
    evaluate(state, key) -> per-episode returns of `eval_episodes` parallel episodes."""

    def __init__(self, env_id: str, config: dict, chunk_steps: int = 20_000, eval_episodes: int = 1000):
        gymnax = import_gymnax()
        import jax
        import jax.numpy as jnp

        self.env_id, self.config = env_id, config
        env, env_params = gymnax.make(env_id)
        action_space = env.action_space(env_params)
        self.continuous = not hasattr(action_space, "n")
        obs_size = int(np.prod(env.observation_space(env_params).shape))
        n_out = int(np.prod(action_space.shape)) if self.continuous else int(action_space.n)
        low = jnp.asarray(action_space.low, jnp.float32) if self.continuous else None
        high = jnp.asarray(action_space.high, jnp.float32) if self.continuous else None
        num_envs, num_steps = config["NUM_ENVS"], config["NUM_STEPS"]
        # whole chunks: the annealed lr reaches 0 at the end
        self.steps_per_update, self.chunk_updates, self.num_updates = budget_steps(config, chunk_steps)
        self.num_chunks = self.num_updates // self.chunk_updates
        batch = self.steps_per_update
        minibatch = batch // config["NUM_MINIBATCHES"]
        gamma, lam, clip_eps = config["GAMMA"], config["GAE_LAMBDA"], config["CLIP_EPS"]
        act = jnp.tanh if config["ACTIVATION"] == "tanh" else jax.nn.relu
        hidden = config["HIDDEN"]
        normalize = config["NORMALIZE_ENV"]
        opt_init, opt_step = make_optimizer(config, self.num_updates)
        v_reset = jax.vmap(env.reset, in_axes=(0, None))
        v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
        log2pi = math.log(2 * math.pi)

        def dense(key, n_in, n_out, scale):
            return {"w": jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out)), "b": jnp.zeros(n_out)}

        def init_params(key):
            k = jax.random.split(key, 6)
            s2 = math.sqrt(2)
            params = {"actor": [dense(k[0], obs_size, hidden, s2), dense(k[1], hidden, hidden, s2),
                                dense(k[2], hidden, n_out, 0.01)],
                      "critic": [dense(k[3], obs_size, hidden, s2), dense(k[4], hidden, hidden, s2),
                                 dense(k[5], hidden, 1, 1.0)]}
            if self.continuous:
                params["log_std"] = jnp.zeros(n_out)
            return params

        def mlp(layers, x):
            for layer in layers[:-1]:
                x = act(x @ layer["w"] + layer["b"])
            return x @ layers[-1]["w"] + layers[-1]["b"]

        def policy(params, obs):
            """(actor output: logits or Gaussian mean, value)."""
            return mlp(params["actor"], obs), mlp(params["critic"], obs)[..., 0]

        def log_prob(params, out, action):
            if self.continuous:
                log_std = params["log_std"]
                z = (action - out) / jnp.exp(log_std)
                return jnp.sum(-0.5 * z * z - log_std - 0.5 * log2pi, axis=-1)
            return jnp.take_along_axis(jax.nn.log_softmax(out), action[..., None], -1)[..., 0]

        def entropy(params, out):
            if self.continuous:
                return jnp.sum(0.5 + 0.5 * log2pi + params["log_std"]) * jnp.ones(out.shape[:-1])
            logp = jax.nn.log_softmax(out)
            return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

        def sample(params, out, key):
            if self.continuous:
                return out + jnp.exp(params["log_std"]) * jax.random.normal(key, out.shape)
            return jax.random.categorical(key, out)

        def running_moments(mean, var, count, batch_values):
            """Welford's parallel update of a running mean/variance by one batch (PureJaxRL's normalising wrappers)."""
            b_mean, b_var, b_count = batch_values.mean(0), batch_values.var(0), batch_values.shape[0]
            delta = b_mean - mean
            total = count + b_count
            new_mean = mean + delta * b_count / total
            m2 = var * count + b_var * b_count + delta * delta * count * b_count / total
            return new_mean, m2 / total, total

        def observe(norm, raw_obs):
            """The policy's observation: flattened, float, and (normalised envs) standardised by the running stats,
            which are first updated with this batch as NormalizeVecObservation does."""
            obs = raw_obs.reshape((raw_obs.shape[0], -1)).astype(jnp.float32)
            if not normalize:
                return norm, obs
            mean, var, count = running_moments(norm["obs_mean"], norm["obs_var"], norm["obs_count"], obs)
            norm = {**norm, "obs_mean": mean, "obs_var": var, "obs_count": count}
            return norm, (obs - mean) / jnp.sqrt(var + 1e-8)

        def scale_reward(norm, reward, done):
            """NormalizeVecReward: the reward divided by the running std of the discounted return."""
            if not normalize:
                return norm, reward
            ret = norm["ret"] * gamma * (1 - done) + reward
            mean, var, count = running_moments(norm["rew_mean"], norm["rew_var"], norm["rew_count"], ret)
            norm = {**norm, "ret": ret, "rew_mean": mean, "rew_var": var, "rew_count": count}
            return norm, reward / jnp.sqrt(var + 1e-8)

        def init(key):
            key, k_params, k_reset = jax.random.split(key, 3)
            params = init_params(k_params)
            raw_obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)
            norm = {"obs_mean": jnp.zeros(obs_size), "obs_var": jnp.ones(obs_size), "obs_count": jnp.asarray(1e-4),
                    "rew_mean": jnp.asarray(0.0), "rew_var": jnp.asarray(1.0), "rew_count": jnp.asarray(1e-4),
                    "ret": jnp.zeros(num_envs)}
            norm, obs = observe(norm, raw_obs)
            return {"params": params, "opt": opt_init(params), "env": env_state, "obs": obs, "norm": norm,
                    "ep_return": jnp.zeros(num_envs), "key": key}

        def loss_fn(params, mb):
            out, value = policy(params, mb["obs"])
            logp = log_prob(params, out, mb["action"])
            v_clipped = mb["value"] + jnp.clip(value - mb["value"], -clip_eps, clip_eps)
            v_loss = 0.5 * jnp.maximum((value - mb["target"]) ** 2, (v_clipped - mb["target"]) ** 2).mean()
            ratio = jnp.exp(logp - mb["logp"])
            adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
            pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv).mean()
            return pg + config["VF_COEF"] * v_loss - config["ENT_COEF"] * entropy(params, out).mean()

        def update(state, _):
            params = state["params"]

            def env_step(carry, _):
                env_state, obs, norm, ep_return, key = carry
                key, k_act, k_step = jax.random.split(key, 3)
                out, value = policy(params, obs)
                action = sample(params, out, k_act)
                env_action = jnp.clip(action, low, high) if self.continuous else action
                raw_obs, env_state, reward, terminated, truncated, _ = v_step(
                    jax.random.split(k_step, num_envs), env_state, env_action, env_params)
                done = jnp.logical_or(terminated, truncated).astype(jnp.float32)
                finished = ep_return + reward  # the raw return, as PureJaxRL's LogWrapper records it
                norm, next_obs = observe(norm, raw_obs)
                norm, train_reward = scale_reward(norm, reward, done)
                record = {"obs": obs, "action": action, "logp": log_prob(params, out, action), "value": value,
                          "reward": train_reward, "done": done,
                          "return_sum": (done * finished).sum(), "episodes": done.sum()}
                return (env_state, next_obs, norm, finished * (1 - done), key), record

            carry = (state["env"], state["obs"], state["norm"], state["ep_return"], state["key"])
            (env_state, obs, norm, ep_return, key), traj = jax.lax.scan(env_step, carry, None, num_steps)
            _, last_value = policy(params, obs)

            def gae_step(carry, t):
                gae, next_value = carry
                delta = t["reward"] + gamma * next_value * (1 - t["done"]) - t["value"]
                gae = delta + gamma * lam * (1 - t["done"]) * gae
                return (gae, t["value"]), gae

            _, adv = jax.lax.scan(gae_step, (jnp.zeros_like(last_value), last_value),
                                  {k: traj[k] for k in ("reward", "done", "value")}, reverse=True, unroll=16)
            data = {k: traj[k] for k in ("obs", "action", "logp", "value")}
            data.update(adv=adv, target=adv + traj["value"])
            data = {k: v.reshape((batch,) + v.shape[2:]) for k, v in data.items()}

            def epoch(carry, _):
                params, opt_state, key = carry
                key, k_perm = jax.random.split(key)
                perm = jax.random.permutation(k_perm, batch)
                minibatches = {k: jnp.take(v, perm, axis=0).reshape((config["NUM_MINIBATCHES"], minibatch) + v.shape[1:])
                               for k, v in data.items()}

                def minibatch_step(carry, mb):
                    params, opt_state = carry
                    grads = jax.grad(loss_fn)(params, mb)
                    return opt_step(grads, opt_state, params), None

                (params, opt_state), _ = jax.lax.scan(minibatch_step, (params, opt_state), minibatches)
                return (params, opt_state, key), None

            (params, opt_state, key), _ = jax.lax.scan(epoch, (params, state["opt"], key), None,
                                                       config["UPDATE_EPOCHS"])
            state = {"params": params, "opt": opt_state, "env": env_state, "obs": obs, "norm": norm,
                     "ep_return": ep_return, "key": key}
            return state, (traj["return_sum"].sum(), traj["episodes"].sum())

        def chunk(state):
            return jax.lax.scan(update, state, None, self.chunk_updates)

        max_steps = int(getattr(env_params, "max_steps_in_episode", 10_000))

        def evaluate(state, key):
            """Returns of eval_episodes episodes played in parallel by the trained policy (sampled actions), the
            observation statistics frozen at their trained values; each env's first episode counts."""
            norm = state["norm"]
            key, k_reset = jax.random.split(key)
            raw_obs, env_state = v_reset(jax.random.split(k_reset, eval_episodes), env_params)

            def frozen_obs(raw):
                obs = raw.reshape((raw.shape[0], -1)).astype(jnp.float32)
                return (obs - norm["obs_mean"]) / jnp.sqrt(norm["obs_var"] + 1e-8) if normalize else obs

            def cond(c):
                return jnp.logical_and(~jnp.all(c[3]), c[5] <= max_steps)

            def body(c):
                env_state, obs, returns, finished, key, t = c
                key, k_act, k_step = jax.random.split(key, 3)
                out, _ = policy(state["params"], obs)
                action = sample(state["params"], out, k_act)
                action = jnp.clip(action, low, high) if self.continuous else action
                raw, env_state, reward, terminated, truncated, _ = v_step(
                    jax.random.split(k_step, eval_episodes), env_state, action, env_params)
                returns = returns + reward * (~finished)
                finished = finished | terminated | truncated
                return env_state, frozen_obs(raw), returns, finished, key, t + 1

            carry = (env_state, frozen_obs(raw_obs), jnp.zeros(eval_episodes), jnp.zeros(eval_episodes, bool), key, 0)
            _, _, returns, finished, _, _ = jax.lax.while_loop(cond, body, carry)
            return returns, finished

        t0 = time.perf_counter()
        key = jax.random.PRNGKey(0)
        self.init = jax.jit(init).lower(key).compile()
        self.chunk = jax.jit(chunk, donate_argnums=0).lower(self.init(key)).compile()
        # --eval-episodes 0: nothing to evaluate (a batch of 0 envs does not trace)
        self.evaluate = jax.jit(evaluate).lower(self.init(key), key).compile() if eval_episodes else None
        self.compile_s = time.perf_counter() - t0
        self.jax = jax
        self.warmup_s = None

    def warm_up(self, chunks: int = WARMUP_CHUNKS) -> float:
        """Run the compiled program `chunks` times untimed (first-execution costs stay out of every timed run)."""
        t0 = time.perf_counter()
        state = self.init(self.jax.random.PRNGKey(0))
        for _ in range(chunks):
            state, out = self.chunk(state)
            np.asarray(out[1])
        self.warmup_s = time.perf_counter() - t0
        return self.warmup_s

    def train(self, seed: int, threshold: float | None = None, max_seconds: float | None = None,
              stop_at_threshold: bool = False, eval_episodes: bool = True, window: int = WINDOW_EPISODES,
              on_update=None) -> dict:
        """One seed's run over the whole step budget (max_seconds: a safety cap; a run it stops is marked capped).
        groups: (steps, seconds, mean return, episodes) of every update that finished episodes, its seconds
        interpolated inside its chunk (the host sees a chunk at once); the threshold is crossed when the last
        `window` episodes average >= it. on_update(steps, seconds, mean or None, episodes) -> stop, per update
        after its chunk (its own time is not training time). Then the trained policy's evaluation."""
        jax = self.jax
        groups = []
        t0 = time.perf_counter()
        paused, before, updates, stop, capped = 0.0, 0.0, 0, False, False
        state = self.init(jax.random.PRNGKey(seed))
        for _ in range(self.num_chunks):
            state, (return_sums, counts) = self.chunk(state)
            return_sums, counts = np.asarray(return_sums), np.asarray(counts)  # waits for the chunk
            now = time.perf_counter() - t0 - paused
            for j in range(self.chunk_updates):
                seconds = before + (now - before) * (j + 1) / self.chunk_updates
                steps = (updates + j + 1) * self.steps_per_update
                count = int(counts[j])
                mean = float(return_sums[j] / count) if count else None
                if count:
                    groups.append((steps, round(seconds, 4), round(mean, 3), count))
                if on_update is not None and not stop:
                    called = time.perf_counter()
                    stop = bool(on_update(steps, seconds, mean, count))
                    paused += time.perf_counter() - called
            updates += self.chunk_updates
            before = now
            if stop or (stop_at_threshold and threshold is not None and first_crossing(groups, threshold, window)):
                break
            if max_seconds is not None and now >= max_seconds:
                capped = updates < self.num_updates
                break
        train_s = time.perf_counter() - t0 - paused
        steps = updates * self.steps_per_update
        hit = first_crossing(groups, threshold, window) if threshold is not None else None
        result = {"seed": seed, "threshold": threshold, "window": window, "reached": hit is not None,
                  "time_to_threshold_s": round(hit[0], 4) if hit else None,
                  "steps_to_threshold": hit[1] if hit else None,
                  "train_s": round(train_s, 4), "steps": steps,
                  "budget_steps": self.num_updates * self.steps_per_update,
                  "capped": capped, "sps": round(steps / train_s), "groups": groups}
        if eval_episodes and self.evaluate is not None:
            t1 = time.perf_counter()
            returns, finished = self.evaluate(state, jax.random.PRNGKey(seed + 1_000_003))
            returns, finished = np.asarray(returns), np.asarray(finished)
            result.update(eval_return=round(float(returns.mean()), 3), eval_return_std=round(float(returns.std()), 3),
                          eval_episodes=int(finished.sum()), eval_s=round(time.perf_counter() - t1, 3))
        return result


def run_peer(env_id: str, seeds=(0,), threshold: float | None = None, max_seconds: float | None = None,
             overrides: dict | None = None, chunk_steps: int = 20_000, eval_episodes: int = 1000,
             stop_at_threshold: bool = False, window: int = WINDOW_EPISODES) -> dict:
    """Compile env_id's PPO program once (PureJaxRL's settings for its family, with overrides), warm it up, and
    train it for each seed; returns {"env_id", "config", "compile_s", "warmup_s", "runs": [per-seed results], ...}."""
    config = config_for(env_id, overrides)
    peer = Peer(env_id, config, chunk_steps, eval_episodes)
    peer.warm_up()
    runs = []
    for seed in seeds:
        res = peer.train(seed, threshold, max_seconds, stop_at_threshold, eval_episodes > 0, window)
        runs.append(res)
        print(json.dumps({k: v for k, v in res.items() if k != "groups"}), file=sys.stderr, flush=True)
    jax = peer.jax
    family = "minatar" if "MinAtar" in env_id else "continuous" if peer.continuous else "classic"
    return {"env_id": env_id, "family": family, "config": config,
            "num_updates": peer.num_updates, "chunk_updates": peer.chunk_updates, "compile_s": round(peer.compile_s, 3),
            "warmup_s": round(peer.warmup_s, 3), "window": window, "runs": runs, "jax": jax.__version__,
            "device": str(jax.devices()[0]),
            "optimizer": "optax" if _has_optax() else "adam in jax (optax not installed)"}


def _has_optax() -> bool:
    try:
        import optax  # noqa: F401
        return True
    except ImportError:
        return False


def print_table(result: dict) -> None:
    print(f"\nPureJaxRL-style PPO on gymnax {result['env_id']} ({result['device']}, compile {result['compile_s']:.1f} s)")
    print(f"{'seed':>5} {'reached':>8} {'time to thr s':>14} {'steps to thr':>13} {'train s':>8} {'steps':>11} "
          f"{'SPS':>11} {'capped':>7} {'eval ret':>10}")
    for r in result["runs"]:
        def fmt(x, spec):
            return format("-", ">" + spec.split(".")[0].rstrip(",d")) if x is None else format(x, spec)
        print(f"{r['seed']:>5} {r['reached']!s:>8} {fmt(r['time_to_threshold_s'], '14.2f')} "
              f"{fmt(r['steps_to_threshold'], '13,d')} {r['train_s']:>8.2f} {r['steps']:>11,} {r['sps']:>11,} "
              f"{r['capped']!s:>7} {fmt(r.get('eval_return'), '10.1f')}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_id", help="a gymnax id: Pendulum-v1, Acrobot-v1, MountainCar-v0, Breakout-MinAtar, ...")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threshold", type=float, default=None, help="the mean return whose first time is measured")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="a safety cap: stop a run after this many training seconds (marked capped)")
    parser.add_argument("--window", type=int, default=WINDOW_EPISODES,
                        help="K: the threshold is crossed when the last K finished episodes average >= it")
    parser.add_argument("--stop-at-threshold", action="store_true")
    parser.add_argument("--total-timesteps", type=int, default=None, help="the step budget (default: the family's)")
    parser.add_argument("--chunk-steps", type=int, default=20_000, help="env steps between host checks")
    parser.add_argument("--eval-episodes", type=int, default=1000, help="0: no evaluation")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override PureJaxRL settings, e.g. NUM_ENVS=1024 LR=1e-3")
    parser.add_argument("--out", default="", help="JSON path (default results/purejaxrl_<env_id>.json)")
    args = parser.parse_args(argv)
    overrides = parse_overrides(args.set)
    if args.total_timesteps:
        overrides["TOTAL_TIMESTEPS"] = args.total_timesteps
    result = run_peer(args.env_id, args.seeds, args.threshold, args.max_seconds, overrides, args.chunk_steps,
                      args.eval_episodes, args.stop_at_threshold, args.window)
    result.update(python=platform.python_version(), machine=platform.platform())
    print_table(result)
    out = Path(args.out) if args.out else RESULTS / f"purejaxrl_{args.env_id.lower()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
