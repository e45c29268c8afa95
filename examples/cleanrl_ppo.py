"""CleanRL's PPO (cleanrl/ppo.py) on a fastvec env, changed only where needed; the diff is listed
and explained in docs/migration.md ("CleanRL"). CleanRL: https://github.com/vwxyzjn/cleanrl (MIT License).

    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel (GBs less)
    pip install torch                  # instead, for --device cuda: the CUDA build
    python examples/cleanrl_ppo.py --env-id fastvec/CartPole                  # CPU, NumPy arrays
    python examples/cleanrl_ppo.py --env-id fastvec/CartPole --device cuda    # GPU env, torch tensors, zero-copy
    python examples/cleanrl_ppo.py --env-id CartPole-v1 --vectorization-mode sync  # CleanRL's own setup
"""

import argparse
import dataclasses
import json
import random
import time
from collections import deque
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from gymnasium.vector import AutoresetMode
from torch.distributions.categorical import Categorical

import fastvec  # noqa: F401  (registers the fastvec/... ids)


@dataclass
class Args:
    exp_name: str = "cleanrl_ppo"
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=False`"""
    device: str = "cpu"
    """fastvec: where the policy runs, and for a fastvec env where the env runs: cpu, cuda, cuda:N"""
    tensorboard: bool = True
    """log to runs/ with TensorBoard when it is installed"""

    # Algorithm specific arguments
    env_id: str = "fastvec/CartPole"
    """the id of the environment"""
    vectorization_mode: str = ""
    """fastvec: gymnasium.make_vec's mode ("" = the id's default; "sync" = CleanRL's SyncVectorEnv)"""
    total_timesteps: int = 500000
    """total timesteps of the experiments"""
    learning_rate: float = 2.5e-4
    """the learning rate of the optimizer"""
    num_envs: int = 4
    """the number of parallel game environments"""
    num_steps: int = 128
    """the number of steps to run in each environment per policy rollout"""
    anneal_lr: bool = True
    """Toggle learning rate annealing for policy and value networks"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 4
    """the number of mini-batches"""
    update_epochs: int = 4
    """the K epochs to update the policy"""
    norm_adv: bool = True
    """Toggles advantages normalization"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = True
    """Toggles whether or not to use a clipped loss for the value function, as per the paper."""
    ent_coef: float = 0.01
    """coefficient of the entropy"""
    vf_coef: float = 0.5
    """coefficient of the value function"""
    max_grad_norm: float = 0.5
    """the maximum norm for the gradient clipping"""
    target_kl: float | None = None
    """the target KL divergence threshold"""
    target_return: float | None = None
    """fastvec (benchmarks): stop once the mean of the last `return_window` episodic returns reaches this"""
    return_window: int = 20
    """fastvec (benchmarks): how many recent episodes `target_return` averages"""

    # to be filled in runtime
    batch_size: int = 0
    """the batch size (computed in runtime)"""
    minibatch_size: int = 0
    """the mini-batch size (computed in runtime)"""
    num_iterations: int = 0
    """the number of iterations (computed in runtime)"""


RUNTIME_FIELDS = {"batch_size", "minibatch_size", "num_iterations"}


def parse_args() -> Args:
    # CleanRL uses tyro.cli(Args); this is the same command line with argparse only.
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for field in dataclasses.fields(Args):
        if field.name in RUNTIME_FIELDS:
            continue
        flag = "--" + field.name.replace("_", "-")
        if field.type is bool:
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), nargs="?", const=True,
                                default=field.default)
        elif field.type in (float, float | None):
            parser.add_argument(flag, type=float, default=field.default)
        elif field.type is int:
            parser.add_argument(flag, type=int, default=field.default)
        else:
            parser.add_argument(flag, type=str, default=field.default)
    return Args(**vars(parser.parse_args()))


def make_envs(args: Args, device: torch.device):
    """The one real change from CleanRL: one `make_vec` call instead of SyncVectorEnv over
    single-env thunks, with same-step autoreset (CleanRL's `next_done` bookkeeping assumes the
    next obs is a reset obs) and the vector RecordEpisodeStatistics."""
    kwargs = {}
    if args.vectorization_mode:
        kwargs["vectorization_mode"] = args.vectorization_mode
    fastvec_env = args.env_id.split(":")[-1].startswith("fastvec/")
    if fastvec_env and device.type == "cuda":
        # Env on the GPU, observations/rewards/dones as torch tensors that alias the env's buffers.
        from fastvec.wrappers.torch import TorchVectorEnv

        envs = gym.make_vec(args.env_id, num_envs=args.num_envs, device=str(device), array_type="device",
                            autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        return TorchVectorEnv(envs), True
    if fastvec_env and args.vectorization_mode in ("", "vector_entry_point"):
        envs = gym.make_vec(args.env_id, num_envs=args.num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    else:  # Gymnasium envs (and fastvec single envs under sync/async) take the mode as vector_kwargs
        envs = gym.make_vec(args.env_id, num_envs=args.num_envs,
                            vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **kwargs)
    return gym.wrappers.vector.RecordEpisodeStatistics(envs), False


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(np.array(envs.single_observation_space.shape).prod(), 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(np.array(envs.single_observation_space.shape).prod(), 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, envs.single_action_space.n), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


if __name__ == "__main__":
    args = parse_args()
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = args.total_timesteps // args.batch_size
    run_name = f"{args.env_id.replace('/', '_')}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = None
    if args.tensorboard:
        try:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(f"runs/{run_name}")
            writer.add_text("hyperparameters", "|param|value|\n|-|-|\n%s" % (
                "\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])))
        except ImportError:  # fastvec: TensorBoard is optional here
            pass

    def log_scalar(name, value, step):
        if writer is not None:
            writer.add_scalar(name, value, step)

    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic

    device = torch.device(args.device)

    # env setup
    envs, env_on_device = make_envs(args, device)
    assert isinstance(envs.single_action_space, gym.spaces.Discrete), "only discrete action space is supported"

    agent = Agent(envs).to(device)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # ALGO Logic: Storage setup
    obs = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs) + envs.single_action_space.shape).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    # TRY NOT TO MODIFY: start the game
    global_step = 0
    start_time = time.time()
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)  # fastvec: as_tensor (no copy on GPU)
    next_done = torch.zeros(args.num_envs).to(device)
    recent_returns = deque(maxlen=args.return_window)  # fastvec: for --target-return
    reached_target = False

    for iteration in range(1, args.num_iterations + 1):
        # Annealing the rate if instructed to do so.
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            lrnow = frac * args.learning_rate
            optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done

            # ALGO LOGIC: action logic
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            # TRY NOT TO MODIFY: execute the game and log data.
            # fastvec: a GPU env takes the action tensor where it is; otherwise NumPy, as in CleanRL.
            next_obs, reward, terminations, truncations, infos = envs.step(
                action if env_on_device else action.cpu().numpy())
            next_done = terminations | truncations
            rewards[step] = torch.as_tensor(reward, device=device).view(-1)
            next_obs = torch.as_tensor(next_obs, dtype=torch.float32, device=device)
            next_done = torch.as_tensor(next_done, dtype=torch.float32, device=device)

            # fastvec: Gymnasium 1.x infos are dicts of arrays with "_key" masks, not lists of dicts.
            if env_on_device:
                finished = terminations | truncations
                episode_returns = infos["final_info"]["episode_return"][finished].tolist() if finished.any() else []
                episode_lengths = infos["final_info"]["episode_length"][finished].tolist() if episode_returns else []
            elif "episode" in infos:
                finished = infos["_episode"]
                episode_returns = infos["episode"]["r"][finished].tolist()
                episode_lengths = infos["episode"]["l"][finished].tolist()
            else:
                episode_returns = episode_lengths = []
            for episodic_return, episodic_length in zip(episode_returns, episode_lengths):
                print(f"global_step={global_step}, episodic_return={episodic_return}")
                log_scalar("charts/episodic_return", episodic_return, global_step)
                log_scalar("charts/episodic_length", episodic_length, global_step)
                recent_returns.append(episodic_return)
            if (args.target_return is not None and len(recent_returns) == args.return_window
                    and np.mean(recent_returns) >= args.target_return):
                reached_target = True
                break
        if reached_target:
            break

        # bootstrap value if not done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        # flatten the batch
        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + envs.single_action_space.shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        # Optimizing the policy and value network
        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, args.batch_size, args.minibatch_size):
                end = start + args.minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions.long()[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                # Policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # Value loss
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds],
                        -args.clip_coef,
                        args.clip_coef,
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        # TRY NOT TO MODIFY: record rewards for plotting purposes
        log_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        log_scalar("losses/value_loss", v_loss.item(), global_step)
        log_scalar("losses/policy_loss", pg_loss.item(), global_step)
        log_scalar("losses/entropy", entropy_loss.item(), global_step)
        log_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        log_scalar("losses/approx_kl", approx_kl.item(), global_step)
        log_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
        log_scalar("losses/explained_variance", explained_var, global_step)
        print("SPS:", int(global_step / (time.time() - start_time)))
        log_scalar("charts/SPS", int(global_step / (time.time() - start_time)), global_step)

    # fastvec: one machine-readable summary line (benchmarks/cleanrl_compare.py reads it)
    print("SUMMARY " + json.dumps({
        "env_id": args.env_id, "device": args.device, "num_envs": args.num_envs, "seed": args.seed,
        "vectorization_mode": args.vectorization_mode or "default", "global_step": global_step,
        "train_seconds": round(time.time() - start_time, 3), "episodes_in_window": len(recent_returns),
        "mean_recent_return": float(np.mean(recent_returns)) if recent_returns else None,
        "target_return": args.target_return, "reached_target": reached_target,
    }))
    envs.close()
    if writer is not None:
        writer.close()
