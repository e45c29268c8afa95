"""fastvec-train's display wherever its output goes (issue 20, "Not a terminal"): plain progress lines through a
pipe within the first seconds of training, the live panel at any terminal width (rendered, and redrawn through
a small terminal emulator), the notebook display, numbers formatted for people, and the CLI's --version,
--list and env suggestions. CPU only; the one training run takes a few seconds."""

import io
import os
import queue
import re
import subprocess
import sys
import threading
import time
import types

import pytest

from fastvec.trainer import cli
from fastvec.trainer.dashboard import Dashboard, fmt_duration, fmt_number, fmt_si

TITLE = "fastvec-train cartpole (cpu, mingru 64x2, 25,475 params) -> runs/cartpole/20250101-120000"


def metrics_row(step: int, seconds: float, update: int, **extra) -> dict:
    row = {"global_step": step, "time": seconds, "sps": step / max(seconds, 1e-9), "update": update,
           "episodes": 3, "episode_return": 236.85714721679688, "episode_length": 236.85714721679688,
           "losses/policy_loss": -0.0123456, "losses/value_loss": 12.345678, "losses/entropy": 0.6123,
           "losses/approx_kl": 0.00123, "losses/clipfrac": 0.05, "losses/explained_variance": 0.91,
           "charts/learning_rate": 0.005, "time_split": {"rollout": 1.25, "update": 2.5}}
    row.update(extra)
    return row


# ---------------------------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("value,text", [
    (13572.4, "13.6K"), (303104, "303K"), (1_234_567, "1.23M"), (49152, "49.2K"), (999_999, "1M"),
    (9_999.6, "10K"), (4096, "4.1K"), (1000, "1K"), (12, "12"), (850.25, "850.2"), (-13_600, "-13.6K"), (None, "--"),
])
def test_fmt_si(value, text):
    assert fmt_si(value) == text


@pytest.mark.parametrize("value,text", [
    (236.85714721679688, "236.9"), (500.0, "500"), (12.5, "12.5"), (0.0123456, "0.01235"), (0.005, "0.005"),
    (13572.4, "13.6K"), (3e-6, "3e-6"), (-1.234e-5, "-1.23e-5"), (0.0, "0"), (7, "7"), (None, "--"),
    (float("nan"), "nan"),
])
def test_fmt_number(value, text):
    assert fmt_number(value) == text


def test_fmt_duration():
    assert [fmt_duration(s) for s in (4.7, 750, 3723, float("inf"), None)] == ["0:04", "12:30", "1:02:03", "--", "--"]


# ---------------------------------------------------------------------------------------------- plain lines


def test_plain_lines_when_the_stream_is_not_a_terminal():
    """A pipe or a file gets the title, a line at the first update, then one every line_interval seconds of
    training and one at the end; disabled prints nothing."""
    piped, quiet = io.StringIO(), io.StringIO()
    board = Dashboard(TITLE, 20 * 4096, stream=piped)  # StringIO is not a TTY
    off = Dashboard(TITLE, 20 * 4096, enabled=False, stream=quiet)
    for update in range(1, 21):
        row = metrics_row(update * 4096, update * 0.75, update)
        board.update(row, [])
        off.update(row, [])
    lines = piped.getvalue().splitlines()
    assert quiet.getvalue() == ""
    assert lines[0] == TITLE
    assert lines[1] == ("update 1/20  step 4.1K/81.9K  5.46K SPS  return 236.9  elapsed 0:00  ETA 0:14")
    assert [line.split()[1] for line in lines[1:]] == ["1/20", "8/20", "15/20", "20/20"]  # at 0.75 s, then >= 5 s apart
    assert lines[-1].endswith("ETA 0:00") and "step 81.9K/81.9K" in lines[-1]
    assert "e+0" not in piped.getvalue() and "236.857" not in piped.getvalue()
    board.update(metrics_row(30 * 4096, 30.0, 30), [])  # after the last update: nothing more
    assert piped.getvalue().splitlines() == lines


def test_a_closed_pipe_turns_the_display_off():
    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    board = Dashboard(TITLE, 1000, stream=ClosedPipe())
    board.update(metrics_row(100, 1.0, 1), [])  # no exception: training goes on
    assert not board.enabled


