"""Self-play's evaluation games (cuda/matches.py, selfplay.cu's match_play_kernel) built with MATCH_ROWS rows a warp
group against the default: seconds per evaluation of a trained Pong policy against every bot level and three copies of
itself, the builds alternating, and their scores compared game for game (the rows a group computes must not change
a game). Trains the policy first: pong-selfplay.toml for --steps. Writes benchmarks/lab/results/match_rows.json.

    python benchmarks/lab/match_rows.py [--rows 1 2 4] [--steps 30000000] [--repeats 3]
"""

import argparse
import json
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from fastvec.trainer import run
from fastvec.trainer.config import load_config
from fastvec.trainer.cuda import matches as matches_mod
from fastvec.trainer.selfplay import Policy
from fastvec.trainer.settings import Config

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=30_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "lab" / "results" / "match_rows.json")
    args = parser.parse_args()
    overrides = tomllib.loads((ROOT / "fastvec" / "configs" / "pong-selfplay.toml").read_text())
    overrides["env"].pop("name")
    overrides["train"].update(total_timesteps=args.steps, log_interval=0.0)
    overrides["selfplay"].update(eval_interval=0)
    config = Config.of(load_config("pong", overrides))
    with tempfile.TemporaryDirectory() as tmp:
        summary = run.train(config, Path(tmp) / "run", dashboard=False)
    trainer = summary["trainer"]
    player = Policy(trainer.spec, trainer.params, "trained")
    close = getattr(trainer, "close", None)
    if close is not None:
        close()

    class Rows(matches_mod.GpuMatches):
        """GpuMatches whose builds add -DMATCH_ROWS=rows."""

        def __init__(self, spec, rows):
            super().__init__(spec)
            self.rows = rows

        def module(self, env_config, defines=None):
            return super().module(env_config, {**(defines or {}), "MATCH_ROWS": self.rows})

    builds = {rows: Rows(player.spec, rows) for rows in args.rows}
    levels, opponents = [0, 1, 2, 3, 4], [player, player, player]
    results = {rows: {"seconds": [], "steps": [], "games_per_block": None} for rows in args.rows}
    scores = {}
    for rows, build in builds.items():  # compile and warm up
        build.evaluate(config, player, levels, opponents, 8, seed=1)
    for repeat in range(args.repeats):
        for rows in (args.rows if repeat % 2 == 0 else args.rows[::-1]):
            build = builds[rows]
            t0 = time.perf_counter()
            bots, pasts = build.evaluate(config, player, levels, opponents, args.games, seed=100 + repeat)
            results[rows]["seconds"].append(round(time.perf_counter() - t0, 4))
            results[rows]["steps"].append(build.last_steps)
            results[rows]["games_per_block"] = build.history[-1]["games_per_block"]
            flat = np.concatenate([bots[level] for level in levels] + pasts)
            scores.setdefault(repeat, {})[rows] = flat
            print(f"rows {rows}: {results[rows]['seconds'][-1]:.4f} s, {build.last_steps} steps, "
                  f"{build.last_steps and results[rows]['seconds'][-1] / build.last_steps * 1e6:.2f} us a step, "
                  f"games a block {results[rows]['games_per_block']}", flush=True)
    same = all(np.array_equal(by_rows[args.rows[0]], by_rows[r]) for by_rows in scores.values() for r in args.rows)
    print("scores equal game for game across builds:", same)
    out = {"benchmark": "match_rows", "date": time.strftime("%Y-%m-%d"), "steps_trained": args.steps,
           "games": args.games, "levels": levels, "past_selves": len(opponents), "scores_equal": same,
           "rows": {str(k): v for k, v in results.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
