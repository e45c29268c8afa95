"""Self-play PPO on two-player Pong, CleanRL style (one file, flat loop): one PyTorch policy plays
both seats of `fastvec.pettingzoo.vector_env("Pong", num_games)`, some of the right seats are played
by frozen past copies of itself, and the win rate against the scripted bot is reported.

    pip install torch --index-url https://download.pytorch.org/whl/cpu   # the CPU wheel (GBs less)
    pip install torch                  # instead, for --device cuda: the CUDA build
    python examples/selfplay_pong.py                   # 8M agent steps
    python examples/selfplay_pong.py --device cuda     # the games on the GPU, zero-copy to a policy there

At the end it plays `--eval-games` games to 21 against each bot level (0-4) and prints the win rate
and mean point difference; BENCHMARKS.md ("Self-play Pong") has a measured run.

Rows are laid out as SuperSuit's (row = game * 2 + seat), so this loop is also what CleanRL's
PettingZoo PPO would run; the seat hook `envs.agent_rows("right")` picks the rows that the frozen
opponents play, and their actions overwrite the learner's there before the one step() call. With
`--device cuda` the games run on the GPU (`vector_env(..., device="cuda", array_type="device")`): observations,
rewards and flags come back as device arrays that `torch.as_tensor` takes without a copy, and the policy's
CUDA actions go to step() as they are.
"""

from __future__ import annotations

