"""Tables, lines and progress: rich on a terminal, plain text when piped.

rich is an optional extra (``pip install 'compaction-ladder[cli]'``), imported only when the stream
is a terminal; without it, or when the output goes to a file or a pipe, the same tables come
out as aligned plain text that ``grep`` and ``cut`` can work with.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

__all__ = ["Table", "dump_json", "fancy", "progress", "render", "say"]


def fancy(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal and rich is installed (and NO_COLOR aside)."""
    if os.environ.get("COMPACTION_PLAIN"):
        return False
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Table:
    """A titled table; ``right`` names the columns aligned right (numbers)."""

    columns: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    title: str | None = None
    right: frozenset[str] = frozenset()
    footer: Sequence[Any] | None = None

    def add(self, *cells: Any) -> None:
        self.rows.append(cells)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "" if value is None else str(value)


def _plain(table: Table) -> str:
    rows = [[_cell(c) for c in row] for row in table.rows]
    if table.footer is not None:
        rows.append([_cell(c) for c in table.footer])
    widths = [len(c) for c in table.columns]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = []
        for name, width, cell in zip(table.columns, widths, cells, strict=True):
            out.append(cell.rjust(width) if name in table.right else cell.ljust(width))
        return "  ".join(out).rstrip()

    lines = []
    if table.title:
        lines.append(table.title)
    lines.append(line(list(table.columns)))
    lines.append("  ".join("-" * w for w in widths))
    body = [line(r) for r in rows]
    if table.footer is not None:
        body.insert(len(body) - 1, "  ".join("-" * w for w in widths))
    lines.extend(body)
    return "\n".join(lines)


@contextmanager
def _named(stream: TextIO) -> Iterator[None]:
    """A failed write to stdout or stderr (``> /dev/full``) names the stream in its error."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.filename is not None:
            raise
        name = {id(sys.stdout): "<stdout>", id(sys.stderr): "<stderr>"}.get(id(stream))
        if name is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), name) from None


def render(table: Table, stream: TextIO | None = None) -> None:
    """Draw ``table`` on ``stream`` (stdout by default)."""
    stream = stream or sys.stdout
    with _named(stream):
        _render(table, stream)


def _render(table: Table, stream: TextIO) -> None:
    if not fancy(stream):
        stream.write(_plain(table) + "\n\n")
        return
    from rich.console import Console
    from rich.table import Table as RichTable

    rich_table = RichTable(title=table.title, title_justify="left", show_footer=False)
    for name in table.columns:
        # Fold, never ellipsise: a cut file name ("agent-a28…", "agent-aco…") can no longer
        # be told from its neighbour, so an over-long cell breaks onto the next line whole.
        rich_table.add_column(
            name, justify="right" if name in table.right else "left", overflow="fold"
        )
    for row in table.rows:
        rich_table.add_row(*(_cell(c) for c in row))
    if table.footer is not None:
        rich_table.add_section()
        rich_table.add_row(*(_cell(c) for c in table.footer), style="bold")
    Console(file=stream, highlight=False).print(rich_table)


def say(text: str, stream: TextIO | None = None) -> None:
    """One line of text (markup-free, so file names with brackets print as they are)."""
    stream = stream or sys.stderr
    with _named(stream):
        stream.write(text + "\n")
        stream.flush()


def dump_json(data: Any, stream: TextIO | None = None) -> None:
    """Machine-readable output: one JSON document, indented, on stdout."""
    stream = stream or sys.stdout
    with _named(stream):
        json.dump(data, stream, indent=2, ensure_ascii=False, default=str)
        stream.write("\n")
        stream.flush()


class _Quiet:
    def advance(self, description: str = "") -> None:
        return None


class _Rich:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress = progress
        self._task = task

    def advance(self, description: str = "") -> None:
        self._progress.update(self._task, advance=1, description=description)


@contextmanager
def progress(total: int, label: str) -> Iterator[_Quiet | _Rich]:
    """A progress bar on stderr for ``total`` files, only on a terminal and only for more
    than one file: piped output stays clean for the next program."""
    if total < 2 or not fancy(sys.stderr):
        yield _Quiet()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as bar:
        yield _Rich(bar, bar.add_task(label, total=total))
