"""CleanRL's ppo_continuous_action.py beside fastvec-train on Gymnasium's MuJoCo tasks, in one run on one machine:
CleanRL trains each task with its defaults (1M steps) on every seed; its return, the mean of its last 100 episodes,
is then fastvec's target, and fastvec-train's time to it (the same rule over fastvec's episodes) is compared with
CleanRL's training time. Writes benchmarks/results/cleanrl_mujoco.json.

    python benchmarks/peers/cleanrl_mujoco.py --cleanrl ~/cleanrl --cleanrl-python ~/cleanrl/.venv/bin/python
    python benchmarks/peers/cleanrl_mujoco.py --cleanrl ~/cleanrl --tasks hopper --seeds 1 --parallel 3
    python benchmarks/peers/cleanrl_mujoco.py --cleanrl ~/cleanrl --cleanrl-only --parallel 12 \
        --cleanrl-args=--no-cuda --out peer.json
    python benchmarks/peers/cleanrl_mujoco.py --cleanrl-results peer.json --fastvec-set env.num_envs=256

--cleanrl-only runs CleanRL's side alone (every task and seed, --parallel at once) and --cleanrl-results reads those
runs for fastvec's side; --fastvec-only runs fastvec's side alone, its whole budget with no target yet (each run's
curve kept), and --fastvec-results reads those runs back. Together they let both sides train at once on one machine,
each on its own cores (taskset), where one sitting cannot hold them one after the other:

    taskset -c 0-5 python benchmarks/peers/cleanrl_mujoco.py --cleanrl ~/cleanrl --cleanrl-only --parallel 6 \
        --tasks halfcheetah ant --out peer.json &
    taskset -c 6-15 python benchmarks/peers/cleanrl_mujoco.py --fastvec-only --tasks halfcheetah ant --out fv.json
    python benchmarks/peers/cleanrl_mujoco.py --cleanrl-results peer.json --fastvec-results fv.json \
        --tasks halfcheetah ant

--fastvec-set gives fastvec's shape.
On a machine with a GPU CleanRL's script uses it by default (--cuda); on the H100 host it ran 2.1x faster with
--no-cuda (907 against 429 steps/s, Hopper), so give the peer its faster device.

--cleanrl: a checkout of CleanRL's public sources (or its cleanrl/ppo_continuous_action.py); --cleanrl-python: a
Python with what that script needs as CleanRL pins it (gymnasium 0.29 with MuJoCo, torch, tyro, tensorboard).
CleanRL's script reads episodes through gymnasium 0.29's vector infos, so it runs the v4 tasks there; fastvec runs
the v5 task with v5's keywords set to v4's defaults where they differ (TASKS), and the JSON names what else differs.
Each CleanRL run is a process of its own with one torch thread (OMP_NUM_THREADS=1), `--parallel` of them at once on
a machine with the cores; its training time is its own clock (global steps over its last printed SPS), beside the
process's wall time. fastvec runs one seed at a time after CleanRL's runs end, its whole budget, on --fastvec-device.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
from fairness import WINDOW_EPISODES, final_window_mean, peer_threshold, ratio  # noqa: E402

# fastvec task -> (CleanRL's env id, fastvec [env] keywords that give the v4 task's defaults, what still differs)
TASKS = {
    "hopper": ("Hopper-v4", {}, "v5 gives the healthy reward only while healthy (the same under termination)"),
    "halfcheetah": ("HalfCheetah-v4", {}, "none in the defaults"),
    "walker2d": ("Walker2d-v4", {}, "v5's model gives both feet the same friction (v4: the left foot 1.9, "
                                    "the right 0.9) and the healthy reward only while healthy"),
    "invertedpendulum": ("InvertedPendulum-v4", {}, "none in the defaults"),
    "ant": ("Ant-v4", {"include_cfrc_ext_in_observation": 0, "contact_cost_weight": 0.0},
            "v5 gives the healthy reward only while healthy; contact forces left out as v4's default"),
}
EPISODE_LINE = re.compile(r"global_step=(\d+), episodic_return=\[?\s*([-+0-9.eE]+)\s*\]?")
SPS_LINE = re.compile(r"^SPS: (\d+)", re.M)


def script_path(cleanrl: Path) -> Path:
    """CleanRL's ppo_continuous_action.py inside a checkout (or the file itself), as an absolute path (CleanRL's
    processes run in a directory of their own); errors say what was looked for."""
    path = cleanrl if cleanrl.is_file() else cleanrl / "cleanrl" / "ppo_continuous_action.py"
    if not path.is_file():
        raise SystemExit(f"--cleanrl {cleanrl}: no cleanrl/ppo_continuous_action.py there; give a checkout of "
                         "github.com/vwxyzjn/cleanrl or the script's path")
    return path.resolve()


def cleanrl_command(python: str, script: Path, env_id: str, seed: int, total_timesteps: int,
                    extra: list[str]) -> list[str]:
    """The command of one CleanRL run: its defaults but the env, the seed and the budget."""
    if os.sep in python:  # a path: CleanRL's processes run in a directory of their own
        python = str(Path(python).resolve())
    return [python, str(script), "--env-id", env_id, "--seed", str(seed), "--total-timesteps", str(total_timesteps),
            *extra]


def parse_cleanrl(text: str) -> dict:
    """CleanRL's printed episodes as one-episode groups (steps, seconds unknown, return, 1) and its training time:
    global steps over the last SPS it printed (its clock starts after the envs are made)."""
    groups = [(int(m.group(1)), None, float(m.group(2)), 1) for m in EPISODE_LINE.finditer(text)]
    sps = [int(s) for s in SPS_LINE.findall(text)]
    steps = max((g[0] for g in groups), default=0)
    return {"groups": groups, "episodes": len(groups), "last_sps": sps[-1] if sps else None,
            "train_s": round(steps / sps[-1], 3) if sps and sps[-1] > 0 else None}


def cleanrl_run(cmd: list[str], workdir: Path, timeout: float) -> dict:
    """One CleanRL process (one torch thread), its output parsed; a failure keeps its last lines."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        text = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        return {**parse_cleanrl(text), "error": f"stopped after {timeout:.0f} s", "wall_s": round(timeout, 3)}
    out = {**parse_cleanrl(proc.stdout), "wall_s": round(time.perf_counter() - t0, 3)}
    if proc.returncode != 0:
        out["error"] = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return out


