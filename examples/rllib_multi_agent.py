"""RLlib's multi-agent PPO (new API stack) on fastvec's MPE simple_spread, through RLlib's own ParallelPettingZooEnv.

    python examples/rllib_multi_agent.py [--policies shared|per-agent] [--iterations 15] [--num-envs 8]

--policies shared trains one policy that every agent plays; per-agent trains one policy for each agent. Needs
`pip install torch --index-url https://download.pytorch.org/whl/cpu` (the CPU wheel is enough) and
`pip install "ray[rllib]"` (Ray 2.60 pins gymnasium 1.2.2; fastvec runs on it; docs/teams.md). Prints the mean
episode return (summed over the agents) per iteration and exits 0 when the last iteration's is above the first's,
1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time

ENV_NAME = "fastvec-simple_spread"


def make_env(env_config: dict):
    """One simple_spread game (a PettingZoo ParallelEnv) as RLlib's MultiAgentEnv. Every Ray env runner calls this
    itself, so the imports are here: env_config's entries are mpe2's keywords (N, local_ratio, max_cycles, ...)."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    from fastvec.wrappers.mpe import parallel_env

    return ParallelPettingZooEnv(parallel_env("simple_spread", **env_config))


def policy_setup(kind: str, agents: list[str]):
    """RLlib's (policies, policy_mapping_fn): "shared", one policy every agent plays (its batch holds all agents'
    steps), or "per-agent", a policy named after each agent."""
    if kind == "shared":
        return {"shared"}, lambda agent_id, episode, **kwargs: "shared"
    return set(agents), lambda agent_id, episode, **kwargs: agent_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policies", choices=("shared", "per-agent"), default="shared")
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--num-envs", type=int, default=8, help="games per env runner (RLlib's sync vector env)")
    parser.add_argument("--agents", type=int, default=3, help="simple_spread's N")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    # 1. The env: registered by name, built by make_env on every env runner
    env_config = {"N": args.agents, "max_cycles": 25}
    register_env(ENV_NAME, make_env)
    probe = make_env(env_config)
    agents = probe.par_env.possible_agents  # ["agent_0", "agent_1", "agent_2"]
    probe.close()

    # 2. Which policy plays which agent
    policies, policy_mapping_fn = policy_setup(args.policies, agents)

    # 3. PPO, one local env runner stepping num_envs games
    config = (
        PPOConfig()
        .environment(ENV_NAME, env_config=env_config)
        .multi_agent(policies=policies, policy_mapping_fn=policy_mapping_fn)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=args.num_envs)
        .training(lr=args.lr, train_batch_size_per_learner=2000, minibatch_size=250, num_epochs=5)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=args.seed)
    )
    torch.set_num_threads(1)  # a 64-wide MLP runs fastest on one thread; more thrash on a busy machine
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo = config.build_algo()

    # 4. Train, printing the mean episode return (all agents' rewards summed) per iteration
    start = time.perf_counter()
    returns = []
    for iteration in range(1, args.iterations + 1):
        result = algo.train()
        runners = result["env_runners"]
        returns.append(runners["episode_return_mean"])
        per_module = {m: round(float(r), 1) for m, r in sorted(runners["module_episode_returns_mean"].items())}
        print(f"iteration {iteration:3d}  env steps {int(runners['num_env_steps_sampled_lifetime']):6d}  "
              f"mean return {returns[-1]:7.2f}  per policy {per_module}  {time.perf_counter() - start:6.1f} s",
              flush=True)
    algo.stop()
    ray.shutdown()
    print(f"mean return {returns[0]:.2f} -> {returns[-1]:.2f} in {args.iterations} iterations, "
          f"{time.perf_counter() - start:.1f} s")
    return 0 if returns[-1] > returns[0] else 1


if __name__ == "__main__":
    sys.exit(main())
