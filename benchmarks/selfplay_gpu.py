"""Pong self-play on the CUDA trainer with the games and the opponents on the GPU (fastvec/configs/pong-selfplay.toml
under --set overrides): training speed (agent steps/s of the learner over the seconds outside evaluations), the
evaluations' seconds at the config's interval, and the final policy's wins against the scripted bot at every
level over many games (played on the GPU after training), per seed; the first seed's Elo curve goes to
selfplay_gpu_ratings.json and .png. Beside it, in the same run, the host-env path (train.env_device=cpu: games
and opponents on the CPU) for a short budget. With --cli, also the README's commands as a user runs them, timed
wall-clock: `fastvec-train pong --config=fastvec/configs/pong-selfplay.toml`, then `--eval` of that run against
the bot. Prints a table and writes OUT_DIR/selfplay_gpu.json.

    python benchmarks/selfplay_gpu.py [--out-dir benchmarks/results] [--seeds 1,2,3] [--steps 200_000_000]
        [--games 256] [--host-steps 500_000] [--cli] [--set section.key=value ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fastvec.trainer import run
from fastvec.trainer.config import CONFIG_DIR, load_config, load_toml
from fastvec.trainer.settings import Config

CONFIG = CONFIG_DIR / "pong-selfplay.toml"


def overrides_of(pairs: list[str]) -> dict:
    """["train.num_envs=4096", ...] -> {"train": {"num_envs": 4096}} (values parsed as TOML scalars)."""
    import tomllib
    out: dict = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        section, name = key.split(".", 1)
        out.setdefault(section, {})[name] = tomllib.loads(f"v = {value}")["v"]
    return out


def one_run(seed: int, steps: int, games: int, env_device: str, extra: dict, tmp: Path,
            out_dir: Path | None = None) -> dict:
    sections = {section: dict(values) for section, values in load_toml(CONFIG).items()}
    sections.get("env", {}).pop("name", None)
    for section, values in extra.items():
        sections.setdefault(section, {}).update(values)
    sections.setdefault("train", {}).update({"device": "cuda", "env_device": env_device, "seed": seed,
                                             "total_timesteps": steps, "log_interval": 1.0})
    config = load_config("pong", sections)
    t0 = time.perf_counter()
    run_dir = tmp / f"{env_device}_{seed}"
    summary = run.train(config, run_dir, dashboard=False)
    wall = time.perf_counter() - t0
    trainer = summary["trainer"]
    evaluation = summary["eval_time"]  # the evaluations at the config's interval, between updates
    train_seconds = summary["elapsed"] - evaluation
    # The final policy against the bot at every level, `games` games each (on the GPU where the games are).
    from fastvec.trainer.selfplay import Policy, bot_levels, play_all
    matches = trainer.selfplay.matches  # GpuMatches where the games are on the GPU, else None
    during = list(matches.history) if matches is not None else []  # the evaluations at the config's interval
    player = Policy(trainer.spec, trainer.params, "final")
    t1 = time.perf_counter()
    settings = Config.of(config)
    scores, _ = play_all(settings, player, bot_levels(settings), [], games, 10_000 + seed, False, matches)
    bots = {f"bot{level}": round(float(s.mean()), 4) for level, s in scores.items()}
    final_eval = time.perf_counter() - t1
    if out_dir is not None and (run_dir / "ratings.json").is_file():
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
           "eval_share_of_training": round(evaluation / max(train_seconds, 1e-9), 3),
           "evaluations": len(trainer.selfplay.history), "final_eval_seconds": round(final_eval, 2),
           # per evaluation at the interval: game steps (its longest game's, to its first end), launches of
           # match_play_kernel and seconds in GpuMatches.evaluate (allocation and staging included)
           "evaluation_steps": [h["steps"] for h in during], "evaluation_launches": [h["launches"] for h in during],
           "evaluation_play_seconds": [h["seconds"] for h in during],
           "evaluation_grid": {k: during[0][k] for k in ("games", "games_per_block",
                                                        "policies_in_shared")} if during else None,
           "final_eval_steps": matches.last_steps if matches is not None else None,
           "eval_games_per_level": games, "scores_vs_bot": bots, "startup_s": round(trainer.startup_time, 2),
           "wall_s": round(wall, 1), "describe": trainer.describe(),
           "config": {s: config[s] for s in ("env", "policy", "train", "selfplay")}}
    trainer.close()
    print(f"{env_device:>4} seed {seed}: {row['steps']:>12,} steps in {row['train_seconds']:>7.2f} s "
          f"({row['sps']:>12,} SPS)  vs bot {bots}  evaluations {evaluation:.2f} s "
          f"({row['eval_share_of_training']:.1%}; steps {row['evaluation_steps']}), final {final_eval:.2f} s",
          flush=True)
    return row


def timed(command: list[str]) -> dict:
    """Run a command, wall-clock timed; its output is echoed and kept."""
    print("$ " + " ".join(command), flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    print(done.stdout + done.stderr, flush=True)
    return {"command": " ".join(command), "wall_s": round(wall, 2), "returncode": done.returncode,
            "stdout": done.stdout[-4000:], "stderr": done.stderr[-2000:]}


def cli_runs(tmp: Path, games: int) -> dict:
    """The README's self-play command and the --eval of its run against the bot, as a user runs them."""
    run_dir = tmp / "cli_run"
    cli = [sys.executable, "-m", "fastvec.trainer.cli", "pong"]
    train = timed(cli + [f"--config={CONFIG.relative_to(Path.cwd()) if CONFIG.is_relative_to(Path.cwd()) else CONFIG}",
                         f"--run-dir={run_dir}"])
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()] \
        if (run_dir / "metrics.jsonl").is_file() else []
    last = rows[-1] if rows else {}
    train.update({"last_log": {k: last.get(k) for k in ("global_step", "time", "sps", "train_sps", "eval_time")},
                  "train_seconds": round(last.get("time", 0) - last.get("eval_time", 0), 2) if last else None})
    evaluate = timed(cli + [f"--eval={run_dir}", "--eval.opponent=bot", f"--eval.episodes={games}"])
    for line in evaluate["stdout"].splitlines():
        if " games played on the " in line:
            evaluate["eval_seconds"] = float(line.split(" in ")[-1].split()[0])
        if " vs bot level " in line:
            level = line.split(" vs bot level ")[1].split(":")[0]
            evaluate.setdefault("scores_vs_bot", {})[f"bot{level}"] = float(line.split("score ")[1].split()[0])
    return {"train": train, "eval": evaluate}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--steps", type=int, default=200_000_000)
    parser.add_argument("--games", type=int, default=256, help="evaluation games per bot level")
    parser.add_argument("--host-steps", type=int, default=500_000, help="the host-env path's budget (0: skip)")
    parser.add_argument("--cli", action="store_true", help="also time the README's fastvec-train commands")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides, e.g. env.num_envs=4096")
    args = parser.parse_args()
    extra = overrides_of(args.set)
    rows, cli = [], None
    with tempfile.TemporaryDirectory() as tmp:
        if args.cli:
            cli = cli_runs(Path(tmp), args.games)
        for i, seed in enumerate(int(s) for s in args.seeds.split(",")):
            rows.append(one_run(seed, args.steps, args.games, "cuda", extra, Path(tmp),
                                Path(args.out_dir) if i == 0 else None))
        if args.host_steps:
            host = {**extra, "selfplay": {**extra.get("selfplay", {}), "eval_games": 16}}
            rows.append(one_run(1, args.host_steps, 16, "cpu", host, Path(tmp)))
    from fastvec.trainer.cuda import device
    out = {"date": time.strftime("%Y-%m-%d"), "machine": platform.node(), "device": device.init().Device(0).name(),
           "config": str(CONFIG.name),
           "command": "python benchmarks/selfplay_gpu.py " + " ".join(sys.argv[1:]), "rows": rows}
    if cli is not None:
        out["cli"] = cli
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.out_dir) / "selfplay_gpu.json").write_text(json.dumps(out, indent=1))
    print(f"{'path':<6}{'seed':>5}{'steps':>14}{'train s':>9}{'SPS':>14}{'eval s':>8}{'share':>7}  wins vs hardest bot")
    for r in rows:
        hardest = max(r["scores_vs_bot"], default=None)
        print(f"{r['env_device']:<6}{r['seed']:>5}{r['steps']:>14,}{r['train_seconds']:>9.2f}{r['sps']:>14,}"
              f"{r['eval_seconds']:>8.2f}{r['eval_share_of_training']:>7.1%}  {r['scores_vs_bot'].get(hardest)}")
    if cli is not None:
        print(f"fastvec-train (pong-selfplay.toml): {cli['train']['wall_s']:.1f} s wall; --eval vs the bot: "
              f"{cli['eval']['wall_s']:.1f} s wall, {cli['eval'].get('eval_seconds')} s playing")


if __name__ == "__main__":
    main()
