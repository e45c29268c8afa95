"""Training benchmark beside a peer: fastvec-train on classic control (and, with --minatar, the MinAtar games) against
PureJaxRL-style PPO on gymnax's version of the same env (benchmarks/peers/purejaxrl_ppo.py), in one run. Prints a
table and writes benchmarks/results/train_peers.json.

    python benchmarks/train_peers.py               # pendulum, acrobot (3 seeds), mountaincar(continuous) (1 seed)
    python benchmarks/train_peers.py --minatar     # also the MinAtar games (10M steps each); --minatar --envs: only them
    python benchmarks/train_peers.py --fastvec-device cpu --envs pendulum --seeds 1
    python benchmarks/train_peers.py --fallback-device cpu        # the CPU trainer where the CUDA one refuses an env
    python benchmarks/train_peers.py --minatar --envs --fastvec-set seaquest-minatar:train.learning_rate=2.5e-3

fastvec: each seed trains through the trainer's public API (fastvec.trainer.run.train, what `fastvec-train ENV
--train.device=...` runs) with the env's config from fastvec/configs/, logging every update (train.log_interval=0)
so the first logged mean return >= the threshold is timed to the update; training time excludes start-up (kernels,
arena, env reset, graph capture), reported beside it. The final policy is evaluated over --eval-episodes episodes
(`fastvec-train ENV --eval`). A run the trainer refuses (e.g. an action head the CUDA trainer lacks) is recorded
with the refusal's text. The peer runs in a subprocess (--peer-python: JAX may live in another environment),
compiled once per env, every seed after it; its time counts from its first update, its compile is reported beside.
Ratio = the peer's median time to the threshold / fastvec's (>= 2 is the issues' target); for an env without a
threshold, the same for the lower of the two runs' final returns (same_return_times: both curves smoothed alike).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
PEER = ROOT / "benchmarks" / "peers" / "purejaxrl_ppo.py"

# fastvec env -> (gymnax id, return threshold or None for report-only)
CLASSIC = {
    "pendulum": ("Pendulum-v1", -200.0),
    "acrobot": ("Acrobot-v1", -100.0),
    "mountaincar": ("MountainCar-v0", None),
    "mountaincarcontinuous": ("MountainCarContinuous-v0", None),
}
MINATAR = {
    "breakout-minatar": ("Breakout-MinAtar", 30.0),
    "asterix-minatar": ("Asterix-MinAtar", None),
    "freeway-minatar": ("Freeway-MinAtar", None),
    "seaquest-minatar": ("Seaquest-MinAtar", None),
    "spaceinvaders-minatar": ("SpaceInvaders-MinAtar", None),
}
MINATAR_STEPS = 10_000_000
# gymnax's MinAtar games have no sticky actions (the `minatar` package's, and fastvec's, default 0.1 repeats the
# previous action one step in ten) and end episodes at 1,000 steps (Freeway 2,500; the `minatar` package's, and
# fastvec's, run to the game's end), so fastvec plays the same game. Sticky actions cost much (Breakout on the CPU
# trainer, 1.2M steps: 42.8 without, 21.2 with), and without a step limit a good policy's episodes never end.
MINATAR_ENV = {"sticky_action_milli": 0, "max_episode_steps": 1000}
MINATAR_STEP_LIMITS = {"freeway-minatar": 2500}


def fastvec_run(env: str, seed: int, device: str, threshold: float | None, max_seconds: float,
                eval_episodes: int, total_timesteps: int | None, run_root: Path, settings: dict | None = None) -> dict:
    """One fastvec-train run: time to the first logged mean return >= threshold, start-up, the final policy's
    evaluation; or the trainer's refusal. settings: {section: {key: value}} over the env's config
    (--fastvec-set), under the run's own seed, device, budget and logging."""
    from fastvec.trainer import checkpoint, run
    from fastvec.trainer.config import ConfigError, load_config

    settings = settings or {}
    train = {**settings.get("train", {}), "device": device, "seed": seed, "log_interval": 0.0,
             "checkpoint_seconds": 0.0, "checkpoint_interval": 10 ** 9}
    if total_timesteps:
        train["total_timesteps"] = total_timesteps
    result = {"env": env, "seed": seed, "device": device, "threshold": threshold}
    env_overrides = {**MINATAR_ENV, "max_episode_steps": MINATAR_STEP_LIMITS.get(env, 1000)} if env in MINATAR else {}
    env_overrides.update(settings.get("env", {}))
    if env_overrides:
        result["env_overrides"] = env_overrides
    if settings:
        result["settings"] = settings
    overrides = {**settings, "env": env_overrides, "train": train, "eval": {"episodes": eval_episodes}}
    try:
        config = load_config(env, overrides)
    except ConfigError as err:  # an unknown env or key: recorded, the other runs go on
        return {**result, "error": f"{type(err).__name__}: {err}"}
    reached, curve = [], []

    def watch(metrics, seconds, steps):
        if metrics and metrics.get("episode_return") is not None:
            curve.append((steps, round(seconds, 4), round(metrics["episode_return"], 3)))
            if threshold is not None and not reached and metrics["episode_return"] >= threshold:
                reached.append((seconds, steps))
        return seconds >= max_seconds

    run_dir = Path(tempfile.mkdtemp(prefix=f"{env}-s{seed}-", dir=run_root))
    t0 = time.perf_counter()
    try:
        summary = run.train(config, run_dir, dashboard=False, watch=watch)
    except (ConfigError, ImportError, RuntimeError, OSError) as err:  # refused on this device (the message says why)
        return {**result, "refused": f"{type(err).__name__}: {err}", "process_s": round(time.perf_counter() - t0, 3)}
    trainer = summary["trainer"]
    # the policy as trained when the run ended (--max-seconds stops it between checkpoints), saved as run.py saves
    state = trainer.state_dict()
    state["counters"]["global_step"] = summary["trained_steps"]
    state["counters"]["time"] = summary["elapsed"]
    ckpt = checkpoint.save(run_dir / "final.npz", trainer.spec, config["env"]["name"], trainer.num_agents, state,
                           config)
    close = getattr(trainer, "close", None)
    if close is not None:
        close()
    t1 = time.perf_counter()
    evaluation = run.evaluate(config, Path(ckpt))
    last = curve[-1][2] if curve else None
    result.update(
        reached=bool(reached), time_to_threshold_s=round(reached[0][0], 4) if reached else None,
        steps_to_threshold=reached[0][1] if reached else None, startup_s=round(summary["startup"], 3),
        train_s=round(summary["elapsed"], 4), steps=summary["trained_steps"],
        budget_steps=config["train"]["total_timesteps"], sps=round(summary["sps"]), final_return=last,
        eval_return=round(evaluation["episode_return"], 3), eval_return_std=round(evaluation["episode_return_std"], 3),
        eval_episodes=evaluation["episodes"], eval_s=round(time.perf_counter() - t1, 3),
        process_s=round(time.perf_counter() - t0, 3), curve=curve)
    return result


