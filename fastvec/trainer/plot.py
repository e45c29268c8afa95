"""Plot the learning curves of fastvec-train runs (mean episode return, the env's stats, SPS) as one PNG.

`fastvec-plot RUN_DIR [RUN_DIR ...] [-o OUT.png]` reads each run's metrics.jsonl. Needs matplotlib (the
[plot] extra: pip install 'fastvec[plot]')."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

NON_STAT_KEYS = {"global_step", "time", "sps", "update", "episodes", "episode_return", "episode_length", "time_split"}


def read_metrics(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; give a run directory written by fastvec-train")
    rows, skipped = [], 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict) and "global_step" in row and "time" in row:
                rows.append(row)
            else:  # a partial last line (a run killed mid-write, or a full disk); --resume repairs the file
                skipped += 1
    if skipped:
        print(f"fastvec-plot: warning: skipped {skipped} unreadable line{'s' * (skipped > 1)} of {path}",
              file=sys.stderr)
    return rows


def plot_runs(run_dirs: list[Path], out: Path) -> Path:
    """Write a PNG with return (and env stats) against steps and against time, for every run."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("fastvec-plot needs matplotlib: pip install 'fastvec[plot]' (or pip install matplotlib)") from None
    runs = [(Path(d), read_metrics(d)) for d in run_dirs]
    stats = sorted({k for _, rows in runs for row in rows for k in row
                    if k not in NON_STAT_KEYS and "/" not in k})
    panels = ["episode_return", *stats]
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, 3.2 * len(panels)), squeeze=False)
    for run_dir, rows in runs:
        label = run_dir.name if len(runs) > 1 else None
        for i, key in enumerate(panels):
            points = [(r["global_step"], r["time"], r[key]) for r in rows if r.get(key) is not None]
            if not points:
                continue
            steps, times, values = zip(*points)
            axes[i][0].plot(steps, values, label=label)
            axes[i][1].plot(times, values, label=label)
    for i, key in enumerate(panels):
        axes[i][0].set_ylabel(f"mean {key}")
        axes[i][0].set_xlabel("agent steps")
        axes[i][1].set_xlabel("training time (s)")
        for ax in axes[i]:
            ax.grid(alpha=0.3)
            if len(runs) > 1:
                ax.legend(fontsize=7)
    last = runs[0][1][-1] if runs[0][1] else {}
    fig.suptitle(f"{runs[0][0]}  ({last.get('global_step', 0):,} steps, {last.get('sps', 0):,.0f} SPS)", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fastvec-plot", description=__doc__.split("\n")[0],
                                     epilog="Needs matplotlib: pip install 'fastvec[plot]' (or pip install matplotlib).")
    parser.add_argument("run_dirs", nargs="+", type=Path, help="run directories written by fastvec-train")
    parser.add_argument("-o", "--out", type=Path, help="PNG to write (default RUN_DIR/learning_curve.png)")
    args = parser.parse_args(argv)
    out = args.out or args.run_dirs[0] / "learning_curve.png"
    try:
        print(plot_runs(args.run_dirs, out))
    except (ImportError, FileNotFoundError) as err:
        print(f"fastvec-plot: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"fastvec-plot: error: {err.strerror or err}: {err.filename or out}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
