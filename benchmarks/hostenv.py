"""Host environments on the CUDA trainer (train.env_device=cpu, issue 6) and self-play on it (issue 7):
CartPole SPS with the env on the CPU (one and two env groups) beside the env on the GPU, how closely the two
agree, and Pong self-play from scratch on the CUDA trainer, its final checkpoint played against the scripted
bot. Prints tables and writes OUT_DIR/hostenv_cuda.json and hostenv_cuda.md.

    python benchmarks/hostenv.py [--out-dir benchmarks/results] [--budget 150] [--pong-steps 10_000_000]
                                 [--skip cartpole,agreement,pong] [--pong-async] [--tag _async]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fastvec.trainer import run
from fastvec.trainer.config import load_config

CARTPOLE_CASES = [  # (label, [env] and [train] overrides on cartpole.toml)
    ("GPU env (rollout graph)", {"env_device": "cuda"}),
    ("CPU env, 2 groups", {"env_device": "cpu", "env_groups": 2}),
    ("CPU env, 1 group", {"env_device": "cpu", "env_groups": 1}),
    ("CPU env, 2 groups, async", {"env_device": "cpu", "env_groups": 2, "async": True}),
    ("CPU env, 1 group, async", {"env_device": "cpu", "env_groups": 1, "async": True}),
    ("GPU env, async", {"env_device": "cuda", "async": True}),
]


def cartpole_sps(num_envs: int, steps: int, tmp: Path) -> list[dict]:
    rows = []
    for label, train in CARTPOLE_CASES:
        config = load_config("cartpole", {"env": {"num_envs": num_envs},
                                          "train": {"device": "cuda", "total_timesteps": steps, "stop_at_target": False,
                                                    **train}})
        summary = run.train(config, tmp / f"cartpole_{num_envs}_{len(rows)}", dashboard=False)
        trainer = summary["trainer"]
        timing = dict(trainer.timing)
        rows.append({"case": label, "num_envs": num_envs, "steps": summary["global_step"],
                     "seconds": round(summary["elapsed"], 3), "sps": round(summary["sps"]),
                     "rollout_sps": round(summary["global_step"] / max(timing["rollout"], 1e-9)),
                     "time_split": {k: round(v, 3) for k, v in timing.items()},
                     "startup_s": round(trainer.startup_time, 3),
                     "last_return": summary["metrics"].get("episode_return")})
        trainer.close()
        print(f"cartpole {num_envs:>6} envs  {label:<26} {rows[-1]['sps']:>12,} SPS  rollout {rows[-1]['rollout_sps']:>12,}"
              f"  {timing}", flush=True)
    return rows


def agreement(num_envs: int, updates: int = 3) -> dict:
    """Host env (two groups) against GPU env, GEMM-path rollout, same seed: how far apart they drift."""
    from fastvec.trainer.cuda.plan import Choices
    from fastvec.trainer.cuda.trainer import CudaTrainer
    from fastvec.trainer.resolve import make_policy_spec
    trainers = []
    for env_device in ("cpu", "cuda"):
        config = load_config("cartpole", {"env": {"num_envs": num_envs},
                                          "train": {"device": "cuda", "env_device": env_device, "stop_at_target": False}})
        batch = run.make_batch(config)
        spec = make_policy_spec(config, batch.env.obs_size, batch.env.num_actions)
        trainers.append(CudaTrainer(config, batch, spec, choices=Choices(rollout="gemm")))
    out = {"num_envs": num_envs, "updates": []}
    for k in range(updates):
        bufs = []
        for tr in trainers:
            tr.rollout()
            bufs.append({n: tr.arena.get(tr.cuda, n) for n in ("obs", "actions", "values", "dones")})
            tr.update(num_updates=100)
        params = [tr.arena.get(tr.cuda, "params") for tr in trainers]
        out["updates"].append({
            "actions_equal": float(np.mean(bufs[0]["actions"] == bufs[1]["actions"])),
            "dones_equal": float(np.mean(bufs[0]["dones"] == bufs[1]["dones"])),
            "obs_max_abs_diff": float(np.abs(bufs[0]["obs"] - bufs[1]["obs"]).max()),
            "values_max_abs_diff": float(np.abs(bufs[0]["values"] - bufs[1]["values"]).max()),
            "params_rel_diff": float(np.abs(params[0] - params[1]).max() / np.abs(params[1]).max())})
    for tr in trainers:
        tr.close()
    print(f"agreement at {num_envs} envs: {out['updates']}", flush=True)
    return out


class Budget(Exception):
    pass


def pong_selfplay(steps: int, seconds: float, tmp: Path, is_async: bool = False) -> tuple[dict, Path]:
    """Self-play from scratch on the CUDA trainer (stopped like Ctrl-C if `seconds` run out, which saves a
    checkpoint). Returns the run's numbers and its last checkpoint."""
    config = load_config("pong", {"selfplay": {"enabled": True, "eval_interval": 0, "eval_games": 32, "eval_past": 1},
                                  "train": {"device": "cuda", "total_timesteps": steps, "async": is_async}})

    def stop(*_):
        raise KeyboardInterrupt  # run.train saves a checkpoint and returns
    signal.signal(signal.SIGALRM, stop)
    signal.alarm(max(int(seconds), 1))
    try:
        summary = run.train(config, tmp / "pong_selfplay", dashboard=False)
    finally:
        signal.alarm(0)
    trainer = summary["trainer"]
    out = {"command": f"fastvec-train pong --selfplay.enabled=true --train.device=cuda "
                      f"--train.total_timesteps={steps} --selfplay.eval_interval=0"
                      + (" --train.async=true" if is_async else ""),
           "steps": summary["global_step"], "seconds": round(summary["elapsed"], 1), "sps": round(summary["sps"]),
           "interrupted": summary["interrupted"], "time_split": {k: round(v, 2) for k, v in trainer.timing.items()},
           "env_device": config["train"]["env_device"], "last_metrics": summary["metrics"],
           "vs_bot": {"games": 0, "matches": []}}
    print(f"pong self-play: {out['steps']:,} steps in {out['seconds']} s ({out['sps']:,} SPS), "
          f"interrupted={out['interrupted']}, {out['time_split']}", flush=True)
    trainer.close()
    return out, Path(summary["checkpoint"])


