"""What fastvec-sweep shows and leaves behind: its progress (a live status line on a terminal, plain lines in a pipe
or a file), best.toml (the best trial's config, which fastvec-train ENV --config=PATH trains as is), the Pareto
front's configs, and the plots (score against training seconds, each parameter's effect)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from fastvec.trainer import checkpoint
from fastvec.trainer.dashboard import _isatty, fmt_duration, fmt_number, fmt_si, run_by_a_notebook_kernel

STATUS_LINE_SECONDS = 30.0  # in a pipe or a file, a status line about a long trial at most this often


def objective_text(settings: dict, values, hit: bool = True) -> str:
    """A trial's objective values for people: `2.84 s to 475`, `return 480.2`, `return 480.2 in 3.1 s`; a
    time_to_target trial that missed (hit False): `475 missed (counts as 7.7 s)`."""
    metric = settings["metric"].replace("episode_", "")
    if settings["objective"] == "time_to_target":
        if not hit:
            return f"{fmt_number(settings['target'])} missed (counts as {fmt_number(values[0])} s)"
        return f"{fmt_number(values[0])} s to {fmt_number(settings['target'])}"
    if settings["objective"] == "pareto":
        return f"{metric} {fmt_number(values[0])} in {fmt_number(values[1])} s"
    return f"{metric} {fmt_number(values[0])}"


def pick_best(study, settings: dict):
    """The best complete trial: the single objective's best; for pareto, the fastest trial of the Pareto front
    whose score reaches sweep.target when one does, else the front's highest score. None before any completes."""
    from optuna.trial import TrialState
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        return None
    if settings["objective"] != "pareto":
        return study.best_trial
    front = study.best_trials
    reached = [t for t in front if t.values[0] >= settings["target"]]
    return min(reached, key=lambda t: t.values[1]) if reached else max(front, key=lambda t: t.values[0])


def describe_trial(plan, record: dict) -> str:
    """One line about a finished trial: `trial 7  COMPLETE  2.84 s to 475  (31.2K steps, start-up 0.01 s)  ...`."""
    results = record.get("results") or []
    parts = [f"trial {record['trial']}", record["state"].lower()]
    s = plan.settings
    missed = [r for r in results if r["hit_seconds"] is None] if s["objective"] == "time_to_target" else []
    if record["state"] == "COMPLETE" and missed:  # the objective's penalty, with what the trial reached
        parts.append(f"missed {fmt_number(s['target'])} (best log {fmt_number(max(r['best'] for r in missed))}; "
                     f"counts as {fmt_number(record['values'][0])} s)")
    elif record["state"] == "COMPLETE":
        parts.append(objective_text(s, record["values"]))
    elif results and results[-1]["score"] is not None:
        parts.append(f"{plan.settings['metric'].replace('episode_', '')} {fmt_number(results[-1]['score'])}")
    if results:
        parts.append(f"({fmt_number(sum(r['seconds'] for r in results))} s, {fmt_si(sum(r['steps'] for r in results))} "
                     f"steps, start-up {sum(r['startup'] for r in results):.2f} s)")
    if record.get("error") and record["state"] == "FAIL":
        parts.append(f"error: {record['error']}")
    parts.append(" ".join(f"{k}={fmt_number(v) if isinstance(v, float) else v}" for k, v in record["params"].items()))
    return "  ".join(parts)


