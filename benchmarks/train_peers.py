"""Training beside a peer, measured alike: fastvec-train against PureJaxRL-style PPO on gymnax's version of the same
env (benchmarks/peers/purejaxrl_ppo.py), both in one run, in up to three kinds of row. Prints a table and writes
benchmarks/results/train_peers.json.

    python benchmarks/train_peers.py                                   # pendulum, acrobot: published and tuned
    python benchmarks/train_peers.py --kinds published --envs breakout-minatar --seeds 1 2 3
    python benchmarks/train_peers.py --fastvec-device cpu --envs pendulum --trials 2 --trial-seconds 1

Kinds: `published`: the peer in PureJaxRL's published settings for the env's family, and fastvec run in the same
shape (purejaxrl_ppo.FAMILIES mapped by peers/fairness.py: envs, steps per rollout, minibatches, epochs, lr and its
annealing, width, separate critic, gamma, lambda, clips, coefficients, normalisation, budget; what cannot map is
listed in the row). `tuned`: each side's best of one sweep procedure with the same budget (benchmarks/peers/
sweep_peer.py: the same space, trials, objective, seconds per trial and sampler seed), both then trained on these
seeds. `shipped`: fastvec's own config (fastvec/configs/ENV.toml, tuned by earlier sweeps) beside the peer's
published settings: not a like-for-like row (`fair: false`).

Every run trains its whole step budget (--max-seconds is a safety cap: a run it stops is marked capped). Both
sides log every update's finished episodes (fastvec: train.log_interval=0; the peer: per update inside its jitted
chunks, timed by interpolation in the chunk), and the threshold is crossed when the mean return of the last K
(--window) finished episodes reaches it (peers/fairness.py: one function for both). A seed that never crosses counts
as its whole training time, and the ratio is then a bound (">=": the peer's median is a lower bound). Ratio = the
peer's median time over fastvec's; training time excludes fastvec's start-up and the peer's compile and warm-up (2
untimed chunks), both reported. For an env without a threshold: the lower of the two median final returns (each
seed's last K episodes) and each seed's time to it. The final policy is evaluated over --eval-episodes episodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
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
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
import purejaxrl_ppo  # noqa: E402  (NumPy only at import; JAX runs in the peer's subprocess)
from fairness import (CLASSIC, MINATAR, WINDOW_EPISODES, fastvec_env_overrides, fastvec_in_peer_shape,  # noqa: E402
                      final_window_mean, first_crossing, peer_family, ratio, seed_time)

from fastvec.trainer.sweep import layer  # noqa: E402  (config overrides merged as fastvec-sweep merges them)

RESULTS = ROOT / "benchmarks" / "results"
PEER = ROOT / "benchmarks" / "peers" / "purejaxrl_ppo.py"
SWEEP = ROOT / "benchmarks" / "peers" / "sweep_peer.py"
KINDS = ("published", "tuned", "shipped")
SAFETY_CAP_S = 300.0


def fastvec_run(env: str, seed: int, device: str, threshold: float | None, max_seconds: float | None,
                eval_episodes: int, total_timesteps: int | None, run_root: Path, settings: dict | None = None,
                window: int = WINDOW_EPISODES, metric: str = "episode_return") -> dict:
    """One fastvec-train run over its whole budget (max_seconds: a safety cap), logging every update: groups of
    (steps, seconds, mean of `metric`, episodes), the time to the threshold by the window rule, start-up, the final
    policy's evaluation; or the trainer's refusal. settings: {section: {key: value}} over the env's config, under
    the run's own seed, device, budget and logging. metric: what each update logs that the threshold is on (the
    episode return, or an env statistic such as SMAX's allies_won); the evaluation reports it as eval_metric."""
    from fastvec.trainer import checkpoint, run
    from fastvec.trainer.config import ConfigError, load_config

    settings = layer({"env": fastvec_env_overrides(env)}, settings or {})
    train = {**settings.get("train", {}), "device": device, "seed": seed, "log_interval": 0.0,
             "checkpoint_seconds": 0.0, "checkpoint_interval": 10 ** 9,
             "stop_at_target": False}  # every run trains its whole budget, as the peer's does
    if total_timesteps:
        train["total_timesteps"] = total_timesteps
    result = {"env": env, "seed": seed, "device": device, "threshold": threshold, "window": window}
    if settings:
        result["settings"] = settings
    try:
        config = load_config(env, {**settings, "train": train, "eval": {"episodes": eval_episodes}})
    except ConfigError as err:  # an unknown env or key: recorded, the other runs go on
        return {**result, "error": f"{type(err).__name__}: {err}"}
    groups = []

    def watch(metrics, seconds, steps):
        if metrics and metrics.get("episodes"):
            groups.append((steps, round(seconds, 4), round(metrics[metric], 3), metrics["episodes"]))
        return max_seconds is not None and seconds >= max_seconds

    run_dir = Path(tempfile.mkdtemp(prefix=f"{env}-s{seed}-", dir=run_root))
    t0 = time.perf_counter()
    try:
        summary = run.train(config, run_dir, dashboard=False, watch=watch)
    except (ConfigError, ImportError, RuntimeError, OSError) as err:  # refused on this device (the message says why)
        return {**result, "refused": f"{type(err).__name__}: {err}", "process_s": round(time.perf_counter() - t0, 3)}
    trainer = summary["trainer"]
    state = trainer.state_dict()  # the policy as trained when the run ended, saved as run.py saves
    state["counters"]["global_step"] = summary["trained_steps"]
    state["counters"]["time"] = summary["elapsed"]
    ckpt = checkpoint.save(run_dir / "final.npz", trainer.spec, config["env"]["name"], trainer.num_agents, state,
                           config)
    close = getattr(trainer, "close", None)
    if close is not None:
        close()
    t1 = time.perf_counter()
    evaluation = run.evaluate(config, Path(ckpt))
    per_rollout = config["env"]["num_envs"] * config["train"]["horizon"]
    budget = -(-config["train"]["total_timesteps"] // per_rollout) * per_rollout
    result.update(
        startup_s=round(summary["startup"], 3), train_s=round(summary["elapsed"], 4), steps=summary["trained_steps"],
        budget_steps=budget, capped=summary["trained_steps"] < budget, sps=round(summary["sps"]),
        eval_return=round(evaluation["episode_return"], 3), eval_return_std=round(evaluation["episode_return_std"], 3),
        eval_metric=round(evaluation[metric], 3) if metric in evaluation else None,
        eval_episodes=evaluation["episodes"], eval_s=round(time.perf_counter() - t1, 3),
        process_s=round(time.perf_counter() - t0, 3), groups=groups)
    result.update(timed(result, threshold, window))
    return result


def timed(run: dict, threshold: float | None, window: int) -> dict:
    """A run's time to the threshold (seed_time: its whole training time where it never crosses) and its final
    window mean."""
    out = {"final_return": final_window_mean(run["groups"], window), "reached": None, "time_s": None}
    if threshold is not None:
        hit = seed_time(run["groups"], threshold, run["train_s"], window)
        out.update(reached=hit["reached"], time_to_threshold_s=hit["time_s"] if hit["reached"] else None,
                   steps_to_threshold=hit["steps_to_threshold"], time_s=hit["time_s"], lower_bound=hit["lower_bound"])
    return out


def fastvec_command(env: str, device: str, settings: dict, seed_flag: str = "--train.seed=S") -> str:
    """The fastvec-train command line a run of these settings is."""
    flags = [f"--{section}.{key}={value}" for section, values in settings.items() for key, value in values.items()]
    return " ".join(["fastvec-train", env, f"--train.device={device}", seed_flag, *flags])


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


def peer_items(items: list[str], env: str) -> list[str]:
    """--peer-set's [ENV:]KEY=VALUE items that apply to env, as KEY=VALUE."""
    return [item.split(":", 1)[-1] for item in items
            if ":" not in item.split("=", 1)[0] or item.split(":", 1)[0] == env]


def subprocess_json(cmd: list[str], out: Path, timeout: float) -> dict:
    """Run cmd (which writes JSON to out); its JSON with the command and wall time, or the error that stopped it."""
    t0 = time.perf_counter()
    record = {"command": shlex.join(["python", *[os.path.relpath(c, ROOT) if c.startswith(str(ROOT)) else c
                                                  for c in cmd[1:]]])}
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**record, "error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0 or not out.exists():
        tail = proc.stderr.strip().splitlines()
        return {**record, "error": tail[-1] if tail else f"exit {proc.returncode}", "stderr_tail": proc.stderr[-2000:]}
    return {**json.loads(out.read_text()), **record, "process_s": round(time.perf_counter() - t0, 3)}


def peer_runs(gymnax_id: str, seeds: list[int], threshold: float | None, max_seconds: float | None,
              eval_episodes: int, python: str, timeout: float, settings: list[str] = (),
              window: int = WINDOW_EPISODES) -> dict:
    """The peer for every seed in one subprocess (one compile), each over its whole step budget."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peer.json"
        cmd = [python, str(PEER), gymnax_id, "--seeds", *map(str, seeds), "--eval-episodes", str(eval_episodes),
               "--window", str(window), "--out", str(out)]
        if max_seconds is not None:
            cmd += ["--max-seconds", str(max_seconds)]
        if threshold is not None:
            cmd += ["--threshold", str(threshold)]
        if settings:
            cmd += ["--set", *settings]
        result = subprocess_json(cmd, out, timeout)
    for run in result.get("runs", []):
        run.update(timed(run, threshold, window))
    return result


def sweep_side(env: str, side: str, args, python: str, timeout: float) -> dict:
    """benchmarks/peers/sweep_peer.py for one side, in a subprocess."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.json"
        cmd = [python, str(SWEEP), env, "--side", side, "--trials", str(args.trials), "--trial-seconds",
               str(args.trial_seconds), "--batch", str(args.batch), "--sampler-seed", str(args.sampler_seed),
               "--device", args.fastvec_device, "--timeout", str(max(round(timeout - 10.0), 1)), "--out", str(out)]
        if args.fix:
            cmd += ["--fix", *args.fix]
        return subprocess_json(cmd, out, timeout)


def same_return(fastvec: list[dict], peer: list[dict], window: int) -> dict | None:
    """Where an env has no threshold: the lower of the two sides' median final returns (each seed's last `window`
    episodes), and each seed's time to it by the window rule (its whole training time where it never gets there)."""
    finals = [[r["final_return"] for r in runs if r.get("final_return") is not None] for runs in (fastvec, peer)]
    if not all(finals):
        return None
    common = min(statistics.median(f) for f in finals)
    sides = []
    for runs in (fastvec, peer):
        hits = [first_crossing(r["groups"], common, window) for r in runs]
        sides.append(([h[0] if h else r["train_s"] for h, r in zip(hits, runs)], [h is None for h in hits]))
    return {"return": round(common, 3), "fastvec_final": round(statistics.median(finals[0]), 3),
            "peer_final": round(statistics.median(finals[1]), 3), "fastvec_s": sides[0][0], "peer_s": sides[1][0],
            "fastvec_missed": sides[0][1], "peer_missed": sides[1][1],
            **ratio(sides[1][0], sides[1][1], sides[0][0], sides[0][1])}


def summarize(env: str, kind: str, threshold, fastvec: list[dict], peer: dict, window: int, extra: dict) -> dict:
    """One row: each side's seeds, their medians, the ratio with its bound."""
    trained = [r for r in fastvec if "eval_return" in r]
    runs = peer.get("runs", [])
    row = {"env": env, "kind": kind, "fair": kind != "shipped", "gymnax_id": {**CLASSIC, **MINATAR}[env][0],
           "threshold": threshold, "window": window, **extra,
           "fastvec_refused": next((r.get("refused") or r.get("error") for r in fastvec
                                    if r.get("refused") or r.get("error")), None),
           "peer_compile_s": peer.get("compile_s"), "peer_warmup_s": peer.get("warmup_s"),
           "peer_error": peer.get("error"), "peer_command": peer.get("command"), "peer_config": peer.get("config"),
           "peer_device": peer.get("device"), "peer_jax": peer.get("jax"),
           "capped": any(r.get("capped") for r in (*trained, *runs))}
    for side, side_runs in (("fastvec", trained), ("peer", runs)):
        row[side + "_seeds"] = [{k: r.get(k) for k in ("seed", "reached", "time_s", "lower_bound", "steps_to_threshold",
                                                       "train_s", "steps", "budget_steps", "capped", "sps", "startup_s",
                                                       "final_return", "eval_return", "eval_return_std", "groups")}
                                for r in side_runs]
    if threshold is not None and trained and runs:
        row.update(ratio([r["time_s"] for r in runs], [r["lower_bound"] for r in runs],
                         [r["time_s"] for r in trained], [r["lower_bound"] for r in trained]))
    elif trained and runs:
        row["same_return"] = same_return(trained, runs, window)
        if row["same_return"]:
            row.update({k: row["same_return"][k] for k in ("ratio", "lower_bound", "upper_bound", "ratio_text")})
    row.setdefault("ratio", None)
    row.setdefault("ratio_text", "-")
    return row


def print_table(rows: list[dict], window: int) -> None:
    def seeds(side_seeds):
        return " ".join(("" if s["reached"] else ">") + f"{s['time_s']:.2f}" for s in side_seeds
                        if s.get("time_s") is not None) or "-"
    print(f"\nfastvec-train beside PureJaxRL-style PPO on gymnax: seconds to the threshold per seed (the mean of the "
          f"last {window} finished episodes; '>' a seed that never crossed: its whole training time)")
    print(f"{'env':<20} {'kind':<10} {'thr':>6} {'fastvec s':<24} {'peer s':<24} {'ratio':>8}")
    for r in rows:
        thr = "-" if r["threshold"] is None else f"{r['threshold']:g}"
        print(f"{r['env']:<20} {r['kind']:<10} {thr:>6} {seeds(r['fastvec_seeds']):<24} {seeds(r['peer_seeds']):<24} "
              f"{r['ratio_text']:>8}{'' if r['fair'] else '  (not like for like)'}")
        if r.get("same_return"):
            same = r["same_return"]
            print(f"    same return {same['return']:.1f} (finals: fastvec {same['fastvec_final']:.1f}, peer "
                  f"{same['peer_final']:.1f}); seconds to it: fastvec {same['fastvec_s']}, peer {same['peer_s']}")
        for key in ("fastvec_refused", "peer_error", "sweep_error"):
            if r.get(key):
                print(f"    {key}: {r[key]}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["pendulum", "acrobot"], help=", ".join([*CLASSIC, *MINATAR]))
    parser.add_argument("--kinds", nargs="+", default=["published", "tuned"], choices=KINDS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[11, 12, 13],
                        help="training seeds of every row (the sweeps train seed 1)")
    parser.add_argument("--window", type=int, default=WINDOW_EPISODES, help="K: the last K finished episodes")
    parser.add_argument("--fastvec-device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--max-seconds", type=float, default=SAFETY_CAP_S,
                        help="safety cap on a run's training seconds (a run it stops is marked capped)")
    parser.add_argument("--total-seconds", type=float, default=0.0,
                        help="start no row's work after this many seconds of the script (0: no limit); skipped "
                             "work is listed in the JSON")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=16, help="tuned: trials per side")
    parser.add_argument("--trial-seconds", type=float, default=2.0, help="tuned: training seconds per trial")
    parser.add_argument("--batch", type=int, default=4, help="tuned: trials asked at once (peer compiles together)")
    parser.add_argument("--sampler-seed", type=int, default=0)
    parser.add_argument("--fix", nargs="*", default=[], metavar="NAME=VALUE",
                        help="tuned: fix a shared-space entry on both sides (sweep_peer.py --fix)")
    parser.add_argument("--peer-set", nargs="*", default=[], metavar="[ENV:]KEY=VALUE",
                        help="published and shipped: change the peer's PureJaxRL settings (fastvec's shape follows)")
    parser.add_argument("--fastvec-set", nargs="*", default=[], metavar="[ENV:]SECTION.KEY=VALUE",
                        help="shipped: change fastvec's config, for every env or one")
    parser.add_argument("--peer-python", default=sys.executable, help="the Python with JAX, optax and gymnax")
    parser.add_argument("--out", default=str(RESULTS / "train_peers.json"))
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="only merge these earlier outputs (the same rows on other seeds) into --out")
    args = parser.parse_args(argv)
    if args.merge:
        merge(args.merge, args.out)
        return
    unknown = [name for name in args.envs if name not in {**CLASSIC, **MINATAR}]
    if unknown:
        parser.error(f"unknown env(s) {unknown}; choose from {', '.join([*CLASSIC, *MINATAR])}")

    start = time.perf_counter()
    run_root = Path(tempfile.mkdtemp(prefix="train_peers-"))
    out = {"date": date.today().isoformat(), "machine": platform.platform(), "cores": os.cpu_count(),
           "python": platform.python_version(), "command": shlex.join(["python", "benchmarks/train_peers.py",
                                                                      *(sys.argv[1:] if argv is None else argv)]),
           "fastvec_device": args.fastvec_device, "seeds": args.seeds, "window": args.window,
           "smoothing": f"the mean return of the last {args.window} finished episodes (by count; each update's "
                        "episodes known as a mean and a count, the oldest update in the window weighted by the "
                        "episodes it still contributes); crossed at the first update where it is >= the threshold",
           "max_seconds": args.max_seconds, "eval_episodes": args.eval_episodes,
           "sweep": {"trials": args.trials, "trial_seconds": args.trial_seconds, "batch": args.batch,
                     "sampler_seed": args.sampler_seed, "fix": args.fix},
           "peer_set": args.peer_set, "fastvec_set": args.fastvec_set, "rows": [], "skipped": []}
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

    def left() -> float:
        return args.total_seconds - (time.perf_counter() - start) if args.total_seconds else 86_400.0

    def cap() -> float:  # the safety cap, shortened to what --total-seconds leaves (a run it stops is marked)
        return max(min(args.max_seconds, left()), 1.0)

    def timeout() -> float:  # a subprocess's limit: what --total-seconds leaves
        return max(left(), 30.0)

    def fastvec_seeds(env, threshold, settings, total=None):
        return [fastvec_run(env, seed, args.fastvec_device, threshold, cap(), args.eval_episodes, total,
                            run_root, settings, args.window) for seed in args.seeds]

    published_peers: dict = {}
    for kind in args.kinds:
        for env in args.envs:
            gymnax_id, threshold = {**CLASSIC, **MINATAR}[env]
            if left() <= 0:
                out["skipped"].append(f"{kind} {env}")
                continue
            extra: dict = {}
            if kind in ("published", "shipped"):
                if env not in published_peers:
                    published_peers[env] = peer_runs(gymnax_id, args.seeds, threshold, cap(),
                                                     args.eval_episodes, args.peer_python, timeout(),
                                                     peer_items(args.peer_set, env), args.window)
                peer = published_peers[env]
                if kind == "published":
                    config = purejaxrl_ppo.published(peer_family(env),
                                                    purejaxrl_ppo.parse_overrides(peer_items(args.peer_set, env)))
                    per_update, _, updates = purejaxrl_ppo.budget_steps(config)
                    settings, unmapped = fastvec_in_peer_shape(config, per_update * updates)
                    extra.update(fastvec_settings=settings, unmapped=unmapped)
                else:
                    settings = fastvec_settings(args.fastvec_set, env)
                    extra["fastvec_settings"] = settings
                fastvec = fastvec_seeds(env, threshold, settings)
            else:
                if threshold is None:
                    out["skipped"].append(f"tuned {env}: no threshold for the time_to_target sweep")
                    continue
                sweeps = {side: sweep_side(env, side, args, args.peer_python, timeout())
                          for side in ("fastvec", "peer")}
                extra["sweeps"] = {side: {k: v for k, v in s.items() if k != "stderr_tail"}
                                   for side, s in sweeps.items()}
                extra["sweep_trials_done"] = {side: len(s.get("records", [])) for side, s in sweeps.items()}
                extra["equal_trials"] = len(set(extra["sweep_trials_done"].values())) == 1
                errors = [f"{side}: {s.get('error') or 'no trial completed'}" for side, s in sweeps.items()
                          if "best" not in s]
                if errors:
                    extra["sweep_error"] = "; ".join(errors)
                    out["rows"].append(summarize(env, kind, threshold, [], {}, args.window, extra))
                    continue
                settings = sweeps["fastvec"]["best"]["settings"]
                items = [f"{k}={json.dumps(v)}" for k, v in sweeps["peer"]["best"]["overrides"].items()]
                extra["fastvec_settings"] = settings
                fastvec = fastvec_seeds(env, threshold, settings)
                peer = peer_runs(gymnax_id, args.seeds, threshold, cap(), args.eval_episodes,
                                 args.peer_python, timeout(), items, args.window)
            extra["fastvec_command"] = fastvec_command(env, args.fastvec_device,
                                                       layer({"env": fastvec_env_overrides(env)}, settings))
            row = summarize(env, kind, threshold, fastvec, peer, args.window, extra)
            out["rows"].append(row)
            print(json.dumps({"env": env, "kind": kind, "ratio": row["ratio_text"],
                              **{side: [(s["time_s"], s["reached"], s["sps"]) for s in row[side + "_seeds"]]
                                 for side in ("fastvec", "peer")}}), flush=True)
            write(out, args.out, start)  # each row as it lands: a run stopped from outside keeps the rows before
    shutil.rmtree(run_root, ignore_errors=True)  # the runs' checkpoints: only their numbers are kept
    print_table(out["rows"], args.window)
    if out["skipped"]:
        print(f"skipped: {', '.join(out['skipped'])}")
    print(f"wrote {write(out, args.out, start)} ({out['wall_s']} s)")


