"""Stable-Baselines3's PPO on fastvec CartPole through `fastvec.wrappers.sb3.FastvecVecEnv`:
the only change from an SB3 script is the env line (no DummyVecEnv, no Monitor, no VecMonitor).

    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel, before SB3 pulls the CUDA one
    pip install stable-baselines3
    python examples/sb3_cartpole.py --timesteps 30000
"""

import argparse
import time

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy

from fastvec.wrappers.sb3 import FastvecVecEnv


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=50_000, help="training steps (all envs together)")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", default="", help="where to save the trained model (a .zip), if anywhere")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a 64x64 MLP is fastest on one thread

    # The one-line switch: SB3's make_vec_env("CartPole-v1", n_envs=8) becomes
    envs = FastvecVecEnv("fastvec/CartPole", num_envs=args.num_envs)
    envs.seed(args.seed)

    # rl-zoo's tuned CartPole-v1 hyperparameters (constant schedules)
    model = PPO("MlpPolicy", envs, n_steps=32, batch_size=256, n_epochs=20, learning_rate=1e-3, gamma=0.98,
                gae_lambda=0.8, ent_coef=0.0, seed=args.seed, device="cpu", verbose=1)
    start = time.time()
    model.learn(args.timesteps)
    print(f"trained {args.timesteps} steps in {time.time() - start:.1f} s")

    evaluation = FastvecVecEnv("fastvec/CartPole", num_envs=8)
    evaluation.seed(args.seed + 1000)
    returns, _ = evaluate_policy(model, evaluation, n_eval_episodes=32, deterministic=True, return_episode_rewards=True,
                                 warn=False)
    print(f"evaluation: mean return {np.mean(returns):.1f} +- {np.std(returns):.1f} over {len(returns)} episodes")
    if args.save:
        model.save(args.save)


if __name__ == "__main__":
    main()