class Progress:
    """The sweep's display on stdout: a line per finished trial with the best so far and trials per hour; under
    them, on a terminal, a status line about the running trial redrawn in place, and in a pipe or a file (no
    cursor moves there) a plain status line every STATUS_LINE_SECONDS of a long trial."""

    def __init__(self, plan, study, stream=None):
        self.plan, self.study, self.stream = plan, study, stream or sys.stdout
        self.status_every = STATUS_LINE_SECONDS
        self.terminal = (_isatty(self.stream) and os.environ.get("TERM") != "dumb"
                         and not run_by_a_notebook_kernel())  # a notebook's `!cmd` copies redraws as text
        self.status = ""  # the status line on screen (terminal only)
        self.last_status = 0.0
        self.best_text = "best --"
        s = plan.settings
        budget = f"{fmt_number(s['trial_seconds'])} s" if s["trial_seconds"] else \
            f"{fmt_si(plan.base['train']['total_timesteps'])} steps"
        what = {"score": f"maximise {s['metric']}", "time_to_target": f"least training time to {s['metric']} >= "
                f"{fmt_number(s['target'])}", "pareto": f"{s['metric']} up, training seconds down"}[s["objective"]]
        self.write(f"fastvec-sweep {plan.base['env']['name']}: study {plan.study} ({len(study.trials)} trials so far) "
                   f"in {plan.storage}; {what}; {s['trials'] or 'unlimited'} trials here"
                   f"{', ' + fmt_duration(s['timeout']) + ' at most' if s['timeout'] else ''}, {budget} each, "
                   f"{s['seeds']} seed(s); {s['sampler']} sampler, pruner {s['pruner'] if not plan.multi else 'none'}")
        self.write("searching: " + "; ".join(plan.space.describe()))

    def _emit(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe: the sweep goes on without its display
            pass

    def write(self, line: str, keep_status: bool = True) -> None:
        """A line above the status line, which is redrawn under it (or, with keep_status False, cleared)."""
        erase = "\r\x1b[2K" if self.status else ""
        self.status = self.status if keep_status else ""
        self._emit(erase + line + "\n" + self.status)

    def running(self, number: int, seconds: float, steps: int, value: float) -> None:
        text = (f"trial {number} running: {seconds:.1f} s, {fmt_si(steps)} steps, "
                f"{self.plan.settings['metric'].replace('episode_', '')} {fmt_number(value)}  |  {self.best_text}")
        if self.terminal:
            width = shutil.get_terminal_size().columns - 1
            self.status = text if len(text) <= width else text[:max(width - 3, 0)] + "..."
            self._emit("\r\x1b[2K" + self.status)
        elif time.perf_counter() - self.last_status >= self.status_every:
            self.last_status = time.perf_counter()
            self.write(text)

    def finished(self, line: str, done: int, elapsed: float) -> None:
        """A trial's line, then the best trial so far and this process's trials per hour."""
        best = pick_best(self.study, self.plan.settings)
        if best is not None:
            text = objective_text(self.plan.settings, best.values, best.user_attrs.get("hit", True))
            self.best_text = f"best {text} (trial {best.number})"
        self.last_status = time.perf_counter()
        self.write(f"{line}  |  {self.best_text}  |  {done} done here, {fmt_si(3600 * done / max(elapsed, 1e-9))} "
                   f"trials/h", keep_status=False)

    def note(self, line: str) -> None:
        self.write(line)

    def close(self) -> None:
        if self.status:
            self._emit("\r\x1b[2K")
            self.status = ""


def write_report(plan, study) -> list[str]:
    """best.toml, pareto/NNNN.toml (objective pareto), summary.json and plots/ in the sweep dir, from the study's
    trials (every process's); returns the lines that say what was written."""
    from optuna.trial import TrialState
    out = Path(plan.sweep_dir)
    out.mkdir(parents=True, exist_ok=True)
    trials = study.get_trials(deepcopy=False)
    counts = {state.name.lower(): sum(t.state == state for t in trials) for state in TrialState}
    lines = [f"study {plan.study}: {len(trials)} trials (" + ", ".join(f"{n} {k}" for k, n in counts.items() if n) + ")"]
    best = pick_best(study, plan.settings)
    summary = {"study": plan.study, "storage": plan.storage, "settings": {k: v for k, v in plan.settings.items()},
               "counts": counts, "best": None}
    if best is not None:
        config = best.user_attrs.get("config")
        path = out / "best.toml"
        text = objective_text(plan.settings, best.values, best.user_attrs.get("hit", True))
        checkpoint.atomic_write_text(path, config.replace("\n", f"\n# best of {len(trials)} trials: {text}\n", 1))
        summary["best"] = {"trial": best.number, "values": best.values, "params": best.params,
                           **{k: v for k, v in best.user_attrs.items() if k != "config"}}
        lines.append(f"best: trial {best.number}, {text}, "
                     + " ".join(f"{k}={fmt_number(v) if isinstance(v, float) else v}" for k, v in best.params.items()))
        lines.append(f"wrote {path}; train it: fastvec-train {plan.env} --config={path}")
        if plan.multi:
            (out / "pareto").mkdir(exist_ok=True)
            for trial in study.best_trials:
                checkpoint.atomic_write_text(out / "pareto" / f"{trial.number:04d}.toml", trial.user_attrs["config"])
            lines.append(f"wrote {len(study.best_trials)} Pareto-front configs to {out / 'pareto'}")
    else:
        lines.append("no trial has completed yet, so no best.toml")
    checkpoint.atomic_write_text(out / "summary.json", json.dumps(summary, indent=1, default=str) + "\n")
    lines += write_plots(plan, study, out / "plots")
    return lines


def front_points(trials) -> tuple[list, list]:
    """The completed trials' (training seconds, score) points and the Pareto-optimal ones among them (no other
    trial both faster and higher-scoring), sorted by seconds."""
    points = sorted((t.user_attrs["seconds"], t.user_attrs["score"], t.number) for t in trials
                    if t.user_attrs.get("seconds") is not None and t.user_attrs.get("score") is not None)
    front, best_score = [], -float("inf")
    for point in points:
        if point[1] > best_score:
            front.append(point)
            best_score = point[1]
    return points, front


def write_plots(plan, study, folder: Path) -> list[str]:
    """plots/front.png (every trial's score against its training seconds, the Pareto front drawn through them)
    and plots/params.png (Optuna's slice plot: each parameter against the objective). Needs matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["no plots: they need matplotlib (pip install 'fastvec[plot]')"]
    from optuna.trial import TrialState
    folder.mkdir(parents=True, exist_ok=True)
    s, written = plan.settings, []
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
    points, front = front_points(trials)
    if points:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        pruned = {t.number for t in trials if t.state == TrialState.PRUNED}
        for label, marker, keep in (("complete", "o", False), ("pruned", "x", True)):
            chosen = [p for p in points if (p[2] in pruned) == keep]
            if chosen:
                ax.scatter([p[0] for p in chosen], [p[1] for p in chosen], marker=marker, alpha=0.6, label=label)
        ax.step([p[0] for p in front], [p[1] for p in front], where="post", color="C3", label="Pareto front")
        if s["objective"] == "time_to_target" or (s["objective"] == "pareto" and s["target"]):
            ax.axhline(s["target"], color="grey", linestyle="--", linewidth=1, label=f"target {fmt_number(s['target'])}")
        ax.set_xlabel("training seconds (start-up excluded)")
        ax.set_ylabel(s["metric"])
        ax.set_title(f"{plan.study}: {len(points)} trials")
        ax.legend(loc="lower right")
        fig.tight_layout()
        save_figure(fig, folder / "front.png", 120)
        plt.close(fig)
        written.append(str(folder / "front.png"))
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if any(t.params for t in complete):
        plot_params(plt, plan, complete, pick_best(study, s), folder / "params.png")
        written.append(str(folder / "params.png"))
    return [f"wrote {', '.join(written)}"] if written else []


def plot_params(plt, plan, trials, best, path: Path) -> None:
    """Each searched parameter against the objective (pareto: the score), one panel per parameter, the best
    trial marked: the parameter's effect at a glance (choices on an evenly spaced axis, log ranges on a log axis)."""
    s = plan.settings
    label = {"score": s["metric"], "time_to_target": f"seconds to {fmt_number(s['target'])}",
             "pareto": s["metric"]}[s["objective"]]
    distributions = {}  # the searched keys as the trials record them (every process's, whatever this one searches)
    for trial in trials:
        for name, dist in trial.distributions.items():
            distributions.setdefault(name, dist)
    names = list(distributions)
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        dist = distributions[name]
        shown = [t for t in trials if name in t.params]
        if hasattr(dist, "choices"):
            index = {choice: i for i, choice in enumerate(dist.choices)}
            xs = [index[t.params[name]] for t in shown]
            ax.set_xticks(range(len(dist.choices)), [str(c) for c in dist.choices])
        else:
            xs = [t.params[name] for t in shown]
            if dist.log:
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(plt.NullFormatter())  # minor-tick labels crowd a short range
        ax.scatter(xs, [t.values[0] for t in shown], alpha=0.6, s=18)
        if best is not None and name in best.params:
            x = index[best.params[name]] if hasattr(dist, "choices") else best.params[name]
            ax.scatter([x], [best.values[0]], color="C3", s=60, marker="*", label=f"best (trial {best.number})")
            ax.legend(loc="best", fontsize=7)
        ax.set_xlabel(name)
        ax.set_ylabel(label)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"{plan.study}: {len(trials)} complete trials")
    fig.tight_layout()
    save_figure(fig, path, 110)
    plt.close(fig)


def save_figure(fig, path: Path, dpi: int) -> None:
    """Save a figure whole or not at all (processes sharing a sweep dir each write the plots at their end)."""
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.png")
    fig.savefig(temporary, dpi=dpi)
    os.replace(temporary, path)