def read_lines(stream, lines: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        lines.put((time.monotonic(), line.rstrip("\n")))
    lines.put((time.monotonic(), None))


def test_piped_fastvec_train_prints_progress_within_its_first_seconds(tmp_path):
    """`fastvec-train cartpole | tee log` shows progress while it trains: the first progress line arrives
    within seconds of the title (printed as training starts) and before the run ends."""
    steps_per_update = 16 * 64  # 16 envs x cartpole.toml's horizon 64: 20 short updates, about 3 s in all
    cmd = [sys.executable, "-m", "fastvec.trainer.cli", "cartpole", "--train.device=cpu", "--env.num_envs=16",
           f"--train.total_timesteps={20 * steps_per_update}", f"--run-dir={tmp_path / 'run'}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "0"})
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        title_at = first_at = running_at_first = None
        output = []
        deadline = time.monotonic() + 120  # start-up compiles the env on a cold cache
        while time.monotonic() < deadline:
            try:
                at, line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            output.append(line)
            if title_at is None and line.startswith("fastvec-train cartpole (cpu"):
                title_at = at
            elif title_at is not None and line.startswith("update "):
                first_at, running_at_first = at, proc.poll() is None
                break
        assert title_at is not None, output
        assert first_at is not None, output
        assert first_at - title_at < 10, f"the first progress line took {first_at - title_at:.1f} s"
        assert running_at_first, "the first progress line came only when the run had ended"
        assert re.fullmatch(r"update \d+/20  step [\d.]+K/20.5K  [\d.]+K? SPS  return ([\d.]+|--)  "
                            r"elapsed \d:\d\d  ETA \d:\d\d", output[-1]), output[-1]
        proc.wait(timeout=120)
        while True:  # the rest of the output, through the reader thread
            _, line = lines.get(timeout=10)
            if line is None:
                break
            output.append(line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output
    summary = output[-1]
    assert re.match(r"fastvec-train cartpole: 20.5K steps in [\d.]+ s \([\d.]+K? SPS; start-up [\d.]+ s before that\)",
                    summary), summary
    assert "e+0" not in "\n".join(output)


# What a Jupyter kernel puts in the environment of a notebook cell's `!cmd`, which it runs on a pseudo-terminal
# and copies into the cell as text: jupyter_client's JPY_PARENT_PID (its POSIX kernel launcher) and ipykernel's
# TERM, CLICOLOR, PAGER and GIT_PAGER (ZMQInteractiveShell.init_environment).
KERNEL_ENV = {"JPY_PARENT_PID": "4242", "TERM": "xterm-color", "CLICOLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat"}
IPYKERNEL_ONLY = {k: v for k, v in KERNEL_ENV.items() if k != "JPY_PARENT_PID"}  # a kernel not launched by jupyter_client
A_TERMINAL = {"TERM": "xterm-256color"}
ON_A_PTY = ("import sys; from fastvec.trainer.dashboard import Dashboard\n"
            "board = Dashboard('fastvec-train cartpole', 3 * 4096)\n"
            "for u in (1, 2, 3):\n"
            "    board.update({'global_step': u * 4096, 'time': u * 2.0, 'sps': 2048.0, 'update': u}, [])\n")


def display_on_a_pty(extra_env: dict) -> str:
    """What a Dashboard writing to sys.stdout prints when stdout is a pseudo-terminal, in a child process whose
    environment is this one's without the kernel's variables, plus `extra_env`."""
    import pty
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV and k not in ("FORCE_COLOR", "NO_COLOR")}
    env.update(extra_env, COLUMNS="100", LINES="40")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", ON_A_PTY], stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child's end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")
@pytest.mark.parametrize("kernel_env", [KERNEL_ENV, IPYKERNEL_ONLY], ids=["jupyter_client", "ipykernel"])
def test_a_notebook_shell_command_gets_plain_lines_and_a_terminal_the_live_panel(kernel_env):
    """`!fastvec-train ...` in a notebook cell: a pseudo-terminal the notebook copies as text, so plain lines
    (a redrawn panel would stack a copy per update); the same pseudo-terminal in a terminal keeps the panel."""
    lines = display_on_a_pty(kernel_env).replace("\r\n", "\n").splitlines()
    assert "\x1b" not in "\n".join(lines), lines  # no cursor moves, no colours
    assert lines[0] == "fastvec-train cartpole"
    assert [line.split()[1] for line in lines[1:]] == ["1/3", "3/3"]  # the first, then the last (2 s < line_interval apart)
    panel = display_on_a_pty(A_TERMINAL)
    assert "\x1b[" in panel and "12.3K/12.3K steps 100%" in panel


# ---------------------------------------------------------------------------------------------- the live panel


def test_the_panel_fits_a_narrow_terminal_and_shows_the_title_once():
    from rich.console import Console
    board = Dashboard(TITLE, 303_104, enabled=True, stream=io.StringIO(), mode="live")
    board._remember(metrics_row(49_152, 3.6, 12, sps=13572.4, score=12.25, **{"selfplay/score_bot": 0.625}), ["score"])
    for width in (60, 40, 100):
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(board.renderable())
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        assert text.count("fastvec-train cartpole") == 1
        for part in ("13.6K SPS", "return 236.9", "score 12.25", "ETA 0:18", "lr 0.005", "vs bot 0.625",
                     "49.2K/303K steps 16%", "update 12/74"):
            assert part in text, (part, text)  # never broken inside a part


def test_on_a_wide_terminal_the_labels_keep_their_width_and_the_values_take_the_rest():
    """At 160 columns each panel row's values start one space after the widest label (self-play), the spare width
    going to the values' column, not between the labels and their values."""
    from rich.console import Console
    board = Dashboard(TITLE, 303_104, enabled=True, stream=io.StringIO(), mode="live")
    board._remember(metrics_row(49_152, 3.6, 12, sps=13572.4, score=12.25, **{"selfplay/score_bot": 0.625}), ["score"])
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(board.renderable())
    lines = console.export_text().splitlines()
    for label, first in (("speed", "13.6K SPS"), ("episodes", "return 236.9"), ("self-play", "vs bot 0.625")):
        assert any(line.startswith(f"│ {label:<9} {first}") for line in lines), (label, lines)


class Terminal:
    """Just enough of a VT100 to replay a redrawing display: a grid of `width` columns that wraps long lines,
    carriage return, newline, cursor up / previous line / column, erase line; colours are ignored."""

    def __init__(self, width: int):
        self.width, self.rows, self.row, self.col = width, [[]], 0, 0

    def feed(self, data: str) -> None:
        for match in re.finditer(r"\x1b\[([?\d;]*)([A-Za-z])|\r|\n|[^\x1b\r\n]", data):
            token = match.group(0)
            if token == "\r":
                self.col = 0
            elif token == "\n":
                self._down()
            elif token.startswith("\x1b"):
                args, code = match.group(1), match.group(2)
                n = int(args) if args.isdigit() else 1
                if code in "AF":
                    self.row = max(self.row - n, 0)
                    self.col = 0 if code == "F" else self.col
                elif code == "G":
                    self.col = n - 1
                elif code == "K":  # 2: the whole line; none or 0: from the cursor on
                    self.rows[self.row] = [] if args == "2" else self.rows[self.row][:self.col]
            else:
                if self.col >= self.width:  # a character past the last column wraps onto the next line
                    self._down()
                line = self.rows[self.row]
                line.extend(" " * (self.col - len(line)))
                line[self.col:self.col + 1] = [token]
                self.col += 1

    def _down(self) -> None:
        self.row += 1
        self.col = 0
        while len(self.rows) <= self.row:
            self.rows.append([])

    def screen(self) -> list[str]:
        return ["".join(line).rstrip() for line in self.rows]


def test_the_live_redraw_in_a_narrow_terminal_never_repeats_its_title():
    """The live panel redrawn 12 times on a 60-column terminal leaves one panel on the screen (the old ANSI
    block, wider than the terminal, left a stack of title lines behind)."""
    from rich.console import Console
    out = io.StringIO()
    console = Console(file=out, width=60, height=50, force_terminal=True, color_system=None, legacy_windows=False)
    board = Dashboard(TITLE, 12 * 4096, stream=out, console=console)
    assert board.mode == "live"
    for update in range(1, 13):
        board.update(metrics_row(update * 4096, update * 0.3, update), [])
    assert board.closed  # the last update (global_step == total_steps) ended the live display
    terminal = Terminal(60)
    terminal.feed(out.getvalue())
    screen = [line for line in terminal.screen() if line]
    assert sum("fastvec-train cartpole" in line for line in screen) == 1, "\n".join(screen)
    assert max(len(line) for line in screen) <= 60
    assert any("49.2K/49.2K steps 100%" in line for line in screen), "\n".join(screen)


def test_a_notebook_gets_one_display_updated_in_place(monkeypatch):
    """IPython's display returns a handle to update only when asked for a display_id; the panel asks for one, shows
    itself once and updates that display after."""
    shown, updates = [], []

    class Handle:
        def update(self, obj):
            updates.append(obj)

    def display(obj, display_id=None):
        shown.append(obj)
        return Handle() if display_id else None

    fake = types.ModuleType("IPython.display")
    fake.display = display
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))
    monkeypatch.setitem(sys.modules, "IPython.display", fake)
    board = Dashboard(TITLE, 3 * 4096, stream=io.StringIO(), mode="notebook")
    for update in range(1, 4):
        board.update(metrics_row(update * 4096, update * 1.0, update), [])
    assert len(shown) == 1 and len(updates) == 2
    bundle = updates[-1]._repr_mimebundle_()
    assert "<pre" in bundle["text/html"] and "12.3K/12.3K steps 100%" in bundle["text/plain"]