def fastvec_settings(items: list[str], env: str) -> dict:
    """--fastvec-set's [ENV:]SECTION.KEY=VALUE items that apply to env, as load_config's {section: {key: value}}."""
    from fastvec.trainer.config import parse_value

    settings: dict = {}
    for item in items:
        target, _, assignment = item.rpartition(":") if ":" in item.split("=", 1)[0] else ("", "", item)
        if target and target != env:
            continue
        path, _, text = assignment.partition("=")
        section, _, key = path.partition(".")
        if not key or not text:
            raise SystemExit(f"--fastvec-set {item!r}: use [ENV:]SECTION.KEY=VALUE, e.g. train.learning_rate=3e-3")
        settings.setdefault(section, {})[key] = parse_value(text)
    return settings


def peer_runs(gymnax_id: str, seeds: list[int], threshold: float | None, max_seconds: float, eval_episodes: int,
              total_timesteps: int | None, python: str, timeout: float, settings: list[str] = ()) -> dict:
    """The peer for every seed in one subprocess (one compile); its JSON, or the error that stopped it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peer.json"
        cmd = [python, str(PEER), gymnax_id, "--seeds", *map(str, seeds), "--max-seconds", str(max_seconds),
               "--eval-episodes", str(eval_episodes), "--out", str(out)]
        if threshold is not None:
            cmd += ["--threshold", str(threshold)]
        if total_timesteps:
            cmd += ["--total-timesteps", str(total_timesteps)]
        if settings:
            cmd += ["--set", *settings]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return {"env_id": gymnax_id, "error": f"peer timed out after {timeout:.0f} s", "command": " ".join(cmd[1:])}
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            return {"env_id": gymnax_id, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                    f"exit {proc.returncode}", "stderr_tail": proc.stderr[-2000:], "command": " ".join(cmd[1:])}
        result = json.loads(out.read_text())
        result.update(process_s=round(wall, 3), command=" ".join(cmd[1:]))
        return result


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def smoothed(curve: list, window_steps: int) -> list[tuple[float, float]]:
    """(seconds, mean of the returns logged over the last window_steps steps) at every logged point of a
    (steps, seconds, return) curve: both runs' curves compared at one smoothing, whatever each logs per update."""
    out, lo, total = [], 0, 0.0
    for i, (steps, seconds, value) in enumerate(curve):
        total += value
        while curve[lo][0] <= steps - window_steps:
            total -= curve[lo][2]
            lo += 1
        out.append((seconds, total / (i - lo + 1)))
    return out


