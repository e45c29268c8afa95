"""RLlib's multi-agent PPO (new API stack) on fastvec's team games, through RLlib's own ParallelPettingZooEnv: MPE's
simple_spread, or a SMAX battle (smax:3m) whose allies are the agents against jaxmarl's heuristic enemy.

    python examples/rllib_multi_agent.py [--env simple_spread | smax:3m] [--policies shared|per-agent] [--iterations 15]

--policies shared trains one policy that every agent plays; per-agent trains one policy for each agent. Needs
`pip install torch --index-url https://download.pytorch.org/whl/cpu` (the CPU wheel is enough) and
`pip install "ray[rllib]"` (Ray 2.60 pins gymnasium 1.2.2; fastvec runs on it; docs/teams.md). Prints the mean
episode return (summed over the agents; SMAX also the allies' win rate) per iteration and exits 0 when the last
iteration's return is above the first's, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time

ENV_NAME = "fastvec-teams"


def make_env(env_config: dict):
    """One game (a PettingZoo ParallelEnv) as RLlib's MultiAgentEnv. Every Ray env runner calls this itself, so the
    imports are here. env_config: "name" (an MPE scenario, or smax:SCENARIO) and the game's keywords (MPE: mpe2's
    N, local_ratio, max_cycles, ...; SMAX: enemy, max_steps)."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    kwargs = dict(env_config)
    name = kwargs.pop("name")
    if name.startswith("smax:"):
        from fastvec.wrappers.smax import parallel_env as smax_game

        return ParallelPettingZooEnv(smax_game(name.removeprefix("smax:"), **kwargs))
    from fastvec.wrappers.mpe import parallel_env as mpe_game

    return ParallelPettingZooEnv(mpe_game(name, **kwargs))


def log_win(*, episode, metrics_logger, **kwargs):
    """RLlib callback at each episode's end: SMAX's allies_won (1 or 0; a truncated battle is neither), from the
    last step's infos, logged as env_runners/allies_won (its mean over recent episodes)."""
    infos = episode.get_infos(-1)
    won = [info["allies_won"] for info in infos.values() if "allies_won" in info]
    if won:
        metrics_logger.log_value("allies_won", float(won[0]))


def policy_setup(kind: str, agents: list[str]):
    """RLlib's (policies, policy_mapping_fn): "shared", one policy every agent plays (its batch holds all agents'
    steps), or "per-agent", a policy named after each agent."""
    if kind == "shared":
        return {"shared"}, lambda agent_id, episode, **kwargs: "shared"
    return set(agents), lambda agent_id, episode, **kwargs: agent_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="simple_spread", help="an MPE scenario, or smax:SCENARIO (e.g. smax:3m)")
    parser.add_argument("--policies", choices=("shared", "per-agent"), default="shared")
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--num-envs", type=int, default=8, help="games per env runner (RLlib's sync vector env)")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import ray
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations
    from ray.tune.registry import register_env

    # 1. The env: registered by name, built by make_env on every env runner
    env_config = {"name": args.env}
    register_env(ENV_NAME, make_env)
    probe = make_env(env_config)
    agents = probe.par_env.possible_agents  # simple_spread: agent_0..2; smax:3m: ally_0..2 (the enemies are scripted)
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
    if args.env.startswith("smax:"):
        # A SMAX agent's observation is PettingZoo's {"observation": ..., "action_mask": ...}: flattened into one
        # vector for the MLP, the mask an input (not a filter: an unavailable action is jaxmarl's no-op)
        config = (config.env_runners(env_to_module_connector=lambda env, spaces, device: FlattenObservations(
            multi_agent=True)).callbacks(on_episode_end=log_win))
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
        per_module = {m: round(float(r), 2) for m, r in sorted(runners["module_episode_returns_mean"].items())}
        won = f"  allies won {runners['allies_won']:.2f}" if "allies_won" in runners else ""
        print(f"iteration {iteration:3d}  env steps {int(runners['num_env_steps_sampled_lifetime']):6d}  "
              f"mean return {returns[-1]:7.2f}  per policy {per_module}{won}  {time.perf_counter() - start:6.1f} s",
              flush=True)
    algo.stop()
    ray.shutdown()
    print(f"mean return {returns[0]:.2f} -> {returns[-1]:.2f} in {args.iterations} iterations, "
          f"{time.perf_counter() - start:.1f} s")
    return 0 if returns[-1] > returns[0] else 1


if __name__ == "__main__":
    sys.exit(main())