def pong_vs_bot(checkpoint: Path, games: int, out: dict, save) -> None:
    """What `fastvec-train pong --eval=CHECKPOINT --eval.opponent=bot --eval.episodes=GAMES` plays, the hardest
    bot first, saving after each level (so a cut-off run keeps what it measured)."""
    from fastvec.trainer.selfplay import bot_levels, load_policy, play_bot
    config = load_config("pong", {"eval": {"episodes": games}})
    player = load_policy(checkpoint)
    out["vs_bot"]["games"] = games
    t0 = time.perf_counter()
    for level in sorted(bot_levels(config), reverse=True):
        scores = play_bot(config, player, level, games, config["train"]["seed"] + 7, config["eval"]["deterministic"])
        match = {"opponent": f"bot level {level}", "score": float(scores.mean()), "wins": int((scores == 1).sum()),
                 "ties": int((scores == 0.5).sum()), "losses": int((scores == 0).sum()),
                 "seconds": round(time.perf_counter() - t0, 1)}
        out["vs_bot"]["matches"].append(match)
        save()
        print(f"  vs {match['opponent']}: {match['wins']} wins, {match['ties']} ties, {match['losses']} losses "
              f"(score {match['score']:.3f}, {match['seconds']} s)", flush=True)


def write_markdown(path: Path, result: dict) -> None:
    lines = ["# Host environments and self-play on the CUDA trainer", "",
             f"{result['date']}, {result['gpu']}, {result['cpus']} CPUs, Python {result['python']}; "
             f"`python benchmarks/hostenv.py` (one run).", ""]
    if result.get("cartpole"):
        lines += ["## CartPole: env on the CPU (train.env_device=cpu) vs on the GPU", "",
                  "cartpole.toml (MinGRU 64x2, horizon 64, Adam, 4 epochs of minibatch 1024) with the env count "
                  "and steps below; SPS is fastvec-train's end to end (eager first rollout/update and graph "
                  "captures included), rollout SPS counts rollout time only.", "",
                  "| envs | case | steps | SPS | rollout SPS | time split (s) |", "|---:|---|---:|---:|---:|---|"]
        for row in result["cartpole"]:
            lines.append(f"| {row['num_envs']} | {row['case']} | {row['steps']:,} | {row['sps']:,} | "
                         f"{row['rollout_sps']:,} | {row['time_split']} |")
        lines.append("")
    if result.get("agreement"):
        lines += ["## Host env vs GPU env, same seed, 3 updates (GEMM-path rollout)", "",
                  "| envs | update | actions equal | dones equal | max obs diff | max value diff | params rel diff |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for ag in result["agreement"]:
            for k, u in enumerate(ag["updates"]):
                lines.append(f"| {ag['num_envs']} | {k} | {u['actions_equal']:.5f} | {u['dones_equal']:.5f} | "
                             f"{u['obs_max_abs_diff']:.2e} | {u['values_max_abs_diff']:.2e} | {u['params_rel_diff']:.2e} |")
        lines.append("")
    if result.get("pong"):
        p = result["pong"]
        lines += ["## Pong self-play from scratch on the CUDA trainer", "", f"    {p['command']}", "",
                  f"{p['steps']:,} steps in {p['seconds']} s ({p['sps']:,} SPS){' (stopped by the time budget)' if p['interrupted'] else ''}; "
                  f"time split {p['time_split']}. Final checkpoint against the scripted bot, "
                  f"{p['vs_bot']['games']} games per level (`--eval.opponent=bot`):", "",
                  "| bot | wins | ties | losses | score |", "|---|---:|---:|---:|---:|"]
        for m in p["vs_bot"]["matches"]:
            lines.append(f"| {m['opponent']} | {m['wins']} | {m['ties']} | {m['losses']} | {m['score']:.3f} |")
        lines.append("")
    path.write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default="benchmarks/results")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds for the whole script")
    parser.add_argument("--pong-steps", type=int, default=10_000_000)
    parser.add_argument("--eval-games", type=int, default=200)
    parser.add_argument("--eval-reserve", type=float, default=30.0, help="seconds kept for the bot evaluation")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: cartpole,agreement,pong")
    parser.add_argument("--pong-async", action="store_true", help="self-play with --train.async=true")
    parser.add_argument("--tag", default="", help="suffix of the output files (hostenv_cuda{TAG}.json/.md)")
    args = parser.parse_args()
    start = time.perf_counter()
    skip = set(filter(None, args.skip.split(",")))
    from fastvec.trainer.cuda import device
    cuda = device.init()
    result = {"date": time.strftime("%Y-%m-%d"), "gpu": cuda.Context.get_device().name(), "cpus": os.cpu_count(),
              "python": platform.python_version()}
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def save():
        (out_dir / f"hostenv_cuda{args.tag}.json").write_text(json.dumps(result, indent=1))
        write_markdown(out_dir / f"hostenv_cuda{args.tag}.md", result)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "cartpole" not in skip:
            result["cartpole"] = cartpole_sps(64, 300_000, tmp) + cartpole_sps(4096, 4_000_000, tmp)
            save()
        if "agreement" not in skip:
            result["agreement"] = [agreement(24), agreement(1024)]
            save()
        if "pong" not in skip:
            left = args.budget - (time.perf_counter() - start) - args.eval_reserve
            result["pong"], checkpoint = pong_selfplay(args.pong_steps, left, tmp, args.pong_async)
            save()
            pong_vs_bot(checkpoint, args.eval_games, result["pong"], save)
    print(f"wrote {out_dir / f'hostenv_cuda{args.tag}.json'} and .md in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