EXTRA_KEYS = ("fastvec_settings", "unmapped", "sweeps", "sweep_trials_done", "equal_trials", "sweep_error",
              "fastvec_command")  # what a row carries besides summarize's own keys


def merge(paths: list[str], out_path: str) -> dict:
    """Runs of the same rows on other seeds as one JSON: each (env, kind)'s seeds from every file, summarised again
    over all of them (medians, ratio, same return). The files must agree on the GPU, the window and each row's
    settings on both sides, and no seed may appear twice."""
    docs = [json.loads(Path(p).read_text()) for p in paths]
    for key in ("gpu", "window", "fastvec_device"):
        if len({json.dumps(d.get(key)) for d in docs}) > 1:
            raise SystemExit(f"train_peers --merge: the files differ in {key!r} "
                             f"({', '.join(str(d.get(key)) for d in docs)}); merge runs of one machine and rule")
    parts: dict = {}
    for d in docs:
        for r in d["rows"]:
            parts.setdefault((r["env"], r["kind"]), []).append(r)
    rows = []
    for (env, kind), same in parts.items():
        for key in ("fastvec_settings", "peer_config", "threshold"):
            if len({json.dumps(r.get(key), sort_keys=True) for r in same}) > 1:
                raise SystemExit(f"train_peers --merge: {env} ({kind}) ran with different {key} in these files; "
                                 "merge runs of one configuration")
        fastvec = [s for r in same for s in r["fastvec_seeds"]]
        seeds = [s["seed"] for s in fastvec]
        if len(set(seeds)) != len(seeds):
            raise SystemExit(f"train_peers --merge: {env} ({kind}) has seed(s) "
                             f"{sorted({x for x in seeds if seeds.count(x) > 1})} in more than one file")
        first = same[0]
        peer = {"runs": [s for r in same for s in r["peer_seeds"]], "compile_s": first.get("peer_compile_s"),
                "warmup_s": first.get("peer_warmup_s"), "error": first.get("peer_error"),
                "command": first.get("peer_command"), "config": first.get("peer_config"),
                "device": first.get("peer_device"), "jax": first.get("peer_jax")}
        extra = {k: first[k] for k in EXTRA_KEYS if k in first}
        rows.append(summarize(env, kind, first["threshold"], fastvec, peer, first["window"], extra))
    out = {**docs[0], "date": max(d["date"] for d in docs),
           "command": shlex.join(["python", "benchmarks/train_peers.py", "--merge", *paths]),
           "merged_from": [{k: d.get(k) for k in ("date", "command", "commit", "seeds")} for d in docs],
           "seeds": sorted({s for d in docs for s in d["seeds"]}), "rows": rows,
           "skipped": [s for d in docs for s in d.get("skipped", [])],
           "wall_s": round(sum(d.get("wall_s", 0.0) for d in docs), 1)}
    path = Path(out_path)
    path.write_text(json.dumps(out, indent=1, default=str))
    print_table(rows, out["window"])
    print(f"wrote {path}")
    return out


def write(out: dict, path: str, start: float) -> Path:
    out["wall_s"] = round(time.perf_counter() - start, 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str))
    return path


if __name__ == "__main__":
    main()
