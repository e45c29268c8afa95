"""How much one PPO update amplifies float32 rounding-sized differences in its data (NumPy reference
trainer, CPU): two identical rollouts, one with its values perturbed by ~1e-7 relative, one update each,
then the relative difference of the weights. Explains why two bitwise-different but equivalent rollout paths
(host envs vs GPU envs, benchmarks/hostenv.py's agreement) drift apart after one update at large env counts.

    python benchmarks/update_sensitivity.py [--envs 24 1024] [--config cartpole]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from fastvec.trainer import run
from fastvec.trainer.config import load_config
from fastvec.trainer.numpy_trainer import NumpyTrainer
from fastvec.trainer.resolve import make_policy_spec


def sensitivity(env: str, num_envs: int, relative: float = 1e-7) -> dict:
    config = load_config(env, {"env": {"num_envs": num_envs}, "train": {"device": "cpu"}})
    trainers = []
    for _ in range(2):
        batch = run.make_batch(config)
        trainer = NumpyTrainer(config, batch, make_policy_spec(config, batch.env.obs_size, batch.env.num_actions))
        trainer.rollout()
        trainers.append(trainer)
    a, b = trainers
    assert np.array_equal(a.values, b.values) and np.array_equal(a.params, b.params)
    noise = np.random.default_rng(0).standard_normal(b.values.shape)
    b.values[...] = (b.values * (1 + relative * noise)).astype(np.float32)
    t0 = time.perf_counter()
    a.update(100)
    b.update(100)
    tc = config["train"]
    return {"env": env, "num_envs": num_envs,
            "minibatch_steps": tc["update_epochs"] * (a.samples_per_rollout // tc["minibatch_size"]),
            "values_rel_diff": float(np.abs(a.values - b.values).max() / np.abs(a.values).max()),
            "params_rel_diff": float(np.abs(a.params - b.params).max() / np.abs(a.params).max()),
            "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="cartpole")
    parser.add_argument("--envs", type=int, nargs="+", default=[24, 1024])
    args = parser.parse_args()
    rows = [sensitivity(args.config, n) for n in args.envs]
    print(f"{'envs':>6} {'minibatch steps':>16} {'values rel diff':>16} {'weights rel diff after 1 update':>32}")
    for r in rows:
        print(f"{r['num_envs']:>6} {r['minibatch_steps']:>16} {r['values_rel_diff']:>16.2e} {r['params_rel_diff']:>32.2e}")
    path = Path(__file__).resolve().parent / "results" / "update_sensitivity.json"
    path.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