def task_summary(task: str, cleanrl: list[dict], fastvec: list[dict], window: int) -> dict:
    """CleanRL's return (fairness.peer_threshold of its seeds) as fastvec's target, and the ratio of CleanRL's median
    training time to fastvec's median time to that target (every seed counted; a fastvec seed that never reaches it
    counts as its whole training time, and the ratio is then a bound)."""
    finals = [r["final_return"] for r in cleanrl if r.get("final_return") is not None]
    target = peer_threshold(finals)
    times = [r["train_s"] for r in cleanrl if r.get("train_s") is not None]
    row = {"task": task, "cleanrl_env": TASKS[task][0], "target_return": target, "cleanrl_returns": finals,
           "cleanrl_train_s": times, "fastvec_eval_returns": [r.get("eval_return") for r in fastvec]}
    fastvec_times = [r["time_s"] for r in fastvec if r.get("time_s") is not None]
    fastvec_bounds = [r["lower_bound"] for r in fastvec if r.get("time_s") is not None]
    row.update(ratio(times, [False] * len(times), fastvec_times, fastvec_bounds))
    row["fastvec_time_to_target_s"], row["fastvec_missed"] = fastvec_times, fastvec_bounds
    return row


def cleanrl_side(args, script: Path, root: Path, save=None) -> dict:
    """Every (task, seed) CleanRL run, `--parallel` processes at once over all of them: {task: [run, ...]} in seed
    order; save(runs so far) after each run ends, so that a sitting cut short keeps the runs that finished."""
    jobs = [(task, seed, cleanrl_command(args.cleanrl_python, script, TASKS[task][0], seed, args.total_timesteps,
                                         args.cleanrl_args)) for task in args.tasks for seed in args.seeds]
    out: dict = {task: [] for task in args.tasks}
    with ThreadPoolExecutor(max_workers=max(args.parallel, 1)) as pool:
        running = {pool.submit(cleanrl_run, cmd, root, args.cleanrl_timeout): (task, seed, cmd)
                   for task, seed, cmd in jobs}
        for done in as_completed(running):
            task, seed, cmd = running[done]
            run = done.result()
            run["final_return"] = final_window_mean(run.pop("groups"), args.window)
            out[task].append({"seed": seed, "command": " ".join(cmd[1:]), **run})
            out[task].sort(key=lambda r: r["seed"])
            if save is not None:
                save(out)
    return out


