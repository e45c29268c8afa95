"""fastvec-train's display, wherever its output goes (logs go to RUN_DIR/metrics.jsonl either way):

- a terminal: a live panel (rich's Live) redrawn in place, wrapped to the terminal's width;
- a pipe or a file (`| tee log`, nohup, Slurm): a plain progress line at the first log, then every
  `line_interval` seconds of training, and at the end;
- a Jupyter notebook (rich's Console.is_jupyter): the panel in one output cell, updated in place (plain
  lines when IPython's display is missing); a notebook cell's `!fastvec-train ...`: plain lines (the kernel
  gives it a pseudo-terminal, but copies its output into the cell as text, where a panel cannot be redrawn);
  TERM=dumb asks for plain lines anywhere.

Figures are formatted for people by `fmt_number` (236.9) and `fmt_si` (13.6K, 1.23M), which cli.py uses
too. rich is imported only when a display is drawn, so `import fastvec` and disabled displays stay light."""

from __future__ import annotations

import atexit
import math
import os
import sys

SI_SUFFIXES = ["", "K", "M", "G", "T", "P"]
LOSS_KEYS = ["policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"]
MODES = ("live", "lines", "notebook")


def _not_a_finite_number(value) -> str | None:
    """How fmt_si and fmt_number print a value that is not a finite number (None -> '--'), else None."""
    if value is None:
        return "--"
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return str(value)
    return None if math.isfinite(float(value)) else str(float(value))


def fmt_si(value, digits: int = 3) -> str:
    """A count or rate with an SI suffix and `digits` significant digits: 13572 -> '13.6K', 303104 ->
    '303K', 1234567 -> '1.23M', 4096 -> '4.1K'; below 1,000 an int prints whole and a float as fmt_number does."""
    if (text := _not_a_finite_number(value)) is not None:
        return text
    x = float(value)
    if abs(x) < 1000:
        return str(int(value)) if isinstance(value, int) else fmt_number(x)
    x = float(f"{x:.{digits}g}")  # rounded first, so 999,999 is 1M and 9,999.6 is 10K, never 1000K
    exponent = min(int(math.floor(math.log10(abs(x)))) // 3, len(SI_SUFFIXES) - 1)
    scaled = x / 1000 ** exponent
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(scaled)))))
    text = f"{scaled:.{decimals}f}"
    if "." in text:  # 4.1K, 1M: no trailing zeros
        text = text.rstrip("0").rstrip(".")
    return text + SI_SUFFIXES[exponent]


def fmt_number(value, digits: int = 4) -> str:
    """A metric for people: `digits` significant digits without trailing zeros (236.857 -> '236.9',
    0.0123456 -> '0.01235', 500.0 -> '500'), an SI suffix from 10,000 up (13572.4 -> '13.6K'), and an
    exponent only for tiny values (3e-06); None -> '--'."""
    if (text := _not_a_finite_number(value)) is not None:
        return text
    x = float(value)
    if abs(x) >= 10_000:
        return fmt_si(x)
    if isinstance(value, int) or x == 0:
        return str(int(x))
    if abs(x) < 1e-3:
        mantissa, exponent = f"{x:.{max(digits - 2, 1)}e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def fmt_duration(seconds) -> str:
    """0:04, 12:30, 1:02:03; '--' for an unknown (infinite or NaN) time."""
    if seconds is None or seconds != seconds or seconds == float("inf"):
        return "--"
    seconds = int(max(seconds, 0))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def run_by_a_notebook_kernel(environ=os.environ) -> bool:
    """Whether this process was started by a Jupyter kernel (a notebook cell's `!cmd`): jupyter_client's POSIX
    launcher gives every kernel JPY_PARENT_PID, and ipykernel sets TERM=xterm-color, PAGER=cat and
    GIT_PAGER=cat for the commands it runs (ZMQInteractiveShell.init_environment); both pass on to `!cmd`."""
    ipykernel_env = (environ.get("TERM"), environ.get("PAGER"), environ.get("GIT_PAGER")) == ("xterm-color", "cat", "cat")
    return bool(environ.get("JPY_PARENT_PID")) or ipykernel_env


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


