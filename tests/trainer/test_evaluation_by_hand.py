"""fastvec-train --eval against the same episodes played by hand: eval.episodes episodes, each from its own
seed ((train.seed + 7) << 32 + i) in a single Gymnasium env, with the checkpoint's policy's deterministic
action; the reported mean and spread of the returns and the mean length are those episodes' own."""

import gymnasium as gym
import numpy as np

import fastvec  # noqa: F401  (registers fastvec/CartPole)
from fastvec.trainer import checkpoint, run
from fastvec.trainer import reference as ref
from fastvec.trainer.config import load_config
from fastvec.trainer.resolve import make_policy_spec


def test_deterministic_evaluation_reports_the_episodes_a_single_env_plays(tmp_path):
    config = load_config("cartpole", {"policy": {"kind": "mlp", "hidden": 8, "layers": 1},
                                      "train": {"seed": 3}, "eval": {"episodes": 5, "deterministic": True}})
    spec = make_policy_spec(config, 4, 2)
    params = ref.init_params(spec, np.random.default_rng(4))
    views = ref.FlatLayout(ref.param_table(spec)).views(params)
    views["dec.w"][:2] = np.random.default_rng(5).normal(0, 3.0, views["dec.w"][:2].shape)  # a policy that varies
    path = checkpoint.save(tmp_path / "update_000001.npz", spec, "cartpole", 1,
                           {"params": params, "optimizer": None, "counters": {"update": 1, "global_step": 8}}, config)
    result = run.evaluate(config, path)
    env = gym.make("fastvec/CartPole")
    returns, lengths = [], []
    for i in range(5):
        obs, _ = env.reset(seed=((3 + 7) << 32) + i)
        state = np.zeros((spec.state_layers, 1, spec.hidden), np.float32)
        total, steps, done = 0.0, 0, False
        while not done:
            logits, _, state, _ = ref.policy_forward(spec, views, obs[None, None].astype(np.float32),
                                                     np.full((1, 1), float(steps == 0), np.float32), state)
            obs, reward, term, trunc, _ = env.step(int(logits[0, 0, :2].argmax()))
            total, steps, done = total + reward, steps + 1, term or trunc
        returns.append(total)
        lengths.append(steps)
    assert len(set(lengths)) > 1  # the episodes differ, so a mix-up between them would show
    assert result["episodes"] == 5 and result["env"] == "cartpole" and result["checkpoint"] == str(path)
    assert result["episode_return"] == np.mean(returns)
    assert result["episode_return_std"] == np.std(returns)
    assert result["episode_length"] == np.mean(lengths)