def stored_side(path: Path, side: str, tasks: list[str], seeds: list[int]) -> tuple[dict, dict]:
    """One side's runs from a --cleanrl-only or --fastvec-only file (side: "cleanrl" or "fastvec"): {task: [run,
    ...]} for `tasks` and `seeds`, and how they ran; a task or seed the file lacks is an error that names it."""
    stored, who = json.loads(path.read_text()), "CleanRL" if side == "cleanrl" else "fastvec"
    runs = {}
    for task in tasks:
        have = {r["seed"]: r for r in stored[side].get(task, [])}
        missing = [s for s in seeds if s not in have]
        if missing:
            raise SystemExit(f"--{side}-results {path}: no {who} run of {task} on seeds {missing}; "
                             f"it holds {sorted(have)}")
        runs[task] = [have[s] for s in seeds]
    how = {k: stored[k] for k in ("date", "machine", "cpus", "parallel", "total_timesteps", "cleanrl_script",
                                  "fastvec_device", "fastvec_settings") if k in stored}
    return runs, how


SITTING_KEYS = ("date", "machine", "cpus", "parallel", "fastvec_device", "fastvec_settings", "cleanrl_results",
                "fastvec_results", "note")


def kept_rows(path: Path, tasks: list[str]) -> list[dict]:
    """The rows of a cleanrl_mujoco.json of an earlier sitting for the tasks not in `tasks`, each with its sitting
    (a row written before rows named theirs takes its file's)."""
    stored = json.loads(path.read_text())
    sitting = {k: stored[k] for k in SITTING_KEYS if k in stored}
    return [{**r, "sitting": r.get("sitting", sitting)} for r in stored["rows"] if r["task"] not in tasks]


