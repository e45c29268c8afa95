"""Env steps per second through the CPU backend's `step()` (random valid actions; SameStep autoreset unless
--autoreset) for every CPU env at one batch size, this tree's fastvec beside another tree's (--compare-source,
e.g. an older commit checked out with `git worktree add`) in the same run. Writes
benchmarks/results/cpu_steps_4096.json (or --out).

    python benchmarks/cpu_steps.py [--compare-source ../fastvec-old] [--num-envs 4096] [--seconds 0.4]
                                   [--rounds 5] [--envs cartpole breakout-minatar ...] [--threads 1 --clock cpu]

Each tree runs in a process of its own (its fastvec imported from its root) that builds every env once and then
times windows on request: for each env and round the two processes time one window each in turn, this tree and the
other alternating which goes first, so that a shared machine's drift falls on both alike. A figure is the median of
an env's windows; the spread is the min-max of the per-round ratios (new / old). --threads 1 --clock cpu counts
steps per second of the process's CPU time: the cost of a step, which other programs on a shared machine change
far less than they change the wall-clock rate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
MIN_STEPS = 4  # steps per window at least (a slow env's window runs past --seconds)

# label -> (env source: a registry key, or ("mpe", scenario) / ("smax", scenario); parameters)
ENV_SPECS = {
    "cartpole": ("cartpole", {}),
    "cartpole float32": ("cartpole", {"float32": 1}),
    "acrobot": ("acrobot", {}),
    "acrobot float32": ("acrobot", {"float32": 1}),
    "mountaincar": ("mountaincar", {}),
    "mountaincarcontinuous": ("mountaincarcontinuous", {}),
    "pendulum": ("pendulum", {}),
    "asterix-minatar": ("asterix-minatar", {}),
    "breakout-minatar": ("breakout-minatar", {}),
    "freeway-minatar": ("freeway-minatar", {}),
    "seaquest-minatar": ("seaquest-minatar", {}),
    "spaceinvaders-minatar": ("spaceinvaders-minatar", {}),
    "breakout": ("breakout", {}),
    "pong": ("pong", {}),
    **{f"mpe {s}": (("mpe", s), {}) for s in ["simple_spread", "simple_tag", "simple_adversary", "simple_push",
                                              "simple_speaker_listener", "simple_reference", "simple_crypto",
                                              "simple_world_comm"]},
    **{f"smax {s}": (("smax", s), {}) for s in ["3m", "2s3z", "8m", "3s5z", "smacv2_5_units"]},
}


# ---------------------------------------------------------------- the child: one tree's fastvec
def open_batch(label: str, num_envs: int, autoreset: str = "SameStep"):
    from fastvec.native.batches import load_batch

    source, params = ENV_SPECS[label]
    if isinstance(source, tuple):
        kind, scenario = source
        if kind == "mpe":
            from fastvec.native import mpe
            from fastvec.native import NATIVE_DIR

            defines = mpe.scenario_defines(scenario, False, {})[0]
            return load_batch(NATIVE_DIR / mpe.SCENARIOS[scenario].source, num_envs, defines, max_episode_steps=25,
                              autoreset=autoreset)
        from fastvec.native import smax
        from fastvec.native import NATIVE_DIR

        return load_batch(NATIVE_DIR / "smax.h", num_envs, smax.scenario_defines(scenario),
                          max_episode_steps=smax.TIME_LIMIT, autoreset=autoreset)
    from fastvec.native import ENVS

    return load_batch(source, num_envs, params, max_episode_steps=ENVS[source].max_episode_steps, autoreset=autoreset)


def random_actions(batch, rng, count: int) -> list:
    """`count` arrays of random actions in the env's action space (the whole range of each discrete value)."""
    import numpy as np

    spaces, shape = batch.env.spaces, batch.actions.shape
    if spaces.action_kind == "box":
        low, high = spaces.action_low.reshape(-1)[: shape[-1]], spaces.action_high.reshape(-1)[: shape[-1]]
        return [rng.uniform(low, high, shape).astype(np.float32) for _ in range(count)]
    nvec = spaces.nvec.reshape(-1)[: shape[-1]]
    return [rng.integers(0, nvec, shape).astype(batch.env.action_dtype) for _ in range(count)]


def child(num_envs: int, autoreset: str) -> None:
    """Builds the envs it is asked for, times windows: one JSON request a line on stdin, one answer on stdout."""
    import numpy as np

    batches = {}
    for line in sys.stdin:
        request = json.loads(line)
        label = request["env"]
        if label not in batches:
            batch = open_batch(label, num_envs, autoreset)
            batch.reset(np.arange(num_envs, dtype=np.uint64), None)
            actions = random_actions(batch, np.random.default_rng(0), 8)
            for a in actions:
                batch.step(a)  # warm-up (and the pool's first choice)
            batches[label] = (batch, actions)
        batch, actions = batches[label]
        clock = time.process_time if request["clock"] == "cpu" else time.perf_counter
        steps, start = 0, clock()
        while clock() - start < request["seconds"] or steps < MIN_STEPS:
            batch.step(actions[steps % len(actions)])
            steps += 1
        rate = steps * num_envs / (clock() - start)
        print(json.dumps({"rate": rate, "file": __import__("fastvec").__file__}), flush=True)