class Dashboard:
    """fastvec-train's display of the metrics rows that run.py hands to `update` every log interval.

    `enabled=None` shows it (in the mode the stream calls for); False prints nothing and imports nothing.
    `mode` forces "live", "lines" or "notebook"; `console` draws the live panel on a given rich Console.
    The display ends by itself at the last update (global_step >= total_steps) or at interpreter exit;
    `close()` ends it sooner (a stopped run)."""

    def __init__(self, title: str, total_steps: int, enabled: bool | None = None, stream=None, *,
                 mode: str | None = None, line_interval: float = 5.0, console=None):
        self.stream = stream or (console.file if console is not None else sys.stdout)
        self.enabled = True if enabled is None else bool(enabled)
        self.title, self.total_steps = title, total_steps
        self.line_interval = line_interval
        self.console = console
        self.last_episode: dict = {}
        self.last_selfplay: dict = {}  # the latest self-play evaluation (it arrives every eval_interval)
        self.metrics: dict = {}
        self.stat_names: list[str] = []
        self.last_line_time: float | None = None
        self.live = None
        self.notebook_handle = None
        self.closed = False
        if mode is not None and mode not in MODES:
            raise ValueError(f"Dashboard mode {mode!r}: use one of {MODES}")
        self.mode = (mode or self._detect_mode()) if self.enabled else None
        self.title_shown = False
        if self.mode == "lines":  # a pipe or a log file sees the run start before the first update's line
            self._show_title()

    def _detect_mode(self) -> str:
        if self.console is not None:
            return "live"
        from rich.console import Console
        probe = Console(file=self.stream)
        if probe.is_jupyter and self.stream in (sys.stdout, sys.__stdout__):
            return "notebook"
        # A real terminal only (not rich's FORCE_COLOR guess, which would put cursor moves into a log file),
        # not TERM=dumb, and not the pseudo-terminal a notebook kernel gives `!cmd`: the kernel copies it into
        # the cell as text, where each redraw of the panel would stack below the last.
        terminal = _isatty(self.stream) and not probe.is_dumb_terminal and not run_by_a_notebook_kernel()
        return "live" if terminal else "lines"

    # ------------------------------------------------------------------------------------------- the state

    def _remember(self, metrics: dict, stat_names: list[str]) -> None:
        self.metrics, self.stat_names = metrics, list(stat_names)
        if metrics.get("episode_return") is not None:
            self.last_episode = {k: metrics[k] for k in ["episode_return", "episode_length", *stat_names]
                                 if metrics.get(k) is not None}
        self.last_selfplay.update({k: v for k, v in metrics.items() if k.startswith("selfplay/") and v is not None})

    def _progress(self) -> dict:
        m = self.metrics
        step, sps = m.get("global_step", 0), m.get("sps", 0.0) or 0.0
        update = m.get("update")
        total_updates = round(self.total_steps * update / step) if update and step else None
        eta = (self.total_steps - step) / sps if sps > 0 else float("inf")
        return {"step": step, "sps": sps, "update": update, "total_updates": total_updates,
                "elapsed": m.get("time", 0.0), "eta": max(eta, 0.0), "train_sps": m.get("train_sps"),
                "eval_time": m.get("eval_time")}

    def _speed_parts(self, p: dict) -> list[str]:
        """SPS and elapsed time; with evaluations between updates (self-play), the training SPS (steps per
        second outside the evaluations), the wall time and the evaluations' share of it, apart."""
        if p["train_sps"] is None:
            return [f"{fmt_si(p['sps'])} SPS", f"elapsed {fmt_duration(p['elapsed'])}"]
        return [f"{fmt_si(p['train_sps'])} SPS training", f"wall {fmt_duration(p['elapsed'])}",
                f"eval {p['eval_time'] or 0.0:.1f} s"]

    def _episode_parts(self) -> list[str]:
        return [f"{k.replace('episode_', '')} {fmt_number(v)}" for k, v in self.last_episode.items()]

    def _selfplay_parts(self) -> list[str]:
        return [f"{k.split('/')[-1].replace('score_', 'vs ')} {fmt_number(v)}"
                for k, v in self.last_selfplay.items() if not k.startswith("selfplay/elo_")]

    def progress_line(self) -> str:
        """One plain progress line: `update 12/74  step 49.2K/303K  13.6K SPS  return 236.9  elapsed 0:04  ETA 0:18`
        (self-play: `... 21.3M SPS training ... wall 0:12  eval 1.9 s  ETA 0:01`)."""
        p = self._progress()
        parts = []
        if p["update"] is not None:
            parts.append(f"update {p['update']}/{p['total_updates'] or '?'}")
        parts.append(f"step {fmt_si(p['step'])}/{fmt_si(self.total_steps)}")
        speed = self._speed_parts(p)
        parts.append(speed[0])
        episode = [part for part in self._episode_parts() if not part.startswith("length ")]
        parts += episode or ["return --"]
        parts += self._selfplay_parts()
        parts += speed[1:] + [f"ETA {fmt_duration(p['eta'])}"]
        return "  ".join(parts)

    def renderable(self):
        """The live panel of the latest metrics, as a rich renderable (it wraps to any width)."""
        from rich.console import Group
        from rich.panel import Panel
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        m, p = self.metrics, self._progress()
        fraction = min(p["step"] / max(self.total_steps, 1), 1.0)
        bar = Table.grid(padding=(0, 1), expand=True)
        bar.add_column(ratio=1)
        bar.add_column(no_wrap=True, justify="right")
        bar.add_row(ProgressBar(total=max(self.total_steps, 1), completed=min(p["step"], self.total_steps)),
                    f"{fmt_si(p['step'])}/{fmt_si(self.total_steps)} steps {100 * fraction:.0f}%")
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column(ratio=1, overflow="fold")

        def row(label: str, parts: list[str]) -> None:
            grid.add_row(label, Parts(parts or ["--"]))

        speed = self._speed_parts(p) + [f"ETA {fmt_duration(p['eta'])}"]
        if p["update"] is not None:
            speed.append(f"update {p['update']}/{p['total_updates'] or '?'}")
        row("speed", speed)
        row("episodes", self._episode_parts() or ["none finished yet"])
        row("losses", [f"{k.replace('_loss', '')} {fmt_number(m[f'losses/{k}'])}" for k in LOSS_KEYS
                       if m.get(f"losses/{k}") is not None])
        timing = m.get("time_split") or {}
        total_time = sum(timing.values()) or 1.0
        row("time", [f"{k} {100 * v / total_time:.0f}%" for k, v in timing.items()]
            + ([f"lr {fmt_number(m['charts/learning_rate'])}"] if m.get("charts/learning_rate") is not None else []))
        selfplay = self._selfplay_parts()
        if selfplay:
            row("self-play", selfplay)
        title = Text(self.title, style="bold", overflow="fold")
        return Panel(Group(title, bar, grid), border_style="blue", padding=(0, 1))

    # ------------------------------------------------------------------------------------------- drawing

    def update(self, metrics: dict, stat_names: list[str]) -> None:
        if not self.enabled or self.closed:
            return
        self._remember(metrics, stat_names)
        final = metrics.get("global_step", 0) >= self.total_steps
        if self.mode == "lines":
            now = float(metrics.get("time", 0.0))
            self._show_title()
            if self.last_line_time is None or final or now - self.last_line_time >= self.line_interval:
                self._write(self.progress_line())
                self.last_line_time = now
        elif self.mode == "notebook":
            self._draw_notebook()
        else:
            self._draw_live()
        if final:
            self.close()

    def _show_title(self) -> None:
        if not self.title_shown:
            self.title_shown = True
            self._write(self.title)

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`) or file: the run goes on without its display
            self.enabled = False

    def _draw_live(self) -> None:
        if self.live is None:
            from rich.console import Console
            from rich.live import Live
            console = self.console or Console(file=self.stream)
            # Prints while the panel is up go above it (a stop message, a warning); stderr only when it is a
            # terminal too (`2>err.log` keeps its lines).
            self.live = Live(self.renderable(), console=console, auto_refresh=False, transient=False,
                             redirect_stdout=self.stream is sys.stdout, redirect_stderr=_isatty(sys.stderr))
            self.live.start()
            atexit.register(self.close)
        else:
            self.live.update(self.renderable(), refresh=True)

    def _draw_notebook(self) -> None:
        try:
            from IPython.display import display
        except ImportError:  # a notebook without IPython's display: plain lines
            self.mode = "lines"
            self.update(self.metrics, self.stat_names)
            return
        bundle = NotebookView(self.renderable())
        if self.notebook_handle is None:
            self.notebook_handle = display(bundle, display_id=True)
        else:
            self.notebook_handle.update(bundle)

    def close(self) -> None:
        """End the display: the live panel stays on screen as last drawn; later updates print nothing."""
        if self.closed:
            return
        self.closed = True
        if self.live is not None:
            atexit.unregister(self.close)
            try:
                self.live.stop()
            except (OSError, ValueError):
                pass


class Parts:
    """A rich renderable: `k v` parts packed into lines of the available width, broken only between parts
    (a part wider than the whole width is folded)."""

    def __init__(self, parts: list[str], sep: str = "   "):
        self.parts, self.sep = parts, sep

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement
        widest = max(len(p) for p in self.parts)
        total = sum(len(p) for p in self.parts) + len(self.sep) * (len(self.parts) - 1)
        return Measurement(min(widest, options.max_width), min(total, options.max_width))

    def __rich_console__(self, console, options):
        from rich.text import Text
        width, lines, line = max(options.max_width, 1), [], ""
        for part in self.parts:
            if line and len(line) + len(self.sep) + len(part) <= width:
                line += self.sep + part
                continue
            if line:
                lines.append(line)
            while len(part) > width:
                lines.append(part[:width])
                part = part[width:]
            line = part
        lines.append(line)
        for text in lines:
            yield Text(text, no_wrap=True, overflow="crop")


class NotebookView:
    """The panel for IPython's display(): HTML for a notebook, text for a console."""

    def __init__(self, renderable, width: int = 100):
        import io

        from rich.console import Console
        console = Console(file=io.StringIO(), record=True, width=width, force_terminal=True,
                          force_jupyter=False, color_system="truecolor")
        console.print(renderable)
        self.text = console.export_text(clear=False)
        self.html = console.export_html(inline_styles=True, code_format=(
            '<pre style="font-family: Menlo, \'DejaVu Sans Mono\', consolas, monospace; line-height: 1.2">'
            "{code}</pre>"))

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/plain": self.text, "text/html": self.html}
