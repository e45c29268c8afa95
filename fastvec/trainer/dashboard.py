"""The live terminal dashboard of fastvec-train: a block of lines redrawn in place with ANSI escapes.
It stays silent when stdout is not a terminal (logs go to RUN_DIR/metrics.jsonl either way)."""

from __future__ import annotations

import sys


def _fmt_duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "--"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _fmt(value) -> str:
    if value is None:
        return "--"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


class Dashboard:
    """Draws the latest metrics; `enabled` only on a TTY (or when forced)."""

    def __init__(self, title: str, total_steps: int, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stdout
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.title, self.total_steps = title, total_steps
        self.lines_drawn = 0
        self.last_episode: dict = {}
        self.last_selfplay: dict = {}  # the latest self-play evaluation (it arrives every eval_interval)

    def update(self, metrics: dict, stat_names: list[str]) -> None:
        if not self.enabled:
            return
        if "episode_return" in metrics:
            self.last_episode = {k: metrics[k] for k in ["episode_return", "episode_length", *stat_names] if k in metrics}
        step, elapsed, sps = metrics["global_step"], metrics["time"], metrics["sps"]
        eta = (self.total_steps - step) / sps if sps > 0 else float("inf")
        timing = metrics.get("time_split", {})
        total_time = sum(timing.values()) or 1.0
        split = "  ".join(f"{k} {100 * v / total_time:.0f}%" for k, v in timing.items())
        episode = "  ".join(f"{k.replace('episode_', '')} {_fmt(v)}" for k, v in self.last_episode.items())
        losses = "  ".join(f"{k.split('/')[-1]} {_fmt(metrics[k])}" for k in
                           ["losses/policy_loss", "losses/value_loss", "losses/entropy", "losses/approx_kl",
                            "losses/clipfrac", "losses/explained_variance"] if k in metrics)
        self.last_selfplay.update({k: v for k, v in metrics.items() if k.startswith("selfplay/") and v is not None})
        selfplay = "  ".join(f"{k.split('/')[-1].replace('score_', 'vs ')} {_fmt(v)}" for k, v in
                             self.last_selfplay.items() if not k.startswith("selfplay/elo_"))
        bar_width = 30
        filled = int(bar_width * min(step / max(self.total_steps, 1), 1.0))
        lines = [
            f"\x1b[1m{self.title}\x1b[0m",
            f"  [{'#' * filled}{'.' * (bar_width - filled)}] {_fmt(step)} / {_fmt(self.total_steps)} steps",
            f"  SPS {_fmt(sps)}   elapsed {_fmt_duration(elapsed)}   ETA {_fmt_duration(eta)}",
            f"  episodes: {episode or 'none finished yet'}",
            f"  losses: {losses or '--'}",
            f"  time: {split or '--'}   lr {_fmt(metrics.get('charts/learning_rate'))}",
        ]
        if selfplay:
            lines.append(f"  self-play: {selfplay}")
        out = ""
        if self.lines_drawn:
            out += f"\x1b[{self.lines_drawn}F"  # back to the start of the block
        out += "".join(f"\x1b[2K{line}\n" for line in lines)
        self.stream.write(out)
        self.stream.flush()
        self.lines_drawn = len(lines)
