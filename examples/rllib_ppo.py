"""RLlib's PPO (new API stack) on fastvec/CartPole: configuration only, no fastvec code in the loop.

    python examples/rllib_ppo.py [--num-envs 64] [--target 475] [--max-iterations 60]

Needs `pip install torch --index-url https://download.pytorch.org/whl/cpu` (the CPU wheel is enough) and
`pip install "ray[rllib]"` (Ray 2.60 pins gymnasium 1.2.2; fastvec runs on it). Prints the mean episode
return per iteration and exits 0 once it reaches --target, 1 if it never does.
"""

from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=64, help="envs per env runner (one fastvec batch)")
    parser.add_argument("--target", type=float, default=475.0)
    parser.add_argument("--max-iterations", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("fastvec:fastvec/CartPole")  # "fastvec:" makes every Ray worker import fastvec itself
        .env_runners(num_env_runners=0, num_envs_per_env_runner=args.num_envs,
                     gym_env_vectorize_mode="vector_entry_point")  # one fastvec batch, not SyncVectorEnv
        .training(lr=3e-4, train_batch_size_per_learner=4000, minibatch_size=256, num_epochs=10)
        .debugging(seed=args.seed)
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo = config.build_algo()
    start = time.perf_counter()
    for iteration in range(1, args.max_iterations + 1):
        result = algo.train()
        mean_return = result["env_runners"].get("episode_return_mean", float("nan"))
        steps = result.get("num_env_steps_sampled_lifetime") or result["env_runners"].get("num_env_steps_sampled_lifetime")
        print(f"iteration {iteration:3d}  env steps {steps}  mean return {mean_return:7.1f}  "
              f"{time.perf_counter() - start:6.1f} s", flush=True)
        if mean_return >= args.target:
            print(f"reached {args.target} after {iteration} iterations, {time.perf_counter() - start:.1f} s")
            algo.stop()
            return 0
    algo.stop()
    return 1


if __name__ == "__main__":
    sys.exit(main())
