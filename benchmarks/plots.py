"""PNG plots from the benchmark JSON files in benchmarks/results/: throughput against the number of
envs for every table of steps/s, time-to-target bars for cleanrl_compare_*.json, and learning curves
where a result carries one. Writes <out-dir>/<name>.png (default benchmarks/results/plots/).

    pip install matplotlib
    python benchmarks/plots.py benchmarks/results/env_steps_cpu.json benchmarks/results/env_steps_gpu.json
    python benchmarks/plots.py --out-dir /tmp/plots     # every benchmarks/results/*.json
    python benchmarks/plots.py benchmarks/results/breakout_time_to_850.json --x seconds   # curves over training time

The README shows plots/env_steps_cpu.png and plots/env_steps_gpu.png, made by the first command, and
BENCHMARKS.md the Breakout curves of the third; only the plots the two documents show are kept in the repository.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# Row keys that describe a row rather than measure a throughput.
NOT_THROUGHPUT = {"num_envs", "num_games", "speedup", "steps", "seconds", "rollout_steps", "params"}


def subtitle(data: dict) -> str:
    parts = [str(data[k]) for k in ("machine", "device", "date") if data.get(k)]
    return ", ".join(parts)[:110]


def plot_throughput(name: str, data: dict, out: Path) -> bool:
    """Steps/s against num_envs, one line per measured column, log-log."""
    rows = [r for r in data.get("rows", []) if isinstance(r, dict) and "num_envs" in r]
    columns = sorted({k for r in rows for k, v in r.items()
                      if k not in NOT_THROUGHPUT and isinstance(v, (int, float)) and not isinstance(v, bool)})
    if not rows or not columns:
        return False
    series = {column: sorted((r["num_envs"], r[column]) for r in rows if isinstance(r.get(column), (int, float)))
              for column in columns}
    series = {c: pts for c, pts in series.items() if len(pts) >= 2}  # one-size comparisons stay in the tables
    series = {c: pts for c, pts in series.items() if not c.endswith(" kernel")}  # forced-kernel sweeps: tables only
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for column, points in series.items():
        ax.plot(*zip(*points), marker="o", label=column)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of envs")
    ax.set_ylabel("env steps per second")
    ax.set_title(f"{name}\n{subtitle(data)}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def plot_time_to_target(name: str, data: dict, out: Path) -> bool:
    """cleanrl_compare: median training seconds to the target return, each run as a dot."""
    runs = data.get("runs")
    if not runs or not all("setup" in r for r in runs):
        return False
    setups = list(dict.fromkeys(r["setup"] for r in runs))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for y, setup in enumerate(setups):
        hit = [r["train_seconds"] for r in runs if r["setup"] == setup and r["reached_target"]]
        missed = sum(1 for r in runs if r["setup"] == setup and not r["reached_target"])
        if hit:
            ax.barh(y, statistics.median(hit), color="C0" if "fastvec" in setup else "C7", alpha=0.7)
            ax.plot(hit, [y] * len(hit), "k.", markersize=8)
        label = setup + (f" ({missed} missed)" if missed else "")
        ax.text(0, y + 0.42, label, fontsize=8, va="bottom")
    ax.set_yticks([])
    ax.set_ylim(-0.6, len(setups) - 0.1)
    ax.set_xlabel(f"training seconds to a mean return of {data.get('target', 475):g} (bar: median; dots: seeds)")
    ax.set_title(f"{name}: {data.get('num_envs')} envs x {data.get('num_steps')} steps\n{subtitle(data)}", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def find_curves(data, path=()) -> list[tuple[str, list]]:
    """Every "curve" in the file: a list of [step, value] pairs or of dicts with a step and a return."""
    found = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == "curve" and isinstance(v, list) and v:
                found.append(("/".join(map(str, path)) or "curve", v))
            else:
                found += find_curves(v, path + (data.get("name", k) if k in ("rows", "runs") else k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            label = v.get("name") or v.get("setup") or v.get("env") or i if isinstance(v, dict) else i
            found += find_curves(v, path + (label,))
    return found


def curve_points(curve: list, x_axis: str = "steps") -> list[tuple[float, float]]:
    """(x, return) pairs of a curve; x_axis "seconds" takes the points' training time ("time"), dicts only."""
    x_keys = ("time",) if x_axis == "seconds" else ("global_step", "step", "steps", "env_steps")
    points = []
    for p in curve:
        if isinstance(p, (list, tuple)) and len(p) >= 2 and x_axis == "steps":
            points.append((float(p[0]), float(p[1])))
        elif isinstance(p, dict):
            x = next((p[k] for k in x_keys if k in p), None)
            y = next((p[k] for k in ("mean_return", "return", "episode_return", "score") if k in p), None)
            if x is not None and y is not None:
                points.append((float(x), float(y)))
    return points


def plot_curves(name: str, data: dict, out: Path, x_axis: str = "steps") -> bool:
    curves = [(label, curve_points(c, x_axis)) for label, c in find_curves(data)]
    curves = [(label, pts) for label, pts in curves if pts]
    if not curves:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, pts in curves:
        ax.plot(*zip(*pts), label=str(label)[:60])
    ax.set_xlabel("training seconds" if x_axis == "seconds" else "env steps")
    ax.set_ylabel("mean episodic return")
    ax.set_title(f"{name}: learning curves\n{subtitle(data)}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="result JSON files (default: every benchmarks/results/*.json)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS / "plots")
    parser.add_argument("--x", choices=["steps", "seconds"], default="steps", help="the learning curves' x axis")
    args = parser.parse_args()
    files = args.files or sorted(RESULTS.glob("*.json"))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            print(f"skip {path}: {err}")
            continue
        if not isinstance(data, dict):
            print(f"skip {path}: not a JSON object")
            continue
        made = []
        curves = lambda name, data, out: plot_curves(name, data, out, args.x)  # noqa: E731
        for kind, plot in (("", plot_throughput), ("", plot_time_to_target), ("_curves", curves)):
            out = args.out_dir / f"{path.stem}{kind}.png"
            if plot(path.stem, data, out):
                made.append(out)
        print(f"{path.name}: " + (", ".join(str(m) for m in made) if made else "no plottable table found"))


if __name__ == "__main__":
    main()