def fastvec_task_runs(args, task: str, shape: dict, target, tmp: Path) -> list[dict]:
    """fastvec-train on `task` for every seed, one at a time, each over its whole budget (target None: no target
    yet, the time to it is read later from the run's curve)."""
    from train_peers import fastvec_run  # fastvec's side as the PureJaxRL comparison runs it

    keywords = TASKS[task][1]
    settings = {**shape, "env": {**keywords, **shape.get("env", {})}} if keywords else shape
    return [fastvec_run(task, seed, args.fastvec_device, target, args.fastvec_max_seconds, args.eval_episodes,
                        args.fastvec_timesteps, tmp, settings or None, args.window) for seed in args.seeds]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cleanrl", type=Path, help="a CleanRL checkout or its ppo_continuous_action.py")
    parser.add_argument("--cleanrl-python", default=sys.executable, help="a Python with CleanRL's pinned packages")
    parser.add_argument("--cleanrl-args", nargs="*", default=[], help="more arguments for CleanRL's script")
    parser.add_argument("--cleanrl-only", action="store_true",
                        help="run CleanRL's side alone and write its runs to --out (for --cleanrl-results)")
    parser.add_argument("--cleanrl-results", type=Path, default=None,
                        help="CleanRL's runs from an earlier --cleanrl-only run on the same kind of machine")
    parser.add_argument("--fastvec-only", action="store_true",
                        help="run fastvec's side alone, with no target, and write its runs to --out")
    parser.add_argument("--fastvec-results", type=Path, default=None,
                        help="fastvec's runs from a --fastvec-only run on the same machine")
    parser.add_argument("--tasks", nargs="+", default=["hopper", "halfcheetah", "walker2d", "ant"], choices=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--total-timesteps", type=int, default=1_000_000, help="CleanRL's budget (its default)")
    parser.add_argument("--parallel", type=int, default=1, help="CleanRL processes at once, over all tasks and seeds")
    parser.add_argument("--cleanrl-timeout", type=float, default=3600.0)
    parser.add_argument("--fastvec-device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--fastvec-max-seconds", type=float, default=None, help="a safety cap on each fastvec run")
    parser.add_argument("--fastvec-timesteps", type=int, default=None, help="fastvec's budget (default: its config's)")
    parser.add_argument("--fastvec-set", nargs="*", default=[], metavar="SECTION.KEY=VALUE",
                        help="fastvec-train settings over the task's config (its shape), as on its command line")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--window", type=int, default=WINDOW_EPISODES, help="K: the last K finished episodes")
    parser.add_argument("--out", type=Path, default=RESULTS / "cleanrl_mujoco.json")
    parser.add_argument("--note", default="", help="how the sides shared the machine, kept in the JSON")
    parser.add_argument("--keep-rows", type=Path, default=None, metavar="FILE",
                        help="keep FILE's rows of the tasks not given (each row names its sitting)")
    args = parser.parse_args(argv)
    if args.cleanrl_only and args.fastvec_only:
        parser.error("--cleanrl-only and --fastvec-only each run one side: give one of them")
    if args.cleanrl_results is None and args.cleanrl is None and not args.fastvec_only:
        parser.error("give --cleanrl (a CleanRL checkout to run) or --cleanrl-results (its runs from --cleanrl-only)")
    from mujoco_gpu_train import parse_sets, settings_of
    from train_peers import timed

    shape = settings_of(parse_sets(args.fastvec_set))
    out = {"benchmark": "cleanrl_mujoco", "date": date.today().isoformat(), "machine": platform.node(),
           "cpus": len(os.sched_getaffinity(0)), "fastvec_device": args.fastvec_device, "window": args.window,
           "total_timesteps": args.total_timesteps, "parallel": args.parallel, "fastvec_settings": shape,
           "rule": f"target: the median over CleanRL's seeds of its last {args.window} episodes' mean return after "
                   f"{args.total_timesteps:,} steps; fastvec's time to the same mean over its last {args.window}",
           "rows": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    kept = kept_rows(args.keep_rows, args.tasks) if args.keep_rows is not None else []  # read before --out is written
    with tempfile.TemporaryDirectory(prefix="cleanrl-mujoco-") as tmp:
        if args.fastvec_only:
            runs: dict = {}
            fastvec_file = {k: v for k, v in out.items() if k not in ("rows", "rule", "total_timesteps", "parallel")}
            for task in args.tasks:
                runs[task] = fastvec_task_runs(args, task, shape, None, Path(tmp))
                args.out.write_text(json.dumps({**fastvec_file, "benchmark": "cleanrl_mujoco_fastvec",
                                                "fastvec": runs}, indent=1) + "\n")  # a cut-short run keeps its tasks
            print(f"wrote {args.out}")
            return
        if args.cleanrl_results is not None:
            peer, out["cleanrl_ran"] = stored_side(args.cleanrl_results, "cleanrl", args.tasks, args.seeds)
            out["cleanrl_results"] = str(args.cleanrl_results)
        else:
            script = script_path(args.cleanrl)
            out["cleanrl_script"] = str(script)
            peer_file = {k: v for k, v in out.items() if k not in ("rows", "fastvec_settings", "fastvec_device")}

            def save(runs):
                args.out.write_text(json.dumps({**peer_file, "benchmark": "cleanrl_mujoco_peer", "cleanrl": runs},
                                               indent=1) + "\n")

            peer = cleanrl_side(args, script, Path(tmp), save if args.cleanrl_only else None)
        if args.cleanrl_only:
            print(f"wrote {args.out}")
            return
        stored = None
        if args.fastvec_results is not None:
            stored, fastvec_ran = stored_side(args.fastvec_results, "fastvec", args.tasks, args.seeds)
            out.update(fastvec_results=str(args.fastvec_results), fastvec_ran=fastvec_ran,
                       fastvec_device=fastvec_ran.get("fastvec_device"),
                       fastvec_settings=fastvec_ran.get("fastvec_settings"))
        if stored is not None and args.cleanrl_results is not None:  # both sides ran elsewhere: say where, not here
            ran = out["cleanrl_ran"]
            out.update(date=ran.get("date"), machine=ran.get("machine"), parallel=ran.get("parallel"),
                       cpus={"cleanrl": ran.get("cpus"), "fastvec": fastvec_ran.get("cpus")})
        if args.note:
            out["note"] = args.note
        sitting = {k: out[k] for k in SITTING_KEYS if k in out}
        out["rows"] = kept

        def write():  # after every task: a cut-short run keeps what it has
            out["rows"].sort(key=lambda r: list(TASKS).index(r["task"]))
            args.out.write_text(json.dumps(out, indent=1) + "\n")

        for task in args.tasks:
            keywords, differs = TASKS[task][1], TASKS[task][2]
            cleanrl = peer[task]
            target = peer_threshold(r["final_return"] for r in cleanrl)
            if target is None:  # no CleanRL episode finished: nothing to time fastvec to; the other tasks go on
                out["rows"].append({"task": task, "error": "CleanRL finished no episode", "sitting": sitting,
                                    "cleanrl": cleanrl})
                write()
                continue
            if stored is None:
                fastvec = fastvec_task_runs(args, task, shape, target, Path(tmp))
            else:  # the same reading fastvec_run gives, now that the target is known
                fastvec = [{**r, "threshold": target, **timed(r, target, args.window)} for r in stored[task]]
            row = task_summary(task, cleanrl, fastvec, args.window)
            row.update(fastvec_env_keywords=keywords, differences=differs, sitting=sitting, cleanrl=cleanrl,
                       fastvec=[{k: v for k, v in r.items() if k != "groups"} for r in fastvec])
            out["rows"].append(row)
            print(f"{task:<12} CleanRL {row['target_return']:9.1f} in {row['peer_median_s'] or float('nan'):7.1f} s | "
                  f"fastvec to it {row['fastvec_median_s'] or float('nan'):7.1f} s | {row['ratio_text']}x", flush=True)
            write()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
