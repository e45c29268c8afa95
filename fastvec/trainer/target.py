"""The stop at a target (train.target_return): the mean of train.target_metric over the last train.target_episodes
episodes, from each log's episode mean and count, checked at every log of the loop both trainers share (run.py)."""

from __future__ import annotations

import math
from collections import deque


class Target:
    """A run's target: add() each log's metrics; `reached` holds the log where the window's mean first reached
    train.target_return ({"time", "global_step", "update", "mean", "episodes"}), `best` the highest window mean."""

    def __init__(self, train):
        """train: a Config's [train] section (config.check_with_env checked its metric against the env's)."""
        self.value, self.metric = train.target_return, train.target_metric
        self.episodes, self.stop = train.target_episodes, train.stop_at_target
        self.logs: deque[tuple[float, int]] = deque()  # (a log's episode mean, its episode count), newest last
        self.reached: dict | None = None
        self.best: float | None = None

    @property
    def active(self) -> bool:
        return math.isfinite(self.value)

    def window(self) -> tuple[float, int]:
        """The mean over the newest train.target_episodes episodes and how many episodes it covers (fewer until
        that many have finished): each log's mean weighted by its episodes, the oldest log's by those in the
        window."""
        total = weight = 0.0
        for mean, count in reversed(self.logs):
            take = min(count, self.episodes - weight)
            total, weight = total + mean * take, weight + take
            if weight >= self.episodes:
                break
        return (total / weight if weight else math.nan), int(weight)

    def add(self, metrics: dict) -> bool:
        """Take one log's metrics; True at the log where the target is first reached (the window full and its
        mean >= train.target_return)."""
        count, mean = metrics.get("episodes") or 0, metrics.get(self.metric)
        if not self.active or not count or mean is None or not math.isfinite(mean):
            return False
        self.logs.append((float(mean), int(count)))
        while len(self.logs) > 1 and sum(c for _, c in self.logs) - self.logs[0][1] >= self.episodes:
            self.logs.popleft()  # the window lies wholly in the newer logs
        value, covered = self.window()
        if covered < self.episodes:
            return False
        self.best = value if self.best is None else max(self.best, value)
        if self.reached is None and value >= self.value:
            self.reached = {"time": metrics.get("time"), "global_step": metrics.get("global_step"),
                            "update": metrics.get("update"), "mean": value, "episodes": covered}
            return True
        return False

    def summary(self, stopped: bool) -> dict | None:
        """What run.train's summary records of the target (None without one)."""
        if not self.active:
            return None
        return {"metric": self.metric, "value": self.value, "episodes": self.episodes, "reached": self.reached,
                "best": self.best, "stopped": stopped}


def target_line(target: dict) -> str:
    """The summary's line for a target: when it was reached (and whether the run stopped there), or the best mean."""
    what = f"mean {target['metric']} over the last {target['episodes']} episodes"
    reached = target["reached"]
    if reached is None:
        best = "no window of that many episodes yet" if target["best"] is None else f"best {target['best']:.4g}"
        return f"target {target['value']:g} not reached ({what}: {best})"
    then = "; stopped there" if target["stopped"] else ""
    return (f"target reached: {what} {reached['mean']:.4g} >= {target['value']:g} at {reached['time']:.1f} s of "
            f"training (step {reached['global_step']:,}, update {reached['update']}){then}")