import argparse
import copy
import random
import time

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import fastvec
from fastvec.pettingzoo import vector_env


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--total-steps", type=int, default=8_000_000, help="agent steps (rows x env steps)")
    p.add_argument("--num-games", type=int, default=256)
    p.add_argument("--num-steps", type=int, default=64, help="rollout length per update")
    p.add_argument("--points", type=int, default=21, help="points that win a training game")
    p.add_argument("--return-bonus-milli", type=int, default=0, help="reward per return, in thousandths")
    p.add_argument("--pool-frac", type=float, default=0.5, help="fraction of games whose right seat is a past self")
    p.add_argument("--pool-size", type=int, default=8, help="snapshots kept in the opponent pool")
    p.add_argument("--snapshot-every", type=int, default=10, help="updates between snapshots")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--eval-games", type=int, default=128, help="games per bot level at the end")
    p.add_argument("--eval-points", type=int, default=21)
    p.add_argument("--eval-levels", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--device", default="cpu", help="cpu, or cuda: the games and the policy on the GPU")
    p.add_argument("--threads", type=int, default=1, help="torch threads (small MLPs run fastest on one; 0: torch default)")
    return p.parse_args()


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_size: int, num_actions: int, hidden: int):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_size, hidden)), nn.Tanh(),
                                    layer_init(nn.Linear(hidden, hidden)), nn.Tanh(), layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor = nn.Sequential(layer_init(nn.Linear(obs_size, hidden)), nn.Tanh(),
                                   layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
                                   layer_init(nn.Linear(hidden, num_actions), std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


@torch.no_grad()
def win_rate_vs_bot(agent: Agent, level: int, num_games: int, points: int, seed: int,
                    device: str = "cpu") -> tuple[float, float]:
    """Play one game per env against the bot at `level`; return (win rate, mean point difference)."""
    envs = fastvec.make_vec("Pong", num_envs=num_games, difficulty=level, points=points, max_episode_steps=50_000)
    obs, _ = envs.reset(seed=seed)
    finished = np.zeros(num_games, bool)
    wins = np.zeros(num_games)
    margin = np.zeros(num_games)
    while not finished.all():
        action, _, _, _ = agent.get_action_and_value(torch.as_tensor(obs, device=device))
        obs, _, term, trunc, info = envs.step(action.cpu().numpy())
        ended = (term | trunc) & ~finished
        if ended.any():
            wins[ended] = info["score"][ended] > info["opponent_score"][ended]
            margin[ended] = info["score"][ended] - info["opponent_score"][ended]
            finished |= ended
    envs.close()
    return float(wins.mean()), float(margin.mean())


def main():
    args = parse_args()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)

    dev = torch.device(args.device)
    gpu = {"device": "cuda", "array_type": "device"} if dev.type == "cuda" else {}
    envs = vector_env("Pong", args.num_games, points=args.points, return_bonus_milli=args.return_bonus_milli, **gpu)
    n = envs.num_envs  # rows: game * 2 + seat
    obs_size, num_actions = envs.single_observation_space.shape[0], int(envs.single_action_space.n)
    agent = Agent(obs_size, num_actions, args.hidden).to(dev)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    pool: list[Agent] = [copy.deepcopy(agent)]

    # Seats: the learner plays every left seat; the right seat of the first pool_games games is a
    # frozen past self (its rows are played but not trained on), the rest are the learner too.
    pool_games = int(round(args.pool_frac * args.num_games))
    right_rows = envs.agent_rows("right")
    opponent_rows = right_rows[:pool_games]
    learner = np.ones(n, bool)
    learner[opponent_rows] = False
    learner_t = torch.as_tensor(learner, device=dev)
    vs_pool = np.zeros(n, bool)  # the learner's rows in games against a past self
    vs_pool[envs.agent_rows("left")[:pool_games]] = True
    vs_pool_t = torch.as_tensor(vs_pool, device=dev)

    T = args.num_steps
    obs_buf = torch.zeros((T, n, obs_size), device=dev)
    act_buf = torch.zeros((T, n), dtype=torch.long, device=dev)
    logp_buf = torch.zeros((T, n), device=dev)
    rew_buf = torch.zeros((T, n), device=dev)
    done_buf = torch.zeros((T, n), device=dev)
    val_buf = torch.zeros((T, n), device=dev)

    def tensor(a, dtype=None):  # NumPy arrays, or the GPU games' device arrays (no copy)
        return torch.as_tensor(a, dtype=dtype, device=dev)

    num_updates = max(1, args.total_steps // (T * n))
    next_obs = tensor(envs.reset(seed=args.seed)[0])
    next_done = torch.zeros(n, device=dev)
    opponent = pool[0]
    start, step = time.time(), 0
    recent_returns: list[float] = []
    for update in range(1, num_updates + 1):
        optimizer.param_groups[0]["lr"] = args.lr * (1.0 - (update - 1.0) / num_updates)
        if update % args.snapshot_every == 0:
            pool = (pool + [copy.deepcopy(agent)])[-args.pool_size:]
        opponent = random.choice(pool)  # one past self per rollout for all pool games

        # ROLLOUT
        for t in range(T):
            step += n
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(next_obs)
                if pool_games:
                    action[opponent_rows] = opponent.get_action_and_value(next_obs[opponent_rows])[0]
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value.flatten()
            obs, reward, term, trunc, info = envs.step(action if dev.type == "cuda" else action.numpy())
            rew_buf[t] = tensor(reward, torch.float32)
            next_obs, next_done = tensor(obs), (tensor(term) | tensor(trunc)).float()
            if "final_info" in info:  # (GPU games: every step, valid where the mask is True)
                ended = tensor(info["_final_info"]) & vs_pool_t
                if ended.any():
                    recent_returns.extend(tensor(info["final_info"]["episode_return"])[ended].tolist())
                    recent_returns = recent_returns[-200:]

        # GAE (a game's truncation is treated as an end, like CleanRL)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            adv = torch.zeros_like(rew_buf)
            last = torch.zeros(n, device=dev)
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else done_buf[t + 1])
                value_next = next_value if t == T - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * value_next * nonterminal - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            ret = adv + val_buf

        # UPDATE on the learner's rows only
        keep = learner_t.expand(T, n).reshape(-1)
        b_obs, b_act = obs_buf.reshape(-1, obs_size)[keep], act_buf.reshape(-1)[keep]
        b_logp, b_adv = logp_buf.reshape(-1)[keep], adv.reshape(-1)[keep]
        b_ret, b_val = ret.reshape(-1)[keep], val_buf.reshape(-1)[keep]
        batch = b_obs.shape[0]
        mb = batch // args.num_minibatches
        for _ in range(args.update_epochs):
            perm = torch.randperm(batch, device=dev)
            for s in range(0, batch, mb):
                idx = perm[s:s + mb]
                _, newlogp, entropy, newv = agent.get_action_and_value(b_obs[idx], b_act[idx])
                ratio = (newlogp - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((newv.flatten() - b_ret[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        if update % 10 == 0 or update == num_updates:
            sps = step / (time.time() - start)
            mean_ret = np.mean(recent_returns) if recent_returns else float("nan")
            print(f"update {update}/{num_updates} steps {step:,} SPS {sps:,.0f} "
                  f"return vs past selves {mean_ret:+.2f} (last {len(recent_returns)} games) "
                  f"pg {pg_loss.item():+.3f} v {v_loss.item():.3f} ent {entropy.mean().item():.3f}", flush=True)

    envs.close()
    print(f"trained {step:,} agent steps in {time.time() - start:.0f} s")
    for level in args.eval_levels:
        rate, margin = win_rate_vs_bot(agent, level, args.eval_games, args.eval_points, 10_000 + level, dev)
        print(f"vs bot level {level}: win rate {rate:.2f} over {args.eval_games} games to {args.eval_points}, "
              f"mean point difference {margin:+.1f}", flush=True)


if __name__ == "__main__":
    main()