def test_import_fastvec_and_a_disabled_display_do_not_import_rich():
    code = ("import sys, fastvec; from fastvec.trainer.dashboard import Dashboard; "
            "Dashboard('t', 10, enabled=False).update({'global_step': 1, 'time': 1.0, 'sps': 1.0}, []); "
            "assert 'rich' not in sys.modules, 'rich imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ---------------------------------------------------------------------------------------------- the CLI


def test_version(capsys):
    from importlib import metadata
    import fastvec
    assert cli.main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    try:
        expected = metadata.version("fastvec")
    except metadata.PackageNotFoundError:
        expected = fastvec.__version__
    assert out == f"fastvec-train (fastvec {expected})"


def test_list_shows_every_env_with_its_sizes_and_parameters(capsys):
    from fastvec.native import ENVS
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name, info in ENVS.items():
        assert re.search(rf"^  {name} +{info.gym_id} ", out, re.M), name
        for key in info.params:
            assert f"--env.{key}=" in out
    assert re.search(r"^  cartpole .*observation 4 floats, actions Discrete\(2\), agents 1", out, re.M)
    assert re.search(r"^  breakout .*observation 118 floats, actions Discrete\(3\)", out, re.M)
    from fastvec.native import mpe
    for name, scenario in mpe.SCENARIOS.items():  # the teams: each MPE scenario with its id and keywords
        line = re.search(rf"^  {name} +fastvec/{name}-v{scenario.version} +mpe2's scenario, step limit 25(.*)$", out,
                         re.M)
        assert line, name
        for key, param in scenario.params.items():
            assert f"--env.{key}={param.default}" in line.group(1), (name, key)
        assert ("--env.local_ratio=0.5" in line.group(1)) == scenario.local_ratio, name


@pytest.mark.parametrize("typed,suggestion", [("cartpol", "cartpole"), ("Breakot", "breakout"), ("pongg", "pong")])
def test_a_misspelt_env_gets_a_suggestion(typed, suggestion, capsys):
    assert cli.main([typed, "--train.device=cpu"]) == 2
    err = capsys.readouterr().err
    assert f"unknown env '{typed.lower()}'; did you mean '{suggestion}'" in err, err  # (first of the close names)


def test_an_env_like_no_other_gets_no_suggestion(capsys):
    assert cli.main(["pacman"]) == 2
    err = capsys.readouterr().err
    assert "unknown env 'pacman'" in err and "did you mean" not in err


def test_fastvec_plot_help_is_whole_sentences(capsys):
    from fastvec.trainer import plot
    with pytest.raises(SystemExit):
        plot.main(["--help"])
    out = capsys.readouterr().out
    description = " ".join(out.split("\n\n")[1].split())
    assert description.endswith(".") and description.startswith("Plot the learning curves")


@pytest.mark.parametrize("kernel_env, redraws", [({}, True), ({"JPY_PARENT_PID": "1234"}, False)])
def test_sweep_status_line_is_redrawn_on_a_terminal_but_not_in_a_notebook_cell(monkeypatch, kernel_env, redraws):
    from types import SimpleNamespace

    from fastvec.trainer.sweep_report import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    for key, value in kernel_env.items():
        monkeypatch.setenv(key, value)
    settings = {"trial_seconds": 1.0, "metric": "episode_return", "target": 475.0, "objective": "score", "trials": 2,
                "timeout": 0, "seeds": 1, "sampler": "tpe", "pruner": "median"}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=False, space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    assert Progress(plan, SimpleNamespace(trials=[]), stream=Terminal()).terminal is redraws


def test_a_line_without_sps_or_update_shows_0_sps_an_open_eta_and_no_update_count():
    """A metrics row that lacks the speed (a resumed run's first line, a logger of its own) or the update number:
    0 SPS, ETA '--' (never a division by zero), and the step count without 'update k/n'."""
    piped = io.StringIO()
    board = Dashboard(TITLE, 8192, stream=piped)
    board.update({"global_step": 4096, "time": 2.0, "episode_return": 1.5}, [])
    line = piped.getvalue().splitlines()[1]
    assert line.startswith("step 4.1K/8.19K  0 SPS  return 1.5  elapsed 0:02"), line
    assert "update" not in line and line.endswith("ETA --"), line


def test_a_line_without_a_step_count_shows_step_0():
    """A row that lacks global_step (a logger of its own, a hand-made row) counts as step 0 of the run: nothing done,
    and no update total guessed from it."""
    piped = io.StringIO()
    board = Dashboard(TITLE, 8192, stream=piped)
    board.update({"update": 1, "time": 1.0, "sps": 100.0}, [])
    line = piped.getvalue().splitlines()[1]
    assert line.startswith("update 1/?  step 0/8.19K  100 SPS"), line


def sweep_progress_on_a_terminal(monkeypatch):
    """(a sweep's Progress writing to a stand-in terminal, that terminal), outside any notebook kernel."""
    from types import SimpleNamespace

    from fastvec.trainer.sweep_report import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for key in ("JPY_PARENT_PID", "VSCODE_PID", "COLAB_RELEASE_TAG"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    settings = {"trial_seconds": 1.0, "metric": "episode_return", "target": 475.0, "objective": "score", "trials": 2,
                "timeout": 0, "seeds": 1, "sampler": "tpe", "pruner": "median"}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=False, space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    screen = Terminal()
    progress = Progress(plan, SimpleNamespace(trials=[], get_trials=lambda **kw: []), stream=screen)
    if not progress.terminal:
        pytest.skip("this environment looks like a notebook kernel's")
    return progress, screen


def test_the_sweep_status_line_is_cut_to_the_terminal_width_only_when_longer(monkeypatch):
    """The running trial's status line on a terminal: whole when it fits the width (one column is kept free, so
    the cursor never wraps), else cut with '...' to exactly that width."""
    import shutil

    progress, _ = sweep_progress_on_a_terminal(monkeypatch)
    text = "trial 3 running: 1.5 s, 4.1K steps, return 12.5  |  best --"
    for columns, shown in ((len(text) + 1, text), (len(text), text[:len(text) - 4] + "...")):
        monkeypatch.setattr(shutil, "get_terminal_size", lambda *a, c=columns: os.terminal_size((c, 24)))
        progress.running(3, 1.5, 4096, 12.5)
        assert progress.status == shown and len(shown) <= columns - 1


def test_a_trials_objective_reads_as_its_objective_says():
    from fastvec.trainer.sweep_report import objective_text

    settings = {"metric": "episode_return", "target": 475.0}
    assert objective_text({**settings, "objective": "score"}, [480.25]) == "return 480.2"
    assert objective_text({**settings, "objective": "pareto"}, [480.25, 3.125]) == "return 480.2 in 3.125 s"
    assert objective_text({**settings, "objective": "time_to_target"}, [2.84]) == "2.84 s to 475"
    assert objective_text({**settings, "objective": "time_to_target"}, [7.7], hit=False) == \
        "475 missed (counts as 7.7 s)"


def test_a_finished_trials_line_gives_the_trials_per_hour_so_far():
    """12 trials done in this process's first minute: 720 trials/h, after the line and the best trial so far."""
    optuna = pytest.importorskip("optuna")
    from types import SimpleNamespace

    from fastvec.trainer.sweep_report import Progress

    settings = {"trial_seconds": 1.0, "metric": "episode_return", "target": 475.0, "objective": "score", "trials": 20,
                "timeout": 0, "seeds": 1, "sampler": "tpe", "pruner": "median"}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=False, space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    piped = io.StringIO()
    progress = Progress(plan, optuna.create_study(direction="maximize"), stream=piped)
    progress.finished("trial 11  fail", 12, 60.0)
    assert piped.getvalue().splitlines()[-1] == "trial 11  fail  |  best --  |  12 done here, 720 trials/h"


def test_the_panels_parts_fill_lines_of_the_width_and_only_a_part_wider_than_it_is_folded():
    """Parts packed into lines of the console's width, broken between parts: a part exactly that wide is one
    whole line (the last one too: no empty line after it); a wider one is folded at the width."""
    from rich.console import Console

    from fastvec.trainer.dashboard import Parts

    for parts, want in ((["a" * 20, "bb", "cc"], ["a" * 20, "bb   cc"]), (["bb", "a" * 20], ["bb", "a" * 20]),
                        (["dd", "e" * 25, "ff"], ["dd", "e" * 20, "eeeee   ff"])):
        console = Console(width=20, record=True, file=io.StringIO())
        console.print(Parts(parts))
        assert console.export_text().splitlines() == want


def test_sweep_status_lines_in_a_pipe_come_every_30_seconds_of_a_trial(monkeypatch):
    """In a pipe (no redraws) a running trial's status is a plain line at most every 30 s (docs/sweeps.md): none
    29.9 s after a trial's line, one at 30 s, the next 30 s after that one."""
    from types import SimpleNamespace

    from fastvec.trainer import sweep_report

    clock = [1000.0]
    monkeypatch.setattr(sweep_report, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    settings = {"trial_seconds": 1.0, "metric": "episode_return", "target": 475.0, "objective": "score", "trials": 2,
                "timeout": 0, "seeds": 1, "sampler": "tpe", "pruner": "median"}
    plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}}, study="s", storage="mem",
                           multi=False, space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
    piped = io.StringIO()
    progress = sweep_report.Progress(plan, SimpleNamespace(trials=[], best_trials=[],
                                                           get_trials=lambda **kw: []), stream=piped)
    progress.finished("trial 0  complete", 1, 10.0)
    written = len(piped.getvalue().splitlines())
    for at, lines in ((1029.9, 0), (1030.0, 1), (1059.9, 1), (1060.0, 2)):
        clock[0] = at
        progress.running(1, at - 1000.0, 64, 12.5)
        assert len(piped.getvalue().splitlines()) - written == lines, at
    assert piped.getvalue().splitlines()[-1].startswith("trial 1 running: 60.0 s, 64 steps, return 12.5")


def test_sweep_status_header_names_the_trials_here_the_time_limit_and_each_trials_budget():
    """The sweep's first line: `N trials here` (sweep.trials 0: unlimited), the timeout where one is set, and each
    trial's budget in seconds (trial_seconds) or else in steps (total_timesteps)."""
    from types import SimpleNamespace

    from fastvec.trainer.sweep_report import Progress

    def header(**changes):
        settings = {"trial_seconds": 20.0, "metric": "episode_return", "target": 475.0, "objective": "score",
                    "trials": 40, "timeout": 0, "seeds": 1, "sampler": "tpe", "pruner": "median", **changes}
        plan = SimpleNamespace(settings=settings, base={"env": {"name": "cartpole"}, "train": {"total_timesteps": 50000}},
                               study="s", storage="mem", multi=False,
                               space=SimpleNamespace(describe=lambda: ["train.learning_rate"]))
        piped = io.StringIO()
        Progress(plan, SimpleNamespace(trials=[]), stream=piped)
        return piped.getvalue().splitlines()[0]

    line = header()
    assert "; 40 trials here, 20 s each, 1 seed(s);" in line and "at most" not in line
    assert "; unlimited trials here, " in header(trials=0)
    assert "; 7 trials here, 1:00:00 at most, 20 s each, " in header(trials=7, timeout=3600)
    assert " trials here, 50K steps each, " in header(trial_seconds=0)


def test_sweep_status_line_stays_under_a_note_and_a_finished_trial_clears_it(monkeypatch):
    """On a terminal: a note printed while a trial runs erases the status line, prints the note, and redraws the
    status under it; a finished trial's line replaces the status (none until the next trial reports); close erases it."""
    import shutil

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((200, 24)))
    progress, screen = sweep_progress_on_a_terminal(monkeypatch)
    progress.running(3, 1.5, 4096, 12.5)
    status = progress.status
    assert status.startswith("trial 3 running: 1.5 s")
    before = len(screen.getvalue())
    progress.note("a note")
    assert screen.getvalue()[before:] == "\r\x1b[2K" + "a note\n" + status and progress.status == status
    before = len(screen.getvalue())
    progress.finished("trial 3  complete", 1, 60.0)
    assert screen.getvalue()[before:].startswith("\r\x1b[2Ktrial 3  complete") and screen.getvalue().endswith("\n")
    assert progress.status == ""
    progress.running(4, 0.5, 64, 1.0)
    before = len(screen.getvalue())
    progress.close()
    assert screen.getvalue()[before:] == "\r\x1b[2K" and progress.status == ""