# ---------------------------------------------------------------- the parent
class Tree:
    def __init__(self, root: Path, num_envs: int, threads: int, clock: str, autoreset: str):
        self.root, self.clock = root, clock
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FASTVEC_NUM_THREADS")}
        if threads:
            env["FASTVEC_NUM_THREADS"] = str(threads)
        self.proc = subprocess.Popen([sys.executable, __file__, "--child-of", str(root), "--num-envs", str(num_envs),
                                      "--autoreset", autoreset],
                                     cwd=root, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def window(self, label: str, seconds: float) -> dict:
        self.proc.stdin.write(json.dumps({"env": label, "seconds": seconds, "clock": self.clock}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.root}: the child ended while timing {label}")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare-source", type=Path, help="another fastvec checkout to time beside this one")
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--seconds", type=float, default=0.4, help="timed seconds per window")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--envs", nargs="+", default=list(ENV_SPECS), choices=list(ENV_SPECS), metavar="ENV")
    parser.add_argument("--threads", type=int, default=0, help="FASTVEC_NUM_THREADS of both (0: fastvec's default)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: steps per second of the process's CPU time (with --threads 1, the cost of a step "
                             "whatever else runs on the machine); wall: per elapsed second")
    parser.add_argument("--autoreset", choices=["SameStep", "NextStep", "Disabled"], default="SameStep",
                        help="the batches' autoreset mode (the Gymnasium face's default is NextStep)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child-of", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_of:
        sys.path.insert(0, str(args.child_of))  # that tree's fastvec
        child(args.num_envs, args.autoreset)
        return
    trees = {"new": Tree(ROOT, args.num_envs, args.threads, args.clock, args.autoreset)}
    if args.compare_source:
        trees["old"] = Tree(args.compare_source.resolve(), args.num_envs, args.threads, args.clock, args.autoreset)
    windows = {(name, label): [] for name in trees for label in args.envs}
    loads, files = [], {}
    try:
        for label in args.envs:  # builds (and warms) every env in both trees first
            for name, tree in trees.items():
                files[name] = tree.window(label, 0.0)["file"]
        for r in range(args.rounds):
            for label in args.envs:
                order = list(trees) if r % 2 == 0 else list(trees)[::-1]
                loads.append(os.getloadavg()[0])
                for name in order:
                    windows[name, label].append(trees[name].window(label, args.seconds)["rate"])
                print(f"round {r + 1} {label:<30}" + "".join(
                    f" {name} {windows[name, label][-1] / 1e6:8.2f}M" for name in trees), flush=True)
    finally:
        for tree in trees.values():
            tree.close()

    rows = []
    for label in args.envs:
        row = {"env": label, "new_steps_per_s": statistics.median(windows["new", label]),
               "new_windows": windows["new", label]}
        if "old" in trees:
            ratios = [a / b for a, b in zip(windows["new", label], windows["old", label])]
            row.update(old_steps_per_s=statistics.median(windows["old", label]), old_windows=windows["old", label],
                       ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios))
        rows.append(row)
    clock = "CPU" if args.clock == "cpu" else "wall-clock"
    print(f"\n{args.num_envs:,} envs, {args.threads or 'default'} threads, M env-steps per {clock} second (median of "
          f"{args.rounds} windows of {args.seconds} s); "
          f"1-min load average {min(loads):.1f}-{max(loads):.1f}, {os.cpu_count()} CPUs\n")
    print("| env | old | new | new / old (median) | per-round min-max |\n|---|---:|---:|---:|---|")
    for row in rows:
        if "old" in trees:
            print(f"| {row['env']} | {row['old_steps_per_s'] / 1e6:.2f} | {row['new_steps_per_s'] / 1e6:.2f} | "
                  f"{row['ratio']:.2f} | {row['ratio_min']:.2f}-{row['ratio_max']:.2f} |")
        else:
            print(f"| {row['env']} | - | {row['new_steps_per_s'] / 1e6:.2f} | - | - |")
    out = args.out or RESULTS / f"cpu_steps_{args.num_envs}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": cpu_model(), "cpu_count": os.cpu_count(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "trees": files,
        "commits": {name: git_commit(tree.root) for name, tree in trees.items()},
        "num_envs": args.num_envs, "threads": args.threads or "default", "clock": args.clock,
        "autoreset": args.autoreset,
        "seconds": args.seconds, "rounds": args.rounds,
        "load_average_1min": [min(loads), max(loads)], "rows": rows,
    }, indent=1) + "\n")
    print(f"wrote {out}")


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(root: Path) -> str:
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return proc.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


if __name__ == "__main__":
    main()
