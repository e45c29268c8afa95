"""Pong self-play on the CUDA trainer with the games and the opponents on the GPU: training speed (agent steps/s
of the learner) and the final policy's wins against the scripted bot at every level over many games (played
on the GPU after training), per seed; the first seed also evaluates every --curve-interval updates (its Elo
curve: selfplay_gpu_ratings.json and .png). Beside it, in the same run, the host-env path
(train.env_device=cpu: games and opponents on the CPU) for a short budget. Prints a table and writes
OUT_DIR/selfplay_gpu.json.

    python benchmarks/selfplay_gpu.py [--out-dir benchmarks/results] [--seeds 1,2,3] [--steps 100_000_000]
        [--games 256] [--curve-interval 10] [--host-steps 500_000] [--set section.key=value ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from fastvec.trainer import run
from fastvec.trainer.config import load_config


def overrides_of(pairs: list[str]) -> dict:
    """["train.num_envs=4096", ...] -> {"train": {"num_envs": 4096}} (values parsed as TOML scalars)."""
    import tomllib
    out: dict = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        section, name = key.split(".", 1)
        out.setdefault(section, {})[name] = tomllib.loads(f"v = {value}")["v"]
    return out


def one_run(seed: int, steps: int, games: int, env_device: str, extra: dict, tmp: Path, curve: int = 0,
            out_dir: Path | None = None) -> dict:
    sections = {"env": {}, "train": {}, "selfplay": {}, "policy": {}}
    for section, values in extra.items():
        sections.setdefault(section, {}).update(values)
    config = load_config("pong", {**sections,
                                  "selfplay": {"enabled": True, "eval_interval": curve, "eval_games": 64,
                                               "eval_past": 1 if curve else 0, **sections["selfplay"]},
                                  "train": {"device": "cuda", "env_device": env_device, "seed": seed,
                                            "total_timesteps": steps, "log_interval": 1.0, **sections["train"]}})
    t0 = time.perf_counter()
    run_dir = tmp / f"{env_device}_{seed}"
    summary = run.train(config, run_dir, dashboard=False)
    wall = time.perf_counter() - t0
    trainer = summary["trainer"]
    timing = dict(trainer.timing)
    evaluation = timing.get("selfplay_eval", 0.0)
    train_seconds = summary["elapsed"] - evaluation  # evaluations run between updates, off the training time
    # The final policy against the bot at every level, `games` games each (on the GPU where the games are).
    from fastvec.trainer.selfplay import Policy, bot_levels, play_bot
    player = Policy(trainer.spec, trainer.params, "final")
    play = trainer.selfplay.matches.play_bot if trainer.selfplay.matches else play_bot
    t1 = time.perf_counter()
    bots = {f"bot{level}": round(float(play(config, player, level, games, 10_000 + seed, False).mean()), 4)
            for level in bot_levels(config)}
    evaluation += time.perf_counter() - t1
    if curve and out_dir is not None:
        import shutil

        from fastvec.trainer.selfplay import plot_ratings
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(run_dir / "ratings.json", out_dir / "selfplay_gpu_ratings.json")
        try:
            plot_ratings(run_dir, out_dir / "selfplay_gpu_ratings.png")
        except ImportError:
            print("matplotlib is missing: no rating plot", flush=True)
    row = {"seed": seed, "env_device": env_device, "num_games": config["env"]["num_envs"],
           "steps": summary["global_step"], "train_seconds": round(train_seconds, 2),
           "sps": round(summary["global_step"] / max(train_seconds, 1e-9)), "eval_seconds": round(evaluation, 2),
           "eval_games_per_level": games, "scores_vs_bot": bots, "startup_s": round(trainer.startup_time, 2),
           "wall_s": round(wall, 1), "describe": trainer.describe(),
           "config": {s: config[s] for s in ("env", "policy", "train", "selfplay")}}
    trainer.close()
    print(f"{env_device:>4} seed {seed}: {row['steps']:>12,} steps in {row['train_seconds']:>7.2f} s "
          f"({row['sps']:>12,} SPS)  vs bot {bots}  eval {evaluation:.1f} s", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--steps", type=int, default=100_000_000)
    parser.add_argument("--games", type=int, default=256, help="evaluation games per bot level")
    parser.add_argument("--curve-interval", type=int, default=10, help="the first seed's evaluation interval (0: none)")
    parser.add_argument("--host-steps", type=int, default=500_000, help="the host-env path's budget (0: skip)")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides, e.g. env.num_envs=4096")
    args = parser.parse_args()
    extra = overrides_of(args.set)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, seed in enumerate(int(s) for s in args.seeds.split(",")):
            rows.append(one_run(seed, args.steps, args.games, "cuda", extra, Path(tmp),
                                args.curve_interval if i == 0 else 0, Path(args.out_dir)))
        if args.host_steps:
            rows.append(one_run(1, args.host_steps, 16, "cpu", extra, Path(tmp)))
    out = {"date": time.strftime("%Y-%m-%d"), "machine": platform.node(), "command": "python benchmarks/selfplay_gpu.py "
           + " ".join(f"--set {s}" for s in args.set), "rows": rows}
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.out_dir) / "selfplay_gpu.json").write_text(json.dumps(out, indent=1))
    print(f"{'path':<6}{'seed':>5}{'steps':>14}{'train s':>9}{'SPS':>14}  wins vs hardest bot")
    for r in rows:
        hardest = max(r["scores_vs_bot"], default=None)
        print(f"{r['env_device']:<6}{r['seed']:>5}{r['steps']:>14,}{r['train_seconds']:>9.2f}{r['sps']:>14,}  "
              f"{r['scores_vs_bot'].get(hardest)}")


if __name__ == "__main__":
    main()