def test_the_panels_bar_is_full_at_the_last_step_even_of_a_one_step_run():
    """The bar of a finished run draws as a finished bar whatever the total (1 step or 4), and half-way as half."""
    from rich.console import Console

    def bar(total: int, step: int) -> str:
        board = Dashboard(TITLE, total, enabled=True, stream=io.StringIO(), mode="live")
        board._remember({"global_step": step, "time": 1.0, "sps": 1.0, "update": 1}, [])
        console = Console(width=40, record=True, file=io.StringIO(), color_system="standard", force_terminal=True)
        console.print(board.renderable())
        line = next(line for line in console.export_text(styles=True).splitlines() if " steps " in line)
        return line[:line.index(f" {step}/{total} steps")]

    assert bar(1, 1) == bar(4, 4) != bar(2, 1) == bar(4, 2)


@pytest.mark.parametrize("total, step, label", [(1, 1, "1/1 steps 100%"), (4096, 5000, "5K/4.1K steps 100%"),
                                                (0, 0, "0/0 steps 0%"), (4000, 1000, "1K/4K steps 25%")])
def test_the_panels_step_count_says_how_much_of_the_run_is_done_never_past_100_percent(total, step, label):
    """A run trains whole updates, so its last step can pass total_timesteps: the share then stays at 100%."""
    from rich.console import Console
    board = Dashboard(TITLE, total, enabled=True, stream=io.StringIO(), mode="live")
    board._remember({"global_step": step, "time": 1.0, "sps": 1.0, "update": 1}, [])
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(board.renderable())
    assert label in console.export_text()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_panel_has_no_blank_lines_and_a_finished_bar_stops_one_space_before_its_count(width):
    """The panel's lines, border to border: the title first, then the progress bar, then one line per row (or
    more where a row wraps), none blank; at the end of the run the bar is full and fills its line up to one
    space before the step count."""
    from rich.console import Console
    board = Dashboard(TITLE, 303_104, enabled=True, stream=io.StringIO(), mode="live")
    board._remember(metrics_row(303_104, 22.3, 74, sps=13572.4, score=12.25, **{"selfplay/score_bot": 0.625}),
                    ["score"])
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(board.renderable())
    lines = console.export_text().splitlines()
    assert lines[0].startswith("╭") and lines[-1].startswith("╰") and len(lines[0]) == width
    inner = [line[2:-2] for line in lines[1:-1]]
    assert all(line.startswith("│ ") and line.endswith(" │") for line in lines[1:-1]), lines
    assert all(part.strip() for part in inner), lines  # no blank line above, between or below the rows
    assert inner[0].startswith("fastvec-train cartpole") and inner[-1].startswith("self-play vs bot 0.625")
    count = "303K/303K steps 100%"
    bar = next(part for part in inner if part.endswith(count))
    assert bar == "━" * (width - 4 - len(count) - 1) + " " + count, lines
    labels = [part.split()[0] for part in inner if part[:1] != " "]
    assert labels[labels.index(bar.split()[0]) + 1:] == ["speed", "episodes", "losses", "time", "self-play"]
