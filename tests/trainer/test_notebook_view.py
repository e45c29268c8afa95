"""The notebook panel's two renderings (dashboard.NotebookView): text/plain and text/html hold the same text, 100
columns wide, the HTML in the panel's true colours; and Parts measure as wide as they print (dashboard.Parts)."""

from __future__ import annotations

import html.parser

from fastvec.trainer.dashboard import NotebookView, Parts


class _Reader(html.parser.HTMLParser):
    """The text of an HTML fragment and the inline styles of its spans."""

    def __init__(self, source: str):
        super().__init__(convert_charrefs=True)
        self.text, self.styles, self.tags = "", [], []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "span":
            self.styles.append(dict(attrs).get("style", ""))

    def handle_data(self, data):
        self.text += data


def test_the_notebook_html_holds_the_same_text_as_the_plain_text():
    """Both renderings come from one recording: the HTML (escaped, in a <pre>) reads back as the plain text, every
    line of it, markup characters included."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="fastvec-train cartpole <run> & co")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("episode_return", "49.2")
    table.add_row(Text("sps", style="bold"), "1.2M")
    view = NotebookView(table)
    bundle = view._repr_mimebundle_()
    assert bundle == {"text/plain": view.text, "text/html": view.html}
    assert "<run> & co" in view.text and "│ episode_return │  49.2 │" in view.text
    read = _Reader(view.html)
    assert read.tags[0] == "pre" and view.html.startswith("<pre style=\"font-family: Menlo")
    assert read.text == view.text
    assert "&lt;run&gt; &amp; co" in view.html


def test_the_notebook_panel_is_100_columns_wide():
    """A line of 101 characters folds after its 100th; Parts packs parts into lines of up to 100 columns."""
    view = NotebookView(Parts(["a" * 101]))
    assert view.text == "a" * 100 + "\na\n"
    assert _Reader(view.html).text == view.text
    view = NotebookView(Parts(["x" * 48, "y" * 49, "z"]))  # 48 + 3 + 49 = 100 columns: the first two share a line
    assert view.text.splitlines() == ["x" * 48 + "   " + "y" * 49, "z"]
    assert NotebookView(Parts(["x" * 60]), width=50).text.splitlines() == ["x" * 50, "x" * 10]
    assert NotebookView(Parts(["y", "x" * 100])).text == "y\n" + "x" * 100 + "\n"  # exactly the width: one line
    assert NotebookView(Parts(["abc", "d"]), width=1).text == "a\nb\nc\nd\n"  # one column: a character a line
    assert NotebookView(Parts(["x" * 48, "y" * 50])).text == "x" * 48 + "\n" + "y" * 50 + "\n"  # 101: two lines


def test_the_notebook_html_keeps_the_panels_colours_in_true_colour():
    """Styles reach the HTML as inline CSS: a 24-bit colour as its own hex, bold as font-weight."""
    from rich.text import Text

    text = Text("done")
    text.append(" 100%", style="bold #12ab34")
    view = NotebookView(text)
    assert view.text == "done 100%\n"
    read = _Reader(view.html)
    assert read.text == view.text
    styled = [s for s in read.styles if "#12ab34" in s]
    assert styled and "font-weight: bold" in styled[0]


def test_making_the_notebook_view_displays_nothing_itself(monkeypatch, capsys):
    """The view only renders: in a notebook (IPython's display present) building it shows no output of its own and
    writes nothing to stdout; the dashboard's one display shows it."""
    import sys
    import types

    from rich.text import Text

    shown = []
    fake = types.ModuleType("IPython.display")
    fake.display = lambda *args, **kwargs: shown.append(args)
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))
    monkeypatch.setitem(sys.modules, "IPython.display", fake)
    view = NotebookView(Text("12.3K/12.3K steps 100%"))
    assert shown == [] and capsys.readouterr().out == ""
    assert view.text == "12.3K/12.3K steps 100%\n" and _Reader(view.html).text == view.text


def test_parts_measure_as_wide_as_they_print_so_a_fitted_column_is_their_line():
    """Parts measure from their widest part (the narrowest they can fold to) to their one-line width (parts and
    separators), so a table column sized to its content is exactly as wide as the line they print."""
    import io

    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    console = Console(file=io.StringIO(), width=100)
    parts = Parts(["sps 1.2M", "ETA 3m", "update 7/12"])
    one_line = "sps 1.2M   ETA 3m   update 7/12"
    measured = Measurement.get(console, console.options, parts)
    assert (measured.minimum, measured.maximum) == (len("update 7/12"), len(one_line))
    assert Measurement.get(console, console.options, Parts(["solo"], sep=" | ")).maximum == 4
    assert Measurement.get(console, console.options, Parts(["ab", "cd"], sep=" | ")).maximum == 7
    grid = Table.grid()
    grid.add_column()
    grid.add_row(parts)
    with console.capture() as captured:
        console.print(grid)
    assert captured.get() == one_line + "\n"
    narrow = Console(file=io.StringIO(), width=20)
    assert Measurement.get(narrow, narrow.options, parts).maximum == 20  # never wider than the console
