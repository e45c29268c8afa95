"""A continuous-action env of your own (examples/continuous_env.h, Box(-1.0, 1.0, (2,), float32)) with
Gymnasium's vector API and Stable-Baselines3's PPO.

    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel, before SB3 pulls the CUDA one
    pip install stable-baselines3
    python examples/continuous_env.py --timesteps 50000
"""

import argparse
from pathlib import Path

import gymnasium
import numpy as np

import fastvec

ENV_FILE = Path(__file__).resolve().parent / "continuous_env.h"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=50_000, help="PPO's training steps (0: random actions only)")
    parser.add_argument("--num-envs", type=int, default=16)
    args = parser.parse_args()

    # The env file declares its spaces; the vector env's are what Gymnasium builds from them.
    envs = fastvec.make_vec_from_source(ENV_FILE, num_envs=args.num_envs, max_episode_steps=200,
                                        autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    print("actions:", envs.single_action_space, " observations:", envs.single_observation_space)
    envs.reset(seed=0)
    for _ in range(100):
        _, rewards, *_ = envs.step(envs.action_space.sample())  # float32 actions (N, 2)
    print("mean reward of random forces:", float(np.mean(rewards)))
    if args.timesteps:
        from stable_baselines3 import PPO

        from fastvec.wrappers.sb3 import FastvecVecEnv

        model = PPO("MlpPolicy", FastvecVecEnv(envs), n_steps=128, seed=0, device="cpu", verbose=1)
        model.learn(args.timesteps)


if __name__ == "__main__":
    main()