def same_return_times(fastvec_curve: list, peer_curve: list, budget_steps: int) -> dict | None:
    """Where a game has no threshold: the return both runs reach (the lower of their final returns, each the mean
    over the budget's last tenth) and the training seconds each took to first reach it (its mean over a
    trailing twentieth of the budget)."""
    if not fastvec_curve or not peer_curve:
        return None
    finals = [statistics.fmean(v for st, _, v in c if st >= c[-1][0] - budget_steps // 10)
              for c in (fastvec_curve, peer_curve)]
    common = min(finals)
    times = [next((t for t, m in smoothed(c, budget_steps // 20) if m >= common), None)
             for c in (fastvec_curve, peer_curve)]
    return {"return": round(common, 3), "fastvec_final": round(finals[0], 3), "peer_final": round(finals[1], 3),
            "fastvec_s": times[0], "peer_s": times[1],
            "ratio": round(times[1] / times[0], 3) if times[0] and times[1] else None}


def summarize(env: str, gymnax_id: str, threshold, fastvec: list[dict], peer: dict) -> dict:
    trained = [r for r in fastvec if "eval_return" in r]
    peer_ok = [r for r in peer.get("runs", [])]
    row = {"env": env, "gymnax_id": gymnax_id, "threshold": threshold,
           "fastvec_runs": len(fastvec), "fastvec_reached": sum(r.get("reached", False) for r in trained),
           "fastvec_time_s": median(r["time_to_threshold_s"] for r in trained) if threshold is not None else
           median(r["train_s"] for r in trained),
           "fastvec_startup_s": median(r["startup_s"] for r in trained),
           "fastvec_eval_return": median(r["eval_return"] for r in trained),
           "fastvec_devices": sorted({r["device"] for r in trained}),
           "fastvec_refused": next((r.get("refused") or r.get("error") or r.get("refused_on_cuda") for r in fastvec
                                    if r.get("refused") or r.get("error") or r.get("refused_on_cuda")), None),
           "peer_runs": len(peer_ok), "peer_reached": sum(r["reached"] for r in peer_ok),
           "peer_time_s": median(r["time_to_threshold_s"] for r in peer_ok) if threshold is not None else
           median(r["train_s"] for r in peer_ok),
           "peer_compile_s": peer.get("compile_s"), "peer_eval_return": median(r.get("eval_return") for r in peer_ok),
           "peer_error": peer.get("error")}
    if row["fastvec_time_s"] and row["peer_time_s"] and threshold is not None:
        row["ratio"] = round(row["peer_time_s"] / row["fastvec_time_s"], 3)
    else:
        row["ratio"] = None
    if threshold is None and trained and peer_ok:  # seed by seed, the medians reported
        pairs = [same_return_times(f.get("curve", []), p.get("curve", []), f["budget_steps"])
                 for f, p in zip(trained, peer_ok)]
        pairs = [pair for pair in pairs if pair]
        if pairs:
            row["same_return"] = {key: median(pair[key] for pair in pairs) for key in pairs[0]}
            row["ratio"] = row["same_return"]["ratio"]
    return row


def print_table(rows: list[dict], device: str, seeds: list[int]) -> None:
    def fmt(x, spec="8.2f"):
        return format("-", ">" + spec.split(".")[0].rstrip("f,d")) if x is None else format(x, spec)
    print(f"\nfastvec-train (--train.device={device}) beside PureJaxRL-style PPO on gymnax, seeds {seeds}: "
          "time = median training seconds to the threshold (to the run's end where there is none)")
    print(f"{'env':<28} {'thr':>6} {'fv hit':>6} {'fv s':>8} {'fv start':>8} {'fv eval':>8} {'peer hit':>8} "
          f"{'peer s':>8} {'compile':>8} {'peer eval':>9} {'ratio':>6}")
    for r in rows:
        name = r["env"] + (f" ({r['fastvec_devices'][0]})" if r["fastvec_devices"] != [device] and
                           r["fastvec_devices"] else "")
        print(f"{name:<28} {fmt(r['threshold'], '6.0f')} "
              f"{r['fastvec_reached']:>2}/{r['fastvec_runs']:<3} {fmt(r['fastvec_time_s'])} "
              f"{fmt(r['fastvec_startup_s'])} {fmt(r['fastvec_eval_return'], '8.1f')} "
              f"{r['peer_reached']:>4}/{r['peer_runs']:<3} {fmt(r['peer_time_s'])} {fmt(r['peer_compile_s'])} "
              f"{fmt(r['peer_eval_return'], '9.1f')} {fmt(r['ratio'], '6.2f')}")
        if r.get("same_return"):
            same = r["same_return"]
            print(f"    same return {same['return']:.1f} (finals: fastvec {same['fastvec_final']:.1f}, peer "
                  f"{same['peer_final']:.1f}): fastvec {fmt(same['fastvec_s'], '.2f')} s, peer "
                  f"{fmt(same['peer_s'], '.2f')} s")
        if r["fastvec_refused"]:
            print(f"    fastvec: {r['fastvec_refused']}")
        if r["peer_error"]:
            print(f"    peer: {r['peer_error']}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="*", default=list(CLASSIC), help=f"from {', '.join([*CLASSIC, *MINATAR])}")
    parser.add_argument("--minatar", action="store_true", help="also every MinAtar game (10M steps each)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds of the envs with a threshold")
    parser.add_argument("--report-seeds", type=int, nargs="+", default=[1],
                        help="seeds of the report-only classic envs (mountaincar, mountaincarcontinuous)")
    parser.add_argument("--minatar-seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--fastvec-device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--fallback-device", choices=["cpu"], default=None,
                        help="train on this device where --fastvec-device's trainer refuses the env")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="training seconds per classic-control run")
    parser.add_argument("--minatar-max-seconds", type=float, default=60.0, help="training seconds per MinAtar run")
    parser.add_argument("--total-seconds", type=float, default=540.0,
                        help="skip the runs that would start after this many seconds of the whole script")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--skip-fastvec", action="store_true")
    parser.add_argument("--peer-set", nargs="*", default=[], metavar="[ENV:]KEY=VALUE",
                        help="change the peer's PureJaxRL settings, for every env or one: pendulum:GAMMA=0.95")
    parser.add_argument("--fastvec-set", nargs="*", default=[], metavar="[ENV:]SECTION.KEY=VALUE",
                        help="change fastvec's config, for every env or one: breakout-minatar:train.learning_rate=3e-3")
    parser.add_argument("--peer-python", default=sys.executable, help="the Python with JAX, optax and gymnax")
    parser.add_argument("--out", default=str(RESULTS / "train_peers.json"))
    args = parser.parse_args(argv)

    envs = {name: CLASSIC.get(name) or MINATAR.get(name) for name in args.envs}
    unknown = [name for name, spec in envs.items() if spec is None]
    if unknown:
        parser.error(f"unknown env(s) {unknown}; choose from {', '.join([*CLASSIC, *MINATAR])}")
    if args.minatar:
        envs.update(MINATAR)
    start = time.perf_counter()
    run_root = Path(tempfile.mkdtemp(prefix="train_peers-"))
    out = {"date": date.today().isoformat(), "machine": platform.platform(), "cores": os.cpu_count(),
           "python": platform.python_version(), "fastvec_device": args.fastvec_device, "seeds": args.seeds,
           "max_seconds": args.max_seconds, "peer_set": args.peer_set, "fastvec_set": args.fastvec_set,
           "eval_episodes": args.eval_episodes, "rows": [], "fastvec": {}, "peer": {}, "skipped": []}
    try:  # the GPU machine's copy of the tree may have no git history
        git = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False, capture_output=True, text=True,
                             cwd=ROOT)
        out["commit"] = git.stdout.strip() or None
    except OSError:
        out["commit"] = None
    if args.fastvec_device == "cuda":
        try:
            from fastvec.trainer.cuda import device
            out["gpu"] = device.init().Context.get_device().name()
        except Exception as err:  # noqa: BLE001 - PyCUDA's errors, no GPU: each run records the trainer's refusal
            out["gpu"] = f"unavailable: {err}"
    for env, (gymnax_id, threshold) in envs.items():
        minatar = env in MINATAR
        seeds = args.minatar_seeds if minatar else args.seeds if threshold is not None else args.report_seeds
        max_seconds = args.minatar_max_seconds if minatar else args.max_seconds
        steps = MINATAR_STEPS if minatar else None
        fastvec = []
        for seed in seeds if not args.skip_fastvec else []:
            if time.perf_counter() - start > args.total_seconds:
                out["skipped"].append(f"fastvec {env} seed {seed}")
                continue
            res = fastvec_run(env, seed, args.fastvec_device, threshold, max_seconds, args.eval_episodes, steps,
                              run_root, fastvec_settings(args.fastvec_set, env))
            if "refused" in res and args.fallback_device:  # the refusal is kept beside the other device's run
                res = {**fastvec_run(env, seed, args.fallback_device, threshold, max_seconds, args.eval_episodes,
                                     steps, run_root, fastvec_settings(args.fastvec_set, env)),
                       "refused_on_" + args.fastvec_device: res["refused"]}
            fastvec.append(res)
            print(json.dumps({k: v for k, v in res.items() if k != "curve"}), flush=True)
        peer = {}
        if not args.skip_peer:
            left = args.total_seconds - (time.perf_counter() - start)
            if left <= 0:
                out["skipped"].append(f"peer {gymnax_id}")
            else:
                settings = [item.split(":", 1)[-1] for item in args.peer_set
                            if ":" not in item.split("=", 1)[0] or item.split(":", 1)[0] == env]
                peer = peer_runs(gymnax_id, seeds, threshold, max_seconds, args.eval_episodes, steps,
                                 args.peer_python, timeout=max(left, 60.0) + 120.0, settings=settings)
                print(json.dumps({k: v for k, v in peer.items() if k != "runs"}), flush=True)
        out["fastvec"][env], out["peer"][env] = fastvec, peer
        out["rows"].append(summarize(env, gymnax_id, threshold, fastvec, peer))
    out["wall_s"] = round(time.perf_counter() - start, 1)
    shutil.rmtree(run_root, ignore_errors=True)  # the runs' checkpoints: only their numbers are kept
    print_table(out["rows"], args.fastvec_device, args.seeds)
    if out["skipped"]:
        print(f"skipped (past --total-seconds={args.total_seconds:g}): {', '.join(out['skipped'])}")
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {path} ({out['wall_s']} s)")


if __name__ == "__main__":
    main()
